"""Irrelevant lines are counted per family (logger and message prefix), and the families sum to the count."""

from __future__ import annotations

import tempfile
from pathlib import Path

from epoch_audit.bronze.families import line_family, message_prefix, record_family
from epoch_audit.bronze.single_pass import task_rows
from epoch_audit.config import load_config

LINES = [
    "[2026-11-27 04:26:40,101] INFO [BrokerServer id=1] Transition from STARTING to STARTED (kafka.server.BrokerServer)",
    "[2026-11-27 04:26:40,102] INFO [BrokerServer id=2] Transition from STARTING to STARTED (kafka.server.BrokerServer)",
    "[2026-11-27 04:26:41,000] INFO [LocalLog partition=t-0, dir=/d] Rolled new log segment at offset 1234 in 3 ms. "
    "(kafka.log.LocalLog)",
    "[2026-11-27 04:26:42,000] ERROR Uncaught exception (kafka.Kafka)",
    "java.lang.IllegalStateException: boom",
    "\tat kafka.Kafka.main(Kafka.scala:1)",
]


def test_message_prefix_drops_context_and_numbers() -> None:
    assert message_prefix("[Broker id=1] [Partition t-0] Rolled new log segment at offset 12") == "Rolled new log segment"
    assert message_prefix("Fetch session 123 created\nat x") == "Fetch session N created"
    assert record_family(None, "") == "- | "
    request = 'Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":3,"requestApiKeyName":"METADATA"}'
    assert record_family("kafka.request.logger", request) == "kafka.request.logger | Completed request: METADATA"
    assert line_family("segment-dump", "| offset: 7 CreateTime: 1 keySize: -1") == "segment-dump | | offset"


def test_family_rows_sum_to_the_irrelevant_lines() -> None:
    config = load_config(None)
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "server.log"
        path.write_text("\n".join(LINES) + "\n")
        task = {
            "file_id": "f1", "source_file": str(path), "read_path": str(path), "file_name": "server.log", "cluster_id": "c1", "host_id": 1,
            "file_order": 0, "log_kind": "server", "compressed": "false", "start_byte": 0, "start_line": 1,
            "end_byte": path.stat().st_size, "max_line_chars": config.ingest.max_line_chars,
            "batch_lines": config.ingest.batch_lines, "read_problem": None, "seed_micros": None,
        }
        rows = list(task_rows(task, "UTC"))
    families = {r["reason"]: r["lines_read"] for r in rows if r["row_kind"] == "irrelevant_family"}
    file_row = next(r for r in rows if r["row_kind"] == "file")
    assert families == {
        "kafka.server.BrokerServer | Transition from STARTING to": 2,
        "kafka.log.LocalLog | Rolled new log segment": 1,
        "kafka.Kafka | Uncaught exception": 3,  # a stack trace is its record's lines
    }
    assert sum(families.values()) == file_row["irrelevant"] == 6
