"""Which LeaderAndIsr / StopReplica partition states a ZK-mode broker accepted.

Acceptance evidence, per (broker, partition, controller id, controller epoch, correlation id):
- request log: STOP_REPLICA / LEADER_AND_ISR with partition error NONE (any other error there
  is a refusal and vetoes the TRACE chain);
- TRACE chain: "Received StopReplica ..." with no "Ignoring StopReplica ..." line for that
  partition and correlation id (nor a whole-request stale-controller refusal), followed, before
  the partition's next controller request, by the replica being stopped ("Removed fetcher",
  log renamed / deleted); "Received LeaderAndIsr ..." with no refusal, followed by that
  partition's Leader / Follower start line at the requested LE.

Read by ``stale_stop_replica_accepted`` and ``stale_controller_epoch_accepted``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.ordering import with_own_order
from epoch_audit.gold.analysis.keys import with_keys_of
from epoch_audit.gold.context import CheckContext
from epoch_audit.silver.event_fields import is_no_error

STOP_EVIDENCE = ("fetcher_removed", "log_deletion_scheduled", "log_deleted")
BECOME = ("become_leader", "become_follower")
# Per-partition events of a broker that bound a request's effects (the next request for it).
PARTITION_EVENTS = ("stop_replica_received", "leader_and_isr_received", *BECOME, *STOP_EVIDENCE, "fetcher_added")
STOP_PARTITION_REFUSALS = ("stop_replica_fenced", "stop_replica_equal_epoch_refused", "stop_replica_storage_error")
LAIR_PARTITION_REFUSALS = ("leader_and_isr_stale_epoch", "leader_and_isr_equal_epoch", "leader_and_isr_other_refusal")
UNIT_KEY = ["cluster_id", "broker_id", "topic", "partition", "controller_id", "controller_epoch", "correlation_id"]
REQ_KEY = ["cluster_id", "broker_id", "controller_id", "controller_epoch", "correlation_id"]
PARTITION_KEY = ["cluster_id", "broker_id", "topic", "partition"]  # a broker's replica of a partition
# What an acceptance is read from (its TRACE chain's first line, or its request-log line): without
# one of them there is no accepted StopReplica / LeaderAndIsr state (the registry's ``needs``).
STOP_REPLICA_ACCEPTANCE_TYPES = ("stop_replica_received", "request_stop_replica")
LEADER_AND_ISR_ACCEPTANCE_TYPES = ("leader_and_isr_received", "request_leader_and_isr")


def own_position() -> Column:
    """Comparable position in the broker's own log order (after with_own_order)."""
    return F.struct("_own_time", "file_order", "file_id", "line_number", "sub_index", "event_id")


def _without_refused(events: DataFrame, received: DataFrame, whole: str, per_partition: tuple[str, ...]) -> DataFrame:
    """Drop received rows that a refusal line names (whole request, or this partition)."""
    whole_refusals = events.where(F.col("event_type") == whole).select(*REQ_KEY).dropDuplicates()
    partition_refusals = events.where(F.col("event_type").isin(*per_partition)).select(*UNIT_KEY).dropDuplicates()
    return received.join(whole_refusals, REQ_KEY, "left_anti").join(partition_refusals, UNIT_KEY, "left_anti")


def acceptances(events: DataFrame, kind: str) -> DataFrame:
    """Accepted StopReplica (kind="stop") or LeaderAndIsr (kind="lair") partition states.

    One row per UNIT_KEY with leader_epoch (requested LE), delete_partition, event_time and
    ``_pos`` of its first event, ``first_event_id`` and ``evidence`` (all proving event ids).
    """
    if kind == "stop":
        trace_type, request_type = STOP_REPLICA_ACCEPTANCE_TYPES
        whole, per_partition, follow = "stop_replica_stale_controller", STOP_PARTITION_REFUSALS, STOP_EVIDENCE
    else:
        trace_type, request_type = LEADER_AND_ISR_ACCEPTANCE_TYPES
        whole, per_partition, follow = "leader_and_isr_stale_controller", LAIR_PARTITION_REFUSALS, BECOME
    ordered = with_own_order(events, (*PARTITION_EVENTS, whole, *per_partition, request_type)).withColumn(
        "_pos", own_position()
    )

    # Only a partition for which the broker received a request of this kind has a chain to follow:
    # the window below runs over those partitions' lines alone. A KRaft or Redpanda cluster receives
    # none (its brokers follow the metadata log, not LeaderAndIsr / StopReplica), and every leader
    # and follower start line of its history went through the window for nothing.
    partition_rows = with_keys_of(
        ordered.where(F.col("event_type").isin(*PARTITION_EVENTS)),
        ordered.where(F.col("event_type") == trace_type),
        PARTITION_KEY,
    )
    # Rows after each one, read backwards: an unbounded-following frame is recomputed per row
    # by Spark (quadratic); a running frame over the reversed order is linear.
    after = Window.partitionBy(*PARTITION_KEY).orderBy(F.col("_pos").desc()).rowsBetween(Window.unboundedPreceding, -1)
    is_request = F.col("event_type").isin("stop_replica_received", "leader_and_isr_received", *BECOME)
    if kind == "lair":
        # the start line is the effect itself; the bound is the next request
        is_request = F.col("event_type").isin("stop_replica_received", "leader_and_isr_received")
    next_effect = F.last(
        F.when(F.col("event_type").isin(*follow), F.struct("_pos", "leader_epoch", "event_id")), ignorenulls=True
    ).over(after)
    next_request = F.last(F.when(is_request, F.col("_pos")), ignorenulls=True).over(after)
    chain = (
        partition_rows.withColumn("_eff", next_effect)
        .withColumn("_nreq", next_request)
        .where(F.col("event_type") == trace_type)
    )
    effective = F.col("_eff").isNotNull() & (F.col("_nreq").isNull() | (F.col("_eff._pos") < F.col("_nreq")))
    if kind == "lair":
        effective = effective & (F.col("_eff.leader_epoch") == F.col("leader_epoch"))
    chain = _without_refused(ordered, chain.where(effective), whole, per_partition).select(
        *UNIT_KEY,
        "leader_epoch",
        "delete_partition",
        "event_time",
        "_pos",
        F.array("event_id", "_eff.event_id").alias("_ev"),
        F.lit(True).alias("_ok"),
    )
    requests = ordered.where(F.col("event_type") == request_type).select(
        *UNIT_KEY,
        "leader_epoch",
        "delete_partition",
        "event_time",
        "_pos",
        F.array("event_id").alias("_ev"),
        is_no_error(F.col("error")).alias("_ok"),
    )
    refused_requests = requests.where(~F.col("_ok")).select(*UNIT_KEY).dropDuplicates()
    units = (
        chain.join(refused_requests, UNIT_KEY, "left_anti")
        .unionByName(requests.where(F.col("_ok")))
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


def stop_replica_acceptances(ctx: CheckContext) -> DataFrame:
    """The accepted StopReplica partition states of ``ctx.events`` (:func:`acceptances`), for
    ``ctx.shared``: both checks that read them get one computation."""
    return acceptances(ctx.events, "stop")
