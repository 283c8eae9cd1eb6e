"""The pipeline stages, thin: read tables, call pure transforms, write tables.

parse → bronze (epoch_audit.stages.ingest) → silver (timelines) → gold (checks) → validate → report.
A stage whose code is not in this build is reported as skipped, never faked.
"""

from __future__ import annotations

import importlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from epoch_audit.config import AppConfig
from epoch_audit.contracts.violations import CHECK_COLUMNS, VIOLATION_KEY
from epoch_audit.gold.context import CheckConfig, check_context
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.stages.carry import (
    iso_of,
    read_check_events,
    read_state_events,
    supports_carry,
    valid_horizons,
    write_carries,
)

log = logging.getLogger(__name__)

EVENTS_TABLE = "bronze/events"
VIOLATIONS_TABLE = "gold/violations"
RUN_SUMMARY_TABLE = "gold/run_summary"

# Modules holding a SILVER_BUILDERS dict {table name: (events, CheckConfig) -> DataFrame}.
SILVER_MODULES = ["epoch_audit.silver.timelines", "epoch_audit.silver.broker_views"]


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


# Incremental state. ``bronze/ingest_accounting`` is the ledger of what bronze holds: one row per
# chunk of a file ingested (file id, first line), written after that chunk's events. A cluster's
# fingerprint is the hash of its ledger keys; silver and gold record the fingerprint they were last
# built from, per cluster, and a run rebuilds only the clusters whose fingerprint moved.
LEDGER_TABLE = "bronze/ingest_accounting"
SILVER_STATE_TABLE = "state/silver_built"
GOLD_STATE_TABLE = "state/gold_checked"
STATE_SCHEMA = "cluster_id string, fingerprint string, run_id string"
RUN_SUMMARY_SCHEMA = (
    "run_id string, command string, started_at timestamp, finished_at timestamp, exit_code int, "
    "new_violations long, summary string"
)


def ledger_fingerprints(storage: LakeStorage) -> dict[str, str]:
    """Per cluster, a fingerprint of every bronze chunk ingested for it so far (small: one row per chunk)."""
    if storage.exists(LEDGER_TABLE):
        keys = storage.read(LEDGER_TABLE).select(
            "cluster_id", F.concat_ws(":", "file_id", F.col("start_line").cast("string")).alias("k")
        )
    elif storage.exists(EVENTS_TABLE):  # a lake written without the ledger (tests, old lakes)
        keys = storage.read(EVENTS_TABLE).select("cluster_id", F.col("event_id").alias("k"))
    else:
        return {}
    rows = (
        keys.groupBy("cluster_id")
        .agg(F.sha2(F.concat_ws(",", F.array_sort(F.collect_set("k"))), 256).alias("fp"))
        .collect()
    )
    return {r["cluster_id"]: r["fp"] for r in rows if r["cluster_id"] is not None}


def _built(storage: LakeStorage, state_table: str) -> dict[str, str]:
    if not storage.exists(state_table):
        return {}
    return {r["cluster_id"]: r["fingerprint"] for r in storage.read(state_table).collect()}


def stale_clusters(storage: LakeStorage, state_table: str) -> tuple[list[str], dict[str, str]]:
    """Clusters whose bronze moved since ``state_table`` last recorded them, and every fingerprint."""
    fps = ledger_fingerprints(storage)
    done = _built(storage, state_table)
    return sorted(c for c, fp in fps.items() if done.get(c) != fp), fps


def _mark_built(
    spark: SparkSession, storage: LakeStorage, state_table: str, clusters: list[str], fps: dict[str, str], run_id: str
) -> None:
    rows = [(c, fps[c], run_id) for c in clusters]
    storage.upsert(state_table, spark.createDataFrame(rows, STATE_SCHEMA), ["cluster_id"])


def completed_runs(storage: LakeStorage) -> set[str]:
    if not storage.exists(RUN_SUMMARY_TABLE):
        return set()
    return {r["run_id"] for r in storage.read(RUN_SUMMARY_TABLE).select("run_id").collect()}


def record_run(spark: SparkSession, storage: LakeStorage, summary: dict[str, Any], command: str,
               started_at: Any, finished_at: Any) -> None:
    """Write this run's row of gold/run_summary: from then on its violations count as reported."""
    import json

    new = sum(v.get("count", 0) for v in summary.get("stages", {}).get("check", {}).get("violations", []))
    row = (summary["run_id"], command, started_at, finished_at, int(summary.get("exit_code", 0)), int(new),
           json.dumps(summary, sort_keys=True, default=str))
    storage.upsert(RUN_SUMMARY_TABLE, spark.createDataFrame([row], RUN_SUMMARY_SCHEMA), ["run_id"])


