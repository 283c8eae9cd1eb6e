"""Build parser inputs from real-format text, the way the ingest job does."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import groupby
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from epoch_audit.bronze.framing import MarkedLine, frame_lines, mark, record_row, redact

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


RECORD_SCHEMA = StructType(
    [
        StructField("file_id", StringType()),
        StructField("source_file", StringType()),
        StructField("cluster_id", StringType()),
        StructField("host_id", IntegerType()),
        StructField("file_order", LongType()),
        StructField("log_kind", StringType()),
        StructField("line_number", LongType()),
        StructField("line_count", LongType()),
        StructField("event_time", TimestampType()),
        StructField("level", StringType()),
        StructField("logger", StringType()),
        StructField("thread", StringType()),
        StructField("message", StringType()),
        StructField("text", StringType()),
        StructField("raw", StringType()),
        StructField("line_format", StringType()),
        StructField("shard", IntegerType()),
        StructField("src_loc", StringType()),
        StructField("problem", StringType()),
    ]
)
FRAMING_SCHEMA = "file_id string, line_number long, record_line long, line_format string"


def frame_log_lines(lines: DataFrame, source_time_zone: str = "UTC") -> tuple[DataFrame, DataFrame]:
    """Physical log lines -> (records, framing) with the ingest pass's framing
    (``epoch_audit.bronze.framing``): records as the parsers read them, and per line the line
    number of its record's start (null: an orphan before any start) and its start format."""
    spark = lines.sparkSession
    rows = sorted((r.asDict() for r in lines.collect()), key=lambda r: (r["file_id"], r["line_number"]))
    records, framing = [], []
    for _, file_lines in groupby(rows, key=lambda r: r["file_id"]):
        file_lines = list(file_lines)
        provenance = {k: file_lines[0][k] for k in ("file_id", "source_file", "cluster_id", "host_id",
                                                     "file_order", "log_kind")}
        marked = []
        for line in file_lines:
            inner, fmt, found = mark(redact(line["text"])[0])
            marked.append(MarkedLine(line["line_number"], inner, fmt, found))
        for item in frame_lines(iter(marked)):
            if isinstance(item, MarkedLine):
                framing.append((provenance["file_id"], item.line_number, None, None))
                continue
            records.append(record_row(item, provenance, source_time_zone))
            start = item.start
            framing.append((provenance["file_id"], start.line_number, start.line_number, start.line_format))
            framing += [(provenance["file_id"], n, start.line_number, None) for n in item.continuation_lines]
    record_rows = [tuple(r[f.name] for f in RECORD_SCHEMA.fields) for r in records]
    return spark.createDataFrame(record_rows, RECORD_SCHEMA), spark.createDataFrame(framing, FRAMING_SCHEMA)


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
    return records


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


def child_env() -> dict[str, str]:
    """Environment of a child process running this project: this interpreter's virtualenv first on
    PATH (pip, spark-submit, epoch-audit) and for PySpark's workers, no SPARK_HOME to divert it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_DRIVER_PYTHON", "SPARK_HOME")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYSPARK_PYTHON"] = sys.executable
    return env


@contextmanager
def short_run_session(spark: SparkSession, on: bool) -> Iterator[None]:
    """The session as a short run that keeps one partition (``on``) or not, restored after."""
    from epoch_audit.one_partition import ONE_PARTITION_INPUTS

    before = spark.conf.get(ONE_PARTITION_INPUTS, "false")
    spark.conf.set(ONE_PARTITION_INPUTS, "true" if on else "false")
    try:
        yield
    finally:
        spark.conf.set(ONE_PARTITION_INPUTS, before)
