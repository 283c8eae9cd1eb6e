"""What the two Delta engines build on: the storage protocol, the error worth one line to the
user, the crash hook of the write paths, and the write helpers both engines share.

Callers import these from :mod:`epoch_audit.lake.storage`; they live here so that the engines
(:mod:`~epoch_audit.lake.delta_rs`, :mod:`~epoch_audit.lake.delta_spark`) and ``open_storage``,
which picks one, import in one direction.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable
from typing import Protocol

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType


class StorageError(RuntimeError):
    """A storage problem worth one clear line to the user."""


CRASH_ENV = "EPOCH_AUDIT_CRASH_AT"


def crash_point(name: str) -> None:
    """Test hook: SIGKILL this process at the named point when ``EPOCH_AUDIT_CRASH_AT`` names it.

    Points: ``commit:<table>`` (data files written, Delta commit not yet made), ``committed:<table>``
    (just after the commit) and ``stage:<name>`` (after a pipeline stage). Unset in production: a
    no-op. Used by tests/test_nightly.py to prove that a run killed anywhere can simply be re-run.
    """
    if os.environ.get(CRASH_ENV) == name:
        logging.shutdown()
        os.kill(os.getpid(), signal.SIGKILL)


class LakeStorage(Protocol):
    """What the jobs need from a table store."""

    engine: str
    lake: str

    def exists(self, table: str) -> bool: ...
    def read(self, table: str, version: int | None = None) -> DataFrame: ...
    def columns(self, table: str) -> list[str]: ...
    def add_columns(self, table: str, wanted: StructType) -> list[str]: ...
    def append(self, table: str, df: DataFrame) -> None: ...
    def overwrite(self, table: str, df: DataFrame) -> None: ...
    # unique: the caller vouches for one row per key in ``df`` (no check; else duplicates are dropped)
    def upsert(self, table: str, df: DataFrame, keys: list[str], unique: bool = False) -> None: ...
    # the same for rows Spark staged with epoch_audit.lake.staging.write_delta_ready (files adopted where the
    # engine can)
    def upsert_staged(
        self, table: str, staged: str, schema: StructType, part_cols: list[str], keys: list[str], unique: bool = False
    ) -> None: ...
    def replace_where(self, table: str, df: DataFrame, column: str, values: list[str]) -> None: ...
    def read_where(self, table: str, column: str, values: list[str]) -> DataFrame: ...
    def read_partitions(
        self, table: str, keep: Callable[[dict[str, str | None]], bool], rows: Column
    ) -> DataFrame: ...
    # the rows of the files this process's commits added to the table (a superset of the rows it
    # wrote), None where the engine does not track them or it wrote nothing there
    def read_written(self, table: str) -> DataFrame | None: ...
    # the live files per partition (keyed by its (column, value) pairs in the table's column order;
    # paths under the table, sorted), None where the engine does not list them
    def files_by_partition(self, table: str) -> dict[tuple[tuple[str, str | None], ...], list[str]] | None: ...
    # rows per partition (keyed as files_by_partition) from the table's file statistics, None where
    # the engine does not read them or a file has none
    def partition_row_counts(self, table: str) -> dict[tuple[tuple[str, str | None], ...], int] | None: ...
    # Small tables (a row per file chunk, run, cluster or expectation): read and written by the
    # driver where the engine can (delta-rs: Arrow, no Spark job). ``rows`` gives dicts; callers
    # read no time columns through it (Spark gives local naive times, Arrow aware UTC ones).
    def rows(self, table: str, columns: list[str] | None = None) -> list[dict]: ...
    def upsert_rows(self, table: str, rows: list[tuple], schema: StructType, keys: list[str]) -> None: ...
    def overwrite_rows(self, table: str, rows: list[tuple], schema: StructType) -> None: ...
    def history(self, table: str) -> list[dict]: ...
    def maintain(self, table: str, retention_hours: int) -> dict[str, int]: ...
    def describe(self, table: str) -> int: ...
    def path(self, table: str) -> str: ...


def dedupe_by_keys(df: DataFrame, keys: list[str]) -> DataFrame:
    """One row per key. A narrow check (keys only) comes first: ``dropDuplicates`` shuffles every
    column, and bronze events carry their raw text while their ids are unique by construction."""
    if df.groupBy(*keys).count().where(F.col("count") > 1).limit(1).count() == 0:
        return df
    return df.dropDuplicates(keys)


def replaced_trivially(storage: LakeStorage, table: str, df: DataFrame, values: list[str]) -> bool:
    """The replace_where cases both engines share: nothing to replace, or no table yet (append)."""
    if not values:
        return True
    if not storage.exists(table):
        storage.append(table, df)
        return True
    return False


def source_partitions(source: DataFrame, columns: list[str]) -> list[tuple]:
    """The distinct value tuples of ``columns`` in ``source`` (one row per partition it writes: small)."""
    return [tuple(r) for r in source.select(*columns).distinct().collect()]
