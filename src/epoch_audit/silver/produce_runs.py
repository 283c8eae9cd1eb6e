"""silver.produce_runs: a host's dumped data batches compacted to runs of one leader epoch."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

PRODUCE_RUN_COLUMNS = [
    "cluster_id",
    "broker_id",
    "topic",
    "partition",
    "run_no",
    "leader_epoch",
    "prev_run_epoch",
    "first_offset",
    "last_offset",
    "last_base_offset",
    "batch_count",
    "first_event_id",
    "last_event_id",
    "first_time",
    "last_time",
]


def produce_runs(events: DataFrame, config: object = None) -> DataFrame:
    """Segment-dump data batches compacted to runs of consecutive batches (in offset order) with the
    same ``partitionLeaderEpoch`` per (cluster, host, topic, partition), so the offset checks
    (``write_accepted_by_fenced_leader`` offset rule, ``epoch_start_offset_divergence``) scale with
    leadership changes, not with batch count. ``broker_id`` is the host whose dump holds the
    batches. ``first_time``/``last_time`` are batch CreateTime (the producer's clock): informative
    only, never used for ordering. ``prev_run_epoch`` is the epoch of the run just below.
    """
    key = ["cluster_id", "broker_id", "topic", "partition"]
    batches = (
        events.filter(F.col("event_type") == "data_batch")
        .filter(F.col("offset").isNotNull() & F.col("leader_epoch").isNotNull())
        .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull())
        # A dump is evidence of the host that holds the segment.
        .withColumn("broker_id", F.coalesce(F.col("host_id"), F.col("broker_id")))
        .withColumn("last_offset", F.coalesce(F.col("last_offset"), F.col("offset")))
    )
    w = Window.partitionBy(*key).orderBy("offset", "last_offset", "event_id")
    prev = F.lag("leader_epoch").over(w)
    batches = batches.withColumn(
        "brk", F.when(prev.isNull() | (prev != F.col("leader_epoch")), 1).otherwise(0)
    ).withColumn("run_no", F.sum("brk").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)))
    order = F.struct("offset", "last_offset", "event_id")
    runs = batches.groupBy(*key, "run_no").agg(
        F.first("leader_epoch").alias("leader_epoch"),
        F.min("offset").alias("first_offset"),
        F.max("last_offset").alias("last_offset"),
        F.max("offset").alias("last_base_offset"),
        F.count(F.lit(1)).alias("batch_count"),
        F.min_by("event_id", order).alias("first_event_id"),
        F.max_by("event_id", order).alias("last_event_id"),
        F.min("event_time").alias("first_time"),
        F.max("event_time").alias("last_time"),
    )
    runs = runs.withColumn("prev_run_epoch", F.lag("leader_epoch").over(Window.partitionBy(*key).orderBy("run_no")))
    return runs.select(*PRODUCE_RUN_COLUMNS)
