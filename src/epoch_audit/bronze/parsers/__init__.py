"""Parsers: raw lines / log records -> bronze events (see epoch_audit.contracts.events for the contract).

Two input shapes, both produced by ``epoch_audit.bronze.records``:

``records`` (log files: Kafka log4j default/Strimzi pattern, Redpanda Seastar, with any wrapper
already stripped and continuation lines already attached), one row per log event:
  file_id, source_file, cluster_id, host_id, file_order, log_kind, line_number (first line, 1-based),
  line_count, event_time (timestamp), level, logger, thread, message (first line's message text,
  i.e. between the prefix and the ``(logger)`` tail), text (message + continuation lines joined with
  ``\\n``), raw (the record's lines, wrapper stripped), line_format (kafka | strimzi | redpanda),
  shard, src_loc (Redpanda ``file.cc:NN``), problem (why the record start holds an invalid value, e.g.
  a timestamp "2024-02-30 ...": such a record is malformed and reaches no parser; else null).

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
from pyspark.sql.types import ArrayType, DataType

from epoch_audit.bronze.parsers.rows import MALFORMED
from epoch_audit.bronze.parsers.rows import TRUSTED as _TRUSTED
from epoch_audit.contracts.events import EVENT_SCHEMA


def event_id(*parts: Column) -> Column:
    """Deterministic event id: sha256 over the file identity, line and sub-index."""
    return F.sha2(F.concat_ws("|", *[p.cast("string") for p in parts]), 256)


def _out_of_type(source: Column, typed: Column, dtype: DataType) -> Column:
    """True where a value is present but does not fit its bronze type (the safe cast gave null)."""
    if isinstance(dtype, ArrayType):
        return F.coalesce(F.exists(typed, lambda x: x.isNull()), F.lit(False))
    return source.isNotNull() & typed.isNull()


def finish_events(parsed: DataFrame) -> DataFrame:
    """Complete a parser's output to the bronze schema: nulls for missing columns, typed casts, ids.

    Every cast is the safe form (Spark runs in ANSI mode: a plain cast raises on an epoch beyond
    int32 and aborts the run). A value that does not fit its column makes the event malformed with
    a reason naming the column, never a silently null field inside a parsed event. Parsers that
    convert text themselves keep ``try_cast``'s null elements in lists, so an ISR element beyond
    int32 is caught here too.
    """
    present = set(parsed.columns)
    if "sub_index" not in present:
        parsed = parsed.withColumn("sub_index", F.lit(0))
        present.add("sub_index")
    typed: dict[str, Column] = {}
    misfit: list[Column] = []
    for field in EVENT_SCHEMA.fields:
        if field.name == "event_id":
            typed[field.name] = event_id(F.col("file_id"), F.col("line_number"), F.col("sub_index"))
        elif field.name in present:
            value = F.col(field.name).try_cast(field.dataType)
            typed[field.name] = value
            if field.name not in _TRUSTED:
                misfit.append(
                    F.when(_out_of_type(F.col(field.name), value, field.dataType),
                           F.lit(f"{field.name}: value out of range for {field.dataType.simpleString()}"))
                )
        else:
            typed[field.name] = F.lit(None).cast(field.dataType)
    reason = F.coalesce(*misfit) if misfit else F.lit(None).cast("string")
    bad = F.col("_misfit").isNotNull() & (F.col("event_type") != MALFORMED)
    typed["event_type"] = F.when(bad, F.lit(MALFORMED)).otherwise(typed["event_type"])
    typed["details"] = F.when(bad, F.create_map(F.lit("reason"), F.col("_misfit"))).otherwise(typed["details"])
    return parsed.withColumn("_misfit", reason).select(*[typed[f.name].alias(f.name) for f in EVENT_SCHEMA.fields])
