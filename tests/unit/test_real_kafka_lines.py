"""Lines real Kafka wrote in ``epoch-audit lab`` runs that the format reference missed (docs/formats.md notes)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from epoch_audit.bronze.single_pass import task_rows
from epoch_audit.config import load_config

FETCHER_ADDED_41 = (
    "[2026-11-27 04:42:36,481] INFO [ReplicaFetcherManager on broker 2] Added fetcher to broker 3 for partitions "
    "HashMap(lab-acks-all-1 -> InitialFetchState(Some(iEjI0fpqRXafExAhHxYiww),BrokerEndPoint[id=3, host=127.0.0.1, "
    "port=46513],0,125), lab-acks-all-0 -> InitialFetchState(Some(iEjI0fpqRXafExAhHxYiww),BrokerEndPoint[id=3, "
    "host=127.0.0.1, port=46513],1,775)) (kafka.server.ReplicaFetcherManager)"
)
FENCING_41 = (
    "[2026-11-27 04:43:21,570] INFO [QuorumController id=3] Fencing broker 1 at epoch 13 because its session has "
    "timed out. (org.apache.kafka.controller.ReplicationControlManager)"
)
ELECTED_ZK_39 = (
    "[2026-11-27 04:40:03,337] INFO [Controller id=2] 2 successfully elected as the controller. Epoch incremented to 2 "
    "and epoch zk version is now 2 (kafka.controller.KafkaController)"
)


def _events(name: str, kind: str, lines: list[str]) -> tuple[list[dict], dict]:
    config = load_config(None)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / name
        path.write_text("\n".join(lines) + "\n")
        task = {
            "file_id": "f1", "source_file": str(path), "read_path": str(path), "file_name": name, "cluster_id": "c1", "host_id": 2,
            "file_order": 0, "log_kind": kind, "compressed": "false", "start_byte": 0, "start_line": 1,
            "end_byte": path.stat().st_size, "max_line_chars": config.ingest.max_line_chars,
            "batch_lines": config.ingest.batch_lines, "read_problem": None, "seed_micros": None,
        }
        rows = list(task_rows(task, "UTC"))
    return [r for r in rows if r["row_kind"] == "event"], next(r for r in rows if r["row_kind"] == "file")


def test_kafka_4_fetcher_added_with_record_style_broker_end_point() -> None:
    events, counts = _events("server.log", "server", [FETCHER_ADDED_41])
    assert counts["malformed"] == 0
    assert [(e["event_type"], e["topic"], e["partition"], e["leader"], e["leader_epoch"], e["offset"])
            for e in events] == [("fetcher_added", "lab-acks-all", 1, 3, 0, 125),
                                 ("fetcher_added", "lab-acks-all", 0, 3, 1, 775)]


def test_kafka_4_fencing_names_the_broker_epoch() -> None:
    events, counts = _events("controller.log", "controller", [FENCING_41])
    assert counts["malformed"] == 0
    assert [(e["event_type"], e["broker_id"], e["broker_epoch"], e["fenced"]) for e in events] == [
        ("controller_fencing_broker", 1, 13, True)
    ]


def test_zk_controller_election_names_the_controller_epoch() -> None:
    events, counts = _events("controller.log", "controller", [ELECTED_ZK_39])
    assert counts["parsed"] == 1
    assert [(e["event_type"], e["controller_id"], e["controller_epoch"]) for e in events] == [
        ("controller_failover", 2, 2)
    ]
