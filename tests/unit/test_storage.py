"""The storage interface on the delta-rs engine, and engine selection."""

from __future__ import annotations

from datetime import date as dt_date

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import functions as F

from epoch_audit.contracts.events import EVENT_DATE_COLUMN, event_date
from epoch_audit.lake.storage import DeltaRsStorage, StorageError, open_storage, select_engine
from epoch_audit.lake.tables import partition_columns_for


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


def _one_event(spark, event_type: str):
    """One event with the columns bronze_layout derives its layout columns from."""
    return spark.createDataFrame(
        [("e1", "c1", 1709596800, event_type, "f1", 1, 0)],
        "event_id string, cluster_id string, t long, event_type string, file_id string, line_number long, "
        "sub_index int",
    ).select("event_id", "cluster_id", F.timestamp_seconds("t").alias("event_time"), "event_type", "file_id",
             "line_number", "sub_index")


def test_bronze_layout_adds_the_day_unless_the_lake_predates_it(spark, store):
    from epoch_audit.lake.tables import EVENTS_TABLE
    from epoch_audit.stages.ingest import bronze_layout

    events = _one_event(spark, "request_fetch")
    laid = bronze_layout(store, events)  # a new lake: day and class partitions, own time
    assert {EVENT_DATE_COLUMN, "event_class", "own_time"} <= set(laid.columns)
    assert laid.select("event_class").first()[0] == "traffic"
    store.append(EVENTS_TABLE, events)  # a lake written before the day partition existed
    assert bronze_layout(store, events).columns == events.columns
    store.upsert(EVENTS_TABLE, bronze_layout(store, events), ["event_id"])  # still writable
    assert DeltaTable(store.path(EVENTS_TABLE)).metadata().partition_columns == ["cluster_id"]


# -- one scan per read, partition values by file, pruned upserts, columns() -----------------------
# Partition values Spark escapes in directory names ('=', '%', '/', ':', '#', '}'...), a space,
# unicode, a literal "%20", and nulls (__HIVE_DEFAULT_PARTITION__).
TRICKY_CLUSTERS = ["a b", "x=y", "p%q", "s/t", "é☃ ü", "c:d#e?}", "a%20b", "plus+sign", None]
TRICKY_DAYS = [dt_date(2024, 1, 1), dt_date(2024, 1, 2), dt_date(2024, 2, 29), dt_date(2025, 12, 31), None]
TRICKY_SCHEMA = "event_id string, cluster_id string, n long, event_date date, payload string"


def _tricky_events(spark, store, table="bronze/events"):
    """45 partitions (cluster_id x event_date), two rows each; partition columns amid the others."""
    rows = [
        (f"e{ci}-{di}-{k}", c, ci * 100 + di * 10 + k, d, f"p{ci}{di}{k}")
        for ci, c in enumerate(TRICKY_CLUSTERS) for di, d in enumerate(TRICKY_DAYS) for k in range(2)
    ]
    store.append(table, spark.createDataFrame(rows, TRICKY_SCHEMA))
    return rows


def _latest_commit(store, table) -> list[dict]:
    import json
    from pathlib import Path

    log_dir = Path(store.path(table)) / "_delta_log"
    latest = sorted(log_dir.glob("*.json"))[-1]
    return [json.loads(line) for line in latest.read_text().splitlines() if line.strip()]


