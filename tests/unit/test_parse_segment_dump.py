"""kafka-dump-log segment dumps (reference §4.1) -> data_batch events; and the file-kind detector."""

from __future__ import annotations

from datetime import datetime
from functools import reduce
from pathlib import Path

import pytest

from epoch_audit.bronze.parsers import MALFORMED, finish_events
from epoch_audit.bronze.parsers.file_kinds import (
    base_file_name,
    copy_suffix,
    copy_time,
    detect_file_kind,
)
from epoch_audit.bronze.parsers.segment_dump import parse_segment_dump
from tests.helpers import lines_from_text

DUMPS = Path(__file__).parents[1] / "fixtures" / "dumps"
CHECKPOINTS = Path(__file__).parents[1] / "fixtures" / "checkpoints"

# fixture -> where the collector put it (the 3.9 example was dumped inside the partition directory).
SOURCES = {
    "segment-3.9-deep-print.txt": "cluster=c1/broker-1/dumps/orders-3/00000000000000000000.log.txt",
    "segment-3.1-multi-section.txt": "cluster=c1/broker-2/dumps/payments.txt",
    "segment-legacy-and-malformed.txt": "cluster=c1/broker-2/dumps/audit.txt",
}


@pytest.fixture(scope="module")
def events(spark):
    frames = [
        lines_from_text(spark, (DUMPS / name).read_text(), source, host_id=i + 1, log_kind="segment-dump")
        for i, (name, source) in enumerate(SOURCES.items())
    ]
    rows = finish_events(parse_segment_dump(reduce(lambda a, b: a.unionByName(b), frames))).collect()
    return [r.asDict() for r in rows]


def _of(events, fixture: str) -> list[dict]:
    source = SOURCES[fixture]
    return sorted((e for e in events if e["source_file"] == source), key=lambda e: e["line_number"])


BATCH_FIELDS = (
    "event_type", "topic", "partition", "offset", "last_offset", "leader_epoch", "producer_id",
    "producer_epoch", "is_transactional", "is_control", "create_time_ms", "record_type",
)


def _batch(row: dict) -> tuple:
    return tuple(row[f] for f in BATCH_FIELDS)


def test_deep_iteration_print_data_log_3_9(events):
    rows = _of(events, "segment-3.9-deep-print.txt")
    # 7 lines, 2 batches: the record lines (``|``) belong to their batch and yield nothing.
    assert [r["line_number"] for r in rows] == [3, 6]
    assert [_batch(r) for r in rows] == [
        ("data_batch", "orders", 3, 0, 1, 5, 4001, 0, False, False, 1709629934012, None),
        ("data_batch", "orders", 3, 2, 2, 5, 5002, 3, True, True, 1709629935000, "COMMIT"),
    ]
    first = rows[0]
    assert first["event_time"] == datetime.fromtimestamp(1709629934.012)
    assert first["kafka_version_hint"] == "3.2+"
    assert first["broker_id"] == 1
    d = first["details"]
    assert (d["count"], d["timestamp_type"], d["position"], d["size"], d["crc"], d["magic"]) == (
        "2", "CreateTime", "0", "96", "1735491122", "2",
    )
    # ``Dumping 00000000000000000000.log`` names no directory: the collected file's directory does.
    assert d["topic_partition_from"] == "file_path"
    assert d["segment"] == "00000000000000000000.log"


def test_multi_section_dump_without_delete_horizon(events):
    rows = _of(events, "segment-3.1-multi-section.txt")
    # .index / .timeindex sections and the "Found ... invalid bytes" trailer yield nothing.
    assert [_batch(r) for r in rows] == [
        ("data_batch", "payments-eu", 12, 17302, 17304, 4, 3007, 1, False, False, 1636110310120, None),
        # LogAppendTime: the broker's clock, not a CreateTime.
        ("data_batch", "payments-eu", 12, 17305, 17305, 4, -1, -1, False, False, None, None),
        ("data_batch", "payments-eu", 12, 17306, 17309, 5, 3007, 1, False, False, 1636110315007, None),
        ("data_batch", "orders", 3, 0, 0, 0, -1, -1, False, False, None, None),
    ]
    assert [r["details"]["segment"] for r in rows] == [
        "00000000000000017302.log",
        "00000000000000017302.log",
        "00000000000000017306.log",
        "00000000000000000000.log",
    ]
    assert rows[1]["details"]["timestamp_type"] == "LogAppendTime"
    assert rows[1]["event_time"] == datetime.fromtimestamp(1636110311.004)
    assert rows[0]["details"]["compresscodec"] == "NONE"
    assert rows[0]["kafka_version_hint"] == "2.6-3.1"
    # ``count: null`` and NoTimestampType (-1) are kept raw, no event_time.
    last = rows[3]
    assert last["details"]["count"] == "null" and last["event_time"] is None
    assert last["details"]["dir_state"] == "delete"
    assert last["details"]["topic_partition_from"] == "dumping"


