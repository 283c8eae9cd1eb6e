"""Which parser reads which records or file lines; one place to add a parser family."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from epoch_audit.bronze.parsers import MALFORMED, finish_events
from epoch_audit.bronze.parsers.checkpoints import parse_checkpoints
from epoch_audit.bronze.parsers.kafka_log4j import parse_kafka_log4j
from epoch_audit.bronze.parsers.metadata_dump import parse_metadata_dump
from epoch_audit.bronze.parsers.redpanda import parse_redpanda
from epoch_audit.bronze.parsers.request_log import parse_request_log
from epoch_audit.bronze.parsers.segment_dump import parse_segment_dump

REQUEST_LOGGER = "kafka.request.logger"


def is_request_log_record() -> Column:
    """Request-logger records: logger ``kafka.request.logger``, or its ``%c{1}`` short name ``logger``
    (the Strimzi log4j2 pattern, §8) on a ``Completed request:`` message — ``state.change.logger``
    shortens to ``logger`` too, so the name alone cannot tell them apart. A line cut inside its JSON
    has lost its ``(logger)`` tail: a ``Completed request:`` message without a logger is one too
    (the request-log parser quarantines it as truncated)."""
    logger = F.coalesce(F.col("logger"), F.lit(""))
    completed = F.coalesce(F.col("message").startswith("Completed request:"), F.lit(False))
    return (logger == REQUEST_LOGGER) | (logger.isin("logger", "") & completed)


RecordParser = Callable[[DataFrame], DataFrame]

# (name, parser, which records it reads). The name names the parser's staged output.
RECORD_PARSERS: list[tuple[str, RecordParser, Callable[[], Column]]] = [
    (
        "parse_kafka_log4j",
        parse_kafka_log4j,
        lambda: F.col("line_format").isin("kafka", "strimzi", "csv") & ~is_request_log_record(),
    ),
    ("parse_request_log", parse_request_log, is_request_log_record),
    ("parse_redpanda", parse_redpanda, lambda: F.col("line_format") == "redpanda"),
]

# (name, parser, the file kinds it reads)
FILE_PARSERS: list[tuple[str, Callable[..., DataFrame], tuple[str, ...]]] = [
    ("parse_metadata_dump", parse_metadata_dump, ("metadata-dump",)),
    ("parse_segment_dump", parse_segment_dump, ("segment-dump",)),
    (
        "parse_checkpoints",
        parse_checkpoints,
        (
            "leader-epoch-checkpoint",
            "replication-offset-checkpoint",
            "recovery-point-offset-checkpoint",
            "log-start-offset-checkpoint",
            "partition-metadata",
        ),
    ),
]


def _union(frames: list[DataFrame], empty: DataFrame) -> DataFrame:
    return reduce(lambda a, b: a.unionByName(b), frames, empty)


def _empty_events(source: DataFrame) -> DataFrame:
    return finish_events(source.limit(0).select("file_id", "line_number", F.lit("none").alias("event_type")))


def record_problems(records: DataFrame) -> DataFrame:
    """One malformed row per record whose start holds an invalid value (``problem``: a bad timestamp,
    an out-of-range shard): quarantined with that reason instead of parsed with a null field."""
    bad = records.where(F.col("problem").isNotNull())
    return bad.select(
        "file_id", "source_file", "cluster_id", "host_id", "file_order", "log_kind", "line_number",
        F.lit(MALFORMED).alias("event_type"),
        F.create_map(F.lit("reason"), F.col("problem")).alias("details"),
    )


def record_parser_outputs(records: DataFrame) -> list[tuple[str, DataFrame]]:
    """(parser name, bronze-schema rows incl. malformed) for every record parser, on its records;
    records with a ``problem`` reach no parser (``record_problems``)."""
    outputs = []
    valid = F.col("problem").isNull()
    for name, parser, selects in RECORD_PARSERS:
        outputs.append((name, finish_events(parser(records.where(valid & selects())))))
    outputs.append(("record_problems", finish_events(record_problems(records))))
    return outputs


def file_parser_outputs(lines: DataFrame, source_time_zone: str = "UTC") -> list[tuple[str, DataFrame]]:
    """(parser name, bronze-schema rows incl. malformed) for every file-level parser, on its file kinds."""
    outputs = []
    for name, parser, kinds in FILE_PARSERS:
        selected = lines.where(F.col("log_kind").isin(*kinds))
        # Checkpoint copy suffixes are host-local times: they need the configured zone.
        if "source_time_zone" in inspect.signature(parser).parameters:
            outputs.append((name, finish_events(parser(selected, source_time_zone=source_time_zone))))
        else:
            outputs.append((name, finish_events(parser(selected))))
    return outputs


def parse_records(records: DataFrame) -> DataFrame:
    """Every record parser on the records it reads, as one DataFrame."""
    return _union([df for _, df in record_parser_outputs(records)], _empty_events(records))


def parse_file_lines(lines: DataFrame, source_time_zone: str = "UTC") -> DataFrame:
    """Every file-level parser on the lines of its file kinds, as one DataFrame."""
    return _union([df for _, df in file_parser_outputs(lines, source_time_zone)], _empty_events(lines))
