"""The reference model's replay API in one place, as the tests and tools import it.

The model replays a bronze history (dicts with ``epoch_audit.contracts.events.EVENT_COLUMNS``) with
explicit state, one event at a time; it shares only the contracts with the Spark code. Where each
piece lives:

* ``event_types``: which bronze event types mean what, from the protocol rules;
* ``ordering``: a broker's own log order;
* ``metadata_log``: KRaft commit points, snapshots and holes in the dumped log;
* ``partition_replay`` / ``broker_replay``: KRaft partition and broker states;
* ``violations``: the violation rows and their comparison key.
"""

from __future__ import annotations

from epoch_audit_tools.reference_model.broker_replay import BrokerRegistration, broker_states
from epoch_audit_tools.reference_model.event_types import NO_ERROR, Event, is_no_error
from epoch_audit_tools.reference_model.metadata_log import (
    capped,
    committed_metadata,
    covered_interval,
    covered_intervals,
    hole_after,
    replay_segments,
    snapshot_records,
    state_at,
    topic_names,
)
from epoch_audit_tools.reference_model.ordering import by_broker_in_own_order, own_position, own_times
from epoch_audit_tools.reference_model.partition_replay import PartitionState, partition_states, replay_partitions
from epoch_audit_tools.reference_model.violations import VIOLATION_KEY, key_of, violation

__all__ = [
    "NO_ERROR",
    "VIOLATION_KEY",
    "BrokerRegistration",
    "Event",
    "PartitionState",
    "broker_states",
    "by_broker_in_own_order",
    "capped",
    "committed_metadata",
    "covered_interval",
    "covered_intervals",
    "hole_after",
    "is_no_error",
    "key_of",
    "own_position",
    "own_times",
    "partition_states",
    "replay_partitions",
    "replay_segments",
    "snapshot_records",
    "state_at",
    "topic_names",
    "violation",
]
