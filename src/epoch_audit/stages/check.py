"""The check stage, thin: silver + bronze -> gold violations, for the clusters whose bronze grew."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from epoch_audit.config import AppConfig
from epoch_audit.contracts.events import TRAFFIC_TYPES
from epoch_audit.contracts.violations import CHECK_COLUMNS, SEEN_COLUMNS, VIOLATION_KEY
from epoch_audit.gold.context import CheckContext, check_context
from epoch_audit.gold.registry import ASKED_KINDS, REGISTRY, InvariantSpec, can_find, found_violations, violations_of
from epoch_audit.lake.staging import remove_staging, staging_dir
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import (
    EVENTS_TABLE,
    GOLD_STATE_TABLE,
    INPUT_PROBLEMS_TABLE,
    RUN_SUMMARY_TABLE,
    SILVER_STATE_TABLE,
    VIOLATIONS_TABLE,
    silver_table,
)
from epoch_audit.silver.tables import SILVER_TABLES
from epoch_audit.spark import run_longest_first
from epoch_audit.stages import input_signs
from epoch_audit.stages.base import ShortRunInputs, StageResult, check_config, shared_key
from epoch_audit.stages.carry import (
    CarryPlan,
    carried_horizons,
    carry_tasks,
    changed_anchors,
    iso_of,
    plan_carries,
    read_check_traffic,
    read_state_events,
    supports_carry,
    write_carries,
)
from epoch_audit.stages.state import (
    ledger_fingerprints,
    mark_built,
    previous_task_seconds,
    stale_clusters,
)
from epoch_audit.stages.suppress import adjust_counts, plan_suppressions, write_suppressions
from epoch_audit.suppressions import load_suppressions

log = logging.getLogger(__name__)


def violation_ids(violations: DataFrame) -> DataFrame:
    """Deterministic violation id: the key of the violation and its sorted evidence."""
    key = F.concat_ws(
        "|",
        *[F.coalesce(F.col(c).cast("string"), F.lit("")) for c in
          ("invariant", "cluster_id", "topic", "partition", "broker_id", "leader_epoch", "expected_epoch")],
        F.array_join(F.array_sort(F.col("evidence")), ","),
    )
    return violations.withColumn("violation_id", F.sha2(key, 256))




CHECK_TASK = "check:"  # + the check's id: a check's task among the stage's queries
REJECTED_TASK = "rejected_isr_joins"
PROBLEMS_TASK = "input_problems"


def violation_tasks(
    ctx: CheckContext,
    specs: tuple[InvariantSpec, ...],
    clusters: list[str],
    staged: str,
    state_ctx: CheckContext | None = None,
) -> dict[str, Callable[[], str]]:
    """One named task per check: its violations of ``clusters`` (with their ids, one row per id)
    staged as Parquet under ``staged/<id>``; a task returns the path (:func:`staged_violations`).
    A check that reads no traffic (the registry's ``reads_traffic``) runs over ``state_ctx`` when
    given (the same silver, the state events alone): every scan of its events would otherwise read
    the traffic's cache as well, most of the rows, for nothing its filters keep.

    One write per check, not one over their union: each plan stays small (planning, adaptive
    re-planning after every query stage and code generation grow faster than the plan, and the
    union of all checks cost twice the sum of its parts on small data). Each check writes its own
    directory, so several run at once (:func:`epoch_audit.spark.run_longest_first`). Staged, so the
    rows are read twice below without re-running the checks.
    """

    def stage(spec: InvariantSpec) -> str:
        path = f"{staged}/{spec.id}"
        over = ctx if spec.reads_traffic or state_ctx is None else state_ctx
        found = violation_ids(violations_of(spec, over)).dropDuplicates(["violation_id"])
        found.where(F.col("cluster_id").isin(clusters)).write.mode("overwrite").parquet(path)
        return path

    return {CHECK_TASK + spec.id: partial(stage, spec) for spec in specs}


def staged_violations(ctx: CheckContext, paths: list[str]) -> DataFrame:
    """The violations :func:`violation_tasks` staged at ``paths``, one row per id. An id hashes the
    invariant, so two checks never share one: rows deduplicated per check are deduplicated overall
    (the staged read is deduplicated again all the same: it costs nothing on a few rows)."""
    if not paths:
        return violation_ids(found_violations(ctx, ()))
    return ctx.events.sparkSession.read.parquet(*paths).dropDuplicates(["violation_id"])


def absent_event_types(
    events: DataFrame, specs: tuple[InvariantSpec, ...], traffic: DataFrame | None = None
) -> frozenset[str]:
    """The event types the ``needs`` and ``asks`` of ``specs`` name that the events hold none of: one
    small query (at most one row a type named); and the other kinds of event the ``asks`` of the checks
    that will run name (``epoch_audit.gold.registry.ASKED_KINDS``) that they hold none of. With
    ``traffic`` (the request-log traffic, apart), ``events`` are the state events alone, and the
    traffic is read only for the traffic types and kinds named: the state events are cached by then,
    and the traffic's cache is still being built."""
    asked = sorted({t for spec in specs for t in (*spec.needs, *spec.asks)})
    wanted = [t for t in asked if t not in ASKED_KINDS]
    sources = [(events, [t for t in wanted if traffic is None or t not in TRAFFIC_TYPES])]
    if traffic is not None:
        sources.append((traffic, [t for t in wanted if t in TRAFFIC_TYPES]))
    present: set[str] = set()
    for df, types in sources:
        if types:
            present |= {r["event_type"] for r in df.where(F.col("event_type").isin(types)).select("event_type")
                        .distinct().collect()}
    absent = set(wanted) - present
    # The kinds that are not types (traffic kinds), asked by the checks that will run: a query each
    # that stops at the first row, and reads only the columns its condition does (the rows themselves
    # read every column of every traffic event where none is found: 14 s of task time at 10^7 lines,
    # before any check could start).
    for spec in runnable_checks(specs, frozenset(absent)):
        for kind in spec.asks:
            if kind in ASKED_KINDS and kind not in absent and kind not in present:
                rows = ASKED_KINDS[kind](events if traffic is None else traffic)
                found = rows.select(F.lit(True).alias("found")).limit(1).collect()
                (present if found else absent).add(kind)
    return frozenset(absent)


def runnable_checks(specs: tuple[InvariantSpec, ...], absent: frozenset[str]) -> tuple[InvariantSpec, ...]:
    """The checks of ``specs`` that may find something in events lacking the types ``absent`` (the
    registry's ``needs``; :func:`absent_event_types`): not the ZooKeeper request checks over a KRaft
    cluster's history, nor the metadata-log one over a ZooKeeper cluster's."""
    return tuple(spec for spec in specs if can_find(spec, set(spec.needs) - absent))


def new_counts(groups: list[Row], reported_by: set[str]) -> list[dict[str, Any]]:
    """[{invariant, severity, confidence, count}] of the rows written by the runs ``reported_by``
    (this run, and the killed runs whose rows it takes over), sorted by invariant (then severity
    and confidence): ``groups`` are per (run_id, invariant, severity, confidence) counts."""
    totals: dict[tuple[str, str, str], int] = {}
    for g in groups:
        if g["run_id"] in reported_by:
            key = (g["invariant"], g["severity"], g["confidence"])
            totals[key] = totals.get(key, 0) + g["count"]
    return [
        {"invariant": i, "severity": s, "confidence": c, "count": n}
        for (i, s, c), n in sorted(totals.items(), key=lambda kv: tuple("" if v is None else v for v in kv[0]))
    ]


def first_reports(found: DataFrame, known: DataFrame, completed: list[str]) -> DataFrame:
    """(violation_id, _first_run, _first_seen): the completed run that first reported each found
    violation, and the earliest ``first_seen_at`` of its known rows (any run, completed or not).

    The same violation is the same id, or — when later logs add evidence to it (a late file, the
    next night's lines), which changes its id — a known row with the same invariant, partition,
    broker and epochs that shares an evidence event with it: it keeps the run that reported it.
    """
    f, k = found.alias("f"), known.alias("k")
    cond = [F.col(f"f.{c}").eqNullSafe(F.col(f"k.{c}")) for c in VIOLATION_KEY]
    same = (F.col("f.violation_id") == F.col("k.violation_id")) | F.coalesce(
        F.arrays_overlap(F.col("f.evidence"), F.col("k.evidence")), F.lit(False)
    )
    seen = F.col("k.first_seen_at") if "first_seen_at" in known.columns else F.lit(None).cast("timestamp")
    return (
        f.join(k, [*cond, same], "inner")
        .groupBy(F.col("f.violation_id").alias("violation_id"))
        .agg(
            # min ignores nulls: a match only with rows of runs that did not complete gives null
            F.min(F.when(F.col("k.run_id").isin(completed), F.col("k.run_id"))).alias("_first_run"),
            F.min(seen).alias("_first_seen"),
        )
    )


def write_input_problems(
    spark: SparkSession, storage: LakeStorage, problems: list[dict[str, Any]], clusters: list[str], run_id: str
) -> None:
    """Replace the checked ``clusters``' rows of gold/input_problems (no table until a first problem)."""
    from epoch_audit.gold.analysis.input_sanity import INPUT_PROBLEMS_SCHEMA

    for p in problems:
        log.warning("input problem in cluster %s (%s): %s", p["cluster_id"], p["problem"], p["detail"])
    if not problems and not storage.exists(INPUT_PROBLEMS_TABLE):
        return
    rows = [(p["cluster_id"], p["problem"], p["detail"], p["hosts"], run_id) for p in problems]
    df = spark.createDataFrame(rows, INPUT_PROBLEMS_SCHEMA)
    storage.replace_where(INPUT_PROBLEMS_TABLE, df, "cluster_id", clusters)


@dataclass(frozen=True)
class CheckPass:
    """One pass of the check stage's queries over ``dirty`` (:func:`_check_pass`): nothing written."""

    ctx: CheckContext
    state_ctx: CheckContext | None
    specs: tuple[InvariantSpec, ...]
    not_run: list[str]
    done: dict[str, Any]
    task_seconds: dict[str, float]
    carry_plan: CarryPlan | None
    carry_seconds: float


def _check_pass(
    spark: SparkSession,
    storage: LakeStorage,
    config: AppConfig,
    inputs: ShortRunInputs,
    state: DataFrame,
    silver: dict[str, DataFrame],
    dirty: list[str],
    horizons: dict[str, int],
    carry: bool,
    staged: str,
    runs: list[Row],
) -> CheckPass:
    """Every query of the check stage over ``dirty``'s state events and their traffic read from
    ``horizons`` on (+ the carried): the checks staged under ``staged``, the next carry's queries
    (among them the anchors at ``horizons``, :func:`changed_anchors`), the refused ISR joins and the
    input problems, the longest first. ``carry``: the next carry is planned (its queries among them)."""
    from epoch_audit.gold.analysis.isr_joins import rejected_isr_joins

    traffic = read_check_traffic(storage, dirty, horizons)
    # cached in the background while the checks are planned (ShortRunInputs.warm)
    traffic = None if traffic is None else inputs(traffic, warm=True)
    events = state if traffic is None else state.unionByName(traffic)
    absent = absent_event_types(state, REGISTRY, traffic)
    carry_plan, carry_seconds = None, 0.0
    if carry:
        started = time.perf_counter()
        carry_plan = plan_carries(events, dirty, horizons, config.incremental.traffic_lag_minutes)
        carry_seconds = time.perf_counter() - started
    # the checks' carries know the next horizons: what lies before them is all they keep
    carry_horizons = carry_plan.horizons if carry_plan is not None and carry_plan.holds_traffic else None
    # Every silver table once (the ones not in silver/ built from the events), shared by all checks.
    ctx = check_context(events, silver, check_config(config), absent, carry_horizons)
    # the same silver tables over the state events alone, for the checks that read no traffic
    state_ctx = None if traffic is None else check_context(state, ctx.silver, ctx.config, absent, carry_horizons)
    specs = runnable_checks(REGISTRY, absent)
    not_run = [spec.id for spec in REGISTRY if spec not in specs]
    if not_run:
        log.info("no events these checks stand on, not run: %s", ", ".join(not_run))
    tasks: dict[str, Callable[[], Any]] = dict(violation_tasks(ctx, specs, dirty, f"{staged}/violations", state_ctx))
    if carry_plan is not None:
        tasks.update(carry_tasks(ctx, REGISTRY, carry_plan, f"{staged}/carry", horizons))
    # Both read state types only (request-log FETCH / PRODUCE carry no controller line, mode
    # sign or self-naming prefix): not the traffic, whose cache they would wait for.
    tasks[REJECTED_TASK] = lambda: [
        r.asDict() for r in rejected_isr_joins(state).orderBy("cluster_id", "reason").collect()
    ]
    tasks[PROBLEMS_TASK] = lambda: input_signs.input_problems(storage, dirty, state)
    # Every query of the stage that needs no other's answer, the longest (last run) first.
    done, task_seconds = run_longest_first(tasks, config.spark.concurrent_queries, previous_task_seconds(runs, "check"))
    return CheckPass(ctx, state_ctx, specs, not_run, done, task_seconds, carry_plan, carry_seconds)


def release(checked: CheckPass) -> None:
    """Drop what the pass's contexts kept (:meth:`CheckContext.release`)."""
    for ctx in (checked.ctx, checked.state_ctx):
        if ctx is not None:
            ctx.release()


def run_checks(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str, started_at: dt.datetime | None = None
) -> tuple[StageResult, DataFrame | None]:
    """silver + bronze → gold violations, for the clusters whose bronze grew; report what is new.

    Gold holds, per cluster, every violation the cluster's history proves. A cluster is re-checked
    over its whole history when its bronze grew; its gold rows are replaced in one commit, and a
    violation already there keeps its ``run_id`` (the run that first proved it) as long as that run
    completed (has a ``gold/run_summary`` row). A violation is reported (counted, exit code 3) only
    by the run that first proves it, or by the first complete run after a killed one that wrote it.
    Suppressions (``epoch_audit.stages.suppress``) take acknowledged violations out of what is
    reported and bring them back when their entries expire.
    ISR joins the controller refused (INELIGIBLE_REPLICA) are counted per cluster and reason in
    ``rejected_isr_joins`` (the system working, never violations).
    Rows are stamped ``first_seen_at`` / ``last_seen_at`` with ``started_at`` (the run's start, UTC
    naive; default: now), the first kept from the known row as ``run_id`` is (an older lake gets the
    columns before any stage runs: epoch_audit.stages.upgrade).
    """
    if not storage.exists(EVENTS_TABLE):
        return StageResult("check", "skipped", {"reason": "no bronze events yet"}), None
    if not REGISTRY:
        return StageResult("check", "skipped", {"reason": "no invariants registered in this build"}), None
    fps = ledger_fingerprints(storage)
    dirty = stale_clusters(storage, GOLD_STATE_TABLE, fps)[0]
    rejected: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    carried: dict[str, Any] = {}
    not_run: list[str] = []
    task_seconds: dict[str, float] = {}
    silver_stale = set(stale_clusters(storage, SILVER_STATE_TABLE, fps)[0]) & set(dirty)
    if silver_stale:
        log.warning("silver is older than bronze for %s: run the timelines stage first", sorted(silver_stale))
    # the completed runs (a row each) and the query seconds the newest recorded, in one read
    runs = storage.rows(RUN_SUMMARY_TABLE, ["run_id", "finished_at", "summary"])
    completed = sorted({r["run_id"] for r in runs})
    seen_at = F.lit(started_at or dt.datetime.now(dt.UTC).replace(tzinfo=None)).cast("timestamp")
    carry = config.incremental.carry_traffic and supports_carry(storage)
    if dirty:
        with ShortRunInputs() as inputs:
            silver = {
                name: inputs(storage.read_where(silver_table(name), "cluster_id", dirty))
                for name in SILVER_TABLES if storage.exists(silver_table(name))
            }
            # Every state event, as the timelines stage of this run read and cached them (a short run).
            state = inputs.take(shared_key(storage.lake, dirty, fps), lambda: read_state_events(storage, dirty))
            # Traffic: from each cluster's carried horizon on, plus the carried events
            # (epoch_audit.stages.carry), taken as valid: the check of its anchors is a query among the
            # checks, and a cluster whose past changed is checked again whole before anything is written.
            stored = carried_horizons(storage, dirty) if carry else {}
            horizons = {c: h for c, (h, _) in stored.items()}
            staged = staging_dir(storage.lake, run_id)
            checked: CheckPass | None = None
            try:
                while True:
                    checked = _check_pass(
                        spark, storage, config, inputs, state, silver, dirty, horizons, carry, staged, runs
                    )
                    changed = changed_anchors({c: stored[c] for c in horizons}, checked.done)
                    if not changed:
                        break
                    log.info("state before the carried horizon changed for %s: checking their whole history", changed)
                    release(checked)
                    remove_staging(staged)
                    horizons = {c: h for c, h in horizons.items() if c not in changed}
                ctx, specs, done, carry_plan = checked.ctx, checked.specs, checked.done, checked.carry_plan
                not_run, task_seconds = checked.not_run, checked.task_seconds
                # Both sides one cached partition in a short run: the two joins below (first_reports and
                # its join back) need no shuffle, and the staged files are read once, not per join.
                violations = inputs(staged_violations(ctx, [done[CHECK_TASK + spec.id] for spec in specs]))
                if storage.exists(VIOLATIONS_TABLE):
                    known = inputs(storage.read_where(VIOLATIONS_TABLE, "cluster_id", dirty))
                    violations = violations.join(
                        first_reports(violations, known, completed),
                        "violation_id",
                        "left",
                    ).withColumn("run_id", F.coalesce(F.col("_first_run"), F.lit(run_id)))
                    violations = violations.withColumn("first_seen_at", F.coalesce(F.col("_first_seen"), seen_at))
                else:
                    violations = violations.withColumn("run_id", F.lit(run_id)).withColumn("first_seen_at", seen_at)
                violations = violations.withColumn("last_seen_at", seen_at)
                violations = violations.select("run_id", "violation_id", *CHECK_COLUMNS, *SEEN_COLUMNS)
                rejected, (problems, signs) = done[REJECTED_TASK], done[PROBLEMS_TASK]
                storage.replace_where(VIOLATIONS_TABLE, violations, "cluster_id", dirty)
                write_input_problems(spark, storage, problems, dirty, run_id)
                if signs is not None:
                    input_signs.write_signs(storage, dirty, signs)
                mark_built(storage, GOLD_STATE_TABLE, dirty, fps, run_id)
                carried = {"read_from": {c: iso_of(h) for c, h in sorted(horizons.items())}}
                if carry_plan is not None:
                    started = time.perf_counter()
                    carried["next"] = write_carries(spark, storage, ctx, REGISTRY, dirty, carry_plan, done)
                    # its plan and its write after gold; its queries ran beside the checks (task_seconds)
                    carried["seconds"] = round(checked.carry_seconds + time.perf_counter() - started, 3)
            finally:  # a failed write leaves neither persisted analyses nor staged rows behind
                if checked is not None:
                    release(checked)
                remove_staging(staged)
    entries = load_suppressions(config.checks.suppressions_file, {spec.id for spec in REGISTRY})
    if not storage.exists(VIOLATIONS_TABLE):
        detail = {
            "clusters": dirty, "violations": [], "known": 0, "rejected_isr_joins": rejected,
            "carried_traffic": carried, "input_problems": problems, "checks_not_run": not_run,
            "task_seconds": task_seconds,
        }
        suppressions, rows = plan_suppressions(storage, entries, None, {run_id})
        write_suppressions(spark, storage, rows)
        if suppressions:
            detail["suppressions"] = suppressions
        return StageResult("check", "ran", detail), None
    gold = storage.read(VIOLATIONS_TABLE)
    # One small aggregate answers the three questions (orphans? new counts? known) in one action.
    groups = gold.groupBy("run_id", "invariant", "severity", "confidence").count().collect()
    known = sum(g["count"] for g in groups)
    # Written by a run that was killed before it completed: never reported, so this run reports them.
    orphan_runs = sorted(
        {r for r in (g["run_id"] for g in groups) if r is not None and r not in completed and r != run_id}
    )
    if orphan_runs:
        orphans = gold.where(F.col("run_id").isin(orphan_runs))
        storage.upsert(VIOLATIONS_TABLE, orphans.withColumn("run_id", F.lit(run_id)), ["violation_id"])
        gold = storage.read(VIOLATIONS_TABLE)
    counts = new_counts(groups, {run_id, *orphan_runs})
    suppressions, rows = plan_suppressions(storage, entries, gold, {run_id, *orphan_runs})
    if suppressions.get("resurfaced_ids"):  # reported again, by this run: its row says so
        back = gold.where(F.col("violation_id").isin(suppressions["resurfaced_ids"]))
        storage.upsert(VIOLATIONS_TABLE, back.withColumn("run_id", F.lit(run_id)), ["violation_id"])
        gold = storage.read(VIOLATIONS_TABLE)
    write_suppressions(spark, storage, rows)
    if suppressions:
        counts = adjust_counts(counts, suppressions["suppressed_new"], suppressions["resurfaced"])
    new = gold.where(F.col("run_id") == run_id)
    detail = {
        "clusters": dirty, "violations": counts, "known": known, "rejected_isr_joins": rejected,
        "carried_traffic": carried, "input_problems": problems, "checks_not_run": not_run,
        "task_seconds": task_seconds,
    }
    if suppressions:
        detail["suppressions"] = suppressions
    return StageResult("check", "ran", detail), new
