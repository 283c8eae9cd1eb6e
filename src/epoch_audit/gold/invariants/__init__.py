"""The invariant registry: one entry per check module (see base.py for the contract).

Adding an invariant: write its module here (one pure function with a docstring naming the
protocol rule), add it to INVARIANTS, add its test file and one row in README's invariant table.
A check that reads request-log FETCH / PRODUCE events (``epoch_audit.contracts.events.TRAFFIC_TYPES``) also
registers ``carry``: the ones it still needs from before a nightly run's horizon
(``epoch_audit.gold.carry``; tests/test_carry.py proves the windowed answers equal the whole ones).
"""

from __future__ import annotations

from epoch_audit.gold.base import Invariant
from epoch_audit.gold.invariants.isr_membership import (
    fenced_replica_in_isr,
    stale_broker_epoch_isr_join,
    stale_broker_epoch_isr_join_carry,
)
from epoch_audit.gold.invariants.leadership import INVARIANTS_C2_LEADERSHIP
from epoch_audit.gold.invariants.offsets import INVARIANTS_C2_OFFSETS
from epoch_audit.gold.invariants.stop_replica import stale_controller_epoch_accepted, stale_stop_replica_accepted

INVARIANTS: list[Invariant] = [
    Invariant(ids=("stale_stop_replica_accepted",), check=stale_stop_replica_accepted),
    Invariant(ids=("stale_controller_epoch_accepted",), check=stale_controller_epoch_accepted),
    Invariant(
        ids=("stale_broker_epoch_isr_join",), check=stale_broker_epoch_isr_join, carry=stale_broker_epoch_isr_join_carry
    ),
    Invariant(ids=("fenced_replica_in_isr", "last_replica_fenced_in_isr"), check=fenced_replica_in_isr),
    *INVARIANTS_C2_LEADERSHIP,
    *INVARIANTS_C2_OFFSETS,
]
