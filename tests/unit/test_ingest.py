"""Ingest end to end on a small real-format tree: accounting, idempotence, growth, duplicates."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path

import pytest

from epoch_audit.bronze.discover import InputError, completed, describe, discover, plan_reads, stream_order
from epoch_audit.bronze.read import TO_THE_END
from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.stages.ingest import (
    ACCOUNTING_TABLE,
    EVENTS_TABLE,
    FILES_TABLE,
    QUARANTINE_TABLE,
    ingest,
)

STOP = (
    "[2023-11-02 10:15:04,211] TRACE [Broker id=2] Received StopReplica request StopReplicaPartitionState("
    "partitionIndex=3, leaderEpoch=4, deletePartition=false) correlation id 57 from controller 1 epoch 7 "
    "for partition orders-3 (state.change.logger)\n"
)
IRRELEVANT = "[2023-11-02 09:00:00,000] INFO [KafkaServer id=2] started (kafka.server.KafkaServer)\n"
TRACE = (
    "[2023-11-02 09:00:01,000] ERROR [ReplicaManager broker=2] Error (kafka.server.ReplicaManager)\n"
    "java.lang.IllegalStateException: boom\n"
    "\tat kafka.server.ReplicaManager.x(ReplicaManager.scala:1)\n"
)


def _tree(root: Path) -> Path:
    host = root / "cluster=c1" / "broker-2"
    host.mkdir(parents=True)
    (host / "state-change.log").write_text(STOP + IRRELEVANT)
    with gzip.GzipFile(host / "server.log.2023-11-02-09.gz", "wb", mtime=0) as fh:
        fh.write((IRRELEVANT + TRACE + "\x00\x01 binary junk\n").encode())
    (host / "orders-3").mkdir()
    (host / "orders-3" / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n4 17302\n")
    retry = root / "cluster=c1" / "retry" / "broker-2"
    retry.mkdir(parents=True)
    (retry / "state-change.log").write_text(STOP + IRRELEVANT)
    (root / "truth.jsonl").write_text("{}\n")
    return root


def _count(storage, table):
    return storage.read(table).count() if storage.exists(table) else 0


def test_rotation_names():
    assert stream_order("state-change.log.2024-03-05-09") == ("state-change.log", 20240305090000)
    assert stream_order("state-change.log.2024-03-05-09.gz") == ("state-change.log", 20240305090000)
    assert stream_order("server.log")[0] == "server.log"
    assert stream_order("server.log")[1] > stream_order("server.log.2099-12-31-23")[1]
    assert stream_order("replication-offset-checkpoint.2024-03-05T09-10-11") == (
        "replication-offset-checkpoint", 20240305091011,
    )
    assert stream_order("server.log.2")[1] < stream_order("server.log.1")[1]


def test_identity_from_path(tmp_path):
    root = _tree(tmp_path / "in")
    files = {f.source_file.split("/in/")[1]: f for f in (describe(p, AppConfig()) for p in discover([str(root)]))}
    assert "truth.jsonl" not in files
    live = files["cluster=c1/broker-2/state-change.log"]
    retry = files["cluster=c1/retry/broker-2/state-change.log"]
    assert (live.cluster_id, live.host_id, live.log_kind) == ("c1", 2, "state-change")
    assert live.file_id == retry.file_id  # same bytes shipped twice: one history
    gz = files["cluster=c1/broker-2/server.log.2023-11-02-09.gz"]
    assert gz.compressed and gz.log_kind == "server" and gz.file_order == 20231102090000
    assert files["cluster=c1/broker-2/orders-3/leader-epoch-checkpoint"].log_kind == "leader-epoch-checkpoint"


def test_bad_path_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="input path not found"):
        discover([str(tmp_path / "nope")])


def test_ingest_accounts_every_line_and_is_idempotent(spark, tmp_path):
    root = _tree(tmp_path / "in")
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    first = ingest(spark, storage, [str(root)], AppConfig(), "run-1")
    # 2 (state-change) + 5 (server: 1 + 3-line trace + binary) + 4 (checkpoint); the retry copy is skipped
    assert first.lines_read == 11
    assert first.parsed + first.irrelevant + first.malformed == first.lines_read
    assert first.files_skipped == {"duplicate": 1}
    acc = storage.read(ACCOUNTING_TABLE).collect()
    for row in acc:
        assert row["lines_read"] == row["parsed"] + row["irrelevant"] + row["malformed"]
    quarantined = storage.read(QUARANTINE_TABLE).collect()
    assert any(r["reason"].startswith("binary content") for r in quarantined)
    events_before = _count(storage, EVENTS_TABLE)
    versions_before = len(storage.history(EVENTS_TABLE))

    again = ingest(spark, storage, [str(root)], AppConfig(), "run-2")
    assert again.files_read == 0 and again.lines_read == 0
    assert _count(storage, EVENTS_TABLE) == events_before
    assert len(storage.history(EVENTS_TABLE)) == versions_before

    # The live log grows: only the new line is read, numbered after the old ones.
    live = root / "cluster=c1" / "broker-2" / "state-change.log"
    live.write_text(STOP + IRRELEVANT + IRRELEVANT.replace("09:00:00", "09:00:05"))
    grown = ingest(spark, storage, [str(root)], AppConfig(), "run-3")
    assert grown.files_read == 1 and grown.lines_read == 1
    files = {r["source_file"].split("/in/")[1]: r for r in storage.read(FILES_TABLE).collect()}
    assert files["cluster=c1/broker-2/state-change.log"]["consumed_lines"] == 3
    chunks = [r for r in storage.read(ACCOUNTING_TABLE).collect() if r["source_file"].endswith("broker-2/state-change.log")]
    assert sorted((r["start_line"], r["end_line"]) for r in chunks) == [(1, 2), (3, 3)]


def _files_row(storage, suffix: str):
    (row,) = [r for r in storage.read(FILES_TABLE).collect() if r["source_file"].endswith(suffix)]
    return row


def test_a_compressed_log_is_decompressed_by_the_pass_alone_and_recorded_as_the_plan_would(spark, tmp_path):
    root = _tree(tmp_path / "in")
    gz = root / "cluster=c1" / "broker-2" / "server.log.2023-11-02-09.gz"
    content = gzip.decompress(gz.read_bytes())
    planned = describe(gz, AppConfig())
    # the plan reads its head and its trailer only; the pass reads, counts and hashes it
    assert planned.deferred and planned.size_bytes == -1 and planned.size_hint == len(content)
    scanned = completed(planned)
    assert not scanned.deferred and scanned.readable_bytes == len(content)
    assert scanned.readable_sha256 == hashlib.sha256(content).hexdigest()
    (task,) = [t for t in plan_reads([planned], {}).tasks]
    assert task.end_byte == TO_THE_END and task.expected_bytes == len(content)

    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    first = ingest(spark, storage, [str(root)], AppConfig(), "run-1")
    row = _files_row(storage, "server.log.2023-11-02-09.gz")
    assert (row["consumed_bytes"], row["prefix_sha256"]) == (len(content), scanned.readable_sha256)
    assert row["consumed_lines"] == content.count(b"\n")

    # The same file again, and a copy of it in a retry folder: the plan reads both (which copy is
    # longest, whether it continues what was consumed) and nothing is read twice.
    retry = root / "cluster=c1" / "retry" / "broker-2" / gz.name
    retry.write_bytes(gz.read_bytes())
    again = ingest(spark, storage, [str(root)], AppConfig(), "run-2")
    assert again.files_read == 0 and again.lines_read == 0
    assert again.files_skipped == {"duplicate": 2, "unchanged": 3}
    assert first.files_read == 3


def test_a_live_log_rotated_and_compressed_is_read_from_where_it_stopped(spark, tmp_path):
    host = tmp_path / "in" / "cluster=c1" / "broker-2"
    host.mkdir(parents=True)
    live = host / "state-change.log"
    live.write_text(STOP + IRRELEVANT)
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "night-1")
    # rotated overnight with one more line, compressed; a new live file starts
    whole = (STOP + IRRELEVANT + STOP.replace("10:15:04", "10:16:00")).encode()
    (host / "state-change.log.2023-11-02-10.gz").write_bytes(gzip.compress(whole, mtime=0))
    live.write_text(IRRELEVANT.replace("09:00:00", "11:00:00"))
    night = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "night-2")
    assert night.files_read == 2 and night.lines_read == 2  # the rotated file's new line, the new live file's
    row = _files_row(storage, "state-change.log.2023-11-02-10.gz")
    assert (row["consumed_bytes"], row["consumed_lines"]) == (len(whole), 3)
    assert row["prefix_sha256"] == hashlib.sha256(whole).hexdigest()
    chunks = sorted((r["start_line"], r["end_line"]) for r in storage.read(ACCOUNTING_TABLE).collect()
                    if "state-change.log" in r["source_file"])
    assert chunks == [(1, 1), (1, 2), (3, 3)]
