"""A night is judged on its own data: one out-of-range value fails its night, not every later one."""

from __future__ import annotations

import json
from pathlib import Path

from epoch_audit.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kafka" / "zk-3.3-state-change.log"


def _run(tree: Path, lake: Path, run_id: str, capsys) -> tuple[int, dict]:
    code = main(["run", "--input", str(tree), "--lake", str(lake), "--run-id", run_id, "--json"])
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_bad_timestamp_fails_its_own_night_only(tmp_path, capsys):
    lines = FIXTURE.read_text().splitlines(keepends=True)
    host = tmp_path / "logs" / "cluster=scope-1" / "broker-3"
    host.mkdir(parents=True)
    # night 1: one line stamped 2099 (parsed, but outside the event_time window: a critical failure)
    (host / "state-change.log.2022-11-02-10").write_text("".join(lines[:3]) + lines[3].replace("[2022-", "[2099-", 1))
    code, summary = _run(tmp_path / "logs", tmp_path / "lake", "night1", capsys)
    assert code == 3, summary
    failed = [c["expectation"] for c in summary["stages"]["validate"]["critical_failures"]]
    assert failed == ["event_time_in_window"], failed
    # night 2: clean lines in a new file; the 2099 row stays in bronze but is not this night's data
    (host / "state-change.log").write_text("".join(lines[4:]))
    code, summary = _run(tmp_path / "logs", tmp_path / "lake", "night2", capsys)
    assert summary["stages"]["ingest"]["lines_read"] == len(lines) - 4
    assert summary["stages"]["validate"]["critical_failures"] == [], summary["stages"]["validate"]
    assert code == 0, summary
    # a standalone validate still reads the whole lake and finds it
    assert main(["validate", "--lake", str(tmp_path / "lake"), "--run-id", "audit"]) == 3
