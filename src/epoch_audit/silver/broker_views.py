"""Silver views of what each broker itself holds: its leader-epoch series, its replica offsets, and
its data batches compacted to runs.

Every builder is a pure ``(events, config) -> DataFrame`` function registered in
``SILVER_BUILDERS``; none of them collects. The checks in ``epoch_audit.gold.invariants.leadership`` and
``epoch_audit.gold.invariants.offsets`` read these tables; ``epoch_audit_tools.reference_model.broker_views`` is the
pure-Python twin the differential tests compare them with.

Ordering (spec "Ordering and time", rule 2): a broker's own log order is the line order inside one
file; across a broker's files (rotated files, the state-change log vs the request log) we use the
host clock. Redpanda multi-shard files are not time-monotonic, so a plain ``event_time`` sort would
reorder lines of one file. We therefore order by ``ots`` = the running maximum of ``event_time`` in
file line order (monotonic inside a file, so line order wins there; across files it is the host
time), then ``file_order, file_id, line_number, sub_index``. ``OWN_ORDER`` names those columns.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

# --- event types each view reads ------------------------------------------------------------
# Kafka: the LE a broker holds = the LE of each LeaderAndIsr state it accepted (spec
# leader_epoch_regression): the leader / follower start lines and request-log LEADER_AND_ISR with
# partition error NONE. "Skipped ..." lines are not used: on 3.6-3.9 they print the *requested*
# epoch, which may be lower than the held one (reference §1.2), so they would fake regressions.
KAFKA_HELD_TYPES = ("become_leader", "become_follower", "request_leader_and_isr")
# Redpanda: every term the node logs as its OWN current term (spec leader_epoch_regression). The
# Redpanda parser fills leader_epoch only for such lines (becoming/became the leader, the "current"
# term of a received vote request, "Setting new term", recovered state, started raft, self vote,
# election start, adopted larger term) and keeps other terms (step-down, vote replies, *_offset_term,
# a vote request's "received" term) in details. We still exclude the types whose term is never the
# node's own, and pre-vote lines (a pre-vote does not move the node's term).
RP_NOT_HELD_TYPES = (
    "rp_step_down",
    "rp_vote_reply",
    "rp_vote_granted",
    "rp_vote_refused",
    "rp_leadership_notification",
    "rp_leadership_transfer",
    "rp_truncate",
)
RP_VOTE_REQUEST = "rp_vote_request"
# Lines where a broker logs ANOTHER broker's leadership of an LE / term (causal order for
# two_leaders_same_epoch): Redpanda leadership notifications (term in details["term"]). Kafka
# follower start lines, which name the leader, are already epoch rows.
ACK_TYPES = ("rp_leadership_notification",)
HELD_TYPES = KAFKA_HELD_TYPES
# Lines where a broker claims leadership of an LE / term (spec two_leaders_same_epoch).
CLAIM_TYPES = ("become_leader", "rp_becoming_leader", "rp_became_leader")
# The broker deleted its local log of the partition: a later LE series is a new replica.
SERIES_BREAK_TYPES = ("log_deletion_scheduled", "log_deleted")
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

OWN_ORDER = ["ots", "file_order", "file_id", "line_number", "sub_index"]


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


BROKER_LE_COLUMNS = [
    "cluster_id",
    "broker_id",
    "host_id",
    "topic",
    "partition",
    "row_kind",
    "leader_epoch",
    "leader",
    "topic_id",
    "tid",
    "gen",
    "is_claim",
    "system",
    "event_type",
    "event_id",
    "event_time",
    "file_id",
    "file_order",
    "line_number",
    "sub_index",
    "ots",
    "seq",
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


def is_ok(error: Column) -> Column:
    """A request-log partition error meaning success (error code 0, printed NONE)."""
    return F.upper(F.trim(error)).isin("NONE", "0")


def rp_term() -> Column:
    """The term a Redpanda line names in details (vote replies, notifications, step-downs)."""
    return F.col("details")["term"].cast("int")


def with_own_order(df: DataFrame) -> DataFrame:
    """Add ``ots``: the running max of event_time along the file's line order (see module doc)."""
    w = (
        Window.partitionBy("file_id")
        .orderBy("line_number", "sub_index")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return df.withColumn("ots", F.max("event_time").over(w))


def _own_order_cols() -> list[Column]:
    return [F.col(c).asc_nulls_first() for c in OWN_ORDER]


def broker_leader_epochs(events: DataFrame, config: Any = None) -> DataFrame:
    """Per (cluster, broker, topic, partition) the LE / Raft-term series the broker holds, in its
    own log order (spec ``leader_epoch_regression``: Kafka accepted LeaderAndIsr and leader /
    follower start lines; Redpanda the node's own current-term lines).

    ``row_kind`` is ``epoch`` for a held LE and ``series_break`` for a broker-local log deletion
    (the replica is gone; a later series is a new replica). ``gen`` counts the breaks so far and
    ``tid`` is the last topic id the series named within its ``gen`` (a recreated topic has a new
    id): comparisons never cross a ``gen`` or a topic-id change. ``ack`` rows are Redpanda
    leadership notifications naming another node's leadership (``leader``), kept in the same own
    order for the causal rule of ``two_leaders_same_epoch``; they are not held epochs. ``seq`` numbers all rows of one
    series in own order. ``is_claim`` marks leadership claims (leader start lines, Redpanda
    becoming / became the leader).
    """
    et = F.col("event_type")
    held_le = F.when(et == RP_VOTE_REQUEST, F.col("current_leader_epoch")).otherwise(F.col("leader_epoch"))
    accepted = F.when(et == "request_leader_and_isr", is_ok(F.col("error"))).otherwise(F.lit(True))
    is_rp_held = (
        et.startswith("rp_")
        & ~et.isin(*RP_NOT_HELD_TYPES)
        & ~F.coalesce(F.lower(F.col("details")["prevote"]) == "true", F.lit(False))
    )
    epochs = (
        events.filter(et.isin(*HELD_TYPES) | is_rp_held)
        .filter(accepted)
        .withColumn("leader_epoch", held_le)
        # Sentinels -1 (no epoch) / -2 (being deleted) are not epochs a broker holds.
        .filter(F.col("leader_epoch") >= 0)
        .withColumn("row_kind", F.lit("epoch"))
    )
    acks = (
        events.filter(et.isin(*ACK_TYPES))
        .withColumn("leader_epoch", F.coalesce(F.col("leader_epoch"), rp_term()))
        .filter(F.col("leader").isNotNull() & F.col("leader_epoch").isNotNull())
        .withColumn("row_kind", F.lit("ack"))
    )
    breaks = (
        events.filter(et.isin(*SERIES_BREAK_TYPES))
        .withColumn("leader_epoch", F.lit(None).cast("int"))
        .withColumn("row_kind", F.lit("series_break"))
    )
    rows = (
        epochs.unionByName(acks)
        .unionByName(breaks)
        .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull())
        .withColumn("broker_id", F.coalesce(F.col("broker_id"), F.col("host_id")))
        .withColumn("is_claim", (F.col("row_kind") == "epoch") & et.isin(*CLAIM_TYPES))
        .withColumn("system", F.when(et.startswith("rp_"), F.lit("redpanda")).otherwise(F.lit("kafka")))
    )
    rows = with_own_order(rows)
    key = ["cluster_id", "broker_id", "topic", "partition"]
    w_all = Window.partitionBy(*key).orderBy(*_own_order_cols())
    rows = rows.withColumn("seq", F.row_number().over(w_all)).withColumn(
        "gen",
        F.sum(F.when(F.col("row_kind") == "series_break", 1).otherwise(0)).over(
            w_all.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        ),
    )
    w_gen = Window.partitionBy(*key, "gen").orderBy("seq").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    rows = rows.withColumn("tid", F.last("topic_id", ignorenulls=True).over(w_gen))
    return rows.select(*BROKER_LE_COLUMNS)


