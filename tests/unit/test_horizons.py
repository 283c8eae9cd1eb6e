"""before_horizons: rows timed before their cluster's horizon, with bronze's day partition or without."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from epoch_audit.gold.analysis.horizons import before_carry_horizons, before_horizons
from epoch_audit.gold.context import CheckContext

UTC = dt.UTC


def _micros(t: dt.datetime) -> int:
    return int(t.timestamp()) * 1_000_000 + t.microsecond


def test_the_day_condition_keeps_exactly_the_rows_timed_before(spark) -> None:
    midnight = dt.datetime(2026, 3, 2, tzinfo=UTC)
    noon = dt.datetime(2026, 3, 2, 12, tzinfo=UTC)
    times = [midnight - dt.timedelta(microseconds=1), midnight, midnight + dt.timedelta(microseconds=1),
             noon - dt.timedelta(microseconds=1), noon, midnight - dt.timedelta(days=1), None]
    rows = [(c, i, t.replace(tzinfo=None) if t else None) for c in ("a", "b", "c") for i, t in enumerate(times)]
    events = spark.createDataFrame(rows, "cluster_id string, i int, event_time timestamp").withColumn(
        "event_date", F.to_date("event_time")
    )
    # a horizon at midnight, one at noon; cluster c has none
    horizons = {"a": _micros(midnight), "b": _micros(noon)}
    want = {("a", 0), ("a", 5), ("b", 0), ("b", 1), ("b", 2), ("b", 3), ("b", 5)}
    for columns in (events.columns, ()):
        kept = events.where(before_horizons(horizons, columns)).collect()
        assert {(r["cluster_id"], r["i"]) for r in kept} == want, columns
    ctx = CheckContext(events=events, carry_horizons=horizons)
    assert {(r["cluster_id"], r["i"]) for r in before_carry_horizons(ctx, events).collect()} == want
    # no horizon named: the carry chooses from every row
    assert before_carry_horizons(CheckContext(events=events), events).count() == len(rows)


def test_the_day_condition_reaches_the_scan_as_a_partition_filter(spark, tmp_path) -> None:
    path = str(tmp_path / "events")
    days = [dt.datetime(2026, 3, d, 6) for d in (1, 2, 3)]
    spark.createDataFrame([("a", t) for t in days], "cluster_id string, event_time timestamp").withColumn(
        "event_date", F.to_date("event_time")
    ).write.partitionBy("event_date").parquet(path)
    events = spark.read.parquet(path)
    horizon = _micros(dt.datetime(2026, 3, 2, 7, tzinfo=UTC))
    kept = events.where(before_horizons({"a": horizon}, events.columns))
    assert sorted(r["event_time"] for r in kept.collect()) == days[:2]
    scan = kept._jdf.queryExecution().executedPlan().toString()
    assert "PartitionFilters: [isnotnull(event_date" in scan and "2026-03-02" in scan, scan