def run_timelines(spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str = "") -> StageResult:
    """bronze events → silver tables, rebuilt only for the clusters whose bronze grew.

    A cluster's silver rows are rebuilt from that cluster's whole history of state events (bronze
    partitions of ``event_class`` state; request-log traffic is never read here) and replace its old
    rows in one commit per table; other clusters' files are not touched.
    """
    if not storage.exists(EVENTS_TABLE):
        return StageResult("timelines", "skipped", {"reason": "no bronze events yet"})
    builders = silver_builders()
    if not builders:
        return StageResult("timelines", "skipped", {"reason": "no silver builders in this build"})
    dirty, fps = stale_clusters(storage, SILVER_STATE_TABLE)
    if not dirty:
        return StageResult("timelines", "ran", {"tables": sorted(builders), "clusters": []})
    cfg = check_config(config)
    # Silver never reads request-log traffic: state events only (a fraction of a busy cluster's).
    events = read_state_events(storage, dirty)
    built = {name: build(events, cfg) for name, build in sorted(builders.items())}
    changed = [
        name for name, df in built.items()
        if storage.exists(f"silver/{name}") and set(storage.read(f"silver/{name}").columns) != set(df.columns)
    ]
    if changed:  # a new build changed a silver schema: rebuild every cluster of every table
        log.warning("silver schema changed (%s): rebuilding every cluster", ", ".join(changed))
        dirty = sorted(fps)
        events = read_state_events(storage, dirty)
        for name, build in sorted(builders.items()):
            storage.overwrite(f"silver/{name}", build(events, cfg))
    else:
        for name, df in built.items():
            storage.replace_where(f"silver/{name}", df, "cluster_id", dirty)
            log.info("silver/%s rebuilt for %d cluster(s)", name, len(dirty))
    _mark_built(spark, storage, SILVER_STATE_TABLE, dirty, fps, run_id)
    return StageResult("timelines", "ran", {"tables": sorted(builders), "clusters": dirty})


def violation_ids(violations: DataFrame) -> DataFrame:
    """Deterministic violation id: the key of the violation and its sorted evidence."""
    key = F.concat_ws(
        "|",
        *[F.coalesce(F.col(c).cast("string"), F.lit("")) for c in
          ("invariant", "cluster_id", "topic", "partition", "broker_id", "leader_epoch", "expected_epoch")],
        F.array_join(F.array_sort(F.col("evidence")), ","),
    )
    return violations.withColumn("violation_id", F.sha2(key, 256))


def first_reports(found: DataFrame, known: DataFrame, completed: list[str]) -> DataFrame:
    """(violation_id, _first_run): the completed run that first reported each found violation.

    The same violation is the same id, or — when later logs add evidence to it (a late file, the
    next night's lines), which changes its id — a known row with the same invariant, partition,
    broker and epochs that shares an evidence event with it: it keeps the run that reported it.
    """
    f, k = found.alias("f"), known.alias("k")
    cond = [F.col(f"f.{c}").eqNullSafe(F.col(f"k.{c}")) for c in VIOLATION_KEY]
    same = (F.col("f.violation_id") == F.col("k.violation_id")) | F.coalesce(
        F.arrays_overlap(F.col("f.evidence"), F.col("k.evidence")), F.lit(False)
    )
    return (
        f.join(k, [*cond, same], "inner")
        .where(F.col("k.run_id").isin(completed))
        .groupBy(F.col("f.violation_id").alias("violation_id"))
        .agg(F.min("k.run_id").alias("_first_run"))
    )


