"""Which parser reads which records or file lines; one place to add a parser family."""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from epoch_audit.bronze.parsers import finish_events

log = logging.getLogger(__name__)

REQUEST_LOGGER = "kafka.request.logger"


def is_request_log_record() -> Column:
    """Request-logger records: logger ``kafka.request.logger``, or its ``%c{1}`` short name ``logger``
    (the Strimzi log4j2 pattern, §8) on a ``Completed request:`` message — ``state.change.logger``
    shortens to ``logger`` too, so the name alone cannot tell them apart."""
    logger = F.coalesce(F.col("logger"), F.lit(""))
    return (logger == REQUEST_LOGGER) | (
        (logger == "logger") & F.coalesce(F.col("message").startswith("Completed request:"), F.lit(False))
    )


# (module, function, which records it reads)
RECORD_PARSERS: list[tuple[str, str, Callable[[], Column]]] = [
    (
        "epoch_audit.bronze.parsers.kafka_log4j",
        "parse_kafka_log4j",
        lambda: F.col("line_format").isin("kafka", "strimzi", "csv") & ~is_request_log_record(),
    ),
    ("epoch_audit.bronze.parsers.request_log", "parse_request_log", is_request_log_record),
    ("epoch_audit.bronze.parsers.redpanda", "parse_redpanda", lambda: F.col("line_format") == "redpanda"),
]

# (module, function, the file kinds it reads)
FILE_PARSERS: list[tuple[str, str, tuple[str, ...]]] = [
    ("epoch_audit.bronze.parsers.metadata_dump", "parse_metadata_dump", ("metadata-dump",)),
    ("epoch_audit.bronze.parsers.segment_dump", "parse_segment_dump", ("segment-dump",)),
    (
        "epoch_audit.bronze.parsers.checkpoints",
        "parse_checkpoints",
        (
            "leader-epoch-checkpoint",
            "replication-offset-checkpoint",
            "recovery-point-offset-checkpoint",
            "log-start-offset-checkpoint",
            "partition-metadata",
        ),
    ),
]


def _load(module: str, name: str):
    try:
        return getattr(importlib.import_module(module), name)
    except (ModuleNotFoundError, AttributeError):
        log.warning("parser %s.%s is not available: its inputs are counted as irrelevant", module, name)
        return None


def _union(frames: list[DataFrame], empty: DataFrame) -> DataFrame:
    return reduce(lambda a, b: a.unionByName(b), frames, empty)


def _empty_events(source: DataFrame) -> DataFrame:
    return finish_events(source.limit(0).select("file_id", "line_number", F.lit("none").alias("event_type")))


def record_parser_outputs(records: DataFrame) -> list[tuple[str, DataFrame]]:
    """(parser name, bronze-schema rows incl. malformed) for every record parser, on its records."""
    outputs = []
    for module, name, selects in RECORD_PARSERS:
        parser = _load(module, name)
        if parser is not None:
            outputs.append((name, finish_events(parser(records.where(selects())))))
    return outputs


def file_parser_outputs(lines: DataFrame, source_time_zone: str = "UTC") -> list[tuple[str, DataFrame]]:
    """(parser name, bronze-schema rows incl. malformed) for every file-level parser, on its file kinds."""
    outputs = []
    for module, name, kinds in FILE_PARSERS:
        parser = _load(module, name)
        if parser is None:
            continue
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
