"""kafka-dump-log --cluster-metadata-decoder output (reference §3.1, §3.2) -> md_* events."""

from __future__ import annotations

from datetime import datetime
from functools import reduce
from pathlib import Path

import pytest

from epoch_audit.bronze.parsers import MALFORMED, finish_events
from epoch_audit.bronze.parsers.metadata_dump import parse_metadata_dump
from tests.helpers import lines_from_text

DUMPS = Path(__file__).parents[1] / "fixtures" / "dumps"
FIXTURES = (
    "metadata-3.9-reference-example.txt",
    "metadata-3.7-transactions.txt",
    "metadata-2.8-3.2-legacy-records.txt",
    "metadata-skip-record-metadata.txt",
    "metadata-3.9-snapshot-and-log.txt",
)
TOPIC_ID = "m8C_0vTdQnKnfRBdE_b5Kg"


@pytest.fixture(scope="module")
def events(spark):
    frames = [
        lines_from_text(
            spark, (DUMPS / name).read_text(), f"cluster=c1/broker-3000/{name}", host_id=3000, log_kind="metadata-dump"
        )
        for name in FIXTURES
    ]
    rows = finish_events(parse_metadata_dump(reduce(lambda a, b: a.unionByName(b), frames))).collect()
    by_file: dict[str, list[dict]] = {}
    for r in rows:
        by_file.setdefault(r["source_file"].rsplit("/", 1)[-1], []).append(r.asDict())
    return {k: sorted(v, key=lambda e: e["line_number"]) for k, v in by_file.items()}


def _at(rows: list[dict], line: int) -> dict:
    (row,) = [r for r in rows if r["line_number"] == line]
    return row


def test_reference_example_3_9(events):
    rows = events["metadata-3.9-reference-example.txt"]
    assert [(r["line_number"], r["event_type"], r["record_type"], r["metadata_offset"]) for r in rows] == [
        (3, "md_batch", None, 120),
        (4, "md_partition_change", "PartitionChangeRecord", 120),
        (5, "md_broker_registration_change", "BrokerRegistrationChangeRecord", 121),
        (6, "md_partition_change", "PartitionChangeRecord", 122),
        (7, "md_other", "NoOpRecord", 123),
        (8, "md_other", "ConfigRecord", 124),
        (9, "md_other", "FeatureLevelRecord", 125),
        (10, "md_other", "ProducerIdsRecord", 126),
    ]
    batch = _at(rows, 3)
    assert (batch["offset"], batch["last_offset"], batch["quorum_epoch"], batch["create_time_ms"]) == (
        120, 121, 4, 1709629934012,
    )
    assert batch["event_time"] == datetime.fromtimestamp(1709629934.012)
    assert (batch["producer_id"], batch["is_control"], batch["details"]["count"]) == (-1, False, "2")

    isr_only = _at(rows, 4)
    # ISR-only change: no leader key -> leader null (not -2, not derived); no LE/PE here.
    assert (isr_only["topic_id"], isr_only["partition"], isr_only["isr"], isr_only["leader"]) == (
        TOPIC_ID, 3, [1, 2], None,
    )
    assert (isr_only["leader_epoch"], isr_only["partition_epoch"], isr_only["replicas"]) == (None, None, None)
    # Records share their batch's commit point.
    assert (isr_only["offset"], isr_only["last_offset"], isr_only["quorum_epoch"]) == (120, 121, 4)
    assert isr_only["create_time_ms"] == 1709629934012

    fence = _at(rows, 5)
    assert (fence["broker_id"], fence["broker_epoch"], fence["fenced"], fence["in_controlled_shutdown"]) == (
        3, 4294967412, True, None,
    )
    assert fence["details"]["fenced_raw"] == "1"

    # Offsets 122-126 sit outside batch 120-121 (their batch lines are cut from the example):
    # they keep their own offset and CreateTime and borrow no quorum epoch.
    leader_change = _at(rows, 6)
    assert (leader_change["partition"], leader_change["isr"], leader_change["leader"]) == (0, [2], 2)
    assert (leader_change["quorum_epoch"], leader_change["offset"], leader_change["create_time_ms"]) == (
        None, None, 1709629934020,
    )
    assert _at(rows, 9)["details"]["data"] == '{"name":"metadata.version","featureLevel":14}'
    assert _at(rows, 8)["broker_id"] == 3000  # not a broker record: the host's own id


