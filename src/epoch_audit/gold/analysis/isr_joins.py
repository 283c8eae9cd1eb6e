"""KRaft ISR joins and the caught-up fetches that justify them (KIP-903, KAFKA-14139).

Read by ``stale_broker_epoch_isr_join`` (its check and its carry); ``rejected_isr_joins`` counts
the joins the controller refused, for the run summary.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.gold.analysis.keys import extreme_struct_by_key, with_keys_of
from epoch_audit.gold.analysis.kraft_state import INF, holds_at_some_commit, kraft_timeline_and_registrations
from epoch_audit.gold.context import CheckContext


def isr_joins(timeline: DataFrame, registrations: DataFrame) -> DataFrame:
    """KRaft ISR joins: the state at a commit point whose ISR adds replica R to the ISR of the
    state at the previous commit point.

    Records inside one batch / transaction are not separate moments (spec "Ordering and time"):
    a record superseded inside its own commit (next_commit_offset = commit_offset) is skipped, so a
    batch that drops R and adds it back is no join, and the joining row's partition epoch is the
    one after the commit. Adds R's registration state at that commit point (broker epoch,
    registration time / id).
    """
    by_decision = Window.partitionBy("cluster_id", "topic_id", "partition").orderBy("decision_seq")
    # The previous state must hold right up to this commit: one that ends earlier ends at a hole in
    # the dumped log, and the join (or a leave and rejoin) happened somewhere inside it, unseen.
    joins = (
        timeline.where(holds_at_some_commit(""))
        .withColumns({
            "_prev_isr": F.lag("isr").over(by_decision),
            "_prev_end": F.lag("next_commit_offset").over(by_decision),
        })
        .where(
            F.col("_prev_isr").isNotNull() & F.col("isr").isNotNull() & (F.col("_prev_end") == F.col("commit_offset"))
        )
    )
    joins = joins.select("*", F.explode(F.array_except("isr", "_prev_isr")).alias("replica"))
    registered = registrations.where(holds_at_some_commit("")).select(
        F.col("cluster_id").alias("b_cluster"),
        F.col("broker_id").alias("replica_b"),
        F.col("broker_epoch").alias("registered_be"),
        "registered_at_time",
        "registration_event_id",
        F.col("commit_offset").alias("b_from"),
        F.coalesce("next_commit_offset", F.lit(INF)).alias("b_to"),
    )
    return joins.join(
        registered,
        (F.col("cluster_id") == F.col("b_cluster"))
        & (F.col("replica") == F.col("replica_b"))
        & (F.col("b_from") <= F.col("commit_offset"))
        & (F.col("commit_offset") < F.col("b_to")),
        "left",
    ).drop("b_cluster", "replica_b", "b_from", "b_to", "_prev_isr", "_prev_end")


# The probes read the caught-up fetches compacted (:func:`probe_times`): per (leader, replica,
# partition, topic, replica epoch) the last fetch of each minute no probe of that place falls in, and
# of each stretch of a minute between two of its probes' times.
COMPACT_MICROS = 60 * 1_000_000
PROBE_PLACE = ["_cluster", "_leader", "_replica", "_partition"]
PROBE_KEY = [*PROBE_PLACE, "_topic"]
PROBE = ["_join_id", "replica", "_kind", "_topic"]


def fetch_probes(candidates: DataFrame, fetches: DataFrame, skew_s: float) -> DataFrame:
    """Per ISR join (``_join_id``, replica), probe (``_kind`` 1: at the commit, 2: at the commit plus
    the skew tolerance) and topic key it matched by (id or name, :func:`_topic_keys`): ``_F`` the
    replica's last caught-up fetch to the leader for the partition at or before the probe (struct
    of time, event id, replica epoch), ``_S`` the last one whose replica epoch is the join's
    registered broker epoch, ``_N`` the last one without a replica epoch, and ``_treg`` the
    registration time. Only probes with a fetch before them get a row.

    :func:`probe_times` finds each answer's time, :func:`probed_fetches` the fetch at that time (the
    check stage keeps the times once, ``join_probes``: both read them)."""
    return probed_fetches(probe_times(candidates, fetches, skew_s), fetches)


def probe_times(candidates: DataFrame, fetches: DataFrame, skew_s: float) -> DataFrame:
    """Per probe (:func:`fetch_probes`: ``_join_id``, replica, ``_kind``, ``_topic``), its place and
    topic key (``_cluster``, ``_leader``, ``_replica``, ``_partition``), the join's registered epoch
    ``_be``, ``_treg``, and the times (epoch microseconds) of its answers: ``_Ft``, ``_St``, ``_Nt``.

    An as-of, not a join: probes and fetches are sorted together per place and topic key and
    running maxima carry the fetches' times forward; both topic keys go through one window. (A range
    join pairs every join with every earlier fetch: at 10^7 events that is tens of millions of rows
    and exhausted a 1 GB heap.) The fetches are compacted first, in a hash aggregate: of the fetches
    of one minute that no probe of their place falls in, only the last of each replica epoch can be
    an answer; a minute a probe falls in is cut at its probes' times (a fetch at a probe's own time
    counts for it). At 10^7 lines 2.5 million caught-up fetches become about 140k rows, where the
    sort of all of them (and their shuffle, written twice: SPARK-58767) was most of the check."""
    skew = F.expr(f"make_interval(0,0,0,0,0,0,{skew_s})")
    joins = candidates.select(
        "_join_id",
        "replica",
        F.col("cluster_id").alias("_cluster"),
        F.col("leader").alias("_leader"),
        F.col("replica").alias("_replica"),
        F.col("partition").alias("_partition"),
        F.explode(_topic_keys("topic_id", "topic")).alias("_topic"),
        F.col("event_time").alias("_at"),
        F.lit(1).alias("_kind"),
        F.col("registered_be").alias("_be"),
        F.col("registered_at_time").alias("_treg"),
    )
    # The same join probed again at commit + skew (kind 2: after the fetches of that instant).
    joins = joins.unionByName(joins.withColumn("_at", F.col("_at") + skew).withColumn("_kind", F.lit(2)))
    joins = joins.withColumn("_time", F.unix_micros("_at")).drop("_at")
    minute = F.expr(f"div(_time, {COMPACT_MICROS})")
    probed_minutes = joins.groupBy(*[F.col(c).alias(f"_p{c}") for c in PROBE_PLACE], minute.alias("_pm")).agg(
        F.collect_set("_time").alias("_probe_times")
    )
    timed = fetches.where(F.col("f_time").isNotNull()).select(
        F.col("f_cluster").alias("_cluster"),
        F.col("f_leader").alias("_leader"),
        F.col("f_replica").alias("_replica"),
        F.col("f_partition").alias("_partition"),
        "f_topic",
        "f_topic_id",
        F.col("f_be").alias("_be"),
        F.unix_micros("f_time").alias("_time"),
    )
    in_probed = [F.col(c) == F.col(f"_p{c}") for c in PROBE_PLACE] + [minute == F.col("_pm")]
    # the stretch of a probed minute: how many of its probes come before the fetch
    stretch = F.size(F.filter("_probe_times", lambda t: t < F.col("_time")))
    compact = (
        timed.join(F.broadcast(probed_minutes), in_probed, "left")
        .groupBy(*PROBE_PLACE, "f_topic", "f_topic_id", "_be", minute.alias("_m"), stretch.alias("_s"))
        .agg(F.max("_time").alias("_time"))
        .select(*PROBE_PLACE, F.explode(_topic_keys("f_topic_id", "f_topic")).alias("_topic"), "_be", "_time",
                F.lit(0).alias("_kind"))
    )
    # One shuffle by key; the second window's key is finer, so it needs none. A fetch logged at the
    # commit's own time counts (f_time <= commit time): fetches sort first.
    rows = joins.unionByName(compact, allowMissingColumns=True).repartition(*PROBE_KEY)
    upto = Window.orderBy("_time", "_kind").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    fetch_time = F.when(F.col("_kind") == 0, F.col("_time"))
    in_key, in_epoch = upto.partitionBy(*PROBE_KEY), upto.partitionBy(*PROBE_KEY, "_be")
    # Rows without a replica epoch form their own group in the second window, with _St null.
    return (
        rows.select(
            "*",
            F.max(fetch_time).over(in_key).alias("_Ft"),
            F.max(F.when(F.col("_be").isNull(), fetch_time)).over(in_key).alias("_Nt"),
        )
        .select("*", F.max(F.when(F.col("_be").isNotNull(), fetch_time)).over(in_epoch).alias("_St"))
        .where((F.col("_kind") >= 1) & F.col("_Ft").isNotNull())
        .select(*PROBE, *PROBE_PLACE, "_be", "_treg", "_Ft", "_St", "_Nt")
    )


def probed_fetches(times: DataFrame, fetches: DataFrame) -> DataFrame:
    """:func:`fetch_probes`' rows from :func:`probe_times`' ``times`` (read twice): each answer is the
    largest (time, event id, replica epoch) of the fetches of its place and topic key at its time
    (of the registered epoch for ``_S``, without one for ``_N``): what the window over every fetch's
    struct picked. The fetches are looked up by place and time (broadcast), not shuffled."""
    asked = times.select(
        *PROBE, *PROBE_PLACE, "_be", "_treg",
        F.explode(F.array(*[F.struct(F.lit(w).alias("w"), F.col(f"_{w}t").alias("t")) for w in "FSN"])).alias("_a"),
    ).where(F.col("_a.t").isNotNull()).select(
        *PROBE, *[F.col(c).alias(f"_q{c}") for c in PROBE_PLACE], "_be", "_treg",
        F.col("_a.w").alias("_w"), F.col("_a.t").alias("_t"),
    )
    answered = (
        times.select(*[F.col(c).alias(f"_r{c}") for c in PROBE_PLACE],
                     F.explode(F.array("_Ft", "_St", "_Nt")).alias("_rt"))
        .where(F.col("_rt").isNotNull())
        .distinct()
    )
    at_answer = [F.col(f"f{c}") == F.col(f"_r{c}") for c in ("_cluster", "_leader", "_replica", "_partition")]
    found = fetches.join(F.broadcast(answered), [*at_answer, F.unix_micros("f_time") == F.col("_rt")], "left_semi")
    found = found.select(
        *[F.col(f"f{c}").alias(f"_x{c}") for c in PROBE_PLACE],
        F.explode(_topic_keys("f_topic_id", "f_topic")).alias("_x_topic"),
        F.unix_micros("f_time").alias("_x_time"),
        F.struct("f_time", "f_event_id", "f_be").alias("_fetch"),
    )
    same = [F.col(f"_q{c}") == F.col(f"_x{c}") for c in PROBE_PLACE] + [
        F.col("_topic") == F.col("_x_topic"),
        F.col("_t") == F.col("_x_time"),
        (F.col("_w") == "F")
        | ((F.col("_w") == "N") & F.col("_fetch.f_be").isNull())
        | ((F.col("_w") == "S") & (F.col("_fetch.f_be") == F.col("_be"))),
    ]
    picked = asked.join(found, same).groupBy(*PROBE, "_be", "_treg", "_w").agg(F.max("_fetch").alias("_m"))
    answer = {w: F.max(F.when(F.col("_w") == w, F.col("_m"))).alias(f"_{w}") for w in "FSN"}
    return picked.groupBy(*PROBE, "_be", "_treg").agg(*answer.values()).select(
        "_join_id", "replica", "_kind", "_F", "_S", "_N", "_treg"
    )


def _topic_keys(topic_id: str, topic: str) -> Column:
    """The topic keys a row is matched under: ``i:<topic id>`` and ``n:<name>``, whichever it has. A
    join and a fetch meet when they share one; tagged, so an id never meets a name."""
    keys = F.array(F.concat(F.lit("i:"), F.col(topic_id)), F.concat(F.lit("n:"), F.col(topic)))
    return F.filter(keys, lambda k: k.isNotNull())


def last_caught_up_fetches(probes: DataFrame, skew_s: float) -> DataFrame:
    """Per ISR join (``_join_id``, replica) of ``probes`` (:func:`fetch_probes`): the replica's last
    caught-up fetch to the leader for the partition at or before the commit (``_F``: struct of time,
    event id, replica epoch), whether a caught-up fetch of the new incarnation came before the commit
    (``_has_new``), and whether one came by the commit time plus the skew tolerance (``_has_new_skew``:
    the fetch is on the leader's clock, the commit on the controller's, so such a fetch may really
    precede it). The topic matches by id or by name (:func:`fetch_probes`); joins with no fetch before
    the commit get no row.
    """
    skew = F.expr(f"make_interval(0,0,0,0,0,0,{skew_s})")
    # new incarnation: a fetch with the registered epoch, or one without an epoch timed more than
    # the skew after the registration
    has_new = F.col("_S").isNotNull() | F.coalesce(F.col("_N.f_time") > F.col("_treg") + skew, F.lit(False))
    at_commit = F.col("_kind") == 1
    per_join = (
        probes.select(
            "_join_id",
            "replica",
            F.when(at_commit, F.col("_F")).alias("_F"),
            F.when(at_commit, has_new.cast("int")).alias("_has_new"),
            F.when(~at_commit, has_new.cast("int")).alias("_has_new_skew"),
        )
        .groupBy("_join_id", "replica")
        .agg(
            F.max("_F").alias("_F"), F.max("_has_new").alias("_has_new"), F.max("_has_new_skew").alias("_has_new_skew")
        )
    )
    return per_join.where(F.col("_F").isNotNull())


def joins_of(ctx: CheckContext) -> DataFrame:
    """The KRaft ISR joins of ``ctx`` (:func:`isr_joins`), ``_join_id`` = the joining row's event id."""
    timeline, registrations = kraft_timeline_and_registrations(ctx)
    return isr_joins(timeline, registrations).withColumn("_join_id", F.col("event_id"))


