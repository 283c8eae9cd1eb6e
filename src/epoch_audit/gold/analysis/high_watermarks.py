"""The high watermarks brokers record (silver.replica_offsets, two series never mixed)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.gold.analysis.violation_rows import PARTITION_KEY
from epoch_audit.gold.context import CheckContext

# The "high watermark N" of a broker's own leader lines, and its replication-offset-checkpoint copies.
HW_SERIES = ("hw_leader_line", "hw_checkpoint")


def latest_hw(ctx: CheckContext) -> DataFrame:
    """Each replica's latest recorded high watermark for a partition (both series; host clock,
    missing time last, then leader line before checkpoint, then series order)."""
    recorded = ctx.silver["replica_offsets"].filter(F.col("series").isin(*HW_SERIES))
    order = F.struct(
        F.col("event_time").isNull().alias("n"),
        F.col("event_time"),
        (F.col("series") == "hw_checkpoint").alias("s"),
        F.col("series_seq"),
    )
    return recorded.groupBy(*PARTITION_KEY, "broker_id").agg(F.max_by("value", order).alias("hw"))
