"""``write_accepted_by_fenced_leader`` (KIP-359 spirit; Kafka never added the epoch to produce):
only the current leader may append produce data.

A batch stamped ``partitionLeaderEpoch`` = e was appended by e's leader; copies of it on other
replicas are replication, never a violation (the offset rule reports the epoch once, against its
leader).
- Segment dumps (offset rule): a batch of epoch e at base offset >= the start of a later epoch
  (per that epoch's leader) was appended by e's leader past the end of its epoch — confirmed;
  broker_id = e's leader. Batch CreateTime is the producer's clock: dumps use only offsets.
- Request log (time rule): broker B answered a PRODUCE for P with error NONE at t after the
  controller had moved P's leadership away from B (a higher LE led by another broker or none) or
  fenced B, before t — confirmed beyond the skew tolerance, else suspected; broker_id = B.
Reads request-log PRODUCE traffic: :func:`carry` is what a nightly run keeps of it.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.gold.analysis.leadership import epoch_leaders, fence_markers
from epoch_audit.gold.analysis.violation_rows import PARTITION_KEY, micros, to_check
from epoch_audit.gold.context import CheckContext
from epoch_audit.silver.event_fields import is_ok

INVARIANT = "write_accepted_by_fenced_leader"


def epoch_starts_by_leader(ctx: CheckContext) -> DataFrame:
    """Start offset of each epoch per its own leader: the leader's "Leader ... starts at leader epoch
    e from offset O" line (first in its own order), else its newest leader-epoch-checkpoint entry
    for e. Columns: cluster_id, topic, partition, leader_epoch, epoch_leader, start, start_event."""
    offsets = ctx.silver["replica_offsets"]
    leaders = epoch_leaders(ctx)
    line = (
        offsets.filter(F.col("series") == "epoch_start_line")
        .groupBy(*PARTITION_KEY, "broker_id", "leader_epoch")
        .agg(F.min_by(F.struct("value", "event_id"), F.col("series_seq")).alias("ln"))
    )
    checkpoints = (
        offsets.filter((F.col("series") == "epoch_start_checkpoint") & F.col("is_latest_copy"))
        .groupBy(*PARTITION_KEY, "broker_id", "leader_epoch")
        .agg(F.min(F.struct("value", "event_id")).alias("cp"))
    )
    epoch_key = [*PARTITION_KEY, "leader_epoch"]
    starts = (
        leaders.filter(F.col("epoch_leader").isNotNull())
        .alias("e")
        .join(
            line.alias("l"),
            [F.col(f"e.{x}") == F.col(f"l.{x}") for x in epoch_key] + [F.col("e.epoch_leader") == F.col("l.broker_id")],
            "left",
        )
        .join(
            checkpoints.alias("c"),
            [F.col(f"e.{x}") == F.col(f"c.{x}") for x in epoch_key] + [F.col("e.epoch_leader") == F.col("c.broker_id")],
            "left",
        )
        .select(
            *[F.col(f"e.{x}") for x in epoch_key],
            "e.epoch_leader",
            F.coalesce(F.col("l.ln"), F.col("c.cp")).alias("s"),
        )
    )
    return starts.filter(F.col("s").isNotNull()).select(
        *epoch_key, "epoch_leader", F.col("s.value").alias("start"), F.col("s.event_id").alias("start_event")
    )


def _next_starts(epochs: DataFrame, starts: DataFrame) -> DataFrame:
    """Per epoch of ``epochs`` (partition key, leader_epoch), the smallest (start, leader_epoch,
    start_event) of ``starts`` (:func:`epoch_starts_by_leader`) of a later epoch of its partition:
    ``thr``, ``next_epoch``, ``thr_event``; epochs without a later start get no row.

    A running minimum down the epochs (highest first; an epoch's own starts sort after it), not a
    join of each epoch with every later start: that join grows with the square of a partition's
    epochs (1.8 million pairs at 10^7 lines, sorted in one task for six seconds) and with the
    history a night re-reads."""
    key_known = reduce(lambda a, b: a & b, [F.col(c).isNotNull() for c in [*PARTITION_KEY, "leader_epoch"]])
    rows = epochs.where(key_known).select(*PARTITION_KEY, "leader_epoch", F.lit(0).alias("_k")).unionByName(
        starts.where(key_known).select(
            *PARTITION_KEY, "leader_epoch", F.lit(1).alias("_k"),
            F.struct(F.col("start"), F.col("leader_epoch"), F.col("start_event")).alias("_s"),
        ),
        allowMissingColumns=True,
    )
    down = (
        Window.partitionBy(*PARTITION_KEY)
        .orderBy(F.col("leader_epoch").desc(), "_k")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return (
        rows.select("*", F.min("_s").over(down).alias("t"))
        .where((F.col("_k") == 0) & F.col("t").isNotNull())
        .select(
            *PARTITION_KEY, "leader_epoch",
            F.col("t.start").alias("thr"),
            F.col("t.leader_epoch").alias("next_epoch"),
            F.col("t.start_event").alias("thr_event"),
        )
    )


def _offset_rule(ctx: CheckContext) -> DataFrame:
    """Dumps: a batch of epoch e at base offset >= the start of a later epoch (per that epoch's
    leader) was appended by e's leader past the end of its epoch. Only offsets: CreateTime is the
    producer's clock. One row per (partition, e), broker_id = e's leader."""
    starts = epoch_starts_by_leader(ctx)
    runs = ctx.silver["produce_runs"]
    epoch_key = [*PARTITION_KEY, "leader_epoch"]
    thresholds = _next_starts(runs.select(*epoch_key).distinct(), starts)
    # Runs tell which epochs cross their threshold; only those batches are scanned (broadcast).
    crossing = (
        runs.join(F.broadcast(thresholds), epoch_key)
        .filter(F.col("last_base_offset") >= F.col("thr"))
        .select(*epoch_key, "thr", "next_epoch", "thr_event")
        .distinct()
    )
    batches = ctx.events.filter(F.col("event_type") == "data_batch").filter(
        F.col("offset").isNotNull() & F.col("leader_epoch").isNotNull()
    )
    hit = (
        batches.join(F.broadcast(crossing), epoch_key)
        .filter(F.col("offset") >= F.col("thr"))
        .withColumn("host", F.coalesce("host_id", "broker_id"))
        .groupBy(*epoch_key, "thr", "next_epoch", "thr_event")
        .agg(F.min(F.struct("offset", "host", "event_id", "event_time")).alias("b"))
    )
    leaders = epoch_leaders(ctx)
    hit = hit.join(F.broadcast(leaders), epoch_key, "left")
    return to_check(
        hit,
        INVARIANT,
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


def leadership_markers(timeline: DataFrame) -> DataFrame:
    """Per (cluster, topic, partition, broker) ``lead`` (a decision naming it leader) and ``move``
    (the next decision at a higher LE led by another broker or none) markers, controller time."""
    by_decision = Window.partitionBy(*PARTITION_KEY).orderBy("decision_seq")
    decisions = timeline.withColumn("p_leader", F.lag("leader").over(by_decision)).withColumn(
        "p_le", F.lag("leader_epoch").over(by_decision)
    )
    lead = decisions.filter(F.col("leader") >= 0).select(
        *PARTITION_KEY,
        F.col("leader").alias("broker_id"),
        F.lit("lead").alias("kind"),
        "event_time",
        "decision_seq",
        "event_id",
        F.lit(None).cast("int").alias("held_le"),
        F.lit(None).cast("int").alias("new_le"),
        F.lit(None).cast("int").alias("new_leader"),
    )
    move = decisions.filter(
        (F.col("p_leader") >= 0)
        & ~F.col("leader").eqNullSafe(F.col("p_leader"))
        & (F.col("leader_epoch") > F.col("p_le"))
    ).select(
        *PARTITION_KEY,
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


def _ok_produces(ctx: CheckContext) -> DataFrame:
    """The timed PRODUCE answers without an error, ``broker_id`` the answering broker."""
    return (
        ctx.events.filter((F.col("event_type") == "request_produce") & is_ok(F.col("error")))
        .filter(F.col("event_time").isNotNull() & F.col("topic").isNotNull())
        .withColumn("broker_id", F.coalesce("host_id", "broker_id"))
    )


def after_moves(ctx: CheckContext) -> DataFrame:
    """The time rule's candidates after a move, before its exemptions: OK produces B answered for P
    after the last leadership marker of (P, B) moved P away from B, with that marker as ``last_m``
    and the first lead of (P, B) at or after the produce as ``next_lead``. Read by the check and by
    its carry (``ctx.shared``: computed once for both).

    Markers in controller order (time, then decision), joined as spans (:func:`_in_span_of`):
    sorting every produce of a moved broker with the markers, forwards for the last marker and
    backwards for the next lead, held a window group of every such produce, and two sorts of it in
    one task spilled each other into hundreds of files at 10^7 lines (the heap ran out reading
    them back)."""
    timeline = ctx.silver["partition_timeline"]
    marks = leadership_markers(timeline)
    key = [*PARTITION_KEY, "broker_id"]
    move_fields = ("kind", "event_time", "event_id", "held_le", "new_le", "new_leader")
    moved = _in_span_of(_ok_produces(ctx), marks, key, "decision_seq", "move", move_fields)
    # The first lead at or after each such produce: the candidates are few (none in a healthy cluster).
    leads = marks.where(F.col("kind") == "lead").select(
        *[F.col(c).alias(f"_l_{c}") for c in key], F.col("event_time").alias("_lead_time")
    )
    lead_after = [F.col(c) == F.col(f"_l_{c}") for c in key] + [F.col("_lead_time") >= F.col("event_time")]
    return (
        moved.join(leads, lead_after, "left")
        .groupBy(*key, "event_time", "event_id", "last_m")
        .agg(F.min("_lead_time").alias("next_lead"))
    )


def after_fences(ctx: CheckContext) -> DataFrame:
    """OK produces of B after the last fence marker of B (in the metadata log's order) fenced it,
    with that marker as ``last_m`` (the check's and the carry's, ``ctx.shared``). Joined as spans
    (:func:`_in_span_of`): sorting the produces with the markers in one window per broker made a
    window group of every produce the broker answered (about a million rows at 10^7 lines)."""
    fences = fence_markers(ctx.events)
    return _in_span_of(
        _ok_produces(ctx),
        fences,
        ["cluster_id", "broker_id"],
        "metadata_offset",
        "fence",
        ("kind", "event_time", "event_id"),
    )


# A span is looked up by its key and the quarter hour of the produce's time: listed under every
# quarter hour it overlaps, or, when open (the key's last marker) or longer than SPAN_MAX_BUCKETS,
# under NO_BUCKET, which every produce also asks.
SPAN_BUCKET_MICROS = 15 * 60 * 1_000_000
SPAN_MAX_BUCKETS = 4 * 24 * 7
NO_BUCKET = -(2**63)


def _in_span_of(
    produces: DataFrame, markers: DataFrame, key: list[str], tiebreak: str, kind: str, fields: tuple[str, ...]
) -> DataFrame:
    """The ``produces`` whose last marker of their ``key`` (ordered by time, ``tiebreak``, event id)
    is of ``kind``, with that marker's ``fields`` as ``last_m``.

    A marker holds from its time until the key's next marker: a produce strictly after its time
    and at or before the next one's reads it (a marker timed at the produce's own instant comes
    after the produce). Markers are few beside the produces, so each produce joins (broadcast) the
    one span of ``kind`` it falls in, instead of being sorted with the markers. By key alone, a
    produce met every span of its key: at 10^7 lines a broker fenced a thousand times made about
    a billion pairs (a tenth of the check stage's CPU); the quarter hour (:data:`SPAN_BUCKET_MICROS`)
    leaves a few. The spans of a key do not overlap, so a produce still meets one at most."""
    in_order = Window.partitionBy(*key).orderBy("event_time", tiebreak, "event_id")

    def bucket(time: str) -> Column:  # non-decreasing in time: a span's quarter hours hold its produces'
        return F.expr(f"div(unix_micros({time}), {SPAN_BUCKET_MICROS})")

    listed_under = F.when(
        F.col("_until").isNotNull() & (bucket("_until") - bucket("event_time") < SPAN_MAX_BUCKETS),
        F.sequence(bucket("event_time"), bucket("_until")),
    ).otherwise(F.array(F.lit(NO_BUCKET)))
    spans = (
        markers.withColumn("_until", F.lead("event_time").over(in_order))
        .where(F.col("kind") == kind)
        .select(*[F.col(c).alias(f"_m_{c}") for c in key], F.struct(*fields).alias("last_m"),
                F.col("event_time").alias("_m_time"), "_until", F.explode(listed_under).alias("_m_bucket"))
    )
    # The span's start as its own column: reading the time out of ``last_m`` made a row object per
    # pair (41 GB of them in the check stage at 10^7).
    in_span = [F.col(c) == F.col(f"_m_{c}") for c in key] + [
        F.col("_bucket") == F.col("_m_bucket"),
        F.col("event_time") > F.col("_m_time"),
        F.col("_until").isNull() | (F.col("event_time") <= F.col("_until")),
    ]
    asking = produces.select("*", F.explode(F.array(bucket("event_time"), F.lit(NO_BUCKET))).alias("_bucket"))
    return asking.join(F.broadcast(spans), in_span).select(
        *PARTITION_KEY, "broker_id", "event_time", "event_id", "last_m"
    )


def carry(ctx: CheckContext) -> DataFrame:
    """Traffic (event_id) the time rule still needs from before a nightly run's horizon
    (``epoch_audit.gold.carry``): every produce it reads as a candidate, before its exemptions (a lead
    within the tolerance, B's own later leader line) and grouping. A healthy cluster has none."""
    moved, fenced = ctx.shared(after_moves), ctx.shared(after_fences)
    return moved.select("event_id").unionByName(fenced.select("event_id")).distinct()


def _time_rule(ctx: CheckContext) -> DataFrame:
    """Request log: B answered PRODUCE for P with error NONE at t after the controller moved P's
    leadership away from B (a higher LE led by another broker or none) or fenced B, before t.
    Strictly before: a PRODUCE timed before (or at) the move is never reported, nor one that B's
    own log places after it became leader again (its leader line for a higher LE, B's clock, at
    or before t). Confirmed when t - move > max_clock_skew_ms and B did not regain leadership
    within the tolerance after t; else suspected. One row per (partition, broker, move / fence
    record)."""
    skew_us = int(ctx.config.max_clock_skew_ms) * 1000
    # the candidates, and the ids the fence rows leave out (kept: the carry reads them too)
    moved, fenced = ctx.shared(after_moves), ctx.shared(after_fences)
    key = [*PARTITION_KEY, "broker_id"]
    gap = micros(F.col("event_time")) - micros(F.col("last_m.event_time"))
    near_lead = F.col("next_lead").isNotNull() & (
        micros(F.col("next_lead")) - micros(F.col("event_time")) <= F.lit(skew_us)
    )
    moves = moved.select(
        *key,
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
        ctx.silver["broker_leader_epochs"]
        .filter(F.col("is_claim") & F.col("event_time").isNotNull() & F.col("leader_epoch").isNotNull())
        .select(*key, F.col("event_time").alias("claim_time"), F.col("leader_epoch").alias("claim_le"))
    )
    candidates, later_claims = moves.alias("mv"), F.broadcast(claims).alias("cl")
    moves = candidates.join(
        later_claims,
        [F.col(f"mv.{x}") == F.col(f"cl.{x}") for x in key]
        + [
            F.col("cl.claim_le") > F.col("mv.held_le"),
            F.col("cl.claim_time") <= F.col("mv.prod_time"),
            micros(F.col("cl.claim_time")) >= micros(F.col("mv.mark_time")) - F.lit(skew_us),
        ],
        "left_anti",
    ).drop("mark_time")

    fence_gap = micros(F.col("event_time")) - micros(F.col("last_m.event_time"))
    fence_rows = fenced.join(moved_ids, "event_id", "left_anti").select(
        *key,
        F.col("event_id").alias("prod_id"),
        F.col("event_time").alias("prod_time"),
        F.col("last_m.event_id").alias("mark_id"),
        F.lit("fence").alias("reason"),
        F.lit(None).cast("int").alias("held_le"),
        F.lit(None).cast("int").alias("new_le"),
        F.lit(None).cast("int").alias("new_leader"),
        (fence_gap > F.lit(skew_us)).alias("ok_conf"),
    )
    found = moves.unionByName(fence_rows)
    per_marker = found.groupBy(*key, "mark_id", "reason", "held_le", "new_le", "new_leader").agg(
        F.min(F.struct((~F.col("ok_conf")).alias("nc"), "prod_time", "prod_id")).alias("p"),
        F.count(F.lit(1)).alias("n"),
    )
    confidence = F.when(~F.col("p.nc"), "confirmed").otherwise("suspected")
    explanation = F.when(
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
        per_marker,
        INVARIANT,
        confidence,
        F.col("broker_id"),
        F.col("held_le"),
        F.col("new_le"),
        F.col("p.prod_time"),
        F.array(F.col("p.prod_id"), F.col("mark_id")),
        explanation,
    )


def check(ctx: CheckContext) -> DataFrame:
    """``write_accepted_by_fenced_leader``: only the current leader may append produce data
    (KIP-359 spirit). Segment dumps use the offset rule, the request log the time rule; copies of
    a batch on other replicas are replication, never a violation (the offset rule reports the
    epoch once, against its leader)."""
    return _offset_rule(ctx).unionByName(_time_rule(ctx))
