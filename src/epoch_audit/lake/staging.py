"""Staging: scratch Parquet a run writes under ``<lake>/_staging/<run_id>/`` and reads back once
(big plans are cut there), or whose files a table adopts (``upsert_staged``); never a table,
never read by another run."""

from __future__ import annotations

import shutil

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from epoch_audit import objstore


def staging_dir(lake: str, run_id: str | None = None) -> str:
    """``<lake>/_staging`` (every run's scratch space), or one run's ``<lake>/_staging/<run_id>``."""
    root = f"{lake.rstrip('/')}/_staging"
    return root if run_id is None else f"{root}/{run_id}"


def remove_staging(staging: str) -> None:
    """Staged Parquet is scratch space, removed once read (an object store's too: every object
    under the prefix)."""
    if objstore.is_remote(staging):
        try:
            objstore.delete_dir(staging)
        except OSError:  # scratch space: the next run removes it again
            pass
        return
    shutil.rmtree(staging.removeprefix("file:"), ignore_errors=True)


def write_delta_ready(df: DataFrame, path: str, partition_by: list[str] | tuple[str, ...] = ()) -> None:
    """One Spark write of ``df`` as Parquet files under ``path`` (new), in the Hive layout of
    ``partition_by``, in the form a Delta table can take as its own files: snappy, microsecond
    timestamps (Delta and delta-rs read those; Spark's default INT96 would need the timestampNanos
    reader feature). Set per session: spark-submit sessions keep their other defaults."""
    df.sparkSession.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    writer = df.write.mode("error").option("compression", "snappy")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(path)


def read_staged(spark: SparkSession, path: str, schema: StructType) -> DataFrame:
    """The rows written under ``path`` by :func:`write_delta_ready` (partition values from its
    directories, typed by ``schema``), in the columns' order of ``schema`` (Spark's read puts the
    partition columns last); none when nothing was written there."""
    if not objstore.is_dir(path):
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).option("basePath", path).parquet(path).select(*schema.fieldNames())