def test_legacy_magic_and_malformed_batch(events):
    rows = _of(events, "segment-legacy-and-malformed.txt")
    assert [(r["line_number"], r["event_type"]) for r in rows] == [
        (3, "data_batch"),
        (6, "data_batch"),
        (8, MALFORMED),
        (9, "data_batch"),
        (10, "data_batch"),
    ]
    legacy, v2, bad, txn, marker = rows
    # magic 1: only the last offset; no leader epoch.
    assert (legacy["offset"], legacy["last_offset"], legacy["leader_epoch"], legacy["details"]["magic"]) == (
        None, 4, None, "1",
    )
    assert (legacy["topic"], legacy["partition"]) == ("audit", 0)
    assert v2["details"]["delete_horizon_ms"] == "1709629999000"
    assert bad["details"] == {"reason": "unparseable kafka-dump-log batch line"}
    assert bad["topic"] is None and bad["offset"] is None
    assert (txn["is_transactional"], txn["is_control"], txn["producer_id"]) == (True, False, 77)
    # A control batch dumped without --deep-iteration: no marker line, record_type unknown.
    assert (marker["is_control"], marker["record_type"]) == (True, None)


def test_lowercase_record_line_and_crlf(spark):
    text = (
        "Dumping /data/kafka/orders-3/00000000000000000000.log\r\n"
        "Starting offset: 0\r\n"
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: 0 lastSequence: 0 producerId: 1 producerEpoch: 0 "
        "partitionLeaderEpoch: 9 isTransactional: false isControl: false position: 0 CreateTime: 1600000000000 "
        "size: 70 magic: 2 compresscodec: NONE crc: 1 isvalid: true\r\n"
        "| offset: 0 CreateTime: 1600000000000 keysize: -1 valuesize: 5 sequence: 0 headerKeys: [] payload: x\r\n"
    )
    lines = lines_from_text(spark, text, "cluster=c1/broker-1/d.txt", log_kind="segment-dump")
    rows = parse_segment_dump(lines).collect()
    assert [(r["event_type"], r["topic"], r["partition"], r["leader_epoch"]) for r in rows] == [
        ("data_batch", "orders", 3, 9)
    ]


# ---------------------------------------------------------------- file-kind detector


def _head(path: Path) -> str:
    return path.read_text()[:4096]


@pytest.mark.parametrize(
    ("fixture", "kind"),
    [
        (DUMPS / "segment-3.9-deep-print.txt", "segment-dump"),
        (DUMPS / "segment-3.1-multi-section.txt", "segment-dump"),
        (DUMPS / "segment-legacy-and-malformed.txt", "segment-dump"),
        (DUMPS / "metadata-3.9-reference-example.txt", "metadata-dump"),
        (DUMPS / "metadata-3.7-transactions.txt", "metadata-dump"),
        (DUMPS / "metadata-2.8-3.2-legacy-records.txt", "metadata-dump"),
        (DUMPS / "metadata-skip-record-metadata.txt", "metadata-dump"),
        (CHECKPOINTS / "broker-1/data/orders-3/leader-epoch-checkpoint", "leader-epoch-checkpoint"),
        (CHECKPOINTS / "broker-1/data/orders-3/partition.metadata", "partition-metadata"),
        (CHECKPOINTS / "broker-1/data/replication-offset-checkpoint", "replication-offset-checkpoint"),
        (CHECKPOINTS / "broker-1/data/recovery-point-offset-checkpoint", "recovery-point-offset-checkpoint"),
        (CHECKPOINTS / "broker-1/data/log-start-offset-checkpoint", "log-start-offset-checkpoint"),
    ],
)
def test_detect_fixture_kinds(fixture: Path, kind: str):
    assert detect_file_kind(fixture.name, _head(fixture)) == kind


