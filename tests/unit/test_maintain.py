"""`epoch-audit maintain`: compaction, vacuum and log checkpoints on the delta-rs engine (the
delta-spark engine's is run by tests/e2e/test_end_to_end.py between two nights)."""

from __future__ import annotations

import glob
import json
import os

from deltalake import DeltaTable

from epoch_audit.cli import main
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import GOLD_STATE_TABLE, VIOLATIONS_TABLE
from epoch_audit.stages.maintain import lake_tables

SCHEMA = "cluster_id string, violation_id string, n int"


def _rows(store: DeltaRsStorage, table: str) -> list[tuple]:
    return sorted(tuple(r) for r in store.read(table).select("cluster_id", "violation_id", "n").collect())


def _files_on_disk(store: DeltaRsStorage, table: str) -> set[str]:
    root = store.path(table)
    return {
        os.path.relpath(f, root) for f in glob.glob(f"{root}/**/*.parquet", recursive=True)
        if "_delta_log" not in f
    }


def _live_files(store: DeltaRsStorage, table: str) -> set[str]:
    root = store.path(table)
    return {os.path.relpath(u.removeprefix("file://"), root) for u in DeltaTable(root).file_uris()}


def _nightly_lake(spark, tmp_path) -> DeltaRsStorage:
    """Small files as nights leave them: appends per cluster, a per-cluster replace, a state table."""
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    for night in range(3):
        rows = [(c, f"{c}-{night}-{i}", night) for c in ("a", "b") for i in range(2)]
        store.append(VIOLATIONS_TABLE, spark.createDataFrame(rows, SCHEMA))
    store.replace_where(VIOLATIONS_TABLE, spark.createDataFrame([("a", "a-new", 9)], SCHEMA), "cluster_id", ["a"])
    for night in range(2):
        store.overwrite(GOLD_STATE_TABLE, spark.createDataFrame([("a", "fp", night)], SCHEMA))
    return store


