"""Kafka request log (reference §5): Completed request JSON lines -> one request_* event per partition."""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pytest

from epoch_audit.bronze.parsers import MALFORMED, finish_events
from epoch_audit.bronze.parsers.request_log import parse_request_log
from epoch_audit.contracts.events import EVENT_SCHEMA, EVENT_TYPES
from tests.helpers import frame_log_lines, lines_from_text

FIXTURES = Path(__file__).parents[1] / "fixtures" / "request"
FILES = ["reference_3x.log", "variants.log"]
TID = "m8C_0vTdQnKnfRBdE_b5Kg"

# (file, line) -> events in sub_index order: (event_type, columns, details subset)
EXPECTED: dict[tuple[str, int], list[tuple[str, dict, dict]]] = {
    # 3.6 LEADER_AND_ISR v7: request CE 9, partition-state CE 8; orders-4 refused with 11
    ("reference_3x.log", 1): [
        (
            "request_leader_and_isr",
            {"api_key": "LEADER_AND_ISR", "api_version": 7, "correlation_id": 58, "controller_id": 1,
             "controller_epoch": 9, "state_controller_epoch": 8, "topic": "orders", "topic_id": TID,
             "partition": 3, "leader": 1, "leader_epoch": 7, "partition_epoch": 12, "isr": [1, 2],
             "replicas": [1, 2, 3], "error": "NONE", "broker_id": 1, "broker_epoch": 25769804243},
            {"error_code": "0", "is_new": "false", "leader_recovery_state": "0"},
        ),
        ("request_leader_and_isr", {"partition": 4, "state_controller_epoch": 9, "error": "STALE_CONTROLLER_EPOCH"}, {}),
    ],
    ("reference_3x.log", 2): [
        ("request_stop_replica", {"api_version": 4, "controller_epoch": 9, "topic": "orders", "partition": 3,
                                  "leader_epoch": 6, "delete_partition": False, "error": "FENCED_LEADER_EPOCH"}, {}),
    ],
    # 3.7 FETCH v16 from follower 3: replicaState epoch, diverging epoch
    ("reference_3x.log", 3): [
        ("request_fetch", {"replica_id": 3, "broker_epoch": 4294967412, "offset": 18840, "current_leader_epoch": 7,
                           "high_watermark": 18822, "log_start_offset": 0, "topic": None, "topic_id": TID,
                           "partition": 3, "error": "NONE", "broker_id": 1},
         {"diverging_epoch": "6", "diverging_end_offset": "18830", "last_fetched_epoch": "6", "in_request": "true"}),
    ],
    ("reference_3x.log", 4): [
        ("request_produce", {"api_version": 10, "topic": "orders", "partition": 3, "error": "NOT_LEADER_OR_FOLLOWER",
                             "offset": None, "log_start_offset": None, "leader": 2, "current_leader_epoch": 8},
         {"acks": "1", "records_size": "412"}),
    ],
    # ALTER_PARTITION v3: broker_id = the asking leader; PE/LE from the response
    ("reference_3x.log", 5): [
        ("request_alter_partition", {"broker_id": 1, "broker_epoch": 4294967299, "topic_id": TID, "partition": 3,
                                     "isr": [1, 2, 3], "isr_broker_epochs": [4294967299, 4294967310, 4294967412],
                                     "partition_epoch": 13, "leader_epoch": 7, "leader": 1, "error": "NONE"},
         {"request_partition_epoch": "12", "request_leader_epoch": "7", "committed_isr": "1,2,3",
          "with_broker_epochs": "true"}),
    ],
    ("reference_3x.log", 6): [("request_produce", {"api_version": 9, "error": "NOT_LEADER_OR_FOLLOWER", "leader": None}, {})],
    # FETCH v12 (2.8): topic names, top-level replicaId; payments-1 only in the (incremental) response
    ("variants.log", 1): [
        ("request_fetch", {"replica_id": 2, "broker_epoch": None, "topic": "orders", "partition": 0, "offset": 1200,
                           "current_leader_epoch": 5, "high_watermark": 1200}, {"in_request": "true"}),
        ("request_fetch", {"topic": "payments", "partition": 1, "offset": None, "high_watermark": 77, "replica_id": 2},
         {"in_request": "false"}),
    ],
    # FETCH v13: topic ids, currentLeaderEpoch -1 = none, FENCED_LEADER_EPOCH, HW -1 = none
    ("variants.log", 2): [
        ("request_fetch", {"topic": None, "topic_id": TID, "partition": 3, "current_leader_epoch": None,
                           "error": "FENCED_LEADER_EPOCH", "high_watermark": None, "offset": 40}, {}),
    ],
    # FETCH v15 from a consumer: no replicaState
    ("variants.log", 3): [
        ("request_fetch", {"replica_id": None, "broker_epoch": None, "offset": 18000, "high_watermark": 18822},
         {"fetcher": "consumer"}),
    ],
    # session error with no partitions: nothing per partition to report
    ("variants.log", 4): [],
    ("variants.log", 5): [
        ("request_stop_replica", {"api_version": 0, "controller_epoch": 3, "topic": "orders", "partition": 0,
                                  "leader_epoch": -1, "delete_partition": True, "error": "NONE", "broker_epoch": None},
         {}),
    ],
    ("variants.log", 6): [
        ("request_stop_replica", {"api_version": 1, "partition": 1, "leader_epoch": -1, "delete_partition": False,
                                  "error": "NONE", "broker_epoch": 25769803800}, {}),
        ("request_stop_replica", {"partition": 2, "error": "KAFKA_STORAGE_ERROR"}, {}),
    ],
    ("variants.log", 7): [
        ("request_stop_replica", {"api_version": 3, "topic": "old-topic", "leader_epoch": -2, "delete_partition": True,
                                  "error": "NONE"}, {}),
    ],
    # whole-request refusal (stale controller epoch), no partition errors listed
    ("variants.log", 8): [
        ("request_stop_replica", {"controller_epoch": 8, "partition": 3, "leader_epoch": 9,
                                  "error": "STALE_CONTROLLER_EPOCH"}, {"top_error_code": "11", "error_code": "11"}),
    ],
    # LEADER_AND_ISR v4: zkVersion, names in partitionErrors
    ("variants.log", 9): [
        ("request_leader_and_isr", {"api_version": 4, "partition_epoch": 10, "leader_epoch": 6, "leader": 2,
                                    "state_controller_epoch": 2, "controller_epoch": 3, "error": "NONE",
                                    "topic_id": None}, {}),
    ],
    ("variants.log", 10): [
        ("request_update_metadata", {"api_version": 7, "controller_epoch": 3, "state_controller_epoch": 2,
                                     "topic": "orders", "topic_id": TID, "partition": 0, "partition_epoch": 10,
                                     "leader_epoch": 6, "isr": [2, 3], "error": "NONE"}, {"offline_replicas": "1"}),
    ],
    ("variants.log", 11): [
        ("request_update_metadata", {"api_version": 8, "controller_epoch": 9, "topic": None, "partition": None,
                                     "error": "NONE"},
         {"partitions": "0"}),
    ],
    # ALTER_ISR v0 (2.8-3.1): topic names, currentIsrVersion
    ("variants.log", 12): [
        ("request_alter_partition", {"api_key": "ALTER_ISR", "broker_id": 2, "topic": "orders", "partition": 0,
                                     "isr": [2, 3, 1], "isr_broker_epochs": [-1, -1, -1], "partition_epoch": 11,
                                     "error": "NONE"}, {"request_partition_epoch": "10", "with_broker_epochs": "false"}),
    ],
    ("variants.log", 13): [
        ("request_alter_partition", {"api_version": 2, "topic_id": TID, "isr": [2, 3], "isr_broker_epochs": [-1, -1],
                                     "partition_epoch": 12, "broker_epoch": 4294967300}, {}),
    ],
    # v3 rejected: INELIGIBLE_REPLICA; the response's default PE/LE are not kept
    ("variants.log", 14): [
        ("request_alter_partition", {"error": "INELIGIBLE_REPLICA", "partition_epoch": None, "leader_epoch": None,
                                     "leader": None, "isr": [1, 3], "isr_broker_epochs": [4294967299, 4294967000]},
         {"request_partition_epoch": "13", "error_code": "107"}),
    ],
    ("variants.log", 15): [
        ("request_produce", {"api_version": 8, "partition": 0, "error": "NONE", "offset": 5120, "log_start_offset": 0},
         {}),
        ("request_produce", {"partition": 1, "error": "INVALID_RECORD", "offset": None},
         {"error_message": "One or more records have been rejected"}),
    ],
    ("variants.log", 16): [("request_produce", {"api_version": 3, "partition": 2, "offset": 777, "error": "NONE"}, {})],
    ("variants.log", 17): [],  # METADATA: not an API we parse
    ("variants.log", 18): [(MALFORMED, {"topic": None, "error": None}, {"reason": "unparseable request-log JSON"})],
    # Strimzi line layout
    ("variants.log", 19): [("request_stop_replica", {"leader_epoch": 8, "delete_partition": True, "error": "NONE"}, {})],
    # <= 2.7 text form: header only
    ("variants.log", 20): [
        ("request_produce", {"api_key": "PRODUCE", "api_version": 8, "correlation_id": 57, "topic": None,
                             "kafka_version_hint": "2.6-2.7"}, {"format": "text", "text_client_id": "producer-1"}),
    ],
    ("variants.log", 21): [],
}


