"""KIP-570 StopReplica fencing and the controller-epoch fence (ZK-mode brokers).

``stale_stop_replica_accepted``: a broker must refuse a StopReplica partition state whose leader
epoch is older than its current leader epoch for that partition (KIP-570, ReplicaManager.
stopReplicas). ``stale_controller_epoch_accepted``: a broker must refuse LeaderAndIsr /
StopReplica requests whose controller epoch is below the highest controller epoch it has seen
(ReplicaManager.controllerEpoch, raised by LeaderAndIsr, StopReplica and UpdateMetadata).

Acceptance evidence, per (broker, partition, controller id, controller epoch, correlation id):
- request log: STOP_REPLICA / LEADER_AND_ISR with partition error NONE (any other error there
  is a refusal and vetoes the TRACE chain);
- TRACE chain: "Received StopReplica ..." with no "Ignoring StopReplica ..." line for that
  partition and correlation id (nor a whole-request stale-controller refusal), followed, before
  the partition's next controller request, by the replica being stopped ("Removed fetcher",
  log renamed / deleted); "Received LeaderAndIsr ..." with no refusal, followed by that
  partition's Leader / Follower start line at the requested LE.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.ordering import with_own_order
from epoch_audit.gold.base import CHECK_COLUMNS, CheckContext
from epoch_audit.silver.broker_controller_views import broker_controller_views
from epoch_audit.silver.event_fields import is_no_error

STOP_EVIDENCE = ("fetcher_removed", "log_deletion_scheduled", "log_deleted")
BECOME = ("become_leader", "become_follower")
# Per-partition events of a broker that bound a request's effects (the next request for it).
PARTITION_EVENTS = ("stop_replica_received", "leader_and_isr_received", *BECOME, *STOP_EVIDENCE, "fetcher_added")
STOP_PARTITION_REFUSALS = ("stop_replica_fenced", "stop_replica_equal_epoch_refused", "stop_replica_storage_error")
LAIR_PARTITION_REFUSALS = ("leader_and_isr_stale_epoch", "leader_and_isr_equal_epoch", "leader_and_isr_other_refusal")
UNIT_KEY = ["cluster_id", "broker_id", "topic", "partition", "controller_id", "controller_epoch", "correlation_id"]
REQ_KEY = ["cluster_id", "broker_id", "controller_id", "controller_epoch", "correlation_id"]


def _pos() -> Column:
    """Comparable position in the broker's own log order (after with_own_order)."""
    return F.struct("_own_time", "file_order", "file_id", "line_number", "sub_index", "event_id")


def _refused(ev: DataFrame, received: DataFrame, whole: str, per_partition: tuple[str, ...]) -> DataFrame:
    """Drop received rows that a refusal line names (whole request, or this partition)."""
    w_ref = ev.where(F.col("event_type") == whole).select(*REQ_KEY).dropDuplicates()
    p_ref = ev.where(F.col("event_type").isin(*per_partition)).select(*UNIT_KEY).dropDuplicates()
    return received.join(w_ref, REQ_KEY, "left_anti").join(p_ref, UNIT_KEY, "left_anti")


