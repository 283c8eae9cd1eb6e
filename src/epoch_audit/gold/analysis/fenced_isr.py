"""Fenced or shutting-down replicas left in the ISR at a commit point (KRaft, KIP-903).

One analysis for two ids: ``fenced_replica_in_isr`` (the ISR has several members) and
``last_replica_fenced_in_isr`` (the ISR has exactly one member: KIP-903 "last replica").
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.violations import CHECK_COLUMNS
from epoch_audit.gold.analysis.kraft_state import INF, holds_at_some_commit, kraft_timeline_and_registrations
from epoch_audit.gold.analysis.violation_rows import registry_severity
from epoch_audit.gold.context import CheckContext

FENCED_REPLICA = "fenced_replica_in_isr"
LAST_REPLICA = "last_replica_fenced_in_isr"


def fenced_replicas_in_isr(ctx: CheckContext, invariant: str) -> DataFrame:
    """Rows of ``invariant`` (one of the two ids above), CHECK_COLUMNS: the episodes both ids read
    (:func:`fenced_episodes`, computed once for the two checks: at 10^7 lines the range join under
    them was 15–30 s of task time for each)."""
    return ctx.shared(fenced_episodes, checks=2).where(F.col("invariant") == invariant).select(*CHECK_COLUMNS)


def fenced_episodes(ctx: CheckContext) -> DataFrame:
    """Rows of both ids (CHECK_COLUMNS), the ``invariant`` column telling which.

    The state at a commit point is the state after the whole batch (or transaction), so a batch
    that fences a broker and removes it from every ISR is clean. One row per partition and
    replica episode (a maximal run of commit points in which the replica stays in the ISR while
    fenced / in controlled shutdown) of each id; broker_id = that replica.
    """
    timeline, registrations = kraft_timeline_and_registrations(ctx)
    isr_members = timeline.where(F.col("isr").isNotNull() & holds_at_some_commit("")).select(
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
    fenced = (
        registrations.where((F.col("fenced") == F.lit(True)) | (F.col("in_controlled_shutdown") == F.lit(True)))
        .where(holds_at_some_commit(""))
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
    overlaps = isr_members.join(
        fenced,
        (F.col("cluster_id") == F.col("b_cluster"))
        & (F.col("replica") == F.col("replica_b"))
        & (F.greatest("p_from", "b_from") < F.least("p_to", "b_to")),
    )
    overlaps = overlaps.withColumn("s", F.greatest("p_from", "b_from")).withColumn("e", F.least("p_to", "b_to"))
    overlaps = overlaps.withColumn(
        "invariant",
        F.when(F.col("isr_size") == 1, F.lit(LAST_REPLICA)).otherwise(F.lit(FENCED_REPLICA)),
    )
    key = ["cluster_id", "topic_id", "topic", "partition", "replica", "invariant"]
    by_start = Window.partitionBy(*key).orderBy("s")
    overlaps = overlaps.withColumn("_prev_e", F.max("e").over(by_start.rowsBetween(Window.unboundedPreceding, -1)))
    # the first overlap of each episode
    overlaps = overlaps.where(F.col("_prev_e").isNull() | (F.col("s") > F.col("_prev_e")))
    state = F.when(F.col("fenced") == F.lit(True), F.lit("fenced")).otherwise(F.lit("in controlled shutdown"))
    return overlaps.select(
        "invariant",
        registry_severity().alias("severity"),
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
