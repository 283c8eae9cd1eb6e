"""The ingest pass's Python workers write its staged Parquet themselves on a local lake
(``bronze.single_pass.write_pass``): the lake they leave equals the one Spark's write of the same
pass leaves (``pass_rows``, still used for object stores), directory names, types and rows."""

from __future__ import annotations

import gzip
import shutil
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from epoch_audit.config import AppConfig
from epoch_audit.lake import staging
from epoch_audit.lake.delta_stats import file_stats
from epoch_audit.lake.staging import HiveParquetWriter, hive_dir, remove_unlisted
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.stages import ingest as ingest_stage
from epoch_audit.stages.ingest import ACCOUNTING_TABLE, EVENTS_TABLE, FILES_TABLE, QUARANTINE_TABLE, ingest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
STOP = (
    "[2023-11-02 10:15:04,211] TRACE [Broker id=2] Received StopReplica request StopReplicaPartitionState("
    "partitionIndex=3, leaderEpoch=4, deletePartition=false) correlation id 57 from controller 1 epoch 7 "
    "for partition orders-3 (state.change.logger)\n"
)
ODD_CLUSTER = "we:ird%id#1 ü=x"  # characters Spark escapes in a partition directory, and some it keeps


def _inputs(root: Path) -> Path:
    shutil.copytree(FIXTURES / "kafka", root / "fixtures" / "kafka")
    shutil.copytree(FIXTURES / "request", root / "fixtures" / "request")
    shutil.copytree(FIXTURES / "dumps", root / "fixtures" / "dumps")
    host = root / f"cluster={ODD_CLUSTER}" / "broker-2"
    host.mkdir(parents=True)
    (host / "state-change.log").write_text(STOP + "not a log line at all\n" + STOP.replace("10:15:04", "10:16:00"))
    with gzip.GzipFile(host / "server.log.2023-11-02-09.gz", "wb", mtime=0) as fh:
        fh.write(b"[2023-11-02 09:00:00,000] INFO started (kafka.server.KafkaServer)\n\x00\x01 binary junk\n")
    return root


def _rows(storage: DeltaRsStorage, table: str, drop: tuple[str, ...] = ()) -> list[tuple]:
    frame = storage.read(table)
    kept = [c for c in frame.columns if c not in drop]
    return sorted(tuple(r) for r in frame.select(*kept).collect())


def test_workers_stage_what_sparks_write_staged(spark, tmp_path, monkeypatch):
    inputs = [str(_inputs(tmp_path / "in"))]
    lakes = {}
    for workers in (True, False):
        monkeypatch.setattr(ingest_stage, "workers_write", lambda _dir, w=workers: w)
        storage = DeltaRsStorage(spark, str(tmp_path / f"lake-{workers}"))
        result = ingest(spark, storage, inputs, AppConfig(), "run-1")
        assert result.malformed >= 2 and result.parsed > 100
        assert not (tmp_path / f"lake-{workers}" / "_staging" / "run-1").exists()
        lakes[workers] = (storage, result)
    (ours, ours_result), (sparks, sparks_result) = lakes[True], lakes[False]
    assert ours_result.to_dict() | {"step_seconds": {}} == sparks_result.to_dict() | {"step_seconds": {}}
    assert ours.read(EVENTS_TABLE).schema == sparks.read(EVENTS_TABLE).schema
    assert _rows(ours, EVENTS_TABLE) == _rows(sparks, EVENTS_TABLE)
    assert ODD_CLUSTER in {r[0] for r in ours.read(EVENTS_TABLE).select("cluster_id").distinct().collect()}
    assert _rows(ours, QUARANTINE_TABLE) == _rows(sparks, QUARANTINE_TABLE)
    assert _rows(ours, ACCOUNTING_TABLE) == _rows(sparks, ACCOUNTING_TABLE)
    assert _rows(ours, FILES_TABLE, ("last_delivered_at",)) == _rows(sparks, FILES_TABLE, ("last_delivered_at",))
    # the same partition directories and file statistics in the Delta log
    def layout(storage):
        return sorted(((sorted(values.items()), _stats_of(uri)) for uri, _, values in
                       storage._files(storage._table(EVENTS_TABLE))), key=repr)
    assert layout(ours) == layout(sparks)