def acceptances(events: DataFrame, kind: str) -> DataFrame:
    """Accepted StopReplica (kind="stop") or LeaderAndIsr (kind="lair") partition states.

    One row per UNIT_KEY with leader_epoch (requested LE), delete_partition, event_time and
    ``_pos`` of its first event, ``first_event_id`` and ``evidence`` (all proving event ids).
    """
    if kind == "stop":
        trace_t, req_t = "stop_replica_received", "request_stop_replica"
        whole, per_p, follow = "stop_replica_stale_controller", STOP_PARTITION_REFUSALS, STOP_EVIDENCE
    else:
        trace_t, req_t = "leader_and_isr_received", "request_leader_and_isr"
        whole, per_p, follow = "leader_and_isr_stale_controller", LAIR_PARTITION_REFUSALS, BECOME
    ev = with_own_order(events, (*PARTITION_EVENTS, whole, *per_p, req_t)).withColumn("_pos", _pos())

    part = ev.where(F.col("event_type").isin(*PARTITION_EVENTS))
    # Rows after each one, read backwards: an unbounded-following frame is recomputed per row
    # by Spark (quadratic); a running frame over the reversed order is linear.
    w = (
        Window.partitionBy("cluster_id", "broker_id", "topic", "partition")
        .orderBy(F.col("_pos").desc())
        .rowsBetween(Window.unboundedPreceding, -1)
    )
    is_req = F.col("event_type").isin("stop_replica_received", "leader_and_isr_received", *BECOME)
    if kind == "lair":
        # the start line is the effect itself; the bound is the next request
        is_req = F.col("event_type").isin("stop_replica_received", "leader_and_isr_received")
    nxt_effect = F.last(
        F.when(F.col("event_type").isin(*follow), F.struct("_pos", "leader_epoch", "event_id")), ignorenulls=True
    ).over(w)
    nxt_req = F.last(F.when(is_req, F.col("_pos")), ignorenulls=True).over(w)
    chain = part.withColumn("_eff", nxt_effect).withColumn("_nreq", nxt_req).where(F.col("event_type") == trace_t)
    ok = F.col("_eff").isNotNull() & (F.col("_nreq").isNull() | (F.col("_eff._pos") < F.col("_nreq")))
    if kind == "lair":
        ok = ok & (F.col("_eff.leader_epoch") == F.col("leader_epoch"))
    chain = _refused(ev, chain.where(ok), whole, per_p).select(
        *UNIT_KEY,
        "leader_epoch",
        "delete_partition",
        "event_time",
        "_pos",
        F.array("event_id", "_eff.event_id").alias("_ev"),
        F.lit(True).alias("_ok"),
    )
    req = ev.where(F.col("event_type") == req_t).select(
        *UNIT_KEY,
        "leader_epoch",
        "delete_partition",
        "event_time",
        "_pos",
        F.array("event_id").alias("_ev"),
        is_no_error(F.col("error")).alias("_ok"),
    )
    req_refused = req.where(~F.col("_ok")).select(*UNIT_KEY).dropDuplicates()
    units = (
        chain.join(req_refused, UNIT_KEY, "left_anti")
        .unionByName(req.where(F.col("_ok")))
        .where(F.col("topic").isNotNull())
    )
    first = F.min(F.struct("_pos", "leader_epoch", "delete_partition", "event_time"))
    return (
        units.groupBy(*UNIT_KEY)
        .agg(first.alias("_f"), F.array_sort(F.array_distinct(F.flatten(F.collect_list("_ev")))).alias("evidence"))
        .select(
            *UNIT_KEY,
            F.col("_f.leader_epoch").alias("leader_epoch"),
            F.col("_f.delete_partition").alias("delete_partition"),
            F.col("_f.event_time").alias("event_time"),
            F.col("_f._pos").alias("_pos"),
            F.col("_f._pos.event_id").alias("first_event_id"),
            "evidence",
        )
    )


def stale_stop_replica_accepted(ctx: CheckContext) -> DataFrame:
    """KIP-570: a broker accepted a StopReplica whose leader epoch is below its current one.

    Current LE = the LE of the last LeaderAndIsr state the broker accepted for the partition
    (Leader / Follower start line, or request-log LEADER_AND_ISR with error NONE) in its own log
    order; an accepted StopReplica with delete=true removes the replica, so the broker holds no
    epoch for it afterwards (a later stop of a replica it no longer hosts is always accepted).
    Request LE -2 (topic being deleted) and -1 (no epoch: v0-2, or no leadership data) bypass
    the check; an equal epoch is never a violation (refused on 2.6.0-3.4.0, accepted from 3.4.1).
    """
    stops = acceptances(ctx.events, "stop")
    ev = with_own_order(ctx.events, (*BECOME, "request_leader_and_isr")).withColumn("_pos", _pos())
    states = ev.where(
        F.col("event_type").isin(*BECOME)
        | ((F.col("event_type") == "request_leader_and_isr") & is_no_error(F.col("error")))
    ).where(F.col("leader_epoch").isNotNull())
    key = ["cluster_id", "broker_id", "topic", "partition"]
    rows = (
        states.select(*key, "_pos", F.struct("leader_epoch", "event_id").alias("_state"), F.lit(0).alias("_k"))
        .unionByName(
            stops.where(F.col("delete_partition") == F.lit(True)).select(
                *key,
                "_pos",
                # a deleted replica holds no epoch: a reset marker
                F.struct(
                    F.lit(None).cast("int").alias("leader_epoch"), F.lit(None).cast("string").alias("event_id")
                ).alias("_state"),
                # after the stop itself: its own reset must not hide the epoch it was checked against
                F.lit(2).alias("_k"),
            ),
            allowMissingColumns=True,
        )
        .unionByName(stops.withColumn("_k", F.lit(1)), allowMissingColumns=True)
    )
    w = Window.partitionBy(*key).orderBy("_pos", "_k").rowsBetween(Window.unboundedPreceding, -1)
    rows = rows.withColumn("_cur", F.last("_state", ignorenulls=True).over(w)).where("_k = 1")
    e, cur = F.col("leader_epoch"), F.col("_cur.leader_epoch")
    bad = rows.where((e >= 0) & cur.isNotNull() & (cur > e))
    return bad.select(
        F.lit("stale_stop_replica_accepted").alias("invariant"),
        F.lit("error").alias("severity"),
        F.lit("confirmed").alias("confidence"),
        "cluster_id",
        "topic",
        "partition",
        "broker_id",
        F.col("leader_epoch").cast("int").alias("leader_epoch"),
        cur.cast("int").alias("expected_epoch"),
        "event_time",
        F.array_sort(F.array_distinct(F.concat("evidence", F.array(F.col("_cur.event_id"))))).alias("evidence"),
        F.format_string(
            "Broker %d accepted StopReplica for %s-%d with leader epoch %d (controller %s, epoch %s, correlation id "
            "%s) while its current leader epoch was %d from accepted LeaderAndIsr state %s.",
            "broker_id",
            "topic",
            "partition",
            "leader_epoch",
            F.coalesce(F.col("controller_id").cast("string"), F.lit("?")),
            F.coalesce(F.col("controller_epoch").cast("string"), F.lit("?")),
            F.coalesce(F.col("correlation_id").cast("string"), F.lit("?")),
            cur,
            F.col("_cur.event_id"),
        ).alias("explanation"),
    ).select(*CHECK_COLUMNS)


