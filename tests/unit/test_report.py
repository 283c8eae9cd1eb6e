"""The run report and gold/daily_invariant_counts on the small hand-made lake of test_expectations."""

from __future__ import annotations

import json
import re
import shutil
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

from epoch_audit.report.render import json_for_script, render
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


def _night(run_id: str, lines: int, new: int, known: int, failed: int, critical: int) -> dict:
    """The run summary of a nightly ``run`` (the shape epoch_audit.cli writes)."""
    violations = [{"invariant": "stale_stop_replica_accepted", "severity": "error", "confidence": "confirmed",
                   "count": new}] if new else []
    return {
        "run_id": run_id, "status": "found" if new or critical else "ok", "exit_code": 3 if new or critical else 0,
        "stages": {
            "ingest": {"status": "ran", "lines_read": lines, "parsed": lines, "seconds": 3.0},
            "timelines": {"status": "ran", "seconds": 2.0},
            "check": {"status": "ran", "violations": violations, "known": known, "seconds": 5.0},
            "validate": {"status": "ran", "expectations": {"passed": 40 - failed, "failed": failed},
                         "critical_failures": [{"table": "bronze/events", "expectation": "x"}] * critical},
            "report": {"status": "ran"},
        },
    }


# Past runs in gold/run_summary: two nights (their report folders since deleted), then a standalone
# report (report-0, through the CLI: its page exists), then a run killed after its report (its page
# exists, no summary row).
NIGHTS = [("night-1", datetime(2024, 3, 4, 2, 30), 1200, 2, 2, 0, 0),
          ("night-2", datetime(2024, 3, 5, 2, 30), 300, 0, 2, 1, 1)]


@pytest.fixture(scope="session")
def report_lake(spark, tmp_path_factory) -> tuple[Path, Path, int]:
    """(lake, report path, exit code) after the CLI report stage on the small lake."""
    from epoch_audit.cli import main
    from epoch_audit.stages.state import record_run

    lake = tmp_path_factory.mktemp("report_lake")
    storage = build_lake(spark, lake)
    for run_id, started, lines, new, known, failed, critical in NIGHTS:
        record_run(storage, _night(run_id, lines, new, known, failed, critical), "run", started,
                   started + timedelta(seconds=251))
    storage.overwrite("gold/validation_results", spark.createDataFrame(_validation_rows(), RESULTS_SCHEMA))
    assert main(["report", "--lake", str(lake), "--run-id", "report-0"]) == 0
    (lake / "reports" / "killed-1").mkdir()
    shutil.copy(lake / "reports" / "report-0" / "index.html", lake / "reports" / "killed-1" / "index.html")
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
    assert "<script>alert" not in page and "&lt;script&gt;alert(&#39;x&#39;)" in page  # markupsafe's entity for '
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
    # a legend above the charts names every kind of mark report.js draws, in the colours it draws them
    legend = page[page.index("id='timeline-legend'"):page.index("</ul>", page.index("id='timeline-legend'"))]
    assert page.index("id='timeline-legend'") < page.index("id='chart-0'")
    assert re.findall(r"<li data-mark='([\w-]+)'>", legend) == [
        "decision", "leader-change", "le-line", "isr-change", "violation-error", "violation-warning", "x-axis"]
    assert "severity error" in legend and "severity warning" in legend and "no leader" in legend
    script = (Path(__file__).parents[2] / "src/epoch_audit/report/assets/report.js").read_text()
    colours = set(re.findall(r"#[0-9a-f]{6}", legend))
    assert len(colours) == 8 and all(c in script for c in colours), colours - {c for c in colours if c in script}


def test_daily_invariant_counts(spark, report_lake):
    from epoch_audit.lake.storage import DeltaRsStorage

    lake, _, _ = report_lake
    rows = DeltaRsStorage(spark, str(lake)).read("gold/daily_invariant_counts").collect()
    got = sorted((r["date"], r["cluster_id"], r["invariant"], r["severity"], r["confidence"], r["count"]) for r in rows)
    assert got == [
        (date(2024, 3, 5), "c1", "last_replica_fenced_in_isr", "warning", "confirmed", 1),
        (date(2024, 3, 5), "c1", "stale_stop_replica_accepted", "error", "confirmed", 1),
    ]


