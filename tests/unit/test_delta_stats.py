"""delta-rs commits carry min/max statistics (issue #23): the ones delta-rs's own writer computes
for integers, dates and short strings, none for timestamps and long strings, and a reader that
skips files by them loses no row."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
from deltalake import DeltaTable, write_deltalake

from epoch_audit.lake.storage import DeltaRsStorage

SCHEMA = "cluster_id string, broker_id int, offset long, day date, topic string, raw string, at timestamp"
KEPT = {"cluster_id", "broker_id", "offset", "day", "topic", "raw"}  # raw: a null count, no bounds


def _rows(first: int, n: int, topic: str | None) -> list[tuple]:
    return [
        ("c1", i % 3 if i % 4 else None, 10_000_000_000 + i, dt.date(2024, 3, 1 + i % 5), topic,
         "x" * 40 + str(i), dt.datetime(2024, 3, 5, 10, 0, i % 60, 123456))
        for i in range(first, first + n)
    ]


def _stats(path: str) -> list[dict]:
    """The ``stats`` of every AddAction in the table's log, as written (JSON commits, in order)."""
    found = []
    for commit in sorted(Path(path, "_delta_log").glob("*.json")):
        for line in commit.read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                found.append(json.loads(action["add"]["stats"]))
    return sorted(found, key=lambda s: s["numRecords"])


def test_stats_are_delta_rs_own_and_skip_no_row(spark, tmp_path):
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    first = spark.createDataFrame(_rows(0, 7, "clicks"), SCHEMA).coalesce(1)
    second = spark.createDataFrame(_rows(100, 9, None), SCHEMA).coalesce(1)  # topic: every value null
    reference = str(tmp_path / "reference")
    for df in (first, second):
        store.append("bronze/t", df)
        write_deltalake(reference, df.toArrow(), mode="append")
    ours, theirs = _stats(store.path("bronze/t")), _stats(reference)
    assert [s["numRecords"] for s in ours] == [7, 9]
    for mine, own in zip(ours, theirs, strict=True):
        assert set(mine["nullCount"]) == KEPT, "no statistics for the timestamp column"
        assert mine["nullCount"] == {c: own["nullCount"][c] for c in KEPT}
        for bound in ("minValues", "maxValues"):
            assert "raw" not in mine[bound]  # 40+ characters: no exact bound within 32
            assert mine[bound] == {c: own[bound][c] for c in mine[bound]}, bound
    assert ours[0]["minValues"]["topic"] == ours[0]["maxValues"]["topic"] == "clicks"
    assert "topic" not in ours[1]["minValues"] and ours[1]["nullCount"]["topic"] == 9
    assert ours[0]["minValues"]["day"] == "2024-03-01" and ours[1]["maxValues"]["offset"] == 10_000_000_108

    everything = _rows(0, 7, "clicks") + _rows(100, 9, None)
    dataset = DeltaTable(store.path("bronze/t")).to_pyarrow_dataset()
    for arrow_filter, spark_filter, keep in (
        (ds.field("offset") >= 10_000_000_100, "offset >= 10000000100", lambda r: r[2] >= 10_000_000_100),
        (ds.field("topic") == "clicks", "topic = 'clicks'", lambda r: r[4] == "clicks"),
        (ds.field("day") == pa.scalar(dt.date(2024, 3, 5)), "day = DATE'2024-03-05'",
         lambda r: r[3] == dt.date(2024, 3, 5)),
        (ds.field("broker_id") == 2, "broker_id = 2", lambda r: r[1] == 2),
    ):
        expected = sum(1 for r in everything if keep(r))
        assert dataset.to_table(filter=arrow_filter).num_rows == expected, spark_filter
        assert store.read("bronze/t").where(spark_filter).count() == expected, spark_filter


def test_a_file_without_rows_has_a_count_only(spark, tmp_path):
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    store.append("bronze/empty", spark.createDataFrame([], SCHEMA).coalesce(1))
    (stats,) = _stats(store.path("bronze/empty"))
    assert stats["numRecords"] == 0
    assert not stats.get("minValues")
