"""Staging: scratch Parquet a run writes under ``<lake>/_staging/<run_id>/`` and reads back once
(big plans are cut there), or whose files a table adopts (``upsert_staged``); never a table,
never read by another run."""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from datetime import date

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from epoch_audit import objstore


def staging_dir(lake: str, run_id: str | None = None) -> str:
    """``<lake>/_staging`` (every run's scratch space), or one run's ``<lake>/_staging/<run_id>``."""
    root = f"{lake.rstrip('/')}/_staging"
    return root if run_id is None else f"{root}/{run_id}"


def remove_staging(staging: str) -> None:
    """Staged Parquet is scratch space, removed once read (an object store's too: every object
    under the prefix)."""
    if objstore.is_remote(staging):
        try:
            objstore.delete_dir(staging)
        except OSError:  # scratch space: the next run removes it again
            pass
        return
    shutil.rmtree(staging.removeprefix("file:"), ignore_errors=True)


def write_delta_ready(df: DataFrame, path: str, partition_by: list[str] | tuple[str, ...] = ()) -> None:
    """One Spark write of ``df`` as Parquet files under ``path`` (new), in the Hive layout of
    ``partition_by``, in the form a Delta table can take as its own files: snappy, microsecond
    timestamps (Delta and delta-rs read those; Spark's default INT96 would need the timestampNanos
    reader feature). Set per session: spark-submit sessions keep their other defaults."""
    df.sparkSession.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    writer = df.write.mode("error").option("compression", "snappy")
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.parquet(path)


def read_staged(spark: SparkSession, path: str, schema: StructType) -> DataFrame:
    """The rows written under ``path`` by :func:`write_delta_ready` (partition values from its
    directories, typed by ``schema``), in the columns' order of ``schema`` (Spark's read puts the
    partition columns last); none when nothing was written there."""
    if not objstore.is_dir(path):
        return spark.createDataFrame([], schema)
    return spark.read.schema(schema).option("basePath", path).parquet(path).select(*schema.fieldNames())


# -- staged Parquet written by Python workers (the ingest pass on a local lake) ------------------
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
# Spark's ExternalCatalogUtils.escapePathName (copied from Hive): these ASCII characters of a
# partition value are written %XX in its directory name; everything else as it is.
_ESCAPED = frozenset([*map(chr, range(1, 0x20)), *"\"#%'*/:=?\\\x7f{[]^"])
ROW_GROUP_BYTES = 32 << 20  # a partition's rows are buffered up to this much Arrow memory, then written
# Columns (Parquet leaf paths) with about one value a row: a dictionary for them is built until its
# page overflows and then dropped. Writing the 10^6 bench's bronze without one took 1.8 CPU s instead of
# 2.05, the files 1 % larger. (Statistics stay, ``raw``'s too: the Delta log's file statistics are those
# of Spark's own write, ``test_workers_stage_what_sparks_write_staged``.)
NO_DICTIONARY = frozenset({"event_id", "raw", "event_time", "own_time", "create_time_ms", "details.key_value.value"})
# A Bloom filter on each row group's ids: looking up the events gold cites (``gold.evidence``, a few
# hundred ids) then reads the few row groups that hold one instead of every row of bronze (Spark
# pushes the ``IN`` list to Parquet, which tests each id against the filter). At 10^7 lines the
# cited 283 ids sit in 24 of 480 row groups; the lookup took 5.3-8.7 s with every row read. The
# false-positive rate is per id tested: at 1e-4 a row group without a cited id is still read with
# probability 1 - (1 - 1e-4)^ids (3 % for 283 ids). About 2.6 bytes per row (a power of two).
BLOOM_FILTER_COLUMNS = frozenset({"event_id"})
BLOOM_FILTER_FPP = 1e-4


def leaf_paths(field: pa.Field) -> list[str]:
    """The Parquet column paths of ``field`` as pyarrow's writer names them (``isr.list.element``,
    ``details.key_value.key``): per-column writer properties name leaves, not top-level fields."""
    kind = field.type
    if pa.types.is_map(kind):
        return [f"{field.name}.key_value.key", f"{field.name}.key_value.value"]
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return [f"{field.name}.list.{p}" for p in leaf_paths(pa.field("element", kind.value_type))]
    if pa.types.is_struct(kind):
        return [f"{field.name}.{p}" for p in (path for child in kind for path in leaf_paths(child))]
    return [field.name]


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """The leaves of ``schema`` written with a dictionary (``use_dictionary``): all but :data:`NO_DICTIONARY`."""
    return [p for f in schema for p in leaf_paths(f) if p not in NO_DICTIONARY]


def hive_dir(columns: Sequence[str], values: Sequence[object]) -> str:
    """The Hive directories (``k=v/...``) Spark's partitioned write names for ``values``: None or
    "" as ``__HIVE_DEFAULT_PARTITION__``, a date as ISO, the escaped characters as ``%XX``."""
    segments = []
    for column, value in zip(columns, values, strict=True):
        text = "" if value is None else value.isoformat() if isinstance(value, date) else str(value)
        escaped = "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text) if text else HIVE_NULL
        segments.append(f"{column}={escaped}")
    return "/".join(segments)


