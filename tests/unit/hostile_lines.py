"""Drive lines through the ingest pass the way ingest does (read, redact, frame, parse, account),
without the lake: the lowest level that gives bronze rows plus every line's status.

The lines are written to real files and read by :func:`epoch_audit.bronze.single_pass.task_rows`,
the function every Spark task of the ingest runs."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession

from epoch_audit.bronze.framing import redact
from epoch_audit.bronze.single_pass import PASS_SCHEMA, task_rows
from epoch_audit.config import load_config

Files = dict[tuple[str, str], list[str]]
STATUS_SCHEMA = "file_id string, source_file string, line_number long, status string, reason string"
MARKED_SCHEMA = "file_id string, source_file string, line_number long, text string, redacted int"


def line_rows(spark: SparkSession, files: Files) -> Files:
    """(source_file, log_kind) -> physical lines, as the reader will read them (kept as given)."""
    return files


def run_chain(spark: SparkSession, files: Files) -> tuple[DataFrame, DataFrame, DataFrame]:
    """-> (every line's redacted text and redaction count, the pass's event rows, line statuses)."""
    config = load_config(None)
    marked, events, statuses = [], [], []
    with tempfile.TemporaryDirectory() as work:
        for k, ((source_file, log_kind), lines) in enumerate(files.items()):
            path = Path(work) / str(k)
            path.write_bytes("\n".join(lines).encode("utf-8") + b"\n")
            file_id = hashlib.sha256(source_file.encode()).hexdigest()
            task = {
                "file_id": file_id, "source_file": str(path), "read_path": str(path), "file_name": source_file.rsplit("/", 1)[-1],
                "cluster_id": "c1", "host_id": 1, "file_order": 0, "log_kind": log_kind, "compressed": "false",
                "start_byte": 0, "start_line": 1, "end_byte": path.stat().st_size,
                "max_line_chars": config.ingest.max_line_chars, "batch_lines": config.ingest.batch_lines,
                "read_problem": None, "seed_micros": None,
            }
            found: list[tuple[int, str, str | None]] = []
            for row in task_rows(task, "UTC", found):
                if row["row_kind"] == "event":
                    events.append({**row, "source_file": source_file})
            statuses += [(file_id, source_file, n, status, reason) for n, status, reason in found]
            marked += [(file_id, source_file, n + 1, *redact(text)) for n, text in enumerate(lines)]
    event_rows = [tuple(row.get(f.name) for f in PASS_SCHEMA.fields) for row in events]
    return (
        spark.createDataFrame(marked, MARKED_SCHEMA),
        spark.createDataFrame(event_rows, PASS_SCHEMA),
        spark.createDataFrame(statuses, STATUS_SCHEMA),
    )
