"""KRaft metadata-log replay shared by the silver tables built from it (partition_timeline,
broker_registrations): committed records, snapshot records, the offsets the dumps cover and the
replay segments a hole or a snapshot starts.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.ordering import asof_last

KRAFT_TXN_TYPES = ("md_begin_transaction", "md_end_transaction", "md_abort_transaction")


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
        .select("cluster_id", F.col("offset").alias("_pos"), F.col("last_offset").alias("_b_last"))
        .where(F.col("_pos").isNotNull())
        .dropDuplicates(["cluster_id", "_pos"])
    )
    # The batch a record sits in: the last header at or before its offset (a header sorts before
    # the records of its batch at the same offset), if the record is not past the batch's end.
    md = md.withColumn("_pos", F.col("metadata_offset"))
    rec = asof_last(md, batches, ["cluster_id"], [F.col("_pos")], ["_b_last"])
    batch_commit = F.when(F.col("_b_last") >= F.col("metadata_offset"), F.col("_b_last")).otherwise(
        F.col("metadata_offset")
    )

    # Transactions: the last marker at or before the record, the first marker after it.
    marker = F.when(
        F.col("event_type").isin(*KRAFT_TXN_TYPES),
        F.struct(F.col("event_type").alias("t"), batch_commit.alias("c")),
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
    # Few DataFrame steps: each one re-analyses the whole plan (a short run's cost is its planning).
    rec = rec.withColumns({
        "_batch_commit": batch_commit,
        "_prev_m": F.last(marker, ignorenulls=True).over(w_before),
        "_next_m": F.last(marker, ignorenulls=True).over(w_after),
    })
    in_txn = F.coalesce(F.col("_prev_m.t") == "md_begin_transaction", F.lit(False))
    committed_txn = F.coalesce(F.col("_next_m.t") == "md_end_transaction", F.lit(False))
    kept = [c for c in rec.columns if c not in ("_pos", "_b_last", "_batch_commit", "_prev_m", "_next_m")]
    return rec.where(~F.col("event_type").isin(*KRAFT_TXN_TYPES) & (~in_txn | committed_txn)).select(
        *kept, F.when(in_txn, F.col("_next_m.c")).otherwise(F.col("_batch_commit")).alias("commit_offset")
    )


def snapshot_records(events: DataFrame, types: tuple[str, ...]) -> DataFrame:
    """KRaft snapshot records (§3.2) of ``types``, one per snapshot record, with ``_snap_pos``.

    A ``<endOffset>-<epoch>.checkpoint`` snapshot holds the state of every record below its end
    offset, so its records state a partition / broker as of log offset ``endOffset - 1``
    (``_snap_pos``); the bootstrap snapshot precedes the whole log (-1). Copies of one snapshot on
    several hosts collapse to one (same end offset, same record position inside the snapshot).
    """
    details = F.col("details")
    pos = F.when(details["snapshot"] == "bootstrap", F.lit(-1).cast("long")).otherwise(
        details["snapshot_end_offset"].cast("long") - 1
    )
    snap = (
        events.where(
            F.col("event_type").isin(*types) & F.col("metadata_offset").isNull() & details["snapshot"].isNotNull()
        )
        .withColumn("_snap_pos", pos)
        .withColumn("_snap_rec", details["snapshot_offset"].cast("long"))
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
    joined = rows.join(F.broadcast(ivs), rows["cluster_id"].eqNullSafe(ivs["_cov_cluster"]), "left")
    hit = F.array_max(
        F.transform(F.col("_cov_ivs"), lambda iv: F.when((iv["s"] - slack <= pos) & (pos <= iv["e"]), iv["s"]))
    )
    cov = F.when(F.col("_cov_ivs").isNull(), F.lit(0).cast("long")).otherwise(F.coalesce(hit, -2 - pos))
    return joined.select(*[c for c in rows.columns if c != "_cov"], cov.alias("_cov"))


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
    joined = rows.join(F.broadcast(ivs), rows["cluster_id"].eqNullSafe(ivs["_hole_cluster"]), "left")
    end = F.array_max(
        F.transform(F.col("_cov_ivs"), lambda iv: F.when((iv["s"] - 1 <= commit) & (commit <= iv["e"]), iv["e"]))
    )
    last = F.array_max(F.transform(F.col("_cov_ivs"), lambda iv: iv["e"]))
    # Outside every interval (a snapshot whose end offset no dump shows): the hole starts right after.
    hole = F.when(end.isNotNull(), F.when(end < last, end + 1)).when(commit < last, commit + 1)
    return joined.select(*[c for c in rows.columns if c != "_hole"], hole.alias("_hole"))


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
    rows = rows.withColumns({"_start_rank": start_rank, "_best_start": F.min(start_rank).over(w_key)})
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
    rows = rows.withColumns({
        "_seg_full": F.max(full.cast("int")).over(w_seg),
        "_cand_rank": cand_rank,
        "_best_cand": F.min(cand_rank).over(w_seg),
    })
    serves = F.col("_cand") & (F.col("_cand_rank") == F.col("_best_cand")) & (F.col("_seg_full") == 0)
    rows = rows.withColumn(
        "_snap",
        F.max(F.when(serves, F.struct(F.col("_snap_pos").alias("pos"), *[F.col(f) for f in fields]))).over(w_seg),
    )
    dropped = {
        "_snap_pos", "_is_snap", "_first_log", "_start_rank", "_best_start", "_cand", "_cov", "_seg_full",
        "_cand_rank", "_best_cand", "commit_offset",
    }
    return rows.where(~F.col("_cand")).select(
        *[c for c in rows.columns if c not in dropped],
        F.when(is_snap, F.col("_pos")).otherwise(F.col("commit_offset")).alias("commit_offset"),
    )
