"""Drive lines through the bronze chain the way ingest does (redact, mark, frame, parse, account),
without the lake: the lowest level that gives bronze rows plus every line's status."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from epoch_audit.bronze.accounting import line_statuses, unparseable
from epoch_audit.bronze.discover import LOG_KINDS
from epoch_audit.bronze.parsers.dispatch import parse_file_lines, parse_records
from epoch_audit.bronze.records import group_records, mark_lines, unmark
from tests.helpers import LINE_SCHEMA


def line_rows(spark: SparkSession, files: dict[tuple[str, str], list[str]]) -> DataFrame:
    """(source_file, log_kind) -> physical lines, as the reader gives them (``line_chars`` = length read)."""
    import hashlib

    rows = []
    for (source_file, log_kind), lines in files.items():
        file_id = hashlib.sha256(source_file.encode()).hexdigest()
        name = source_file.rsplit("/", 1)[-1]
        rows += [(file_id, source_file, name, "c1", 1, 0, log_kind, i + 1, t) for i, t in enumerate(lines)]
    return spark.createDataFrame(rows, LINE_SCHEMA).withColumn("line_chars", F.length("text"))


def run_chain(spark: SparkSession, lines: DataFrame) -> tuple[DataFrame, DataFrame, DataFrame]:
    """-> (staged marked lines, parsed rows incl. malformed, line statuses)."""
    is_log = F.col("log_kind").isin(*LOG_KINDS)
    marked = mark_lines(lines, is_log & ~unparseable())
    marked = spark.createDataFrame(marked.collect(), marked.schema)
    log_lines = unmark(marked.where(is_log & ~unparseable()))
    records, framing = group_records(log_lines)
    # collected and re-created: parser plans on a local relation optimise in seconds
    records = spark.createDataFrame(records.collect(), records.schema)
    framing = spark.createDataFrame(framing.collect(), framing.schema)
    parsed = parse_records(records).unionByName(parse_file_lines(marked.where(~is_log & ~unparseable())))
    parsed = spark.createDataFrame(parsed.collect(), parsed.schema)
    return marked, parsed, line_statuses(marked, parsed, framing)
