"""The pipeline: its stages in order, each thin (read tables, call pure transforms, write tables).

parse → bronze (epoch_audit.stages.ingest) → silver (timelines) → gold (check) → validate → report.
Ingest takes the input paths besides the lake, so the command line runs it itself; every later stage
is a :class:`Stage` of :data:`STAGES`, run on the lake alone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import SparkSession

from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.stages.base import StageResult
from epoch_audit.stages.check import run_checks
from epoch_audit.stages.timelines import run_timelines

# (spark, storage, config, run_id, ingested=whether this command ran ingest first, started_at=the run's
# start, UTC) -> result
StageRun = Callable[..., StageResult]


@dataclass(frozen=True)
class Stage:
    """A stage of the pipeline on the lake: its name and what runs it."""

    name: str
    run: StageRun


def _timelines(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str, ingested: bool = False,
    started_at: dt.datetime | None = None,
) -> StageResult:
    return run_timelines(spark, storage, config, run_id)


def _check(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str, ingested: bool = False,
    started_at: dt.datetime | None = None,
) -> StageResult:
    return run_checks(spark, storage, config, run_id, started_at)[0]


# Validation and the report import Great Expectations and the report assets: only when they run.
def _validate(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str, ingested: bool = False,
    started_at: dt.datetime | None = None,
) -> StageResult:
    """A run that ingested is judged on what it wrote; a standalone validate reads the whole lake."""
    from epoch_audit.stages.validate import run_validation

    return run_validation(spark, storage, config, run_id, this_run_only=ingested)


def _report(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str, ingested: bool = False,
    started_at: dt.datetime | None = None,
) -> StageResult:
    from epoch_audit.report.html import run_report

    return run_report(spark, storage, config, run_id, ingested=ingested)


def _maintain(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str, ingested: bool = False,
    started_at: dt.datetime | None = None,
) -> StageResult:
    from epoch_audit.stages.maintain import run_maintenance

    return run_maintenance(spark, storage, config, run_id)


INGEST = "ingest"
PIPELINE: tuple[Stage, ...] = (
    Stage("timelines", _timelines),
    Stage("check", _check),
    Stage("validate", _validate),
    Stage("report", _report),
)
# Not part of a run: compaction and vacuum of the whole lake, on its own schedule (after the run).
MAINTAIN = Stage("maintain", _maintain)
STAGES: dict[str, Stage] = {stage.name: stage for stage in (*PIPELINE, MAINTAIN)}
# The stages each command runs, in order.
COMMAND_STAGES: dict[str, list[str]] = {
    "run": [INGEST, *(stage.name for stage in PIPELINE)],
    INGEST: [INGEST],
    **{name: [name] for name in STAGES},
}
