"""``stale_stop_replica_accepted`` (KIP-570): a broker must refuse a StopReplica partition state
whose leader epoch is older than its current leader epoch for that partition
(ReplicaManager.stopReplicas).

Current LE = the LE of the last LeaderAndIsr state the broker accepted for the partition
(Leader / Follower start line, or request-log LEADER_AND_ISR with error NONE) in its own log
order; an accepted StopReplica with delete=true removes the replica, so the broker holds no
epoch for it afterwards (a later stop of a replica it no longer hosts is always accepted).
Request LE -2 (topic being deleted) and -1 (no epoch: v0-2, or no leadership data) bypass
the check; an equal epoch is never a violation (refused on 2.6.0-3.4.0, accepted from 3.4.1).
Acceptance evidence: :mod:`epoch_audit.gold.analysis.controller_requests`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.ordering import with_own_order
from epoch_audit.contracts.violations import CHECK_COLUMNS
from epoch_audit.gold.analysis.controller_requests import BECOME, PARTITION_KEY, own_position, stop_replica_acceptances
from epoch_audit.gold.analysis.keys import with_keys_of
from epoch_audit.gold.analysis.violation_rows import registry_severity
from epoch_audit.gold.context import CheckContext
from epoch_audit.silver.event_fields import is_no_error

INVARIANT = "stale_stop_replica_accepted"


def check(ctx: CheckContext) -> DataFrame:
    """One row per accepted StopReplica partition state below the broker's current LE."""
    # read three times below, and by stale_controller_epoch_accepted
    stops = ctx.shared(stop_replica_acceptances, checks=2)
    ordered = with_own_order(ctx.events, (*BECOME, "request_leader_and_isr")).withColumn("_pos", own_position())
    key = PARTITION_KEY
    states = ordered.where(
        F.col("event_type").isin(*BECOME)
        | ((F.col("event_type") == "request_leader_and_isr") & is_no_error(F.col("error")))
    ).where(F.col("leader_epoch").isNotNull())
    # Answers are read on accepted stops only: the states of replicas that accepted none are not
    # windowed (a KRaft or Redpanda cluster accepts no StopReplica at all).
    states = with_keys_of(states, stops, key)
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
    before = Window.partitionBy(*key).orderBy("_pos", "_k").rowsBetween(Window.unboundedPreceding, -1)
    rows = rows.withColumn("_cur", F.last("_state", ignorenulls=True).over(before)).where("_k = 1")
    requested, current = F.col("leader_epoch"), F.col("_cur.leader_epoch")
    stale = rows.where((requested >= 0) & current.isNotNull() & (current > requested))
    return stale.select(
        F.lit(INVARIANT).alias("invariant"),
        registry_severity().alias("severity"),
        F.lit("confirmed").alias("confidence"),
        "cluster_id",
        "topic",
        "partition",
        "broker_id",
        F.col("leader_epoch").cast("int").alias("leader_epoch"),
        current.cast("int").alias("expected_epoch"),
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
            current,
            F.col("_cur.event_id"),
        ).alias("explanation"),
    ).select(*CHECK_COLUMNS)
