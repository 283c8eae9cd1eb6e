"""What every stage shares: the record of what it did, and the checks' rule parameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame

from epoch_audit.config import AppConfig
from epoch_audit.gold.context import CheckConfig
from epoch_audit.spark import ONE_PARTITION_INPUTS


@dataclass
class StageResult:
    """What a stage did, for the console and the --json summary."""

    name: str
    status: str  # ran | skipped
    detail: dict[str, Any] = field(default_factory=dict)


def check_config(config: AppConfig) -> CheckConfig:
    """The rule parameters of the ``checks:`` section (and the source time zone)."""
    return CheckConfig(
        max_clock_skew_ms=config.checks.max_clock_skew_ms, source_time_zone=config.ingest.source_time_zone
    )


def short_run_inputs(df: DataFrame) -> DataFrame:
    """``df`` as one partition in a short run (``spark.ONE_PARTITION_INPUTS``), else unchanged.

    A single partition satisfies every distribution an operator asks for, so the windows,
    aggregates and joins over it need no shuffle: each check or silver table runs as one job of
    one task instead of a job per shuffle stage (131 jobs → 74 for the checks over data/samples,
    about a third less JVM CPU). Only where the data is known to be small: one task does it all.
    """
    if df.sparkSession.conf.get(ONE_PARTITION_INPUTS, "false") == "true":
        return df.coalesce(1)
    return df