def probed_joins(joins: DataFrame) -> DataFrame:
    """The joins rule 2 can ask about: the replica's registration and the commit are timed."""
    return joins.where(F.col("registered_at_time").isNotNull() & F.col("event_time").isNotNull())


def caught_up_fetches_of(ctx: CheckContext) -> DataFrame:
    """:func:`caught_up_fetches` of ``ctx.events`` (read by the ISR check's probes and by its carry)."""
    return caught_up_fetches(ctx.events, UNANSWERED_FETCH not in ctx.absent_types)


def join_probes(ctx: CheckContext) -> DataFrame:
    """:func:`fetch_probes` of every probed join (:func:`probed_joins`): what the ISR check reads for
    rule 2 and what its carry keeps the picked fetches of (one computation for both, ``ctx.shared``).
    Probes of different joins never meet, so the check's answers are those of its own candidates."""
    return probed_fetches(ctx.shared(probe_times_of, checks=2), ctx.shared(caught_up_fetches_of))


def probe_times_of(ctx: CheckContext) -> DataFrame:
    """:func:`probe_times` of every probed join (:func:`probed_joins`), kept: :func:`probed_fetches`
    reads them twice."""
    joins = probed_joins(ctx.shared(joins_of))
    return probe_times(joins, ctx.shared(caught_up_fetches_of), ctx.config.max_clock_skew_ms / 1000.0)