def produce_runs(events: DataFrame, config: Any = None) -> DataFrame:
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


def _topic_id_asof(rows: DataFrame, events: DataFrame) -> DataFrame:
    """``tid`` = the row's own topic id, else the last topic id the same host logged for the
    partition at or before the row's time (host clock; a missing time is "at collection", last)."""
    src = events.filter(F.col("event_type").isin(*TOPIC_ID_TYPES) & F.col("topic_id").isNotNull()).select(
        "cluster_id",
        "host_id",
        "topic",
        "partition",
        "event_time",
        F.col("topic_id").alias("src_tid"),
        F.lit(0).alias("_rank"),
        F.lit(None).cast("string").alias("_rid"),
    )
    probe = rows.select(
        "cluster_id",
        "host_id",
        "topic",
        "partition",
        "event_time",
        F.lit(None).cast("string").alias("src_tid"),
        F.lit(1).alias("_rank"),
        F.col("_rid"),
    )
    w = (
        Window.partitionBy("cluster_id", "host_id", "topic", "partition")
        .orderBy(F.col("event_time").asc_nulls_last(), "_rank")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    asof = (
        src.unionByName(probe)
        .withColumn("asof_tid", F.last("src_tid", ignorenulls=True).over(w))
        .filter(F.col("_rank") == 1)
        .select("_rid", "asof_tid")
    )
    return rows.join(asof, "_rid", "left").withColumn("tid", F.coalesce(F.col("topic_id"), F.col("asof_tid")))


def replica_offsets(events: DataFrame, config: Any = None) -> DataFrame:
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
    """
    et = F.col("event_type")
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

    leader_lines = base.filter(et == "become_leader")
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
    line_rows = with_own_order(line_rows)
    w_line = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series").orderBy(*_own_order_cols())
    line_rows = line_rows.withColumn("series_seq", F.row_number().over(w_line)).drop("ots")

    host = F.coalesce(F.col("host_id"), F.col("broker_id"))
    lsc = base.filter(et == "checkpoint_leader_epoch").filter(
        F.col("offset").isNotNull() & F.col("leader_epoch").isNotNull()
    )
    ckpt_rows = pick(lsc, "epoch_start_checkpoint", host, F.col("leader_epoch"), F.col("offset"))
    ckpt_rows = ckpt_rows.unionByName(
        pick(
            base.filter(et == "checkpoint_replication_offset"),
            "hw_checkpoint",
            host,
            F.lit(None),
            F.coalesce(F.col("high_watermark"), F.col("offset")),
        ).filter(F.col("value").isNotNull())
    )
    w_copy = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series").orderBy(*copy_order())
    ckpt_rows = ckpt_rows.withColumn("series_seq", F.row_number().over(w_copy))

    log_start = pick(
        base.filter(et.isin("checkpoint_log_start_offset", "log_start_offset_incremented")),
        "log_start",
        F.when(et == "checkpoint_log_start_offset", host).otherwise(own_broker),
        F.lit(None),
        F.coalesce(F.col("log_start_offset"), F.col("offset")),
    ).filter(F.col("value").isNotNull())
    log_start = log_start.withColumn("series_seq", F.lit(None).cast("int"))

    runs = produce_runs(events, config)
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
    # Deterministic row id (an event may feed two series: a leader line's start and its HW).
    rows = rows.withColumn("_rid", F.concat_ws("|", "series", "broker_id", "event_id"))
    rows = _topic_id_asof(rows, events)

    # Latest leader-epoch-checkpoint copy per broker/partition, and its earliest entry.
    cp = F.col("series") == "epoch_start_checkpoint"
    latest_key = F.struct(
        F.coalesce(F.col("event_time").isNull().cast("int"), F.lit(0)).alias("a"),
        "event_time",
        "file_order",
        "source_file",
    )
    w_p = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series")
    rows = rows.withColumn("_ck", F.when(cp, latest_key))
    rows = rows.withColumn("is_latest_copy", cp & F.col("_ck").eqNullSafe(F.max("_ck").over(w_p)))
    w_copy_file = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series", "source_file")
    rows = rows.withColumn(
        "is_earliest_entry",
        F.col("is_latest_copy") & (F.col("leader_epoch") == F.min("leader_epoch").over(w_copy_file)),
    )
    return rows.select(*REPLICA_OFFSET_COLUMNS)


SILVER_BUILDERS: dict[str, Callable[[DataFrame, Any], DataFrame]] = {
    "broker_leader_epochs": broker_leader_epochs,
    "replica_offsets": replica_offsets,
    "produce_runs": produce_runs,
}
