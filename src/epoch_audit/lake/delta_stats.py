"""Delta data-skipping statistics of a Parquet file written outside delta-rs's own writer (Spark's,
or pyarrow's for small tables): the ``stats`` JSON of its AddAction, from the file's footer."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

# Delta's data-skipping statistics are bounds: a reader skips a file when a filter cannot hold
# between them, so only exact ones are written: integers, dates, and strings of at most 32
# characters (Delta's own prefix length). Timestamps are left out: Delta keeps them to the
# millisecond, and a maximum cut below its microseconds would skip a file holding the value.
STATS_STRING_CHARS = 32


def _has_stats(arrow_type: pa.DataType) -> bool:
    return (
        pa.types.is_integer(arrow_type) or pa.types.is_date32(arrow_type)
        or pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
    )


def _stat_value(value: object) -> object | None:
    """A Parquet minimum or maximum as Delta's stats JSON holds it; None: not kept."""
    if isinstance(value, str):
        return value if len(value) <= STATS_STRING_CHARS else None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if hasattr(value, "isoformat"):  # a date
        return value.isoformat()
    return None


def file_stats(meta: pq.FileMetaData) -> str:
    """The ``stats`` JSON of a file's AddAction from its Parquet footer: ``numRecords`` and, per
    top-level integer, date or string column, ``nullCount`` and (when exact) ``minValues`` /
    ``maxValues`` over every row group. A column without statistics in a row group is left out."""
    stats: dict[str, object] = {"numRecords": meta.num_rows}
    if meta.num_row_groups == 0:
        return json.dumps(stats)
    leaf = {meta.row_group(0).column(j).path_in_schema: j for j in range(meta.num_columns)}
    mins: dict[str, object] = {}
    maxs: dict[str, object] = {}
    nulls: dict[str, int] = {}
    for field in meta.schema.to_arrow_schema():
        j = leaf.get(field.name)  # a nested column's leaves are named parent.child...: never matched
        if j is None or not _has_stats(field.type):
            continue
        groups = [meta.row_group(r).column(j).statistics for r in range(meta.num_row_groups)]
        if any(g is None or not g.has_null_count for g in groups):
            continue
        nulls[field.name] = sum(g.null_count for g in groups)
        bounded = [g for g in groups if g.has_min_max]  # a row group of nulls only has none
        lows = [_stat_value(g.min) for g in bounded]
        highs = [_stat_value(g.max) for g in bounded]
        if bounded and None not in lows and None not in highs:
            mins[field.name], maxs[field.name] = min(lows), max(highs)
    if nulls:
        stats.update(minValues=mins, maxValues=maxs, nullCount=nulls)
    return json.dumps(stats)
