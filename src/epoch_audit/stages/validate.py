"""The validate stage, thin: run the layer suites, store their results, report critical failures.

Writes ``gold/validation_results`` (one row per expectation and run, upserted on
(run_id, table, expectation) so re-validating a run replaces its rows) and GX Data Docs under
``<lake>/reports/data_docs/``. A failed or erroring expectation of a suite listed in
``validation.critical_suites`` makes the stage report ``critical_failures`` > 0 (``run`` exits 3).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from pyspark.sql import SparkSession

from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.stages.base import StageResult
from epoch_audit.validate.base import ValidationSettings
from epoch_audit.validate.runner import RESULTS_SCHEMA, RESULTS_TABLE, result_rows, run_suites

log = logging.getLogger(__name__)

RESULT_KEYS = ["run_id", "table", "expectation"]


def settings_for(config: AppConfig, run_id: str, this_run_only: bool = False) -> ValidationSettings:
    """The validation settings of a run from the config's ``validation:`` section."""
    return replace(ValidationSettings.from_config(config.validation, run_id), this_run_only=this_run_only)


def run_validation(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str, this_run_only: bool = False
) -> StageResult:
    """Validate every layer; write gold/validation_results; return counts and the critical failures.

    ``this_run_only`` (a run that ingested): data expectations read only what this run wrote.
    """
    outcome = run_suites(spark, storage, settings_for(config, run_id, this_run_only))
    if not outcome.rows:
        return StageResult("validate", "skipped", {"reason": "no suites in this build"})
    storage.upsert_rows(RESULTS_TABLE, result_rows(outcome), RESULTS_SCHEMA, RESULT_KEYS)
    critical: list[dict[str, Any]] = [
        {
            "table": r["table"],
            "expectation": r["expectation"],
            "unexpected_count": r["unexpected_count"],
            "sample": r["unexpected_sample"][:3],
            "note": r["note"],
        }
        for r in outcome.critical_failures
    ]
    for c in critical:
        log.error(
            "critical expectation failed: %s %s (%s unexpected) e.g. %s",
            c["table"],
            c["expectation"],
            c["unexpected_count"],
            "; ".join(c["sample"]) or c["note"] or "-",
        )
    for r in outcome.rows:
        if r["status"] == "skipped":
            log.warning("validation skipped: %s %s: %s", r["table"], r["expectation"], r["note"])
    detail: dict[str, Any] = {
        "expectations": outcome.counts(),
        "critical_failures": critical,
        "data_docs": outcome.data_docs,
        # every expectation's outcome, small (the JUnit XML file has one test case per expectation)
        "results": [
            {k: r[k] for k in ("suite", "table", "expectation", "critical", "status", "unexpected_count", "note")}
            for r in outcome.rows
        ],
    }
    return StageResult("validate", "ran", detail)