# Not an event type, a kind of event the check stage asks about as it asks about types (the registry's
# ``asks``, ``CheckContext.absent_types``): a follower's FETCH whose response named no high watermark.
# Without one no response left a partition out (KIP-227): reading every fetch's details map to find
# those was half of the ISR check's fetch analysis at 10^7 lines.
UNANSWERED_FETCH = "request_fetch without a high watermark"


def unanswered_fetches(events: DataFrame) -> DataFrame:
    """The :data:`UNANSWERED_FETCH` rows of ``events``: request-log FETCH events of a follower without a
    high watermark (every one an omitted partition (:func:`omitted_from_response`) is among them)."""
    return events.where(
        (F.col("event_type") == "request_fetch") & F.col("replica_id").isNotNull() & F.col("high_watermark").isNull()
    )


FETCH_KEY = ("cluster_id", "broker_id", "replica_id", "partition", "_topic_key")
# Line order within the leader's request log: a session's fetches are logged one after another.
FETCH_ORDER = ("event_time", "file_order", "line_number", "sub_index")


def replica_fetches(events: DataFrame) -> DataFrame:
    """Request-log FETCH events of followers, keyed by ``_topic_key`` (the topic id, else its name)."""
    return events.where((F.col("event_type") == "request_fetch") & F.col("replica_id").isNotNull()).withColumn(
        "_topic_key", F.coalesce("topic_id", "topic")
    )


