"""KIP-903 ISR membership: stale-incarnation joins and fenced replicas left in the ISR (KRaft).

``stale_broker_epoch_isr_join`` (KAFKA-14139): a replica may join the ISR only on evidence from
its current broker incarnation. ``fenced_replica_in_isr`` / ``last_replica_fenced_in_isr``: the
ISR in the state at a commit point must not contain a fenced or shutting-down broker
(ReplicationControlManager removes it from every ISR in the same batch that fences it).
All three read the KRaft rows of silver.partition_timeline and silver.broker_registrations,
whose states hold over commit-point intervals [commit_offset, next_commit_offset).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.gold.base import CHECK_COLUMNS, CheckContext
from epoch_audit.silver.broker_registrations import broker_registrations
from epoch_audit.silver.event_fields import is_no_error
from epoch_audit.silver.partition_timeline import partition_timeline

INF = 2**63 - 1


def _silver(ctx: CheckContext) -> tuple[DataFrame, DataFrame]:
    tl = ctx.silver.get("partition_timeline")
    if tl is None:
        tl = partition_timeline(ctx.events, ctx.config)
    br = ctx.silver.get("broker_registrations")
    if br is None:
        br = broker_registrations(ctx.events, ctx.config)
    return tl.where(F.col("source") == "kraft"), br


def _nonempty(prefix: str) -> Column:
    nxt = F.col(f"{prefix}next_commit_offset")
    return nxt.isNull() | (nxt > F.col(f"{prefix}commit_offset"))


def fenced_replica_in_isr(ctx: CheckContext) -> DataFrame:
    """KIP-903 / controlled shutdown: a fenced or shutting-down replica in the ISR at a commit point.

    The state at a commit point is the state after the whole batch (or transaction), so a batch
    that fences a broker and removes it from every ISR is clean. One row per partition and
    replica episode (a maximal run of commit points in which the replica stays in the ISR while
    fenced / in controlled shutdown); broker_id = that replica. When the ISR has exactly one
    member, the row is ``last_replica_fenced_in_isr`` with severity warning (KIP-903 "last
    replica": a data-loss risk, not a breach).
    """
    tl, br = _silver(ctx)
    p = tl.where(F.col("isr").isNotNull() & _nonempty("")).select(
        "cluster_id",
        "topic",
        "partition",
        "topic_id",
        "leader_epoch",
        "isr",
        F.size("isr").alias("isr_size"),
        F.explode("isr").alias("replica"),
        F.col("commit_offset").alias("p_from"),
        F.coalesce("next_commit_offset", F.lit(INF)).alias("p_to"),
        F.col("event_id").alias("p_event_id"),
        F.col("event_time").alias("p_time"),
    )
    b = (
        br.where((F.col("fenced") == F.lit(True)) | (F.col("in_controlled_shutdown") == F.lit(True)))
        .where(_nonempty(""))
        .select(
            F.col("cluster_id").alias("b_cluster"),
            F.col("broker_id").alias("replica_b"),
            "broker_epoch",
            "fenced",
            "in_controlled_shutdown",
            F.col("commit_offset").alias("b_from"),
            F.coalesce("next_commit_offset", F.lit(INF)).alias("b_to"),
            F.col("event_id").alias("b_event_id"),
            F.col("event_time").alias("b_time"),
        )
    )
    o = p.join(
        b,
        (F.col("cluster_id") == F.col("b_cluster"))
        & (F.col("replica") == F.col("replica_b"))
        & (F.greatest("p_from", "b_from") < F.least("p_to", "b_to")),
    )
    o = o.withColumn("s", F.greatest("p_from", "b_from")).withColumn("e", F.least("p_to", "b_to"))
    o = o.withColumn(
        "invariant",
        F.when(F.col("isr_size") == 1, F.lit("last_replica_fenced_in_isr")).otherwise(F.lit("fenced_replica_in_isr")),
    )
    key = ["cluster_id", "topic_id", "topic", "partition", "replica", "invariant"]
    w = Window.partitionBy(*key).orderBy("s")
    o = o.withColumn("_prev_e", F.max("e").over(w.rowsBetween(Window.unboundedPreceding, -1)))
    o = o.where(F.col("_prev_e").isNull() | (F.col("s") > F.col("_prev_e")))  # the first overlap of each episode
    state = F.when(F.col("fenced") == F.lit(True), F.lit("fenced")).otherwise(F.lit("in controlled shutdown"))
    return o.select(
        "invariant",
        F.when(F.col("isr_size") == 1, F.lit("warning")).otherwise(F.lit("error")).alias("severity"),
        F.lit("confirmed").alias("confidence"),
        "cluster_id",
        "topic",
        "partition",
        F.col("replica").alias("broker_id"),
        "leader_epoch",
        F.lit(None).cast("int").alias("expected_epoch"),
        F.when(F.col("p_from") >= F.col("b_from"), F.col("p_time")).otherwise(F.col("b_time")).alias("event_time"),
        F.array_sort(F.array("p_event_id", "b_event_id")).alias("evidence"),
        F.format_string(
            "At metadata commit offset %d the ISR %s of %s-%d (leader epoch %s, record %s) contains broker %d, "
            "which is %s (broker epoch %s) since record %s.",
            "s",
            F.array_join(F.col("isr").cast("array<string>"), ","),
            "topic",
            "partition",
            F.coalesce(F.col("leader_epoch").cast("string"), F.lit("?")),
            "p_event_id",
            "replica",
            state,
            F.coalesce(F.col("broker_epoch").cast("string"), F.lit("?")),
            "b_event_id",
        ).alias("explanation"),
    ).select(*CHECK_COLUMNS)


def isr_joins(tl: DataFrame, br: DataFrame) -> DataFrame:
    """KRaft ISR joins: the state at a commit point whose ISR adds replica R to the ISR of the
    state at the previous commit point.

    Records inside one batch / transaction are not separate moments (spec "Ordering and time"):
    a record superseded inside its own commit (next_commit_offset = commit_offset) is skipped, so a
    batch that drops R and adds it back is no join, and the joining row's partition epoch is the
    one after the commit. Adds R's registration state at that commit point (broker epoch,
    registration time / id).
    """
    w = Window.partitionBy("cluster_id", "topic_id", "partition").orderBy("decision_seq")
    # The previous state must hold right up to this commit: one that ends earlier ends at a hole in
    # the dumped log, and the join (or a leave and rejoin) happened somewhere inside it, unseen.
    j = (
        tl.where(_nonempty(""))
        .withColumn("_prev_isr", F.lag("isr").over(w))
        .withColumn("_prev_end", F.lag("next_commit_offset").over(w))
        .where(
            F.col("_prev_isr").isNotNull()
            & F.col("isr").isNotNull()
            & (F.col("_prev_end") == F.col("commit_offset"))
        )
    )
    j = j.select("*", F.explode(F.array_except("isr", "_prev_isr")).alias("replica"))
    b = br.where(_nonempty("")).select(
        F.col("cluster_id").alias("b_cluster"),
        F.col("broker_id").alias("replica_b"),
        F.col("broker_epoch").alias("registered_be"),
        "registered_at_time",
        "registration_event_id",
        F.col("commit_offset").alias("b_from"),
        F.coalesce("next_commit_offset", F.lit(INF)).alias("b_to"),
    )
    return j.join(
        b,
        (F.col("cluster_id") == F.col("b_cluster"))
        & (F.col("replica") == F.col("replica_b"))
        & (F.col("b_from") <= F.col("commit_offset"))
        & (F.col("commit_offset") < F.col("b_to")),
        "left",
    ).drop("b_cluster", "replica_b", "b_from", "b_to", "_prev_isr", "_prev_end")


def _fetch_probes(cand: DataFrame, fetch: DataFrame, skew_s: float) -> DataFrame:
    """Per ISR join (``_join_id``, replica) and probe (``_kind`` 1: at the commit, 2: at the commit
    plus the skew tolerance), from each topic pass (by id, by name): ``_F`` the replica's last
    caught-up fetch to the leader for the partition at or before the probe (struct of time, event
    id, replica epoch), ``_S`` the last one whose replica epoch is the join's registered broker
    epoch, ``_N`` the last one without a replica epoch, and ``_treg`` the registration time.

    An as-of, not a join: joins and fetches are sorted together per (cluster, leader, replica,
    partition, topic) and running maxima carry the fetches forward. (A range join pairs every join
    with every earlier fetch: at 10^7 events that is tens of millions of rows and exhausted a 1 GB
    heap.) Only probes with a fetch before them get a row.
    """
    skew = F.expr(f"make_interval(0,0,0,0,0,0,{skew_s})")
    key = ["_cluster", "_leader", "_replica", "_partition", "_topic"]
    passes = []
    for c_topic, f_topic in (("topic_id", "f_topic_id"), ("topic", "f_topic")):
        joins = cand.where(F.col(c_topic).isNotNull()).select(
            "_join_id", "replica", F.col("cluster_id").alias("_cluster"), F.col("leader").alias("_leader"),
            F.col("replica").alias("_replica"), F.col("partition").alias("_partition"),
            F.col(c_topic).alias("_topic"), F.col("event_time").alias("_time"), F.lit(1).alias("_kind"),
            F.col("registered_be").alias("_be"), F.col("registered_at_time").alias("_treg"),
        )
        # The same join probed again at commit + skew (kind 2: after the fetches of that instant).
        joins = joins.unionByName(
            joins.withColumn("_time", F.col("_time") + skew).withColumn("_kind", F.lit(2))
        )
        fetches = fetch.where(F.col(f_topic).isNotNull() & F.col("f_time").isNotNull()).select(
            F.col("f_cluster").alias("_cluster"), F.col("f_leader").alias("_leader"),
            F.col("f_replica").alias("_replica"), F.col("f_partition").alias("_partition"),
            F.col(f_topic).alias("_topic"), F.col("f_time").alias("_time"), F.lit(0).alias("_kind"),
            F.col("f_be").alias("_be"), F.struct("f_time", "f_event_id", "f_be").alias("_fetch"),
        )
        rows = joins.unionByName(fetches, allowMissingColumns=True)
        # A fetch logged at the commit's own time counts (f_time <= commit time): fetches sort first.
        upto = Window.orderBy("_time", "_kind").rowsBetween(Window.unboundedPreceding, Window.currentRow)
        by_key, by_be = upto.partitionBy(*key), upto.partitionBy(*key, "_be")
        is_fetch = F.col("_kind") == 0
        rows = (
            rows.withColumn("_F", F.max("_fetch").over(by_key))
            .withColumn("_N", F.max(F.when(is_fetch & F.col("_be").isNull(), F.col("_fetch"))).over(by_key))
            .withColumn("_S", F.max(F.when(is_fetch & F.col("_be").isNotNull(), F.col("_fetch"))).over(by_be))
        )
        passes.append(
            rows.where((F.col("_kind") >= 1) & F.col("_F").isNotNull()).select(
                "_join_id", "replica", "_kind", "_F", "_S", "_N", "_treg"
            )
        )
    return passes[0].unionByName(passes[1])


def last_caught_up_fetches(cand: DataFrame, fetch: DataFrame, skew_s: float) -> DataFrame:
    """Per ISR join (``_join_id``, replica): the replica's last caught-up fetch to the leader for
    the partition at or before the commit (``_F``: struct of time, event id, replica epoch),
    whether a caught-up fetch of the new incarnation came before the commit (``_has_new``), and
    whether one came by the commit time plus the skew tolerance (``_has_new_skew``: the fetch is on
    the leader's clock, the commit on the controller's, so such a fetch may really precede it).
    The topic matches by id or by name (:func:`_fetch_probes`); joins with no fetch before the
    commit get no row.
    """
    skew = F.expr(f"make_interval(0,0,0,0,0,0,{skew_s})")
    probes = _fetch_probes(cand, fetch, skew_s)
    # new incarnation: a fetch with the registered epoch, or one without an epoch timed more than
    # the skew after the registration
    has_new = F.col("_S").isNotNull() | F.coalesce(F.col("_N.f_time") > F.col("_treg") + skew, F.lit(False))
    at_commit = F.col("_kind") == 1
    agg = probes.select(
        "_join_id",
        "replica",
        F.when(at_commit, F.col("_F")).alias("_F"),
        F.when(at_commit, has_new.cast("int")).alias("_has_new"),
        F.when(~at_commit, has_new.cast("int")).alias("_has_new_skew"),
    ).groupBy("_join_id", "replica").agg(
        F.max("_F").alias("_F"), F.max("_has_new").alias("_has_new"), F.max("_has_new_skew").alias("_has_new_skew")
    )
    return agg.where(F.col("_F").isNotNull())


def caught_up_fetches(events: DataFrame) -> DataFrame:
    """Request-log FETCH lines of a follower whose fetch offset reached the response's high
    watermark (rule 2's catch-up evidence), ``f_``-prefixed."""
    return events.where(
        (F.col("event_type") == "request_fetch")
        & F.col("offset").isNotNull()
        & F.col("high_watermark").isNotNull()
        & (F.col("offset") >= F.col("high_watermark"))
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


def stale_broker_epoch_isr_join_carry(ctx: CheckContext) -> DataFrame:
    """Traffic (cluster_id, event_id) rule 2 still needs from before a nightly run's horizon
    (``epoch_audit.gold.carry``): every fetch a join's probes picked (last caught-up fetch, last one of
    the registered epoch, last one without an epoch), so every join keeps its answer; per (leader,
    replica, partition, topic, replica epoch) the last caught-up fetch, for joins still to come;
    per broker its last request-log line (``l_last``: the leader kept logging)."""
    tl, br = _silver(ctx)
    joins = isr_joins(tl, br).withColumn("_join_id", F.col("event_id"))
    cand = joins.where(F.col("registered_at_time").isNotNull() & F.col("event_time").isNotNull())
    fetch = caught_up_fetches(ctx.events)
    probes = _fetch_probes(cand, fetch, ctx.config.max_clock_skew_ms / 1000.0)
    picked = probes.select(F.explode(F.array("_F.f_event_id", "_S.f_event_id", "_N.f_event_id")).alias("event_id"))
    last = fetch.groupBy("f_cluster", "f_leader", "f_replica", "f_partition", "f_topic", "f_topic_id", "f_be").agg(
        F.max(F.struct("f_time", "f_event_id")).alias("_m")
    )
    logs = (
        ctx.events.where((F.col("log_kind") == "request") & F.col("event_time").isNotNull())
        .groupBy("cluster_id", "broker_id")
        .agg(F.max(F.struct("event_time", "event_id")).alias("_m"))
    )
    ids = picked.unionByName(last.select(F.col("_m.f_event_id").alias("event_id"))).unionByName(
        logs.select(F.col("_m.event_id").alias("event_id"))
    )
    return ids.where(F.col("event_id").isNotNull()).distinct()


def stale_broker_epoch_isr_join(ctx: CheckContext) -> DataFrame:
    """KIP-903 (KAFKA-14139): a replica joined the ISR on evidence from a previous incarnation.

    Rule 1 (epoch mismatch): the AlterPartition the controller accepted for the join (request log,
    ALTER_PARTITION v3+, partition error NONE, matched by topic id, partition and the response's
    partition epoch = the partition epoch after the commit) carries in newIsrWithEpochs a broker
    epoch for R that is not -1 and differs from R's registered broker epoch at the commit point.
    Rule 2 (stale catch-up): the justifying fetch = R's last fetch to the leader before the commit
    whose fetch offset >= the response's high watermark. If R registered again after it (a new
    broker epoch) and no caught-up fetch of the new incarnation (replicaEpoch = the new epoch, or
    for fetches without it one timed more than max_clock_skew_ms after the registration) lies
    before the commit, the join is a violation; "suspected" when the fetch and the registration
    are within the skew tolerance of each other. Rule 2 needs fetch evidence: a caught-up fetch
    of R for the partition on the leader's request log, and that log must keep logging (a
    request after the commit). One row per join (rule 1 preferred); broker_id = R.
    """
    tl, br = _silver(ctx)
    joins = isr_joins(tl, br).withColumn("_join_id", F.col("event_id"))
    skew_s = ctx.config.max_clock_skew_ms / 1000.0

    # ---- rule 1
    ap = ctx.events.where(
        (F.col("event_type") == "request_alter_partition")
        & is_no_error(F.col("error"))
        & (F.col("api_version") >= 3)
        & F.col("isr_broker_epochs").isNotNull()
    ).select(
        F.col("cluster_id").alias("a_cluster"),
        F.col("topic_id").alias("a_topic_id"),
        F.col("partition").alias("a_partition"),
        F.col("partition_epoch").alias("a_pe"),
        F.col("isr").alias("a_isr"),
        "isr_broker_epochs",
        F.col("event_id").alias("a_event_id"),
    )
    r1 = joins.join(
        ap,
        (F.col("cluster_id") == F.col("a_cluster"))
        & (F.col("topic_id") == F.col("a_topic_id"))
        & (F.col("partition") == F.col("a_partition"))
        & (F.col("partition_epoch") == F.col("a_pe")),
    )
    req_be = F.element_at("isr_broker_epochs", F.array_position("a_isr", F.col("replica")).cast("int"))
    r1 = r1.where(F.array_contains("a_isr", F.col("replica"))).withColumn("_req_be", req_be)
    r1 = r1.where(
        (F.col("_req_be") != -1) & F.col("registered_be").isNotNull() & (F.col("_req_be") != F.col("registered_be"))
    ).select(
        "*",
        F.lit(1).alias("_rule"),
        F.lit("confirmed").alias("_conf"),
        F.array("event_id", "a_event_id", "registration_event_id").alias("_ev"),
        F.format_string(
            "Broker %d joined the ISR of %s-%d at metadata offset %d (partition epoch %d) through AlterPartition %s "
            "carrying broker epoch %d, but its registered broker epoch at that commit was %d.",
            "replica",
            "topic",
            "partition",
            "metadata_offset",
            "partition_epoch",
            "a_event_id",
            "_req_be",
            "registered_be",
        ).alias("_expl"),
    )

    # ---- rule 2
    fetch = caught_up_fetches(ctx.events)
    cand = joins.where(F.col("registered_at_time").isNotNull() & F.col("event_time").isNotNull())
    agg = last_caught_up_fetches(cand, fetch, skew_s)
    leader_logs = (
        ctx.events.where(F.col("log_kind") == "request")
        .groupBy(F.col("cluster_id").alias("l_cluster"), F.col("broker_id").alias("l_broker"))
        .agg(F.max("event_time").alias("l_last"))
    )
    r2 = (
        cand.join(agg, ["_join_id", "replica"])
        .where(F.col("_has_new") == 0)
        .join(
            F.broadcast(leader_logs),
            (F.col("cluster_id") == F.col("l_cluster")) & (F.col("leader") == F.col("l_broker")),
        )
        .where(F.col("l_last") > F.col("event_time"))
    )
    ftime, fbe = F.col("_F.f_time"), F.col("_F.f_be")
    skew = F.expr(f"make_interval(0,0,0,0,0,0,{skew_s})")
    treg = F.col("registered_at_time")
    confirmed = (fbe.isNotNull() & (fbe != F.col("registered_be"))) | (fbe.isNull() & (ftime < treg - skew))
    # a new-incarnation fetch timed within the skew after the commit may really precede it
    confirmed = confirmed & (F.coalesce(F.col("_has_new_skew"), F.lit(0)) == 0)
    r2 = r2.select(
        "*",
        F.lit(2).alias("_rule"),
        F.when(confirmed, F.lit("confirmed")).otherwise(F.lit("suspected")).alias("_conf"),
        F.array("event_id", "_F.f_event_id", "registration_event_id").alias("_ev"),
        F.format_string(
            "Broker %d joined the ISR of %s-%d at metadata offset %d (leader %d), but its last caught-up fetch %s "
            "(replica epoch %s) predates its registration %s with broker epoch %d, and no caught-up fetch of that "
            "incarnation came before the commit.",
            "replica",
            "topic",
            "partition",
            "metadata_offset",
            "leader",
            "_F.f_event_id",
            F.coalesce(fbe.cast("string"), F.lit("unknown")),
            "registration_event_id",
            "registered_be",
        ).alias("_expl"),
    )
    cols = [
        "cluster_id",
        "topic",
        "partition",
        "replica",
        "leader_epoch",
        "event_time",
        "_join_id",
        "_rule",
        "_conf",
        "_ev",
        "_expl",
    ]
    both = r1.select(*cols).unionByName(r2.select(*cols))
    w = Window.partitionBy("cluster_id", "_join_id", "replica").orderBy("_rule")
    both = both.withColumn("_rn", F.row_number().over(w)).where("_rn = 1")
    return both.select(
        F.lit("stale_broker_epoch_isr_join").alias("invariant"),
        F.lit("error").alias("severity"),
        F.col("_conf").alias("confidence"),
        "cluster_id",
        "topic",
        "partition",
        F.col("replica").alias("broker_id"),
        "leader_epoch",
        F.lit(None).cast("int").alias("expected_epoch"),
        "event_time",
        F.array_sort(F.array_distinct(F.filter("_ev", lambda x: x.isNotNull()))).alias("evidence"),
        F.col("_expl").alias("explanation"),
    ).select(*CHECK_COLUMNS)


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
            F.when(reason.startswith("broker epoch mismatch"), F.lit("broker_epoch_mismatch")).otherwise(reason).alias(
                "reason"
            ),
        )
        .groupBy("cluster_id", "reason")
        .count()
    )
