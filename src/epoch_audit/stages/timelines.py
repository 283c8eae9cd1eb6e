"""The timelines stage, thin: bronze events -> the silver tables (epoch_audit.silver.tables)."""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import EVENTS_TABLE, RUN_SUMMARY_TABLE, SILVER_STATE_TABLE, silver_table
from epoch_audit.silver.tables import SILVER_TABLES, silver_builds
from epoch_audit.spark import run_concurrently, run_longest_first
from epoch_audit.stages.base import ShortRunInputs, StageResult, check_config, shared_key
from epoch_audit.stages.carry import read_state_events
from epoch_audit.stages.state import mark_built, previous_task_seconds, stale_clusters

log = logging.getLogger(__name__)


def run_timelines(spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str = "") -> StageResult:
    """bronze events → silver tables, rebuilt only for the clusters whose bronze grew.

    A cluster's silver rows are rebuilt from that cluster's whole history of state events (bronze
    partitions of ``event_class`` state; request-log traffic is never read here) and replace its old
    rows in one commit per table; other clusters' files are not touched.
    """
    if not storage.exists(EVENTS_TABLE):
        return StageResult("timelines", "skipped", {"reason": "no bronze events yet"})
    builders = SILVER_TABLES
    dirty, fps = stale_clusters(storage, SILVER_STATE_TABLE)
    if not dirty:
        return StageResult("timelines", "ran", {"tables": sorted(builders), "clusters": []})
    expected = previous_task_seconds(storage.rows(RUN_SUMMARY_TABLE, ["finished_at", "summary"]), "timelines")
    with ShortRunInputs() as inputs:
        dirty, seconds = rebuild_silver(storage, config, dirty, sorted(fps), inputs, fps, expected)
    mark_built(storage, SILVER_STATE_TABLE, dirty, fps, run_id)
    return StageResult("timelines", "ran", {"tables": sorted(builders), "clusters": dirty, "task_seconds": seconds})


def rebuild_silver(
    storage: LakeStorage, config: AppConfig, dirty: list[str], all_clusters: list[str], inputs: ShortRunInputs,
    fingerprints: dict[str, str], expected: dict[str, float] | None = None,
) -> tuple[list[str], dict[str, float]]:
    """Build every silver table of ``dirty`` from their state events and replace their rows; every
    cluster of ``all_clusters`` when a build changed a table's schema. Returns the clusters rebuilt
    and each table's write seconds (started the longest by ``expected``, an earlier run's, first).
    In a short run their state events stay cached for the check stage (keyed by their ledger ``fingerprints``)."""
    builders = SILVER_TABLES
    cfg = check_config(config)
    # Silver never reads request-log traffic: state events only (a fraction of a busy cluster's).
    # The check stage reads the same state events again: a short run reads and caches them once.
    events = inputs.shared(shared_key(storage.lake, dirty, fingerprints), lambda: read_state_events(storage, dirty))
    workers = config.spark.concurrent_queries
    names = sorted(builders)
    # Built and written on concurrent threads (epoch_audit.spark.run_concurrently): the tables
    # are independent (replica_offsets reads the cached runs of produce_runs), and on small data a
    # table's time is mostly its driver-side planning.
    builds = silver_builds(events, cfg, inputs.reused)
    built = dict(zip(names, run_concurrently([builds[n] for n in names], workers), strict=True))
    changed = [
        name for name, df in built.items()
        if storage.exists(silver_table(name)) and set(storage.columns(silver_table(name))) != set(df.columns)
    ]
    if changed:  # a new build changed a silver schema: rebuild every cluster of every table
        log.warning("silver schema changed (%s): rebuilding every cluster", ", ".join(changed))
        dirty = all_clusters
        events = inputs(read_state_events(storage, dirty))
        builds = silver_builds(events, cfg, inputs.reused)
        _, seconds = run_longest_first(
            {n: lambda n=n: storage.overwrite(silver_table(n), builds[n]()) for n in names}, workers, expected
        )
    else:
        _, seconds = run_longest_first(
            {n: lambda n=n: storage.replace_where(silver_table(n), built[n], "cluster_id", dirty) for n in names},
            workers, expected,
        )
        log.info("silver rebuilt for %d cluster(s): %s", len(dirty), ", ".join(names))
    return dirty, seconds
