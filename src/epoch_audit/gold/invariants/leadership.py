"""Leadership invariants: who may append, and the LE / term every broker and the controller hold.

Ids: ``write_accepted_by_fenced_leader``, ``produce_epoch_mismatch_accepted``,
``leader_epoch_regression``, ``two_leaders_same_epoch`` (spec ``invariants.md``). Inputs: bronze
events, the silver views of ``epoch_audit.silver.broker_views`` and C1's ``partition_timeline`` (one row
per controller decision). ``epoch_audit_tools.reference_model.leadership`` replays the same rules in plain Python.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from epoch_audit.gold.base import CHECK_COLUMNS, CHECK_SCHEMA, CheckContext, Invariant
from epoch_audit.silver.event_fields import is_ok, rp_term
from epoch_audit.silver.tables import SILVER_TABLES as SILVER_BUILDERS

# C1's partition_timeline column contract (used when the table is absent: no timeline, no report).
TIMELINE_SCHEMA = StructType(
    [
        StructField("cluster_id", StringType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("topic_id", StringType()),
        StructField("decision_seq", LongType()),
        StructField("source", StringType()),
        StructField("leader", IntegerType()),
        StructField("leader_epoch", IntegerType()),
        StructField("partition_epoch", IntegerType()),
        StructField("isr", ArrayType(IntegerType())),
        StructField("replicas", ArrayType(IntegerType())),
        StructField("event_time", TimestampType()),
        StructField("metadata_offset", LongType()),
        StructField("controller_id", IntegerType()),
        StructField("controller_epoch", IntegerType()),
        StructField("event_id", StringType()),
        StructField("commit_offset", LongType()),
        StructField("is_leader_change", BooleanType()),
    ]
)

_PART = ["cluster_id", "topic", "partition"]


# --- shared helpers (also used by offsets.py) -------------------------------------------------
def silver(ctx: CheckContext, name: str) -> DataFrame:
    """A silver table of the context, built from the events (and kept) when the runner did not."""
    if name not in ctx.silver:
        if name == "partition_timeline":
            spark = ctx.events.sparkSession
            ctx.silver[name] = spark.createDataFrame([], TIMELINE_SCHEMA)
        else:
            # Kept (and cached) in the context: several checks read each view several times.
            ctx.silver[name] = SILVER_BUILDERS[name](ctx.events, ctx.config).cache()
    return ctx.silver[name]


def micros(c: Column) -> Column:
    return F.unix_micros(c)


def to_check(
    df: DataFrame,
    invariant: str,
    severity: Column | str,
    confidence: Column | str,
    broker_id: Column,
    leader_epoch: Column,
    expected_epoch: Column,
    event_time: Column,
    evidence: Column,
    explanation: Column,
) -> DataFrame:
    """Project to CHECK_SCHEMA (types and order); evidence drops null ids."""
    sev = F.lit(severity) if isinstance(severity, str) else severity
    conf = F.lit(confidence) if isinstance(confidence, str) else confidence
    out = df.select(
        F.lit(invariant).alias("invariant"),
        sev.alias("severity"),
        conf.alias("confidence"),
        F.col("cluster_id").cast("string").alias("cluster_id"),
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        broker_id.cast("int").alias("broker_id"),
        leader_epoch.cast("int").alias("leader_epoch"),
        expected_epoch.cast("int").alias("expected_epoch"),
        event_time.cast("timestamp").alias("event_time"),
        F.filter(evidence, lambda x: x.isNotNull()).alias("evidence"),
        F.coalesce(explanation, F.lit(invariant)).alias("explanation"),
    )
    return out.select(*[F.col(f.name).cast(f.dataType) for f in CHECK_SCHEMA.fields]).select(*CHECK_COLUMNS)


def epoch_leaders(ctx: CheckContext) -> DataFrame:
    """Leader of each (cluster, topic, partition, LE): the controller timeline's first decision at
    that LE, else the first broker claim of it (its own "Leader ... starts at leader epoch" /
    Redpanda "became the leader" line, earliest by time). Small; broadcast it."""
    tl = (
        silver(ctx, "partition_timeline")
        .filter((F.col("leader") >= 0) & (F.col("leader_epoch") >= 0))
        .groupBy(*_PART, "leader_epoch")
        .agg(F.min_by("leader", F.col("decision_seq")).alias("tl_leader"))
    )
    claims = (
        silver(ctx, "broker_leader_epochs")
        .filter(F.col("is_claim"))
        .groupBy(*_PART, "leader_epoch")
        .agg(
            F.min_by(
                "broker_id",
                F.struct(F.col("event_time").isNull().alias("n"), F.col("event_time"), F.col("event_id")),
            ).alias("bk_leader")
        )
    )
    return tl.join(claims, [*_PART, "leader_epoch"], "full").select(
        *_PART, "leader_epoch", F.coalesce("tl_leader", "bk_leader").alias("epoch_leader")
    )


# --- leader_epoch_regression ----------------------------------------------------------------
def check_leader_epoch_regression(ctx: CheckContext) -> DataFrame:
    """``leader_epoch_regression``: the LE a broker holds for a partition never decreases in its own
    log order (Kafka accepted LeaderAndIsr / start lines; Redpanda own current-term lines), and the
    controller's successive leader changes have strictly increasing LE.

    Broker series: consecutive held epochs in own order, never across a local log deletion or a
    topic-id change (a recreated topic restarts at LE 0). broker_id = that broker, leader_epoch =
    the lower LE, expected_epoch = the higher one it already held. Timeline: consecutive leader
    changes by decision order; broker_id = the leader named by the lower-LE decision. Equal LEs are
    not regressions (a leader change at an equal LE is ``two_leaders_same_epoch``'s).
    """
    key = ["cluster_id", "broker_id", "topic", "partition", "gen"]
    ble = silver(ctx, "broker_leader_epochs").filter(F.col("row_kind") == "epoch")
    w = Window.partitionBy(*key).orderBy("seq")
    b = (
        ble.withColumn("p_le", F.lag("leader_epoch").over(w))
        .withColumn("p_tid", F.lag("tid").over(w))
        .withColumn("p_id", F.lag("event_id").over(w))
        .withColumn("p_type", F.lag("event_type").over(w))
        .filter(F.col("p_le").isNotNull() & (F.col("leader_epoch") < F.col("p_le")))
        .filter(~(F.col("p_tid").isNotNull() & F.col("tid").isNotNull() & (F.col("p_tid") != F.col("tid"))))
    )
    broker_rows = to_check(
        b,
        "leader_epoch_regression",
        "error",
        "confirmed",
        F.col("broker_id"),
        F.col("leader_epoch"),
        F.col("p_le"),
        F.col("event_time"),
        F.array(F.col("event_id"), F.col("p_id")),
        F.format_string(
            "Broker %d holds %s-%d at leader epoch %d (%s %s) after already holding epoch %d (%s %s) "
            "in its own log order.",
            F.col("broker_id"),
            F.col("topic"),
            F.col("partition"),
            F.col("leader_epoch"),
            F.col("event_type"),
            F.col("event_id"),
            F.col("p_le"),
            F.col("p_type"),
            F.col("p_id"),
        ),
    )
    tl = silver(ctx, "partition_timeline")
    tkey = list(_PART) + (["topic_id"] if "topic_id" in tl.columns else [])
    wt = Window.partitionBy(*tkey).orderBy("decision_seq")
    t = (
        tl.filter(F.col("is_leader_change"))
        .withColumn("p_le", F.lag("leader_epoch").over(wt))
        .withColumn("p_id", F.lag("event_id").over(wt))
        .withColumn("p_leader", F.lag("leader").over(wt))
        .filter(F.col("p_le").isNotNull() & (F.col("leader_epoch") < F.col("p_le")))
    )
    timeline_rows = to_check(
        t,
        "leader_epoch_regression",
        "error",
        "confirmed",
        F.when(F.col("leader") >= 0, F.col("leader")),
        F.col("leader_epoch"),
        F.col("p_le"),
        F.col("event_time"),
        F.array(F.col("event_id"), F.col("p_id")),
        F.format_string(
            "Controller decision %s makes broker %d leader of %s-%d at leader epoch %d, below epoch %d "
            "of the previous leader change %s (leader %d).",
            F.col("event_id"),
            F.col("leader"),
            F.col("topic"),
            F.col("partition"),
            F.col("leader_epoch"),
            F.col("p_le"),
            F.col("p_id"),
            F.col("p_leader"),
        ),
    )
    return broker_rows.unionByName(timeline_rows)


# --- two_leaders_same_epoch -----------------------------------------------------------------
def _own_key() -> Column:
    return F.struct("ots", "file_order", "file_id", "line_number", "sub_index")


_GRANTED = r"vote_granted:\s*(1|true)\b"


def vote_grants(events: DataFrame) -> DataFrame:
    """Votes granted in a term (Raft: a node that voted for Y in term e cannot win e itself).
    The candidate logs "vote reply from X - {term:e, ..., vote_granted: 1}" (rp_vote_reply:
    replica_id = voter, broker_id = candidate), the voter may log "vote reply: {term:e,
    target_node..., vote_granted: 1}" (rp_vote_granted: replica_id = candidate). Pre-votes are not
    votes."""
    et = F.col("event_type")
    own = F.coalesce("broker_id", "host_id")
    granted = (F.lower(F.col("details")["vote_granted"]).isin("true", "1")) | F.col("raw").rlike(_GRANTED)
    prevote = F.coalesce(F.lower(F.col("details")["prevote"]) == "true", F.lit(False))
    return (
        events.filter(et.isin("rp_vote_reply", "rp_vote_granted") & F.col("replica_id").isNotNull())
        .withColumn("leader_epoch", F.coalesce(F.col("leader_epoch"), rp_term()))
        .filter(F.col("leader_epoch").isNotNull() & F.coalesce(granted, F.lit(False)) & ~prevote)
        .select(
            *_PART,
            "leader_epoch",
            F.when(et == "rp_vote_reply", F.col("replica_id")).otherwise(own).alias("voter"),
            F.when(et == "rp_vote_reply", own).otherwise(F.col("replica_id")).alias("candidate"),
            F.col("event_id").alias("grant_event"),
        )
    )


def check_two_leaders_same_epoch(ctx: CheckContext) -> DataFrame:
    """``two_leaders_same_epoch`` (Raft election safety): at most one broker leads a partition in a
    given LE / term. Claims: the controller timeline's decisions and the brokers' own leader lines
    (Kafka "Leader ... starts at leader epoch N", Redpanda "becoming/became the leader term:N").
    One row per (partition, LE) with two or more distinct claimants; broker_id = the second one.
    Redpanda's "timeline" rows are its nodes' own "became the leader" lines, not a controller's
    decisions: they take no part here (the same lines are claims in broker_leader_epochs). A
    deleted and recreated topic restarts its epochs: claims naming different topic ids are never a
    pair (a claim without a topic id joins the partition's only topic id, if it has one).

    Order of the two first claimants (sorted by timeline decision, then time): both decided by the
    controller -> decision order (causal, confirmed); else one of them acknowledged the other's
    leadership of that LE before its own claim in its own log (a follower start line naming it, a
    Redpanda leadership notification) or granted it its vote in that term -> that one is second,
    confirmed; else by time: confirmed beyond ``max_clock_skew_ms``, otherwise the later one,
    suspected.
    """
    skew_us = int(ctx.config.max_clock_skew_ms) * 1000
    ble = silver(ctx, "broker_leader_epochs")
    tl = silver(ctx, "partition_timeline")
    ck = [*_PART, "leader_epoch", "claimant"]
    bk = (
        ble.filter(F.col("is_claim"))
        .withColumn("claimant", F.col("broker_id"))
        .withColumn("k", _own_key())
        .groupBy(*ck)
        .agg(
            F.min("k").alias("bk_key"),
            F.min_by("event_id", F.col("k")).alias("bk_event"),
            F.min_by("event_time", F.col("k")).alias("bk_time"),
            F.min_by("tid", F.col("k")).alias("bk_tid"),
        )
    )
    td = (
        tl.filter((F.col("leader") >= 0) & (F.col("leader_epoch") >= 0))
        .filter(F.coalesce(F.col("source") != "redpanda", F.lit(True)))
        .withColumn("claimant", F.col("leader"))
        .groupBy(*ck)
        .agg(
            F.min("decision_seq").alias("tl_seq"),
            F.min_by("event_id", F.col("decision_seq")).alias("tl_event"),
            F.min_by("event_time", F.col("decision_seq")).alias("tl_time"),
            F.min_by("topic_id", F.col("decision_seq")).alias("tl_tid"),
        )
    )
    c = bk.join(td, ck, "full")
    use_tl = F.col("bk_time").isNull() | (F.col("tl_time").isNotNull() & (F.col("tl_time") <= F.col("bk_time")))
    c = c.withColumn("time", F.least("tl_time", "bk_time")).withColumn(
        "event", F.when(use_tl, F.coalesce("tl_event", "bk_event")).otherwise(F.col("bk_event"))
    )
    # Topic incarnation of each claim ("" = unknown and ambiguous: pairs only with its like).
    wp = Window.partitionBy(*_PART, "leader_epoch")
    tid = F.coalesce("tl_tid", "bk_tid")
    c = (
        c.withColumn("_tid", tid)
        .withColumn("_ntid", F.size(F.collect_set("_tid").over(wp)))
        .withColumn(
            "grp",
            F.coalesce(F.col("_tid"), F.when(F.col("_ntid") == 1, F.max("_tid").over(wp)), F.lit("")),
        )
    )
    wg = Window.partitionBy(*_PART, "leader_epoch", "grp")
    c = c.withColumn(
        "rk",
        F.row_number().over(wg.orderBy(F.col("tl_seq").asc_nulls_last(), F.col("time").asc_nulls_last(), "claimant")),
    ).withColumn("n", F.count(F.lit(1)).over(wg))
    cl = F.struct("claimant", "tl_seq", "time", "event", "bk_key")
    pairs = (
        c.filter((F.col("n") >= 2) & (F.col("rk") <= 2))
        .groupBy(*_PART, "leader_epoch", "grp")
        .agg(
            F.max(F.when(F.col("rk") == 1, cl)).alias("A"),
            F.max(F.when(F.col("rk") == 2, cl)).alias("B"),
        )
    )
    # Acknowledgements in the acker's own log: X logged Y's leadership of the LE (Kafka follower
    # line naming Y, Redpanda leadership notification), with their own-order key.
    acks = ble.filter(
        ((F.col("row_kind") == "ack") | ((F.col("row_kind") == "epoch") & (F.col("event_type") == "become_follower")))
        & F.col("leader").isNotNull()
    ).select(
        *_PART,
        "leader_epoch",
        F.col("broker_id").alias("acker"),
        F.col("leader").alias("ackee"),
        _own_key().alias("ack_key"),
        F.col("event_id").alias("ack_event"),
    )
    grants = vote_grants(ctx.events)
    k = [*_PART, "leader_epoch", "grp"]

    def ack_of(second: str, first: str, name: str) -> DataFrame:
        """Per pair: the acknowledgement of ``first``'s leadership by ``second``, if any."""
        on_part = [F.col(f"p.{x}") == F.col(f"a.{x}") for x in (*_PART, "leader_epoch")]
        own = (
            pairs.alias("p")
            .join(
                F.broadcast(acks.alias("a")),
                on_part
                + [
                    F.col("a.acker") == F.col(f"p.{second}.claimant"),
                    F.col("a.ackee") == F.col(f"p.{first}.claimant"),
                    F.col(f"p.{second}.bk_key").isNotNull(),
                    F.col("a.ack_key") < F.col(f"p.{second}.bk_key"),
                ],
                "left",
            )
            .groupBy(*[F.col(f"p.{x}") for x in k])
            .agg(F.min_by("a.ack_event", F.col("a.ack_key")).alias("own"))
        )
        grant = (
            pairs.alias("p")
            .join(
                F.broadcast(grants.alias("a")),
                on_part
                + [
                    F.col("a.voter") == F.col(f"p.{second}.claimant"),
                    F.col("a.candidate") == F.col(f"p.{first}.claimant"),
                ],
                "left",
            )
            .groupBy(*[F.col(f"p.{x}") for x in k])
            .agg(F.min("a.grant_event").alias("grant"))
        )
        return own.join(grant, k).select(*k, F.coalesce("own", "grant").alias(name))

    j = pairs.join(ack_of("B", "A", "ack_ba"), k).join(ack_of("A", "B", "ack_ab"), k)
    both_tl = F.col("A.tl_seq").isNotNull() & F.col("B.tl_seq").isNotNull()
    # Time order of the pair: (time nulls last, claimant).
    a_before_b = F.when(F.col("A.time").isNull() & F.col("B.time").isNull(), F.col("A.claimant") < F.col("B.claimant"))
    a_before_b = a_before_b.when(F.col("A.time").isNull(), F.lit(False)).when(F.col("B.time").isNull(), F.lit(True))
    a_before_b = a_before_b.otherwise(
        (F.col("A.time") < F.col("B.time"))
        | ((F.col("A.time") == F.col("B.time")) & (F.col("A.claimant") < F.col("B.claimant")))
    )
    j = j.withColumn(
        "mode",
        F.when(both_tl, F.lit("timeline"))
        .when(F.col("ack_ba").isNotNull(), F.lit("ack_ba"))
        .when(F.col("ack_ab").isNotNull(), F.lit("ack_ab"))
        .otherwise(F.lit("time")),
    )
    a_first = (F.col("mode").isin("timeline", "ack_ba")) | ((F.col("mode") == "time") & a_before_b)
    j = j.withColumn("first", F.when(a_first, F.col("A")).otherwise(F.col("B"))).withColumn(
        "second", F.when(a_first, F.col("B")).otherwise(F.col("A"))
    )
    gap = micros(F.col("second.time")) - micros(F.col("first.time"))
    confirmed = (F.col("mode") != "time") | (gap.isNotNull() & (gap > F.lit(skew_us)))
    j = j.withColumn("confidence", F.when(confirmed, "confirmed").otherwise("suspected")).withColumn(
        "ack", F.when(F.col("mode") == "ack_ba", F.col("ack_ba")).when(F.col("mode") == "ack_ab", F.col("ack_ab"))
    )
    why = (
        F.when(F.col("mode") == "timeline", F.lit("the controller decided it second"))
        .when(
            F.col("mode").startswith("ack"),
            F.concat(F.lit("it had acknowledged the other's leadership in "), F.col("ack")),
        )
        .otherwise(F.lit("it claimed later by time"))
    )
    return to_check(
        j,
        "two_leaders_same_epoch",
        "error",
        F.col("confidence"),
        F.col("second.claimant"),
        F.col("leader_epoch"),
        F.lit(None),
        F.col("second.time"),
        F.array(F.col("second.event"), F.col("first.event"), F.col("ack")),
        F.format_string(
            "Brokers %d (%s) and %d (%s) both claim leadership of %s-%d in leader epoch %d; broker %d is "
            "second because %s.",
            F.col("first.claimant"),
            F.col("first.event"),
            F.col("second.claimant"),
            F.col("second.event"),
            F.col("topic"),
            F.col("partition"),
            F.col("leader_epoch"),
            F.col("second.claimant"),
            why,
        ),
    )


# --- write_accepted_by_fenced_leader ----------------------------------------------------------
def epoch_starts_by_leader(ctx: CheckContext) -> DataFrame:
    """Start offset of each epoch per its own leader: the leader's "Leader ... starts at leader epoch
    e from offset O" line (first in its own order), else its newest leader-epoch-checkpoint entry
    for e. Columns: cluster_id, topic, partition, leader_epoch, epoch_leader, start, start_event."""
    ro = silver(ctx, "replica_offsets")
    el = epoch_leaders(ctx)
    line = (
        ro.filter(F.col("series") == "epoch_start_line")
        .groupBy(*_PART, "broker_id", "leader_epoch")
        .agg(F.min_by(F.struct("value", "event_id"), F.col("series_seq")).alias("ln"))
    )
    ckpt = (
        ro.filter((F.col("series") == "epoch_start_checkpoint") & F.col("is_latest_copy"))
        .groupBy(*_PART, "broker_id", "leader_epoch")
        .agg(F.min(F.struct("value", "event_id")).alias("cp"))
    )
    k = [*_PART, "leader_epoch"]
    j = (
        el.filter(F.col("epoch_leader").isNotNull())
        .alias("e")
        .join(
            line.alias("l"),
            [F.col(f"e.{x}") == F.col(f"l.{x}") for x in k] + [F.col("e.epoch_leader") == F.col("l.broker_id")],
            "left",
        )
        .join(
            ckpt.alias("c"),
            [F.col(f"e.{x}") == F.col(f"c.{x}") for x in k] + [F.col("e.epoch_leader") == F.col("c.broker_id")],
            "left",
        )
        .select(
            *[F.col(f"e.{x}") for x in k],
            "e.epoch_leader",
            F.coalesce(F.col("l.ln"), F.col("c.cp")).alias("s"),
        )
    )
    return j.filter(F.col("s").isNotNull()).select(
        *k, "epoch_leader", F.col("s.value").alias("start"), F.col("s.event_id").alias("start_event")
    )


def _offset_rule(ctx: CheckContext) -> DataFrame:
    """Dumps: a batch of epoch e at base offset >= the start of a later epoch (per that epoch's
    leader) was appended by e's leader past the end of its epoch. Only offsets: CreateTime is the
    producer's clock. One row per (partition, e), broker_id = e's leader."""
    starts = epoch_starts_by_leader(ctx)
    runs = silver(ctx, "produce_runs")
    k = [*_PART, "leader_epoch"]
    ep = runs.select(*k).distinct().alias("r")
    s = starts.alias("s")
    thr = (
        ep.join(
            s,
            [F.col(f"r.{x}") == F.col(f"s.{x}") for x in _PART] + [F.col("s.leader_epoch") > F.col("r.leader_epoch")],
        )
        .groupBy(*[F.col(f"r.{x}") for x in k])
        .agg(F.min(F.struct(F.col("s.start"), F.col("s.leader_epoch"), F.col("s.start_event"))).alias("t"))
        .select(
            *k,
            F.col("t.start").alias("thr"),
            F.col("t.leader_epoch").alias("next_epoch"),
            F.col("t.start_event").alias("thr_event"),
        )
    )
    # Runs tell which epochs cross their threshold; only those batches are scanned (broadcast).
    crossing = (
        runs.join(F.broadcast(thr), k)
        .filter(F.col("last_base_offset") >= F.col("thr"))
        .select(*k, "thr", "next_epoch", "thr_event")
        .distinct()
    )
    batches = ctx.events.filter(F.col("event_type") == "data_batch").filter(
        F.col("offset").isNotNull() & F.col("leader_epoch").isNotNull()
    )
    hit = (
        batches.join(F.broadcast(crossing), k)
        .filter(F.col("offset") >= F.col("thr"))
        .withColumn("host", F.coalesce("host_id", "broker_id"))
        .groupBy(*k, "thr", "next_epoch", "thr_event")
        .agg(F.min(F.struct("offset", "host", "event_id", "event_time")).alias("b"))
    )
    el = epoch_leaders(ctx)
    hit = hit.join(F.broadcast(el), k, "left")
    return to_check(
        hit,
        "write_accepted_by_fenced_leader",
        "error",
        "confirmed",
        F.col("epoch_leader"),
        F.col("leader_epoch"),
        F.col("next_epoch"),
        F.col("b.event_time"),
        F.array(F.col("b.event_id"), F.col("thr_event")),
        F.format_string(
            "Batch %s of %s-%d on broker %d is stamped leader epoch %d at offset %d, at or past offset %d "
            "where epoch %d starts (%s): written by epoch %d's leader %s after its epoch ended.",
            F.col("b.event_id"),
            F.col("topic"),
            F.col("partition"),
            F.col("b.host"),
            F.col("leader_epoch"),
            F.col("b.offset"),
            F.col("thr"),
            F.col("next_epoch"),
            F.col("thr_event"),
            F.col("leader_epoch"),
            F.coalesce(F.col("epoch_leader").cast("string"), F.lit("(unknown)")),
        ),
    )


FENCE_TYPES = (
    "md_fence_broker",
    "md_unfence_broker",
    "md_broker_registration_change",
    "md_register_broker",
    "md_unregister_broker",
)


def fence_markers(events: DataFrame) -> DataFrame:
    """Per (cluster, broker) fenced / unfenced state changes from the KRaft metadata log: Fence /
    Unfence records, registration changes carrying a ``fenced`` flag, registrations (fenced unless
    the record says otherwise) and unregistrations (fenced)."""
    et = F.col("event_type")
    kind = (
        F.when(et == "md_fence_broker", F.lit("fence"))
        .when(et == "md_unfence_broker", F.lit("unfence"))
        .when(et == "md_unregister_broker", F.lit("fence"))
        # A registration starts fenced unless the record says otherwise (RegisterBrokerRecord).
        .when((et == "md_register_broker") & F.col("fenced").isNull(), F.lit("fence"))
        .when(F.col("fenced") == F.lit(True), F.lit("fence"))
        .when(F.col("fenced") == F.lit(False), F.lit("unfence"))
    )
    return (
        events.filter(et.isin(*FENCE_TYPES))
        .withColumn("kind", kind)
        .filter(F.col("kind").isNotNull() & F.col("broker_id").isNotNull() & F.col("event_time").isNotNull())
        .select("cluster_id", "broker_id", "kind", "event_time", "metadata_offset", "event_id")
    )


def leadership_markers(tl: DataFrame) -> DataFrame:
    """Per (cluster, topic, partition, broker) ``lead`` (a decision naming it leader) and ``move``
    (the next decision at a higher LE led by another broker or none) markers, controller time."""
    w = Window.partitionBy(*_PART).orderBy("decision_seq")
    t = tl.withColumn("p_leader", F.lag("leader").over(w)).withColumn("p_le", F.lag("leader_epoch").over(w))
    lead = t.filter(F.col("leader") >= 0).select(
        *_PART,
        F.col("leader").alias("broker_id"),
        F.lit("lead").alias("kind"),
        "event_time",
        "decision_seq",
        "event_id",
        F.lit(None).cast("int").alias("held_le"),
        F.lit(None).cast("int").alias("new_le"),
        F.lit(None).cast("int").alias("new_leader"),
    )
    move = t.filter(
        (F.col("p_leader") >= 0)
        & ~F.col("leader").eqNullSafe(F.col("p_leader"))
        & (F.col("leader_epoch") > F.col("p_le"))
    ).select(
        *_PART,
        F.col("p_leader").alias("broker_id"),
        F.lit("move").alias("kind"),
        "event_time",
        "decision_seq",
        "event_id",
        F.col("p_le").alias("held_le"),
        F.col("leader_epoch").alias("new_le"),
        F.col("leader").alias("new_leader"),
    )
    return lead.unionByName(move).filter(F.col("event_time").isNotNull())


def _after_marks(ctx: CheckContext) -> tuple[DataFrame, DataFrame]:
    """The time rule's candidates, before its exemptions: OK produces B answered for P after the
    last leadership marker of (P, B) moved P away from B (``u``), and OK produces after the last
    fence marker of B fenced it (``uf``); both with that marker as ``last_m``."""
    tl = silver(ctx, "partition_timeline")
    marks = leadership_markers(tl)
    prod = (
        ctx.events.filter((F.col("event_type") == "request_produce") & is_ok(F.col("error")))
        .filter(F.col("event_time").isNotNull() & F.col("topic").isNotNull())
        .withColumn("broker_id", F.coalesce("host_id", "broker_id"))
    )
    pk = [*_PART, "broker_id"]
    # Compact the big side first: only produces on a broker that was ever moved away / fenced.
    moved = marks.filter(F.col("kind") == "move").select(*pk).distinct()
    p_move = prod.join(F.broadcast(moved), pk, "left_semi")

    mk = F.struct("kind", "event_time", "event_id", "held_le", "new_le", "new_leader")
    u = p_move.select(
        *pk,
        "event_time",
        F.lit(0).alias("rank"),
        F.lit(None).cast("long").alias("seq"),
        "event_id",
        F.lit(None).alias("m"),
        F.lit(None).cast("timestamp").alias("lead_time"),
        F.lit(True).alias("is_prod"),
    ).unionByName(
        marks.select(
            *pk,
            "event_time",
            F.lit(1).alias("rank"),
            F.col("decision_seq").alias("seq"),
            "event_id",
            mk.alias("m"),
            F.when(F.col("kind") == "lead", F.col("event_time")).alias("lead_time"),
            F.lit(False).alias("is_prod"),
        ),
        allowMissingColumns=False,
    )
    order = ("event_time", "rank", "seq", "event_id")
    wo = Window.partitionBy(*pk).orderBy(*order)
    # The next lead at or after each row, read backwards: Spark recomputes an unbounded-following
    # frame for every row (quadratic: minutes per check at 10^7 events); a running frame is linear.
    backwards = Window.partitionBy(*pk).orderBy(*[F.col(c).desc() for c in order])
    u = (
        u.withColumn("last_m", F.last("m", ignorenulls=True).over(wo.rowsBetween(Window.unboundedPreceding, 0)))
        .withColumn(
            "next_lead",
            F.last("lead_time", ignorenulls=True).over(backwards.rowsBetween(Window.unboundedPreceding, 0)),
        )
        .filter(F.col("is_prod") & (F.col("last_m.kind") == "move"))
    )
    return u, _after_fences(ctx, prod)


def _after_fences(ctx: CheckContext, prod: DataFrame) -> DataFrame:
    fences = fence_markers(ctx.events)
    pk = [*_PART, "broker_id"]
    fk = ["cluster_id", "broker_id"]
    fenced = fences.filter(F.col("kind") == "fence").select("cluster_id", "broker_id").distinct()
    p_fence = prod.join(F.broadcast(fenced), ["cluster_id", "broker_id"], "left_semi")
    uf = p_fence.select(
        *pk,
        "event_time",
        F.lit(0).alias("rank"),
        F.lit(None).cast("long").alias("seq"),
        "event_id",
        F.lit(None).alias("m"),
        F.lit(True).alias("is_prod"),
    ).unionByName(
        fences.select(
            "cluster_id",
            F.lit(None).cast("string").alias("topic"),
            F.lit(None).cast("int").alias("partition"),
            "broker_id",
            "event_time",
            F.lit(1).alias("rank"),
            F.col("metadata_offset").alias("seq"),
            "event_id",
            F.struct("kind", "event_time", "event_id").alias("m"),
            F.lit(False).alias("is_prod"),
        )
    )
    wf = Window.partitionBy(*fk).orderBy("event_time", "rank", "seq", "event_id")
    return uf.withColumn(
        "last_m", F.last("m", ignorenulls=True).over(wf.rowsBetween(Window.unboundedPreceding, 0))
    ).filter(F.col("is_prod") & (F.col("last_m.kind") == "fence"))


def write_accepted_carry(ctx: CheckContext) -> DataFrame:
    """Traffic (event_id) the time rule still needs from before a nightly run's horizon
    (``epoch_audit.gold.carry``): every produce it reads as a candidate, before its exemptions (a lead
    within the tolerance, B's own later leader line) and grouping. A healthy cluster has none."""
    u, uf = _after_marks(ctx)
    return u.select("event_id").unionByName(uf.select("event_id")).distinct()


def _time_rule(ctx: CheckContext) -> DataFrame:
    """Request log: B answered PRODUCE for P with error NONE at t after the controller moved P's
    leadership away from B (a higher LE led by another broker or none) or fenced B, before t.
    Strictly before: a PRODUCE timed before (or at) the move is never reported, nor one that B's
    own log places after it became leader again (its leader line for a higher LE, B's clock, at
    or before t). Confirmed when t - move > max_clock_skew_ms and B did not regain leadership
    within the tolerance after t; else suspected. One row per (partition, broker, move / fence
    record)."""
    skew_us = int(ctx.config.max_clock_skew_ms) * 1000
    u, uf = _after_marks(ctx)
    pk = [*_PART, "broker_id"]
    gap = micros(F.col("event_time")) - micros(F.col("last_m.event_time"))
    near_lead = F.col("next_lead").isNotNull() & (
        micros(F.col("next_lead")) - micros(F.col("event_time")) <= F.lit(skew_us)
    )
    moves = u.select(
        *pk,
        F.col("event_id").alias("prod_id"),
        F.col("event_time").alias("prod_time"),
        F.col("last_m.event_id").alias("mark_id"),
        F.lit("move").alias("reason"),
        F.col("last_m.held_le").alias("held_le"),
        F.col("last_m.new_le").alias("new_le"),
        F.col("last_m.new_leader").alias("new_leader"),
        ((gap > F.lit(skew_us)) & ~near_lead).alias("ok_conf"),
        F.col("last_m.event_time").alias("mark_time"),
    )
    moved_ids = moves.select(F.col("prod_id").alias("event_id"))
    # Causal order beats the clock: B's own leader line for an LE above the one it was moved out
    # of, logged (B's clock) at or before the produce, proves a later decision had made B leader
    # again before it answered, however the controller's clock places that decision. Such a claim
    # is causally after the move, so it cannot be timed earlier than the move minus the tolerance
    # (older claims, e.g. of a deleted topic's previous incarnation, never excuse a produce).
    claims = (
        silver(ctx, "broker_leader_epochs")
        .filter(F.col("is_claim") & F.col("event_time").isNotNull() & F.col("leader_epoch").isNotNull())
        .select(*pk, F.col("event_time").alias("claim_time"), F.col("leader_epoch").alias("claim_le"))
    )
    mv, cl = moves.alias("mv"), F.broadcast(claims).alias("cl")
    moves = mv.join(
        cl,
        [F.col(f"mv.{x}") == F.col(f"cl.{x}") for x in pk]
        + [
            F.col("cl.claim_le") > F.col("mv.held_le"),
            F.col("cl.claim_time") <= F.col("mv.prod_time"),
            micros(F.col("cl.claim_time")) >= micros(F.col("mv.mark_time")) - F.lit(skew_us),
        ],
        "left_anti",
    ).drop("mark_time")

    fgap = micros(F.col("event_time")) - micros(F.col("last_m.event_time"))
    fence_rows = uf.join(moved_ids, "event_id", "left_anti").select(
        *pk,
        F.col("event_id").alias("prod_id"),
        F.col("event_time").alias("prod_time"),
        F.col("last_m.event_id").alias("mark_id"),
        F.lit("fence").alias("reason"),
        F.lit(None).cast("int").alias("held_le"),
        F.lit(None).cast("int").alias("new_le"),
        F.lit(None).cast("int").alias("new_leader"),
        (fgap > F.lit(skew_us)).alias("ok_conf"),
    )
    cand = moves.unionByName(fence_rows)
    g = cand.groupBy(*pk, "mark_id", "reason", "held_le", "new_le", "new_leader").agg(
        F.min(F.struct((~F.col("ok_conf")).alias("nc"), "prod_time", "prod_id")).alias("p"),
        F.count(F.lit(1)).alias("n"),
    )
    conf = F.when(~F.col("p.nc"), "confirmed").otherwise("suspected")
    expl = F.when(
        F.col("reason") == "move",
        F.format_string(
            "Broker %d answered PRODUCE %s for %s-%d with error NONE at %s after controller decision %s had "
            "moved leadership from it (epoch %d) to %s at epoch %d (%d such produces).",
            F.col("broker_id"),
            F.col("p.prod_id"),
            F.col("topic"),
            F.col("partition"),
            F.col("p.prod_time").cast("string"),
            F.col("mark_id"),
            F.col("held_le"),
            F.when(F.col("new_leader") >= 0, F.concat(F.lit("broker "), F.col("new_leader").cast("string"))).otherwise(
                F.lit("no leader")
            ),
            F.col("new_le"),
            F.col("n"),
        ),
    ).otherwise(
        F.format_string(
            "Broker %d answered PRODUCE %s for %s-%d with error NONE at %s after metadata record %s fenced it "
            "(%d such produces).",
            F.col("broker_id"),
            F.col("p.prod_id"),
            F.col("topic"),
            F.col("partition"),
            F.col("p.prod_time").cast("string"),
            F.col("mark_id"),
            F.col("n"),
        )
    )
    return to_check(
        g,
        "write_accepted_by_fenced_leader",
        "error",
        conf,
        F.col("broker_id"),
        F.col("held_le"),
        F.col("new_le"),
        F.col("p.prod_time"),
        F.array(F.col("p.prod_id"), F.col("mark_id")),
        expl,
    )


def check_write_accepted_by_fenced_leader(ctx: CheckContext) -> DataFrame:
    """``write_accepted_by_fenced_leader``: only the current leader may append produce data
    (KIP-359 spirit). Segment dumps use the offset rule, the request log the time rule; copies of
    a batch on other replicas are replication, never a violation (the offset rule reports the
    epoch once, against its leader)."""
    return _offset_rule(ctx).unionByName(_time_rule(ctx))


# --- produce_epoch_mismatch_accepted ----------------------------------------------------------
def _mismatched_produces(ctx: CheckContext) -> DataFrame:
    """OK produces whose stated epoch differs from the epoch the broker held (``expected``)."""
    prod = (
        ctx.events.filter((F.col("event_type") == "request_produce") & is_ok(F.col("error")))
        .filter(F.col("leader_epoch").isNotNull() & (F.col("leader_epoch") >= 0))
        .filter(F.col("topic").isNotNull())
        .withColumn("broker_id", F.coalesce("host_id", "broker_id"))
    )
    pk = [*_PART, "broker_id"]
    held = silver(ctx, "broker_leader_epochs").filter(F.col("row_kind") == "epoch")
    u = prod.select(
        *pk,
        "event_time",
        F.lit(1).alias("rank"),
        F.lit(None).cast("long").alias("seq"),
        "event_id",
        "leader_epoch",
        "current_leader_epoch",
        F.lit(None).alias("h"),
        F.lit(True).alias("is_prod"),
    ).unionByName(
        held.select(
            *pk,
            "event_time",
            F.lit(0).alias("rank"),
            F.col("seq").cast("long").alias("seq"),
            "event_id",
            F.lit(None).cast("int").alias("leader_epoch"),
            F.lit(None).cast("int").alias("current_leader_epoch"),
            F.struct(F.col("leader_epoch").alias("le"), F.col("event_id").alias("id")).alias("h"),
            F.lit(False).alias("is_prod"),
        )
    )
    w = Window.partitionBy(*pk).orderBy(F.col("event_time").asc_nulls_first(), "rank", "seq", "event_id")
    u = u.withColumn("last_h", F.last("h", ignorenulls=True).over(w.rowsBetween(Window.unboundedPreceding, 0)))
    u = u.filter(F.col("is_prod"))
    expected = F.coalesce(F.col("current_leader_epoch"), F.col("last_h.le"))
    return u.withColumn("expected", expected).filter(
        F.col("expected").isNotNull() & (F.col("expected") != F.col("leader_epoch"))
    )


def produce_epoch_mismatch_carry(ctx: CheckContext) -> DataFrame:
    """Traffic (event_id) the check still needs from before a nightly run's horizon
    (``epoch_audit.gold.carry``): the mismatched produces it reports (each stands on its own line and
    the broker's held epochs, which are state)."""
    return _mismatched_produces(ctx).select("event_id")


def check_produce_epoch_mismatch(ctx: CheckContext) -> DataFrame:
    """``produce_epoch_mismatch_accepted``: where a PRODUCE carries a request-level
    CurrentLeaderEpoch (systems implementing KIP-359; Apache Kafka never shipped it), an append that
    succeeded must have matched the leader's epoch. The leader's epoch is the one the line states
    (``current_leader_epoch``), else the last LE the broker held for the partition at or before the
    request (same host clock). No held LE known: nothing is reported."""
    u = _mismatched_produces(ctx)
    held_id = F.when(F.col("current_leader_epoch").isNull(), F.col("last_h.id"))
    return to_check(
        u,
        "produce_epoch_mismatch_accepted",
        "error",
        "confirmed",
        F.col("broker_id"),
        F.col("leader_epoch"),
        F.col("expected"),
        F.col("event_time"),
        F.array(F.col("event_id"), held_id),
        F.format_string(
            "Broker %d accepted PRODUCE %s for %s-%d carrying leader epoch %d while it held epoch %d.",
            F.col("broker_id"),
            F.col("event_id"),
            F.col("topic"),
            F.col("partition"),
            F.col("leader_epoch"),
            F.col("expected"),
        ),
    )


INVARIANTS_C2_LEADERSHIP = [
    Invariant(ids=("leader_epoch_regression",), check=check_leader_epoch_regression),
    Invariant(ids=("two_leaders_same_epoch",), check=check_two_leaders_same_epoch),
    Invariant(
        ids=("write_accepted_by_fenced_leader",), check=check_write_accepted_by_fenced_leader,
        carry=write_accepted_carry,
    ),
    Invariant(
        ids=("produce_epoch_mismatch_accepted",), check=check_produce_epoch_mismatch,
        carry=produce_epoch_mismatch_carry,
    ),
]
