"""The KRaft metadata state at commit points, as the ISR checks read it.

Rows of silver.partition_timeline and silver.broker_registrations hold over commit-point
intervals [commit_offset, next_commit_offset) (null end: to the end of the log).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from epoch_audit.gold.context import CheckContext

# The open end of a state interval that nothing ended.
INF = 2**63 - 1


def kraft_timeline_and_registrations(ctx: CheckContext) -> tuple[DataFrame, DataFrame]:
    """The KRaft rows of the partition timeline, and the broker registrations."""
    timeline = ctx.silver["partition_timeline"]
    return timeline.where(F.col("source") == "kraft"), ctx.silver["broker_registrations"]


def holds_at_some_commit(prefix: str) -> Column:
    """The row's state is visible at one commit point at least (not superseded inside its own
    batch / transaction)."""
    end = F.col(f"{prefix}next_commit_offset")
    return end.isNull() | (end > F.col(f"{prefix}commit_offset"))
