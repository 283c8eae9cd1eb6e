"""The Delta log's side of the delta-rs engine (:mod:`epoch_audit.lake.delta_rs`): partition
values as the log serialises them, remove actions, which partition columns an upsert may prune by,
and the all-nullable Arrow schemas its commits carry."""

from __future__ import annotations

import time

import pyarrow as pa
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    DateType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
)


def partition_string(value: object) -> str | None:
    """A partition value as the Delta log serialises it (dates ISO, null stays null)."""
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def hive_values(segments: list[str]) -> dict[str, str | None]:
    """Partition values from a file's Hive directories (``k=v``), as the Delta log holds them."""
    from urllib.parse import unquote

    values: dict[str, str | None] = {}
    for segment in segments:
        key, _, raw = segment.partition("=")
        values[key] = None if raw == "__HIVE_DEFAULT_PARTITION__" else unquote(raw)
    return values


def remove_actions(affected: list[tuple[str, str, dict]]) -> list:
    """Remove actions of ``affected`` files ((uri, relative path, partition values))."""
    from deltalake.transaction import RemoveAction

    now = int(time.time() * 1000)
    return [RemoveAction(path=rel, data_change=True, deletion_timestamp=now, partition_values=values or None)
            for _, rel, values in affected]


_PRUNABLE_TYPES = (StringType, DateType, BooleanType, ByteType, ShortType, IntegerType, LongType)


def prunable_partition_columns(table: StructType, source: StructType, part_cols: list[str]) -> list[str]:
    """The partition columns an upsert of ``source`` can prune the table's files by (see upsert)."""
    def same(a: DataType, b: DataType) -> bool:
        return isinstance(a, _PRUNABLE_TYPES) and type(a) is type(b)

    names = set(source.fieldNames())
    return [c for c in part_cols if c in names and same(table[c].dataType, source[c].dataType)]


def nullable(schema: pa.Schema) -> pa.Schema:
    """Delta table schemas are kept all-nullable so later writes never clash on nullability."""
    return pa.schema([f.with_nullable(True) for f in schema]).remove_metadata()