def test_transactions_and_registration_3_7(events):
    rows = events["metadata-3.7-transactions.txt"]
    kinds = [(r["line_number"], r["event_type"]) for r in rows]
    assert kinds == [
        (3, "md_batch"),
        (5, "md_batch"),
        (6, "md_begin_transaction"),
        (7, "md_other"),
        (8, "md_other"),
        (9, "md_batch"),
        (10, "md_abort_transaction"),
        (11, "md_batch"),
        (12, "md_begin_transaction"),
        (13, "md_other"),
        (14, "md_begin_transaction"),
        (15, "md_other"),
        (16, "md_end_transaction"),
        (17, "md_batch"),
        (18, "md_other"),
        (19, "md_register_broker"),
        (20, "md_topic"),
        (21, "md_partition"),
        (22, "md_batch"),
        (23, "md_broker_registration_change"),
        (24, "md_broker_registration_change"),
        (25, "md_partition_change"),
        (26, MALFORMED),
        (27, "md_batch"),
        (28, "md_remove_topic"),
        (29, "md_unregister_broker"),
        (30, MALFORMED),
        (31, MALFORMED),
    ]
    # The raft LEADER_CHANGE control batch: one md_batch, its control type, no record event.
    control = _at(rows, 3)
    assert (control["is_control"], control["record_type"], control["quorum_epoch"]) == (True, "LEADER_CHANGE", 1)

    begin = _at(rows, 6)
    assert (begin["metadata_offset"], begin["offset"], begin["last_offset"], begin["quorum_epoch"]) == (1, 1, 3, 1)
    assert begin["details"]["name"] == "Bootstrap records"
    abort = _at(rows, 10)
    assert (abort["metadata_offset"], abort["quorum_epoch"], abort["details"]["reason"]) == (
        4, 2, "Controller failover",
    )
    assert "name" not in _at(rows, 14)["details"]  # tagged name left out at its default
    assert (_at(rows, 16)["metadata_offset"], _at(rows, 16)["record_type"]) == (9, "EndTransactionRecord")

    reg = _at(rows, 19)
    assert (reg["broker_id"], reg["broker_epoch"], reg["fenced"], reg["in_controlled_shutdown"]) == (
        1, 4294967299, True, False,
    )
    assert reg["details"]["record_version"] == "3"
    assert reg["details"]["incarnation_id"] == "hKx2mB0sT5y9c3QwErTyUi"

    topic = _at(rows, 20)
    assert (topic["topic"], topic["topic_id"], topic["metadata_offset"]) == ("orders", TOPIC_ID, 12)
    part = _at(rows, 21)
    assert (
        part["topic"], part["topic_id"], part["partition"], part["leader"], part["leader_epoch"],
        part["partition_epoch"], part["isr"], part["replicas"], part["adding_replicas"], part["removing_replicas"],
    ) == ("orders", TOPIC_ID, 3, 1, 0, 0, [1, 2, 3], [1, 2, 3], [], [])

    unfence = _at(rows, 23)
    assert (unfence["broker_id"], unfence["fenced"], unfence["in_controlled_shutdown"]) == (1, False, None)
    assert unfence["details"]["fenced_raw"] == "-1"
    shutdown = _at(rows, 24)
    assert (shutdown["broker_id"], shutdown["broker_epoch"], shutdown["fenced"], shutdown["in_controlled_shutdown"]) == (
        2, 4294967301, None, True,
    )
    assert shutdown["details"]["in_controlled_shutdown_raw"] == "1"

    change = _at(rows, 25)
    # leader -1 (no leader) kept raw; reassignment and ELR fields as written.
    assert (change["topic"], change["leader"], change["isr"], change["replicas"]) == ("orders", -1, [1, 3], [1, 2, 3, 4])
    assert (change["adding_replicas"], change["removing_replicas"]) == ([4], [2])
    assert (change["details"]["leader_recovery_state"], change["details"]["elr"]) == ("1", "[3]")
    assert change["leader_epoch"] is None and change["partition_epoch"] is None

    assert _at(rows, 26)["details"]["reason"] == (
        "undecodable metadata record: Error at 17, skipping. Unknown metadata id 99"
    )
    removed = _at(rows, 28)
    assert (removed["topic"], removed["topic_id"]) == ("orders", TOPIC_ID)
    unreg = _at(rows, 29)
    assert (unreg["broker_id"], unreg["broker_epoch"], unreg["fenced"]) == (2, 4294967301, None)
    assert _at(rows, 30)["details"]["reason"] == "unparseable kafka-dump-log batch line"
    assert _at(rows, 31)["details"]["reason"] == "unparseable metadata record payload"
    # The "Found N invalid bytes" trailer, header lines and the control record line yield nothing.
    assert not {1, 2, 4, 32} & {r["line_number"] for r in rows}


