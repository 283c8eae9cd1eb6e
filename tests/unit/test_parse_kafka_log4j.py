"""Kafka log4j message parsers (reference §0.2-§0.3, §1.1-1.5, §2.1-2.4, §3.1 replay lines, §4.3, §6).

Every fixture under tests/fixtures/kafka/ is built from the reference's templates and constructed
examples (one file per version generation, default and Strimzi patterns). All files are framed and
parsed in ONE Spark job (module fixture); each test then checks the exact typed fields of its lines.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from epoch_audit.bronze.parsers import MALFORMED, finish_events
from epoch_audit.bronze.parsers.kafka_log4j import TEMPLATE_TABLE, TEMPLATES, parse_kafka_log4j
from epoch_audit.contracts.events import EVENT_COLUMNS, EVENT_TYPES
from tests.helpers import LINE_SCHEMA, frame_log_lines

FIXTURES = Path(__file__).parents[1] / "fixtures" / "kafka"
HOST = 7  # host id from the path; every line here names its broker itself unless stated


@pytest.fixture(scope="module")
def events(spark):
    rows = []
    for path in sorted(FIXTURES.glob("*.log")):
        source = f"cluster=c1/broker-{HOST}/{path.name}"
        file_id = hashlib.sha256(source.encode()).hexdigest()
        for i, line in enumerate(path.read_text().rstrip("\n").split("\n")):
            rows.append((file_id, source, path.name, "c1", HOST, 0, "other", i + 1, line))
    records, _ = frame_log_lines(spark.createDataFrame(rows, LINE_SCHEMA))
    # Framing and parsing are separate plans: collect the (small) records first.
    local = spark.createDataFrame(records.collect(), records.schema)
    parsed = finish_events(parse_kafka_log4j(local))
    assert parsed.columns == EVENT_COLUMNS
    out: dict[tuple[str, int], list[dict]] = {}
    for r in parsed.collect():
        d = r.asDict()
        out.setdefault((d["source_file"].rsplit("/", 1)[-1], d["line_number"]), []).append(d)
    for v in out.values():
        v.sort(key=lambda d: d["sub_index"])
    return out


def one(events, file: str, line: int) -> dict:
    rows = events.get((file, line), [])
    assert len(rows) == 1, f"{file}:{line} -> {len(rows)} events"
    return rows[0]


def check(row: dict, **expected) -> None:
    """Exact typed fields; ``details`` entries are checked by key (``d_<key>=value``)."""
    for key, value in expected.items():
        if key.startswith("d_"):
            assert (row["details"] or {}).get(key[2:]) == value, (key, row["details"])
        else:
            assert row[key] == value, (key, row[key], value)


def none_of(row: dict, *cols: str) -> None:
    for c in cols:
        assert row[c] is None, (c, row[c])


SC26 = "zk-2.6-broker-state-change.log"
CTRL26 = "zk-2.6-controller-state-change.log"
SC33 = "zk-3.3-state-change.log"
SV33 = "zk-3.3-server.log"
SC35 = "zk-3.5-state-change.log"
SC36 = "zk-3.6-state-change.log"
SV26 = "server-2.6-3.2.log"
SV35 = "server-3.5-3.9.log"
KR34 = "kraft-3.4-controller.log"
KR39 = "kraft-3.9-controller.log"
STRIMZI = "strimzi-3.6.log"
WRAPPED = "wrapped-3.6.log"


# ---------------------------------------------------------------- template table sanity (no Spark)
def test_template_table_is_consistent():
    for t in TEMPLATES:
        assert t.event_type is None or t.event_type == MALFORMED or t.event_type in EVENT_TYPES, t.tid
        if t.regex is not None and t.event_type is not None:
            assert t.tid in TEMPLATE_TABLE.patterns
            # the regex's literal head and the cheap prefilter must agree (else the route is dead)
            body = t.regex[4:] if t.regex.startswith("(?s)") else t.regex
            literal = re.split(r"\(\?|\[|\.\*", body)[0].replace("\\", "")
            assert t.starts.startswith(literal) or literal.startswith(t.starts), t.tid
    assert len({t.tid for t in TEMPLATES}) == len(TEMPLATES)


# ---------------------------------------------------------------- §1.1 StopReplica (broker)
def test_stop_replica_request_and_received_request_vs_state_epochs(events):
    check(one(events, SC26, 1), event_type="stop_replica_request", broker_id=2, controller_id=1,
          correlation_id=57, d_partition_count="3", topic=None)
    r = one(events, SC26, 2)
    check(r, event_type="stop_replica_received", broker_id=2, topic="orders", partition=3, leader_epoch=4,
          delete_partition=False, correlation_id=57, controller_id=1, controller_epoch=7, level="TRACE")
    none_of(r, "state_controller_epoch", "current_leader_epoch")
    # sentinel -2 and a topic name containing '-'
    check(one(events, SC26, 5), topic="my-app-events", partition=0, leader_epoch=-2, delete_partition=True)


def test_stop_replica_delete_failure_with_multi_line_exception_message(events):
    # S9: <exceptionMessage> is free text and may span lines; the logger tail ends the last one.
    r = one(events, SC33, 11)
    check(r, event_type="stop_replica_storage_error", broker_id=2, topic="orders", partition=7, controller_id=1,
          controller_epoch=8, correlation_id=77, delete_partition=True, level="ERROR",
          d_exception="java.nio.file.FileSystemException",
          d_exception_message="/var/lib/kafka/data/orders-7: Read-only file system\n    while renaming the log directory")
    assert (SC33, 12) not in events  # the continuation line belongs to line 11


def test_stop_replica_refusals(events):
    check(one(events, SC26, 3), event_type="stop_replica_fenced", leader_epoch=4, current_leader_epoch=5,
          error="FENCED_LEADER_EPOCH", controller_epoch=7, correlation_id=57, topic="orders", partition=3)
    check(one(events, SC26, 4), event_type="stop_replica_equal_epoch_refused", leader_epoch=5,
          current_leader_epoch=5, delete_partition=True, kafka_version_hint="2.6.0-3.4.0", correlation_id=58)
    check(one(events, SC26, 6), event_type="stop_replica_stale_controller", controller_epoch=6,
          known_controller_epoch=7, correlation_id=60, error="STALE_CONTROLLER_EPOCH", topic=None)
    check(one(events, SC26, 7), event_type="stop_replica_storage_error", error="KAFKA_STORAGE_ERROR",
          topic="orders", partition=4, delete_partition=False)
    check(one(events, SC26, 8), event_type="stop_replica_storage_error", partition=5, delete_partition=True,
          d_exception="org.apache.kafka.common.errors.KafkaStorageException", level="ERROR")


# ---------------------------------------------------------------- §1.2 LeaderAndIsr (broker)
def test_leader_and_isr_received_keeps_request_and_state_controller_epochs_apart(events):
    r = one(events, SC26, 10)  # 2.6-3.1 form: zkVersion, no leaderRecoveryState
    check(r, event_type="leader_and_isr_received", topic="orders", partition=3, controller_epoch=7,
          state_controller_epoch=6, controller_id=1, correlation_id=12, leader=2, leader_epoch=5, isr=[2, 3],
          partition_epoch=9, replicas=[1, 2, 3], adding_replicas=[], removing_replicas=[],
          kafka_version_hint="2.6-3.1")
    check(one(events, SC33, 1), controller_epoch=9, state_controller_epoch=8, partition_epoch=12,
          kafka_version_hint="3.3+", d_leader_recovery_state="0")


def test_leader_and_isr_request_refusals_and_ignored_trace(events):
    check(one(events, SC26, 9), event_type="leader_and_isr_request", correlation_id=12, d_partition_count="2")
    assert (SC26, 11) not in events  # TRACE "starting the become-leader transition": no event
    assert (SC26, 20) not in events  # "Finished LeaderAndIsr request": irrelevant
    check(one(events, SC26, 14), event_type="leader_and_isr_stale_controller", controller_epoch=6,
          known_controller_epoch=7, error="STALE_CONTROLLER_EPOCH")
    check(one(events, SC26, 15), event_type="leader_and_isr_stale_epoch", leader_epoch=4,
          current_leader_epoch=5, controller_epoch=7, error="STALE_CONTROLLER_EPOCH")
    check(one(events, SC26, 16), event_type="leader_and_isr_equal_epoch", leader_epoch=5, current_leader_epoch=5)
    check(one(events, SC26, 17), event_type="leader_and_isr_other_refusal", partition=6, replicas=[1, 3, 4],
          error="UNKNOWN_TOPIC_OR_PARTITION")
    check(one(events, SC26, 18), event_type="leader_and_isr_other_refusal", partition=7, error="KAFKA_STORAGE_ERROR")
    check(one(events, SC26, 19), event_type="leader_and_isr_other_refusal", partition=8, controller_epoch=7,
          state_controller_epoch=6, leader=4)


def test_leader_line_all_four_variants(events):
    check(one(events, SC26, 12), event_type="become_leader", kafka_version_hint="2.6-3.2", broker_id=2,
          leader=2, topic="orders", partition=3, leader_epoch=5, offset=1200, high_watermark=1190, isr=[2, 3],
          adding_replicas=[], removing_replicas=[], prev_leader_epoch=4, partition_epoch=None, topic_id=None)
    check(one(events, SC33, 2), kafka_version_hint="3.3-3.4", topic_id="m8C_0vTdQnKnfRBdE_b5Kg", leader_epoch=7,
          offset=18830, partition_epoch=12, high_watermark=18822, isr=[1, 2, 3], prev_leader_epoch=6)
    check(one(events, SC35, 1), kafka_version_hint="3.5", d_under_min_isr="false", prev_leader_epoch=6)
    check(one(events, SC35, 2), kafka_version_hint="3.5", d_under_min_isr="true", topic_id=None, isr=[1],
          leader_epoch=2, prev_leader_epoch=1)
    check(one(events, SC36, 3), kafka_version_hint="3.6+", d_prev_leader="2", prev_leader_epoch=6, leader_epoch=7,
          d_under_min_isr="false")
    check(one(events, SC36, 4), kafka_version_hint="3.6+", d_under_min_isr="true", prev_leader_epoch=-1,
          leader_epoch=0)
    assert "prev_leader" not in one(events, SC36, 4)["details"]  # "Previous leader None"


def test_follower_line_variants_and_36_quirk(events):
    check(one(events, SC26, 13), event_type="become_follower", kafka_version_hint="2.6-3.2",
          topic="my-app-events", partition=1, leader_epoch=3, offset=77, high_watermark=70, prev_leader_epoch=2,
          leader=None, partition_epoch=None)
    check(one(events, SC33, 3), kafka_version_hint="3.3-3.5", leader=1, leader_epoch=4, partition_epoch=9,
          offset=512, high_watermark=500, prev_leader_epoch=3)
    r = one(events, SC36, 6)  # 3.6+: "previous" values are the new ones -> details only
    check(r, kafka_version_hint="3.6+", broker_id=2, leader=1, leader_epoch=9, partition_epoch=31,
          prev_leader_epoch=None, d_reported_prev_leader="1", d_reported_prev_leader_epoch="9",
          d_prev_values_are_new="true")


def test_skipped_transitions(events):
    check(one(events, SC33, 4), event_type="become_leader_skipped", leader=3, leader_epoch=7,
          current_leader_epoch=7, partition_epoch=13, isr=[1, 3], state_controller_epoch=8, high_watermark=18822,
          d_current_isr="[1,3]", topic_id="m8C_0vTdQnKnfRBdE_b5Kg")
    check(one(events, SC33, 5), event_type="become_leader_skipped", leader_epoch=8, partition_epoch=11,
          d_current_partition_epoch="13", current_leader_epoch=None)
    check(one(events, SC33, 6), event_type="become_follower_skipped", leader_epoch=4, partition_epoch=10,
          current_leader_epoch=None, d_reported_leader_epoch="4", topic_id=None)
    check(one(events, SC33, 7), event_type="become_follower_skipped", partition_epoch=8,
          d_current_partition_epoch="10")
    check(one(events, SC36, 7), event_type="become_follower_skipped", state_controller_epoch=-1, leader_epoch=7)


def test_malformed_lines_of_recognised_families(events):
    r = one(events, SC26, 25)  # "Leader ... starts at leader epoch five ..."
    check(r, event_type=MALFORMED, broker_id=2, leader_epoch=None)
    assert r["details"]["reason"]
    check(one(events, SC36, 8), event_type=MALFORMED, d_template="SKIP*")
    check(one(events, KR39, 27), event_type=MALFORMED, d_template="REJ*")


# ---------------------------------------------------------------- §1.5 UpdateMetadata
def test_update_metadata(events):
    check(one(events, SC26, 21), event_type="update_metadata_applied", controller_epoch=7, correlation_id=41,
          d_cached_count="1", d_deleted_count="1", topic=None)
    check(one(events, SC26, 22), event_type="update_metadata_applied", topic="orders", partition=3,
          controller_epoch=7, state_controller_epoch=6, leader=2, leader_epoch=5, partition_epoch=9, isr=[2, 3],
          replicas=[1, 2, 3])
    check(one(events, SC26, 23), event_type="update_metadata_partition_deleted", topic="payments", partition=0,
          controller_epoch=7)
    check(one(events, SC26, 24), event_type="update_metadata_stale_controller", controller_id=0,
          controller_epoch=6, known_controller_epoch=7)


def test_kafka_apis_stale_broker_epoch_both_generations(events):
    for line, et in ((1, "stop_replica"), (2, "leader_and_isr"), (3, "update_metadata")):
        check(one(events, SV33, line), event_type=f"{et}_stale_broker_epoch", broker_id=3,
              broker_epoch=4294967299, d_current_broker_epoch="4294967310", error="STALE_BROKER_EPOCH",
              controller_id=None, kafka_version_hint="2.6-3.3")
        check(one(events, SV33, line + 3), event_type=f"{et}_stale_broker_epoch", controller_id=2,
              controller_epoch=9, kafka_version_hint="3.4+")


# ---------------------------------------------------------------- §1.3 controller side
def test_controller_sends(events):
    check(one(events, CTRL26, 3), event_type="controller_send_leader_and_isr", broker_id=1, controller_id=1,
          controller_epoch=7, state_controller_epoch=6, replica_id=2, topic="orders", partition=3, leader=2,
          leader_epoch=5, d_transition="become-leader")
    check(one(events, CTRL26, 12), controller_epoch=9, state_controller_epoch=9, kafka_version_hint="3.2",
          d_transition="become-follower")
    assert (CTRL26, 4) not in events and (CTRL26, 7) not in events and (CTRL26, 2) not in events
    um = events[(CTRL26, 5)]
    assert [e["replica_id"] for e in um] == [1, 2, 3] and [e["sub_index"] for e in um] == [0, 1, 2]
    assert {e["controller_epoch"] for e in um} == {7}
    assert [e["replica_id"] for e in events[(CTRL26, 13)]] == [0, 1, 2, 3, 4]  # HashSet, 5 brokers
    check(one(events, CTRL26, 6), event_type="controller_send_stop_replica", replica_id=2, topic="payments",
          partition=0, leader_epoch=-2, delete_partition=True, controller_epoch=7)


def test_controller_leader_and_isr_forms(events):
    check(one(events, CTRL26, 1), event_type="controller_partition_state_change", kafka_version_hint="2.6-3.1",
          leader=2, leader_epoch=5, isr=[2, 3], partition_epoch=9, controller_epoch=7,
          d_from_state="OfflinePartition", d_to_state="OnlinePartition")
    check(one(events, CTRL26, 11), kafka_version_hint="3.2", leader=1, leader_epoch=6, partition_epoch=10)
    check(one(events, SC33, 8), kafka_version_hint="3.3-3.4", leader=2, leader_epoch=8, isr=[2], partition_epoch=14)
    check(one(events, SC35, 4), kafka_version_hint="3.5+", isr=[1, 2, 3], isr_broker_epochs=[-1, -1, -1],
          partition_epoch=12, controller_epoch=11)


def test_leader_isr_and_controller_epoch_three_forms(events):
    check(one(events, CTRL26, 8), event_type="controller_isr_change", kafka_version_hint="2.6-3.0", leader=1,
          isr=[1, 2], leader_epoch=5, partition_epoch=None, state_controller_epoch=7, replica_id=3)
    check(one(events, CTRL26, 10), kafka_version_hint="3.1", isr=[1], leader_epoch=6, partition_epoch=10,
          state_controller_epoch=8, replica_id=2)
    check(one(events, SC33, 9), kafka_version_hint="3.2+", isr=[1, 2], partition_epoch=9, state_controller_epoch=9)
    check(one(events, SC33, 10), event_type="controller_reassignment_send", replica_id=2, topic="orders",
          partition=5, isr=[2, 3, 4], leader_epoch=9, partition_epoch=15)


# ---------------------------------------------------------------- §2 ISR changes
def test_isr_shrink_fans_out_per_out_of_sync_replica(events):
    check(one(events, SV26, 1), event_type="isr_shrink", kafka_version_hint="2.6-3.5", broker_id=1, topic="orders",
          partition=3, isr=[1, 2], replica_id=3, offset=18790, high_watermark=18822, d_old_isr="1,2,3")
    rows = events[(SV35, 1)]
    assert [(e["replica_id"], e["offset"]) for e in rows] == [(3, 18790), (4, None)]
    check(rows[0], kafka_version_hint="3.6+", d_last_caught_up_time_ms="1709629934012", isr=[1, 2])


def test_isr_updated_all_variants(events):
    expected = {
        (SV26, 2): ("2.6-2.7", [1, 2], 11), (SV26, 6): ("2.7", [1, 2, 3], 13), (SV26, 8): ("2.8-3.0", [1, 2, 3], 14),
        (SV26, 11): ("3.1-3.4", [1, 2, 3], 15), (SV35, 2): ("3.5+", [1, 2], 12), (SV35, 3): ("3.5+", [1], 6),
    }
    for key, (hint, isr, pe) in expected.items():
        check(one(events, *key), event_type="isr_updated", kafka_version_hint=hint, isr=isr, partition_epoch=pe)
    check(one(events, SV35, 2), d_under_min_isr="false")  # double space before "and"
    check(one(events, SV35, 3), d_under_min_isr="true", partition=4)


def test_isr_update_lost_zk_version_race_26(events):
    # 2.6 / 2.7 direct-ZK path: the leader's conditional ISR write failed, nothing was updated (§2.1).
    check(one(events, SV26, 18), event_type="alter_partition_failed", error="INVALID_UPDATE_VERSION",
          partition_epoch=11, broker_id=1, topic="orders", partition=3, kafka_version_hint="2.6-2.7", isr=None)


def test_isr_expand_every_generation(events):
    check(one(events, SV26, 3), event_type="isr_expand", kafka_version_hint="2.6-2.7", replica_id=3, isr=[1, 2, 3])
    for line, hint, pe in ((5, "2.7", 12), (7, "2.8-3.0", 13), (10, "3.1+", 14), (12, "3.1+", 15)):
        check(one(events, SV26, line), event_type="isr_expand", kafka_version_hint=hint, replica_id=3, leader=1,
              leader_epoch=7, isr=[1, 2, 3], partition_epoch=pe)
    check(one(events, SV35, 5), replica_id=3, isr=[1, 2, 3], isr_broker_epochs=[4294967299, 4294967310, 4294967520])
    assert (SV33, 9) not in events  # PendingShrinkIsr submission: the INFO shrink line is the event


def test_alter_partition_failures(events):
    check(one(events, SV35, 4), event_type="alter_partition_failed", error="INELIGIBLE_REPLICA", replica_id=3,
          leader=1, leader_epoch=7, partition_epoch=12, isr=[1, 2, 3],
          isr_broker_epochs=[4294967299, 4294967310, 4294967412])
    check(one(events, SV33, 10), error="FENCED_LEADER_EPOCH", kafka_version_hint="3.3+", replica_id=3)
    check(one(events, SV33, 11), error="INVALID_UPDATE_VERSION")
    check(one(events, SV33, 12), error="UNKNOWN_SERVER_ERROR", level="WARN")
    check(one(events, SV26, 9), error="FENCED_LEADER_EPOCH", kafka_version_hint="2.8-3.1", replica_id=3)
    check(one(events, SV35, 6), event_type="alter_partition_stale_broker_epoch", broker_epoch=4294967299,
          broker_id=HOST)  # no log ident: host id


def test_zk_controller_alter_partition_lines(events):
    check(one(events, SV33, 13), event_type="controller_alter_partition_rejected", broker_id=2, controller_id=2,
          replica_id=3, error="INELIGIBLE_REPLICA", isr=[1, 2, 3], d_from_node="1")
    check(one(events, SV33, 14), replica_id=1, broker_epoch=4294967299, d_local_broker_epoch="4294967310",
          error="STALE_BROKER_EPOCH")
    check(one(events, SV33, 15), replica_id=7, d_reason="unknown broker")
    check(one(events, SV33, 16), event_type="controller_isr_updated", leader=1, leader_epoch=7, partition_epoch=13,
          isr=[1, 2, 3])
    check(one(events, SV33, 17), error="INVALID_UPDATE_VERSION", partition=4, partition_epoch=13)
    check(one(events, SV33, 18), error="INVALID_REQUEST", d_leader_recovery_state="RECOVERING", partition=5)


def test_kraft_alter_partition_rejections(events):
    rows = events[(KR39, 19)]
    assert [e["replica_id"] for e in rows] == [3, 4]
    check(rows[0], broker_id=3000, controller_id=3000, error="INELIGIBLE_REPLICA", broker_epoch=4294967412,
          d_expected_broker_epoch="4294967520", isr=[1, 2, 3, 4],
          isr_broker_epochs=[4294967299, 4294967310, 4294967412, 4294967001], d_from_node="1")
    check(rows[1], d_reason="fenced", broker_epoch=None)
    check(one(events, KR34, 9), replica_id=3, d_reason="fenced", isr=[1, 2, 3], isr_broker_epochs=None)
    # value order: the controller's stored value first, the request's second (§2.4)
    check(one(events, KR39, 20), error="FENCED_LEADER_EPOCH", current_leader_epoch=8, leader_epoch=7)
    check(one(events, KR39, 21), error="NOT_CONTROLLER", current_leader_epoch=6, leader_epoch=7)
    check(one(events, KR39, 22), error="INVALID_UPDATE_VERSION", d_controller_partition_epoch="14", partition_epoch=12)
    check(one(events, KR39, 23), error="INVALID_REQUEST", leader=2)
    check(one(events, KR39, 24), isr=[2], d_isr_without_leader="true")
    check(one(events, KR39, 25), topic="orders", partition=99, error="UNKNOWN_TOPIC_OR_PARTITION")
    check(one(events, KR39, 26), event_type="controller_isr_updated", isr=[1, 2, 3], d_from_node="1")


# ---------------------------------------------------------------- KRaft controller and raft
def test_kraft_replay_lines_36_plus(events):
    check(one(events, KR39, 3), event_type="controller_replayed", record_type="TopicRecord", topic="orders",
          topic_id="m8C_0vTdQnKnfRBdE_b5Kg", broker_id=3000, controller_id=3000, kafka_version_hint="3.6+")
    check(one(events, KR39, 4), record_type="PartitionRecord", partition=3, replicas=[1, 2, 3], isr=[1, 2, 3],
          leader=1, leader_epoch=0, partition_epoch=0, d_partition_status="new")
    check(one(events, KR39, 5), record_type="PartitionChangeRecord", partition=3, isr=[1, 2], leader=None,
          replicas=None, leader_epoch=None, topic_id="m8C_0vTdQnKnfRBdE_b5Kg")
    check(one(events, KR39, 6), event_type="controller_partition_diff", isr=[1, 2], partition_epoch=1,
          leader_epoch=None, d_unclean="false")
    check(one(events, KR39, 7), event_type="controller_partition_diff", leader=2, leader_epoch=3,
          prev_leader_epoch=2, partition_epoch=6, isr=[2], d_unclean="true", d_prev_leader="1")


def test_kraft_registrations_and_fencing(events):
    check(one(events, KR39, 8), record_type="RegisterBrokerRecord", broker_id=1, controller_id=3000,
          broker_epoch=4294967299, fenced=True, in_controlled_shutdown=False, d_registration="initial")
    check(one(events, KR39, 9), broker_id=2, broker_epoch=4294967520, d_registration="new incarnation")
    check(one(events, KR39, 10), record_type="BrokerRegistrationChangeRecord", broker_id=3, fenced=True,
          in_controlled_shutdown=None, broker_epoch=4294967412)
    check(one(events, KR39, 11), broker_id=1, fenced=False)
    check(one(events, KR39, 12), broker_id=2, fenced=None, in_controlled_shutdown=True)
    check(one(events, KR39, 13), record_type="UnregisterBrokerRecord", broker_id=4, broker_epoch=4294967000)
    check(one(events, KR39, 14), event_type="controller_fencing_broker", broker_id=3, fenced=True)
    check(one(events, KR39, 15), record_type="AbortTransactionRecord", metadata_offset=4,
          d_reverted_to_offset="0", d_reason="Controller failover")
    check(one(events, KR39, 16), record_type="BeginTransactionRecord", metadata_offset=5, d_name="Bootstrap records")
    check(one(events, KR39, 17), record_type="EndTransactionRecord", metadata_offset=9)
    check(one(events, KR39, 18), record_type="RegisterControllerRecord", broker_id=3000,
          d_previous_incarnation_id="Am1s7cB0QH2i3Rj0mVbC1w")


def test_kraft_28_to_35_texts(events):
    check(one(events, KR34, 3), record_type="TopicRecord", topic="orders", kafka_version_hint="2.8-3.5",
          controller_id=3000, broker_id=3000)
    check(one(events, KR34, 4), record_type="PartitionRecord", partition=3, leader=1, isr=[1, 2, 3], leader_epoch=0)
    check(one(events, KR34, 5), record_type="RegisterBrokerRecord", broker_id=1, broker_epoch=4294967299,
          fenced=True, in_controlled_shutdown=False, d_registration="initial")
    check(one(events, KR34, 6), broker_id=2, broker_epoch=4294967412, d_registration="new incarnation")
    check(one(events, KR34, 7), record_type="UnfenceBrokerRecord", broker_id=1, fenced=False)
    check(one(events, KR34, 8), record_type="RemoveTopicRecord", topic="payments")


def test_raft_transitions_both_generations(events):
    check(one(events, KR34, 1), event_type="raft_state_transition", broker_id=3001, quorum_epoch=4, leader=3000,
          kafka_version_hint="2.8-3.4", d_state="FollowerState")
    check(one(events, KR34, 2), broker_id=3000, quorum_epoch=5, leader=3000, offset=120, d_state="Leader")
    check(one(events, KR39, 1), quorum_epoch=5, leader=3000, kafka_version_hint="3.5+", d_from_state="CandidateState")
    check(one(events, KR39, 2), quorum_epoch=6, leader=None, d_state="CandidateState", d_from_state="FollowerState")


# ---------------------------------------------------------------- fetchers, logs, §4.3, §6
def test_fetcher_lines_one_event_per_partition(events):
    rows = events[(SV26, 13)]
    assert [(e["topic"], e["partition"], e["sub_index"]) for e in rows] == [("foo", 2, 0), ("foo", 0, 1), ("foo", 1, 2)]
    five = events[(SV35, 8)]  # HashSet with 5 elements, topic with '-'
    assert [(e["topic"], e["partition"]) for e in five] == [
        ("orders", 3), ("my-app-events", 0), ("orders", 4), ("payments", 1), ("payments", 2)]
    assert len(events[(SV35, 7)]) == 5
    assert (SV35, 9) not in events  # Set(): nothing removed
    added = events[(SV26, 14)]
    assert [(e["partition"], e["leader_epoch"], e["offset"], e["leader"]) for e in added] == [
        (2, 12, 422998, 0), (1, 11, 422563, 0), (0, 12, 423887, 0)]
    check(one(events, SV26, 15), leader=3, topic="roleplay", leader_epoch=1, offset=0)
    check(one(events, SV35, 10), event_type="fetcher_added", leader=2, leader_epoch=7, offset=18830)


def test_log_start_offset_and_log_manager(events):
    check(one(events, SV26, 16), event_type="log_start_offset_incremented", kafka_version_hint="2.6-3.0",
          topic="orders", partition=3, log_start_offset=18000, d_reason="leader offset increment", broker_id=HOST)
    check(one(events, SV35, 11), kafka_version_hint="3.1+", log_start_offset=17950, d_reason="segment deletion")
    assert (SV35, 13) not in events  # local log start offset (tiered) is not the log start offset
    assert (SV26, 17) not in events
    check(one(events, SV35, 14), event_type="log_deletion_scheduled", topic="payments", partition=0)
    check(one(events, SV35, 15), event_type="log_deleted", topic="payments", partition=0,
          d_dir="/var/lib/kafka/data/payments-0.3c2a5b4b6bb7451e9a8b5e6f7a8b9c0d-delete")


def test_produce_and_fetch_rejections(events):
    check(one(events, SV35, 16), event_type="produce_error", broker_id=2, correlation_id=57,
          error="NOT_LEADER_OR_FOLLOWER", topic="orders", partition=3, d_client_id="producer-1")
    check(one(events, SV35, 17), event_type="fetch_epoch_error", error="FENCED_LEADER_EPOCH", correlation_id=58)
    ack0 = events[(SV35, 18)]  # two-line message
    assert [(e["partition"], e["error"], e["correlation_id"]) for e in ack0] == [
        (3, "NOT_LEADER_OR_FOLLOWER", 59), (4, "NOT_LEADER_OR_FOLLOWER", 59)]
    check(one(events, SV35, 20), event_type="produce_error", error="NOT_LEADER_OR_FOLLOWER", d_side="client")
    check(one(events, SV35, 21), error="NOT_LEADER_OR_FOLLOWER", d_side="client")
    check(one(events, SV35, 22), event_type="fetch_epoch_error", broker_id=3, leader=1, current_leader_epoch=6,
          error="FENCED_LEADER_EPOCH", d_reason="older epoch")
    check(one(events, SV35, 23), current_leader_epoch=9, d_reason="newer epoch", partition=4)
    check(one(events, SV35, 24), error="UNKNOWN_LEADER_EPOCH", current_leader_epoch=8)
    check(one(events, SV35, 25), error="NOT_LEADER_OR_FOLLOWER", partition=6)
    assert (SV35, 26) not in events
    check(one(events, SV35, 27), event_type="produce_error", error="UNKNOWN_TOPIC_OR_PARTITION", d_side="client",
          topic="orders", partition=9, broker_id=HOST)


def test_stopped_fetchers_lines_carry_the_request_controller_epoch(events):
    # §1.2 L11 / L12 (INFO): the only default-level LeaderAndIsr lines with the request's controller epoch.
    check(one(events, SC36, 12), event_type="leader_and_isr_fetchers_stopped", broker_id=1, controller_id=3,
          controller_epoch=9, correlation_id=13, d_partition_count="2", d_transition="become-leader", topic=None)
    check(one(events, SC36, 13), event_type="leader_and_isr_fetchers_stopped", broker_id=1, controller_id=3,
          controller_epoch=9, correlation_id=13, d_partition_count="1", d_transition="become-follower")


def test_strimzi_pattern_parses_like_default(events):
    check(one(events, STRIMZI, 2), event_type="leader_and_isr_received", controller_epoch=9, state_controller_epoch=8)
    default = one(events, SC36, 3)
    strimzi = one(events, STRIMZI, 3)
    for col in ("event_type", "topic", "partition", "leader_epoch", "prev_leader_epoch", "isr", "topic_id",
                "kafka_version_hint", "details"):
        assert strimzi[col] == default[col], col
    check(one(events, STRIMZI, 5), d_under_min_isr="false", partition_epoch=13)


def test_wrapped_kafka_lines_parse_like_bare_ones(events):
    """§8 wrappers: docker-compose (v1/v2 names), journald, log-platform CSV, Kubernetes CRI, a second
    program's prefix, the Strimzi log4j1 pattern and its log4j2 alternative (``%c{1}:%L - ``)."""
    follower = dict(event_type="become_follower", broker_id=2, topic="orders", partition=1, leader=1, leader_epoch=9,
                    offset=4410, partition_epoch=31, high_watermark=4402, kafka_version_hint="3.6+")
    check(one(events, WRAPPED, 1), **follower, level="INFO", logger="state.change.logger")
    check(one(events, WRAPPED, 3), **follower, level="INFO", logger="state.change.logger")
    assert one(events, WRAPPED, 1)["raw"].startswith("[2024-06-03 08:15:02,411] INFO [Broker id=2] Follower")
    check(one(events, WRAPPED, 2), event_type="fetcher_removed", broker_id=2, topic="orders", partition=1)
    check(one(events, WRAPPED, 4), event_type="leader_and_isr_request", broker_id=1, controller_id=3, correlation_id=12)
    check(one(events, WRAPPED, 5), event_type="stop_replica_fenced", broker_id=2, leader_epoch=4, current_leader_epoch=5,
          controller_epoch=7, correlation_id=57, level="WARN")
    check(one(events, WRAPPED, 6), event_type="stop_replica_received", topic="payments", partition=0, leader_epoch=-2,
          delete_partition=True, controller_epoch=7)
    check(one(events, WRAPPED, 7), event_type="isr_updated", broker_id=2, isr=[1, 2], partition_epoch=12,
          d_under_min_isr="false")
    check(one(events, WRAPPED, 8), event_type="become_leader", broker_id=2, leader=2, leader_epoch=7, offset=18830,
          high_watermark=18822, prev_leader_epoch=6, topic_id="m8C_0vTdQnKnfRBdE_b5Kg", logger="logger")
    check(one(events, WRAPPED, 9), event_type="fetch_epoch_error", broker_id=3, leader=1, current_leader_epoch=6,
          error="FENCED_LEADER_EPOCH")
