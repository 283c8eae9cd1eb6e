"""Hostile input files (issue #19): wide lines, live files caught mid-line, cut gzips, FIFOs and
symlink loops, host folders whose id is out of range. None is fatal, every line is accounted."""

from __future__ import annotations

import gzip
import os
import random
import zlib
from pathlib import Path

from pyspark.sql import functions as F

from epoch_audit.bronze.discover import describe, discover_inputs, plan_reads
from epoch_audit.bronze.gzip_prefix import GzipPrefix
from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.stages.ingest import ACCOUNTING_TABLE, EVENTS_TABLE, FILES_TABLE, QUARANTINE_TABLE, ingest


def _stop(n: int, epoch: int) -> str:
    return (
        f"[2023-11-02 10:15:{n % 60:02d},211] TRACE [Broker id=2] Received StopReplica request StopReplicaPartitionState("
        f"partitionIndex=3, leaderEpoch={epoch}, deletePartition=false) correlation id {n} from controller 1 epoch 7 "
        "for partition orders-3 (state.change.logger)\n"
    )


def _info(n: int) -> str:
    return f"[2023-11-02 09:00:{n % 60:02d},000] INFO [KafkaServer id=2] started {n} (kafka.server.KafkaServer)\n"


def _accounting_totals(storage) -> dict[str, int]:
    rows = storage.read(ACCOUNTING_TABLE).collect()
    for row in rows:
        assert row["lines_read"] == row["parsed"] + row["irrelevant"] + row["malformed"], row["source_file"]
    return {k: sum(r[k] for r in rows) for k in ("lines_read", "parsed", "irrelevant", "malformed")}


def _events(storage) -> set[tuple]:
    cols = ["event_id", "line_number", "sub_index", "event_type", "leader_epoch", "correlation_id", "raw"]
    return {tuple(r) for r in storage.read(EVENTS_TABLE).select(*cols).collect()}


def test_gzip_prefix_reads_what_decompresses(tmp_path):
    text = "".join(_info(i) + f"{random.Random(i).getrandbits(400):x}\n" for i in range(200)).encode()
    whole = gzip.compress(text, mtime=0)
    cut = tmp_path / "cut.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with GzipPrefix(cut) as fh:
        prefix = fh.read()
        assert fh.problem == f"truncated gzip at compressed byte {len(whole) // 2}"
    assert prefix and text.startswith(prefix)
    # gzip.open raises at the cut; the decompressible prefix is what zlib yields before it
    assert prefix == zlib.decompressobj(wbits=31).decompress(whole[: len(whole) // 2])
    members = tmp_path / "members.gz"
    members.write_bytes(gzip.compress(text[:500], mtime=0) + gzip.compress(text[500:], mtime=0))
    with GzipPrefix(members) as fh:
        assert fh.read() == text and fh.problem is None


def test_live_file_waits_for_its_newline_without_spark(tmp_path):
    host = tmp_path / "cluster=c1" / "broker-2"
    host.mkdir(parents=True)
    live = host / "state-change.log"
    live.write_text(_stop(1, 5)[:40])  # only an unfinished first line: nothing to read yet
    plan = plan_reads([describe(live, AppConfig())], {})
    assert plan.tasks == [] and [reason for _, reason in plan.skipped] == ["unfinished_line"]
    live.write_text(_stop(1, 5) + _stop(2, 6)[:50])
    described = describe(live, AppConfig())
    assert described.readable_bytes == len(_stop(1, 5)) < described.size_bytes
    assert plan_reads([described], {}).tasks[0].end_byte == len(_stop(1, 5))
    # a rotated copy does not grow: read whole, last line included
    rotated = host / "state-change.log.2023-11-02-10"
    rotated.write_text(_stop(1, 5) + _stop(2, 6)[:50])
    assert describe(rotated, AppConfig()).readable_bytes == len(_stop(1, 5) + _stop(2, 6)[:50])


def test_wide_fetch_line_stores_its_text_once(spark, tmp_path):
    partitions = ",".join(
        f'{{"partition":{i},"currentLeaderEpoch":5,"fetchOffset":{1000 + i}}}'
        for i in range(10_000)
    )
    line = (
        '[2023-01-10 10:00:00,001] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":1,'
        '"requestApiVersion":12,"correlationId":501,"clientId":"broker-2-fetcher-0","requestApiKeyName":"FETCH"},'
        '"request":{"replicaId":2,"maxWaitMs":500,"minBytes":1,"maxBytes":10485760,"isolationLevel":0,"sessionId":88,'
        f'"sessionEpoch":4,"topics":[{{"topic":"orders","partitions":[{partitions}]}}],"forgottenTopicsData":[],'
        '"rackId":""},"response":{"throttleTimeMs":0,"errorCode":0,"sessionId":88,"responses":[]},'
        '"connection":"10.0.1.13:9092-10.0.1.11:41822-3","totalTimeMs":1.0} (kafka.request.logger)'
    )
    assert 500_000 < len(line) < AppConfig().ingest.max_line_chars
    host = tmp_path / "in" / "cluster=c1" / "broker-1"
    host.mkdir(parents=True)
    (host / "kafka-request.log.2023-01-10-10").write_text(line + "\n")
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    result = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "wide")
    assert (result.lines_read, result.parsed) == (1, 1)
    events = storage.read(EVENTS_TABLE)
    stats = events.agg(
        F.count("*").alias("n"),
        F.sum(F.length("raw")).alias("raw_chars"),
        F.max(F.when(F.col("sub_index") == 0, F.col("raw"))).alias("first_raw"),
        F.max("partition").alias("max_partition"),
        F.max(F.when(F.col("sub_index") == 9_999, F.col("offset"))).alias("last_offset"),
    ).first()
    assert stats["n"] == 10_000 and stats["max_partition"] == 9_999 and stats["last_offset"] == 10_999
    assert stats["first_raw"] == line  # the first event keeps the whole line (report evidence)
    # the line once plus a ~57-character pointer per later event (this line: ~56 characters per
    # partition), not the line 10,000 times
    assert stats["raw_chars"] < 2.5 * len(line)
    later = events.where(F.col("sub_index") == 1).first()["raw"]
    assert later == f"{line[:24]}…[+{len(line) - 24} chars: see sub_index 0]"


def test_live_file_caught_mid_line_equals_one_run_over_the_finished_file(spark, tmp_path):
    finished = _stop(1, 28) + _info(2) + _stop(3, 30) + _info(4) + _stop(5, 31)
    cut_at = len(_stop(1, 28) + _info(2)) + 60  # mid-way through "leader epoch 30"
    host = tmp_path / "in" / "cluster=c1" / "broker-2"
    host.mkdir(parents=True)
    live = host / "state-change.log"
    live.write_text(finished[:cut_at])
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    first = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "mid-1")
    assert first.lines_read == 2
    assert storage.read(FILES_TABLE).first()["consumed_bytes"] == len(_stop(1, 28) + _info(2))
    with live.open("a") as fh:
        fh.write(finished[cut_at:])
    second = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "mid-2")
    assert second.lines_read == 3 and second.malformed == 0

    once = DeltaRsStorage(spark, str(tmp_path / "lake-once"))
    ingest(spark, once, [str(tmp_path / "in")], AppConfig(), "once")
    assert _events(storage) == _events(once)
    assert 30 in {e[4] for e in _events(storage)}
    assert _accounting_totals(storage) == _accounting_totals(once)
    assert not storage.exists(QUARANTINE_TABLE) or storage.read(QUARANTINE_TABLE).count() == 0
    files, files_once = storage.read(FILES_TABLE).first(), once.read(FILES_TABLE).first()
    assert (files["consumed_bytes"], files["consumed_lines"], files["prefix_sha256"]) == (
        files_once["consumed_bytes"], files_once["consumed_lines"], files_once["prefix_sha256"]
    )