@pytest.fixture(scope="module")
def events(spark):
    lines = reduce(
        lambda a, b: a.unionByName(b),
        [
            lines_from_text(spark, (FIXTURES / n).read_text(), f"cluster=c1/broker-1/{n}", 1, "c1", "request")
            for n in FILES
        ],
    )
    records, _ = frame_log_lines(lines)
    finished = finish_events(parse_request_log(records))
    return finished.collect(), finished.schema


def _by_line(rows):
    out: dict[tuple[str, int], list] = {}
    for r in sorted(rows, key=lambda r: r.sub_index):
        out.setdefault((r.source_file.rsplit("/", 1)[-1], r.line_number), []).append(r)
    return out


def test_schema_types_ids(events):
    rows, schema = events
    assert [(f.name, f.dataType) for f in schema.fields] == [(f.name, f.dataType) for f in EVENT_SCHEMA.fields]
    assert {r.event_type for r in rows} <= set(EVENT_TYPES) | {MALFORMED}
    assert len({r.event_id for r in rows}) == len(rows)


def test_every_line(events):
    rows, _ = events
    by_line = _by_line(rows)
    failures = []
    for key, expected in EXPECTED.items():
        got = by_line.get(key, [])
        if len(got) != len(expected):
            failures.append(f"{key}: {len(got)} events, expected {len(expected)}: {[r.event_type for r in got]}")
            continue
        for i, (r, (etype, cols, details)) in enumerate(zip(got, expected, strict=True)):
            if r.sub_index != i or r.event_type != etype:
                failures.append(f"{key}[{i}]: {r.event_type}/{r.sub_index} != {etype}/{i}")
            for name, want in cols.items():
                if getattr(r, name) != want:
                    failures.append(f"{key}[{i}]: {name}={getattr(r, name)!r} != {want!r}")
            for k, want in details.items():
                if (r.details or {}).get(k) != want:
                    failures.append(f"{key}[{i}]: details[{k}]={(r.details or {}).get(k)!r} != {want!r}")
    assert not failures, "\n".join(failures)
    assert set(by_line) <= set(EXPECTED)


