"""The delta-rs engine, the embedded default. Spark executors write Parquet files straight into
the table directory; the driver only reads their footers and commits them as Delta add/remove
actions with ``deltalake``. Nothing is collected to the driver; files of a failed write are never
committed, so they stay invisible. The few-row unpartitioned tables (``upsert_rows``,
``overwrite_rows``, ``rows``) are written and read by the driver through Arrow instead, with the
same actions (:mod:`epoch_audit.lake.small_tables`).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    StringType,
    StructField,
    StructType,
)

from epoch_audit import objstore
from epoch_audit.lake import small_tables
from epoch_audit.lake.delta_rs_actions import (
    hive_values,
    nullable,
    partition_string,
    prunable_partition_columns,
    remove_actions,
)
from epoch_audit.lake.delta_rs_maintain import maintain_table
from epoch_audit.lake.delta_stats import file_stats
from epoch_audit.lake.descriptions import describe_delta_rs, described_schema, table_description_text
from epoch_audit.lake.engine_base import (
    StorageError,
    crash_point,
    dedupe_by_keys,
    replaced_trivially,
    source_partitions,
)
from epoch_audit.lake.evolve import add_columns_delta_rs
from epoch_audit.lake.file_uris import norm_uri as _norm_uri
from epoch_audit.lake.file_uris import norm_uri_col as _norm_uri_col
from epoch_audit.lake.file_uris import spark_file_uris as _spark_file_uris
from epoch_audit.lake.staging import read_staged, write_delta_ready
from epoch_audit.lake.tables import partition_columns_for


@dataclass
class DeltaRsStorage:
    """Delta through delta-rs: Spark writes Parquet, deltalake commits the files. On an object
    store (``s3://``...) Spark reaches the files through Hadoop's filesystem for that scheme, the
    driver lists, moves and reads footers through ``pyarrow.fs`` and deltalake commits with
    ``storage_options`` (where the store is; credentials stay in the environment)."""

    spark: SparkSession
    lake: str
    engine: str = "delta-rs"
    # tables whose description and comments this process has checked: one look per table
    described: set[str] = dataclass_field(default_factory=set, repr=False, compare=False)
    # per table, its version before this process's first commit to it (-1: it did not exist)
    versions_before: dict[str, int] = dataclass_field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.remote = objstore.is_remote(self.lake)
        self.options = objstore.delta_storage_options(self.lake)

    def path(self, table: str) -> str:
        return objstore.join(self.lake, table) if self.remote else str(Path(self.lake) / table)

    def exists(self, table: str) -> bool:
        if self.remote:
            from deltalake import DeltaTable

            return DeltaTable.is_deltatable(self.path(table), self.options)
        return (Path(self.path(table)) / "_delta_log").is_dir()

    def _table(self, table: str, version: int | None = None):
        from deltalake import DeltaTable

        if not self.exists(table):
            raise StorageError(f"table {table} does not exist in lake {self.lake}")
        return DeltaTable(self.path(table), version=version, storage_options=self.options)

    def spark_schema(self, table: str, version: int | None = None) -> StructType:
        from pyspark.sql.pandas.types import from_arrow_schema

        arrow_schema = pa.schema(self._table(table, version).schema().to_arrow())
        return from_arrow_schema(arrow_schema)

    def partition_columns(self, table: str) -> list[str]:
        return list(self._table(table).metadata().partition_columns) if self.exists(table) else []

    def columns(self, table: str) -> list[str]:
        """The table's columns, in order, from the Delta log's schema (no Spark read)."""
        return self.spark_schema(table).fieldNames()

    def add_columns(self, table: str, wanted: StructType) -> list[str]:
        """Add the columns of ``wanted`` the table lacks (:mod:`epoch_audit.lake.evolve`); the names added."""
        return add_columns_delta_rs(lambda: self._table(table), table, wanted)

    def _read_files(
        self, table: str, dt, files: list[tuple[str, dict]], keep_file: bool = False
    ) -> DataFrame:
        """A DataFrame over ``files`` ((uri, partition values)) of ``dt``, in the table's column order;
        plus ``_file``, the file each row was read from, when ``keep_file``.

        One Parquet scan per file layout (at most two), whatever the number of partitions (a plan
        of one union branch per partition grew with the history). Partition values live in the
        Delta log, not in the files. Files in the table's own Hive directories (``<table>/k=v/...``, where the
        writer puts them) get them from their paths: Spark's partition discovery under one base
        path, no per-row work. A table with files elsewhere (written before that: one directory per
        write) gets them by a broadcast join of each row's file to a small (file, partition values)
        table, the values cast to the table's types. The file is the scan's
        ``_metadata.file_path`` column, not ``input_file_name()``: that expression is
        nondeterministic, and a filter above it is never pushed into the scan (every check's
        ``event_type`` filter then read and joined every row of bronze).
        """
        schema = self.spark_schema(table, dt.version())
        part_cols = list(dt.metadata().partition_columns)
        out_cols = schema.fieldNames() + (["_file"] if keep_file else [])
        if not files:
            empty = self.spark.createDataFrame([], schema)
            return empty.withColumn("_file", F.lit(None).cast("string")) if keep_file else empty
        table_dir = self._dir(table)
        hive = [f for f in files if _in_hive_layout(_norm_uri(f[0]), table_dir, part_cols)] if (
            part_cols and HIVE_LAYOUT_READS) else []
        if hive:
            # Files under <table>/k=v/...: Spark reads the partition values from the paths.
            scan = self.spark.read.schema(schema).option("basePath", table_dir).parquet(*[u for u, _ in hive])
            if keep_file:
                scan = scan.withColumn("_file", F.col("_metadata.file_path"))
            native = scan.select(*out_cols)
            older = [f for f in files if f not in hive]
            if not older:
                return native
            # A table written before that layout: its older files go through the join (one union).
            return native.unionByName(self._joined_read(table, schema, part_cols, older, keep_file))
        return self._joined_read(table, schema, part_cols, files, keep_file)

    def _joined_read(
        self, table: str, schema: StructType, part_cols: list[str], files: list[tuple[str, dict]], keep_file: bool
    ) -> DataFrame:
        """``files`` read in one scan, their partition values joined on each row's file (see _read_files)."""
        out_cols = schema.fieldNames() + (["_file"] if keep_file else [])
        data_schema = StructType([f for f in schema.fields if f.name not in part_cols])
        scan = self.spark.read.schema(data_schema).parquet(*[u for u, _ in files])
        if not part_cols and not keep_file:
            return scan
        scan = scan.withColumn("_file", F.col("_metadata.file_path"))
        if not part_cols:
            return scan.select(*out_cols)

        def by_file(rows: list[tuple], name: str) -> DataFrame:
            """(key, hit, partition values cast to the table's types) for a broadcast join."""
            strings = StructType(
                [StructField(f"{name}_key", StringType(), False), StructField(f"{name}_hit", BooleanType(), False)]
                + [StructField(f"{name}{i}", StringType(), True) for i in range(len(part_cols))]
            )
            return F.broadcast(self.spark.createDataFrame(rows, strings).select(
                f"{name}_key", f"{name}_hit",
                *[F.col(f"{name}{i}").cast(schema[c].dataType).alias(f"{name}{i}") for i, c in enumerate(part_cols)],
            ))

        # Fast path: the row's file path as Spark gives it, against the forms Spark gives a local
        # file (no per-row string work). Exact fallback for a row it misses: its normalised path
        # (computed only for such rows) against each file's normalised path. A row of a file that
        # neither matches fails the query: never a silently dropped row or a null partition value.
        raw, norm = "__epoch_audit_raw", "__epoch_audit_norm"
        raw_rows, norm_rows = [], []
        for uri, values in files:
            parts = [values.get(c) for c in part_cols]
            path = _norm_uri(uri)
            raw_rows += [(form, True, *parts) for form in _spark_file_uris(path)]
            norm_rows.append((path, True, *parts))
        by_raw, by_norm = by_file(raw_rows, raw), by_file(norm_rows, norm)
        joined = scan.join(by_raw, scan["_file"] == by_raw[f"{raw}_key"], "left")
        missed = F.col(f"{raw}_hit").isNull()
        joined = joined.join(by_norm, F.when(missed, _norm_uri_col(F.col("_file"))) == by_norm[f"{norm}_key"], "left")
        unknown = F.raise_error(F.concat(F.lit(f"{table}: no Delta log entry for the file "), F.col("_file")))

        def part_col(i: int, c: str) -> Column:
            return (
                F.when(F.col(f"{raw}_hit"), F.col(f"{raw}{i}"))
                .when(F.col(f"{norm}_hit"), F.col(f"{norm}{i}"))
                .otherwise(unknown)
                .alias(c)
            )

        return joined.select(*[part_col(part_cols.index(c), c) if c in part_cols else F.col(c) for c in out_cols])

    def _files(self, dt) -> list[tuple[str, str, dict]]:
        """(uri, relative path, partition values) of every live file of ``dt``.

        The relative path is the file's name under the table directory, as an AddAction or
        RemoveAction takes it: the log's path is URL-encoded (``cluster_id=a%20b``) and delta-rs
        encodes the path of an action it commits, so an encoded path would name another file.
        """
        from urllib.parse import unquote

        part_cols = list(dt.metadata().partition_columns)
        actions = pa.table(dt.get_add_actions(flatten=True))
        paths = [unquote(str(p)) for p in actions.column("path").to_pylist()]
        values = [
            {c: partition_string(actions.column(f"partition.{c}")[i].as_py()) for c in part_cols}
            for i in range(len(paths))
        ] if part_cols else [{} for _ in paths]
        return list(zip(dt.file_uris(), paths, values, strict=True))

    def read(self, table: str, version: int | None = None) -> DataFrame:
        dt = self._table(table, version)
        return self._read_files(table, dt, [(u, v) for u, _, v in self._files(dt)])

    def read_written(self, table: str) -> DataFrame | None:
        """The rows of the live files this process's commits added to ``table``: every row it wrote
        (and, in a file it rewrote, the rows that file kept). None when it committed nothing to it."""
        before = self.versions_before.get(table)
        if before is None:
            return None
        dt = self._table(table)
        old = {rel for _, rel, _ in self._files(self._table(table, before))} if before >= 0 else set()
        return self._read_files(table, dt, [(u, v) for u, rel, v in self._files(dt) if rel not in old])

    def files_by_partition(self, table: str) -> dict[tuple[tuple[str, str | None], ...], list[str]] | None:
        """The live files of ``table`` per partition (its (column, value) pairs in the table's
        partition-column order, values as the Delta log holds them): their paths under the table, sorted."""
        dt = self._table(table)
        cols = list(dt.metadata().partition_columns)
        out: dict[tuple[tuple[str, str | None], ...], list[str]] = {}
        for _, rel, values in self._files(dt):
            out.setdefault(tuple((c, values.get(c)) for c in cols), []).append(rel)
        return {k: sorted(v) for k, v in out.items()}

    def partition_row_counts(self, table: str) -> dict[tuple[tuple[str, str | None], ...], int] | None:
        """Rows per partition of ``table`` (keyed as :meth:`files_by_partition`) from the Delta log's file
        statistics; None when a live file has none."""
        dt = self._table(table)
        cols = list(dt.metadata().partition_columns)
        actions = pa.table(dt.get_add_actions(flatten=True))
        if "num_records" not in actions.column_names or actions.column("num_records").null_count:
            return None
        values = [[partition_string(v) for v in actions.column(f"partition.{c}").to_pylist()] for c in cols]
        out: dict[tuple[tuple[str, str | None], ...], int] = {}
        for i, n in enumerate(actions.column("num_records").to_pylist()):
            key = tuple((c, values[j][i]) for j, c in enumerate(cols))
            out[key] = out.get(key, 0) + int(n)
        return out

    def read_where(self, table: str, column: str, values: list[str]) -> DataFrame:
        """Rows whose ``column`` is in ``values``; only those partitions' files when partitioned by it."""
        dt = self._table(table)
        wanted = {str(v) for v in values}
        files = self._files(dt)
        if column in dt.metadata().partition_columns:
            files = [f for f in files if str(f[2].get(column)) in wanted]
        return self._read_files(table, dt, [(u, v) for u, _, v in files]).where(F.col(column).isin(list(values)))

    def read_partitions(
        self, table: str, keep: Callable[[dict[str, str | None]], bool], rows: Column
    ) -> DataFrame:
        """Rows satisfying ``rows``, read only from the files whose partition values (strings, None
        for null, as the Delta log holds them) ``keep`` accepts. ``rows`` must imply ``keep``:
        it is what the other engine applies."""
        dt = self._table(table)
        files = [(u, v) for u, _, v in self._files(dt) if keep(v)]
        return self._read_files(table, dt, files).where(rows)

    def _dir(self, table: str) -> str:
        """The table's directory as Spark names its files: absolute, or the store's URI."""
        return self.path(table) if self.remote else os.path.abspath(self.path(table))

    # -- writing -------------------------------------------------------------------------------
    def _write_files(self, table: str, df: DataFrame, part_cols: list[str]) -> tuple[list, pa.Schema]:
        """Executors write Parquet into the table dir; return add actions and the Arrow schema."""
        write_dir = _write_dir_name()
        target = objstore.join(self._dir(table), write_dir)
        write_delta_ready(df, target, part_cols)  # one Spark write; an empty DataFrame: an empty file
        return self._adopt(table, target, write_dir, part_cols, df.schema)

    def _adopt(
        self, table: str, written: str, write_dir: str, part_cols: list[str], schema: StructType
    ) -> tuple[list, pa.Schema]:
        """The Parquet files Spark wrote under ``written`` (in the Hive layout of ``part_cols``, rows
        of ``schema``) as add actions of ``table``, and the Arrow schema to commit them with.
        Listing, moving and footers go through :mod:`epoch_audit.objstore` (a path or a store)."""
        from deltalake.transaction import AddAction
        from pyspark.sql.pandas.types import to_arrow_schema

        table_dir = self._dir(table)
        adds = []
        file_schema: pa.Schema | None = None
        written = objstore.listed_form(written)
        for found, size, mtime in objstore.list_files(written):
            if not found.endswith(".parquet"):
                objstore.delete_file(found)  # _SUCCESS and .crc side files are not table data
                continue
            segments = found[len(written):].strip("/").split("/")[:-1]
            values = hive_values(segments)
            if part_cols and HIVE_LAYOUT_WRITES:
                # Into the table's own Hive directories (<table>/k=v/.../<write>-<file>): every file
                # of the table then sits under one base path, and a read lets Spark take the
                # partition values from the directories (pruning, no join). Uncommitted until the
                # commit, so a crash leaves only files no Delta log names.
                full = objstore.join(table_dir, *segments, f"{write_dir}-{objstore.name(found)}")
            else:
                full = objstore.join(table_dir, write_dir, *segments, objstore.name(found))
            if full != found:
                objstore.move(found, full)
            rel = full[len(table_dir):].lstrip("/")
            with objstore.open_input(full) as fh:
                meta = pq.read_metadata(fh)
            if file_schema is None or file_schema.names == []:
                file_schema = meta.schema.to_arrow_schema()
            adds.append(
                AddAction(
                    path=rel,
                    size=size,
                    partition_values=values,
                    modification_time=int(mtime * 1000),
                    data_change=True,
                    stats=file_stats(meta),
                )
            )
        if part_cols:
            if HIVE_LAYOUT_WRITES:
                objstore.delete_dir(written)  # the emptied write directory
            # Partition columns are not in the files: the table schema is the DataFrame's.
            # An empty partitioned write leaves no file at all: nothing to add then.
            return adds, nullable(to_arrow_schema(schema))
        if file_schema is None:
            raise StorageError(f"Spark wrote no Parquet file for {table}")
        return adds, nullable(file_schema)

    def _commit(self, table: str, actions: list, schema: pa.Schema, mode: str, part_cols: list[str]) -> None:
        from deltalake import DeltaTable
        from deltalake.transaction import create_table_with_add_actions

        crash_point(f"commit:{table}")
        exists = self.exists(table)
        if table not in self.versions_before:
            self.versions_before[table] = self._table(table).version() if exists else -1
        if not exists:
            from deltalake import Schema

            create_table_with_add_actions(
                self.path(table), Schema.from_arrow(described_schema(table, schema)),
                [a for a in actions if hasattr(a, "stats")], mode="error", partition_by=part_cols or None,
                description=table_description_text(table), storage_options=self.options,
            )
        else:
            # an overwrite replaces the schema, comments included (else: a commit per column next run)
            DeltaTable(self.path(table), storage_options=self.options).create_write_transaction(
                actions, mode, described_schema(table, schema) if mode == "overwrite" else schema,
                partition_by=part_cols or None,
            )
        crash_point(f"committed:{table}")
        self.describe(table)

    def describe(self, table: str) -> int:
        """Give ``table`` its contract's description and column comments where it lacks them
        (:func:`epoch_audit.lake.descriptions.describe_delta_rs`); the commits made."""
        return describe_delta_rs(lambda: self._table(table), table, self.described)

    def _part_cols(self, table: str, df: DataFrame) -> list[str]:
        return self.partition_columns(table) if self.exists(table) else partition_columns_for(table, df.columns)

    def append(self, table: str, df: DataFrame) -> None:
        cols = self._part_cols(table, df)
        adds, schema = self._write_files(table, df, cols)
        self._commit(table, adds, schema, "append", cols)

    def overwrite(self, table: str, df: DataFrame) -> None:
        # Materialise the new files before the commit replaces the old ones: ``df`` may read the
        # table it overwrites.
        cols = self._part_cols(table, df)
        adds, schema = self._write_files(table, df, cols)
        self._commit(table, adds, schema, "overwrite", cols)

    def _rewrite(self, table: str, affected: list[tuple[str, str, dict]], kept: DataFrame, new: DataFrame) -> None:
        """One commit: remove the ``affected`` files, add ``kept`` + ``new`` rows."""
        cols = self.partition_columns(table)
        columns = [c for c in kept.columns if c != "_file"]
        rewritten = kept.select(*columns).unionByName(new.select(*columns), allowMissingColumns=False)
        adds, schema = self._write_files(table, rewritten, cols)
        self._commit(table, remove_actions(affected) + adds, schema, "append", cols)

    def upsert(self, table: str, df: DataFrame, keys: list[str], unique: bool = False) -> None:
        """Exact upsert: rewrite only the files holding a key of ``df``, in one commit.

        Partition pruning: on a partitioned table, only the files of the partitions ``df`` writes
        to (the distinct partition values of its rows) are searched for its keys, not the whole
        history. This assumes that a key can only live in the partition its source row maps to:
        the partition values of a row are a function of its key. In this lake they are: an event's
        ``cluster_id`` and ``event_date`` derive from the event itself (its file and its time), as
        does its ``event_id``; a violation's ``cluster_id`` is part of what its id hashes. (When the
        keys include the partition columns it holds by construction.) A key stored under other
        partition values than its new row's would not be replaced but duplicated.
        Pruning uses the partition columns whose type has one string form in the Delta log and in
        Python (strings, integers, booleans, dates) and the same type in ``df``; none: no pruning.
        """
        source = df if unique else dedupe_by_keys(df, keys)
        if not self.exists(table):
            self.append(table, source)
            return
        dt = self._table(table)
        files = self._files(dt)
        prune = prunable_partition_columns(self.spark_schema(table, dt.version()), source.schema,
                                            list(dt.metadata().partition_columns))
        if prune and files:
            wanted = {
                tuple(partition_string(v) for v in values) for values in source_partitions(source, prune)
            }
            files = [f for f in files if tuple(f[2].get(c) for c in prune) in wanted]
        if not files:
            self.append(table, source)
            return
        affected, kept = self._holding_keys(table, dt, files, source.select(*keys).distinct(), keys)
        if not affected:
            self.append(table, source)
            return
        self._rewrite(table, affected, kept, source)

    def _holding_keys(
        self, table: str, dt, files: list[tuple[str, str, dict]], source_keys: DataFrame, keys: list[str]
    ) -> tuple[list[tuple[str, str, dict]], DataFrame]:
        """Of ``files``, those holding a row with a key of ``source_keys`` (one Spark job: file names
        only), and those files' rows without such a key (``_file`` kept)."""
        current = self._read_files(table, dt, [(u, v) for u, _, v in files], keep_file=True)
        # eqNullSafe so that null key parts match, as in MERGE with <=>.
        cond = [current[k].eqNullSafe(source_keys[k]) for k in keys]
        raw = sorted(_raw_uris(current.join(source_keys, cond, "left_semi").select("_file").distinct()))
        hit = {_norm_uri(u) for u in raw}
        kept = current.where(F.col("_file").isin(raw)).join(source_keys, cond, "left_anti")
        return [f for f in files if _norm_uri(f[0]) in hit], kept

    def upsert_staged(
        self, table: str, staged: str, schema: StructType, part_cols: list[str], keys: list[str], unique: bool = False
    ) -> None:
        """:meth:`upsert` of the rows staged under ``staged`` (:func:`~epoch_audit.lake.staging.write_delta_ready`
        in the Hive layout of ``part_cols``): the staged files become the table's own as they are (the
        rows are not read or written again); existing files holding one of their keys are rewritten
        in the same commit. Rows not vouched unique, or another layout: a plain :meth:`upsert`."""
        source = read_staged(self.spark, staged, schema)
        if not unique or (self.exists(table) and self.partition_columns(table) != part_cols):
            self.upsert(table, source, keys, unique)
            return
        staged = objstore.listed_form(staged)
        staged_files = [u for u, _, _ in objstore.list_files(staged) if u.endswith(".parquet")]
        if not staged_files:
            self.upsert(table, source, keys, unique)  # nothing staged: the table made if it is missing
            return
        write_dir = _write_dir_name()
        removes, kept_adds = [], []
        if self.exists(table):
            dt = self._table(table)
            files = self._files(dt)
            prune = prunable_partition_columns(self.spark_schema(table, dt.version()), schema, part_cols)
            if prune:
                wanted = {tuple(hive_values(u[len(staged):].strip("/").split("/")[:-1]).get(c) for c in prune)
                          for u in staged_files}
                files = [f for f in files if tuple(f[2].get(c) for c in prune) in wanted]
            affected, kept = self._holding_keys(table, dt, files, source.select(*keys), keys) if files else ([], None)
            if affected:  # rows of an earlier, unfinished run: their files rewritten without these keys
                kept_adds, _ = self._write_files(table, kept.select(*schema.fieldNames()), part_cols)
                removes = remove_actions(affected)
        adds, arrow_schema = self._adopt(table, staged, write_dir, part_cols, schema)
        self._commit(table, removes + kept_adds + adds, arrow_schema, "append", part_cols)

    # -- small unpartitioned tables through Arrow, no Spark job (epoch_audit.lake.small_tables) -----
    def _small(self, table: str):
        """The table's log if it is an unpartitioned table (None: it does not exist), or False."""
        if not self.exists(table):
            return None
        dt = self._table(table)
        return False if dt.metadata().partition_columns else dt

    def rows(self, table: str, columns: list[str] | None = None) -> list[dict]:
        """Every row of a small table (``columns`` of it), read by the driver; [] if there is none."""
        dt = self._small(table)
        if dt is None:
            return []
        if dt is False:
            return [r.asDict() for r in self.read(table).select(*(columns or ["*"])).collect()]
        schema = pa.schema(dt.schema().to_arrow())
        wanted = pa.schema([schema.field(c) for c in columns]) if columns is not None else schema
        parts = [small_tables.read_file(uri, wanted) for uri, _, _ in self._files(dt)]
        return small_tables.python_rows(pa.concat_tables(parts)) if parts else []

    def upsert_rows(self, table: str, rows: list[tuple], schema: StructType, keys: list[str]) -> None:
        """:meth:`upsert` of ``createDataFrame(rows, schema)``: the same commit, written by pyarrow."""
        dt = self._small(table)
        stored = pa.schema(dt.schema().to_arrow()) if dt else None
        if dt is False or (stored is not None and not set(schema.fieldNames()) <= set(stored.names)):
            # partitioned, or rows with a column the table lacks: Spark's write decides
            self.upsert(table, self.spark.createDataFrame(rows, schema), keys)
            return
        new = small_tables.first_per_key(small_tables.arrow_rows(rows, schema), keys)
        if stored is None:
            self._commit_arrow(table, new, [], "append")
            return
        new = small_tables.conform(new, stored)
        wanted = set(small_tables.key_tuples(new, keys))
        affected, kept = [], []
        for uri, rel, _ in self._files(dt):
            old = small_tables.read_file(uri, stored)
            hit = [k in wanted for k in small_tables.key_tuples(old, keys)]
            if any(hit):
                affected.append(rel)
                kept.append(old.filter(pa.array([not h for h in hit])))
        from deltalake.transaction import RemoveAction

        now = int(time.time() * 1000)
        removes = [RemoveAction(path=rel, data_change=True, deletion_timestamp=now) for rel in affected]
        self._commit_arrow(table, pa.concat_tables([*kept, new]), removes, "append")

    def overwrite_rows(self, table: str, rows: list[tuple], schema: StructType) -> None:
        """:meth:`overwrite` with ``createDataFrame(rows, schema)``, written by pyarrow."""
        if self._small(table) is False:
            self.overwrite(table, self.spark.createDataFrame(rows, schema))
            return
        self._commit_arrow(table, small_tables.arrow_rows(rows, schema), [], "overwrite")

    def _commit_arrow(self, table: str, data: pa.Table, removes: list, mode: str) -> None:
        """``data`` as one new file of an unpartitioned table (``removes`` dropped), one commit."""
        from deltalake.transaction import AddAction

        rel = f"{_write_dir_name()}/part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        size, meta = small_tables.write_file(objstore.join(self._dir(table), rel), data)
        add = AddAction(path=rel, size=size, partition_values={}, modification_time=int(time.time() * 1000),
                        data_change=True, stats=file_stats(meta))
        self._commit(table, [*removes, add], nullable(data.schema), mode, [])

    def replace_where(self, table: str, df: DataFrame, column: str, values: list[str]) -> None:
        """Replace every row whose ``column`` is in ``values`` by ``df`` (one atomic commit)."""
        if replaced_trivially(self, table, df, values):
            return
        dt = self._table(table)
        files = self._files(dt)
        wanted = {str(v) for v in values}
        current = self._read_files(table, dt, [(u, v) for u, _, v in files], keep_file=True)
        if column in dt.metadata().partition_columns:
            affected = [f for f in files if str(f[2].get(column)) in wanted]
            kept = current.limit(0)
        else:
            hits = current.where(F.col(column).isin(list(values))).select("_file").distinct()
            raw = sorted(_raw_uris(hits))
            hit = {_norm_uri(u) for u in raw}
            affected = [f for f in files if _norm_uri(f[0]) in hit]
            kept = current.where(F.col("_file").isin(raw) & ~F.col(column).isin(list(values)))
        self._rewrite(table, affected, kept, df)

    def history(self, table: str) -> list[dict]:
        return self._table(table).history()

    def maintain(self, table: str, retention_hours: int) -> dict[str, int]:
        """Compact, vacuum and checkpoint ``table`` (:func:`epoch_audit.lake.delta_rs_maintain.maintain_table`)."""
        return maintain_table(self.path(table), self.options, retention_hours, table)


def _write_dir_name() -> str:
    """A new write's directory name under the table (its files' name prefix in the Hive layout)."""
    return f"part-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:12]}"


def _raw_uris(files_df: DataFrame) -> list[str]:
    return [r["_file"] for r in files_df.collect()]


# Partitioned tables: files are moved into the table's Hive directories, and files found there are
# read with their partition values from the paths. Tests turn these off to make and read the
# per-write layout of tables written before (read with the join).
HIVE_LAYOUT_WRITES = True
HIVE_LAYOUT_READS = True


def _in_hive_layout(path: str, table_dir: str, part_cols: list[str]) -> bool:
    """Whether ``path`` is ``<table_dir>/<c1>=.../<c2>=.../<file>`` for the partition columns in order
    (files written since the writer moves them there; older tables keep a per-write directory)."""
    parts = Path(os.path.relpath(path, table_dir)).parts
    return len(parts) == len(part_cols) + 1 and all(
        part.startswith(f"{c}=") for part, c in zip(parts, part_cols, strict=False)
    )
