"""Small tables written and read through Arrow by the delta-rs engine (``upsert_rows``,
``overwrite_rows``, ``rows``): the same table, rows, schema, statistics and description as the
Spark write of the same rows, and the same upsert semantics."""

from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from pyspark.sql import functions as F

from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import ACCOUNTING_TABLE, FILES_TABLE, GOLD_STATE_TABLE, RUN_SUMMARY_TABLE
from epoch_audit.stages.ingest import ACCOUNTING_SCHEMA, FILES_SCHEMA
from epoch_audit.stages.state import RUN_SUMMARY_SCHEMA, STATE_SCHEMA, _fingerprints, ledger_fingerprints


def _file_rows(ids: range, run: str) -> list[tuple]:
    return [
        (f"f{i}", f"/logs/f{i}.log", "c1" if i % 2 else "c2", i % 3, "server", "server", i, 100 * i, 10 * i,
         f"sha{i}", run, None if i % 4 == 0 else 1_700_000_000_000_000 + i,
         dt.datetime(2024, 3, 5, 10, i % 60, 0, 123456, tzinfo=dt.UTC))
        for i in ids
    ]


def _summary_row(run: str) -> tuple:
    return (run, "run", dt.datetime(2024, 3, 5, 10, 0, 0), dt.datetime(2024, 3, 5, 10, 0, 42, 5), 3, 7,
            json.dumps({"run_id": run}), "found", dt.date(2024, 3, 5), 42.5, 100, 90, 10, 0, 2, 0, 0, 0, None,
            ["c1", "c2"])


def _sorted_rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _stats(path: str) -> list[dict]:
    """Each live file's AddAction stats."""
    actions = pa.table(DeltaTable(path).get_add_actions(flatten=False)).to_pylist()
    return [
        {"numRecords": a["num_records"],
         **{name: {c: v for c, v in (a.get(kind) or {}).items() if v is not None}
            for name, kind in (("nullCount", "null_count"), ("minValues", "min"), ("maxValues", "max"))}}
        for a in actions
    ]


@pytest.mark.parametrize(
    "table, schema, keys, first, second",
    [
        (FILES_TABLE, FILES_SCHEMA, ["file_id"], _file_rows(range(1, 9), "r1"), _file_rows(range(6, 12), "r2")),
        (RUN_SUMMARY_TABLE, RUN_SUMMARY_SCHEMA, ["run_id"], [_summary_row("a"), _summary_row("b")],
         [_summary_row("b"), _summary_row("c")]),
    ],
)
def test_arrow_writes_equal_spark_writes(spark, tmp_path, table, schema, keys, first, second):
    arrow, plain = DeltaRsStorage(spark, str(tmp_path / "arrow")), DeltaRsStorage(spark, str(tmp_path / "spark"))
    for rows in (first, second):
        arrow.upsert_rows(table, rows, schema, keys)
        plain.upsert(table, spark.createDataFrame(rows, schema), keys)
    assert _sorted_rows(arrow.read(table)) == _sorted_rows(plain.read(table))
    assert len(_sorted_rows(arrow.read(table))) == len({tuple(r[schema.fieldNames().index(k)] for k in keys)
                                                         for r in first + second})
    a, p = DeltaTable(arrow.path(table)), DeltaTable(plain.path(table))
    assert a.schema().to_arrow() == p.schema().to_arrow()  # the column comments included
    assert a.metadata().description == p.metadata().description
    assert len(a.file_uris()) == 1  # the rewritten file replaced the first one
    # the statistics Spark's files carry, over the same rows
    (mine,), theirs = _stats(arrow.path(table)), _stats(plain.path(table))
    assert mine["numRecords"] == sum(s["numRecords"] for s in theirs)
    for kind in ("minValues", "maxValues", "nullCount"):
        assert set(mine[kind]) == set().union(*(s[kind] for s in theirs if s["numRecords"]))
    for column, low in mine["minValues"].items():
        assert low == min(s["minValues"][column] for s in theirs if column in s.get("minValues", {}))
    assert sorted(arrow.rows(table, keys), key=repr) == sorted(plain.rows(table, keys), key=repr)


