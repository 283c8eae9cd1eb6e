"""The carried traffic a night writes: the events before the horizon whose ids a check carries, planned
without a shuffle in a short run (one cached partition of state events and one of traffic)."""

from __future__ import annotations

from datetime import datetime

from pyspark import StorageLevel
from pyspark.sql.types import TimestampType

from epoch_audit.gold.carry import carried_events
from epoch_audit.gold.context import CheckContext
from epoch_audit.stages.base import HeldInput
from tests.helpers import short_run_session

SCHEMA = "event_id string, event_type string, cluster_id string, event_time timestamp, event_class string"


def _held(spark, rows):
    df = spark.createDataFrame(rows, SCHEMA).coalesce(1).persist(StorageLevel.MEMORY_AND_DISK)
    df.count()
    return df


def test_carried_events_are_the_ids_before_each_horizon_with_no_shuffle(spark, tmp_path):
    at = [datetime(2024, 3, 5, 9, 0, s) for s in range(6)]
    # as the check stage reads them: the state events from bronze's files (partitioned by class), the
    # traffic cached in a partition per core and read through one
    bronze = str(tmp_path / "events")
    spark.createDataFrame(
        [("s1", "become_leader", "a", at[0], "state"), ("s2", "isr_updated", "b", at[1], "state")], SCHEMA
    ).write.partitionBy("event_class").parquet(bronze)
    traffic_rows = spark.createDataFrame([
        ("t1", "request_fetch", "a", at[1], "traffic"),  # before a's horizon, carried
        ("t2", "request_fetch", "a", at[4], "traffic"),  # after it
        ("t3", "request_produce", "b", at[1], "traffic"),  # before b's horizon, carried
        ("t4", "request_produce", "b", at[3], "traffic"),  # b's horizon is earlier: after it
        ("t5", "request_fetch", "a", None, "traffic"),  # untimed: read every night, never carried
        ("t6", "request_fetch", "c", at[0], "traffic"),  # a cluster without a horizon
        ("t7", "request_fetch", "a", at[2], "traffic"),  # before the horizon, no check carries it
    ], SCHEMA)  # a partition per core, as parallelized
    ids = _held(spark, [(i, None, None, None, None) for i in ("t1", "t1", "t2", "t3", "t4", "t5", "t6", "s1")])
    horizons = {"a": TimestampType().toInternal(at[3]), "b": TimestampType().toInternal(at[2])}
    traffic = HeldInput.of(traffic_rows)
    traffic.cached.count()  # built (the stage builds it in the background while it plans)
    try:
        with short_run_session(spark, True):
            state = spark.read.parquet(bronze).where("event_class != 'traffic'").coalesce(1)
            ctx = CheckContext(events=state.unionByName(traffic.view))
            carried = carried_events(ctx, (), horizons, ids.select("event_id"))
            plan = carried._jdf.queryExecution().executedPlan().toString()
            assert "Exchange" not in plan, plan
            assert sorted(r["event_id"] for r in carried.collect()) == ["t1", "t3"]  # once each
            assert carried.columns == ctx.events.columns
    finally:
        ids.unpersist()
        traffic.cached.unpersist()
