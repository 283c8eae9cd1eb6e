"""``stale_controller_epoch_accepted`` (controller fencing): a broker must refuse LeaderAndIsr /
StopReplica requests whose controller epoch is below the highest controller epoch it has seen
(ReplicaManager.controllerEpoch, raised by LeaderAndIsr, StopReplica and UpdateMetadata).

The request's controller epoch (``from controller <id> epoch <n>``, request-log top-level
``controllerEpoch``; never a partition state's controllerEpoch) is below the highest
controller epoch the same broker had already seen, in its own log order, in any
LeaderAndIsr / StopReplica / UpdateMetadata it processed (silver.broker_controller_views).
One row per partition whose state the broker applied from the stale request; broker_id = that
broker; leader_epoch = the leader epoch of that partition state (the request LE: the epoch at
issue, per the output contract), expected_epoch = the highest controller epoch the broker had
already seen; the explanation names both controller epochs. Acceptance evidence:
:mod:`epoch_audit.gold.analysis.controller_requests`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.contracts.violations import CHECK_COLUMNS
from epoch_audit.gold.analysis.controller_requests import acceptances, stop_replica_acceptances
from epoch_audit.gold.analysis.violation_rows import registry_severity
from epoch_audit.gold.context import CheckContext

INVARIANT = "stale_controller_epoch_accepted"


def check(ctx: CheckContext) -> DataFrame:
    """One row per partition state a broker applied from a controller epoch below one it had seen."""
    views = ctx.silver["broker_controller_views"].select(
        F.col("event_id").alias("first_event_id"), "prior_max_controller_epoch", "prior_max_event_id"
    )
    units = (
        ctx.shared(stop_replica_acceptances, checks=2)  # stale_stop_replica_accepted's too
        .withColumn("_what", F.lit("StopReplica"))
        .unionByName(acceptances(ctx.events, "lair").withColumn("_what", F.lit("LeaderAndIsr")))
    )
    stale = units.join(views, "first_event_id").where(F.col("controller_epoch") < F.col("prior_max_controller_epoch"))
    return stale.select(
        F.lit(INVARIANT).alias("invariant"),
        registry_severity().alias("severity"),
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
