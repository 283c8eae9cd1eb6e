"""The lake's tables: each table's name (its place in the lake, ``<lake>/<name>``), the partition
columns a new table is created with, and the key its rows are upserted or replaced by.

Every table name is spelled here once; stages and engines import the constants.
"""

from __future__ import annotations

from dataclasses import dataclass

EVENTS_TABLE = "bronze/events"
QUARANTINE_TABLE = "quarantine/lines"
FILES_TABLE = "bronze/ingest_files"
ACCOUNTING_TABLE = "bronze/ingest_accounting"
# The ledger of what bronze holds: one row per chunk of a file ingested (see epoch_audit.stages.state).
LEDGER_TABLE = ACCOUNTING_TABLE
SILVER_PREFIX = "silver/"
PARTITION_TIMELINE_TABLE = "silver/partition_timeline"
VIOLATIONS_TABLE = "gold/violations"
RUN_SUMMARY_TABLE = "gold/run_summary"
DAILY_COUNTS_TABLE = "gold/daily_invariant_counts"
VALIDATION_RESULTS_TABLE = "gold/validation_results"
SUPPRESSIONS_TABLE = "gold/suppressions"
INPUT_PROBLEMS_TABLE = "gold/input_problems"
SILVER_STATE_TABLE = "state/silver_built"
GOLD_STATE_TABLE = "state/gold_checked"
CARRY_TABLE = "state/traffic_carry"
INPUT_SIGNS_TABLE = "state/input_signs"

# Partition layout of new tables (an existing table keeps its own). Every table with a
# ``cluster_id`` column under these names is partitioned by cluster: a nightly run rebuilds silver
# and gold only for the clusters that received new logs, and reads only their files. Bronze events
# are also partitioned by ``event_date`` (UTC day of the event time; null when a line has no time):
# dashboards, ad-hoc queries and retention read or drop one cluster-day without touching the rest;
# and by ``event_class`` (state | traffic), between cluster and day: a nightly run reads every state
# partition but only the recent traffic ones (epoch_audit.stages.carry).
PARTITION_COLUMN = "cluster_id"
CLASS_PARTITION_COLUMN = "event_class"
DATE_PARTITION_COLUMN = "event_date"


@dataclass(frozen=True)
class LakeTable:
    """One table (or, for a name ending in ``/``, every table under that prefix)."""

    name: str
    partition_by: tuple[str, ...] = ()
    keys: tuple[str, ...] = ()


BRONZE_EVENTS_PARTITIONS = (PARTITION_COLUMN, CLASS_PARTITION_COLUMN, DATE_PARTITION_COLUMN)

LAKE_TABLES: tuple[LakeTable, ...] = (
    LakeTable(EVENTS_TABLE, BRONZE_EVENTS_PARTITIONS, ("event_id",)),
    LakeTable(QUARANTINE_TABLE, (), ("file_id", "line_number")),
    LakeTable(FILES_TABLE, (), ("file_id",)),
    LakeTable(ACCOUNTING_TABLE, (), ("file_id", "start_line")),
    LakeTable(SILVER_PREFIX, (PARTITION_COLUMN,), ("cluster_id",)),  # replaced per cluster
    LakeTable(VIOLATIONS_TABLE, (PARTITION_COLUMN,), ("violation_id",)),
    LakeTable(RUN_SUMMARY_TABLE, (), ("run_id",)),
    LakeTable(DAILY_COUNTS_TABLE, (), ()),  # overwritten whole
    LakeTable(VALIDATION_RESULTS_TABLE, (), ("run_id", "table", "expectation")),
    LakeTable(SUPPRESSIONS_TABLE, (), ()),  # overwritten whole when it changes
    LakeTable(INPUT_PROBLEMS_TABLE, (), ("cluster_id",)),  # replaced per checked cluster
    LakeTable(SILVER_STATE_TABLE, (), ("cluster_id",)),
    LakeTable(GOLD_STATE_TABLE, (), ("cluster_id",)),
    LakeTable(CARRY_TABLE, (PARTITION_COLUMN,), ("cluster_id",)),  # replaced per cluster
    LakeTable(INPUT_SIGNS_TABLE, (), ("cluster_id", "event_class", "event_date", "host_id")),
)


def silver_table(name: str) -> str:
    """The lake name of the silver table ``name`` (a key of epoch_audit.silver.tables.SILVER_TABLES)."""
    return f"{SILVER_PREFIX}{name}"


def lake_table(table: str) -> LakeTable | None:
    """The registry entry of ``table`` (exact name, else the prefix entry it falls under)."""
    for entry in LAKE_TABLES:
        if table == entry.name or (entry.name.endswith("/") and table.startswith(entry.name)):
            return entry
    return None


def partition_columns_for(table: str, columns: list[str]) -> list[str]:
    """The partition columns a new table is created with (an existing table keeps its own).

    Only a table with a ``cluster_id`` column is partitioned; bronze events get their class and day
    partitions when the day column is there (a lake whose bronze predates them keeps cluster only).
    """
    entry = lake_table(table)
    if PARTITION_COLUMN not in columns or entry is None or not entry.partition_by:
        return []
    if DATE_PARTITION_COLUMN in entry.partition_by and DATE_PARTITION_COLUMN in columns:
        if CLASS_PARTITION_COLUMN in columns:
            return [PARTITION_COLUMN, CLASS_PARTITION_COLUMN, DATE_PARTITION_COLUMN]
        return [PARTITION_COLUMN, DATE_PARTITION_COLUMN]
    return [PARTITION_COLUMN]
