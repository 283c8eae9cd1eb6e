"""Who led which epoch, who voted for whom, and when brokers were fenced.

Shared by the leadership and offset checks (``epoch_leaders``), ``two_leaders_same_epoch``
(``vote_grants``), ``write_accepted_by_fenced_leader`` and the carry's anchor fingerprint
(``fence_markers``).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.gold.analysis.violation_rows import PARTITION_KEY
from epoch_audit.gold.context import CheckContext
from epoch_audit.silver.event_fields import rp_term

FENCE_TYPES = (
    "md_fence_broker",
    "md_unfence_broker",
    "md_broker_registration_change",
    "md_register_broker",
    "md_unregister_broker",
)
_GRANTED = r"vote_granted:\s*(1|true)\b"


def epoch_leaders(ctx: CheckContext) -> DataFrame:
    """Leader of each (cluster, topic, partition, LE): the controller timeline's first decision at
    that LE, else the first broker claim of it (its own "Leader ... starts at leader epoch" /
    Redpanda "became the leader" line, earliest by time). Small; broadcast it."""
    timeline_leaders = (
        ctx.silver["partition_timeline"]
        .filter((F.col("leader") >= 0) & (F.col("leader_epoch") >= 0))
        .groupBy(*PARTITION_KEY, "leader_epoch")
        .agg(F.min_by("leader", F.col("decision_seq")).alias("tl_leader"))
    )
    claims = (
        ctx.silver["broker_leader_epochs"]
        .filter(F.col("is_claim"))
        .groupBy(*PARTITION_KEY, "leader_epoch")
        .agg(
            F.min_by(
                "broker_id",
                F.struct(F.col("event_time").isNull().alias("n"), F.col("event_time"), F.col("event_id")),
            ).alias("bk_leader")
        )
    )
    return timeline_leaders.join(claims, [*PARTITION_KEY, "leader_epoch"], "full").select(
        *PARTITION_KEY, "leader_epoch", F.coalesce("tl_leader", "bk_leader").alias("epoch_leader")
    )


def vote_grants(events: DataFrame) -> DataFrame:
    """Votes granted in a term (Raft: a node that voted for Y in term e cannot win e itself).
    The candidate logs "vote reply from X - {term:e, ..., vote_granted: 1}" (rp_vote_reply:
    replica_id = voter, broker_id = candidate), the voter may log "vote reply: {term:e,
    target_node..., vote_granted: 1}" (rp_vote_granted: replica_id = candidate). Pre-votes are not
    votes."""
    event_type = F.col("event_type")
    own = F.coalesce("broker_id", "host_id")
    granted = (F.lower(F.col("details")["vote_granted"]).isin("true", "1")) | F.col("raw").rlike(_GRANTED)
    prevote = F.coalesce(F.lower(F.col("details")["prevote"]) == "true", F.lit(False))
    return (
        events.filter(event_type.isin("rp_vote_reply", "rp_vote_granted") & F.col("replica_id").isNotNull())
        .withColumn("leader_epoch", F.coalesce(F.col("leader_epoch"), rp_term()))
        .filter(F.col("leader_epoch").isNotNull() & F.coalesce(granted, F.lit(False)) & ~prevote)
        .select(
            *PARTITION_KEY,
            "leader_epoch",
            F.when(event_type == "rp_vote_reply", F.col("replica_id")).otherwise(own).alias("voter"),
            F.when(event_type == "rp_vote_reply", own).otherwise(F.col("replica_id")).alias("candidate"),
            F.col("event_id").alias("grant_event"),
        )
    )


def fence_markers(events: DataFrame) -> DataFrame:
    """Per (cluster, broker) fenced / unfenced state changes from the KRaft metadata log: Fence /
    Unfence records, registration changes carrying a ``fenced`` flag, registrations (fenced unless
    the record says otherwise) and unregistrations (fenced)."""
    event_type = F.col("event_type")
    kind = (
        F.when(event_type == "md_fence_broker", F.lit("fence"))
        .when(event_type == "md_unfence_broker", F.lit("unfence"))
        .when(event_type == "md_unregister_broker", F.lit("fence"))
        # A registration starts fenced unless the record says otherwise (RegisterBrokerRecord).
        .when((event_type == "md_register_broker") & F.col("fenced").isNull(), F.lit("fence"))
        .when(F.col("fenced") == F.lit(True), F.lit("fence"))
        .when(F.col("fenced") == F.lit(False), F.lit("unfence"))
    )
    return (
        events.filter(event_type.isin(*FENCE_TYPES))
        .withColumn("kind", kind)
        .filter(F.col("kind").isNotNull() & F.col("broker_id").isNotNull() & F.col("event_time").isNotNull())
        .select("cluster_id", "broker_id", "kind", "event_time", "metadata_offset", "event_id")
    )
