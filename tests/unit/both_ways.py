"""Read a file the ingest pass's two ways, the batched (Arrow) one and the per-line one, and
check that they agree: used by the tests of the Arrow readers."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from epoch_audit.bronze.discover import describe
from epoch_audit.bronze.single_pass import PASS_ARROW_SCHEMA, _to_batch, batch_rows, task_items
from epoch_audit.config import AppConfig


def _task(path: Path) -> dict:
    config = AppConfig()
    f = describe(path, config)
    return dict(file_id=f.file_id, source_file=f.source_file, file_name=f.file_name, cluster_id=f.cluster_id,
                host_id=f.host_id, file_order=f.file_order, log_kind=f.log_kind, read_path=os.path.abspath(path),
                compressed="false", start_byte=0, start_line=1, end_byte=f.size_bytes,
                max_line_chars=config.ingest.max_line_chars, batch_lines=config.ingest.batch_lines,
                read_problem=f.read_problem, seed_micros=None)


def _event_table(rows: list[dict], batches: list[pa.RecordBatch]) -> pa.Table:
    events = [r for r in rows if r["row_kind"] == "event"]
    parts = ([_to_batch(events)] if events else []) + batches
    return pa.Table.from_batches(parts, PASS_ARROW_SCHEMA).sort_by([("line_number", "ascending"),
                                                                      ("sub_index", "ascending")])


def read_both_ways(path: Path, zone: str = "UTC") -> tuple[list[dict], int]:
    """The per-line rows of ``path``; asserts the batched reading equals them; returns the rows and
    how many events the Arrow batches held."""
    task = _task(path)
    slow_statuses: list = []
    fast_statuses: list = []
    slow = list(task_items(task, zone, slow_statuses, vectorised=False))
    fast = list(task_items(task, zone, fast_statuses))
    assert not any(isinstance(item, pa.RecordBatch) for item in slow)
    batches = [item for item in fast if isinstance(item, pa.RecordBatch)]
    fast_rows = [item for item in fast if not isinstance(item, pa.RecordBatch)]
    assert fast_statuses == slow_statuses
    assert _event_table(fast_rows, batches).equals(_event_table(slow, []))
    key = lambda r: (r["row_kind"], r.get("line_number") or 0, r.get("sub_index") or 0, str(r.get("reason")))  # noqa: E731
    as_rows = fast_rows + [row for batch in batches for row in batch_rows(batch)]
    assert sorted(as_rows, key=key) == sorted(slow, key=key)
    return slow, sum(b.num_rows for b in batches)
