"""Build parser inputs from real-format text, the way the ingest job does."""

from __future__ import annotations

import hashlib

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from epoch_audit.bronze.records import frame_log_lines

LINE_SCHEMA = StructType(
    [
        StructField("file_id", StringType()),
        StructField("source_file", StringType()),
        StructField("file_name", StringType()),
        StructField("cluster_id", StringType()),
        StructField("host_id", IntegerType()),
        StructField("file_order", IntegerType()),
        StructField("log_kind", StringType()),
        StructField("line_number", LongType()),
        StructField("text", StringType()),
    ]
)


def lines_from_text(
    spark: SparkSession,
    text: str,
    source_file: str = "cluster=c1/broker-1/state-change.log",
    host_id: int = 1,
    cluster_id: str = "c1",
    log_kind: str = "other",
    file_order: int = 0,
) -> DataFrame:
    """One row per physical line of ``text`` (as the ingest reader produces them)."""
    file_id = hashlib.sha256(source_file.encode()).hexdigest()
    name = source_file.rsplit("/", 1)[-1]
    body = text[:-1] if text.endswith("\n") else text
    rows = [
        (file_id, source_file, name, cluster_id, host_id, file_order, log_kind, i + 1, line)
        for i, line in enumerate(body.split("\n"))
    ]
    return spark.createDataFrame(rows, LINE_SCHEMA)


def records_from_text(
    spark: SparkSession,
    text: str,
    source_file: str = "cluster=c1/broker-1/state-change.log",
    host_id: int = 1,
    cluster_id: str = "c1",
    log_kind: str = "other",
    source_time_zone: str = "UTC",
) -> DataFrame:
    """Log records framed from ``text`` (wrappers stripped, continuation lines attached)."""
    lines = lines_from_text(spark, text, source_file, host_id, cluster_id, log_kind)
    records, _ = frame_log_lines(lines, source_time_zone)
    # Collected and re-created (test text is small): a parser's plan on top of the framing plan
    # takes Catalyst half a minute to optimise; on a local relation, a few seconds.
    return spark.createDataFrame(records.collect(), records.schema)


def release_spark_memory(spark: SparkSession) -> None:
    """Drop cached frames and let the JVM free what Python no longer uses.

    Python DataFrames hold their JVM Datasets (plans, cached relations, broadcast hash tables)
    through py4j until the Python objects are collected; plan objects sit in reference cycles that
    only the cyclic collector frees, and it rarely runs on small Python objects. A long test
    session filled a 6 GB driver heap that way.
    """
    import gc

    spark.catalog.clearCache()
    gc.collect()
