"""silver.broker_registrations: a broker's KRaft registration state after each record about it."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.silver.kraft_metadata import (
    committed_metadata_records,
    covered_intervals,
    snapshot_records,
    with_hole_after,
    with_snapshot_bases,
)

KRAFT_BROKER_TYPES = (
    "md_register_broker",
    "md_unregister_broker",
    "md_broker_registration_change",
    "md_fence_broker",
    "md_unfence_broker",
)

REGISTRATION_COLUMNS = [
    "cluster_id",
    "broker_id",
    "broker_epoch",
    "registered_at_offset",
    "registered_at_time",
    "registration_event_id",
    "registered",
    "fenced",
    "in_controlled_shutdown",
    "metadata_offset",
    "commit_offset",
    "next_commit_offset",
    "event_time",
    "event_id",
    "record_type",
    "source",
]


def broker_registrations(events: DataFrame, config: object = None) -> DataFrame:
    """silver.broker_registrations: a broker's registration state after each KRaft record about it.

    One row per committed registration record per (cluster_id, broker_id), in metadata-offset
    order. The row's state holds for commit points in [commit_offset, next_commit_offset) (null
    = still holds at the end of the input; equal = superseded inside the same batch, so never a
    state at a commit point). A broker whose log records all follow a KRaft snapshot starts with
    the snapshot's RegisterBrokerRecord (commit_offset = the snapshot's last offset, no metadata
    offset, no time). After a hole in the dumped log (:func:`with_snapshot_bases`) a fence, unfence,
    controlled shutdown or new registration may have gone unseen, so nothing is carried over it:
    until the next RegisterBrokerRecord the state is what the records since the hole state (or a
    snapshot that serves them), else unknown as at a log's start (fenced and the registration's
    offset / time / event id null, in_controlled_shutdown false, registered true). Columns:
      broker_epoch            registered BE (RegisterBrokerRecord; later records repeat it)
      registered_at_offset    metadata offset of the RegisterBrokerRecord of that incarnation
      registered_at_time      its CreateTime (controller clock, UTC)
      registration_event_id   its event id
      registered              false after UnregisterBrokerRecord
      fenced                  RegisterBrokerRecord.fenced (default true), Fence/Unfence records,
                              BrokerRegistrationChangeRecord.fenced (1 -> true, -1 -> false, 0 = no
                              change -> null); an unregistered broker counts as fenced (Kafka
                              removes it from every ISR exactly as for a fence)
      in_controlled_shutdown  set by the record that sets inControlledShutdown, until the broker
                              is fenced or registers again (spec "Ordering and time")
      metadata_offset, commit_offset, next_commit_offset, event_time, event_id, record_type,
      source ("kraft")
    """
    del config
    key = ["cluster_id", "broker_id"]
    log = (
        committed_metadata_records(events, KRAFT_BROKER_TYPES)
        .where(F.col("broker_id").isNotNull())
        .withColumn("_pos", F.col("metadata_offset"))
    )
    # A broker whose log records all follow a snapshot starts from the snapshot's registration
    # (the RegisterBrokerRecord itself was deleted with the log before the snapshot).
    snap = snapshot_records(events, ("md_register_broker",)).where(F.col("broker_id").isNotNull())
    # A broker whose log overlaps the snapshot without its RegisterBrokerRecord (or resumes after a
    # hole): what no record of the segment has stated yet is the snapshot's, after its offset.
    covered = covered_intervals(events)
    recs = with_snapshot_bases(
        log, snap, key, F.col("event_type") == "md_register_broker",
        ["broker_epoch", "fenced", "in_controlled_shutdown", "event_id"], covered,
    )
    # A state holds up to the next record about the broker, never past a hole in the dumped log.
    recs = with_hole_after(recs, covered, F.col("commit_offset"))
    event_type = F.col("event_type")
    is_reg = event_type == "md_register_broker"
    fenced_v = (
        F.when(is_reg, F.coalesce(F.col("fenced"), F.lit(True)))
        .when(event_type == "md_unregister_broker", F.lit(True))
        .when(event_type == "md_fence_broker", F.lit(True))
        .when(event_type == "md_unfence_broker", F.lit(False))
        .otherwise(F.col("fenced"))
    )
    ics_v = (
        F.when(is_reg, F.coalesce(F.col("in_controlled_shutdown"), F.lit(False)))
        .when(event_type.isin("md_unregister_broker", "md_fence_broker"), F.lit(False))
        .when(F.col("fenced") == F.lit(True), F.lit(False))
        .when(F.col("in_controlled_shutdown") == F.lit(True), F.lit(True))
    )
    reg_v = F.when(is_reg, F.lit(True)).when(event_type == "md_unregister_broker", F.lit(False))
    # Per replay segment: a RegisterBrokerRecord states everything, a hole forgets everything.
    w = Window.partitionBy(*key, "_seg").orderBy("_pos").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # = by _pos (segments ascend): the segment windows' sort serves
    by_position = Window.partitionBy(*key).orderBy("_seg", "_pos")
    after_snap = F.col("_pos") > F.col("_snap.pos")

    def stated(value: Column, snap_field: str) -> Column:
        return F.coalesce(F.last(value, ignorenulls=True).over(w), F.when(after_snap, F.col(f"_snap.{snap_field}")))

    out = recs.select(
        "cluster_id",
        "broker_id",
        stated(F.when(event_type != "md_unregister_broker", F.col("broker_epoch")), "broker_epoch").alias(
            "broker_epoch"
        ),
        F.last(F.when(is_reg, F.col("metadata_offset")), ignorenulls=True).over(w).alias("registered_at_offset"),
        F.last(F.when(is_reg, F.col("event_time")), ignorenulls=True).over(w).alias("registered_at_time"),
        stated(F.when(is_reg, F.col("event_id")), "event_id").alias("registration_event_id"),
        F.coalesce(F.last(reg_v, ignorenulls=True).over(w), F.lit(True)).alias("registered"),
        stated(fenced_v, "fenced").alias("fenced"),
        F.coalesce(stated(ics_v, "in_controlled_shutdown"), F.lit(False)).alias("in_controlled_shutdown"),
        "metadata_offset",
        "commit_offset",
        F.least(F.lead("commit_offset").over(by_position), F.col("_hole")).alias("next_commit_offset"),
        "event_time",
        "event_id",
        F.coalesce(F.col("record_type"), event_type).alias("record_type"),
        F.lit("kraft").alias("source"),
    )
    return out.select(*REGISTRATION_COLUMNS)
