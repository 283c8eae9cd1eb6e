"""Silver timelines: per-partition controller decisions, broker registrations, brokers' CE views.

Every builder is a pure ``(events, config) -> DataFrame`` over the bronze events of
:mod:`epoch_audit.contracts.events`; the lead composes ``SILVER_BUILDERS`` (plus C2's) into
``CheckContext.silver``.

Ordering (spec "Ordering and time"):
1. KRaft: metadata-log offset; ZK: the controller's own log order (controller epochs order
   controllers, a higher CE is later).
2. A broker's own log order: line order inside one file; across the files of one host the
   event time (same host, same clock), then file order / id / line. We make line order win
   inside a file by ordering on the running maximum of the event time along the file's lines
   (``_own_time``): it never decreases down a file, so a late-flushed line cannot jump ahead of
   an earlier line of the same file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

if TYPE_CHECKING:  # a runtime import would cycle: epoch_audit.gold.invariants imports this module
    from epoch_audit.gold.base import CheckConfig

# Bronze event types a builder reads (so callers can prune before building).
KRAFT_PARTITION_TYPES = ("md_partition", "md_partition_change")
# RemoveTopicRecord: the topic id's partitions cease to exist at its commit point.
KRAFT_TOPIC_REMOVAL_TYPES = ("md_remove_topic",)
KRAFT_TXN_TYPES = ("md_begin_transaction", "md_end_transaction", "md_abort_transaction")
KRAFT_BROKER_TYPES = (
    "md_register_broker",
    "md_unregister_broker",
    "md_broker_registration_change",
    "md_fence_broker",
    "md_unfence_broker",
)
ZK_DECISION_TYPES = ("controller_partition_state_change", "controller_isr_change", "controller_isr_updated")
ZK_CONTROLLER_LOG_TYPES = ZK_DECISION_TYPES + (
    "controller_send_leader_and_isr",
    "controller_send_stop_replica",
    "controller_send_update_metadata",
)
ZK_STAND_IN_TYPES = ("leader_and_isr_received", "request_leader_and_isr")
# Requests a ZK broker processes that carry the REQUEST's controller epoch (raising its known CE),
# and refusal lines that state the broker's known CE ("Latest known controller epoch is N").
# A per-partition refusal of an epoch check (L4-L7, S4-S6) or the L11/L12 "Stopped fetchers" line is
# written after the request passed its controller-epoch check: the broker processed it.
CONTROLLER_REQUEST_TYPES = (
    "leader_and_isr_received",
    "leader_and_isr_fetchers_stopped",
    "leader_and_isr_stale_epoch",
    "leader_and_isr_equal_epoch",
    "leader_and_isr_other_refusal",
    "stop_replica_fenced",
    "stop_replica_equal_epoch_refused",
    "stop_replica_storage_error",
    "stop_replica_received",
    "update_metadata_applied",
    "update_metadata_partition_deleted",
    "request_leader_and_isr",
    "request_stop_replica",
    "request_update_metadata",
)
STALE_CONTROLLER_REFUSAL_TYPES = (
    "leader_and_isr_stale_controller",
    "stop_replica_stale_controller",
    "update_metadata_stale_controller",
)
NO_ERROR = ("NONE", "0")
# Whole-request refusals before the broker looks at the request's controller epoch.
UNPROCESSED_REQUEST_ERRORS = ("STALE_BROKER_EPOCH", "77")

# ---------------------------------------------------------------------------------------------
# Shared ordering helpers (used by the invariants too)
# ---------------------------------------------------------------------------------------------

OWN_ORDER_COLS = ("_own_time", "file_order", "file_id", "line_number", "sub_index")


def with_own_order(events: DataFrame, types: tuple[str, ...] | None = None) -> DataFrame:
    """Add ``_own_time``: the running max of event_time along each file's lines.

    Apply it to the whole bronze table (then filter), so every check sees the same key.

    Ordering a broker's events by ``own_order()`` then keeps every file's line order (rule 2 of
    the spec's ordering) and interleaves a host's files by its own clock.

    With ``types``, only events of those types are returned, and only they go through the
    window's shuffle whole: every other event contributes just its position and time (the
    running max is the same, the shuffled bytes are a fraction).
    """
    if "_own_time" in events.columns:  # already staged once for the whole stage
        return events if types is None else events.where(F.col("event_type").isin(*types))
    if "own_time" in events.columns:  # bronze since the own_time column: fixed at ingest, same value
        own = events.withColumn("_own_time", F.col("own_time"))
        return own if types is None else own.where(F.col("event_type").isin(*types))
    w = (
        Window.partitionBy("file_id")
        .orderBy("line_number", "sub_index")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    if types is None:
        return events.withColumn("_own_time", F.max("event_time").over(w))
    wanted = events.where(F.col("event_type").isin(*types)).withColumn("_keep", F.lit(True))
    positions = events.select("file_id", "line_number", "sub_index", "event_time").withColumn("_keep", F.lit(False))
    both = wanted.unionByName(positions, allowMissingColumns=True)
    return both.withColumn("_own_time", F.max("event_time").over(w)).where("_keep").drop("_keep")


def own_order() -> list[Column]:
    """Sort key of a broker's own log order (after :func:`with_own_order`)."""
    return [F.col(c).asc_nulls_first() for c in OWN_ORDER_COLS]


def is_no_error(col: Column) -> Column:
    """Request-log / response error NONE (the parsers write the name; tolerate the code 0)."""
    return F.coalesce(col.isin(*NO_ERROR), F.lit(False))


# ---------------------------------------------------------------------------------------------
# KRaft metadata log: dedupe across hosts, batch commit points, transactions
# ---------------------------------------------------------------------------------------------