def test_summary_counts_hosts_per_cluster(spark):
    """Events, clusters and hosts from one grouped aggregate: host 1 of two clusters is two hosts, a
    row without a host id counts as events only, a row without a cluster as no cluster."""
    from epoch_audit.report.gather import event_summary, summary_counts

    rows = [("a", 1), ("a", 1), ("a", 2), ("b", 1), ("b", None), (None, 3)]
    events = spark.createDataFrame(rows, "cluster_id string, host_id int")
    per_host = [r.asDict() for r in event_summary(events).collect()]
    assert summary_counts(per_host) == {"events": 6, "clusters": 2, "hosts": 4}
    assert summary_counts([]) == {"events": 0, "clusters": 0, "hosts": 0}


def test_evidence_is_the_cited_ids_of_the_listed_clusters(spark):
    """The first ``per_violation`` cited ids of each listed violation, looked up by value; a cluster
    filter reads only the listed violations' clusters."""
    from epoch_audit.report.gather import cited_ids, evidence_events

    shown = [{"evidence": ["e1", "e2", "e3"]}, {"evidence": ["e2", "e9"]}, {"evidence": None}]
    assert cited_ids(shown, 2) == ["e1", "e2", "e9"]
    cols = ("event_id string, event_type string, cluster_id string, host_id int, broker_id int, topic string, "
            "partition int, event_time timestamp, source_file string, line_number long, raw string")
    events = spark.createDataFrame(
        [(i, "t", c, 1, 1, "x", 0, None, "f", n, "r" * 5000) for n, (i, c) in
         enumerate([("e1", "a"), ("e2", "a"), ("e9", "b"), ("e3", "a")])], cols)
    found = {r["event_id"]: r for r in evidence_events(events, cited_ids(shown, 2)).collect()}
    assert sorted(found) == ["e1", "e2", "e9"] and len(found["e1"]["raw"]) == 4000
    assert sorted(r["event_id"] for r in evidence_events(events, ["e1", "e9"], ["a"]).collect()) == ["e1"]


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


def test_input_problems_lead_and_mark_their_clusters_violations_doubtful():
    """A cluster id holding more than one cluster's logs: a banner under tonight's line names it, and
    its violations (only its) are marked doubtful."""
    def violation(vid: str, cluster: str, doubtful: bool) -> dict:
        return {"violation_id": vid, "run_id": "r1", "invariant": "two_leaders_same_epoch", "severity": "error",
                "confidence": "confirmed", "cluster_id": cluster, "topic": "t", "partition": 0, "broker_id": 1,
                "leader_epoch": 2, "expected_epoch": None, "event_time": None, "evidence": [],
                "explanation": "x", "doubtful": doubtful}
    data = {
        "run_id": "r1", "generated_at": "now", "summary": {}, "violation_counts": [], "violations_total": 2,
        "violations": [violation("a", "mixed", True), violation("b", "fine", False)],
        "evidence": {}, "expectations": [], "notes": [], "timelines": [],
        "input_problems": [{"cluster_id": "mixed", "problem": "mixed_modes", "hosts": [0, 1],
                            "detail": "Redpanda logs (hosts 0) and <KRaft> metadata logs (hosts 1) under one id"}],
    }
    page = render(data)
    banner = page[page.index("id='input-problems'"):page.index("</section>", page.index("id='input-problems'"))]
    assert page.index("id='tonight'") < page.index("id='input-problems'") < page.index('id="summary"')
    assert "the violations of mixed are doubtful" in banner and "mixed_modes" in banner
    assert "&lt;KRaft&gt;" in banner  # escaped like every text from the logs
    rows = dict(re.findall(r"<tr id='v-(\w+)'>(.*?)</tr>", page, re.S))
    assert "doubtful" in rows["a"] and "doubtful" not in rows["b"]
    assert "id='input-problems'" not in render({**data, "input_problems": []})


