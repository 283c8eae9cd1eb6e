"""The pipeline stages, thin: read tables, call pure transforms, write tables.

parse → bronze (jobs.ingest) → silver (timelines) → gold (checks) → validate → report.
A stage whose code is not in this build is reported as skipped, never faked.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from jobs.config import AppConfig
from jobs.storage import LakeStorage
from transforms.invariants.base import CHECK_COLUMNS, CHECK_SCHEMA, CheckConfig, CheckContext

log = logging.getLogger(__name__)

EVENTS_TABLE = "bronze/events"
VIOLATIONS_TABLE = "gold/violations"
RUN_SUMMARY_TABLE = "gold/run_summary"

# Modules holding a SILVER_BUILDERS dict {table name: (events, CheckConfig) -> DataFrame}.
SILVER_MODULES = ["transforms.timelines", "transforms.broker_views"]


@dataclass
class StageResult:
    """What a stage did, for the console and the --json summary."""

    name: str
    status: str  # ran | skipped
    detail: dict[str, Any] = field(default_factory=dict)


def check_config(config: AppConfig) -> CheckConfig:
    return CheckConfig(
        max_clock_skew_ms=config.checks.max_clock_skew_ms, source_time_zone=config.ingest.source_time_zone
    )


def silver_builders() -> dict[str, Any]:
    builders: dict[str, Any] = {}
    for module in SILVER_MODULES:
        try:
            builders.update(importlib.import_module(module).SILVER_BUILDERS)
        except (ModuleNotFoundError, AttributeError):
            log.warning("silver builders of %s are not in this build", module)
    return builders


def run_timelines(spark: SparkSession, storage: LakeStorage, config: AppConfig) -> StageResult:
    """bronze events → every silver table (rebuilt from the full bronze history)."""
    if not storage.exists(EVENTS_TABLE):
        return StageResult("timelines", "skipped", {"reason": "no bronze events yet"})
    builders = silver_builders()
    if not builders:
        return StageResult("timelines", "skipped", {"reason": "no silver builders in this build"})
    events = storage.read(EVENTS_TABLE)
    cfg = check_config(config)
    for name, build in sorted(builders.items()):
        storage.overwrite(f"silver/{name}", build(events, cfg))
        log.info("silver/%s written", name)
    return StageResult("timelines", "ran", {"tables": sorted(builders)})


def violation_ids(violations: DataFrame) -> DataFrame:
    """Deterministic violation id: the key of the violation and its sorted evidence."""
    key = F.concat_ws(
        "|",
        *[F.coalesce(F.col(c).cast("string"), F.lit("")) for c in
          ("invariant", "cluster_id", "topic", "partition", "broker_id", "leader_epoch", "expected_epoch")],
        F.array_join(F.array_sort(F.col("evidence")), ","),
    )
    return violations.withColumn("violation_id", F.sha2(key, 256))


def run_checks(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str
) -> tuple[StageResult, DataFrame | None]:
    """silver + bronze → gold violations (a violation keeps the run that first reported it)."""
    from transforms.invariants import INVARIANTS

    if not storage.exists(EVENTS_TABLE):
        return StageResult("check", "skipped", {"reason": "no bronze events yet"}), None
    if not INVARIANTS:
        return StageResult("check", "skipped", {"reason": "no invariants registered in this build"}), None
    silver = {
        name: storage.read(f"silver/{name}") for name in silver_builders() if storage.exists(f"silver/{name}")
    }
    ctx = CheckContext(events=storage.read(EVENTS_TABLE), silver=silver, config=check_config(config))
    found = [inv.check(ctx).select(*CHECK_COLUMNS) for inv in INVARIANTS]
    empty = spark.createDataFrame([], CHECK_SCHEMA)
    violations = violation_ids(reduce(DataFrame.unionByName, found, empty)).dropDuplicates(["violation_id"])
    violations = violations.withColumn("run_id", F.lit(run_id)).select(
        "run_id", "violation_id", *CHECK_COLUMNS
    )
    if storage.exists(VIOLATIONS_TABLE):
        known = storage.read(VIOLATIONS_TABLE).select("violation_id")
        new = violations.join(known, "violation_id", "left_anti")
    else:
        new = violations
    storage.upsert(VIOLATIONS_TABLE, new, ["violation_id"])
    current = storage.read(VIOLATIONS_TABLE).join(
        violations.select("violation_id"), "violation_id", "left_semi"
    )
    counts = [
        r.asDict()
        for r in current.groupBy("invariant", "severity", "confidence").count().orderBy("invariant").collect()
    ]
    return StageResult("check", "ran", {"violations": counts}), current
