"""``last_replica_fenced_in_isr`` (KIP-903 "last replica"): the rule of ``fenced_replica_in_isr``
when the ISR has exactly one member, the fenced or shutting-down broker itself. Kafka keeps the
last replica in the ISR on purpose, so this is a data-loss risk, not a breach: severity warning.

One row per partition and replica episode; broker_id = that replica
(:mod:`epoch_audit.gold.analysis.fenced_isr`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from epoch_audit.gold.analysis.fenced_isr import LAST_REPLICA, fenced_replicas_in_isr
from epoch_audit.gold.context import CheckContext

INVARIANT = LAST_REPLICA


def check(ctx: CheckContext) -> DataFrame:
    """One row per episode of a fenced / shutting-down replica as the only ISR member."""
    return fenced_replicas_in_isr(ctx, INVARIANT)
