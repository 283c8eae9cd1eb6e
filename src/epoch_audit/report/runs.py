"""The run history: ``gold/run_summary`` as the rows of the index of past runs and the points of the
trend chart (new and known violations, lines read, per run).

A run writes its ``gold/run_summary`` row as its very last step, after its report: the report's own
run is not in the table yet, so its row is made here from what the report gathered (and the lines
its ledger rows say it read). Both pages are rebuilt from the table every time: a killed run, which
never wrote its row, drops out of them on the next run, as its violations are re-reported by it.

The pages read the table's typed columns (``epoch_audit.stages.state.RUN_SUMMARY_SCHEMA``; a lake
written before them gets them before any stage runs), so the driver collects one small row per run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

# Runs drawn in the trend chart (the index lists every run): a quarter of nightly runs stays readable
# at 960 px (a bar of about 9 px each).
TREND_RUNS = 90

RUN_COLUMNS = (
    "run_id", "command", "started_at", "finished_at", "exit_code", "status", "new_violations",
    "known_violations", "lines_read", "failed_expectations", "critical_failures",
)


def run_history(run_summary: DataFrame) -> DataFrame:
    """One row per completed run (RUN_COLUMNS), from ``gold/run_summary``'s typed columns.

    ``known_violations`` (gold's size after the run), ``lines_read``, ``failed_expectations``
    (failed or error) and ``critical_failures`` are null when the run did not run the stage that
    counts them (an ``ingest``-only or ``report``-only command), never 0.
    """
    return run_summary.select(*RUN_COLUMNS)


def lines_read_by(ledger: DataFrame, run_id: str) -> DataFrame:
    """One row (``run_id``, ``lines_read``): the lines ``run_id``'s chunks of the ledger hold (null: none)."""
    return ledger.where(F.col("run_id") == F.lit(run_id)).agg(
        F.lit(run_id).alias("run_id"), F.sum("lines_read").cast("long").alias("lines_read")
    )


def current_run(run_id: str, command: str, outcome: dict[str, Any], new_violations: int, known: int | None,
                lines_read: int | None, generated_at: datetime) -> dict[str, Any]:
    """The report's own run as a history row. ``outcome`` is :func:`epoch_audit.report.gather.tonight`'s;
    ``new_violations`` counts, as the run's summary row will, the new ones no active suppression covers."""
    return {
        "run_id": run_id, "command": command, "started_at": None, "finished_at": generated_at,
        "exit_code": outcome["exit_code"], "status": outcome["status"],
        "new_violations": new_violations, "known_violations": known, "lines_read": lines_read,
        "failed_expectations": outcome["failed_expectations"] if outcome["validated"] else None,
        "critical_failures": outcome["critical_failures"] if outcome["validated"] else None,
        "current": True,
    }


def newest_first(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The index's order: the report's own run, then by start (else finish) time, newest first."""

    def when(r: dict[str, Any]) -> tuple:
        t = r.get("started_at") or r.get("finished_at")
        return (bool(r.get("current")), t is not None, t or datetime.min, r["run_id"])

    return sorted(runs, key=when, reverse=True)


def trend_points(runs: list[dict[str, Any]], limit: int = TREND_RUNS) -> list[dict[str, Any]]:
    """The chart's points, oldest first: the latest ``limit`` runs that ingested or checked (a run of
    ``validate`` or ``report`` alone has nothing to draw)."""
    drawn = [r for r in reversed(newest_first(runs))
             if r["lines_read"] is not None or r["known_violations"] is not None]
    return [
        {
            "run_id": r["run_id"],
            "t": _time(r.get("started_at") or r.get("finished_at")),
            "new": r["new_violations"],
            "known": r["known_violations"],
            "lines": r["lines_read"],
            "exit_code": r["exit_code"],
            "current": bool(r.get("current")),
            "href": r.get("href"),
        }
        for r in drawn[-limit:]
    ]


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.strftime("%Y-%m-%d %H:%M")
