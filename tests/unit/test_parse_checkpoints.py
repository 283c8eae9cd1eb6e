"""Checkpoint files and partition.metadata (reference §4.2, §4.3) -> checkpoint_* events."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import reduce
from pathlib import Path

import pytest

from epoch_audit.bronze.parsers import MALFORMED, finish_events
from epoch_audit.bronze.parsers.checkpoints import parse_checkpoints
from epoch_audit.bronze.parsers.file_kinds import detect_file_kind
from tests.helpers import lines_from_text

FIXTURES = Path(__file__).parents[1] / "fixtures" / "checkpoints"
HOSTS = {"broker-1": 1, "broker-2": 2, "broker-3": 3}


def utc(*parts: int) -> datetime:
    """The naive local datetime PySpark returns for this UTC instant (independent of the host TZ)."""
    return datetime.fromtimestamp(datetime(*parts, tzinfo=UTC).timestamp())


def _source(path: Path) -> str:
    return "cluster=c1/" + path.relative_to(FIXTURES).as_posix()


@pytest.fixture(scope="module")
def events(spark):
    """All checkpoint fixtures, framed with the detector's kind, parsed once."""
    frames = []
    for i, path in enumerate(sorted(p for p in FIXTURES.rglob("*") if p.is_file())):
        text = path.read_text()
        kind = detect_file_kind(path.name, text[:4096])
        assert kind is not None, path
        host = HOSTS[path.relative_to(FIXTURES).parts[0]]
        frames.append(lines_from_text(spark, text, _source(path), host_id=host, log_kind=kind, file_order=i))
    lines = reduce(lambda a, b: a.unionByName(b), frames)
    rows = finish_events(parse_checkpoints(lines)).collect()
    return [r.asDict() for r in rows]


def _of(events, source_suffix: str) -> list[dict]:
    return sorted((e for e in events if e["source_file"].endswith(source_suffix)), key=lambda e: e["line_number"])


def test_leader_epoch_checkpoint_entries(events):
    rows = _of(events, "broker-1/data/orders-3/leader-epoch-checkpoint")
    assert [(r["event_type"], r["topic"], r["partition"], r["leader_epoch"], r["offset"]) for r in rows] == [
        ("checkpoint_leader_epoch", "orders", 3, 0, 0),
        ("checkpoint_leader_epoch", "orders", 3, 4, 17302),
        ("checkpoint_leader_epoch", "orders", 3, 5, 18830),
    ]
    assert [r["details"]["entry_index"] for r in rows] == ["0", "1", "2"]
    assert all(r["broker_id"] == 1 and r["event_time"] is None for r in rows)
    assert all(r["log_kind"] == "leader-epoch-checkpoint" for r in rows)


def test_topic_with_dashes_splits_on_last_dash(events):
    rows = _of(events, "broker-1/data/payments-eu-12/leader-epoch-checkpoint")
    assert [(r["topic"], r["partition"], r["leader_epoch"], r["offset"]) for r in rows] == [
        ("payments-eu", 12, 0, 0)
    ]


def test_periodic_copy_has_suffix_time(events):
    rows = _of(events, "broker-2/data/orders-3/leader-epoch-checkpoint.2024-03-05T09-00-00")
    # The clamped first entry (§4.3) is kept as written; entry_index marks it.
    assert [(r["leader_epoch"], r["offset"], r["details"]["entry_index"]) for r in rows] == [
        (4, 17950, "0"),
        (5, 18830, "1"),
    ]
    assert rows[0]["event_time"] == utc(2024, 3, 5, 9, 0, 0)
    assert rows[0]["details"]["copy_time"] == "2024-03-05T09-00-00"
    assert rows[0]["broker_id"] == 2


def test_copy_time_read_in_source_time_zone(spark):
    text = "0\n1\norders 3 18822\n"
    source = "cluster=c1/broker-1/data/replication-offset-checkpoint.2024-03-05T09-00-00"
    lines = lines_from_text(spark, text, source, log_kind="replication-offset-checkpoint")
    row = parse_checkpoints(lines, source_time_zone="Europe/Berlin").collect()[0]
    # 09:00 in Berlin (CET, UTC+1) is 08:00 UTC; the session time zone is UTC.
    assert row["event_time"] == utc(2024, 3, 5, 8, 0, 0)


