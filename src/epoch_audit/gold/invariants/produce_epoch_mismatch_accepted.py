"""``produce_epoch_mismatch_accepted``: where a PRODUCE carries a request-level
CurrentLeaderEpoch (systems implementing KIP-359; Apache Kafka never shipped it), an append that
succeeded must have matched the leader's epoch.

The leader's epoch is the one the line states (``current_leader_epoch``), else the last LE the
broker held for the partition at or before the request (same host clock). No held LE known:
nothing is reported. Reads request-log PRODUCE traffic: :func:`carry` is what a nightly run
keeps of it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.gold.analysis.violation_rows import PARTITION_KEY, to_check
from epoch_audit.gold.context import CheckContext
from epoch_audit.silver.event_fields import is_ok

INVARIANT = "produce_epoch_mismatch_accepted"


def mismatched_produces(ctx: CheckContext) -> DataFrame:
    """OK produces whose stated epoch differs from the epoch the broker held (``expected``): what the
    check reports and its carry keeps (``ctx.shared``: one sort of every produce for both)."""
    produces = (
        ctx.events.filter((F.col("event_type") == "request_produce") & is_ok(F.col("error")))
        .filter(F.col("leader_epoch").isNotNull() & (F.col("leader_epoch") >= 0))
        .filter(F.col("topic").isNotNull())
        .withColumn("broker_id", F.coalesce("host_id", "broker_id"))
    )
    key = [*PARTITION_KEY, "broker_id"]
    held = ctx.silver["broker_leader_epochs"].filter(F.col("row_kind") == "epoch")
    rows = produces.select(
        *key,
        "event_time",
        F.lit(1).alias("rank"),
        F.lit(None).cast("long").alias("seq"),
        "event_id",
        "leader_epoch",
        "current_leader_epoch",
        F.lit(None).alias("h"),
        F.lit(True).alias("is_prod"),
    ).unionByName(
        held.select(
            *key,
            "event_time",
            F.lit(0).alias("rank"),
            F.col("seq").cast("long").alias("seq"),
            "event_id",
            F.lit(None).cast("int").alias("leader_epoch"),
            F.lit(None).cast("int").alias("current_leader_epoch"),
            F.struct(F.col("leader_epoch").alias("le"), F.col("event_id").alias("id")).alias("h"),
            F.lit(False).alias("is_prod"),
        )
    )
    in_time = Window.partitionBy(*key).orderBy(F.col("event_time").asc_nulls_first(), "rank", "seq", "event_id")
    rows = rows.withColumn(
        "last_h", F.last("h", ignorenulls=True).over(in_time.rowsBetween(Window.unboundedPreceding, 0))
    )
    rows = rows.filter(F.col("is_prod"))
    expected = F.coalesce(F.col("current_leader_epoch"), F.col("last_h.le"))
    return rows.withColumn("expected", expected).filter(
        F.col("expected").isNotNull() & (F.col("expected") != F.col("leader_epoch"))
    )


def carry(ctx: CheckContext) -> DataFrame:
    """Traffic (event_id) the check still needs from before a nightly run's horizon
    (``epoch_audit.gold.carry``): the mismatched produces it reports (each stands on its own line and
    the broker's held epochs, which are state)."""
    return ctx.shared(mismatched_produces).select("event_id")


def check(ctx: CheckContext) -> DataFrame:
    """One row per accepted produce whose epoch differs from the leader's."""
    mismatched = ctx.shared(mismatched_produces)
    held_id = F.when(F.col("current_leader_epoch").isNull(), F.col("last_h.id"))
    return to_check(
        mismatched,
        INVARIANT,
        "confirmed",
        F.col("broker_id"),
        F.col("leader_epoch"),
        F.col("expected"),
        F.col("event_time"),
        F.array(F.col("event_id"), held_id),
        F.format_string(
            "Broker %d accepted PRODUCE %s for %s-%d carrying leader epoch %d while it held epoch %d.",
            F.col("broker_id"),
            F.col("event_id"),
            F.col("topic"),
            F.col("partition"),
            F.col("leader_epoch"),
            F.col("expected"),
        ),
    )