def omitted_from_response() -> Column:
    """A partition an incremental fetch (KIP-227, session epoch > 0) names in its request and its response
    leaves out: nothing changed for it since the session's last response, high watermark included."""
    details = F.col("details")
    return (
        F.col("high_watermark").isNull()
        & details["error_code"].isNull()
        & (details["in_request"] == "true")
        & (F.expr("try_cast(details['session_epoch'] AS INT)") > 0)
    )


def caught_up_fetches(events: DataFrame, may_omit: bool = True) -> DataFrame:
    """Request-log FETCH lines of a follower whose fetch offset reached the leader's high watermark
    (rule 2's catch-up evidence), ``f_``-prefixed. The high watermark is the fetch response's; for a
    partition the response of an incremental fetch session leaves out (:func:`omitted_from_response`),
    the one the session last sent for it (the last earlier fetch of that replica and partition with one):
    a caught-up follower with nothing new to fetch is named in no response at all (seen in real Kafka
    3.4 and 3.9 lab runs). ``may_omit`` False: the events hold no :data:`UNANSWERED_FETCH`, so no
    response left a partition out (the fill, which reads every fetch's details, is not planned)."""
    fetches = replica_fetches(events)
    reported = fetches.where(F.col("high_watermark").isNotNull()).withColumn("_hw", F.col("high_watermark"))
    with_hw = reported.unionByName(_filled_high_watermarks(fetches, reported)) if may_omit else reported
    return with_hw.where(
        F.col("offset").isNotNull() & F.col("_hw").isNotNull() & (F.col("offset") >= F.col("_hw"))
    ).select(
        F.col("cluster_id").alias("f_cluster"),
        F.col("broker_id").alias("f_leader"),
        F.col("replica_id").alias("f_replica"),
        F.col("topic").alias("f_topic"),
        F.col("topic_id").alias("f_topic_id"),
        F.col("partition").alias("f_partition"),
        F.col("broker_epoch").alias("f_be"),
        F.col("event_time").alias("f_time"),
        F.col("event_id").alias("f_event_id"),
    )


