"""What one run wrote, per validated table: a run's data expectations read only that.

A run that ingests is judged on its own data: the bronze chunks its ingest wrote (ledger rows of
``bronze/ingest_accounting`` with its run id) and the clusters whose silver and gold it rebuilt
(``state/silver_built`` / ``state/gold_checked`` rows with its run id). One bad value from an
earlier night then fails that night only, and validation reads a night, not the history. A
standalone ``validate`` reads every table whole.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.lake.tables import EVENTS_TABLE, GOLD_STATE_TABLE, LEDGER_TABLE, SILVER_STATE_TABLE
from epoch_audit.validate.base import ValidationSettings


def _this_run(storage: Any, table: str, settings: ValidationSettings) -> DataFrame | None:
    if not storage.exists(table):
        return None
    return storage.read(table).where(F.col("run_id") == settings.run_id)


def bronze_events_of_run(events: DataFrame, storage: Any, settings: ValidationSettings) -> DataFrame:
    """Events inside the line ranges this run's ingest read: among the files this process added to
    the table when the engine tracks them (a night's files, not the cluster's history: the read no
    longer grows with the lake), else among the partitions of its clusters."""
    chunks = _this_run(storage, LEDGER_TABLE, settings)
    if chunks is None:
        return events.limit(0)
    written = storage.read_written(EVENTS_TABLE)
    if written is not None:
        events = written
    chunks = chunks.select(
        F.col("cluster_id").alias("_c"), F.col("file_id").alias("_f"),
        F.col("start_line").alias("_s"), F.col("end_line").alias("_e"),
    ).cache()  # small (a row per chunk), read twice below
    clusters = [r["_c"] for r in chunks.select("_c").distinct().collect()]
    scoped = events.where(F.col("cluster_id").isin(clusters)) if None not in clusters else events
    return scoped.join(
        F.broadcast(chunks),
        (F.col("file_id") == F.col("_f")) & F.col("line_number").between(F.col("_s"), F.col("_e")),
        "left_semi",
    )


def ledger_rows_of_run(ledger: DataFrame, storage: Any, settings: ValidationSettings) -> DataFrame:
    return ledger.where(F.col("run_id") == settings.run_id)


def _clusters_rebuilt(state_table: str):
    def scope(table: DataFrame, storage: Any, settings: ValidationSettings) -> DataFrame:
        built = _this_run(storage, state_table, settings)
        if built is None:
            return table.limit(0)
        clusters = [r["cluster_id"] for r in built.select("cluster_id").collect()]
        return table.where(F.col("cluster_id").isin(clusters))

    return scope


silver_clusters_of_run = _clusters_rebuilt(SILVER_STATE_TABLE)
gold_clusters_of_run = _clusters_rebuilt(GOLD_STATE_TABLE)
