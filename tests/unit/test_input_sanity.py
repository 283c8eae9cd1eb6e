"""Input sanity (issue #23): a cluster id whose input mixes modes or whose hosts speak as other
brokers is reported as an input problem, not taken for one cluster.

The Spark test ingests genuine Kafka lines (tests/fixtures/lab, cut from real ZooKeeper 3.9.1 and
KRaft 3.9.1 lab runs) and a Redpanda sample: each alone is one cluster, all three under one id are not.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pyspark.sql import functions as F

from epoch_audit.config import AppConfig
from epoch_audit.gold.analysis.input_sanity import input_problems, problems_of
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import EVENTS_TABLE
from epoch_audit.stages.ingest import ingest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lab"
REDPANDA = Path(__file__).parents[2] / "data" / "samples" / "redpanda" / "cluster=rp-1" / "broker-0"


def _host(cluster: str, host: int, *, zookeeper=False, kraft=False, redpanda=False, migrating=False, speaks_as=()):
    return {"cluster_id": cluster, "host_id": host, "zookeeper": zookeeper, "kraft": kraft, "redpanda": redpanda,
            "migrating": migrating, "speaks_as": list(speaks_as)}


def test_one_mode_per_cluster_is_no_problem() -> None:
    signs = [_host("zk", 1, zookeeper=True), _host("zk", 2), _host("kr", 3000, kraft=True), _host("kr", 1),
             _host("rp", 0, redpanda=True)]
    assert problems_of(signs) == []


def test_redpanda_beside_kafka_is_never_one_cluster() -> None:
    (problem,) = problems_of([_host("c", 1, zookeeper=True), _host("c", 0, redpanda=True, migrating=True)])
    assert (problem.cluster_id, problem.problem, problem.hosts) == ("c", "mixed_modes", [0, 1])
    assert "ZooKeeper-mode controller logs (hosts 1)" in problem.detail and "Redpanda logs (hosts 0)" in problem.detail


def test_zookeeper_beside_kraft_is_a_problem_unless_a_migration_shows() -> None:
    mixed = [_host("c", 1, zookeeper=True), _host("c", 3000, kraft=True)]
    (problem,) = problems_of(mixed)
    assert problem.problem == "mixed_modes" and "no ZooKeeper-to-KRaft migration" in problem.detail
    # KIP-866: during a migration ZooKeeper brokers and a KRaft quorum are one cluster
    assert problems_of([*mixed[:1], _host("c", 3000, kraft=True, migrating=True)]) == []


def test_a_host_speaking_as_another_broker_is_a_conflicting_identity() -> None:
    (problem,) = problems_of([_host("c", 1, zookeeper=True, speaks_as=[4]), _host("c", 2)])
    assert (problem.problem, problem.hosts) == ("conflicting_identity", [1])
    assert "host 1's logs speak as broker 4" in problem.detail


def test_genuine_kafka_logs_under_one_id_are_flagged_and_alone_are_not(spark, tmp_path: Path) -> None:
    # zk-3.9.1 holds broker 2's lines, kraft-3.9.1 broker 1's (a combined KRaft node)
    root = tmp_path / "in"
    shutil.copytree(FIXTURES / "zk-3.9.1", root / "cluster=zk" / "broker-2")
    shutil.copytree(FIXTURES / "kraft-3.9.1", root / "cluster=kraft" / "broker-1")
    shutil.copytree(FIXTURES / "zk-3.9.1", root / "cluster=mixed" / "broker-2")
    shutil.copytree(FIXTURES / "kraft-3.9.1", root / "cluster=mixed" / "broker-1")
    shutil.copytree(REDPANDA, root / "cluster=mixed" / "broker-0")
    shutil.copytree(FIXTURES / "zk-3.9.1", root / "cluster=moved" / "broker-5")  # broker 2's logs
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    ingest(spark, storage, [str(root)], AppConfig(), "sanity")
    events = storage.read(EVENTS_TABLE)
    problems = input_problems(events)
    # the check stage reads them from the state events alone: the request log's traffic shows none
    traffic = events.where(F.col("event_class") == "traffic")
    assert traffic.count() > 0 and input_problems(traffic) == []
    assert input_problems(events.where(F.col("event_class") == "state")) == problems
    assert [(p.cluster_id, p.problem, p.hosts) for p in problems] == [
        ("mixed", "mixed_modes", [0, 1, 2]), ("moved", "conflicting_identity", [5]),
    ]
    assert problems[0].detail.startswith(
        "ZooKeeper-mode controller logs (hosts 2) and KRaft metadata logs (hosts 1) and Redpanda logs (hosts 0)"
    )
    assert "host 5's logs speak as broker 2" in problems[1].detail


def test_host_signs_read_a_migration_and_other_ids_from_the_rows(spark) -> None:
    from epoch_audit.gold.analysis.input_sanity import host_signs

    schema = ("cluster_id string, host_id int, broker_id int, event_type string, log_kind string, "
              "record_type string, details map<string,string>")
    rows = [
        # host 1: a migrating ZooKeeper broker's registration in the metadata log, speaks as 4 and 5
        ("c", 1, 1, "md_register_broker", "metadata-dump", "RegisterBrokerRecord", {"is_migrating_zk_broker": "true"}),
        ("c", 1, 4, "become_leader", "state-change", None, {}),
        ("c", 1, 5, "become_follower", "state-change", None, {}),
        ("c", 1, 4, "isr_shrink", "server", None, {}),
        ("c", 1, 1, "data_batch", "segment-dump", None, {}),
        # host 2: a request a KRaft controller sent; host 3: a migration record past NONE; host 4: at NONE
        ("c", 2, 2, "request_leader_and_isr", "request", None, {"is_kraft_controller": "true"}),
        ("c", 3, 3, "md_zk_migration_state", "metadata-dump", "ZkMigrationStateRecord",
         {"data": '{"zkMigrationState": 1}'}),
        ("c", 4, 4, "md_zk_migration_state", "metadata-dump", "ZkMigrationStateRecord",
         {"data": '{"zkMigrationState":0}'}),
        ("c", 5, 5, "request_leader_and_isr", "request", None, {"is_kraft_controller": "false"}),
    ]
    signs = {r["host_id"]: r for r in host_signs(spark.createDataFrame(rows, schema)).collect()}
    assert {h: r["migrating"] for h, r in signs.items()} == {1: True, 2: True, 3: True, 4: False, 5: False}
    assert {h: r["speaks_as"] for h, r in signs.items()} == {1: [4, 5], 2: [], 3: [], 4: [], 5: []}
    assert signs[1]["kraft"] and not signs[1]["zookeeper"] and not signs[2]["kraft"]