def test_legacy_records_2_8_to_3_2(events):
    rows = events["metadata-2.8-3.2-legacy-records.txt"]
    reg = _at(rows, 4)
    # 2.8 RegisterBrokerRecord has no Fenced / InControlledShutdown: the schema defaults apply.
    assert (reg["broker_id"], reg["broker_epoch"], reg["fenced"], reg["in_controlled_shutdown"]) == (
        1, 10, True, False,
    )
    assert "fenced_raw" not in reg["details"]
    assert _at(rows, 5)["details"]["data"] == '{"name":"metadata.version","minFeatureLevel":1,"maxFeatureLevel":1}'
    unfence = _at(rows, 8)
    assert (unfence["event_type"], unfence["broker_id"], unfence["broker_epoch"], unfence["fenced"]) == (
        "md_unfence_broker", 1, 10, False,
    )
    fence = _at(rows, 13)
    assert (fence["event_type"], fence["broker_id"], fence["broker_epoch"], fence["fenced"]) == (
        "md_fence_broker", 2, 12, True,
    )
    part = _at(rows, 10)
    # null reassignment arrays as written (v0 writer), topic from the file's TopicRecord.
    assert (part["topic"], part["partition"], part["adding_replicas"], part["removing_replicas"]) == (
        "payments-eu", 0, None, None,
    )
    shrink, leader = _at(rows, 11), _at(rows, 14)
    assert (shrink["isr"], shrink["leader"]) == ([1], None)
    assert (leader["isr"], leader["leader"], leader["topic"]) == (None, 2, "payments-eu")
    assert (leader["quorum_epoch"], leader["offset"], leader["last_offset"]) == (2, 7, 9)
    brc = _at(rows, 15)
    assert (brc["broker_id"], brc["broker_epoch"], brc["fenced"]) == (3, 14, True)


def test_skip_record_metadata_offsets_from_batch(events):
    rows = events["metadata-skip-record-metadata.txt"]
    # No ``offset:`` on the record lines: baseOffset + index inside the batch.
    assert [(r["line_number"], r["event_type"], r["metadata_offset"], r["quorum_epoch"]) for r in rows] == [
        (3, "md_batch", 500, 7),
        (4, "md_partition_change", 500, 7),
        (5, "md_partition_change", 501, 7),
        (6, "md_batch", 502, 7),
        (7, "md_other", 502, 7),
    ]
    assert (_at(rows, 4)["leader"], _at(rows, 4)["isr"]) == (3, [2, 3])
    assert _at(rows, 7)["create_time_ms"] == 1709700000500


def test_snapshot_sections_carry_no_log_offsets(events):
    """§3.2: a snapshot (``<end>-<epoch>.checkpoint``) or bootstrap file numbers its batches from 0.

    Those offsets are not ``__cluster_metadata`` log offsets: a snapshot's records must not claim
    log offsets 0..N (they would collide with the log's own records there), nor a time.
    """
    rows = events["metadata-3.9-snapshot-and-log.txt"]
    assert [(r["line_number"], r["event_type"], r["record_type"], r["metadata_offset"]) for r in rows] == [
        (3, "md_batch", "SNAPSHOT_HEADER", None),
        (5, "md_batch", None, None),
        (6, "md_register_broker", "RegisterBrokerRecord", None),
        (7, "md_topic", "TopicRecord", None),
        (8, "md_partition", "PartitionRecord", None),
        (9, "md_batch", "SNAPSHOT_FOOTER", None),
        (13, "md_batch", None, None),
        (14, "md_other", "FeatureLevelRecord", None),
        (17, "md_batch", "KRAFT_VOTERS", 120),
        (19, "md_batch", None, 121),
        (20, "md_partition_change", "PartitionChangeRecord", 121),
        (21, "md_broker_registration_change", "BrokerRegistrationChangeRecord", 122),
    ]
    for r in rows[:8]:
        assert (r["offset"], r["last_offset"], r["event_time"], r["create_time_ms"]) == (None, None, None, None), r
    header = _at(rows, 3)["details"]
    assert (header["snapshot"], header["snapshot_end_offset"], header["snapshot_epoch"]) == ("snapshot", "120", "4")
    assert (header["snapshot_offset"], header["snapshot_last_offset"]) == ("0", "0")
    reg = _at(rows, 6)
    # the record's fields are still read (state as of the snapshot's end offset)
    assert (reg["broker_id"], reg["broker_epoch"], reg["fenced"], reg["in_controlled_shutdown"]) == (
        3, 4294967412, False, False,
    )
    assert reg["details"]["snapshot_offset"] == "1"
    assert reg["details"]["record_create_time_ms"] == "1709629999000"
    part = _at(rows, 8)
    assert (part["topic"], part["partition"], part["leader"], part["leader_epoch"], part["partition_epoch"]) == (
        "orders", 3, 1, 7, 12,
    )
    assert part["details"]["snapshot_end_offset"] == "120"
    boot = _at(rows, 14)["details"]
    assert (boot["snapshot"], boot["snapshot_offset"]) == ("bootstrap", "0")
    assert "snapshot_end_offset" not in boot
    # the log section after the snapshots is read as usual; the topic name comes from the
    # snapshot's TopicRecord in the same file
    change = _at(rows, 20)
    assert (change["offset"], change["last_offset"], change["quorum_epoch"], change["topic"]) == (
        121, 122, 5, "orders",
    )
    assert change["create_time_ms"] == 1709630000100 and change["event_time"] is not None
    assert not any(k.startswith("snapshot") for k in change["details"])


def test_only_metadata_dump_lines_are_read(spark):
    text = (DUMPS / "metadata-3.9-reference-example.txt").read_text()
    lines = lines_from_text(spark, text, "cluster=c1/broker-1/x.txt", log_kind="segment-dump")
    assert parse_metadata_dump(lines).count() == 0