def test_replication_offset_checkpoint_series(events):
    plain = _of(events, "broker-1/data/replication-offset-checkpoint")
    assert [(r["event_type"], r["topic"], r["partition"], r["high_watermark"], r["offset"]) for r in plain] == [
        ("checkpoint_replication_offset", "orders", 3, 18822, None),
        ("checkpoint_replication_offset", "__consumer_offsets", 12, 554, None),
    ]
    first = _of(events, "replication-offset-checkpoint.2024-03-05T09-00-00")
    second = _of(events, "replication-offset-checkpoint.2024-03-05T09-00-05")
    assert [(r["topic"], r["partition"], r["high_watermark"]) for r in first] == [
        ("orders", 3, 18822),
        ("payments-eu", 12, 900),
    ]
    # A partition absent from a copy has no row there (not a 0).
    assert [(r["topic"], r["high_watermark"]) for r in second] == [("orders", 18790)]
    assert first[0]["event_time"] < second[0]["event_time"]


def test_recovery_point_and_log_start_offset(events):
    rec = _of(events, "broker-1/data/recovery-point-offset-checkpoint")
    assert [(r["event_type"], r["topic"], r["partition"], r["offset"], r["high_watermark"]) for r in rec] == [
        ("checkpoint_recovery_offset", "orders", 3, 18822, None),
        ("checkpoint_recovery_offset", "__consumer_offsets", 12, 554, None),
    ]
    lso = _of(events, "broker-1/data/log-start-offset-checkpoint")
    assert [(r["event_type"], r["topic"], r["partition"], r["log_start_offset"], r["offset"]) for r in lso] == [
        ("checkpoint_log_start_offset", "orders", 3, 17950, None)
    ]


def test_partition_metadata(events):
    rows = _of(events, "broker-1/data/orders-3/partition.metadata")
    assert [(r["event_type"], r["topic"], r["partition"], r["topic_id"], r["line_number"]) for r in rows] == [
        ("partition_metadata", "orders", 3, "m8C_0vTdQnKnfRBdE_b5Kg", 2)
    ]


def test_deleted_partition_directory(events):
    rows = _of(events, "audit-0.5b7c6d1e2f3a4b5c6d7e8f9a0b1c2d3e-delete/leader-epoch-checkpoint")
    assert [(r["topic"], r["partition"], r["leader_epoch"], r["offset"]) for r in rows] == [("audit", 0, 2, 40)]
    assert rows[0]["details"]["dir_state"] == "delete"


def test_malformed_entries_and_counts(events):
    bad = _of(events, "broker-3/data/orders-3/leader-epoch-checkpoint")
    assert [(r["line_number"], r["event_type"]) for r in bad] == [
        (2, MALFORMED),
        (3, "checkpoint_leader_epoch"),
        (4, MALFORMED),
    ]
    assert bad[0]["details"]["reason"].startswith("Expected [3] entries in checkpoint file [")
    assert bad[0]["details"]["reason"].endswith("but found only [2]")
    assert bad[2]["details"]["reason"] == "Malformed line in checkpoint file: 4 seventeen"
    assert bad[2]["topic"] is None and bad[2]["offset"] is None


def test_unknown_version_rejects_file(events):
    rows = _of(events, "broker-3/data/replication-offset-checkpoint")
    assert [(r["line_number"], r["event_type"]) for r in rows] == [(1, MALFORMED)]
    assert "Unrecognised checkpoint version: 1" in rows[0]["details"]["reason"]


def test_non_numeric_count(events):
    rows = _of(events, "broker-3/data/log-start-offset-checkpoint")
    assert [(r["line_number"], r["event_type"], r["details"]["reason"]) for r in rows] == [
        (2, MALFORMED, "Malformed checkpoint count line: x")
    ]


def test_malformed_partition_metadata(events):
    rows = _of(events, "broker-3/data/orders-3/partition.metadata")
    assert [(r["line_number"], r["event_type"]) for r in rows] == [(1, MALFORMED), (2, MALFORMED)]
    assert rows[0]["details"]["reason"] == "Unrecognised partition.metadata version: 1"
    assert rows[1]["details"]["reason"].startswith("Malformed partition.metadata topic_id line")


def test_other_log_kinds_are_ignored(spark):
    lines = lines_from_text(spark, "0\n1\norders 3 5\n", "cluster=c1/broker-1/server.log", log_kind="server")
    assert parse_checkpoints(lines).count() == 0
