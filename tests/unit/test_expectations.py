"""Expectation suites on a small hand-made lake: clean passes; corrupted bronze/silver fails with keys.

One lake, two validation runs through the CLI (the second after corrupting bronze and silver), so
the test also covers gold/validation_results, the Data Docs site and exit code 3.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from epoch_audit.contracts.events import EVENT_COLUMNS, EVENT_SCHEMA
from epoch_audit.contracts.violations import CHECK_SCHEMA
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.stages.ingest import FILES_SCHEMA

T0 = datetime(2024, 3, 5, 10, 0, 0)


def _t(seconds: int) -> datetime:
    return T0.replace(second=seconds % 60, minute=seconds // 60)


def event(event_id: str, event_type: str, seconds: int, **typed) -> tuple:
    """One bronze event row in EVENT_SCHEMA order (unset columns are null)."""
    row = {c: None for c in EVENT_COLUMNS}
    row.update(
        event_id=event_id,
        event_type=event_type,
        cluster_id="c1",
        host_id=typed.get("broker_id", 1),
        event_time=_t(seconds),
        source_file="cluster=c1/broker-1/state-change.log",
        file_id="f1",
        file_order=99999999999999,
        line_number=seconds + 1,
        sub_index=0,
        log_kind="state-change",
        raw=f"[2024-03-05 10:00:{seconds:02d}] {event_type} <script>alert('x')</script> line {event_id}",
    )
    row.update(typed)
    return tuple(row[c] for c in EVENT_COLUMNS)


EVENTS = [
    event("e1", "md_partition", 1, topic="orders", partition=0, leader=1, leader_epoch=1, partition_epoch=1,
          isr=[1, 2], replicas=[1, 2], metadata_offset=10),
    event("e2", "md_partition_change", 2, topic="orders", partition=0, leader=2, leader_epoch=2, partition_epoch=2,
          isr=[1, 2], metadata_offset=11),
    event("e3", "become_leader", 3, broker_id=2, topic="orders", partition=0, leader_epoch=2),
    event("e4", "md_register_broker", 4, broker_id=1, broker_epoch=10, metadata_offset=5),
    event("e5", "md_register_broker", 5, broker_id=1, broker_epoch=20, metadata_offset=20),
    event("e6", "stop_replica_received", 6, broker_id=1, topic="orders", partition=0, leader_epoch=1,
          controller_epoch=3),
    event("e7", "stop_replica_fenced", 7, broker_id=2, topic="orders", partition=1, leader_epoch=-1,
          current_leader_epoch=-2),
]

ACCOUNTING_SCHEMA = StructType(
    [StructField("run_id", StringType()), StructField("file_id", StringType()), StructField("source_file", StringType()),
     StructField("start_line", LongType()), StructField("lines_read", LongType()), StructField("parsed", LongType()),
     StructField("irrelevant", LongType()), StructField("malformed", LongType())]
)
ACCOUNTING = [("ingest-1", "f1", "cluster=c1/broker-1/state-change.log", 1, 1000, 7, 993, 0),
              ("ingest-1", "f2", "cluster=c1/broker-2/server.log", 1, 200, 0, 199, 1)]

TIMELINE_SCHEMA = StructType(
    [StructField("cluster_id", StringType()), StructField("topic", StringType()), StructField("partition", IntegerType()),
     StructField("topic_id", StringType()), StructField("decision_seq", LongType()), StructField("source", StringType()),
     StructField("leader", IntegerType()), StructField("leader_epoch", IntegerType()),
     StructField("partition_epoch", IntegerType()), StructField("isr", ArrayType(IntegerType())),
     StructField("replicas", ArrayType(IntegerType())), StructField("event_time", TimestampType()),
     StructField("metadata_offset", LongType()), StructField("controller_id", IntegerType()),
     StructField("controller_epoch", IntegerType()), StructField("event_id", StringType()),
     StructField("commit_offset", LongType()), StructField("next_commit_offset", LongType()),
     StructField("is_leader_change", BooleanType())]
)


def decision(topic: str, part: int, seq: int, leader: int, le: int, pe: int, isr: list[int], eid: str) -> tuple:
    return ("c1", topic, part, "tid-" + topic, seq, "kraft", leader, le, pe, isr, [1, 2, 3], _t(seq), seq, 3000, 1,
            eid, seq, None, None)


TIMELINE = [
    decision("orders", 0, 10, 1, 1, 1, [1, 2], "e1"),
    decision("orders", 0, 11, 2, 2, 2, [1, 2], "e2"),
    decision("orders", 0, 12, 2, 2, 3, [2], "t3"),
    decision("orders", 0, 13, 1, 3, 4, [1, 2], "t4"),
    # the same state logged again (a ZooKeeper controller after an ISR removal that changed nothing):
    # no new decision, so no PE that failed to rise
    decision("orders", 0, 14, 1, 3, 4, [2, 1], "t4-again"),
    decision("orders", 1, 10, 3, 5, 7, [3], "t5"),
    decision("orders", 1, 11, 2, 6, 8, [2, 3], "t6"),
]

REG_SCHEMA = StructType(
    [StructField("cluster_id", StringType()), StructField("broker_id", IntegerType()),
     StructField("broker_epoch", LongType()), StructField("registered_at_offset", LongType()),
     StructField("registration_event_id", StringType()), StructField("fenced", BooleanType()),
     StructField("metadata_offset", LongType()), StructField("commit_offset", LongType()),
     StructField("next_commit_offset", LongType()), StructField("event_id", StringType())]
)
REGISTRATIONS = [("c1", 1, 10, 5, "e4", True, 5, 5, 8, "e4"), ("c1", 1, 10, 5, "e4", False, 8, 8, 20, "r8"),
                 ("c1", 1, 20, 20, "e5", True, 20, 20, None, "e5"),
                 # broker 2 starts from a KRaft snapshot ending at offset 5: no metadata offset, no
                 # registration offset (its RegisterBrokerRecord was deleted with the log before it)
                 ("c1", 2, 7, None, "s1", False, None, 4, None, "s1")]

VIOLATION_SCHEMA = StructType(
    [StructField("run_id", StringType()), StructField("violation_id", StringType()), *CHECK_SCHEMA.fields]
)
VIOLATIONS = [
    ("ingest-1", "v1", "stale_stop_replica_accepted", "error", "confirmed", "c1", "orders", 0, 1, 1, 2, _t(6),
     ["e6", "e3"], "Broker 1 accepted a StopReplica for orders-0 at LE 1 while holding LE 2 <b>not bold</b>."),
    ("ingest-1", "v2", "last_replica_fenced_in_isr", "warning", "confirmed", "c1", "orders", 1, 2, 6, None, _t(7),
     ["e7"], "Broker 2 stayed alone in the ISR of orders-1 while fenced."),
]


def build_lake(spark: SparkSession, lake: Path) -> DeltaRsStorage:
    """A small consistent lake: bronze, silver, gold tables written through DeltaRsStorage."""
    storage = DeltaRsStorage(spark, str(lake))
    storage.overwrite("bronze/events", spark.createDataFrame(EVENTS, EVENT_SCHEMA))
    storage.overwrite("bronze/ingest_accounting", spark.createDataFrame(ACCOUNTING, ACCOUNTING_SCHEMA))
    delivered = datetime.now(UTC)  # the host delivered just now: not silent
    storage.overwrite("bronze/ingest_files", spark.createDataFrame(
        [("f1", "cluster=c1/broker-1/state-change.log", "c1", 1, "state-change.log", "state-change", 99999999999999,
          1000, 20, "0" * 64, "ingest-1", None, delivered)], FILES_SCHEMA))
    storage.overwrite("silver/partition_timeline", spark.createDataFrame(TIMELINE, TIMELINE_SCHEMA))
    storage.overwrite("silver/broker_registrations", spark.createDataFrame(REGISTRATIONS, REG_SCHEMA))
    storage.overwrite("gold/violations", spark.createDataFrame(VIOLATIONS, VIOLATION_SCHEMA))
    return storage


def _results(storage: DeltaRsStorage, run_id: str) -> dict[str, dict]:
    rows = storage.read("gold/validation_results").where(f"run_id = '{run_id}'").collect()
    return {f"{r['table']}::{r['expectation']}": r.asDict() for r in rows}


def _keys(row: dict) -> list[dict]:
    return [json.loads(s) for s in row["unexpected_sample"]]


@pytest.fixture(scope="module")
def validated(spark, tmp_path_factory):
    """(storage, clean results, corrupted results, exit codes) of two CLI validate runs."""
    from epoch_audit.cli import main

    lake = tmp_path_factory.mktemp("lake")
    storage = build_lake(spark, lake)
    clean_code = main(["validate", "--lake", str(lake), "--run-id", "clean-1"])
    clean = _results(storage, "clean-1")

    # Corrupt: an unknown event type, an epoch of -5, an accounting row that does not reconcile
    # (and lifts the quarantine rate over 0.01), a timeline decision whose LE drops (not reported in gold).
    storage.append("bronze/events", spark.createDataFrame(
        [event("bad-type", "bogus_type", 30), event("bad-epoch", "become_leader", 31, topic="orders", partition=0,
                                                     leader_epoch=-5)]
        + [event("twice", "become_leader", 32, topic="orders", partition=0, leader_epoch=3)] * 2, EVENT_SCHEMA))
    storage.append("bronze/ingest_accounting", spark.createDataFrame(
        [("ingest-2", "bad-file", "cluster=c1/broker-3/server.log", 1, 100, 3, 3, 50)], ACCOUNTING_SCHEMA))
    storage.append("silver/partition_timeline", spark.createDataFrame(
        [decision("orders", 1, 12, 3, 4, 9, [3], "t-drop")], TIMELINE_SCHEMA))
    bad_code = main(["validate", "--lake", str(lake), "--run-id", "corrupt-2"])
    return storage, clean, _results(storage, "corrupt-2"), clean_code, bad_code, lake


def test_clean_lake_passes_and_writes_results_and_docs(validated):
    storage, clean, _, clean_code, _, lake = validated
    assert clean_code == 0
    failed = {k: (r["unexpected_sample"], r["note"]) for k, r in clean.items() if r["status"] != "passed"}
    assert failed == {}
    # every layer ran, with the rules the issue names
    for key in ("bronze/events::expect_column_values_to_be_in_set(event_type)",
                "bronze/events::epochs_at_least_minus_2", "bronze/events::event_id_unique", "bronze/events::event_time_in_window",
                "bronze/ingest_accounting::accounting_reconciles",
                "bronze/ingest_accounting::quarantine_rate_under_threshold", "bronze/ingest_files::hosts_not_silent",
                "silver/partition_timeline::leader_epoch_increases", "silver/partition_timeline::partition_epoch_increases",
                "silver/partition_timeline::one_leader_per_epoch", "silver/broker_registrations::broker_epoch_increases",
                "silver/broker_registrations::state_intervals_do_not_overlap",
                "gold/violations::expect_column_values_to_be_in_set(invariant)",
                "gold/violations::evidence_exists_in_bronze"):
        assert clean[key]["success"] is True, key
        assert clean[key]["critical"] is True
    docs = lake / "reports" / "data_docs" / "index.html"
    assert docs.is_file() and "bronze.events" in docs.read_text()


def test_corrupted_bronze_fails_the_right_expectations_with_keys(validated):
    _, clean, bad, _, bad_code, _ = validated
    assert bad_code == 3
    failed = {k for k, r in bad.items() if r["status"] == "failed"}
    assert failed == {
        "bronze/events::expect_column_values_to_be_in_set(event_type)",
        "bronze/events::epochs_at_least_minus_2",
        "bronze/events::event_id_unique",
        "bronze/ingest_accounting::accounting_reconciles",
        "bronze/ingest_accounting::quarantine_rate_under_threshold",
        "silver/partition_timeline::leader_epoch_increases",
    }
    in_set = bad["bronze/events::expect_column_values_to_be_in_set(event_type)"]
    assert in_set["unexpected_count"] == 1
    assert _keys(in_set) == [{"event_id": "bad-type", "event_type": "bogus_type"}]
    epochs = bad["bronze/events::epochs_at_least_minus_2"]
    assert epochs["unexpected_count"] == 1
    assert _keys(epochs) == [{"event_id": "bad-epoch", "column_name": "leader_epoch", "value": "-5"}]
    unique = bad["bronze/events::event_id_unique"]
    assert unique["unexpected_count"] == 1 and _keys(unique) == [{"event_id": "twice", "copies": "2"}]
    acct = bad["bronze/ingest_accounting::accounting_reconciles"]
    assert [k["file_id"] for k in _keys(acct)] == ["bad-file"] and acct["unexpected_count"] == 1
    rate = _keys(bad["bronze/ingest_accounting::quarantine_rate_under_threshold"])
    assert rate == [{"malformed": "51", "lines_read": "1300", "quarantine_rate": "0.039231"}]
    le = _keys(bad["silver/partition_timeline::leader_epoch_increases"])
    assert [(k["event_id"], k["prev_leader_epoch"], k["leader_epoch"]) for k in le] == [("t-drop", "6", "4")]


# A split brain in ZooKeeper mode, as the simulator's two_leaders_same_epoch fault writes it: the old
# controller (2, epoch 5) and the new one (1, epoch 6) both elect a leader of orders-8 from the same
# state, so both decisions carry LE 9 and PE 15. The checker reports two_leaders_same_epoch there; the
# PE that does not rise is the same fault, not a broken timeline. orders-3 repeats its PE without any
# violation behind it: that one stays unexpected.
SPLIT_BRAIN = {
    "cluster=zk/broker-1/state-change.log": (
        "[2024-03-05 00:42:29,973] INFO [Controller id=1 epoch=4] Changed partition orders-8 from OnlinePartition "
        "to OnlinePartition with state LeaderAndIsr(leader=5, leaderEpoch=8, isrWithBrokerEpoch=List(BrokerState("
        "brokerId=4, brokerEpoch=-1), BrokerState(brokerId=5, brokerEpoch=-1), BrokerState(brokerId=1, "
        "brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=14) (state.change.logger)\n"
        "[2024-03-05 00:47:02,073] INFO [Controller id=1 epoch=6] Changed partition orders-8 from OnlinePartition "
        "to OnlinePartition with state LeaderAndIsr(leader=4, leaderEpoch=9, isrWithBrokerEpoch=List(BrokerState("
        "brokerId=4, brokerEpoch=-1), BrokerState(brokerId=5, brokerEpoch=-1), BrokerState(brokerId=1, "
        "brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=15) (state.change.logger)\n"
        "[2024-03-05 00:47:04,973] INFO [Controller id=1 epoch=6] Changed partition orders-8 from OnlinePartition "
        "to OnlinePartition with state LeaderAndIsr(leader=1, leaderEpoch=10, isrWithBrokerEpoch=List(BrokerState("
        "brokerId=4, brokerEpoch=-1), BrokerState(brokerId=5, brokerEpoch=-1), BrokerState(brokerId=1, "
        "brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=16) (state.change.logger)\n"
        "[2024-03-05 00:48:00,100] INFO [Controller id=1 epoch=6] Changed partition orders-3 from OnlinePartition "
        "to OnlinePartition with state LeaderAndIsr(leader=2, leaderEpoch=4, isrWithBrokerEpoch=List(BrokerState("
        "brokerId=2, brokerEpoch=-1), BrokerState(brokerId=3, brokerEpoch=-1)), leaderRecoveryState=RECOVERED, "
        "partitionEpoch=7) (state.change.logger)\n"
        "[2024-03-05 00:49:59,974] INFO [Controller id=1 epoch=6] Partition orders-3 state changed to (Leader:2,ISR:2,"
        "LeaderRecoveryState:RECOVERED,LeaderEpoch:5,ZkVersion:7,ControllerEpoch:6) after removing replica 3 from "
        "the ISR as part of transition to OfflineReplica (state.change.logger)\n"
    ),
    "cluster=zk/broker-2/state-change.log": (
        "[2024-03-05 00:47:00,022] INFO [Controller id=2 epoch=5] Changed partition orders-8 from OnlinePartition "
        "to OnlinePartition with state LeaderAndIsr(leader=1, leaderEpoch=9, isrWithBrokerEpoch=List(BrokerState("
        "brokerId=4, brokerEpoch=-1), BrokerState(brokerId=5, brokerEpoch=-1), BrokerState(brokerId=1, "
        "brokerEpoch=-1)), leaderRecoveryState=RECOVERED, partitionEpoch=15) (state.change.logger)\n"
    ),
}


def test_partition_epoch_repeated_by_a_split_brain_is_explained_by_gold(spark, tmp_path):
    from epoch_audit.cli import main

    for path, text in SPLIT_BRAIN.items():
        (tmp_path / "in" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "in" / path).write_text(text)
    lake = tmp_path / "lake"
    code = main(["run", "--input", str(tmp_path / "in"), "--lake", str(lake), "--run-id", "split-1"])
    storage = DeltaRsStorage(spark, str(lake))
    gold = [(r["invariant"], r["topic"], r["partition"], r["leader_epoch"])
            for r in storage.read("gold/violations").collect()]
    assert ("two_leaders_same_epoch", "orders", 8, 9) in gold
    assert not [g for g in gold if g[1:3] == ("orders", 3)]
    results = _results(storage, "split-1")
    pe = results["silver/partition_timeline::partition_epoch_increases"]
    assert pe["status"] == "failed"
    assert [(k["topic"], k["partition"], k["prev_partition_epoch"], k["partition_epoch"]) for k in _keys(pe)] == [
        ("orders", "3", "7", "7")
    ]
    assert code == 3


def _broadcast_rows(plan) -> list[int]:
    """numOutputRows of every BroadcastExchange of an executed (adaptive) Spark plan, via py4j."""
    name = plan.nodeName()
    if name.startswith("AdaptiveSparkPlan"):
        return _broadcast_rows(plan.executedPlan())
    if name.endswith("QueryStage"):  # broadcast, shuffle, result (Spark 4) stages wrap their plan
        return _broadcast_rows(plan.plan())
    if name == "ReusedExchange":
        return _broadcast_rows(plan.child())
    found = [int(plan.metrics().get("numOutputRows").get().value())] if name == "BroadcastExchange" else []
    children = plan.children()
    for i in range(children.size()):
        found += _broadcast_rows(children.apply(i))
    return found


def test_evidence_check_never_broadcasts_bronze(validated, spark):
    """The evidence check runs on executors: what it broadcasts is bounded by gold's evidence ids,
    never by bronze (whose ``event_id`` projection Spark sizes below the broadcast threshold)."""
    from epoch_audit.validate.gold import evidence_query

    storage = validated[0]
    storage.read("bronze/events").createOrReplaceTempView("ea_v_bronze_events")
    storage.read("gold/violations").createOrReplaceTempView("ea_t_gold")
    events = storage.read("bronze/events").count()
    evidence_ids = storage.read("gold/violations").selectExpr("explode(evidence)").distinct().count()
    assert events > evidence_ids
    # Spark's default threshold, as a long run has it (short runs, like this session, turn broadcasts off).
    previous = spark.conf.get("spark.sql.autoBroadcastJoinThreshold")
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "10485760")
    try:
        df = spark.sql(evidence_query().format(batch="ea_t_gold"))
        assert df.collect() == []
        broadcasts = _broadcast_rows(df._jdf.queryExecution().executedPlan())
    finally:
        spark.conf.set("spark.sql.autoBroadcastJoinThreshold", previous)
    assert broadcasts and max(broadcasts) <= evidence_ids


def test_epoch_query_reports_each_low_epoch_of_a_row_once(spark):
    """One offending row per (event, column) below -2: an int and a long column low in the same
    event both show, the -1 / -2 sentinels and nulls do not."""
    from epoch_audit.validate.bronze import epoch_query

    rows = [
        event("two-low", "request_fetch", 1, leader_epoch=-5, broker_epoch=-3_000_000_000),
        event("sentinels", "request_fetch", 2, leader_epoch=-1, broker_epoch=-2, quorum_epoch=-2),
        event("fine", "md_partition", 3, leader_epoch=4, partition_epoch=7),
        event("nulls", "request_fetch", 4),
    ]
    spark.createDataFrame(rows, EVENT_SCHEMA).createOrReplaceTempView("ea_epochs_under_test")
    found = sorted(tuple(r) for r in spark.sql(epoch_query().format(batch="ea_epochs_under_test")).collect())
    assert found == [("two-low", "broker_epoch", "-3000000000"), ("two-low", "leader_epoch", "-5")]


def test_unique_query_finds_every_repeated_id_exactly(spark):
    """Grouped by hash first, in Spark's tasks or spread over more: the repeated values and their
    copies, nulls never (their own expectation reports them)."""
    from epoch_audit.validate.bronze import unique_query

    ids = [("a",), ("b",), ("a",), (None,), (None,), ("c",), ("c",), ("c",), ("d",)]
    spark.createDataFrame(ids, "event_id string").createOrReplaceTempView("ea_t_unique_ids")
    for partitions in (None, 8):
        query = unique_query("event_id", partitions).replace("{batch}", "ea_t_unique_ids")
        assert sorted(tuple(r) for r in spark.sql(query).collect()) == [("a", "2"), ("c", "3")]
    spark.createDataFrame(ids[5:], "event_id string").createOrReplaceTempView("ea_t_unique_ids")
    assert spark.sql(unique_query("event_id").replace("{batch}", "ea_t_unique_ids")).collect() == [("c", "3")]


def test_id_partitions_follow_the_lines_the_validated_ingest_parsed(spark):
    """One task per 400,000 parsed lines of the validated runs (the ledger, read by the driver), and
    Spark's own shuffle partitions (None) when they are as many or more."""
    from dataclasses import replace

    from epoch_audit.validate.base import ValidationSettings
    from epoch_audit.validate.runner import IDS_PER_TASK, id_partitions

    class Ledger:
        def __init__(self, rows):
            self._rows = rows

        def exists(self, table):
            return self._rows is not None

        def rows(self, table, columns):
            return [{c: r[c] for c in columns} for r in self._rows]

    shuffle = int(spark.conf.get("spark.sql.shuffle.partitions"))
    big = (shuffle + 2) * IDS_PER_TASK
    rows = [{"run_id": "r1", "parsed": big - 5}, {"run_id": "r2", "parsed": 7 * IDS_PER_TASK}, {"run_id": "r2", "parsed": None}]
    settings = ValidationSettings(run_id="r1")
    assert id_partitions(spark, Ledger(rows), settings) == shuffle + 2 + 7
    assert id_partitions(spark, Ledger(rows), replace(settings, this_run_only=True)) == shuffle + 2
    assert id_partitions(spark, Ledger(rows), replace(settings, run_id="r2", this_run_only=True)) == (
        7 if 7 > shuffle else None)
    assert id_partitions(spark, Ledger([{"run_id": "r1", "parsed": shuffle * IDS_PER_TASK}]), settings) is None
    assert id_partitions(spark, Ledger(None), settings) is None