def _all_added_paths(store, table) -> set[str]:
    import json
    from pathlib import Path

    paths = set()
    for commit in sorted((Path(store.path(table)) / "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                paths.add(action["add"]["path"])
    return paths


@pytest.fixture(params=["hive-layout", "joined"])
def read_path(request, monkeypatch):
    """Both ways a partitioned table is read: partition values from the Hive directories the
    writer uses, or joined on the file (every table written before that layout)."""
    import epoch_audit.lake.delta_rs as storage_module

    monkeypatch.setattr(storage_module, "HIVE_LAYOUT_READS", request.param == "hive-layout")
    return request.param


def test_partitioned_read_is_one_scan_with_exact_values(spark, store, read_path):
    rows = _tricky_events(spark, store)
    dt = DeltaTable(store.path("bronze/events"))
    assert dt.metadata().partition_columns == ["cluster_id", "event_date"]
    assert len({(a["partition.cluster_id"], a["partition.event_date"])
                for a in pa.table(dt.get_add_actions(flatten=True)).to_pylist()}) == 45
    df = store.read("bronze/events")
    assert df.dtypes == [("event_id", "string"), ("cluster_id", "string"), ("n", "bigint"),
                         ("event_date", "date"), ("payload", "string")]
    assert sorted(tuple(r) for r in df.collect()) == sorted(rows)
    # one Parquet scan, not one per partition
    assert "Union" not in df._jdf.queryExecution().analyzed().toString()
    assert "Union" not in df._jdf.queryExecution().executedPlan().toString()
    # filters on partition values see the typed values
    assert _rows(df.where(F.col("cluster_id").isNull() & (F.col("event_date") == dt_date(2024, 2, 29))), "n") == [
        (820,), (821,)]
    assert _rows(store.read_where("bronze/events", "cluster_id", ["x=y"]), "n") == [
        (100 + 10 * d + k,) for d in range(5) for k in range(2)]


def test_writes_land_in_the_tables_hive_directories_and_reads_prune_them(spark, store):
    """New files sit under <table>/cluster_id=.../event_date=.../ (no per-write directory): the read
    takes the partition values from the paths (no join) and prunes files on partition filters."""
    from pathlib import Path

    _tricky_events(spark, store)
    table = Path(store.path("bronze/events"))
    files = [p.relative_to(table).parts for p in table.rglob("*.parquet")]
    assert files and all(len(parts) == 3 and parts[0].startswith("cluster_id=")
                         and parts[1].startswith("event_date=") for parts in files), files
    assert not [p for p in table.iterdir() if p.name.startswith("part-")]
    df = store.read("bronze/events").where(F.col("cluster_id") == "x=y")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "Join" not in plan and "PartitionFilters: [isnotnull(cluster_id" in plan, plan
    assert df.count() == 10


def test_a_table_with_files_of_both_layouts_reads_exactly(spark, store, monkeypatch):
    """A lake written before the Hive layout keeps its per-write files: they go through the join,
    files written since through the paths; the read is the union of the two, exact."""
    import epoch_audit.lake.delta_rs as storage_module

    monkeypatch.setattr(storage_module, "HIVE_LAYOUT_WRITES", False)
    old_rows = _tricky_events(spark, store)
    monkeypatch.setattr(storage_module, "HIVE_LAYOUT_WRITES", True)
    new_rows = [(f"n-{r[0]}", *r[1:]) for r in old_rows]
    store.append("bronze/events", spark.createDataFrame(new_rows, TRICKY_SCHEMA))
    df = store.read("bronze/events")
    assert sorted(tuple(r) for r in df.collect()) == sorted(old_rows + new_rows)
    assert df._jdf.queryExecution().analyzed().toString().count("Union") == 1
    assert _rows(store.read_where("bronze/events", "cluster_id", ["x=y"]), "n") == sorted(
        [(100 + 10 * d + k,) for d in range(5) for k in range(2)] * 2)


def test_read_fast_path_matches_what_spark_names_the_files(spark, store):
    """The scan's _metadata.file_path (and input_file_name()) of every row is among the forms
    _spark_file_uris predicts."""
    from epoch_audit.lake.delta_rs import _norm_uri, _spark_file_uris

    _tricky_events(spark, store)
    dt = DeltaTable(store.path("bronze/events"))
    predicted = {form for uri in dt.file_uris() for form in _spark_file_uris(_norm_uri(uri))}
    scan = spark.read.schema("event_id string").parquet(*dt.file_uris())
    for name in (F.col("_metadata.file_path"), F.input_file_name()):
        actual = {r[0] for r in scan.select(name).distinct().collect()}
        assert len(actual) == len(dt.file_uris()) and actual <= predicted


def test_read_of_a_partitioned_table_keeps_filter_pushdown(spark, store, read_path):
    """A filter on a data column reaches the Parquet scan (row groups skipped, rows filtered in the
    reader) even though the partition values are joined on the row's file: input_file_name() would
    have blocked it (nondeterministic), and every check's event_type filter would read all of bronze."""
    _tricky_events(spark, store)
    df = store.read("bronze/events").where(F.col("payload") == "x")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert "PushedFilters: [IsNotNull(payload), EqualTo(payload,x)]" in plan, plan


def test_read_falls_back_to_normalised_paths_and_never_drops_a_row(spark, store, monkeypatch):
    import epoch_audit.lake.delta_rs as storage_module

    monkeypatch.setattr(storage_module, "HIVE_LAYOUT_READS", False)
    rows = _tricky_events(spark, store)
    # the fast path misses every file: the normalised comparison still attaches the right values
    monkeypatch.setattr(storage_module, "_spark_file_uris", lambda path: [f"nowhere:{path}"])
    assert sorted(tuple(r) for r in store.read("bronze/events").collect()) == sorted(rows)
    # a file neither path matches fails the query instead of losing its rows or their values
    monkeypatch.setattr(storage_module, "_norm_uri", lambda uri: "/nowhere" + uri)
    with pytest.raises(Exception, match="no Delta log entry for the file"):
        store.read("bronze/events").collect()


def test_upsert_searches_and_rewrites_only_the_sources_partitions(spark, store, monkeypatch):
    rows = _tricky_events(spark, store)
    before = {f for f in DeltaTable(store.path("bronze/events")).file_uris()}
    source = spark.createDataFrame(
        [
            ("e0-0-1", "a b", -1, dt_date(2024, 1, 1), "new"),  # replaces a row of ("a b", 2024-01-01)
            ("e1-4-0", "x=y", -2, None, "new"),  # replaces a row of ("x=y", null day)
            ("fresh-1", "x=y", -3, None, "new"),  # a new key in an existing partition
            ("fresh-2", "brand new", -4, dt_date(2024, 3, 1), "new"),  # a new partition
        ],
        TRICKY_SCHEMA,
    )
    wanted = {("a b", "2024-01-01"), ("x=y", None), ("brand new", "2024-03-01")}
    searched = []
    read_files = store._read_files

    def spy(table, dt, files, *args, **kwargs):
        searched.extend(values for _, values in files)
        return read_files(table, dt, files, *args, **kwargs)

    monkeypatch.setattr(store, "_read_files", spy)
    store.upsert("bronze/events", source, ["event_id"])
    monkeypatch.undo()
    # only the source's partitions' files were read to find its keys (not the 45 partitions)
    assert searched and {(v["cluster_id"], v["event_date"]) for v in searched} <= wanted
    # one commit: removes only in the source's partitions, each naming a file that was added
    actions = _latest_commit(store, "bronze/events")
    removes = [a["remove"] for a in actions if "remove" in a]
    assert sorted((r["partitionValues"]["cluster_id"], r["partitionValues"]["event_date"]) for r in removes) == [
        ("a b", "2024-01-01"), ("x=y", None)]
    assert {r["path"] for r in removes} <= _all_added_paths(store, "bronze/events")
    assert {(a["add"]["partitionValues"]["cluster_id"], a["add"]["partitionValues"]["event_date"])
            for a in actions if "add" in a} <= wanted
    # the other partitions' files are untouched
    after = set(DeltaTable(store.path("bronze/events")).file_uris())
    untouched = {f for f in before if "/cluster_id=a b/event_date=2024-01-01/" not in f
                 and "/cluster_id=x%3Dy/event_date=__HIVE_DEFAULT_PARTITION__/" not in f}
    assert untouched <= after and len(before - after) == 2
    # contents: keys replaced, new keys added, everything else as it was
    replaced = {r[0]: r for r in source.collect()}
    expected = sorted(tuple(r) for r in [replaced.pop(r[0], r) for r in rows] + list(replaced.values()))
    assert sorted(tuple(r) for r in store.read("bronze/events").collect()) == expected
    # the same input again: the same content
    store.upsert("bronze/events", source, ["event_id"])
    assert sorted(tuple(r) for r in store.read("bronze/events").collect()) == expected


def test_replace_where_by_a_data_column_of_a_partitioned_table(spark, store):
    """The file of each row (taken at the scan, below the partition join) still drives the rewrite."""
    rows = _tricky_events(spark, store)
    gone = {r[0] for r in rows if r[4].endswith("1") and r[1] in ("p%q", "é☃ ü", None)}
    store.replace_where("bronze/events", spark.createDataFrame([("z", "p%q", 0, None, "zz")], TRICKY_SCHEMA),
                        "payload", sorted({r[4] for r in rows if r[0] in gone}))
    expected = sorted([r for r in rows if r[0] not in gone] + [("z", "p%q", 0, None, "zz")])
    assert sorted(tuple(r) for r in store.read("bronze/events").collect()) == expected


def test_columns_come_from_the_log_without_reading(spark, store, monkeypatch):
    _tricky_events(spark, store)
    store.append("state/flat", spark.createDataFrame([(1, "a")], "id int, v string"))
    expected = {t: store.read(t).columns for t in ("bronze/events", "state/flat")}
    assert expected["bronze/events"] == ["event_id", "cluster_id", "n", "event_date", "payload"]

    def no_read(*args, **kwargs):
        raise AssertionError("columns() must not read the table")

    monkeypatch.setattr(store, "read", no_read)
    monkeypatch.setattr(store, "_read_files", no_read)
    assert {t: store.columns(t) for t in expected} == expected


def test_bronze_layout_reads_only_the_schema(spark, store, monkeypatch):
    from epoch_audit.lake.tables import EVENTS_TABLE
    from epoch_audit.stages.ingest import bronze_layout

    events = _one_event(spark, "become_leader")
    store.append(EVENTS_TABLE, bronze_layout(store, events))

    def no_read(*args, **kwargs):
        raise AssertionError("bronze_layout must not read bronze")

    monkeypatch.setattr(store, "read", no_read)
    assert EVENT_DATE_COLUMN in bronze_layout(store, events).columns


def test_merge_partition_condition_bounds_the_target_to_the_sources_partitions(spark):
    """DeltaSparkStorage.upsert's MERGE condition (SQL text): the keys, and an IN list per partition
    column, nulls kept, values as literals of their own type (quotes escaped)."""
    from epoch_audit.lake.delta_rs_actions import prunable_partition_columns
    from epoch_audit.lake.delta_spark import _merge_condition

    target = spark.createDataFrame(
        [(1, "c1", dt_date(2024, 1, 1)), (2, "c1", None), (3, "c2", dt_date(2024, 1, 1)), (4, None, None),
         (5, "c3", dt_date(2024, 1, 2)), (6, "it's", None)],
        "id int, cluster_id string, event_date date",
    ).alias("t")
    source = spark.range(1).select(F.lit(1).alias("id")).alias("s")
    pairs = target.crossJoin(source)

    def matching(tuples: list[tuple], columns: list[str]) -> list[tuple]:
        condition = _merge_condition([], columns, tuples)
        return _rows(pairs.where(F.expr(condition)).select("t.id"), "id")

    assert matching([("c1", dt_date(2024, 1, 1)), ("c2", None)], ["cluster_id", "event_date"]) == [(1,), (2,), (3,)]
    assert matching([(None,)], ["cluster_id"]) == [(4,)]
    assert matching([], ["cluster_id"]) == []
    assert matching([("it's",)], ["cluster_id"]) == [(6,)]
    assert _merge_condition(["id"], [], []) == "t.`id` <=> s.`id`"
    # delta-rs prunes by partition columns whose Delta-log string form is unambiguous, same type in the source
    table = spark.createDataFrame([], "a string, d date, t timestamp, x int").schema
    assert prunable_partition_columns(table, spark.createDataFrame([], "a string, d date, t timestamp, x long").schema,
                                       ["a", "d", "t", "x"]) == ["a", "d"]


def test_read_written_is_what_this_process_added(spark, store, tmp_path):
    """A run's validation reads the files its own commits added, not the table's history."""
    schema = "id int, cluster_id string, v string"
    store.append("bronze/w", spark.createDataFrame([(1, "a", "x"), (2, "b", "x")], schema))
    assert store.read_written("gold/none") is None  # never written by this process
    later = DeltaRsStorage(spark, store.lake)  # the next night's process
    assert later.read_written("bronze/w") is None
    later.append("bronze/w", spark.createDataFrame([(3, "a", "y")], schema))
    assert _rows(later.read_written("bronze/w"), "id") == [(3,)]
    # an upsert that rewrites an older file: the rewritten file's rows are read with it (a superset)
    later.upsert("bronze/w", spark.createDataFrame([(2, "b", "z"), (4, "b", "z")], schema), ["id"])
    written = _rows(later.read_written("bronze/w"), "id", "v")
    assert {(2, "z"), (3, "y"), (4, "z")} <= set(written) <= {(1, "x"), (2, "z"), (3, "y"), (4, "z")}, written
    assert _rows(later.read("bronze/w"), "id") == [(1,), (2,), (3,), (4,)]
    # a table this process created: every row it holds
    later.append("bronze/new", spark.createDataFrame([(5, "c", "x")], schema))
    assert _rows(later.read_written("bronze/new"), "id") == [(5,)]
