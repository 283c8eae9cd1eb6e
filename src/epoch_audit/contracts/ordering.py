"""How events are ordered: a broker's own log order, and the as-of join.

Spec "Ordering and time", rule 2: a broker's own log order is the line order inside one file;
across the files of one host the event time (same host, same clock), then file order / id / line.
Line order wins inside a file because we order on the running maximum of the event time along the
file's lines (the *own time*): it never decreases down a file, so a late-flushed line (Redpanda
multi-shard files are not time-monotonic) cannot jump ahead of an earlier line of the same file.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.events import OWN_TIME_COLUMN

# The own time of an event as the checks and silver tables carry it.
OWN_TIME = "_own_time"
OWN_ORDER_COLUMNS = (OWN_TIME, "file_order", "file_id", "line_number", "sub_index")


def file_running_max_time() -> Column:
    """The running max of ``event_time`` along the lines of each file, over the rows it is applied to."""
    along_file = (
        Window.partitionBy("file_id")
        .orderBy("line_number", "sub_index")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    return F.max("event_time").over(along_file)


def with_own_order(events: DataFrame, types: tuple[str, ...] | None = None) -> DataFrame:
    """Add ``_own_time``: the running max of event_time along each file's lines.

    Apply it to the whole bronze table (then filter), so every check sees the same key. Bronze
    written with the ``own_time`` column has it fixed at ingest over every line of the file; older
    bronze gets it computed here over the events given.

    With ``types``, only events of those types are returned, and only they go through the
    window's shuffle whole: every other event contributes just its position and time (the
    running max is the same, the shuffled bytes are a fraction).
    """
    if OWN_TIME in events.columns:  # already staged once for the whole stage
        return events if types is None else events.where(F.col("event_type").isin(*types))
    if OWN_TIME_COLUMN in events.columns:  # bronze since the own_time column: fixed at ingest, same value
        own = events.withColumn(OWN_TIME, F.col(OWN_TIME_COLUMN))
        return own if types is None else own.where(F.col("event_type").isin(*types))
    if types is None:
        return events.withColumn(OWN_TIME, file_running_max_time())
    wanted = events.where(F.col("event_type").isin(*types)).withColumn("_keep", F.lit(True))
    positions = events.select("file_id", "line_number", "sub_index", "event_time").withColumn("_keep", F.lit(False))
    both = wanted.unionByName(positions, allowMissingColumns=True)
    return both.withColumn(OWN_TIME, file_running_max_time()).where("_keep").drop("_keep")


def own_order(time_column: str = OWN_TIME) -> list[Column]:
    """Sort key of a broker's own log order: the own time in ``time_column``, then file and line."""
    return [F.col(c).asc_nulls_first() for c in (time_column, *OWN_ORDER_COLUMNS[1:])]


def asof_last(probes: DataFrame, marks: DataFrame, by: list[str], order: list[Column], values: list[str]) -> DataFrame:
    """As-of join by sorting: each probe row gets, in ``values``, the last non-null value of each
    of those ``marks`` columns among the marks of its ``by`` key at or before it in ``order``.

    ``probes`` and ``marks`` both hold the ``by`` and ``order`` columns (by name); ``probes`` must
    not hold the ``values`` columns. At an equal position a mark sorts before a probe (it counts).
    One window over the union: no range join, whatever the number of marks.
    """
    is_probe = "_asof_is_probe"
    both = probes.withColumn(is_probe, F.lit(1)).unionByName(
        marks.withColumn(is_probe, F.lit(0)), allowMissingColumns=True
    )
    upto = Window.partitionBy(*by).orderBy(*order, is_probe).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # one step for every value (each DataFrame step re-analyses the plan)
    both = both.withColumns({value: F.last(value, ignorenulls=True).over(upto) for value in values})
    return both.where(F.col(is_probe) == 1).select(*[c for c in both.columns if c != is_probe])