def test_detect_periodic_copies():
    copy = CHECKPOINTS / "broker-1/data/replication-offset-checkpoint.2024-03-05T09-00-00"
    assert detect_file_kind(copy.name, _head(copy)) == "replication-offset-checkpoint"
    lec = CHECKPOINTS / "broker-2/data/orders-3/leader-epoch-checkpoint.2024-03-05T09-00-00"
    assert detect_file_kind(lec.name, _head(lec)) == "leader-epoch-checkpoint"
    assert detect_file_kind("log-start-offset-checkpoint.2024-03-05T09-00-00", "0\n0\n") == (
        "log-start-offset-checkpoint"
    )
    assert detect_file_kind("partition.metadata.2024-03-05T09-00-00", "") == "partition-metadata"


def test_copy_suffix_functions():
    name = "data/replication-offset-checkpoint.2024-03-05T09-00-05"
    assert copy_suffix(name) == "2024-03-05T09-00-05"
    assert copy_time(name) == datetime(2024, 3, 5, 9, 0, 5)
    assert base_file_name(name) == "replication-offset-checkpoint"
    assert copy_suffix("leader-epoch-checkpoint.2024-03-05T09-00-05.gz") == "2024-03-05T09-00-05"
    # Rotated log suffixes are not copy suffixes.
    assert copy_suffix("state-change.log.2024-03-05-09") is None
    assert copy_time("x.2024-13-05T09-00-05") is None
    assert base_file_name("server.log") == "server.log"


def test_content_beats_name():
    # A dump saved under a checkpoint-like name is still a dump; a checkpoint saved as .txt is
    # recognised by its layout when the layout is unambiguous.
    dump = _head(DUMPS / "segment-3.9-deep-print.txt")
    assert detect_file_kind("leader-epoch-checkpoint", dump) == "segment-dump"
    assert detect_file_kind("lec.txt", "0\n2\n4 17950\n5 18830\n") == "leader-epoch-checkpoint"
    assert detect_file_kind("pm.txt", "version: 0\ntopic_id: m8C_0vTdQnKnfRBdE_b5Kg") == "partition-metadata"
    # Offset checkpoints share one layout: without a telling name the member is unknown.
    assert detect_file_kind("hw.txt", "0\n1\norders 3 5\n") is None
    # Content says offset checkpoint, name says leader-epoch: no guess.
    assert detect_file_kind("leader-epoch-checkpoint", "0\n1\norders 3 5\n") is None
    # cleaner-offset-checkpoint has the layout but no reader here.
    assert detect_file_kind("cleaner-offset-checkpoint", "0\n1\norders 3 5\n") is None
    # Broken entries: still the checkpoint its name says (its parser quarantines the lines).
    assert detect_file_kind("leader-epoch-checkpoint", "0\n3\n0 0\n4 seventeen\n") == "leader-epoch-checkpoint"


def test_metadata_dump_run_inside_its_directory():
    # ``Dumping 00000000000000000000.log`` (no __cluster_metadata in the path): the raft control
    # batch that opens every metadata log, or a decoded payload, still tells it apart.
    head = (
        "Dumping 00000000000000000000.log\n"
        "Log starting offset: 0\n"
        "baseOffset: 0 lastOffset: 0 count: 1 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 "
        "partitionLeaderEpoch: 1 isTransactional: false isControl: true deleteHorizonMs: OptionalLong.empty "
        "position: 0 CreateTime: 1709629933900 size: 80 magic: 2 compresscodec: none crc: 3114220127 isvalid: true\n"
        "| offset: 0 CreateTime: 1709629933900 keySize: 4 valueSize: 11 sequence: -1 headerKeys: [] "
        "controlType: LEADER_CHANGE(2)\n"
    )
    assert detect_file_kind("meta.txt", head) == "metadata-dump"
    assert detect_file_kind("meta.txt", head.replace("controlType: LEADER_CHANGE(2)", "")) == "segment-dump"


def test_ordinary_logs_are_none():
    log = "[2024-03-05 09:00:00,000] INFO [Broker id=1] Handling LeaderAndIsr request (state.change.logger)\n"
    assert detect_file_kind("state-change.log", log) is None
    assert detect_file_kind("server.log.2024-03-05-09", log) is None
    assert detect_file_kind("server.log", "") is None
    # A log line that merely mentions a dump header is not a dump.
    assert detect_file_kind("server.log", "[2024-03-05 09:00:00,000] INFO Dumping x (y)\n") is None
