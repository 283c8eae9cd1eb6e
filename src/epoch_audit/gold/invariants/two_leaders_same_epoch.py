"""``two_leaders_same_epoch`` (Raft election safety): at most one broker leads a partition in a
given LE / term.

Claims: the controller timeline's decisions and the brokers' own leader lines (Kafka "Leader ...
starts at leader epoch N", Redpanda "becoming/became the leader term:N"). One row per
(partition, LE) with two or more distinct claimants; broker_id = the second one. Redpanda's
"timeline" rows are its nodes' own "became the leader" lines, not a controller's decisions: they
take no part here (the same lines are claims in broker_leader_epochs). A deleted and recreated
topic restarts its epochs: claims naming different topic ids are never a pair (a claim without a
topic id joins the partition's only topic id, if it has one).

Order of the two first claimants (sorted by timeline decision, then time): both decided by the
controller -> decision order (causal, confirmed); else one of them acknowledged the other's
leadership of that LE before its own claim in its own log (a follower start line naming it, a
Redpanda leadership notification) or granted it its vote in that term -> that one is second,
confirmed; else by time: confirmed beyond ``max_clock_skew_ms``, otherwise the later one,
suspected.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.gold.analysis.leadership import vote_grants
from epoch_audit.gold.analysis.violation_rows import PARTITION_KEY, micros, to_check
from epoch_audit.gold.context import CheckContext

INVARIANT = "two_leaders_same_epoch"


def _own_key() -> Column:
    return F.struct("ots", "file_order", "file_id", "line_number", "sub_index")


def _claimant_pairs(ctx: CheckContext) -> DataFrame:
    """Per (partition, LE, topic incarnation ``grp``) with two or more claimants: the first two
    (``A``, ``B``: claimant, timeline decision, time, event, own-order key)."""
    held = ctx.silver["broker_leader_epochs"]
    timeline = ctx.silver["partition_timeline"]
    claim_key = [*PARTITION_KEY, "leader_epoch", "claimant"]
    broker_claims = (
        held.filter(F.col("is_claim"))
        .withColumns({"claimant": F.col("broker_id"), "k": _own_key()})
        .groupBy(*claim_key)
        .agg(
            F.min("k").alias("bk_key"),
            F.min_by("event_id", F.col("k")).alias("bk_event"),
            F.min_by("event_time", F.col("k")).alias("bk_time"),
            F.min_by("tid", F.col("k")).alias("bk_tid"),
        )
    )
    timeline_claims = (
        timeline.filter((F.col("leader") >= 0) & (F.col("leader_epoch") >= 0))
        .filter(F.coalesce(F.col("source") != "redpanda", F.lit(True)))
        .withColumn("claimant", F.col("leader"))
        .groupBy(*claim_key)
        .agg(
            F.min("decision_seq").alias("tl_seq"),
            F.min_by("event_id", F.col("decision_seq")).alias("tl_event"),
            F.min_by("event_time", F.col("decision_seq")).alias("tl_time"),
            F.min_by("topic_id", F.col("decision_seq")).alias("tl_tid"),
        )
    )
    claims = broker_claims.join(timeline_claims, claim_key, "full")
    use_timeline = F.col("bk_time").isNull() | (F.col("tl_time").isNotNull() & (F.col("tl_time") <= F.col("bk_time")))
    claims = claims.withColumns({
        "time": F.least("tl_time", "bk_time"),
        "event": F.when(use_timeline, F.coalesce("tl_event", "bk_event")).otherwise(F.col("bk_event")),
    })
    # Topic incarnation of each claim ("" = unknown and ambiguous: pairs only with its like).
    per_epoch = Window.partitionBy(*PARTITION_KEY, "leader_epoch")
    topic_id = F.coalesce("tl_tid", "bk_tid")
    topic_ids = F.size(F.collect_set(topic_id).over(per_epoch))
    claims = claims.withColumn(
        "grp", F.coalesce(topic_id, F.when(topic_ids == 1, F.max(topic_id).over(per_epoch)), F.lit(""))
    )
    per_group = Window.partitionBy(*PARTITION_KEY, "leader_epoch", "grp")
    claims = claims.withColumns({
        "rk": F.row_number().over(
            per_group.orderBy(F.col("tl_seq").asc_nulls_last(), F.col("time").asc_nulls_last(), "claimant")
        ),
        "n": F.count(F.lit(1)).over(per_group),
    })
    claimant = F.struct("claimant", "tl_seq", "time", "event", "bk_key")
    return (
        claims.filter((F.col("n") >= 2) & (F.col("rk") <= 2))
        .groupBy(*PARTITION_KEY, "leader_epoch", "grp")
        .agg(
            F.max(F.when(F.col("rk") == 1, claimant)).alias("A"),
            F.max(F.when(F.col("rk") == 2, claimant)).alias("B"),
        )
    )


def check(ctx: CheckContext) -> DataFrame:
    """One row per (partition, LE, topic incarnation) with two claimants; the second one reported."""
    skew_us = int(ctx.config.max_clock_skew_ms) * 1000
    held = ctx.silver["broker_leader_epochs"]
    pairs = _claimant_pairs(ctx)
    # Acknowledgements in the acker's own log: X logged Y's leadership of the LE (Kafka follower
    # line naming Y, Redpanda leadership notification), with their own-order key.
    acks = held.filter(
        ((F.col("row_kind") == "ack") | ((F.col("row_kind") == "epoch") & (F.col("event_type") == "become_follower")))
        & F.col("leader").isNotNull()
    ).select(
        *PARTITION_KEY,
        "leader_epoch",
        F.col("broker_id").alias("acker"),
        F.col("leader").alias("ackee"),
        _own_key().alias("ack_key"),
        F.col("event_id").alias("ack_event"),
    )
    grants = vote_grants(ctx.events)
    pair_key = [*PARTITION_KEY, "leader_epoch", "grp"]

    on_partition = [F.col(f"p.{x}") == F.col(f"a.{x}") for x in (*PARTITION_KEY, "leader_epoch")]
    pair_cols = [F.first(F.col(f"p.{c}")).alias(c) for c in ("A", "B")]

    def acked(second: str, first: str) -> Column:
        """``second``'s own-log acknowledgement of ``first``'s leadership, before its own claim."""
        return (
            (F.col("a.acker") == F.col(f"p.{second}.claimant"))
            & (F.col("a.ackee") == F.col(f"p.{first}.claimant"))
            & F.col(f"p.{second}.bk_key").isNotNull()
            & (F.col("a.ack_key") < F.col(f"p.{second}.bk_key"))
        )

    def granted(second: str, first: str) -> Column:
        return (F.col("a.voter") == F.col(f"p.{second}.claimant")) & (
            F.col("a.candidate") == F.col(f"p.{first}.claimant")
        )

    # Both directions in one join per source, so the pairs are read once (over one partition, a
    # short run, every reference to them recomputed them). A pair with a null in its key is
    # dropped, as the inner joins on the key used to drop it.
    keyed = pairs.where(reduce(lambda a, b: a & b, [F.col(x).isNotNull() for x in pair_key]))
    own = (
        keyed.alias("p")
        .join(F.broadcast(acks.alias("a")), on_partition + [acked("B", "A") | acked("A", "B")], "left")
        .groupBy(*[F.col(f"p.{x}").alias(x) for x in pair_key])
        .agg(
            *pair_cols,
            # the earliest acknowledgement in the acker's own order (own keys are unique per event)
            *[
                F.min(F.when(acked(second, first), F.struct("a.ack_key", "a.ack_event")))["ack_event"].alias(name)
                for second, first, name in (("B", "A", "own_ba"), ("A", "B", "own_ab"))
            ],
        )
    )
    ordered = (
        own.alias("p")
        .join(F.broadcast(grants.alias("a")), on_partition + [granted("B", "A") | granted("A", "B")], "left")
        .groupBy(*[F.col(f"p.{x}").alias(x) for x in pair_key])
        .agg(
            *pair_cols,
            F.coalesce(F.first("p.own_ba"), F.min(F.when(granted("B", "A"), F.col("a.grant_event")))).alias("ack_ba"),
            F.coalesce(F.first("p.own_ab"), F.min(F.when(granted("A", "B"), F.col("a.grant_event")))).alias("ack_ab"),
        )
    )
    both_decided = F.col("A.tl_seq").isNotNull() & F.col("B.tl_seq").isNotNull()
    # Time order of the pair: (time nulls last, claimant).
    a_before_b = F.when(F.col("A.time").isNull() & F.col("B.time").isNull(), F.col("A.claimant") < F.col("B.claimant"))
    a_before_b = a_before_b.when(F.col("A.time").isNull(), F.lit(False)).when(F.col("B.time").isNull(), F.lit(True))
    a_before_b = a_before_b.otherwise(
        (F.col("A.time") < F.col("B.time"))
        | ((F.col("A.time") == F.col("B.time")) & (F.col("A.claimant") < F.col("B.claimant")))
    )
    ordered = ordered.withColumn(
        "mode",
        F.when(both_decided, F.lit("timeline"))
        .when(F.col("ack_ba").isNotNull(), F.lit("ack_ba"))
        .when(F.col("ack_ab").isNotNull(), F.lit("ack_ab"))
        .otherwise(F.lit("time")),
    )
    a_first = (F.col("mode").isin("timeline", "ack_ba")) | ((F.col("mode") == "time") & a_before_b)
    ordered = ordered.withColumn("first", F.when(a_first, F.col("A")).otherwise(F.col("B"))).withColumn(
        "second", F.when(a_first, F.col("B")).otherwise(F.col("A"))
    )
    gap = micros(F.col("second.time")) - micros(F.col("first.time"))
    confirmed = (F.col("mode") != "time") | (gap.isNotNull() & (gap > F.lit(skew_us)))
    ordered = ordered.withColumn("confidence", F.when(confirmed, "confirmed").otherwise("suspected")).withColumn(
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
        ordered,
        INVARIANT,
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
