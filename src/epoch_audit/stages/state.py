"""Incremental state of the lake: what bronze holds per cluster, what silver and gold were last
built from, and which runs completed.

``bronze/ingest_accounting`` is the ledger of what bronze holds: one row per chunk of a file
ingested (file id, first line), written after that chunk's events. A cluster's fingerprint is the
hash of its ledger keys; silver and gold record the fingerprint they were last built from, per
cluster, and a run rebuilds only the clusters whose fingerprint moved.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import EVENTS_TABLE, LEDGER_TABLE, RUN_SUMMARY_TABLE

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


def built_fingerprints(storage: LakeStorage, state_table: str) -> dict[str, str]:
    """Per cluster, the ledger fingerprint ``state_table`` last recorded it built from."""
    if not storage.exists(state_table):
        return {}
    return {r["cluster_id"]: r["fingerprint"] for r in storage.read(state_table).collect()}


def stale_clusters(
    storage: LakeStorage, state_table: str, fps: dict[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """Clusters whose bronze moved since ``state_table`` last recorded them, and every fingerprint
    (``fps`` when the caller already has them from :func:`ledger_fingerprints`)."""
    fps = ledger_fingerprints(storage) if fps is None else fps
    done = built_fingerprints(storage, state_table)
    return sorted(c for c, fp in fps.items() if done.get(c) != fp), fps


def mark_built(
    spark: SparkSession, storage: LakeStorage, state_table: str, clusters: list[str], fps: dict[str, str], run_id: str
) -> None:
    """Record in ``state_table`` that ``clusters`` were built from their fingerprints ``fps``."""
    rows = spark.createDataFrame([(c, fps[c], run_id) for c in clusters], STATE_SCHEMA)
    if storage.exists(state_table):
        # One row per cluster, a few rows in all: the other clusters' rows + the new ones, one
        # overwrite (one Spark job; an upsert plans a key check, a file search and a rewrite).
        others = storage.read(state_table).where(~F.col("cluster_id").isin(clusters))
        rows = others.select(*rows.columns).unionByName(rows)
    storage.overwrite(state_table, rows)


def completed_runs(storage: LakeStorage) -> set[str]:
    """The runs that wrote their gold/run_summary row (every stage they ran finished)."""
    if not storage.exists(RUN_SUMMARY_TABLE):
        return set()
    return {r["run_id"] for r in storage.read(RUN_SUMMARY_TABLE).select("run_id").collect()}


def record_run(spark: SparkSession, storage: LakeStorage, summary: dict[str, Any], command: str,
               started_at: Any, finished_at: Any) -> None:
    """Write this run's row of gold/run_summary: from then on its violations count as reported."""
    new = sum(v.get("count", 0) for v in summary.get("stages", {}).get("check", {}).get("violations", []))
    row = (summary["run_id"], command, started_at, finished_at, int(summary.get("exit_code", 0)), int(new),
           json.dumps(summary, sort_keys=True, default=str))
    storage.upsert(RUN_SUMMARY_TABLE, spark.createDataFrame([row], RUN_SUMMARY_SCHEMA), ["run_id"])
