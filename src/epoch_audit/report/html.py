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
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from epoch_audit import objstore
from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import DAILY_COUNTS_TABLE, SUPPRESSIONS_TABLE, VIOLATIONS_TABLE
from epoch_audit.report.gather import anchor, daily_invariant_counts, gather
from epoch_audit.report.render import render, render_index
from epoch_audit.stages.base import StageResult

log = logging.getLogger(__name__)


def _write_whole(path: Path | str, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path``, then rename it: a run killed while writing
    never leaves a cut page (the index is overwritten by every run). On an object store one PUT
    does the same: an object is only ever seen whole."""
    if isinstance(path, str):
        objstore.write_bytes(path, text.encode("utf-8"))
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(text, encoding="utf-8")
    partial.replace(path)


def _under(reports: Path | str, *parts: str) -> Path | str:
    return objstore.join(reports, *parts) if isinstance(reports, str) else reports.joinpath(*parts)


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
    data = gather(spark, storage, config, run_id, ingested=ingested)
    # <lake>/reports (on the lake's object store too), unless validation.report_dir / --report-dir
    root = objstore.reports_root(storage.lake, config.validation.report_dir)
    reports: Path | str = root if objstore.is_remote(root) else Path(root)
    out, index = _under(reports, anchor(run_id), "index.html"), _under(reports, "index.html")
    # Links only to pages that exist: runs of commands without a report (ingest, validate), runs
    # whose folder was deleted. On a store: one listing of the run folders, not a request per run.
    pages = objstore.dir_names(root) if isinstance(reports, str) else None
    for run in data["runs"]:
        run["has_report"] = run["run_id"] == run_id or (
            anchor(run["run_id"]) in pages if pages is not None
            else (reports / anchor(run["run_id"]) / "index.html").is_file()
        )
    _write_whole(out, render(data))
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
