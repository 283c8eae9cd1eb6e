"""silver.replica_offsets: per (cluster, broker, partition) the offsets a replica records, one
series each (epoch starts, log start, high watermark).

Own order (spec "Ordering and time", rule 2; :mod:`epoch_audit.contracts.ordering`): ``ots`` is the
running maximum of ``event_time`` along each file's lines, taken over this view's own rows (not over
every line of the file as bronze's ``own_time``: the pure-Python twin in
``epoch_audit_tools.reference_model.broker_views`` computes the same), then file order, file id,
line, sub index.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.ordering import asof_last, file_running_max_time, own_order
from epoch_audit.silver.produce_runs import produce_runs

# Host-local events naming the topic id of a partition (a recreated topic has a new id).
TOPIC_ID_TYPES = (
    "become_leader",
    "become_follower",
    "become_leader_skipped",
    "become_follower_skipped",
    "partition_metadata",
    "request_leader_and_isr",
    "leader_and_isr_received",
)


# Checkpoint copies: ordered by their suffix time (parsed into event_time; the plain-named file is
# the state at collection time, so a missing time sorts last), then file identity.
def copy_order() -> list[Column]:
    return [
        F.col("event_time").asc_nulls_last(),
        F.col("file_order").asc_nulls_first(),
        F.col("source_file").asc_nulls_first(),
        F.col("line_number").asc_nulls_first(),
        F.col("sub_index").asc_nulls_first(),
    ]


REPLICA_OFFSET_SERIES = (
    "epoch_start_line",
    "epoch_start_checkpoint",
    "epoch_start_dump",
    "log_start",
    "hw_leader_line",
    "hw_checkpoint",
)

REPLICA_OFFSET_COLUMNS = [
    "cluster_id",
    "broker_id",
    "topic",
    "partition",
    "series",
    "leader_epoch",
    "value",
    "tid",
    "is_latest_copy",
    "is_earliest_entry",
    "series_seq",
    "event_type",
    "event_id",
    "event_time",
]


def _topic_id_asof(rows: DataFrame, events: DataFrame) -> DataFrame:
    """``tid`` = the row's own topic id, else the last topic id the same host logged for the
    partition at or before the row's time (host clock; a missing time is "at collection", last).

    The rows themselves are the as-of's probes (every column through its window): probing with
    their keys and joining the answers back read ``rows`` twice, and in a short run (one partition,
    no exchange to reuse) that computed the table's four series twice (about half of its time at
    night 16 of ``bench-nights``)."""
    place = ["cluster_id", "host_id", "topic", "partition"]
    named = events.filter(F.col("event_type").isin(*TOPIC_ID_TYPES) & F.col("topic_id").isNotNull()).select(
        *place, "event_time", F.col("topic_id").alias("asof_tid")
    )
    rows = asof_last(rows, named, place, [F.col("event_time").asc_nulls_last()], ["asof_tid"])
    return rows.withColumn("tid", F.coalesce(F.col("topic_id"), F.col("asof_tid")))


def replica_offsets(events: DataFrame, config: object = None) -> DataFrame:
    """:func:`replica_offsets_with_runs` over the produce runs of ``events``."""
    return replica_offsets_with_runs(events, produce_runs(events, config))


def replica_offsets_with_runs(events: DataFrame, runs: DataFrame) -> DataFrame:
    """Per (cluster, broker, topic, partition) the offsets a replica records, one ``series`` each
    (never mixed, spec ``high_watermark_regression`` / ``epoch_start_offset_divergence``):

    - ``epoch_start_line``: "Leader ... starts at leader epoch e from offset O" (own order);
    - ``epoch_start_checkpoint``: leader-epoch-checkpoint entries, per copy; ``is_latest_copy``
      marks the broker's newest copy, ``is_earliest_entry`` its smallest epoch in that copy (the
      entry retention clamps to the log start offset, reference §4.3);
    - ``epoch_start_dump``: the first batch of epoch e in the host's segment dumps, only where the
      epoch boundary is visible (the run just below holds a lower epoch): a dump of a later segment
      or of a log whose older segments were deleted does not show where e started;
    - ``log_start``: log-start-offset-checkpoint entries and "Incremented log start offset to N";
    - ``hw_leader_line``: the "high watermark N" of its own leader lines (own order);
    - ``hw_checkpoint``: replication-offset-checkpoint copies ordered by their suffix. A partition
      absent from a copy simply has no row there (no value, not 0).

    ``series_seq`` numbers a broker's rows of one series in that series' order; ``tid`` is the
    topic id in force (own, else the host's last logged one), for the topic-id restart rule.
    ``runs``: ``silver.produce_runs`` of the same events (:func:`epoch_audit.silver.produce_runs.produce_runs`).
    """
    event_type = F.col("event_type")
    own_broker = F.coalesce(F.col("broker_id"), F.col("host_id"))
    base = events.filter(F.col("topic").isNotNull() & F.col("partition").isNotNull())

    def pick(df: DataFrame, series: str, broker: Column, le: Column, value: Column) -> DataFrame:
        return df.select(
            "cluster_id",
            broker.alias("broker_id"),
            "host_id",
            "topic",
            "partition",
            F.lit(series).alias("series"),
            le.cast("int").alias("leader_epoch"),
            value.cast("long").alias("value"),
            "topic_id",
            "event_type",
            "event_id",
            "event_time",
            "file_id",
            "file_order",
            "source_file",
            "line_number",
            "sub_index",
        )

    leader_lines = base.filter(event_type == "become_leader")
    line_rows = pick(
        leader_lines.filter(F.col("offset").isNotNull()),
        "epoch_start_line",
        own_broker,
        F.col("leader_epoch"),
        F.col("offset"),
    ).unionByName(
        pick(
            leader_lines.filter(F.col("high_watermark").isNotNull()),
            "hw_leader_line",
            own_broker,
            F.col("leader_epoch"),
            F.col("high_watermark"),
        )
    )
    line_rows = line_rows.withColumn("ots", file_running_max_time())
    w_line = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series").orderBy(*own_order("ots"))
    line_rows = line_rows.withColumn("series_seq", F.row_number().over(w_line)).drop("ots")

    host = F.coalesce(F.col("host_id"), F.col("broker_id"))
    epoch_checkpoints = base.filter(event_type == "checkpoint_leader_epoch").filter(
        F.col("offset").isNotNull() & F.col("leader_epoch").isNotNull()
    )
    ckpt_rows = pick(epoch_checkpoints, "epoch_start_checkpoint", host, F.col("leader_epoch"), F.col("offset"))
    ckpt_rows = ckpt_rows.unionByName(
        pick(
            base.filter(event_type == "checkpoint_replication_offset"),
            "hw_checkpoint",
            host,
            F.lit(None),
            F.coalesce(F.col("high_watermark"), F.col("offset")),
        ).filter(F.col("value").isNotNull())
    )
    w_copy = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series").orderBy(*copy_order())
    ckpt_rows = ckpt_rows.withColumn("series_seq", F.row_number().over(w_copy))

    log_start = pick(
        base.filter(event_type.isin("checkpoint_log_start_offset", "log_start_offset_incremented")),
        "log_start",
        F.when(event_type == "checkpoint_log_start_offset", host).otherwise(own_broker),
        F.lit(None),
        F.coalesce(F.col("log_start_offset"), F.col("offset")),
    ).filter(F.col("value").isNotNull())
    log_start = log_start.withColumn("series_seq", F.lit(None).cast("int"))

    first_runs = (
        runs.withColumn(
            "_r",
            F.row_number().over(
                Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "leader_epoch").orderBy(
                    "first_offset", "run_no"
                )
            ),
        )
        .filter(F.col("_r") == 1)
        .filter(F.col("prev_run_epoch").isNotNull() & (F.col("prev_run_epoch") < F.col("leader_epoch")))
    )
    dump_rows = first_runs.select(
        "cluster_id",
        "broker_id",
        F.col("broker_id").alias("host_id"),
        "topic",
        "partition",
        F.lit("epoch_start_dump").alias("series"),
        "leader_epoch",
        F.col("first_offset").alias("value"),
        F.lit(None).cast("string").alias("topic_id"),
        F.lit("data_batch").alias("event_type"),
        F.col("first_event_id").alias("event_id"),
        F.col("first_time").alias("event_time"),
        F.lit(None).cast("string").alias("file_id"),
        F.lit(None).cast("int").alias("file_order"),
        F.lit(None).cast("string").alias("source_file"),
        F.lit(None).cast("long").alias("line_number"),
        F.lit(None).cast("int").alias("sub_index"),
        F.lit(None).cast("int").alias("series_seq"),
    )

    rows = line_rows.unionByName(ckpt_rows).unionByName(log_start).unionByName(dump_rows)
    rows = _topic_id_asof(rows, events)

    # Latest leader-epoch-checkpoint copy per broker/partition, and its earliest entry.
    is_epoch_checkpoint = F.col("series") == "epoch_start_checkpoint"
    latest_key = F.struct(
        F.coalesce(F.col("event_time").isNull().cast("int"), F.lit(0)).alias("a"),
        "event_time",
        "file_order",
        "source_file",
    )
    per_series = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series")
    rows = rows.withColumn("_ck", F.when(is_epoch_checkpoint, latest_key))
    is_latest = is_epoch_checkpoint & F.col("_ck").eqNullSafe(F.max("_ck").over(per_series))
    rows = rows.withColumn("is_latest_copy", is_latest)
    w_copy_file = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series", "source_file")
    rows = rows.withColumn(
        "is_earliest_entry",
        F.col("is_latest_copy") & (F.col("leader_epoch") == F.min("leader_epoch").over(w_copy_file)),
    )
    return rows.select(*REPLICA_OFFSET_COLUMNS)
