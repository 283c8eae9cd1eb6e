"""Table descriptions and column comments on the lake's Delta tables, from the contracts
(:mod:`epoch_audit.contracts.descriptions`), for both engines.

A new table is created with them (delta-rs: the metadata action's ``description`` and each schema
field's ``comment`` metadata; delta-spark: the DataFrame's field metadata, then the table comment).
A table written before them, or whose text changed since, gets them by metadata-only commits after
its next write or in ``epoch-audit maintain``: its data files are never rewritten.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from epoch_audit.contracts.descriptions import column_comments, table_description


def table_description_text(table: str) -> str | None:
    """The description of ``table`` (None: not described)."""
    entry = table_description(table)
    return entry.description if entry is not None else None


def described_schema(table: str, schema: pa.Schema) -> pa.Schema:
    """``schema`` with each described column's ``comment`` in its field metadata."""
    comments = column_comments(table, schema.names)
    return pa.schema([
        f.with_metadata({**(f.metadata or {}), b"comment": comments[f.name].encode()}) if f.name in comments else f
        for f in schema
    ])


def missing_comments(table: str, fields: list[tuple[str, dict[str, Any]]]) -> dict[str, str]:
    """Of ``fields`` ((name, metadata) of a table's schema), those whose comment is not the contract's,
    with the comment they should have."""
    comments = column_comments(table, [name for name, _ in fields])
    return {name: comments[name] for name, meta in fields if name in comments and meta.get("comment") != comments[name]}


def describe_delta_rs(open_table: Callable[[], Any], table: str, described: set[str]) -> int:
    """Bring the delta-rs table ``open_table()`` opens (a ``deltalake.DeltaTable``) to its contract's
    description and comments; return the commits made. delta-rs commits metadata changes one at a
    time (the description, then one per column), so a table written before pays them once;
    ``described`` holds the tables this process has already brought up to date, so its later writes
    cost nothing."""
    if table in described:
        return 0
    dt = open_table()
    fields = dt.schema().fields
    commits = 0
    description = table_description_text(table)
    if description is not None and dt.metadata().description != description:
        dt.alter.set_table_description(description)
        commits += 1
    metadata = {f.name: dict(f.metadata) for f in fields}
    for name, comment in missing_comments(table, list(metadata.items())).items():
        dt.alter.set_column_metadata(name, {**metadata[name], "comment": comment})
        commits += 1
    described.add(table)
    return commits


def commented(table: str, df: DataFrame) -> DataFrame:
    """``df`` with each described column's ``comment`` in its field metadata (what Delta stores in the
    table's schema when the write creates or overwrites it); ``df`` itself when nothing is described."""
    comments = column_comments(table, df.columns)
    if not comments:
        return df
    return df.select(*[
        F.col(f"`{c}`").alias(c, metadata={**df.schema[c].metadata, "comment": comments[c]}) if c in comments
        else F.col(f"`{c}`")
        for c in df.columns
    ])


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def describe_delta_spark(spark: SparkSession, name: str, table: str, schema: Callable[[], StructType],
                         described: set[str]) -> int:
    """Bring the delta-spark table ``name`` (``delta.`<path>```; ``schema`` reads its schema) to its
    contract's description (the table comment, Delta's ``description``) and column comments; the
    commits made (each ``ALTER`` is one). ``described``: as in :func:`describe_delta_rs`."""
    if table in described:
        return 0
    commits = 0
    description = table_description_text(table)
    if description is not None:
        current = spark.sql(f"DESCRIBE DETAIL {name}").select("description").first()
        if current is None or current["description"] != description:
            spark.sql(f"ALTER TABLE {name} SET TBLPROPERTIES ('comment' = {_sql_string(description)})")
            commits += 1
    for column, comment in missing_comments(table, [(f.name, f.metadata) for f in schema().fields]).items():
        spark.sql(f"ALTER TABLE {name} ALTER COLUMN `{column.replace('`', '``')}` COMMENT {_sql_string(comment)}")
        commits += 1
    described.add(table)
    return commits
