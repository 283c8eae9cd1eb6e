"""The storage interface on the delta-rs engine, and engine selection."""

from __future__ import annotations

from datetime import date as dt_date

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import functions as F

from jobs.storage import DeltaRsStorage, StorageError, open_storage, partition_columns_for, select_engine
from transforms.schema import EVENT_DATE_COLUMN, event_date


@pytest.fixture
def store(spark, tmp_path):
    return DeltaRsStorage(spark, str(tmp_path / "lake"))


def _rows(df, *cols):
    return sorted(tuple(r[c] for c in cols) for r in df.collect())


def test_append_creates_a_real_delta_table(spark, store):
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id int, v string")
    store.append("bronze/t", df)
    store.append("bronze/t", spark.createDataFrame([(3, "c")], "id int, v string"))
    dt = DeltaTable(store.path("bronze/t"))
    assert dt.version() == 1
    assert len(store.history("bronze/t")) == 2
    assert sorted(dt.to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3]
    assert _rows(store.read("bronze/t"), "id", "v") == [(1, "a"), (2, "b"), (3, "c")]


def test_overwrite_and_version_read(spark, store):
    store.append("silver/t", spark.createDataFrame([(1, "a")], "id int, v string"))
    store.overwrite("silver/t", spark.createDataFrame([(9, "z")], "id int, v string"))
    assert _rows(store.read("silver/t"), "id") == [(9,)]
    assert _rows(store.read("silver/t", version=0), "id") == [(1,)]


def test_overwrite_from_itself(spark, store):
    store.append("silver/s", spark.createDataFrame([(1,), (2,)], "id int"))
    store.overwrite("silver/s", store.read("silver/s").where("id > 1"))
    assert _rows(store.read("silver/s"), "id") == [(2,)]


def test_upsert_is_exact_and_idempotent(spark, store):
    base = spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id int, v string")
    store.upsert("gold/t", base, ["id"])
    change = spark.createDataFrame([(2, "B"), (4, "d"), (4, "d")], "id int, v string")
    store.upsert("gold/t", change, ["id"])
    expected = [(1, "a"), (2, "B"), (3, "c"), (4, "d")]
    assert _rows(store.read("gold/t"), "id", "v") == expected
    store.upsert("gold/t", change, ["id"])  # same input again: same content
    assert _rows(store.read("gold/t"), "id", "v") == expected
    assert sorted(DeltaTable(store.path("gold/t")).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 4]


def test_empty_write_keeps_schema(spark, store):
    store.append("quarantine/q", spark.createDataFrame([], "id int, reason string"))
    df = store.read("quarantine/q")
    assert df.columns == ["id", "reason"] and df.count() == 0


def test_timestamps_arrays_maps_round_trip(spark, store):
    df = spark.sql(
        "select timestamp'2024-01-02 03:04:05.678' as t, array(1,2) as a, map('k','v') as m, 5L as n"
    )
    store.append("bronze/types", df)
    (row,) = store.read("bronze/types").collect()
    assert str(row["t"]) == "2024-01-02 03:04:05.678000"
    assert row["a"] == [1, 2] and row["m"] == {"k": "v"} and row["n"] == 5
    assert DeltaTable(store.path("bronze/types")).to_pyarrow_table().num_rows == 1


def test_engine_selection():
    assert select_engine("auto", delta_available=True) == "delta-spark"
    assert select_engine("auto", delta_available=False) == "delta-rs"
    assert select_engine("delta-rs", delta_available=True) == "delta-rs"
    with pytest.raises(StorageError, match="not on the classpath"):
        select_engine("delta-spark", delta_available=False)
    with pytest.raises(StorageError, match="unknown storage.engine"):
        select_engine("iceberg", delta_available=True)


def test_local_session_auto_selects_delta_rs(spark, tmp_path):
    assert open_storage(spark, str(tmp_path), "auto").engine == "delta-rs"


