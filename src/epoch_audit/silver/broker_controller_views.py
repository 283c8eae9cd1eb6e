"""silver.broker_controller_views: per ZK broker, the highest controller epoch it has seen."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.ordering import own_order, with_own_order

# Requests a ZK broker processes that carry the REQUEST's controller epoch (raising its known CE),
# and refusal lines that state the broker's known CE ("Latest known controller epoch is N").
# A per-partition refusal of an epoch check (L4-L7, S4-S6) or the L11/L12 "Stopped fetchers" line is
# written after the request passed its controller-epoch check: the broker processed it.
CONTROLLER_REQUEST_TYPES = (
    "leader_and_isr_received",
    "leader_and_isr_fetchers_stopped",
    "leader_and_isr_stale_epoch",
    "leader_and_isr_equal_epoch",
    "leader_and_isr_other_refusal",
    "stop_replica_fenced",
    "stop_replica_equal_epoch_refused",
    "stop_replica_storage_error",
    "stop_replica_received",
    "update_metadata_applied",
    "update_metadata_partition_deleted",
    "request_leader_and_isr",
    "request_stop_replica",
    "request_update_metadata",
)
STALE_CONTROLLER_REFUSAL_TYPES = (
    "leader_and_isr_stale_controller",
    "stop_replica_stale_controller",
    "update_metadata_stale_controller",
)
# Whole-request refusals before the broker looks at the request's controller epoch.
UNPROCESSED_REQUEST_ERRORS = ("STALE_BROKER_EPOCH", "77")


CONTROLLER_VIEW_COLUMNS = [
    "cluster_id",
    "broker_id",
    "event_id",
    "event_type",
    "topic",
    "partition",
    "correlation_id",
    "controller_id",
    "controller_epoch",
    "seen_controller_epoch",
    "event_time",
    "_own_time",
    "file_order",
    "file_id",
    "line_number",
    "sub_index",
    "prior_max_controller_epoch",
    "prior_max_event_id",
    "max_controller_epoch",
]


def broker_controller_views(events: DataFrame, config: object = None) -> DataFrame:
    """silver.broker_controller_views: per (cluster, broker) the highest CE seen so far.

    ZK brokers raise their known controller epoch to the request's controller epoch on every
    LeaderAndIsr, StopReplica and UpdateMetadata request they process (ReplicaManager's
    ``controllerEpoch`` field, §1.5); a refusal line ("Latest known controller epoch is N")
    states the known CE directly. One row per such event in the broker's own log order:
      seen_controller_epoch        the CE this event shows the broker knew (request CE, or the
                                   known CE of a refusal)
      prior_max_controller_epoch   the highest CE seen strictly before this event (own order)
      prior_max_event_id           an event that showed that CE (evidence)
      max_controller_epoch         running max including this event
    plus the event's identity, request fields and own-order columns (_own_time, file_order,
    file_id, line_number, sub_index). Only the REQUEST's controller epoch counts, never a
    partition state's controllerEpoch, and only of a request the broker processed: one refused
    with STALE_BROKER_EPOCH (request log) never raised it.
    """
    del config
    seen = F.when(F.col("event_type").isin(*STALE_CONTROLLER_REFUSAL_TYPES), F.col("known_controller_epoch")).otherwise(
        F.col("controller_epoch")
    )
    ev = (
        with_own_order(events, CONTROLLER_REQUEST_TYPES + STALE_CONTROLLER_REFUSAL_TYPES)
        .where(F.col("broker_id").isNotNull())
        # refused before processing (the broker's own epoch is stale): its CE was never taken
        .where(~F.coalesce(F.col("error").isin(*UNPROCESSED_REQUEST_ERRORS), F.lit(False)))
        .withColumn("seen_controller_epoch", seen)
        .where(F.col("seen_controller_epoch").isNotNull())
    )
    key = ["cluster_id", "broker_id"]
    order = [*own_order(), F.col("event_id")]
    w_prev = Window.partitionBy(*key).orderBy(*order).rowsBetween(Window.unboundedPreceding, -1)
    w_incl = Window.partitionBy(*key).orderBy(*order).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    best = F.max(F.struct(F.col("seen_controller_epoch"), F.col("event_id"))).over(w_prev)
    ev = ev.withColumn("_best", best)
    return ev.select(
        *[
            c
            for c in CONTROLLER_VIEW_COLUMNS
            if c not in ("prior_max_controller_epoch", "prior_max_event_id", "max_controller_epoch")
        ],
        F.col("_best.seen_controller_epoch").alias("prior_max_controller_epoch"),
        F.col("_best.event_id").alias("prior_max_event_id"),
        F.max("seen_controller_epoch").over(w_incl).alias("max_controller_epoch"),
    ).select(*CONTROLLER_VIEW_COLUMNS)
