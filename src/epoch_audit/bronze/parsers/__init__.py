"""Parsers: raw lines / log records -> bronze events (see epoch_audit.contracts.events for the contract).

Two input shapes, both produced by ``epoch_audit.bronze.records``:

``records`` (log files: Kafka log4j default/Strimzi pattern, Redpanda Seastar, with any wrapper
already stripped and continuation lines already attached), one row per log event:
  file_id, source_file, cluster_id, host_id, file_order, log_kind, line_number (first line, 1-based),
  line_count, event_time (timestamp), level, logger, thread, message (first line's message text,
  i.e. between the prefix and the ``(logger)`` tail), text (message + continuation lines joined with
  ``\\n``), raw (the record's lines, wrapper stripped), line_format (kafka | strimzi | redpanda),
  shard, src_loc (Redpanda ``file.cc:NN``).

``lines`` (file-level formats: dumps, checkpoints), one row per physical line:
  file_id, source_file, file_name, cluster_id, host_id, file_order, log_kind, line_number, text.

A parser is a pure function ``DataFrame -> DataFrame`` returning rows with the provenance columns
it was given (file_id, source_file, cluster_id, host_id, file_order, log_kind, line_number), a
``sub_index`` (0 unless one line yields several events), ``event_type`` and any typed columns of
``epoch_audit.contracts.events``. To report a line of a recognised format that cannot be parsed, emit a row
with ``event_type = "__malformed__"`` and ``details = {"reason": ...}``: it goes to quarantine.
Lines for which no row is emitted are counted as irrelevant. ``finish_events`` completes a parser's
output to the full bronze schema.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from epoch_audit.contracts.events import EVENT_SCHEMA

MALFORMED = "__malformed__"


def event_id(*parts: Column) -> Column:
    """Deterministic event id: sha256 over the file identity, line and sub-index."""
    return F.sha2(F.concat_ws("|", *[p.cast("string") for p in parts]), 256)


def finish_events(parsed: DataFrame) -> DataFrame:
    """Complete a parser's output to the bronze schema: nulls for missing columns, typed casts, ids."""
    present = set(parsed.columns)
    if "sub_index" not in present:
        parsed = parsed.withColumn("sub_index", F.lit(0))
        present.add("sub_index")
    cols = []
    for field in EVENT_SCHEMA.fields:
        if field.name == "event_id":
            cols.append(
                event_id(F.col("file_id"), F.col("line_number"), F.col("sub_index")).alias("event_id")
            )
        elif field.name in present:
            cols.append(F.col(field.name).cast(field.dataType).alias(field.name))
        else:
            cols.append(F.lit(None).cast(field.dataType).alias(field.name))
    return parsed.select(*cols)
