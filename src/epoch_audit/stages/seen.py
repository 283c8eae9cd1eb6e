"""``first_seen_at`` / ``last_seen_at`` of gold/violations (their meaning: the column descriptions
in :mod:`epoch_audit.contracts.violations`).

The check stage stamps them on the rows it writes; this module brings a lake written before the
columns existed up to date, once: it adds them (one metadata commit per engine) and fills the old
rows from what the lake already records — the start of the run named by a row's ``run_id`` and of
the run that last checked its cluster (state/gold_checked), both from gold/run_summary.
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.contracts.violations import SEEN_SCHEMA
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import GOLD_STATE_TABLE, RUN_SUMMARY_TABLE, VIOLATIONS_TABLE

log = logging.getLogger(__name__)


def derived_seen(gold: DataFrame, run_starts: DataFrame, last_checks: DataFrame | None) -> DataFrame:
    """``gold`` with its null ``first_seen_at`` / ``last_seen_at`` derived: the start of the row's
    ``run_id`` run, and the start of the run that last checked its cluster (``last_checks``:
    cluster_id, run_id), from ``run_starts`` (run_id, started_at). Unknown runs leave null."""
    starts = F.broadcast(run_starts.select(F.col("run_id").alias("_run"), F.col("started_at").alias("_first")))
    out = gold.join(starts, gold["run_id"] == starts["_run"], "left")
    last = F.lit(None).cast("timestamp")
    if last_checks is not None:
        checked = F.broadcast(
            last_checks.select(F.col("cluster_id").alias("_cluster"), F.col("run_id").alias("_checker"))
            .join(run_starts.select(F.col("run_id").alias("_checker"), F.col("started_at").alias("_last")),
                  "_checker", "left")
        )
        out = out.join(checked, out["cluster_id"].eqNullSafe(checked["_cluster"]), "left")
        last = F.col("_last")
    return out.select(*[
        F.coalesce(F.col("first_seen_at"), F.col("_first")).alias(c) if c == "first_seen_at"
        else F.coalesce(F.col("last_seen_at"), last).alias(c) if c == "last_seen_at"
        else F.col(c)
        for c in gold.columns
    ])


def ensure_seen_columns(storage: LakeStorage) -> bool:
    """Give an existing gold/violations its seen columns, filled for the rows written before them
    (one metadata commit and one upsert, on the first run of a build that has them; later runs only
    read the table's schema). True when the table was migrated."""
    if not storage.exists(VIOLATIONS_TABLE):
        return False
    added = storage.add_columns(VIOLATIONS_TABLE, SEEN_SCHEMA)
    if not added:
        return False
    log.info("gold/violations: added %s; filling the older rows from gold/run_summary", ", ".join(added))
    if storage.exists(RUN_SUMMARY_TABLE):
        last_checks = storage.read(GOLD_STATE_TABLE) if storage.exists(GOLD_STATE_TABLE) else None
        filled = derived_seen(storage.read(VIOLATIONS_TABLE), storage.read(RUN_SUMMARY_TABLE), last_checks)
        storage.upsert(VIOLATIONS_TABLE, filled, ["violation_id"])
    return True
