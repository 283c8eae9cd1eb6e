"""Schema evolution of an existing table, for both engines: columns a newer build writes are added
to a table an older build created, by one metadata-only commit (no data file is rewritten; the
rows written before read null in them).

Neither engine adds a column on its own everywhere it writes: a delta-rs commit keeps the table's
schema whatever schema it is given, and delta-spark's ``MERGE INTO`` only evolves with
``autoMerge``. So a stage that writes new columns asks for them first (:meth:`LakeStorage.add_columns`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.types import StructField, StructType

from epoch_audit.contracts.descriptions import column_comments


def missing_fields(current: list[str], wanted: StructType) -> list[StructField]:
    """The fields of ``wanted`` that a table with the columns ``current`` lacks, in ``wanted``'s order."""
    have = set(current)
    return [f for f in wanted.fields if f.name not in have]


def add_columns_delta_rs(open_table: Callable[[], Any], table: str, wanted: StructType) -> list[str]:
    """Add to the delta-rs table ``open_table()`` opens the columns of ``wanted`` it lacks (nullable,
    with their contract comments), in one commit; the names added."""
    from deltalake import Schema
    from pyspark.sql.pandas.types import to_arrow_schema

    dt = open_table()
    missing = missing_fields([f.name for f in dt.schema().fields], wanted)
    if not missing:
        return []
    comments = column_comments(table, [f.name for f in missing])
    arrow = to_arrow_schema(StructType(missing))
    # Types through Spark's Arrow mapping, as the engine's writes do (a timestamp is Delta's
    # ``timestamp``, not ``timestamp_ntz``).
    arrow = pa.schema([
        f.with_nullable(True).with_metadata({"comment": comments[f.name]} if f.name in comments else None)
        for f in arrow
    ])
    dt.alter.add_columns(list(Schema.from_arrow(arrow).fields))
    return [f.name for f in missing]


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def add_columns_delta_spark(spark: SparkSession, name: str, table: str, current: list[str],
                            wanted: StructType) -> list[str]:
    """``ALTER TABLE name ADD COLUMNS`` for the columns of ``wanted`` the table (columns ``current``)
    lacks, with their contract comments: one commit; the names added."""
    missing = missing_fields(current, wanted)
    if not missing:
        return []
    comments = column_comments(table, [f.name for f in missing])
    columns = ", ".join(
        f"`{f.name.replace('`', '``')}` {f.dataType.simpleString()}"
        + (f" COMMENT {_sql_string(comments[f.name])}" if f.name in comments else "")
        for f in missing
    )
    spark.sql(f"ALTER TABLE {name} ADD COLUMNS ({columns})")
    return [f.name for f in missing]