def _stats_of(uri: str) -> str:
    return file_stats(pq.read_metadata(uri.removeprefix("file://")))


def test_hive_dir_names_the_directories_sparks_write_names(spark, tmp_path):
    values = [ODD_CLUSTER, "a/b", "tab\there", "{x}[y]^'\"*?\\", "plain-1.2", None, ""]
    frame = spark.createDataFrame([(v, date(2024, 3, 5), 1) for v in values], "k string, d date, n int")
    frame.write.partitionBy("k", "d").parquet(str(tmp_path / "spark"))
    written = {str(p.parent.relative_to(tmp_path / "spark")) for p in (tmp_path / "spark").rglob("*.parquet")}
    assert written == {hive_dir(("k", "d"), (v, date(2024, 3, 5))) for v in values}


def test_a_partition_past_the_buffer_is_written_in_row_groups(tmp_path, monkeypatch):
    monkeypatch.setattr(staging, "ROW_GROUP_BYTES", 1 << 10)
    schema = pa.schema([("kind", pa.string()), ("n", pa.int64()), ("text", pa.string())])
    writer = HiveParquetWriter(str(tmp_path), schema, ["kind"], "part-x")
    file_schema = pa.schema([schema.field("n"), schema.field("text")])
    for start in range(0, 300, 50):
        batch = pa.RecordBatch.from_pylist([{"n": i, "text": "x" * 20} for i in range(start, start + 50)],
                                           schema=file_schema)
        writer.write(("a" if start < 200 else None,), batch)
    written = dict(writer.close())
    assert written == {"kind=a/part-x.c000.snappy.parquet": 200,
                       "kind=__HIVE_DEFAULT_PARTITION__/part-x.c000.snappy.parquet": 100}
    meta = pq.read_metadata(tmp_path / "kind=a" / "part-x.c000.snappy.parquet")
    assert meta.num_row_groups > 1 and meta.num_rows == 200
    assert pq.read_table(tmp_path / "kind=a" / "part-x.c000.snappy.parquet").column("n").to_pylist() == list(range(200))
    assert '"minValues": {"n": 0' in file_stats(meta) and '"maxValues": {"n": 199' in file_stats(meta)


def test_columns_of_one_value_a_row_are_written_without_a_dictionary(tmp_path):
    from epoch_audit.bronze.single_pass import PASS_ARROW_SCHEMA, STAGED_PARTITIONS

    writer = HiveParquetWriter(str(tmp_path), PASS_ARROW_SCHEMA, STAGED_PARTITIONS, "part-x")
    rows = [{"event_id": f"{i:064x}", "event_type": "request_fetch", "raw": f"line {i}", "isr": [1, 2],
             "details": {"acks": "-1", "session_epoch": str(i)}} for i in range(100)]
    batch = pa.RecordBatch.from_pylist(rows, schema=writer.file_schema)
    writer.write(tuple("x" for _ in STAGED_PARTITIONS), batch)
    (relative, n), = writer.close()
    meta = pq.read_metadata(tmp_path / relative)
    columns = {meta.row_group(0).column(j).path_in_schema: meta.row_group(0).column(j) for j in range(meta.num_columns)}
    # every leaf path the properties name is one the file has (a name that matched no leaf would fall silently)
    assert set(staging.NO_DICTIONARY) <= set(columns)
    dictionary = {path for path, c in columns.items() if "RLE_DICTIONARY" in c.encodings}
    assert dictionary.isdisjoint(staging.NO_DICTIONARY)
    assert {"event_type", "isr.list.element", "details.key_value.key"} <= dictionary
    assert all(c.is_stats_set for c in columns.values())
    assert n == 100 and pq.read_table(tmp_path / relative).column("event_id").to_pylist() == [r["event_id"] for r in rows]