def _filled_high_watermarks(fetches: DataFrame, reported: DataFrame) -> DataFrame:
    """The fetches (:func:`replica_fetches`) whose partition the response left out
    (:func:`omitted_from_response`), ``_hw`` the high watermark of the last earlier ``reported`` fetch
    (one whose response named it) of the same replica and partition.

    The window sorts only the fetches of the keys some omitted fetch has (their keys broadcast: a
    cluster without incremental fetch sessions sorts none, where a window over every fetch for the
    few it fills was most of the ISR check's time at 10^7 lines)."""
    omitted = fetches.where(omitted_from_response()).withColumn("_omitted", F.lit(True))
    earlier_reports = with_keys_of(reported.drop("_hw"), omitted, list(FETCH_KEY), broadcast=True)
    earlier = Window.partitionBy(*FETCH_KEY).orderBy(*FETCH_ORDER).rowsBetween(Window.unboundedPreceding, -1)
    rows = omitted.unionByName(earlier_reports.withColumn("_omitted", F.lit(False)))
    return (
        rows.withColumn("_hw", F.last("high_watermark", ignorenulls=True).over(earlier))
        .where(F.col("_omitted"))
        .drop("_omitted")
    )


def last_high_watermark_fetches(events: DataFrame) -> DataFrame:
    """Per (leader, replica, partition): the event id of the last fetch whose response named a high
    watermark (``event_id``), what :func:`caught_up_fetches` fills a later omitted partition from."""
    fetches = replica_fetches(events).where(F.col("high_watermark").isNotNull())
    last = extreme_struct_by_key(fetches, list(FETCH_KEY), [*FETCH_ORDER, "event_id"], "_m")
    return last.select(F.col("_m.event_id").alias("event_id"))


def rejected_isr_joins(events: DataFrame) -> DataFrame:
    """ISR joins the controller refused: (cluster_id, reason, count). Spec (stale_broker_epoch_isr_join):
    rejected joins — INELIGIBLE_REPLICA, "broker epoch mismatch: requested=X VS expected=Y" — are the
    system working: never violations, but counted in the run summary.

    One count per ineligible replica of a controller "Rejecting AlterPartition ... ineligible
    replicas" line (KRaft 3.3+, ZK 3.3+); ``reason`` is ``broker_epoch_mismatch`` (KIP-903), else the
    controller's own reason (fenced, shutting down, not registered, not in live brokers).
    """
    reason = F.coalesce(F.col("details")["reason"], F.lit("ineligible"))
    return (
        events.where(
            (F.col("event_type") == "controller_alter_partition_rejected") & (F.col("error") == "INELIGIBLE_REPLICA")
        )
        .select(
            "cluster_id",
            F.when(reason.startswith("broker epoch mismatch"), F.lit("broker_epoch_mismatch"))
            .otherwise(reason)
            .alias("reason"),
        )
        .groupBy("cluster_id", "reason")
        .count()
    )
