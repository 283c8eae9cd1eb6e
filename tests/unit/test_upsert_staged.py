"""``upsert_staged`` on the delta-rs engine: a table adopts the files Spark staged in its Hive layout
(the ingest pass's event files), with the content a plain ``upsert`` of the same rows gives."""

from __future__ import annotations

import json
import os
from datetime import date as dt_date
from pathlib import Path

import pytest
from deltalake import DeltaTable

from epoch_audit.lake.staging import read_staged, write_delta_ready
from epoch_audit.lake.storage import DeltaRsStorage

SCHEMA = "event_id string, cluster_id string, n long, event_date date, payload string"
PARTS = ["cluster_id", "event_date"]  # what partition_columns_for gives bronze/events of SCHEMA
CLUSTERS = ["c1", "a b", "x=y"]
DAYS = [dt_date(2024, 1, 1), dt_date(2024, 1, 2), None]


@pytest.fixture
def stores(spark, tmp_path):
    """The store under test and a reference store that gets the same rows by plain upserts."""
    return DeltaRsStorage(spark, str(tmp_path / "lake")), DeltaRsStorage(spark, str(tmp_path / "reference"))


def _stage(spark, tmp_path, rows, name="stage", parts=PARTS) -> tuple[str, object]:
    df = spark.createDataFrame(rows, SCHEMA)
    staged = str(tmp_path / name)
    write_delta_ready(df, staged, parts)
    return staged, df


def _content(store, table="bronze/events"):
    return sorted(tuple(r) for r in store.read(table).collect())


def _commits(store, table="bronze/events") -> list[list[dict]]:
    log_dir = Path(store.path(table)) / "_delta_log"
    return [[json.loads(line) for line in p.read_text().splitlines() if line.strip()]
            for p in sorted(log_dir.glob("*.json"))]


def _rows(tag: str, keys: range) -> list[tuple]:
    return [(f"e{k}", CLUSTERS[k % 3], k, DAYS[(k // 3) % 3], f"{tag}{k}") for k in keys]


def test_a_new_table_takes_the_staged_files_as_they_are(spark, tmp_path, stores):
    store, reference = stores
    rows = _rows("p", range(18))
    staged, df = _stage(spark, tmp_path, rows)
    staged_names = {p.name for p in Path(staged).rglob("*.parquet")}
    assert read_staged(spark, staged, df.schema).columns == df.columns
    store.upsert_staged("bronze/events", staged, df.schema, PARTS, ["event_id"], unique=True)
    reference.upsert("bronze/events", df, ["event_id"], unique=True)
    assert _content(store) == _content(reference) == sorted(rows)
    dt, ref = DeltaTable(store.path("bronze/events")), DeltaTable(reference.path("bronze/events"))
    assert dt.schema() == ref.schema() and dt.metadata().partition_columns == PARTS
    # the staged files themselves, moved into the table's Hive directories: no row written again
    table = Path(store.path("bronze/events"))
    adopted = list(table.rglob("*.parquet"))
    assert {p.name.split("-", 3)[3] for p in adopted} == staged_names
    assert all(len(p.relative_to(table).parts) == 3 for p in adopted)
    assert not list(Path(staged).rglob("*.parquet"))
    assert len(_commits(store)) == 1


def test_rows_of_an_unfinished_run_are_replaced_in_one_commit(spark, tmp_path, stores):
    """The re-run of a killed ingest stages rows bronze already holds: they are replaced, not
    duplicated, and only the staged partitions are searched."""
    store, reference = stores
    first = _rows("old", range(27))
    for s in stores:
        s.append("bronze/events", spark.createDataFrame(first, SCHEMA))
    again = [r for r in _rows("new", range(20, 33)) if r[1] != "c1"]  # 5 keys already there, 4 new
    staged, df = _stage(spark, tmp_path, again)
    searched = []
    read_files = store._read_files

    def spy(table, dt, files, *args, **kwargs):
        searched.extend(values for _, values in files)
        return read_files(table, dt, files, *args, **kwargs)

    store._read_files = spy
    store.upsert_staged("bronze/events", staged, df.schema, PARTS, ["event_id"], unique=True)
    del store._read_files
    reference.upsert("bronze/events", df, ["event_id"], unique=True)
    assert _content(store) == _content(reference)
    assert len(_content(store)) == 27 + 4 and sum(r[4].startswith("new") for r in _content(store)) == 9
    staged_parts = {(r[1], None if r[3] is None else r[3].isoformat()) for r in again}
    assert searched and {(v["cluster_id"], v["event_date"]) for v in searched} <= staged_parts
    latest = _commits(store)[-1]
    removed = [a["remove"] for a in latest if "remove" in a]
    assert removed and {(r["partitionValues"]["cluster_id"], r["partitionValues"]["event_date"])
                        for r in removed} <= staged_parts
    # the same rows staged again: the same content
    staged2, _ = _stage(spark, tmp_path, again, name="stage2")
    store.upsert_staged("bronze/events", staged2, df.schema, PARTS, ["event_id"], unique=True)
    assert _content(store) == _content(reference)


def test_rows_not_known_unique_or_another_layout_take_the_plain_upsert(spark, tmp_path, stores):
    store, reference = stores
    rows = _rows("p", range(9))
    staged, df = _stage(spark, tmp_path, rows + rows[:2])  # two keys twice
    store.upsert_staged("bronze/events", staged, df.schema, PARTS, ["event_id"], unique=False)
    assert _content(store) == sorted(rows)
    # a table partitioned by cluster only: the staged rows are read and written as an upsert would
    reference.append("gold/violations", spark.createDataFrame([], "event_id string, cluster_id string, n long"))
    staged2, df2 = _stage(spark, tmp_path, rows, name="stage2")
    assert reference.partition_columns("gold/violations") == ["cluster_id"]
    reference.upsert_staged("gold/violations", staged2, df2.schema, PARTS, ["event_id"], unique=True)
    assert sorted(r["event_id"] for r in reference.read("gold/violations").collect()) == sorted(r[0] for r in rows)


def test_a_relative_staging_path_is_adopted_with_its_partition_values(spark, tmp_path, stores):
    """A lake given as a relative path (``--lake lake``) stages under a relative path too (relative
    to the working directory this process and its JVM share)."""
    store, reference = stores
    rows = _rows("p", range(9))
    staged, df = _stage(spark, Path(os.path.relpath(tmp_path)), rows, name="relative-stage")
    assert not Path(staged).is_absolute()
    store.upsert_staged("bronze/events", staged, df.schema, PARTS, ["event_id"], unique=True)
    reference.upsert("bronze/events", df, ["event_id"], unique=True)
    assert _content(store) == _content(reference) == sorted(rows)
    assert DeltaTable(store.path("bronze/events")).metadata().partition_columns == PARTS


def test_nothing_staged_still_makes_the_table(spark, tmp_path, stores):
    store, _ = stores
    schema = spark.createDataFrame([], SCHEMA).schema
    store.upsert_staged("bronze/events", str(tmp_path / "never-written"), schema, PARTS, ["event_id"], unique=True)
    assert store.exists("bronze/events") and _content(store) == []
    assert store.read("bronze/events").columns == schema.fieldNames()
