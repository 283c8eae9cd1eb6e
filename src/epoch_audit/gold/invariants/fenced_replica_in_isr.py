"""``fenced_replica_in_isr`` (KIP-903 / controlled shutdown): the ISR in the state at a commit
point must not contain a fenced or shutting-down broker (ReplicationControlManager removes it
from every ISR in the same batch that fences it).

The state at a commit point is the state after the whole batch (or transaction), so a batch
that fences a broker and removes it from every ISR is clean. One row per partition and replica
episode (a maximal run of commit points in which the replica stays in the ISR while fenced / in
controlled shutdown); broker_id = that replica. An ISR of exactly one member is
``last_replica_fenced_in_isr``'s instead. Reads the KRaft rows of silver.partition_timeline and
silver.broker_registrations (:mod:`epoch_audit.gold.analysis.fenced_isr`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from epoch_audit.gold.analysis.fenced_isr import FENCED_REPLICA, fenced_replicas_in_isr
from epoch_audit.gold.context import CheckContext

INVARIANT = FENCED_REPLICA


def check(ctx: CheckContext) -> DataFrame:
    """One row per episode of a fenced / shutting-down replica in an ISR of two or more members."""
    return fenced_replicas_in_isr(ctx, INVARIANT)