class HiveParquetWriter:
    """Arrow rows written as :func:`write_delta_ready` would write them (snappy Parquet, microsecond
    UTC timestamps, the partition columns in the directories only), from a Python worker: one file
    per partition value and writer, written row group by row group. ``name`` makes the file names
    of this writer unique (``<name>.c000.snappy.parquet``); :meth:`close` returns every file written
    (its path relative to ``path``, its rows) for the driver to vouch for."""

    def __init__(self, path: str, schema: pa.Schema, partition_by: Sequence[str], name: str) -> None:
        self.fs, self.base = objstore.filesystem(path)
        self.partition_by = tuple(partition_by)
        self.file_schema = pa.schema([f for f in schema if f.name not in self.partition_by])
        self.name = name
        self._pending: dict[tuple, list[pa.RecordBatch]] = {}
        self._pending_bytes: dict[tuple, int] = {}
        self._writers: dict[tuple, tuple[str, pq.ParquetWriter]] = {}
        self._rows: dict[tuple, int] = {}
        self._dictionary = dictionary_columns(self.file_schema)

    def write(self, values: tuple, batch: pa.RecordBatch) -> None:
        """Rows of one partition (``values`` of the partition columns; ``batch`` in ``file_schema``)."""
        self._pending.setdefault(values, []).append(batch)
        self._rows[values] = self._rows.get(values, 0) + batch.num_rows
        self._pending_bytes[values] = self._pending_bytes.get(values, 0) + batch.nbytes
        if self._pending_bytes[values] >= ROW_GROUP_BYTES:
            self._flush(values)

    def _flush(self, values: tuple) -> None:
        batches = self._pending.pop(values, [])
        self._pending_bytes.pop(values, None)
        if not batches:
            return
        if values not in self._writers:
            relative = f"{hive_dir(self.partition_by, values)}/{self.name}.c000.snappy.parquet"
            where = f"{self.base}/{relative}"
            if isinstance(self.fs, pafs.LocalFileSystem):
                self.fs.create_dir(where.rsplit("/", 1)[0], recursive=True)
            writer = pq.ParquetWriter(where, self.file_schema, filesystem=self.fs, compression="snappy",
                                      coerce_timestamps="us", store_schema=False, use_dictionary=self._dictionary,
                                      bloom_filter_options=self._bloom_filters(batches))
            self._writers[values] = (relative, writer)
        self._writers[values][1].write_table(pa.Table.from_batches(batches, self.file_schema),
                                             row_group_size=sum(b.num_rows for b in batches))

    def _bloom_filters(self, first: list[pa.RecordBatch]) -> dict[str, dict[str, float]] | None:
        """Bloom filters of the columns in :data:`BLOOM_FILTER_COLUMNS`, sized for a row group as
        large as the file's first (row groups are cut by bytes: the next ones hold about as many rows)."""
        columns = BLOOM_FILTER_COLUMNS & set(self.file_schema.names)
        rows = max(sum(b.num_rows for b in first), 1024)
        return {c: {"ndv": rows, "fpp": BLOOM_FILTER_FPP} for c in sorted(columns)} or None

    def close(self) -> list[tuple[str, int]]:
        for values in list(self._pending):
            self._flush(values)
        written = []
        for values, (relative, writer) in self._writers.items():
            writer.close()
            written.append((relative, self._rows[values]))
        return written


def partition_parts(batch: pa.RecordBatch, partition_by: Sequence[str]) -> Iterator[tuple[tuple, pa.RecordBatch]]:
    """``batch``'s rows by partition: (the values of ``partition_by``, those rows) for each value met."""
    names = list(partition_by)
    if batch.num_rows == 0:
        return
    single = _single_key(batch, names)
    if single is not None:  # the common case (a batch of one file's events of one day): no grouping
        yield single, batch
        return
    keys = pa.Table.from_batches([batch]).select(names).group_by(names).aggregate([]).to_pylist()
    for key in keys:
        mask = None
        for name in names:
            column, value = batch.column(name), key[name]
            test = pc.is_null(column) if value is None else pc.equal(column, value)
            mask = test if mask is None else pc.and_(mask, test)
        yield tuple(key[name] for name in names), batch.filter(mask)


def _single_key(batch: pa.RecordBatch, names: Sequence[str]) -> tuple | None:
    """The values of ``names`` when every row of ``batch`` has the same (a null column: None), else None."""
    key = []
    for name in names:
        column = batch.column(name)
        if column.null_count == len(column):
            key.append(None)
            continue
        if column.null_count:
            return None
        bounds = pc.min_max(column)
        if bounds["min"] != bounds["max"]:
            return None
        key.append(bounds["min"].as_py())
    return tuple(key)


def remove_unlisted(path: str, listed: set[str]) -> None:
    """Delete the Parquet files under ``path`` whose relative path is not in ``listed``: what a
    failed or retried task attempt wrote before it died (a finished attempt lists its files)."""
    base = objstore.listed_form(path)
    for uri, _, _ in objstore.list_files(path):
        if uri.endswith(".parquet") and uri[len(base):].lstrip("/") not in listed:
            objstore.delete_file(uri)
