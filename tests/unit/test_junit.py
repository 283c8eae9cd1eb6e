"""The run as JUnit XML: a test case per invariant and per expectation, failing where the run fails."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from epoch_audit.cli import main
from epoch_audit.gold.registry import REGISTRY
from epoch_audit.report.junit import junit_xml, write_junit_xml

SUMMARY = {
    "run_id": "night-1",
    "stages": {
        "check": {
            "status": "ran", "seconds": 12.5,
            "violations": [
                {"invariant": "two_leaders_same_epoch", "severity": "error", "confidence": "proven", "count": 2},
                {"invariant": "high_watermark_regression", "severity": "warning", "confidence": "suspected",
                 "count": 1},
            ],
        },
        "validate": {
            "status": "ran",
            "results": [
                {"suite": "bronze", "table": "bronze/events", "expectation": "event_time_in_window",
                 "critical": True, "status": "failed", "unexpected_count": 1, "note": None},
                {"suite": "bronze", "table": "bronze/events", "expectation": "event_id_unique",
                 "critical": True, "status": "passed", "unexpected_count": 0, "note": None},
                {"suite": "silver", "table": "silver/partition_timeline", "expectation": "leader_epoch_increases",
                 "critical": False, "status": "failed", "unexpected_count": 3, "note": None},
                {"suite": "gold", "table": "gold/violations", "expectation": "evidence_exists_in_bronze",
                 "critical": True, "status": "error", "unexpected_count": None, "note": "<query failed> & more"},
                {"suite": "gold", "table": "gold/violations", "expectation": "explanation_not_empty",
                 "critical": True, "status": "skipped", "unexpected_count": None, "note": "table absent"},
            ],
        },
    },
}


def _cases(root: ET.Element, suite: str) -> dict[str, ET.Element]:
    (s,) = [s for s in root.findall("testsuite") if s.get("name") == suite]
    return {c.get("name"): c for c in s.findall("testcase")}


def test_a_case_per_invariant_and_expectation_failing_where_the_run_fails():
    root = ET.fromstring(junit_xml(SUMMARY, "2026-11-27T01:00:00"))
    invariants = _cases(root, "invariants")
    assert list(invariants) == [spec.id for spec in REGISTRY]
    failure = invariants["two_leaders_same_epoch"].find("failure")
    assert failure is not None and "2 new violation(s)" in failure.get("message")
    warning = invariants["high_watermark_regression"]
    assert warning.find("failure") is None and "1 new warning" in warning.find("system-out").text
    assert all(c.find("failure") is None for n, c in invariants.items() if n != "two_leaders_same_epoch")

    bronze, silver, gold = (_cases(root, f"expectations.{s}") for s in ("bronze", "silver", "gold"))
    assert bronze["event_time_in_window"].find("failure").get("message") == "1 unexpected"
    assert len(list(bronze["event_id_unique"])) == 0  # passed: an empty test case
    assert silver["leader_epoch_increases"].find("failure") is None  # not critical: said, not failed
    assert "non-critical" in silver["leader_epoch_increases"].find("system-out").text
    assert gold["evidence_exists_in_bronze"].find("error").get("message") == "error: <query failed> & more"
    assert gold["explanation_not_empty"].find("skipped").get("message") == "table absent"

    n = len(REGISTRY)
    assert root.get("tests") == str(n + 5) and root.get("failures") == "2" and root.get("errors") == "1"
    assert root.get("skipped") == "1" and root.get("name") == "epoch-audit night-1"
    suite = [s for s in root.findall("testsuite") if s.get("name") == "invariants"][0]
    assert suite.get("time") == "12.500" and suite.get("timestamp") == "2026-11-27T01:00:00"


def test_a_skipped_check_stage_still_lists_every_invariant(tmp_path):
    summary = {"run_id": "r", "stages": {"check": {"status": "skipped", "reason": "no bronze events yet"}}}
    target = tmp_path / "run.xml"
    write_junit_xml(str(target), summary, "2026-11-27T01:00:00")
    root = ET.parse(target).getroot()
    assert root.get("tests") == str(len(REGISTRY)) and root.get("failures") == "0"
    assert [p.name for p in tmp_path.iterdir()] == ["run.xml"]  # no temporary file left


def test_an_unwritable_junit_path_fails_before_spark(tmp_path, capsys):
    code = main(["run", "--input", str(tmp_path), "--lake", str(tmp_path / "lake"),
                 "--junit-xml", str(tmp_path / "missing" / "run.xml")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--junit-xml" in err[0] and "does not exist" in err[0], err
    assert main(["check", "--lake", str(tmp_path / "lake"), "--junit-xml", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
