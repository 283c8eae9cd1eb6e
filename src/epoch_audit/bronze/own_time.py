"""Bronze's stored layout: the ``event_date`` / ``event_class`` partitions and ``own_time`` (the
running max of event time along an event's file, fixed once at ingest)."""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.events import (
    EVENT_CLASS_COLUMN,
    EVENT_COLUMNS,
    EVENT_DATE_COLUMN,
    OWN_TIME_COLUMN,
    event_class,
    event_date,
)

log = logging.getLogger(__name__)


def with_bronze_layout(
    events: DataFrame, existing_columns: list[str] | None, seeds: dict[str, int] | None = None
) -> DataFrame:
    """Events as bronze stores them: plus ``event_date`` (the day partition, see epoch_audit.lake.storage),
    ``event_class`` (state | traffic partition) and ``own_time`` (see :func:`with_file_own_time`;
    ``seeds``: per file read from a later line on, the max event time of its earlier lines, epoch
    microseconds). ``existing_columns``: the columns of the bronze events table, None when there
    is none yet.

    A lake whose bronze was created before one of these keeps its layout (no column added):
    Delta cannot add a partition column to an existing table. Such a lake is always re-checked
    from its whole history (no carried traffic, see epoch_audit.stages.pipeline).
    """
    if existing_columns is not None:
        if EVENT_DATE_COLUMN not in existing_columns:
            log.warning("bronze/events predates the %s partition: kept as it is", EVENT_DATE_COLUMN)
            return events
        if EVENT_CLASS_COLUMN not in existing_columns:
            log.warning("bronze/events predates the %s partition: kept as it is", EVENT_CLASS_COLUMN)
            return events.withColumn(EVENT_DATE_COLUMN, event_date(F.col("event_time")))
    out = events.withColumn(EVENT_DATE_COLUMN, event_date(F.col("event_time"))).withColumn(
        EVENT_CLASS_COLUMN, event_class(F.col("event_type"))
    )
    return with_file_own_time(out, seeds or {})


def layout_columns(existing_columns: list[str] | None) -> list[str]:
    """The stored columns of bronze events (see :func:`with_bronze_layout` for old lakes)."""
    layout = [EVENT_DATE_COLUMN, EVENT_CLASS_COLUMN, OWN_TIME_COLUMN]
    if existing_columns is not None:
        if EVENT_DATE_COLUMN not in existing_columns:
            log.warning("bronze/events predates the %s partition: kept as it is", EVENT_DATE_COLUMN)
            layout = []
        elif EVENT_CLASS_COLUMN not in existing_columns:
            log.warning("bronze/events predates the %s partition: kept as it is", EVENT_CLASS_COLUMN)
            layout = [EVENT_DATE_COLUMN]
    return [*EVENT_COLUMNS, *layout]


def with_file_own_time(events: DataFrame, seeds: dict[str, int]) -> DataFrame:
    """``own_time``: the running max of event_time along the event's file, over all of the file's
    events ingested so far (``seeds``: per file read from a later line on, the max event time of
    its earlier events in epoch microseconds). The same value ``epoch_audit.silver.timelines.
    with_own_order`` computes over a whole bronze table, fixed once at ingest: a run that reads only
    some of bronze (state events, recent traffic) still orders each event as a whole run does."""
    w = (
        Window.partitionBy("file_id")
        .orderBy("line_number", "sub_index")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    own = F.max("event_time").over(w)
    known = [(k, v) for k, v in sorted(seeds.items()) if v is not None]
    if not known:
        return events.withColumn(OWN_TIME_COLUMN, own)
    seed = events.sparkSession.createDataFrame(known, "file_id string, _seed_micros long")
    return (
        events.join(F.broadcast(seed), "file_id", "left")
        .withColumn(OWN_TIME_COLUMN, F.greatest(own, F.timestamp_micros("_seed_micros")))
        .drop("_seed_micros")
    )


def file_max_times(events: DataFrame, seeds: dict[str, int]) -> dict[str, int | None]:
    """Per file read, the max event time (epoch microseconds) of all its events so far."""
    rows = events.groupBy("file_id").agg(F.max(F.unix_micros("event_time")).alias("m")).collect()
    out: dict[str, int | None] = dict(seeds)
    for r in rows:  # one row per file read: small
        values = [v for v in (out.get(r["file_id"]), r["m"]) if v is not None]
        out[r["file_id"]] = max(values) if values else None
    return out