def stale_controller_epoch_accepted(ctx: CheckContext) -> DataFrame:
    """Controller fencing: a broker applied a LeaderAndIsr / StopReplica from a stale controller.

    The request's controller epoch (``from controller <id> epoch <n>``, request-log top-level
    ``controllerEpoch``; never a partition state's controllerEpoch) is below the highest
    controller epoch the same broker had already seen, in its own log order, in any
    LeaderAndIsr / StopReplica / UpdateMetadata it processed (silver.broker_controller_views).
    One row per partition whose state the broker applied from the stale request; broker_id = that
    broker; leader_epoch = the leader epoch of that partition state (the request LE: the epoch at
    issue, per the output contract), expected_epoch = the highest controller epoch the broker had
    already seen; the explanation names both controller epochs.
    """
    views = ctx.silver.get("broker_controller_views")
    if views is None:
        views = broker_controller_views(ctx.events, ctx.config)
    views = views.select(F.col("event_id").alias("first_event_id"), "prior_max_controller_epoch", "prior_max_event_id")
    units = (
        acceptances(ctx.events, "stop")
        .withColumn("_what", F.lit("StopReplica"))
        .unionByName(acceptances(ctx.events, "lair").withColumn("_what", F.lit("LeaderAndIsr")))
    )
    bad = units.join(views, "first_event_id").where(F.col("controller_epoch") < F.col("prior_max_controller_epoch"))
    return bad.select(
        F.lit("stale_controller_epoch_accepted").alias("invariant"),
        F.lit("error").alias("severity"),
        F.lit("confirmed").alias("confidence"),
        "cluster_id",
        "topic",
        "partition",
        "broker_id",
        F.col("leader_epoch").cast("int").alias("leader_epoch"),
        F.col("prior_max_controller_epoch").cast("int").alias("expected_epoch"),
        "event_time",
        F.array_sort(F.array_distinct(F.concat("evidence", F.array("prior_max_event_id")))).alias("evidence"),
        F.format_string(
            "Broker %d applied %s for %s-%d (leader epoch %s) from controller %s with controller epoch %d "
            "(correlation id %s) after it had already seen controller epoch %d in event %s.",
            "broker_id",
            "_what",
            "topic",
            "partition",
            F.coalesce(F.col("leader_epoch").cast("string"), F.lit("?")),
            F.coalesce(F.col("controller_id").cast("string"), F.lit("?")),
            "controller_epoch",
            F.coalesce(F.col("correlation_id").cast("string"), F.lit("?")),
            "prior_max_controller_epoch",
            "prior_max_event_id",
        ).alias("explanation"),
    ).select(*CHECK_COLUMNS)
