"""The report stage: ``gold/daily_invariant_counts``, one self-contained HTML page per run and the
index of past runs.

``<lake>/reports/<run_id>/index.html`` (all CSS/JS inline, no network): this run's outcome, summary
cards, the trend over past runs, a sortable violations table whose evidence ids link to the evidence
events' raw lines, and an epoch timeline chart per partition with a violation. ``<lake>/reports/
index.html``: the trend and every run, newest first, each linked to its page. What the pages show
is gathered in ``epoch_audit.report.gather`` (past runs: ``epoch_audit.report.runs``) and drawn by
``epoch_audit.report.render``.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import DAILY_COUNTS_TABLE, SUPPRESSIONS_TABLE, VIOLATIONS_TABLE
from epoch_audit.report.gather import anchor, daily_invariant_counts, gather
from epoch_audit.report.render import render, render_index
from epoch_audit.stages.base import StageResult

log = logging.getLogger(__name__)


def _write_whole(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it: a run killed while writing
    never leaves a cut page (the index is overwritten by every run)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def run_report(spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str,
               ingested: bool = False) -> StageResult:
    """Write gold/daily_invariant_counts, ``<lake>/reports/<run_id>/index.html`` and ``<lake>/reports/index.html``.

    ``ingested``: this run ingested first (a ``run``), so its lines read and the violations it
    checked are points of the trend."""
    detail: dict[str, Any] = {}
    if storage.exists(VIOLATIONS_TABLE):
        active = (
            storage.read(SUPPRESSIONS_TABLE).where(F.col("status") == "active")
            if storage.exists(SUPPRESSIONS_TABLE) else None
        )
        storage.overwrite(DAILY_COUNTS_TABLE, daily_invariant_counts(storage.read(VIOLATIONS_TABLE), active))
        detail["daily_invariant_counts"] = DAILY_COUNTS_TABLE
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", storage.lake) and not storage.lake.startswith("file://"):
        detail["report"] = None
        detail["note"] = "the lake is not a local directory: no HTML report written"
        return StageResult("report", "ran", detail)
    data = gather(spark, storage, config, run_id, ingested=ingested)
    reports = Path(storage.lake.removeprefix("file://")) / "reports"
    out = reports / anchor(run_id) / "index.html"
    # Links only to pages that exist: runs of commands without a report (ingest, validate), runs
    # whose folder was deleted.
    for run in data["runs"]:
        run["has_report"] = run["run_id"] == run_id or (reports / anchor(run["run_id"]) / "index.html").is_file()
    _write_whole(out, render(data))
    index = reports / "index.html"
    _write_whole(index, render_index(data["runs"], data["generated_at"]))
    log.info("report: %s", out)
    detail.update(
        {
            "report": str(out),
            "index": str(index),
            "violations_shown": len(data["violations"]),
            "charts": len(data["timelines"]),
            "runs": len(data["runs"]),
            "notes": data["notes"],
        }
    )
    return StageResult("report", "ran", detail)
