"""Framing: wrappers, patterns, continuation lines (reference §7.1, §8)."""

from __future__ import annotations

from datetime import datetime

from tests.helpers import frame_log_lines, lines_from_text, records_from_text

KAFKA = (
    "[2024-02-10 17:01:12,500] INFO [Broker id=1] Handling LeaderAndIsr request correlationId 12 "
    "from controller 3 for 1 partitions (state.change.logger)"
)
STRIMZI = (
    "2024-02-10 17:01:12,500 INFO [Broker id=1] Handling LeaderAndIsr request correlationId 12 from "
    "controller 3 for 1 partitions (state.change.logger) [data-plane-kafka-request-handler-2]"
)
SEASTAR = (
    "INFO  2024-12-20 14:17:21,123 [shard 2:main] raft - [group_id:17, {kafka/orders/3}] "
    "vote_stm.cc:421 - becoming the leader term:8"
)


def _one(spark, text, **kw):
    rows = records_from_text(spark, text, **kw).orderBy("line_number").collect()
    return [r.asDict() for r in rows]


def test_kafka_default_and_strimzi_split_identically(spark):
    rows = _one(spark, KAFKA + "\n" + STRIMZI + "\n")
    assert len(rows) == 2
    for row in rows:
        assert row["level"] == "INFO"
        assert row["logger"] == "state.change.logger"
        assert row["message"].startswith("[Broker id=1] Handling LeaderAndIsr request correlationId 12")
        assert row["message"].endswith("for 1 partitions")
        assert row["event_time"] == datetime(2024, 2, 10, 17, 1, 12, 500000)
    assert rows[0]["line_format"] == "kafka" and rows[0]["thread"] is None
    assert rows[1]["line_format"] == "strimzi"
    assert rows[1]["thread"] == "data-plane-kafka-request-handler-2"


def test_seastar_with_and_without_group(spark):
    old = SEASTAR.replace("[shard 2:main]", "[shard 2]")
    # Seastar pads the shard number to a width and scheduling-group names to a fixed length on
    # many-core machines: "[shard  2:main]", "[shard 2:au  ]".
    padded = SEASTAR.replace("[shard 2:main]", "[shard  2:main]")
    group_padded = SEASTAR.replace("[shard 2:main]", "[shard 2:main  ]")
    rows = _one(spark, "\n".join([SEASTAR, old, padded, group_padded]))
    assert len(rows) == 4
    for row in rows:
        assert row["line_format"] == "redpanda"
        assert row["logger"] == "raft"
        assert row["shard"] == 2
        assert row["src_loc"] == "vote_stm.cc:421"
        assert row["message"] == "[group_id:17, {kafka/orders/3}] becoming the leader term:8"


def test_wrappers_are_stripped(spark):
    text = "\n".join(
        [
            "redpanda_1  | " + SEASTAR,
            "2024-12-20T14:17:21.123456789Z stderr F " + SEASTAR,
            "Dec 20 14:17:21 broker-1 rpk[4242]: " + SEASTAR,
            "kafka-2  | " + KAFKA,
            "Jun 03 08:15:02 kafka-broker-2 java[1187]: " + KAFKA,
            "2024-06-03 08:15:02.411 [container-7] " + KAFKA,
        ]
    )
    rows = _one(spark, text)
    assert len(rows) == 6
    assert [r["line_format"] for r in rows] == ["redpanda"] * 3 + ["kafka"] * 3
    assert all(r["raw"] in (SEASTAR, KAFKA) for r in rows)


def test_csv_export(spark):
    line = (
        '"2024-06-03T08:15:02.411Z","INFO","state.change.logger","[Broker id=2] Follower orders-1 starts '
        'at leader epoch 9 from offset 4410 with partition epoch 31 and high watermark 4402. Current leader '
        'is 1. Previous leader Some(1) and previous leader epoch was 9."'
    )
    (row,) = _one(spark, line)
    assert row["line_format"] == "csv"
    assert row["logger"] == "state.change.logger"
    assert row["message"].startswith("[Broker id=2] Follower orders-1 starts at leader epoch 9")
    assert row["event_time"] == datetime(2024, 6, 3, 8, 15, 2, 411000)


def test_stack_trace_and_multiline_message(spark):
    text = "\n".join(
        [
            "[2024-01-01 00:00:00,000] ERROR [ReplicaManager broker=1] Error while doing x (kafka.server.ReplicaManager)",
            "org.apache.kafka.common.errors.NotLeaderOrFollowerException: boom",
            "\tat kafka.server.ReplicaManager.foo(ReplicaManager.scala:10)",
            "[2024-01-01 00:00:01,000] INFO KafkaConfig values: ",
            "\tadvertised.listeners = PLAINTEXT://x:9092",
            "\tbroker.id = 1",
            " (kafka.server.KafkaConfig)",
            KAFKA,
        ]
    )
    rows = _one(spark, text)
    assert [r["line_number"] for r in rows] == [1, 4, 8]
    assert [r["line_count"] for r in rows] == [3, 4, 1]
    assert rows[0]["logger"] == "kafka.server.ReplicaManager"
    assert rows[0]["message"] == "[ReplicaManager broker=1] Error while doing x"
    assert "NotLeaderOrFollowerException" in rows[0]["text"]
    assert rows[1]["logger"] == "kafka.server.KafkaConfig"
    assert rows[1]["message"].startswith("KafkaConfig values:")


def test_orphans_and_time_zone(spark):
    text = "garbage before any record\n" + KAFKA
    lines = lines_from_text(spark, text)
    records, status = frame_log_lines(lines, "Europe/Paris")
    (rec,) = records.collect()
    assert rec["event_time"] == datetime(2024, 2, 10, 16, 1, 12, 500000)  # 17:01 Paris = 16:01 UTC
    st = {r["line_number"]: r["record_line"] for r in status.collect()}
    assert st == {1: None, 2: 2}
