"""A run as a JUnit XML file, for CI systems (Jenkins, GitLab, GitHub Actions test reporters).

One ``<testsuite>`` for the invariants (one test case per registered invariant) and one per
expectation suite (one test case per expectation). A test case fails where the run fails: an
invariant with new violations of severity ``error`` this run reports, a critical expectation that
failed (``<failure>``) or raised (``<error>``). What does not change the exit code is said in the
test case's ``<system-out>``: new warnings, non-critical failures. A skipped
expectation is ``<skipped>``. Built from the run summary alone, so it never needs Spark.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from epoch_audit.gold.registry import REGISTRY

SUITE_NAME = "epoch-audit"


def _case(parent: ET.Element, classname: str, name: str) -> ET.Element:
    return ET.SubElement(parent, "testcase", {"classname": classname, "name": name, "time": "0"})


def _suite(root: ET.Element, name: str, seconds: float | None, timestamp: str) -> ET.Element:
    attrs = {"name": name, "timestamp": timestamp, "time": f"{seconds or 0:.3f}"}
    return ET.SubElement(root, "testsuite", attrs)


def _count(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        suite.set(attr, str(sum(1 for c in cases if c.find(tag) is not None)))


def _invariants(root: ET.Element, check: dict[str, Any], timestamp: str) -> None:
    suite = _suite(root, "invariants", check.get("seconds"), timestamp)
    new: dict[str, list[dict[str, Any]]] = {}
    for v in check.get("violations", []):
        new.setdefault(v["invariant"], []).append(v)
    ids = [spec.id for spec in REGISTRY]
    ids += sorted(set(new) - set(ids))  # an invariant this build no longer registers still shows
    for invariant in ids:
        case = _case(suite, "epoch_audit.invariants", invariant)
        groups = new.get(invariant, [])
        errors = sum(g["count"] for g in groups if g["severity"] == "error")
        lines = [f"{g['count']} new {g['severity']} violation(s), confidence {g['confidence']}" for g in groups]
        if errors:
            failure = ET.SubElement(
                case, "failure", {"type": "violation", "message": f"{errors} new violation(s) of severity error"}
            )
            failure.text = "\n".join(lines)
        elif lines:
            ET.SubElement(case, "system-out").text = "\n".join(lines)
    if check.get("status") == "skipped":
        ET.SubElement(suite, "system-out").text = f"check skipped: {check.get('reason', '')}"
    _count(suite)


def _expectations(root: ET.Element, validate: dict[str, Any], timestamp: str) -> None:
    by_suite: dict[str, list[dict[str, Any]]] = {}
    for r in validate.get("results", []):
        by_suite.setdefault(r["suite"], []).append(r)
    for name in sorted(by_suite):
        suite = _suite(root, f"expectations.{name}", None, timestamp)
        for r in by_suite[name]:
            case = _case(suite, f"expectations.{name}.{r['table']}", r["expectation"])
            what = f"{r['unexpected_count']} unexpected" if r.get("unexpected_count") is not None else r["status"]
            message = f"{what}{': ' + r['note'] if r.get('note') else ''}"
            if r["status"] == "skipped":
                ET.SubElement(case, "skipped", {"message": r.get("note") or "skipped"})
            elif r["status"] in ("failed", "error") and r["critical"]:
                tag = "failure" if r["status"] == "failed" else "error"
                ET.SubElement(case, tag, {"type": "expectation", "message": message})
            elif r["status"] in ("failed", "error"):
                ET.SubElement(case, "system-out").text = f"non-critical expectation {r['status']}: {message}"
        _count(suite)


def junit_xml(summary: dict[str, Any], timestamp: str) -> str:
    """The run ``summary`` (as ``--json`` prints it) as a JUnit XML document."""
    root = ET.Element("testsuites", {"name": f"{SUITE_NAME} {summary.get('run_id', '')}".strip()})
    stages = summary.get("stages", {})
    if "check" in stages:
        _invariants(root, stages["check"], timestamp)
    if "validate" in stages:
        _expectations(root, stages["validate"], timestamp)
    suites = root.findall("testsuite")
    for attr in ("tests", "failures", "errors", "skipped"):
        root.set(attr, str(sum(int(s.get(attr, "0")) for s in suites)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit_xml(path: str, summary: dict[str, Any], timestamp: str) -> None:
    """Write the document next to ``path`` and rename it into place: a reader never sees half a file."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_text(junit_xml(summary, timestamp), encoding="utf-8")
    tmp.replace(target)