def test_index_of_runs_from_run_summary(report_lake):
    """reports/index.html lists every completed run newest first, this run on top; links only to pages
    that exist (the nights' folders are gone); a run killed after its report is not listed."""
    lake, _, _ = report_lake
    index = (lake / "reports" / "index.html").read_text()
    runs = index[index.index('id="runs"'):]
    rows = re.findall(r"<tr class='run-(\w+)'><td class='mono'>(.*?)</td>", runs)
    assert [(status, re.sub(r"<[^>]+>", "", cell)) for status, cell in rows] == [
        ("found", f"{RUN_ID} (this run)"), ("ok", "report-0"), ("found", "night-2"), ("found", "night-1")]
    links = re.findall(r"href='([^']+)'", runs)
    assert links == [f"{RUN_ID}/index.html", "report-0/index.html"]
    assert all((lake / "reports" / link).is_file() for link in links)
    assert "killed-1" not in index
    # night-2: 300 lines, 0 new, 2 known, 1 failed expectation of which 1 critical, 251 s
    night2 = runs[runs.index(">night-2<"):].split("</tr>")[0]
    cells = [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", night2)]
    assert cells == ["2024-03-05 02:30:00", "run", "found", "3", "0", "1 (1 critical)", "300", "2", "251 s"]
    # the standalone report read and checked nothing: unknown, not 0
    report0 = runs[runs.index(">report-0<"):].split("</tr>")[0]
    assert [re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", report0)][5:8] == ["–"] * 3
    # the trend: the two nights (the standalone reports have nothing to draw), oldest first
    assert [(p["run_id"], p["new"], p["known"], p["lines"], p["href"]) for p in _payload(index)["trend"]] == [
        ("night-1", 2, 2, 1200, None), ("night-2", 0, 2, 300, None)]
    # the run's own page carries the same trend, linked from one folder down, and links to the index
    page = (lake / "reports" / RUN_ID / "index.html").read_text()
    assert [p["run_id"] for p in _payload(page)["trend"]] == ["night-1", "night-2"]
    assert "href='../index.html'" in page


def test_this_run_in_its_own_trend(spark, report_lake):
    """A run's summary row is written after its report: the report makes its row from the lake (its
    ledger rows' lines, gold's size, its outcome), so tonight is the last point of its own trend."""
    from epoch_audit.config import load_config
    from epoch_audit.lake.storage import DeltaRsStorage
    from epoch_audit.report.gather import gather
    from epoch_audit.report.runs import trend_points

    lake, _, _ = report_lake
    data = gather(spark, DeltaRsStorage(spark, str(lake)), load_config(None, "local"), "ingest-1", ingested=True)
    points = trend_points(data["runs"])
    assert [p["run_id"] for p in points] == ["night-1", "night-2", "ingest-1"]
    # ingest-1's ledger rows: 1000 + 200 lines; gold holds 2 violations, both first reported by ingest-1
    assert (points[-1]["lines"], points[-1]["known"], points[-1]["new"], points[-1]["current"]) == (1200, 2, 2, True)
    # it did not validate (the results are report-1's); one of its new violations is an error: exit code 3
    assert points[-1]["exit_code"] == 3 and data["validated"] is False


def test_report_dir_takes_the_report_and_the_index_out_of_the_lake(report_lake, tmp_path):
    """--report-dir (validation.report_dir): the run's page and the index of runs go there, not under
    <lake>/reports. Last in this file: it adds a run to the shared lake's run_summary."""
    from epoch_audit.cli import main

    lake, _, _ = report_lake
    out = tmp_path / "published"
    assert main(["report", "--lake", str(lake), "--run-id", "report-elsewhere", "--report-dir", str(out)]) == 0
    assert "epoch-audit run report-elsewhere" in (out / "report-elsewhere" / "index.html").read_text()
    assert "report-elsewhere" in (out / "index.html").read_text()
    assert not (lake / "reports" / "report-elsewhere").exists()


def test_summary_counts_from_the_lake_metadata_are_the_rows_counts(spark, tmp_path):
    """Events from the Delta log's file statistics and hosts from the ledger: the same counts as
    the grouped aggregate over bronze's rows, on every sample (clusters, hosts, formats), after a
    later run added files and after maintain compacted them."""
    from epoch_audit.config import AppConfig
    from epoch_audit.lake.storage import DeltaRsStorage
    from epoch_audit.lake.tables import EVENTS_TABLE
    from epoch_audit.report.gather import event_summary, lake_summary_counts, summary_counts
    from epoch_audit.stages.ingest import ingest

    samples = Path(__file__).parents[2] / "data" / "samples"
    root = tmp_path / "in"
    for mode in ("kafka-kraft", "kafka-zk", "kafka-zk-strimzi"):
        shutil.copytree(samples / mode, root / mode)
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))

    def from_rows() -> dict[str, int]:
        return summary_counts([r.asDict() for r in event_summary(storage.read(EVENTS_TABLE)).collect()])

    ingest(spark, storage, [str(root)], AppConfig(), "first")
    first = lake_summary_counts(storage)
    assert first == from_rows() and first["clusters"] >= 3 and first["hosts"] > first["clusters"]
    shutil.copytree(samples / "redpanda", root / "redpanda")
    ingest(spark, storage, [str(root)], AppConfig(), "second")
    second = lake_summary_counts(storage)
    assert second == from_rows() and second["events"] > first["events"] and second["hosts"] > first["hosts"]
    storage.maintain(EVENTS_TABLE, retention_hours=168)
    assert lake_summary_counts(storage) == from_rows()
    # a file without statistics: the rows answer
    storage.partition_row_counts = lambda table: None
    assert lake_summary_counts(storage) is None
