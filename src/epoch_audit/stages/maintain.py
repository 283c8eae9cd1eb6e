"""The maintenance stage (``epoch-audit maintain``), thin: every table of the lake compacted,
vacuumed with a retention, its log checkpointed; the killed runs' scratch space removed.

A nightly lake grows by small files and log entries: every run commits a few files per table and
cluster, and every later read lists them and replays the log. Run after the nightly audit (the
bundle's job does), under the same lake lock: no run reads or writes while files are rewritten
and deleted. Rows never change: compaction rewrites files, the vacuum deletes only files no
version within the retention reads.
"""

from __future__ import annotations

import logging
from typing import Any

from pyspark.sql import SparkSession

from epoch_audit.config import AppConfig
from epoch_audit.lake.staging import remove_staging, staging_dir
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import LAKE_TABLES, silver_table
from epoch_audit.silver.tables import SILVER_TABLES
from epoch_audit.stages.base import StageResult

log = logging.getLogger(__name__)


def lake_tables() -> list[str]:
    """Every table name a lake can hold (the silver prefix expanded), in registry order."""
    names: list[str] = []
    for entry in LAKE_TABLES:
        if entry.name.endswith("/"):
            names.extend(silver_table(name) for name in SILVER_TABLES)
        else:
            names.append(entry.name)
    return names


def run_maintenance(
    spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str = ""
) -> StageResult:
    """Maintain every table the lake holds; per table, its files before and after and what went."""
    hours = config.maintenance.retention_hours
    tables: dict[str, dict[str, Any]] = {}
    for table in lake_tables():
        if not storage.exists(table):
            continue
        # a table written before the contracts' descriptions gets them (metadata commits only)
        described = storage.describe(table)
        tables[table] = {**storage.maintain(table, hours), "description_commits": described}
        log.info(
            "maintain %s: %d -> %d files (%d compacted, %d deleted)", table, tables[table]["files_before"],
            tables[table]["files_after"], tables[table]["files_compacted"], tables[table]["files_deleted"],
        )
    # Scratch Parquet of runs killed before they cleaned up (a finished run removes its own); under
    # the lake lock no run is using any of it.
    remove_staging(staging_dir(storage.lake))
    totals = {
        key: sum(t[key] for t in tables.values())
        for key in ("files_before", "files_after", "files_compacted", "files_deleted", "description_commits")
    }
    return StageResult("maintain", "ran", {"retention_hours": hours, "tables": tables, **totals})
