"""silver.produce_runs: a host's dumped data batches compacted to runs of one leader epoch."""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.one_partition import is_one_partition_session

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

    In a log whose epochs only grow with its offsets (every healthy one) a run is all the batches
    of one epoch: their offsets span a range no other epoch's batches reach into. Those runs come
    from a hash aggregate per epoch, their first and last batch picked by offset (broadcast); only
    the logs where two epochs' ranges meet are sorted batch by batch (:func:`runs_in_offset_order`).
    At 10^7 lines the sort of every batch (4.8 million) was the largest part of the timelines stage.
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
    if is_one_partition_session(events):  # a short run: its few batches sorted cost less than a larger plan
        return runs_in_offset_order(batches, key)
    epochs = batches.groupBy(*key, "leader_epoch").agg(
        F.min("offset").alias("first_offset"),
        F.max("last_offset").alias("last_offset"),
        F.max("offset").alias("last_base_offset"),
        F.count(F.lit(1)).alias("batch_count"),
        F.min("event_time").alias("first_time"),
        F.max("event_time").alias("last_time"),
    )
    in_log = Window.partitionBy(*key)
    by_offset = in_log.orderBy("first_offset", "last_base_offset")
    # An epoch's range starts past the one below it, in every range of its log: its runs are its epochs.
    apart = F.coalesce(F.col("first_offset") > F.lag("last_base_offset").over(by_offset), F.lit(True))
    epochs = epochs.withColumn("_apart", F.min(apart.cast("int")).over(in_log) == 1)
    apart_runs = epochs.where("_apart").withColumn("run_no", F.row_number().over(by_offset).cast("long"))
    ends = apart_runs.select(*[F.col(c).alias(f"_e_{c}") for c in key], F.col("leader_epoch").alias("_e_le"),
                             F.col("first_offset").alias("_e_first"), F.col("last_base_offset").alias("_e_last"))
    # null-safe: a batch whose host is not known has a log of its own (null), as in the window's partitions
    at_end = [F.col(c).eqNullSafe(F.col(f"_e_{c}")) for c in key] + [
        F.col("leader_epoch") == F.col("_e_le"),
        (F.col("offset") == F.col("_e_first")) | (F.col("offset") == F.col("_e_last")),
    ]
    order = F.struct("offset", "last_offset", "event_id")
    end_ids = (
        batches.join(F.broadcast(ends), reduce(lambda a, b: a & b, at_end))
        .groupBy(*[F.col(f"_e_{c}") for c in key], "_e_le")
        .agg(F.min_by("event_id", order).alias("first_event_id"), F.max_by("event_id", order).alias("last_event_id"))
    )
    same_epoch = [F.col(c).eqNullSafe(F.col(f"_e_{c}")) for c in key] + [F.col("leader_epoch") == F.col("_e_le")]
    apart_runs = apart_runs.join(end_ids, reduce(lambda a, b: a & b, same_epoch)).withColumn(
        "prev_run_epoch", F.lag("leader_epoch").over(in_log.orderBy("run_no"))
    )
    meeting = epochs.where(~F.col("_apart")).select(*[F.col(c).alias(f"_m_{c}") for c in key]).distinct()
    in_meeting = reduce(lambda a, b: a & b, [F.col(c).eqNullSafe(F.col(f"_m_{c}")) for c in key])
    return apart_runs.select(*PRODUCE_RUN_COLUMNS).unionByName(
        runs_in_offset_order(batches.join(F.broadcast(meeting), in_meeting, "left_semi"), key)
    )


def runs_in_offset_order(batches: DataFrame, key: list[str]) -> DataFrame:
    """:func:`produce_runs` of ``batches`` (filtered as there), batch by batch: a run ends where the
    next batch in offset order has another epoch."""
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