def test_a_lookup_by_event_id_reads_only_the_row_groups_holding_it(spark, tmp_path, monkeypatch):
    from epoch_audit.bronze.single_pass import PASS_ARROW_SCHEMA, STAGED_PARTITIONS

    monkeypatch.setattr(staging, "ROW_GROUP_BYTES", 32 << 10)
    writer = HiveParquetWriter(str(tmp_path), PASS_ARROW_SCHEMA, STAGED_PARTITIONS, "part-x")
    ids = [f"{i * 7919:064x}" for i in range(4000)]
    for start in range(0, len(ids), 250):
        rows = [{"event_id": i, "event_type": "request_fetch", "raw": "x" * 40} for i in ids[start:start + 250]]
        writer.write(tuple("x" for _ in STAGED_PARTITIONS), pa.RecordBatch.from_pylist(rows, schema=writer.file_schema))
    (relative, n), = writer.close()
    meta = pq.read_metadata(tmp_path / relative)
    groups = [meta.row_group(g) for g in range(meta.num_row_groups)]
    assert n == 4000 and len(groups) >= 8
    for group in groups:
        chunk = next(group.column(j) for j in range(group.num_columns) if group.column(j).path_in_schema == "event_id")
        assert chunk.bloom_filter_offset is not None and chunk.bloom_filter_length > 0
    # Spark tests the IN list against each row group's filter: only the group holding the ids is read
    wanted = ids[1300:1303]
    query = spark.read.parquet(str(tmp_path / relative)).where(F.col("event_id").isin(wanted)).select("event_id")
    assert sorted(r["event_id"] for r in query.collect()) == wanted
    scan = query._jdf.queryExecution().executedPlan().collectLeaves().head()
    read = scan.metrics().apply("numOutputRows").value()
    assert 0 < read <= max(g.num_rows for g in groups) * 2 < 4000, read


@pytest.mark.parametrize("listed", [set(), {"k=a/kept.parquet"}])
def test_files_no_finished_task_lists_are_removed(tmp_path, listed):
    for rel in ("k=a/kept.parquet", "k=b/dead-attempt.parquet", "_SUCCESS"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    remove_unlisted(str(tmp_path), listed)
    left = {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()}
    assert left == listed | {"_SUCCESS"}


def test_partition_parts_splits_by_every_key_and_keeps_one_key_batches_whole():
    days = [date(2024, 3, 4), date(2024, 3, 5)]
    mixed = pa.RecordBatch.from_pydict({
        "kind": ["event", "event", "event", "quarantine"],
        "day": [days[0], days[1], days[0], None],
        "n": [1, 2, 3, 4],
    })
    parts = {key: part.column("n").to_pylist() for key, part in staging.partition_parts(mixed, ("kind", "day"))}
    assert parts == {("event", days[0]): [1, 3], ("event", days[1]): [2], ("quarantine", None): [4]}
    one = mixed.slice(1, 1)
    assert [(k, p.num_rows) for k, p in staging.partition_parts(one, ("kind", "day"))] == [(("event", days[1]), 1)]
    nulls = pa.RecordBatch.from_pydict({"kind": pa.array([None, None], pa.string()), "n": [1, 2]})
    assert [(k, p.num_rows) for k, p in staging.partition_parts(nulls, ("kind",))] == [((None,), 2)]
    some_null = pa.RecordBatch.from_pydict({"kind": pa.array(["a", None], pa.string()), "n": [1, 2]})
    assert {k for k, _ in staging.partition_parts(some_null, ("kind",))} == {("a",), (None,)}
    assert list(staging.partition_parts(mixed.slice(0, 0), ("kind", "day"))) == []
