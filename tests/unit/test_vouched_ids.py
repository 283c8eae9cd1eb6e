"""The ingest pass vouches for the uniqueness of its event ids per task (``unvouched_ids`` 0), so
that bronze's write skips its key check; whatever it cannot vouch for is counted, and the write
then checks the ids."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from epoch_audit.bronze import file_pass
from epoch_audit.bronze.discover import describe, discover_inputs
from epoch_audit.bronze.file_pass import FilePass
from epoch_audit.bronze.single_pass import task_rows
from epoch_audit.config import AppConfig

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"


def _task(path: Path, config: AppConfig) -> dict:
    f = describe(path, config)
    return dict(file_id=f.file_id, source_file=f.source_file, file_name=f.file_name, cluster_id=f.cluster_id,
                host_id=f.host_id, file_order=f.file_order, log_kind=f.log_kind, read_path=os.path.abspath(path),
                compressed="true" if f.compressed else "false", start_byte=0, start_line=1, end_byte=f.size_bytes,
                max_line_chars=config.ingest.max_line_chars, batch_lines=config.ingest.batch_lines,
                read_problem=f.read_problem, seed_micros=None)


@pytest.mark.parametrize("root", [FIXTURES, SAMPLES], ids=["fixtures", "samples"])
def test_every_file_of_every_format_is_vouched_for_and_its_ids_are_unique(root):
    config = AppConfig()
    files = discover_inputs([str(root)]).files
    assert len(files) > 20
    for path in files:
        rows = list(task_rows(_task(path, config), "UTC"))
        (file_row,) = [r for r in rows if r["row_kind"] == "file"]
        ids = Counter(r["event_id"] for r in rows if r["row_kind"] == "event")
        assert file_row["unvouched_ids"] == 0, path
        assert not [i for i, n in ids.items() if n > 1], path


def _event(line: int, sub: int | None) -> dict:
    return {"file_id": "f", "source_file": "s", "cluster_id": "c", "host_id": 1, "file_order": 0,
            "log_kind": "server", "line_number": line, "sub_index": sub, "event_type": "broker_registered",
            "event_time": None, "raw": "x"}


def test_a_repeated_id_or_a_file_past_the_kept_keys_is_not_vouched_for(monkeypatch):
    state = FilePass({"file_id": "f", "source_file": "s"})
    state.emit_events([_event(3, 0), _event(3, 1)])
    state.emit_events([_event(5, None)])
    state.emit_events([_event(4, 0)])  # an earlier line after a later one (a file-level parser): fine
    assert state.counts["unvouched_ids"] == 0
    state.emit_events([_event(5, 0)])  # line 5, sub_index 0 again (None is 0): the same id
    assert state.counts["unvouched_ids"] == 1
    state.emit_events([_event(7, 0), _event(7, 0)])
    assert state.counts["unvouched_ids"] == 2
    monkeypatch.setattr(file_pass, "VOUCHED_IDS_KEPT", 6)
    state.emit_events([_event(8, 0), _event(9, 0), _event(10, 0)])  # the 6th kept, then no more room
    assert state.counts["unvouched_ids"] == 4