def test_maintain_compacts_vacuums_and_keeps_every_row(spark, tmp_path, capsys):
    store = _nightly_lake(spark, tmp_path)
    before = {t: _rows(store, t) for t in (VIOLATIONS_TABLE, GOLD_STATE_TABLE)}
    live_before = len(_live_files(store, VIOLATIONS_TABLE))
    assert live_before > 2 and len(_files_on_disk(store, VIOLATIONS_TABLE)) > live_before
    scratch = tmp_path / "lake" / "_staging" / "killed-run" / "violations"
    scratch.mkdir(parents=True)
    (scratch / "part-0.parquet").write_bytes(b"PAR1")

    assert main(["maintain", "--lake", str(tmp_path / "lake"), "--retention-hours", "0", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    done = summary["stages"]["maintain"]
    assert done["retention_hours"] == 0
    assert set(done["tables"]) == {VIOLATIONS_TABLE, GOLD_STATE_TABLE}
    table = done["tables"][VIOLATIONS_TABLE]
    assert table["files_before"] == live_before
    assert table["files_after"] == 2  # one file per cluster partition
    # cluster a's partition is one file already (its replace): compaction leaves it alone
    assert table["files_compacted"] == live_before - 1 and table["files_deleted"] > 0

    assert {t: _rows(store, t) for t in before} == before
    for t in before:  # nothing on disk but what the table reads
        assert _files_on_disk(store, t) == _live_files(store, t)
    assert not (tmp_path / "lake" / "_staging").exists()
    log = DeltaTable(store.path(VIOLATIONS_TABLE))
    assert glob.glob(f"{store.path(VIOLATIONS_TABLE)}/_delta_log/*.checkpoint.parquet")
    assert log.history(1)[0]["operation"] in ("VACUUM END", "OPTIMIZE")
    # the next night writes on as before (maintain, like every command, gave gold/violations the
    # columns this build adds: first_seen_at / last_seen_at)
    night = spark.createDataFrame([("b", "b-new", 1, None, None)],
                                  f"{SCHEMA}, first_seen_at timestamp, last_seen_at timestamp")
    store.replace_where(VIOLATIONS_TABLE, night, "cluster_id", ["b"])
    assert _rows(store, VIOLATIONS_TABLE) == [("a", "a-new", 9), ("b", "b-new", 1)]


def test_a_compacted_file_splits_at_row_groups(spark, tmp_path):
    """A compacted partition holds row groups of at most COMPACTED_ROW_GROUP_ROWS rows, zstd as
    delta-rs's own compaction writes: Spark splits a file of more than a few MB among the cores
    at its row groups (a file of one group is one task)."""
    import pyarrow.parquet as pq

    from epoch_audit.lake.delta_rs_maintain import COMPACTED_ROW_GROUP_ROWS, maintain_table

    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    rows = COMPACTED_ROW_GROUP_ROWS + 100
    for part in range(2):
        store.append(VIOLATIONS_TABLE, spark.range(rows).selectExpr(
            "'a' AS cluster_id", f"concat('v{part}-', id) AS violation_id", "CAST(id AS INT) AS n"))
    before = _rows(store, VIOLATIONS_TABLE)
    maintain_table(store.path(VIOLATIONS_TABLE), None, 0)
    (live,) = _live_files(store, VIOLATIONS_TABLE)
    meta = pq.ParquetFile(os.path.join(store.path(VIOLATIONS_TABLE), live)).metadata
    groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    assert sum(groups) == 2 * rows and len(groups) >= 3 and max(groups) <= COMPACTED_ROW_GROUP_ROWS
    assert meta.row_group(0).column(0).compression == "ZSTD"
    assert _rows(store, VIOLATIONS_TABLE) == before


def test_retention_keeps_the_versions_it_covers(spark, tmp_path):
    store = _nightly_lake(spark, tmp_path)
    first = _rows(DeltaRsStorage(spark, store.lake), VIOLATIONS_TABLE)
    assert main(["maintain", "--lake", store.lake]) == 0  # the profile's week
    assert _rows(store, VIOLATIONS_TABLE) == first
    assert len(_files_on_disk(store, VIOLATIONS_TABLE)) > len(_live_files(store, VIOLATIONS_TABLE))
    assert store.read(VIOLATIONS_TABLE, version=0).count() == 4  # time travel within the week still reads


def test_a_negative_retention_is_a_usage_error(spark, tmp_path, capsys):
    store = _nightly_lake(spark, tmp_path)
    assert main(["maintain", "--lake", store.lake, "--retention-hours", "-1"]) == 2
    assert "--retention-hours" in capsys.readouterr().err


def test_a_path_without_tables_is_no_lake(tmp_path, capsys):
    typo = tmp_path / "lakee"
    assert main(["maintain", "--lake", str(typo)]) == 2
    assert f"{typo}: holds no Delta table" in capsys.readouterr().err
    assert not typo.exists()  # nothing created at a mistyped path


def test_every_registered_table_is_maintained():
    names = lake_tables()
    assert VIOLATIONS_TABLE in names and "silver/partition_timeline" in names
    assert not any(name.endswith("/") for name in names)


def _sorted_by_type(store: DeltaRsStorage, where: str) -> list[bool]:
    import pyarrow.parquet as pq

    return [pq.read_table(u.removeprefix("file://"), columns=["event_type"]).column(0).to_pylist() == sorted(
        pq.read_table(u.removeprefix("file://"), columns=["event_type"]).column(0).to_pylist())
        for u in DeltaTable(store.path("bronze/events")).file_uris() if where in u]


def _bloom_filtered(store: DeltaRsStorage, table: str) -> set[tuple[str, bool]]:
    """(column, whether it has a Bloom filter) of every row group of the table's live files."""
    import pyarrow.parquet as pq

    found = set()
    for uri in DeltaTable(store.path(table)).file_uris():
        meta = pq.read_metadata(uri.removeprefix("file://"))
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for j in range(group.num_columns):
                chunk = group.column(j)
                if chunk.path_in_schema in ("event_id", "event_type"):
                    found.add((chunk.path_in_schema, chunk.bloom_filter_offset is not None))
    return found


def test_maintain_sorts_bronzes_new_state_partitions_by_event_type(spark, tmp_path, capsys):
    """The nights' state files, compacted, become one file sorted by type (the checks read by type:
    Parquet then skips the other types' row groups); rows never change; a sorted partition that got
    nothing new is not rewritten again."""
    import datetime as dt

    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    schema = "event_id string, event_type string, cluster_id string, event_class string, event_date date"
    day = dt.date(2024, 3, 5)
    types = ["isr_updated", "become_leader", "checkpoint_replication_offset", "become_follower"]
    for night in range(3):
        rows = [(f"{night}-{i}", types[(i + night) % 4], "a", "state", day) for i in range(40)]
        rows += [(f"{night}-t{i}", "request_fetch", "a", "traffic", day) for i in range(5)]
        rows += [(f"{night}-u", "become_leader", "a", "state", None)]  # untimed: a null day, left as it is
        store.append("bronze/events", spark.createDataFrame(rows, schema).repartition(3))
    before = sorted(tuple(r) for r in store.read("bronze/events").collect())
    assert not all(_sorted_by_type(store, "event_class=state/event_date=2024"))

    assert main(["maintain", "--lake", str(tmp_path / "lake"), "--retention-hours", "0", "--json"]) == 0
    done = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["stages"]["maintain"]["tables"]
    assert done["bronze/events"]["partitions_sorted"] == 1
    assert sorted(tuple(r) for r in store.read("bronze/events").collect()) == before
    assert _sorted_by_type(store, "event_class=state/event_date=2024") == [True]
    # every rewritten file keeps a Bloom filter on the ids, as the ingest pass writes them (the
    # cited evidence is looked up by id); no other column gets one
    assert _bloom_filtered(store, "bronze/events") == {("event_id", True), ("event_type", False)}

    assert main(["maintain", "--lake", str(tmp_path / "lake"), "--retention-hours", "0", "--json"]) == 0
    done = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["stages"]["maintain"]["tables"]
    assert done["bronze/events"]["partitions_sorted"] == 0
    # a later night's file: its partition is sorted again, with it
    store.append("bronze/events", spark.createDataFrame([("3-0", "alter_partition_failed", "a", "state", day)], schema))
    assert main(["maintain", "--lake", str(tmp_path / "lake"), "--retention-hours", "0", "--json"]) == 0
    done = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["stages"]["maintain"]["tables"]
    assert done["bronze/events"]["partitions_sorted"] == 1
    assert _sorted_by_type(store, "event_class=state/event_date=2024") == [True]
    assert len(store.read("bronze/events").collect()) == len(before) + 1
