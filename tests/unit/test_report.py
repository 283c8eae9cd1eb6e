"""The run report and gold/daily_invariant_counts on the small hand-made lake of test_expectations."""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from pathlib import Path

import pytest

from epoch_audit.report.html import json_for_script, render
from epoch_audit.validate.runner import RESULTS_SCHEMA
from tests.unit.test_expectations import build_lake

RUN_ID = "report-1"


def _validation_rows() -> list[tuple]:
    now = datetime(2024, 3, 6, 1, 0, 0)
    base = dict(run_id=RUN_ID, validated_at=now, suite="bronze", table="bronze/events", expectation_type="x",
                description=None, critical=True, observed_value=None, element_count=None, note=None)
    rows = [
        {**base, "expectation": "epochs_at_least_minus_2", "status": "passed", "success": True, "unexpected_count": 0,
         "unexpected_sample": []},
        {**base, "expectation": "expect_column_values_to_be_in_set(event_type)", "status": "failed",
         "success": False, "unexpected_count": 1, "unexpected_sample": ['{"event_id": "</script>x"}']},
        {**base, "suite": "silver", "table": "silver/broker_views", "expectation": "table_exists", "status": "skipped",
         "success": None, "unexpected_count": None, "unexpected_sample": [], "note": "table absent"},
    ]
    return [tuple(r[f.name] for f in RESULTS_SCHEMA.fields) for r in rows]


@pytest.fixture(scope="session")
def report_lake(spark, tmp_path_factory) -> tuple[Path, Path, int]:
    """(lake, report path, exit code) after the CLI report stage on the small lake."""
    from epoch_audit.cli import main

    lake = tmp_path_factory.mktemp("report_lake")
    storage = build_lake(spark, lake)
    storage.overwrite("gold/validation_results", spark.createDataFrame(_validation_rows(), RESULTS_SCHEMA))
    code = main(["report", "--lake", str(lake), "--run-id", RUN_ID])
    return lake, lake / "reports" / RUN_ID / "index.html", code


def _payload(page: str) -> dict:
    m = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', page, re.S)
    assert m, "no JSON payload"
    return json.loads(m.group(1))


def test_report_page_content_and_escaping(report_lake):
    lake, path, code = report_lake
    assert code == 0 and path.is_file()
    page = path.read_text()
    # no network, everything inline
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<link" not in page
    # table: both violations, errors first, anchors for the timeline markers
    rows = re.findall(r"<tr id='v-(\w+)'>", page)
    assert rows == ["v1", "v2"]
    # user-derived text escaped: explanation markup, raw log lines, validation samples
    assert "&lt;b&gt;not bold&lt;/b&gt;" in page and "<b>not bold</b>" not in page
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)" in page
    assert '"</script>x"' not in page
    # evidence rows fetched by semi-join: exactly the cited events, linked from the table
    assert sorted(re.findall(r"<div id='ev-(\w+)'>", page)) == ["e3", "e6", "e7"]
    assert 'href="#ev-e6"' in page and "stop_replica_received" in page
    # summary cards: 7 events, 2 partitions, 2 violations; expectation counts from the results table
    summary = page[page.index('id="summary"'):page.index("<h2>Violations")]
    assert re.search(r'<div class="n">7</div><div class="l">events', summary)
    assert re.search(r'<div class="n">2</div><div class="l">partitions', summary)
    assert re.search(r'<div class="n">2</div><div class="l">violations', summary)
    assert "<td class='st-failed'>failed</td><td>1</td>" in summary
    # tonight first: no violation is this run's, one critical expectation failed (exit 3); failures lead
    assert page.index("id='tonight'") < page.index('id="summary"')
    assert "data-exit-code='3'" in page and "0 new violations (0 error)" in page
    expectations = page[page.index('id="expectations"'):]
    assert expectations.index("st-failed") < expectations.index("st-passed")
    # one chart per partition with a violation, with its decisions and markers
    timelines = _payload(page)["timelines"]
    by_title = {t["title"]: t for t in timelines}
    assert set(by_title) == {"orders-0 (cluster c1)", "orders-1 (cluster c1)"}
    # (1, 3) twice: build_lake logs one state again, as a ZooKeeper controller does
    assert [(p["leader"], p["le"]) for p in by_title["orders-0 (cluster c1)"]["points"]] == [(1, 1), (2, 2), (2, 2),
                                                                                             (1, 3), (1, 3)]
    assert [m["vid"] for m in by_title["orders-0 (cluster c1)"]["marks"]] == ["v1"]
    assert len(re.findall(r"<div class='chart' id='chart-\d+'>", page)) == 2


def test_daily_invariant_counts(spark, report_lake):
    from epoch_audit.lake.storage import DeltaRsStorage

    lake, _, _ = report_lake
    rows = DeltaRsStorage(spark, str(lake)).read("gold/daily_invariant_counts").collect()
    got = sorted((r["date"], r["cluster_id"], r["invariant"], r["severity"], r["confidence"], r["count"]) for r in rows)
    assert got == [
        (date(2024, 3, 5), "c1", "last_replica_fenced_in_isr", "warning", "confirmed", 1),
        (date(2024, 3, 5), "c1", "stale_stop_replica_accepted", "error", "confirmed", 1),
    ]


def test_render_bounds_and_script_safety():
    """Pure rendering: the JSON payload cannot close its script element; notes and limits are shown."""
    hostile = "</script><script>window.__pwned=1</script><!--"
    data = {
        "run_id": "r<1>", "generated_at": "now", "summary": {"events": 1}, "violation_counts": [
            {"invariant": "two_leaders_same_epoch", "severity": "error", "confidence": "suspected", "count": 3}],
        "violations_total": 3,
        "violations": [{"violation_id": "a", "run_id": "r<1>", "invariant": "two_leaders_same_epoch",
                        "severity": "error", "confidence": "suspected", "cluster_id": "c", "topic": hostile,
                        "partition": 0, "broker_id": 1, "leader_epoch": 2, "expected_epoch": None, "event_time": None,
                        "evidence": ["x"], "explanation": hostile}],
        "evidence": {}, "expectations": [], "notes": ["silver/partition_timeline is absent"],
        "timelines": [{"title": hostile, "key": ["c", hostile, 0], "truncated": False, "points": [],
                       "marks": [{"vid": "a", "invariant": "i", "severity": "error", "le": 2, "text": hostile}]}],
    }
    page = render(data)
    assert "<script>window.__pwned" not in page  # only escaped copies
    assert page.count("</script>") == 4  # the page's own four script elements, nothing injected
    assert "Showing 1 of 3 violations" in page and "silver/partition_timeline is absent" in page
    assert json.loads(json_for_script({"s": hostile})) == {"s": hostile}
    assert "</" not in json_for_script({"s": hostile})
