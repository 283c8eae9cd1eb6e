"""A night is judged on its own data: one out-of-range value fails its night, not every later one."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from epoch_audit.cli import main
from epoch_audit.gold.registry import REGISTRY

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "kafka" / "zk-3.3-state-change.log"


def _run(tree: Path, lake: Path, run_id: str, capsys, *extra: str) -> tuple[int, dict]:
    code = main(["run", "--input", str(tree), "--lake", str(lake), "--run-id", run_id, "--json", *extra])
    return code, json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_a_bad_timestamp_fails_its_own_night_only(tmp_path, capsys, monkeypatch, webhook_receiver):
    url, received, _ = webhook_receiver
    monkeypatch.setenv("EPOCH_AUDIT_WEBHOOK_URL", url)
    lines = FIXTURE.read_text().splitlines(keepends=True)
    host = tmp_path / "logs" / "cluster=scope-1" / "broker-3"
    host.mkdir(parents=True)
    # night 1: one line stamped 2099 (parsed, but outside the event_time window: a critical failure)
    (host / "state-change.log.2022-11-02-10").write_text("".join(lines[:3]) + lines[3].replace("[2022-", "[2099-", 1))
    junit = tmp_path / "night1.xml"
    code, summary = _run(tmp_path / "logs", tmp_path / "lake", "night1", capsys, "--junit-xml", str(junit))
    assert code == 3, summary
    failed = [c["expectation"] for c in summary["stages"]["validate"]["critical_failures"]]
    assert failed == ["event_time_in_window"], failed
    # the same verdict for a CI system: one failed test case, the expectation that failed
    root = ET.parse(junit).getroot()
    failures = [(s.get("name"), c.get("name")) for s in root.iter("testsuite") for c in s.iter("testcase")
                if c.find("failure") is not None or c.find("error") is not None]
    assert failures == [("expectations.bronze", "event_time_in_window")], failures
    expectations = sum(summary["stages"]["validate"]["expectations"].values())
    assert int(root.get("tests")) == len(REGISTRY) + expectations
    # and for on-call: one alert naming the failed expectation; the summary records it, not the URL
    assert summary["alert"] == {"sent": True, "status": 200} and len(received) == 1
    assert "event_time_in_window" in json.dumps(received[0]["body"]) and "night1" in received[0]["body"]["text"]
    # night 2: clean lines in a new file; the 2099 row stays in bronze but is not this night's data
    (host / "state-change.log").write_text("".join(lines[4:]))
    code, summary = _run(tmp_path / "logs", tmp_path / "lake", "night2", capsys)
    assert summary["stages"]["ingest"]["lines_read"] == len(lines) - 4
    assert summary["stages"]["validate"]["critical_failures"] == [], summary["stages"]["validate"]
    assert code == 0, summary
    assert summary["alert"] == {"sent": False, "reason": "nothing to alert on"} and len(received) == 1
    # a standalone validate still reads the whole lake and finds it
    assert main(["validate", "--lake", str(tmp_path / "lake"), "--run-id", "audit"]) == 3