def committed_metadata_records(events: DataFrame, types: tuple[str, ...]) -> DataFrame:
    """KRaft metadata records of ``types`` that committed, one per (cluster, offset), with commit_offset.

    - Every controller / broker holds a copy of ``__cluster_metadata``: a record is identified
      by its metadata offset, so copies from several hosts collapse to one (lowest host, then
      event id, for a deterministic evidence id).
    - Commit point: a batch commits atomically, so a record's commit offset is the last offset
      of its batch (``md_batch`` header: offset = base, last_offset); without a batch header the
      record's own offset.
    - KIP-868 transactions: records between BeginTransactionRecord and EndTransactionRecord
      commit at the End record's commit point; records followed by AbortTransactionRecord (or by
      no end marker at all: still open) commit nothing and are dropped.
    """
    md = events.where(F.col("event_type").isin(*(types + KRAFT_TXN_TYPES))).where(F.col("metadata_offset").isNotNull())
    pick = Window.partitionBy("cluster_id", "metadata_offset").orderBy(F.col("host_id").asc_nulls_last(), "event_id")
    md = md.withColumn("_rn", F.row_number().over(pick)).where("_rn = 1").drop("_rn")

    batches = (
        events.where(F.col("event_type") == "md_batch")
        .select(
            "cluster_id",
            F.col("offset").alias("_b_base"),
            F.col("last_offset").alias("_b_last"),
        )
        .where(F.col("_b_base").isNotNull())
        .dropDuplicates(["cluster_id", "_b_base"])
    )
    # Sort-based as-of join: headers sort before the records of their batch (same offset, flag 0).
    rec = md.withColumn("_is_rec", F.lit(1)).withColumn("_pos", F.col("metadata_offset"))
    hdr = batches.select("cluster_id", F.col("_b_base").alias("_pos"), F.lit(0).alias("_is_rec"), "_b_last")
    both = rec.unionByName(hdr, allowMissingColumns=True)
    w_pos = (
        Window.partitionBy("cluster_id")
        .orderBy("_pos", "_is_rec")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    both = both.withColumn("_cur_last", F.last("_b_last", ignorenulls=True).over(w_pos))
    rec = both.where("_is_rec = 1").withColumn(
        "_batch_commit",
        F.when(F.col("_cur_last") >= F.col("metadata_offset"), F.col("_cur_last")).otherwise(F.col("metadata_offset")),
    )

    # Transactions: the last marker at or before the record, the first marker after it.
    marker = F.when(
        F.col("event_type").isin(*KRAFT_TXN_TYPES),
        F.struct(F.col("event_type").alias("t"), F.col("_batch_commit").alias("c")),
    )
    w_before = (
        Window.partitionBy("cluster_id")
        .orderBy("metadata_offset")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    # The next marker, read backwards: Spark recomputes an unbounded-following frame per row.
    w_after = (
        Window.partitionBy("cluster_id")
        .orderBy(F.col("metadata_offset").desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    rec = rec.withColumn("_prev_m", F.last(marker, ignorenulls=True).over(w_before)).withColumn(
        "_next_m", F.last(marker, ignorenulls=True).over(w_after)
    )
    in_txn = F.coalesce(F.col("_prev_m.t") == "md_begin_transaction", F.lit(False))
    committed_txn = F.coalesce(F.col("_next_m.t") == "md_end_transaction", F.lit(False))
    rec = (
        rec.where(~F.col("event_type").isin(*KRAFT_TXN_TYPES))
        .where(~in_txn | committed_txn)
        .withColumn(
            "commit_offset",
            F.when(in_txn, F.col("_next_m.c")).otherwise(F.col("_batch_commit")),
        )
    )
    return rec.drop("_is_rec", "_pos", "_b_last", "_cur_last", "_batch_commit", "_prev_m", "_next_m")


# ---------------------------------------------------------------------------------------------
# partition_timeline
# ---------------------------------------------------------------------------------------------

TIMELINE_COLUMNS = [
    "cluster_id",
    "topic",
    "partition",
    "topic_id",
    "decision_seq",
    "source",
    "leader",
    "leader_epoch",
    "partition_epoch",
    "isr",
    "replicas",
    "event_time",
    "metadata_offset",
    "controller_id",
    "controller_epoch",
    "event_id",
    "commit_offset",
    "next_commit_offset",
    "is_leader_change",
]


def snapshot_records(events: DataFrame, types: tuple[str, ...]) -> DataFrame:
    """KRaft snapshot records (§3.2) of ``types``, one per snapshot record, with ``_snap_pos``.

    A ``<endOffset>-<epoch>.checkpoint`` snapshot holds the state of every record below its end
    offset, so its records state a partition / broker as of log offset ``endOffset - 1``
    (``_snap_pos``); the bootstrap snapshot precedes the whole log (-1). Copies of one snapshot on
    several hosts collapse to one (same end offset, same record position inside the snapshot).
    """
    d = F.col("details")
    pos = F.when(d["snapshot"] == "bootstrap", F.lit(-1).cast("long")).otherwise(
        d["snapshot_end_offset"].cast("long") - 1
    )
    snap = (
        events.where(F.col("event_type").isin(*types) & F.col("metadata_offset").isNull() & d["snapshot"].isNotNull())
        .withColumn("_snap_pos", pos)
        .withColumn("_snap_rec", d["snapshot_offset"].cast("long"))
        .where(F.col("_snap_pos").isNotNull())
    )
    pick = Window.partitionBy("cluster_id", "_snap_pos", "_snap_rec").orderBy(
        F.col("host_id").asc_nulls_last(), "event_id"
    )
    return snap.withColumn("_rn", F.row_number().over(pick)).where("_rn = 1").drop("_rn", "_snap_rec")


def covered_intervals(events: DataFrame) -> DataFrame:
    """Per cluster, the metadata-log offsets the dumps cover: (cluster_id, ``_cov_ivs``).

    ``_cov_ivs`` is the sorted array of struct(s, e) of maximal covered offset intervals: every
    batch header's [base, last] and every record's own offset (a record printed without its batch
    line still shows its offset), merged across hosts when they overlap or touch (last + 1 = next
    base). Offsets no dump shows are holes: a PartitionChangeRecord there bumps epochs nobody
    counted. A cluster without any batch header gets no row (its dump cannot show holes, e.g.
    control records print no event: assumed contiguous, as before). Small (one row per cluster, a
    few intervals): callers broadcast it.
    """
    # A batch header's base is ``offset``; a record inside a batch carries the batch's range
    # (offset, last_offset) besides its own metadata_offset: one span per batch.
    own = F.coalesce("metadata_offset", "offset")
    md = events.where(
        F.col("event_type").startswith("md_")
        & (F.col("metadata_offset").isNotNull() | ((F.col("event_type") == "md_batch") & F.col("offset").isNotNull()))
    )
    lo = F.least(F.coalesce("offset", own), own)
    hi = F.greatest(F.coalesce("last_offset", "offset", own), own)
    # One aggregation: the distinct spans of the cluster (a set: records repeat their batch's span),
    # sorted, then merged left to right (the accumulator holds the few intervals found so far).
    spans = F.array_sort(F.collect_set(F.struct(lo.alias("s"), hi.alias("e"))))

    def merge(acc: Column, x: Column) -> Column:
        n = F.size(acc)
        last = F.try_element_at(acc, F.lit(-1))
        grown = F.struct(last["s"].alias("s"), F.greatest(last["e"], x["e"]).alias("e"))
        return F.when((n > 0) & (x["s"] <= last["e"] + 1), F.concat(F.slice(acc, 1, n - 1), F.array(grown))).otherwise(
            F.concat(acc, F.array(x))
        )

    none = F.array().cast("array<struct<s:bigint,e:bigint>>")
    return (
        md.groupBy("cluster_id")
        .agg(spans.alias("_spans"), F.max((F.col("event_type") == "md_batch").cast("int")).alias("_hdr"))
        .where(F.col("_hdr") == 1)
        .select("cluster_id", F.aggregate("_spans", none, merge).alias("_cov_ivs"))
    )


def with_covered_interval(rows: DataFrame, covered: DataFrame, pos: Column, slack: Column) -> DataFrame:
    """``_cov``: which covered interval (:func:`covered_intervals`) ``pos`` lies in, as its start.

    ``slack`` widens an interval [s, e] down to s - slack: a snapshot at s - 1 (end offset s) states
    the state right before the interval's first offset, so it belongs to the interval. An offset in
    no interval gets -2 - pos (its own id, never an interval start); every row of a cluster without
    batch headers gets 0 (one interval: assumed contiguous). A broadcast join on the cluster.
    """
    ivs = covered.withColumnRenamed("cluster_id", "_cov_cluster")
    rows = rows.join(F.broadcast(ivs), rows["cluster_id"].eqNullSafe(ivs["_cov_cluster"]), "left")
    hit = F.array_max(
        F.transform(F.col("_cov_ivs"), lambda iv: F.when((iv["s"] - slack <= pos) & (pos <= iv["e"]), iv["s"]))
    )
    cov = F.when(F.col("_cov_ivs").isNull(), F.lit(0).cast("long")).otherwise(F.coalesce(hit, -2 - pos))
    return rows.withColumn("_cov", cov).drop("_cov_cluster", "_cov_ivs")


def with_hole_after(rows: DataFrame, covered: DataFrame, commit: Column) -> DataFrame:
    """``_hole``: the first offset of the hole right after the covered interval holding ``commit``
    (:func:`covered_intervals`), ``commit`` + 1 when no interval holds it but a later one exists, or
    null (no later interval: the dumped log just ends there; or a cluster without batch headers).

    A state stated at ``commit`` holds until the next record of its key, but only as far as the log
    shows: a change inside the hole may have replaced it, so it holds at most up to the hole. The
    interval is widened by one below its start (a snapshot's starting state sits at its last offset,
    right before the interval its log resumes at). A broadcast join on the cluster.
    """
    ivs = covered.withColumnRenamed("cluster_id", "_hole_cluster")
    rows = rows.join(F.broadcast(ivs), rows["cluster_id"].eqNullSafe(ivs["_hole_cluster"]), "left")
    end = F.array_max(
        F.transform(F.col("_cov_ivs"), lambda iv: F.when((iv["s"] - 1 <= commit) & (commit <= iv["e"]), iv["e"]))
    )
    last = F.array_max(F.transform(F.col("_cov_ivs"), lambda iv: iv["e"]))
    # Outside every interval (a snapshot whose end offset no dump shows): the hole starts right after.
    hole = F.when(end.isNotNull(), F.when(end < last, end + 1)).when(commit < last, commit + 1)
    return rows.withColumn("_hole", hole).drop("_hole_cluster", "_cov_ivs")


def with_snapshot_bases(
    log: DataFrame, snap: DataFrame, key: list[str], is_full: Column, fields: list[str], covered: DataFrame
) -> DataFrame:
    """The key's log records (``_pos`` = offset) and starting snapshot row, cut into replay segments.

    Returns those rows with ``_seg`` (replay segment, ascending along the key's log) and ``_snap``
    (struct(pos, ``fields``) of the snapshot that supplies what the segment's replay lacks, or null).

    - Starting state: the latest snapshot below the key's first log record (the log before it was
      deleted) is returned as a record at ``_pos`` = the snapshot's last offset (``commit_offset``
      there); it is full, as is every ``is_full`` log record: each starts a segment.
    - Holes: a record whose previous row lies in another covered interval (:func:`covered_intervals`:
      offsets no dump shows lie between them) starts a segment too. Changes inside the hole were
      never seen, so what the replay carries over it would be wrong: such a segment starts unknown.
    - A segment that starts without a full record (the log starts mid-history, or after a hole)
      takes ``_snap`` from the earliest snapshot at or after the key's first log record whose position
      lies in the segment, i.e. in the same covered interval (or right before its first offset: a
      snapshot whose end offset is where the kept log resumes) and before the next full record: the
      snapshot states the key at its offset, and every change between it and the segment's records
      is in the log, so the replay can count back from it.

    One pass over ``log``, windows on the key only (no second read, no join but the broadcast of
    the covered intervals).
    """
    rows = log.withColumn("_snap_pos", F.lit(None).cast("long")).unionByName(
        snap.withColumn("_pos", F.col("_snap_pos")), allowMissingColumns=True
    )
    is_snap = F.col("_snap_pos").isNotNull()
    rows = rows.withColumn("_is_snap", is_snap)
    # One order for every window: the key's rows by position, a snapshot after the record at its
    # offset (it states the key after that record). Whole-key aggregates use the whole frame of the
    # same order, so the key is sorted once; segments are sorted once (by _seg, then this order) and
    # callers' segment windows ordered by _pos reuse that sort.
    order = ["_pos", "_is_snap", "event_id"]
    w_ord = Window.partitionBy(*key).orderBy(*order)
    w_key = w_ord.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    rows = rows.withColumn("_first_log", F.min(F.when(~is_snap, F.col("_pos"))).over(w_key))
    before = is_snap & (F.col("_first_log").isNull() | (F.col("_snap_pos") < F.col("_first_log")))
    start_rank = F.when(before, F.struct((-F.col("_snap_pos")).alias("a"), F.col("event_id").alias("b")))
    rows = rows.withColumn("_start_rank", start_rank).withColumn("_best_start", F.min("_start_rank").over(w_key))
    # Snapshots below the starting one say nothing the starting one does not.
    rows = rows.where(~before | (F.col("_start_rank") == F.col("_best_start"))).withColumn(
        "_cand", is_snap & ~before
    )
    rows = with_covered_interval(rows, covered, F.col("_pos"), F.when(is_snap, 1).otherwise(0))
    full = ~F.col("_cand") & F.coalesce(is_full, F.lit(False))
    prev_cov = F.lag("_cov").over(w_ord)
    seg_start = full | prev_cov.isNull() | (prev_cov != F.col("_cov"))
    rows = rows.withColumn("_seg", F.sum(seg_start.cast("int")).over(w_ord.rowsBetween(Window.unboundedPreceding, 0)))
    w_seg = (
        Window.partitionBy(*key, "_seg")
        .orderBy(*order)
        .rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    )
    cand_rank = F.when(F.col("_cand"), F.struct(F.col("_pos").alias("a"), F.col("event_id").alias("b")))
    rows = (
        rows.withColumn("_seg_full", F.max(full.cast("int")).over(w_seg))
        .withColumn("_cand_rank", cand_rank)
        .withColumn("_best_cand", F.min("_cand_rank").over(w_seg))
    )
    serves = F.col("_cand") & (F.col("_cand_rank") == F.col("_best_cand")) & (F.col("_seg_full") == 0)
    rows = rows.withColumn(
        "_snap",
        F.max(F.when(serves, F.struct(F.col("_snap_pos").alias("pos"), *[F.col(f) for f in fields]))).over(w_seg),
    )
    rows = rows.where(~F.col("_cand")).withColumn(
        "commit_offset", F.when(is_snap, F.col("_pos")).otherwise(F.col("commit_offset"))
    )
    return rows.drop(
        "_snap_pos", "_is_snap", "_first_log", "_start_rank", "_best_start", "_cand", "_cov", "_seg_full",
        "_cand_rank", "_best_cand",
    )


def _kraft_decisions(events: DataFrame) -> DataFrame:
    """Replay PartitionRecord / PartitionChangeRecord per (cluster, topic id, partition).

    PartitionRegistration.merge (KRaft): a PartitionChangeRecord carries only the changed fields.
    leader absent (null) or -2 = unchanged; otherwise the leader is set AND the leader epoch goes
    up by one (even when the same leader is re-sent: the forced bump of KAFKA-15021). The
    partition epoch goes up by one on every change record. isr / replicas null = unchanged.
    leaderRecoveryState and ELR never move either epoch. A PartitionRecord (new or existing
    partition) sets the whole state and starts a new replay segment.

    A dump that starts mid-log (the log before a snapshot is deleted) replays from a snapshot
    (:func:`with_snapshot_bases`): a snapshot below the partition's first log record is its starting
    state (a decision row at ``decision_seq`` = the snapshot's last offset, no metadata offset, no
    time); a snapshot the log overlaps gives the epochs of the changes before the first full record
    (the state at the snapshot's offset is known, every change in between is one bump). Without
    either, changes before any PartitionRecord keep leader / ISR but have no epochs (unknown).

    Holes (offsets between two dumped logs that no dump shows, e.g. two hosts dumped at different
    times): the changes in a hole were never counted, so after a hole the replay starts a new
    segment with unknown epochs (null, never a number too low) and only the fields its own records
    set, until the next PartitionRecord, unless a snapshot in the same covered interval (or ending
    exactly where it starts) supplies the state, counted back as above.
    """
    key = ["cluster_id", "topic_id", "partition"]
    full_t = F.col("event_type") == "md_partition"
    log = committed_metadata_records(events, KRAFT_PARTITION_TYPES).withColumn("_pos", F.col("metadata_offset"))
    recs = with_snapshot_bases(
        log, snapshot_records(events, ("md_partition",)), key, full_t,
        ["leader", "leader_epoch", "partition_epoch", "isr", "replicas"], covered_intervals(events),
    )
    # Topic names: a TopicRecord never changes (a recreated topic gets a new id); a snapshot's counts.
    topics = (
        events.where(F.col("event_type") == "md_topic")
        .select("cluster_id", "topic_id", F.col("topic").alias("_topic_name"))
        .where(F.col("topic_id").isNotNull() & F.col("_topic_name").isNotNull())
        .dropDuplicates(["cluster_id", "topic_id"])
    )
    is_full = F.col("event_type") == "md_partition"
    leader_set = ~is_full & F.col("leader").isNotNull() & (F.col("leader") != -2)
    w_seg = (
        Window.partitionBy(*key, "_seg")
        .orderBy("_pos")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    w_seg_all = Window.partitionBy(*key, "_seg")
    recs = recs.withColumn("_le_bumps", F.sum(leader_set.cast("int")).over(w_seg)).withColumn(
        "_pe_bumps", F.sum((~is_full).cast("int")).over(w_seg)
    )
    # A segment without a full record (the log's start, or after a hole) that a snapshot serves
    # (``_snap``, only there): the bumps up to the snapshot's offset are counted back from it.
    at_snap = F.col("_pos") <= F.col("_snap.pos")
    recs = recs.withColumn("_le_at_snap", F.max(F.when(at_snap, F.col("_le_bumps"))).over(w_seg_all)).withColumn(
        "_pe_at_snap", F.max(F.when(at_snap, F.col("_pe_bumps"))).over(w_seg_all)
    )
    base_le = F.coalesce(
        F.first(F.when(is_full, F.col("leader_epoch")), ignorenulls=True).over(w_seg),
        F.col("_snap.leader_epoch") - F.coalesce("_le_at_snap", F.lit(0)),
    )
    base_pe = F.coalesce(
        F.first(F.when(is_full, F.col("partition_epoch")), ignorenulls=True).over(w_seg),
        F.col("_snap.partition_epoch") - F.coalesce("_pe_at_snap", F.lit(0)),
    )
    after_snap = F.col("_pos") > F.col("_snap.pos")
    eff_leader = F.when(is_full | leader_set, F.col("leader"))

    def carried(value: Column, name: str) -> Column:
        # a field no change record of the segment has set yet is the serving snapshot's, after its offset
        return F.coalesce(F.last(value, ignorenulls=True).over(w_seg), F.when(after_snap, F.col(f"_snap.{name}")))

    out = recs.select(
        "cluster_id",
        "topic",
        "partition",
        "topic_id",
        F.col("_pos").alias("decision_seq"),
        F.lit("kraft").alias("source"),
        carried(eff_leader, "leader").alias("leader"),
        (base_le + F.col("_le_bumps")).cast("int").alias("leader_epoch"),
        (base_pe + F.col("_pe_bumps")).cast("int").alias("partition_epoch"),
        carried(F.col("isr"), "isr").alias("isr"),
        carried(F.col("replicas"), "replicas").alias("replicas"),
        "event_time",
        "metadata_offset",
        F.lit(None).cast("int").alias("controller_id"),
        # KRaft has no controller epoch; the metadata batch's quorum epoch plays that role.
        F.col("quorum_epoch").alias("controller_epoch"),
        "event_id",
        "commit_offset",
    )
    out = out.join(F.broadcast(topics), ["cluster_id", "topic_id"], "left").withColumn(
        "topic", F.coalesce("_topic_name", "topic")
    )
    return out.drop("_topic_name")


def with_file_controller_epoch(own: DataFrame, events: DataFrame) -> DataFrame:
    """Fill a controller line's missing controller epoch from its own log file.

    "ISR for partition ... updated to" is logged under ``[Controller id=N]`` without the epoch that
    every other controller line carries (``[Controller id=N epoch=E]``): it takes the epoch of the
    last line before it in the same file that names one (same process, same controller term).
    Without it the decision would sort before every decision of the partition.
    """
    need = own.where(F.col("controller_epoch").isNull()).select(
        "event_id", "file_id", "line_number", "sub_index", F.lit(1).alias("_k")
    )
    marks = events.where(
        F.col("event_type").isin(*ZK_CONTROLLER_LOG_TYPES) & F.col("controller_epoch").isNotNull()
    ).select("file_id", "line_number", "sub_index", F.col("controller_epoch").alias("_mark_ce"), F.lit(0).alias("_k"))
    w = (
        Window.partitionBy("file_id")
        .orderBy("line_number", "sub_index", "_k")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    filled = (
        need.unionByName(marks, allowMissingColumns=True)
        .withColumn("_fill_ce", F.last("_mark_ce", ignorenulls=True).over(w))
        .where("_k = 1")
        .select("event_id", "_fill_ce")
    )
    return (
        own.join(filled, "event_id", "left")
        .withColumn("controller_epoch", F.coalesce("controller_epoch", "_fill_ce"))
        .drop("_fill_ce")
    )


def _zk_decisions(events: DataFrame) -> DataFrame:
    """ZK timeline: the controller's own decisions, else (log absent) brokers' received states.

    Own decisions: "Changed partition ... with state LeaderAndIsr(...)", "Partition ... state
    changed to (Leader:..)" and the ZK "ISR for partition ... updated to" lines, in the
    controller's own log order, controllers ordered by their epoch (a higher CE is later).

    Stand-ins (spec, opening paragraph): LeaderAndIsr states a broker received (TRACE "Received
    LeaderAndIsr request" or request-log LEADER_AND_ISR) stand in only when the issuing
    controller (controller id, request CE) left no state-change line of its own in the input.
    Even then a state is a re-send, never a decision, when its partition-state controllerEpoch is
    below the request's controller epoch, or its LE is not above the latest decided LE of the
    partition. Re-sends of one state to every replica collapse the same way (equal LE).
    """
    ev = with_own_order(events, ZK_DECISION_TYPES + ZK_STAND_IN_TYPES)
    present = (
        events.where(F.col("event_type").isin(*ZK_CONTROLLER_LOG_TYPES))
        .select(
            F.col("cluster_id").alias("_pc_cluster"),
            F.col("controller_id").alias("_pc_id"),
            F.col("controller_epoch").alias("_pc_epoch"),
        )
        .where(F.col("_pc_id").isNotNull() & F.col("_pc_epoch").isNotNull())
        .dropDuplicates()
    )
    own = ev.where(
        F.col("event_type").isin(*ZK_DECISION_TYPES) & F.col("topic").isNotNull() & F.col("leader_epoch").isNotNull()
    ).withColumn("_own", F.lit(True))
    own = with_file_controller_epoch(own, events)
    cand = (
        ev.where(F.col("event_type").isin(*ZK_STAND_IN_TYPES))
        .where(F.col("topic").isNotNull() & (F.col("leader_epoch") >= 0))
        # a request-log state counts only when the broker applied it (partition error NONE)
        .where((F.col("event_type") != "request_leader_and_isr") | is_no_error(F.col("error")))
        .join(
            F.broadcast(present),
            (F.col("cluster_id") == F.col("_pc_cluster"))
            & (F.col("controller_id") == F.col("_pc_id"))
            & (F.col("controller_epoch") == F.col("_pc_epoch")),
            "left_anti",
        )
        .withColumn("_own", F.lit(False))
    )
    rows = own.unionByName(cand)
    # Causal order: controller epoch first; inside one controller epoch its own log order, or,
    # for stand-ins (no controller log), the states' own epochs (LE, then partition epoch).
    key = ["cluster_id", "topic", "partition"]
    order = [
        F.col("controller_epoch").asc_nulls_first(),
        F.when(~F.col("_own"), F.col("leader_epoch")).asc_nulls_first(),
        F.when(~F.col("_own"), F.col("partition_epoch")).asc_nulls_first(),
        *own_order(),
        F.col("event_id"),
    ]
    w = Window.partitionBy(*key).orderBy(*order)
    w_prev = w.rowsBetween(Window.unboundedPreceding, -1)
    resend_ce = ~F.col("_own") & F.coalesce(F.col("state_controller_epoch") < F.col("controller_epoch"), F.lit(False))
    rows = rows.withColumn("_resend_ce", resend_ce).withColumn(
        "_max_le_before",
        F.max(F.when(~F.col("_resend_ce"), F.col("leader_epoch"))).over(w_prev),
    )
    keep = F.col("_own") | (
        ~F.col("_resend_ce") & (F.col("_max_le_before").isNull() | (F.col("leader_epoch") > F.col("_max_le_before")))
    )
    rows = rows.where(keep)
    return rows.select(
        "cluster_id",
        "topic",
        "partition",
        "topic_id",
        F.row_number().over(Window.partitionBy(*key).orderBy(*order)).cast("long").alias("decision_seq"),
        F.when(F.col("_own"), F.lit("zk-controller")).otherwise(F.lit("zk-leader-and-isr")).alias("source"),
        "leader",
        "leader_epoch",
        "partition_epoch",
        "isr",
        "replicas",
        "event_time",
        "metadata_offset",
        "controller_id",
        "controller_epoch",
        "event_id",
        F.lit(None).cast("long").alias("commit_offset"),
    )


def _redpanda_decisions(events: DataFrame) -> DataFrame:
    """Redpanda: each "became the leader term: N" is a decision (leader = node, LE = term).

    Raft terms order the decisions (a higher term is later); equal terms (two claimants, which
    two_leaders_same_epoch reports) by time, then event id.
    """
    rp = events.where(F.col("event_type") == "rp_became_leader").where(
        F.col("topic").isNotNull() & F.col("leader_epoch").isNotNull()
    )
    key = ["cluster_id", "topic", "partition"]
    order = [F.col("leader_epoch"), F.col("event_time").asc_nulls_first(), F.col("event_id")]
    return rp.select(
        "cluster_id",
        "topic",
        "partition",
        "topic_id",
        F.row_number().over(Window.partitionBy(*key).orderBy(*order)).cast("long").alias("decision_seq"),
        F.lit("redpanda").alias("source"),
        F.col("broker_id").alias("leader"),
        "leader_epoch",
        F.lit(None).cast("int").alias("partition_epoch"),
        F.lit(None).cast("array<int>").alias("isr"),
        F.lit(None).cast("array<int>").alias("replicas"),
        "event_time",
        "metadata_offset",
        F.lit(None).cast("int").alias("controller_id"),
        F.lit(None).cast("int").alias("controller_epoch"),
        "event_id",
        F.lit(None).cast("long").alias("commit_offset"),
    )


def partition_timeline(events: DataFrame, config: CheckConfig) -> DataFrame:
    """silver.partition_timeline: one row per controller decision per (cluster, topic, partition).

    Columns: cluster_id, topic, partition, topic_id (KRaft; a recreated topic gets a new id and
    restarts its epochs), decision_seq (long, causal order within the partition: the metadata
    offset for KRaft, the rank in controller order for ZK / Redpanda), source (kraft |
    zk-controller | zk-leader-and-isr | redpanda), leader, leader_epoch, partition_epoch, isr,
    replicas (the full state AFTER the decision), event_time, metadata_offset, controller_id,
    controller_epoch (ZK: the logging/sending controller's epoch; KRaft: the batch's quorum
    epoch), event_id, commit_offset (KRaft: the decision becomes visible at this commit point),
    next_commit_offset (KRaft: the next decision's commit offset, or the commit point of the
    RemoveTopicRecord that deletes the topic id, or the first offset of a hole in the dumped
    metadata log, if that comes first: the state holds for commit points in [commit_offset,
    next_commit_offset); equal values mean it was superseded inside its own batch/transaction),
    is_leader_change (first decision, or leader differs from the
    previous decision's leader; order by (topic_id, decision_seq) — ZK/Redpanda rows have no
    topic_id).
    """
    del config  # no rule parameter shapes the timeline
    allrows = _kraft_decisions(events).unionByName(_zk_decisions(events)).unionByName(_redpanda_decisions(events))
    key = ["cluster_id", "topic", "partition", "topic_id", "source_family"]
    allrows = allrows.withColumn(
        "source_family",
        F.when(F.col("source").startswith("zk"), F.lit("zk")).otherwise(F.col("source")),
    )
    w = Window.partitionBy(*key).orderBy("decision_seq")
    prev_leader = F.lag("leader").over(w)
    first = F.lag("decision_seq").over(w).isNull()
    # A removed topic's partitions hold no state after the removal's commit point.
    removed = F.when(F.col("_removed_at") >= F.col("commit_offset"), F.col("_removed_at"))
    # ... and none past a hole in the dumped metadata log (a change there may have replaced it).
    return (
        with_hole_after(allrows, covered_intervals(events), F.col("commit_offset"))
        .withColumn("is_leader_change", first | ~prev_leader.eqNullSafe(F.col("leader")))
        .join(F.broadcast(topic_removals(events)), ["cluster_id", "topic_id"], "left")
        .withColumn("next_commit_offset", F.least(F.lead("commit_offset").over(w), removed, F.col("_hole")))
        .select(*TIMELINE_COLUMNS)
    )


def topic_removals(events: DataFrame) -> DataFrame:
    """KRaft topic removals: (cluster_id, topic_id, _removed_at = the RemoveTopicRecord's commit point).

    ReplicationControlManager drops every partition of the topic id when it replays the record,
    so no partition state of that id holds at or after that commit point (a recreated topic gets
    a new topic id and its own states).
    """
    return (
        committed_metadata_records(events, KRAFT_TOPIC_REMOVAL_TYPES)
        .where(F.col("topic_id").isNotNull())
        .groupBy("cluster_id", "topic_id")
        .agg(F.min("commit_offset").alias("_removed_at"))
    )


# ---------------------------------------------------------------------------------------------
# broker_registrations
# ---------------------------------------------------------------------------------------------

REGISTRATION_COLUMNS = [
    "cluster_id",
    "broker_id",
    "broker_epoch",
    "registered_at_offset",
    "registered_at_time",
    "registration_event_id",
    "registered",
    "fenced",
    "in_controlled_shutdown",
    "metadata_offset",
    "commit_offset",
    "next_commit_offset",
    "event_time",
    "event_id",
    "record_type",
    "source",
]


def broker_registrations(events: DataFrame, config: CheckConfig) -> DataFrame:
    """silver.broker_registrations: a broker's registration state after each KRaft record about it.

    One row per committed registration record per (cluster_id, broker_id), in metadata-offset
    order. The row's state holds for commit points in [commit_offset, next_commit_offset) (null
    = still holds at the end of the input; equal = superseded inside the same batch, so never a
    state at a commit point). A broker whose log records all follow a KRaft snapshot starts with
    the snapshot's RegisterBrokerRecord (commit_offset = the snapshot's last offset, no metadata
    offset, no time). After a hole in the dumped log (:func:`with_snapshot_bases`) a fence, unfence,
    controlled shutdown or new registration may have gone unseen, so nothing is carried over it:
    until the next RegisterBrokerRecord the state is what the records since the hole state (or a
    snapshot that serves them), else unknown as at a log's start (fenced and the registration's
    offset / time / event id null, in_controlled_shutdown false, registered true). Columns:
      broker_epoch            registered BE (RegisterBrokerRecord; later records repeat it)
      registered_at_offset    metadata offset of the RegisterBrokerRecord of that incarnation
      registered_at_time      its CreateTime (controller clock, UTC)
      registration_event_id   its event id
      registered              false after UnregisterBrokerRecord
      fenced                  RegisterBrokerRecord.fenced (default true), Fence/Unfence records,
                              BrokerRegistrationChangeRecord.fenced (1 -> true, -1 -> false, 0 = no
                              change -> null); an unregistered broker counts as fenced (Kafka
                              removes it from every ISR exactly as for a fence)
      in_controlled_shutdown  set by the record that sets inControlledShutdown, until the broker
                              is fenced or registers again (spec "Ordering and time")
      metadata_offset, commit_offset, next_commit_offset, event_time, event_id, record_type,
      source ("kraft")
    """
    del config
    key = ["cluster_id", "broker_id"]
    log = (
        committed_metadata_records(events, KRAFT_BROKER_TYPES)
        .where(F.col("broker_id").isNotNull())
        .withColumn("_pos", F.col("metadata_offset"))
    )
    # A broker whose log records all follow a snapshot starts from the snapshot's registration
    # (the RegisterBrokerRecord itself was deleted with the log before the snapshot).
    snap = snapshot_records(events, ("md_register_broker",)).where(F.col("broker_id").isNotNull())
    # A broker whose log overlaps the snapshot without its RegisterBrokerRecord (or resumes after a
    # hole): what no record of the segment has stated yet is the snapshot's, after its offset.
    covered = covered_intervals(events)
    recs = with_snapshot_bases(
        log, snap, key, F.col("event_type") == "md_register_broker",
        ["broker_epoch", "fenced", "in_controlled_shutdown", "event_id"], covered,
    )
    # A state holds up to the next record about the broker, never past a hole in the dumped log.
    recs = with_hole_after(recs, covered, F.col("commit_offset"))
    et = F.col("event_type")
    is_reg = et == "md_register_broker"
    fenced_v = (
        F.when(is_reg, F.coalesce(F.col("fenced"), F.lit(True)))
        .when(et == "md_unregister_broker", F.lit(True))
        .when(et == "md_fence_broker", F.lit(True))
        .when(et == "md_unfence_broker", F.lit(False))
        .otherwise(F.col("fenced"))
    )
    ics_v = (
        F.when(is_reg, F.coalesce(F.col("in_controlled_shutdown"), F.lit(False)))
        .when(et.isin("md_unregister_broker", "md_fence_broker"), F.lit(False))
        .when(F.col("fenced") == F.lit(True), F.lit(False))
        .when(F.col("in_controlled_shutdown") == F.lit(True), F.lit(True))
    )
    reg_v = F.when(is_reg, F.lit(True)).when(et == "md_unregister_broker", F.lit(False))
    # Per replay segment: a RegisterBrokerRecord states everything, a hole forgets everything.
    w = Window.partitionBy(*key, "_seg").orderBy("_pos").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    wl = Window.partitionBy(*key).orderBy("_seg", "_pos")  # = by _pos (segments ascend): w's sort serves
    after_snap = F.col("_pos") > F.col("_snap.pos")

    def stated(value: Column, snap_field: str) -> Column:
        return F.coalesce(F.last(value, ignorenulls=True).over(w), F.when(after_snap, F.col(f"_snap.{snap_field}")))

    out = recs.select(
        "cluster_id",
        "broker_id",
        stated(F.when(et != "md_unregister_broker", F.col("broker_epoch")), "broker_epoch").alias("broker_epoch"),
        F.last(F.when(is_reg, F.col("metadata_offset")), ignorenulls=True).over(w).alias("registered_at_offset"),
        F.last(F.when(is_reg, F.col("event_time")), ignorenulls=True).over(w).alias("registered_at_time"),
        stated(F.when(is_reg, F.col("event_id")), "event_id").alias("registration_event_id"),
        F.coalesce(F.last(reg_v, ignorenulls=True).over(w), F.lit(True)).alias("registered"),
        stated(fenced_v, "fenced").alias("fenced"),
        F.coalesce(stated(ics_v, "in_controlled_shutdown"), F.lit(False)).alias("in_controlled_shutdown"),
        "metadata_offset",
        "commit_offset",
        F.least(F.lead("commit_offset").over(wl), F.col("_hole")).alias("next_commit_offset"),
        "event_time",
        "event_id",
        F.coalesce(F.col("record_type"), et).alias("record_type"),
        F.lit("kraft").alias("source"),
    )
    return out.select(*REGISTRATION_COLUMNS)


# ---------------------------------------------------------------------------------------------
# broker_controller_views
# ---------------------------------------------------------------------------------------------

CONTROLLER_VIEW_COLUMNS = [
    "cluster_id",
    "broker_id",
    "event_id",
    "event_type",
    "topic",
    "partition",
    "correlation_id",
    "controller_id",
    "controller_epoch",
    "seen_controller_epoch",
    "event_time",
    "_own_time",
    "file_order",
    "file_id",
    "line_number",
    "sub_index",
    "prior_max_controller_epoch",
    "prior_max_event_id",
    "max_controller_epoch",
]


def broker_controller_views(events: DataFrame, config: CheckConfig) -> DataFrame:
    """silver.broker_controller_views: per (cluster, broker) the highest CE seen so far.

    ZK brokers raise their known controller epoch to the request's controller epoch on every
    LeaderAndIsr, StopReplica and UpdateMetadata request they process (ReplicaManager's
    ``controllerEpoch`` field, §1.5); a refusal line ("Latest known controller epoch is N")
    states the known CE directly. One row per such event in the broker's own log order:
      seen_controller_epoch        the CE this event shows the broker knew (request CE, or the
                                   known CE of a refusal)
      prior_max_controller_epoch   the highest CE seen strictly before this event (own order)
      prior_max_event_id           an event that showed that CE (evidence)
      max_controller_epoch         running max including this event
    plus the event's identity, request fields and own-order columns (_own_time, file_order,
    file_id, line_number, sub_index). Only the REQUEST's controller epoch counts, never a
    partition state's controllerEpoch, and only of a request the broker processed: one refused
    with STALE_BROKER_EPOCH (request log) never raised it.
    """
    del config
    seen = F.when(F.col("event_type").isin(*STALE_CONTROLLER_REFUSAL_TYPES), F.col("known_controller_epoch")).otherwise(
        F.col("controller_epoch")
    )
    ev = (
        with_own_order(events, CONTROLLER_REQUEST_TYPES + STALE_CONTROLLER_REFUSAL_TYPES)
        .where(F.col("broker_id").isNotNull())
        # refused before processing (the broker's own epoch is stale): its CE was never taken
        .where(~F.coalesce(F.col("error").isin(*UNPROCESSED_REQUEST_ERRORS), F.lit(False)))
        .withColumn("seen_controller_epoch", seen)
        .where(F.col("seen_controller_epoch").isNotNull())
    )
    key = ["cluster_id", "broker_id"]
    order = [*own_order(), F.col("event_id")]
    w_prev = Window.partitionBy(*key).orderBy(*order).rowsBetween(Window.unboundedPreceding, -1)
    w_incl = Window.partitionBy(*key).orderBy(*order).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    best = F.max(F.struct(F.col("seen_controller_epoch"), F.col("event_id"))).over(w_prev)
    ev = ev.withColumn("_best", best)
    return ev.select(
        *[
            c
            for c in CONTROLLER_VIEW_COLUMNS
            if c not in ("prior_max_controller_epoch", "prior_max_event_id", "max_controller_epoch")
        ],
        F.col("_best.seen_controller_epoch").alias("prior_max_controller_epoch"),
        F.col("_best.event_id").alias("prior_max_event_id"),
        F.max("seen_controller_epoch").over(w_incl).alias("max_controller_epoch"),
    ).select(*CONTROLLER_VIEW_COLUMNS)


SILVER_BUILDERS: dict[str, Callable[[DataFrame, CheckConfig], DataFrame]] = {
    "partition_timeline": partition_timeline,
    "broker_registrations": broker_registrations,
    "broker_controller_views": broker_controller_views,
}