def test_truncated_gzip_keeps_its_prefix_and_quarantines_the_cut(spark, tmp_path):
    rng = random.Random(19)
    # noisy lines compress poorly, so a cut at a third of the bytes keeps about a third of the lines
    lines = [
        _stop(n, n) if n % 4 == 0 else _info(n).replace(" (kafka", f" {rng.getrandbits(800):x} (kafka")
        for n in range(40)
    ]
    whole = gzip.compress("".join(lines).encode(), mtime=0)
    cut = whole[: len(whole) // 3]
    prefix = zlib.decompressobj(wbits=31).decompress(cut)
    complete = prefix.count(b"\n")
    assert 5 <= complete < 40
    host = tmp_path / "in" / "cluster=c1" / "broker-2"
    host.mkdir(parents=True)
    (host / "state-change.log.2023-11-02-09.gz").write_bytes(cut)
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    result = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "cut")

    assert result.lines_read == complete + 1  # the complete lines and the truncation
    assert result.malformed == 1
    assert result.parsed + result.irrelevant + result.malformed == result.lines_read
    assert _accounting_totals(storage)["malformed"] == 1
    (row,) = storage.read(QUARANTINE_TABLE).collect()
    assert row["reason"] == f"truncated gzip at compressed byte {len(cut)}"
    assert row["line_number"] == complete + 1
    assert row["raw"] == prefix[prefix.rfind(b"\n") + 1:].decode("utf-8", errors="replace")
    stops = sum(1 for line in lines[:complete] if "StopReplica" in line)
    assert storage.read(EVENTS_TABLE).count() == stops
    again = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "cut-2")
    assert again.files_read == 0 and again.files_skipped == {"unchanged": 1}


def test_fifos_loops_log_named_folders_and_huge_host_ids_are_reported_not_fatal(spark, tmp_path):
    root = tmp_path / "in" / "cluster=c1"
    host = root / "broker-1709600000000"  # a millisecond timestamp: beyond int32
    host.mkdir(parents=True)
    (host / "state-change.log").write_text(_stop(1, 5) + _info(2))
    os.mkfifo(host / "server.log")
    (root / "loop.log").symlink_to(root / "loop.log")
    (root / "broker-3" / "controller.log").mkdir(parents=True)

    found = discover_inputs([str(tmp_path / "in")])
    assert [p.name for p in found.files] == ["state-change.log"]
    reasons = {Path(p).name: r for p, r in found.skipped}
    assert reasons == {"server.log": "fifo", "loop.log": "symlink loop", "controller.log": "directory named like a log file"}

    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    result = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "hostile")
    assert result.skipped_inputs == {"fifo": 1, "symlink loop": 1, "directory named like a log file": 1}
    assert {Path(s["path"]).name for s in result.skipped_input_paths} == {"server.log", "loop.log", "controller.log"}
    assert result.to_dict()["skipped_inputs"] == result.skipped_inputs
    assert (result.lines_read, result.parsed, result.irrelevant) == (2, 1, 1)
    event = storage.read(EVENTS_TABLE).first()
    assert event["host_id"] is None and event["broker_id"] == 2  # the line names its broker
    assert storage.read(FILES_TABLE).first()["host_id"] is None
