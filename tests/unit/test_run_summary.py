"""gold/run_summary's typed columns: a run's row carries its summary's facts typed (a dashboard needs
no JSON), and a table an older build wrote (JSON only) gets them, filled from each row's JSON
(delta-rs here; ALTER TABLE ADD COLUMNS on delta-spark: tests/e2e/test_lake_upgrade_delta_spark.py)."""

from __future__ import annotations

import datetime as dt
import json

from deltalake import DeltaTable

from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import RUN_SUMMARY_TABLE
from epoch_audit.report.runs import RUN_COLUMNS, run_history
from epoch_audit.stages.state import (
    RUN_SUMMARY_BASE_SCHEMA,
    RUN_SUMMARY_SCHEMA,
    record_run,
    run_facts,
)
from epoch_audit.stages.upgrade import ensure_run_summary_columns, upgrade_lake

START = dt.datetime(2026, 11, 26, 23, 0, 1)
END = START + dt.timedelta(seconds=251.5)


def _night(run_id: str) -> dict:
    """A nightly ``run``'s summary, as epoch_audit.cli writes it."""
    return {
        "run_id": run_id, "status": "found", "exit_code": 3,
        "stages": {
            "ingest": {"status": "ran", "lines_read": 1000, "parsed": 700, "irrelevant": 290, "malformed": 10},
            "check": {
                "status": "ran", "known": 32,
                "violations": [{"invariant": "x", "severity": "error", "confidence": "confirmed", "count": 4}],
                "suppressions": {"suppressed_new": [{"invariant": "x", "count": 1}]},
                "input_problems": [{"cluster_id": "b", "problem": "mixed_modes"},
                                   {"cluster_id": "a", "problem": "mixed_modes"},
                                   {"cluster_id": "b", "problem": "conflicting_identity"}],
            },
            "validate": {
                "status": "ran", "expectations": {"passed": 90, "failed": 2, "error": 1},
                "critical_failures": [{"table": "bronze/ingest_files", "expectation": "hosts_not_silent"}],
                "results": [{"expectation": "hosts_not_silent", "status": "failed", "unexpected_count": 2}],
            },
        },
    }


def test_a_runs_facts_are_typed():
    facts = run_facts(_night("n1"), START, END)
    assert facts == {
        "status": "found", "run_date": dt.date(2026, 11, 26), "wall_seconds": 251.5,
        "lines_read": 1000, "parsed": 700, "irrelevant": 290, "malformed": 10,
        "known_violations": 32, "suppressed_new": 1, "failed_expectations": 3, "critical_failures": 1,
        "silent_hosts": 2, "input_problem_clusters": ["a", "b"],
    }
    # a stage that did not run counts nothing: null, never 0
    report_only = run_facts({"run_id": "r", "status": "ok", "stages": {"report": {"status": "ran"}}}, START, END)
    assert {k: v for k, v in report_only.items() if v is not None} == {
        "status": "ok", "run_date": dt.date(2026, 11, 26), "wall_seconds": 251.5}


def test_record_run_writes_the_typed_columns(spark, tmp_path):
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    record_run(store, _night("n1"), "run", START, END)
    assert store.columns(RUN_SUMMARY_TABLE) == RUN_SUMMARY_SCHEMA.fieldNames()
    (row,) = store.read(RUN_SUMMARY_TABLE).collect()
    assert (row["new_violations"], row["lines_read"], row["silent_hosts"], row["input_problem_clusters"]) == (
        4, 1000, 2, ["a", "b"])
    assert json.loads(row["summary"])["run_id"] == "n1"


def test_an_old_run_summary_gets_typed_columns_from_its_json(spark, tmp_path):
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    old = [("n1", "run", START, END, 3, 4, json.dumps(_night("n1"))),
           ("x", "report", START, END, 0, 0, "not json")]
    store.append(RUN_SUMMARY_TABLE, spark.createDataFrame(old, RUN_SUMMARY_BASE_SCHEMA))
    assert upgrade_lake(spark, store) == [RUN_SUMMARY_TABLE]
    assert store.columns(RUN_SUMMARY_TABLE) == RUN_SUMMARY_SCHEMA.fieldNames()
    comments = {f.name: f.metadata.get("comment") for f in DeltaTable(store.path(RUN_SUMMARY_TABLE)).schema().fields}
    assert all(comments.values()), comments
    rows = {r["run_id"]: r.asDict() for r in store.read(RUN_SUMMARY_TABLE).collect()}
    expected = run_facts(_night("n1"), START, END)
    assert {k: rows["n1"][k] for k in expected} == expected
    assert rows["n1"]["summary"] == old[0][6] and rows["n1"]["exit_code"] == 3  # the JSON is kept as it was
    assert rows["x"]["status"] is None and rows["x"]["wall_seconds"] == 251.5
    assert not ensure_run_summary_columns(spark, store), "done once"
    # the next run's row goes in, and the report's history reads the typed columns
    record_run(store, _night("n2"), "run", END, END + dt.timedelta(seconds=10))
    history = {r["run_id"]: r.asDict() for r in run_history(store.read(RUN_SUMMARY_TABLE)).collect()}
    assert set(history) == {"n1", "n2", "x"} and list(history["n2"]) == list(RUN_COLUMNS)
    assert history["n1"]["critical_failures"] == 1 and history["n2"]["known_violations"] == 32