def run_checks(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str
) -> tuple[StageResult, DataFrame | None]:
    """silver + bronze → gold violations, for the clusters whose bronze grew; report what is new.

    Gold holds, per cluster, every violation the cluster's history proves. A cluster is re-checked
    over its whole history when its bronze grew; its gold rows are replaced in one commit, and a
    violation already there keeps its ``run_id`` (the run that first proved it) as long as that run
    completed (has a ``gold/run_summary`` row). A violation is reported (counted, exit code 3) only
    by the run that first proves it, or by the first complete run after a killed one that wrote it.
    ISR joins the controller refused (INELIGIBLE_REPLICA) are counted per cluster and reason in
    ``rejected_isr_joins`` (the system working, never violations).
    """
    from epoch_audit.gold.analysis.isr_joins import rejected_isr_joins
    from epoch_audit.gold.registry import REGISTRY, found_violations

    if not storage.exists(EVENTS_TABLE):
        return StageResult("check", "skipped", {"reason": "no bronze events yet"}), None
    if not REGISTRY:
        return StageResult("check", "skipped", {"reason": "no invariants registered in this build"}), None
    dirty, fps = stale_clusters(storage, GOLD_STATE_TABLE)
    rejected: list[dict[str, Any]] = []
    carried: dict[str, Any] = {}
    silver_stale = set(stale_clusters(storage, SILVER_STATE_TABLE)[0]) & set(dirty)
    if silver_stale:
        log.warning("silver is older than bronze for %s: run the timelines stage first", sorted(silver_stale))
    completed = sorted(completed_runs(storage))
    if dirty:
        silver = {
            name: storage.read_where(f"silver/{name}", "cluster_id", dirty)
            for name in silver_builders() if storage.exists(f"silver/{name}")
        }
        # Traffic: from each cluster's carried horizon on, plus the carried events (epoch_audit.stages.carry).
        horizons = (
            valid_horizons(spark, storage, dirty, silver, check_config(config))
            if config.incremental.carry_traffic else {}
        )
        events = read_check_events(storage, dirty, horizons)
        # Every silver table once (the ones not in silver/ built from the events), shared by all checks.
        ctx = check_context(events, silver, check_config(config))
        violations = violation_ids(found_violations(ctx)).dropDuplicates(["violation_id"])
        violations = violations.where(F.col("cluster_id").isin(dirty))
        # Staged once: the checks' plan is large, and the found rows are read twice below.
        staged = f"{storage.lake.rstrip('/')}/_staging/{run_id}/violations"
        violations.write.mode("overwrite").parquet(staged)
        violations = spark.read.parquet(staged)
        if storage.exists(VIOLATIONS_TABLE):
            violations = violations.join(
                first_reports(violations, storage.read_where(VIOLATIONS_TABLE, "cluster_id", dirty), completed),
                "violation_id",
                "left",
            ).withColumn("run_id", F.coalesce(F.col("_first_run"), F.lit(run_id)))
        else:
            violations = violations.withColumn("run_id", F.lit(run_id))
        violations = violations.select("run_id", "violation_id", *CHECK_COLUMNS)
        rejected = [r.asDict() for r in rejected_isr_joins(events).orderBy("cluster_id", "reason").collect()]
        storage.replace_where(VIOLATIONS_TABLE, violations, "cluster_id", dirty)
        _mark_built(spark, storage, GOLD_STATE_TABLE, dirty, fps, run_id)
        from epoch_audit.stages.ingest import _remove_staging

        _remove_staging(staged.rsplit("/", 1)[0])
        carried = {"read_from": {c: iso_of(h) for c, h in sorted(horizons.items())}}
        if config.incremental.carry_traffic and supports_carry(storage):
            started = time.perf_counter()
            carried["next"] = write_carries(
                spark, storage, ctx, REGISTRY, dirty, horizons, config.incremental.traffic_lag_minutes
            )
            carried["seconds"] = round(time.perf_counter() - started, 3)
    if not storage.exists(VIOLATIONS_TABLE):
        detail = {
            "clusters": dirty, "violations": [], "known": 0, "rejected_isr_joins": rejected,
            "carried_traffic": carried,
        }
        return StageResult("check", "ran", detail), None
    gold = storage.read(VIOLATIONS_TABLE)
    # Written by a run that was killed before it completed: never reported, so this run reports them.
    orphans = gold.where(~F.col("run_id").isin(completed) & (F.col("run_id") != run_id))
    if orphans.limit(1).count():
        storage.upsert(VIOLATIONS_TABLE, orphans.withColumn("run_id", F.lit(run_id)), ["violation_id"])
        gold = storage.read(VIOLATIONS_TABLE)
    new = gold.where(F.col("run_id") == run_id)
    counts = [
        r.asDict()
        for r in new.groupBy("invariant", "severity", "confidence").count().orderBy("invariant").collect()
    ]
    known = gold.count()
    detail = {
        "clusters": dirty, "violations": counts, "known": known, "rejected_isr_joins": rejected,
        "carried_traffic": carried,
    }
    return StageResult("check", "ran", detail), new