def test_partitioned_tables_read_upsert_and_replace_by_cluster(spark, store):
    """bronze/events, silver/* and gold/violations are partitioned by cluster_id (delta-rs partitionValues)."""
    rows = [(1, "c1", "a"), (2, "c1", "b"), (3, "c2", "c")]
    store.append("silver/p", spark.createDataFrame(rows, "id int, cluster_id string, v string"))
    dt = DeltaTable(store.path("silver/p"))
    assert dt.metadata().partition_columns == ["cluster_id"]
    assert sorted(dt.to_pyarrow_table().column("cluster_id").to_pylist()) == ["c1", "c1", "c2"]
    assert store.read("silver/p").columns == ["id", "cluster_id", "v"]  # the column order is kept
    assert _rows(store.read_where("silver/p", "cluster_id", ["c2"]), "id") == [(3,)]
    store.upsert("silver/p", spark.createDataFrame([(2, "c1", "B"), (4, "c2", "d")], "id int, cluster_id string, v string"),
                 ["id"])
    assert _rows(store.read("silver/p"), "id", "cluster_id", "v") == [
        (1, "c1", "a"), (2, "c1", "B"), (3, "c2", "c"), (4, "c2", "d")]
    # replace one cluster's rows in one commit; the other cluster's files are untouched
    version = DeltaTable(store.path("silver/p")).version()
    store.replace_where("silver/p", spark.createDataFrame([(9, "c1", "z")], "id int, cluster_id string, v string"),
                        "cluster_id", ["c1"])
    assert DeltaTable(store.path("silver/p")).version() == version + 1
    assert _rows(store.read("silver/p"), "id", "cluster_id") == [(3, "c2"), (4, "c2"), (9, "c1")]
    # a cluster replaced by nothing disappears
    store.replace_where("silver/p", spark.createDataFrame([], "id int, cluster_id string, v string"),
                        "cluster_id", ["c2"])
    assert _rows(store.read("silver/p"), "id") == [(9,)]


def test_bronze_events_are_partitioned_by_cluster_and_utc_day(spark, store):
    """bronze/events: (cluster_id, event_date) partitions, a null day for events without a time."""
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")  # the day must not follow it
    try:
        events = spark.createDataFrame(
            # 2024-03-04 23:59:59 UTC and one second later (Los Angeles: both on 2024-03-04)
            [("e1", "c1", 1709596799), ("e2", "c1", 1709596800), ("e3", "c2", None)],
            "event_id string, cluster_id string, t long",
        ).select("event_id", "cluster_id", F.timestamp_seconds("t").alias("event_time"))
        store.append("bronze/events", events.withColumn(EVENT_DATE_COLUMN, event_date(F.col("event_time"))))
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")
    dt = DeltaTable(store.path("bronze/events"))
    assert dt.metadata().partition_columns == ["cluster_id", "event_date"]
    adds = pa.table(dt.get_add_actions(flatten=True)).to_pylist()
    assert sorted((a["partition.cluster_id"], str(a["partition.event_date"])) for a in adds) == [
        ("c1", "2024-03-04"), ("c1", "2024-03-05"), ("c2", "None")]
    assert _rows(store.read("bronze/events"), "event_id", "event_date") == [
        ("e1", dt_date(2024, 3, 4)), ("e2", dt_date(2024, 3, 5)), ("e3", None)]
    assert _rows(store.read_where("bronze/events", "cluster_id", ["c1"]), "event_id") == [("e1",), ("e2",)]
    # an upsert rewrites only the files of the keys it touches, across day partitions
    again = store.read("bronze/events").where("event_id = 'e2'")
    store.upsert("bronze/events", again, ["event_id"])
    assert _rows(store.read("bronze/events"), "event_id") == [("e1",), ("e2",), ("e3",)]
    assert partition_columns_for("bronze/events", ["cluster_id", "event_id"]) == ["cluster_id"]
    assert partition_columns_for("silver/x", ["cluster_id", "event_date"]) == ["cluster_id"]


def test_replace_where_on_an_unpartitioned_table(spark, store):
    store.append("state/t", spark.createDataFrame([(1, "c1"), (2, "c2"), (3, "c1")], "id int, cluster_id string"))
    assert DeltaTable(store.path("state/t")).metadata().partition_columns == []
    store.replace_where("state/t", spark.createDataFrame([(7, "c1")], "id int, cluster_id string"), "cluster_id", ["c1"])
    assert _rows(store.read("state/t"), "id", "cluster_id") == [(2, "c2"), (7, "c1")]
    assert _rows(store.read_where("state/t", "cluster_id", ["c2"]), "id") == [(2,)]


def test_bronze_layout_adds_the_day_unless_the_lake_predates_it(spark, store):
    from jobs.ingest import EVENTS_TABLE, bronze_layout

    events = spark.createDataFrame([("e1", "c1", 1709596800)], "event_id string, cluster_id string, t long").select(
        "event_id", "cluster_id", F.timestamp_seconds("t").alias("event_time"))
    assert EVENT_DATE_COLUMN in bronze_layout(store, events).columns  # a new lake: day partitions
    store.append(EVENTS_TABLE, events)  # a lake written before the day partition existed
    assert bronze_layout(store, events).columns == events.columns
    store.upsert(EVENTS_TABLE, bronze_layout(store, events), ["event_id"])  # still writable
    assert DeltaTable(store.path(EVENTS_TABLE)).metadata().partition_columns == ["cluster_id"]
