"""Two lakes compared table by table: the rows each holds that the other does not.

For the engine tests: a lake written by delta-spark, by delta-rs, or by both on alternate nights,
must hold the same rows. What a run stamps (its id, its clock, the lake's path) differs by nature
and is left out; everything else is compared row for row (as multisets).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import (
    ACCOUNTING_TABLE,
    CARRY_TABLE,
    DAILY_COUNTS_TABLE,
    EVENTS_TABLE,
    FILES_TABLE,
    GOLD_STATE_TABLE,
    QUARANTINE_TABLE,
    SILVER_STATE_TABLE,
    VIOLATIONS_TABLE,
    silver_table,
)
from epoch_audit.silver.tables import SILVER_TABLES

# Tables whose rows are the audit's results, bronze to gold (the run ledgers, run_summary and
# validation_results, hold run ids and times by design).
COMPARED_TABLES: tuple[str, ...] = (
    EVENTS_TABLE,
    QUARANTINE_TABLE,
    FILES_TABLE,
    ACCOUNTING_TABLE,
    *(silver_table(name) for name in SILVER_TABLES),
    VIOLATIONS_TABLE,
    DAILY_COUNTS_TABLE,
    SILVER_STATE_TABLE,
    GOLD_STATE_TABLE,
    CARRY_TABLE,
)

# Columns a run stamps: which run, when, from where.
RUN_STAMPS = frozenset({
    "run_id", "last_run_id", "detected_at", "ingested_at", "first_run_id", "last_delivered_at", "built_at", "checked_at",
    "first_seen_at", "last_seen_at",
})


def _stable(df: DataFrame) -> DataFrame:
    """The compared columns in name order; maps as sorted entry arrays (set operations refuse maps)."""
    types = {f.name: f.dataType for f in df.schema.fields}
    return df.select(*(
        F.array_sort(F.map_entries(c)).alias(c) if isinstance(types[c], MapType) else F.col(c)
        for c in sorted(types) if c not in RUN_STAMPS
    ))


def lake_differences(spark: SparkSession, lake_a: str, lake_b: str, tables: tuple[str, ...] = COMPARED_TABLES
                     ) -> dict[str, str]:
    """Per table that differs, what differs (missing table, columns, row counts, a sample row).

    Both lakes are read with the delta-rs reader: a table delta-spark wrote must read there too."""
    a, b = DeltaRsStorage(spark, lake_a), DeltaRsStorage(spark, lake_b)
    found: dict[str, str] = {}
    for table in tables:
        if a.exists(table) != b.exists(table):
            found[table] = f"only in {lake_a if a.exists(table) else lake_b}"
            continue
        if not a.exists(table):
            continue
        left, right = _stable(a.read(table)), _stable(b.read(table))
        if left.columns != right.columns:
            found[table] = f"columns {left.columns} != {right.columns}"
            continue
        only_left, only_right = left.exceptAll(right), right.exceptAll(left)
        extra = only_left.limit(1).collect() + only_right.limit(1).collect()
        if extra:
            found[table] = (
                f"{only_left.count()} rows only in {lake_a}, {only_right.count()} only in {lake_b}; e.g. {extra[0]}"
            )
    return found