def test_upsert_rows_into_a_table_spark_wrote_keeps_its_other_rows(spark, tmp_path):
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    store.append(ACCOUNTING_TABLE, spark.createDataFrame(
        [("r1", "f1", "/a", "c1", 1, "server", 1, 10, 0, 10, 9, 1, 0, 0),
         ("r1", "f2", "/b", "c1", 1, "server", 1, 5, 0, 5, 5, 0, 0, 0)], ACCOUNTING_SCHEMA))
    store.append(ACCOUNTING_TABLE, spark.createDataFrame(
        [("r2", "f3", "/c", "c2", 2, "server", 1, 3, 0, 3, 3, 0, 0, 0)], ACCOUNTING_SCHEMA))
    before = DeltaTable(store.path(ACCOUNTING_TABLE)).file_uris()
    (affected,) = [r["_file"] for r in store.read(ACCOUNTING_TABLE).where("file_id = 'f2'")
                   .select(F.col("_metadata.file_path").alias("_file")).collect()]
    affected = affected.removeprefix("file:")
    store.upsert_rows(ACCOUNTING_TABLE, [("r3", "f2", "/b", "c1", 1, "server", 1, 7, 0, 7, 6, 0, 1, 0),
                                         ("r3", "f4", "/d", "c2", 2, "server", 1, 2, 0, 2, 2, 0, 0, 0)],
                      ACCOUNTING_SCHEMA, ["file_id", "start_line"])
    got = {(r["file_id"], r["run_id"], r["lines_read"]) for r in store.rows(ACCOUNTING_TABLE)}
    assert got == {("f1", "r1", 10), ("f2", "r3", 7), ("f3", "r2", 3), ("f4", "r3", 2)}
    assert _sorted_rows(store.read(ACCOUNTING_TABLE).select("file_id", "run_id")) == [
        ("f1", "r1"), ("f2", "r3"), ("f3", "r2"), ("f4", "r3")]
    files = DeltaTable(store.path(ACCOUNTING_TABLE)).file_uris()
    assert len(files) == len(before) + 1 - 1  # the file holding f2 replaced by one new file
    assert not set(before) - set(files) - {affected}


def test_overwrite_rows_and_rows_of_a_missing_column(spark, tmp_path):
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    assert store.rows(GOLD_STATE_TABLE) == []
    store.upsert_rows(GOLD_STATE_TABLE, [("a", "fp1", "r1"), ("b", "fp1", "r1")], STATE_SCHEMA, ["cluster_id"])
    store.upsert_rows(GOLD_STATE_TABLE, [("b", "fp2", "r2")], STATE_SCHEMA, ["cluster_id"])
    assert sorted((r["cluster_id"], r["fingerprint"]) for r in store.rows(GOLD_STATE_TABLE)) == [
        ("a", "fp1"), ("b", "fp2")]
    store.overwrite_rows(GOLD_STATE_TABLE, [("c", "fp3", "r3")], STATE_SCHEMA)
    assert store.rows(GOLD_STATE_TABLE, ["cluster_id"]) == [{"cluster_id": "c"}]
    # a file written before a column was added reads it as null
    store.append("gold/t", spark.createDataFrame([(1,)], "id int"))
    store.add_columns("gold/t", spark.createDataFrame([], "id int, note string").schema)
    assert store.rows("gold/t") == [{"id": 1, "note": None}]


def test_a_value_createDataFrame_refuses_is_refused(spark, tmp_path):
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    with pytest.raises(TypeError):
        store.upsert_rows(GOLD_STATE_TABLE, [("a", 5, "r1")], STATE_SCHEMA, ["cluster_id"])
    assert not store.exists(GOLD_STATE_TABLE)


def test_ledger_fingerprints_equal_sparks_formula(spark, tmp_path):
    """Fingerprints recorded by earlier versions (Spark's sha2 over the sorted key set) stay valid."""
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    rows = [("r1", f"f{i % 7}", "/x", f"c{i % 3}", 1, "server", 1 + 100 * (i % 5), 1, 0, 1, 1, 0, 0, 0)
            for i in range(40)]
    rows.append(("r1", "fé", "/x", "c0", 1, "server", 12, 1, 0, 1, 1, 0, 0, 0))
    store.append(ACCOUNTING_TABLE, spark.createDataFrame(rows, ACCOUNTING_SCHEMA))
    spark_fps = {
        r["cluster_id"]: r["fp"]
        for r in store.read(ACCOUNTING_TABLE)
        .select("cluster_id", F.concat_ws(":", "file_id", F.col("start_line").cast("string")).alias("k"))
        .groupBy("cluster_id").agg(F.sha2(F.concat_ws(",", F.array_sort(F.collect_set("k"))), 256).alias("fp"))
        .collect()
    }
    assert ledger_fingerprints(store) == spark_fps
    assert _fingerprints([{"cluster_id": None, "file_id": "f", "start_line": 1}]) == {}