def test_common_columns(events):
    rows, _ = events
    for r in rows:
        assert r.cluster_id == "c1" and r.host_id == 1 and r.log_kind == "request"
        assert r.level == "DEBUG" and r.event_time is not None
        # the truncated (malformed) line lost its "(logger)" tail
        assert r.logger == ("kafka.request.logger" if r.event_type != MALFORMED else None)
        assert r.raw.startswith(("[", "2024-02-10"))
        if r.event_type != MALFORMED:
            assert r.api_key and r.api_version is not None and r.correlation_id is not None


def test_strimzi_log4j2_short_logger_routes_to_the_request_parser(spark):
    """§8 Strimzi log4j2 pattern ``%c{1}:%L - %m``: kafka.request.logger and state.change.logger both
    print as ``logger``; a ``Completed request:`` message still reaches the request-log parser."""
    from epoch_audit.bronze.file_pass import parse_record
    from tests.helpers import records_from_text

    request = (FIXTURES / "reference_3x.log").read_text().splitlines()[1]  # STOP_REPLICA v4, refused with 74
    body = request.split("] DEBUG ", 1)[1].rsplit(" (kafka.request.logger)", 1)[0]
    text = "\n".join([
        f"2024-03-05 09:12:45 DEBUG [data-plane-kafka-request-handler-3] logger:? - {body}",
        "2024-03-05 09:12:46 INFO  [controller-event-thread] logger:? - [Broker id=1] Handling LeaderAndIsr request "
        "correlationId 60 from controller 1 for 1 partitions",
    ])
    records = records_from_text(spark, text, source_file="cluster=c1/broker-1/kafka-request.log")
    assert [r["logger"] for r in records.orderBy("line_number").collect()] == ["logger", "logger"]
    got = [(r["line_number"], r["event_type"]) for rec in records.orderBy("line_number").collect()
           for r in parse_record(rec.asDict())]
    # the request-log parser read line 1, the log4j parser line 2
    assert got == [(1, "request_stop_replica"), (2, "leader_and_isr_request")]
