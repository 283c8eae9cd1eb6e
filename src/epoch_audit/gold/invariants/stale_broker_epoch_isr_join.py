"""``stale_broker_epoch_isr_join`` (KIP-903, the KAFKA-14139 race): a replica may join the ISR only
on evidence from its current broker incarnation.

Rule 1 (epoch mismatch): the AlterPartition the controller accepted for the join (request log,
ALTER_PARTITION v3+, partition error NONE, matched by topic id, partition and the response's
partition epoch = the partition epoch after the commit) carries in newIsrWithEpochs a broker
epoch for R that is not -1 and differs from R's registered broker epoch at the commit point.
Rule 2 (stale catch-up): the justifying fetch = R's last fetch to the leader before the commit
whose fetch offset >= the response's high watermark (for a partition an incremental fetch session
leaves out of the response, KIP-227, the one the session last sent). If R registered again after it (a new
broker epoch) and no caught-up fetch of the new incarnation (replicaEpoch = the new epoch, or
for fetches without it one timed more than max_clock_skew_ms after the registration) lies
before the commit, the join is a violation; "suspected" when the fetch and the registration
are within the skew tolerance of each other. Rule 2 needs fetch evidence: a caught-up fetch
of R for the partition on the leader's request log, and that log must keep logging (a
request after the commit). Rule 2 is not asked of a join whose accepted AlterPartition carried R's
registered broker epoch: the leader took that epoch from the fetch that caught R up (KIP-903), which
an incremental fetch session (KIP-227) may not name in the request log. One row per join (rule 1
preferred); broker_id = R.
Reads request-log FETCH traffic: :func:`carry` is what a nightly run keeps of it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.violations import CHECK_COLUMNS
from epoch_audit.gold.analysis.horizons import before_carry_horizons
from epoch_audit.gold.analysis.isr_joins import (
    caught_up_fetches_of,
    join_probes,
    joins_of,
    last_caught_up_fetches,
    last_high_watermark_fetches,
    probed_joins,
)
from epoch_audit.gold.analysis.keys import extreme_struct_by_key, literal_map
from epoch_audit.gold.analysis.violation_rows import registry_severity
from epoch_audit.gold.context import CheckContext
from epoch_audit.one_partition import read_once
from epoch_audit.silver.event_fields import is_no_error
from epoch_audit.silver.partition_timeline import KRAFT_PARTITION_TYPES

INVARIANT = "stale_broker_epoch_isr_join"


def carry(ctx: CheckContext) -> DataFrame:
    """Traffic (event_id) rule 2 still needs from before a nightly run's horizon
    (``epoch_audit.gold.carry``): every fetch a join's probes picked (last caught-up fetch, last one of
    the registered epoch, last one without an epoch), so every join keeps its answer; per (leader,
    replica, partition, topic, topic id) the last caught-up fetch, the last one without an epoch and
    the last one of each replica epoch a later join can still be registered under
    (:func:`_later_epoch_fetches`), for joins still to come; per (leader, replica, partition) the last
    fetch whose response named a high watermark (what an omitted partition's is filled from); per
    broker its last request-log line (``l_last``: the leader kept logging). The fetches and the probes
    are the check's own (``ctx.shared``). Every "last" is among the traffic before the next
    horizon (:func:`~epoch_audit.gold.analysis.horizons.before_carry_horizons`)."""
    key = ["f_cluster", "f_leader", "f_replica", "f_partition", "f_topic", "f_topic_id"]
    # Every "last" below is taken among the traffic before the next horizon: what lies after it is
    # read from bronze again, and a later probe's as-of over (carried + read) then finds what the
    # whole history's would (gold.analysis.horizons).
    fetches = before_carry_horizons(ctx, ctx.shared(caught_up_fetches_of), "f_cluster", "f_time")
    # one pass over the fetches: per key and replica epoch the last one and the first one's time
    last_fetches = extreme_struct_by_key(
        fetches, [*key, "f_be"], ["f_time", "f_event_id"], "_m",
        also=(F.min("f_time").alias("_first"),),
    )
    if ctx.carry_horizons:
        kept = _later_epoch_fetches(last_fetches, ctx.carry_horizons, ctx.config.max_clock_skew_ms)
        # the last caught-up fetch of each key (a probe's _F), whatever its epoch
        last_of_key = last_fetches.groupBy(*key).agg(F.max("_m").alias("_m"))
        last_fetches = kept.unionByName(last_of_key, allowMissingColumns=True)
    before_horizon = before_carry_horizons(ctx, ctx.events)
    last_lines = extreme_struct_by_key(
        before_horizon.where((F.col("log_kind") == "request") & F.col("event_time").isNotNull()),
        ["cluster_id", "broker_id"], ["event_time", "event_id"], "_m",
    )
    ids = (
        last_fetches.select(F.col("_m.f_event_id").alias("event_id"))
        .unionByName(last_lines.select(F.col("_m.event_id").alias("event_id")))
        .unionByName(last_high_watermark_fetches(before_horizon))
    )
    # Without partition records there is no join, so no probe picks a fetch (the probes window
    # every caught-up fetch all the same: skipped).
    if not set(KRAFT_PARTITION_TYPES) <= ctx.absent_types:
        probes = ctx.shared(join_probes)
        picked = probes.select(F.explode(F.array("_F.f_event_id", "_S.f_event_id", "_N.f_event_id")).alias("event_id"))
        ids = picked.unionByName(ids)
    return ids.where(F.col("event_id").isNotNull()).distinct()


def _later_epoch_fetches(last_fetches: DataFrame, horizons: Mapping[str, int], skew_ms: int) -> DataFrame:
    """``last_fetches`` (per key and replica epoch the last caught-up fetch, ``_m``, and the first
    one's time, ``_first``) without the epochs no join after the next horizon can be registered
    under: below the highest replica epoch the replica fetched with, anywhere in its cluster, more
    than the skew tolerance before the horizon.

    A fetch carries the epoch its broker registered with (KIP-903), so that registration came before
    the fetch; timed more than the skew before the horizon (the leader's clock), it came before any
    commit timed after it (the controller's), and broker epochs only grow: every later join of that
    replica is registered under that epoch or a newer one, and its probe's ``_S`` (the last fetch of
    the registered epoch) never asks for an older one. Fetches without an epoch are kept (their last
    is a probe's ``_N``); the last fetch of each key whatever its epoch (a probe's ``_F``) is added by
    the caller. With frequent broker incarnations this is most of the carry (the 30-night bench kept
    80k fetches of 758 epochs)."""
    settled_before = literal_map(horizons)[F.col("f_cluster")] - F.lit(skew_ms * 1000)
    settled = (
        last_fetches.where(F.col("f_be").isNotNull() & (F.unix_micros("_first") < settled_before))
        .groupBy("f_cluster", "f_replica")
        .agg(F.max("f_be").alias("_settled_be"))
    )
    return (
        last_fetches.join(settled, ["f_cluster", "f_replica"], "left")
        .where(F.col("f_be").isNull() | F.col("_settled_be").isNull() | (F.col("f_be") >= F.col("_settled_be")))
        .drop("_settled_be")
    )


def _accepted_alter_partitions(ctx: CheckContext, joins: DataFrame) -> DataFrame:
    """Joins with the AlterPartition the controller accepted for them and the broker epoch it carried for
    the replica (``_req_be``, -1 = not checked)."""
    alter_partitions = ctx.events.where(
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
    matched = joins.join(
        alter_partitions,
        (F.col("cluster_id") == F.col("a_cluster"))
        & (F.col("topic_id") == F.col("a_topic_id"))
        & (F.col("partition") == F.col("a_partition"))
        & (F.col("partition_epoch") == F.col("a_pe")),
    )
    requested_epoch = F.element_at("isr_broker_epochs", F.array_position("a_isr", F.col("replica")).cast("int"))
    return matched.where(F.array_contains("a_isr", F.col("replica"))).withColumn("_req_be", requested_epoch)


def _epoch_mismatch_joins(accepted: DataFrame) -> DataFrame:
    """Rule 1: joins whose accepted AlterPartition carried another broker epoch for the replica."""
    return accepted.where(
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


def _stale_catch_up_joins(ctx: CheckContext, joins: DataFrame, accepted: DataFrame) -> DataFrame:
    """Rule 2: joins whose last caught-up fetch came from the replica's previous incarnation.

    A join whose accepted AlterPartition carried the replica's registered broker epoch (not -1) is not
    asked: the leader puts in ``newIsrWithEpochs`` the ``replicaEpoch`` of the fetch that caught the
    replica up (KIP-903; ``Partition.prepareIsrExpand``), so the evidence came from the current
    incarnation, named or not in the request log (an incremental fetch session, KIP-227, leaves a
    caught-up partition out of both the request and the response). -1 is "not checked": rule 2 decides.
    """
    skew_s = ctx.config.max_clock_skew_ms / 1000.0
    vouched = accepted.where((F.col("_req_be") != -1) & (F.col("_req_be") == F.col("registered_be")))
    candidates = probed_joins(joins).join(
        vouched.select("_join_id", "replica").distinct(), ["_join_id", "replica"], "left_anti"
    )
    # every probed join's fetches (shared with the carry); the inner join below keeps the candidates'
    last_fetch = last_caught_up_fetches(ctx.shared(join_probes), skew_s)
    leader_logs = (
        ctx.events.where(F.col("log_kind") == "request")
        .groupBy(F.col("cluster_id").alias("l_cluster"), F.col("broker_id").alias("l_broker"))
        .agg(F.max("event_time").alias("l_last"))
    )
    stale = (
        candidates.join(last_fetch, ["_join_id", "replica"])
        .where(F.col("_has_new") == 0)
        .join(
            F.broadcast(leader_logs),
            (F.col("cluster_id") == F.col("l_cluster")) & (F.col("leader") == F.col("l_broker")),
        )
        .where(F.col("l_last") > F.col("event_time"))
    )
    fetch_time, fetch_epoch = F.col("_F.f_time"), F.col("_F.f_be")
    skew = F.expr(f"make_interval(0,0,0,0,0,0,{skew_s})")
    registered_at = F.col("registered_at_time")
    confirmed = (fetch_epoch.isNotNull() & (fetch_epoch != F.col("registered_be"))) | (
        fetch_epoch.isNull() & (fetch_time < registered_at - skew)
    )
    # a new-incarnation fetch timed within the skew after the commit may really precede it
    confirmed = confirmed & (F.coalesce(F.col("_has_new_skew"), F.lit(0)) == 0)
    return stale.select(
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
            F.coalesce(fetch_epoch.cast("string"), F.lit("unknown")),
            "registration_event_id",
            "registered_be",
        ).alias("_expl"),
    )


def check(ctx: CheckContext) -> DataFrame:
    """One row per ISR join that stands on a previous incarnation's evidence (rule 1 preferred)."""
    joins = ctx.shared(joins_of)  # read by both rules, rule 2 five times
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
    accepted = read_once(_accepted_alter_partitions(ctx, joins))
    both = _epoch_mismatch_joins(accepted).select(*cols).unionByName(
        _stale_catch_up_joins(ctx, joins, accepted).select(*cols)
    )
    by_rule = Window.partitionBy("cluster_id", "_join_id", "replica").orderBy("_rule")
    both = both.withColumn("_rn", F.row_number().over(by_rule)).where("_rn = 1")
    return both.select(
        F.lit(INVARIANT).alias("invariant"),
        registry_severity().alias("severity"),
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
