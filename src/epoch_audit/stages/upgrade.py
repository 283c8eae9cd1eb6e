"""A lake written by an older build, brought up to this build's table schemas before a command's
stages run (under the lake lock): the columns added since are added by one metadata commit per
table on either engine (:meth:`LakeStorage.add_columns`), and the rows written before them filled
once from what the lake already records. A lake that is up to date costs a schema read per table.

- gold/violations: ``first_seen_at`` / ``last_seen_at`` (:mod:`epoch_audit.stages.seen`);
- gold/run_summary: the typed columns (``RUN_SUMMARY_TYPED_SCHEMA``), from each row's JSON summary.
"""

from __future__ import annotations

import json
import logging

from pyspark.sql import SparkSession

from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import RUN_SUMMARY_TABLE
from epoch_audit.stages.seen import ensure_seen_columns
from epoch_audit.stages.state import (
    RUN_SUMMARY_BASE_SCHEMA,
    RUN_SUMMARY_SCHEMA,
    RUN_SUMMARY_TYPED_SCHEMA,
    run_facts,
)

log = logging.getLogger(__name__)


def ensure_run_summary_columns(spark: SparkSession, storage: LakeStorage) -> bool:
    """Give an existing gold/run_summary its typed columns, each older row's taken out of its own
    JSON summary (one row per run: collected, computed as a new row is, written back in one upsert,
    which keeps the columns' comments). True when the table was migrated."""
    if not storage.exists(RUN_SUMMARY_TABLE):
        return False
    added = storage.add_columns(RUN_SUMMARY_TABLE, RUN_SUMMARY_TYPED_SCHEMA)
    if not added:
        return False
    log.info("gold/run_summary: added %s; filling the older rows from their summaries", ", ".join(added))
    base = RUN_SUMMARY_BASE_SCHEMA.fieldNames()
    rows = []
    for r in storage.read(RUN_SUMMARY_TABLE).select(*base).collect():
        try:
            summary = json.loads(r["summary"] or "{}")
        except ValueError:  # not ours to judge: its typed columns stay null
            summary = {}
        facts = run_facts(summary if isinstance(summary, dict) else {}, r["started_at"], r["finished_at"])
        rows.append((*(r[c] for c in base), *(facts[f.name] for f in RUN_SUMMARY_TYPED_SCHEMA)))
    storage.upsert(RUN_SUMMARY_TABLE, spark.createDataFrame(rows, RUN_SUMMARY_SCHEMA), ["run_id"])
    return True


def upgrade_lake(spark: SparkSession, storage: LakeStorage) -> list[str]:
    """Bring every table an older build wrote to this build's columns; the tables migrated."""
    migrated = []
    if ensure_seen_columns(storage):
        migrated.append("gold/violations")
    if ensure_run_summary_columns(spark, storage):
        migrated.append(RUN_SUMMARY_TABLE)
    return migrated
