"""Lakehouse storage: one small interface, two Delta engines.

Tables are named by their place in the lake (``bronze/events``, ``gold/violations``...) and live
at ``<lake>/<name>``. Both engines write genuine Delta tables (a real ``_delta_log``):

- ``delta-spark`` — used when the Delta JVM classes are loadable in the session (Databricks,
  ``spark-submit --packages io.delta:delta-spark_2.13:...``): plain ``format("delta")`` writes and
  ``MERGE`` for upserts.
- ``delta-rs`` — the embedded default. Spark executors write Parquet files straight into the table
  directory; the driver only reads their footers and commits them as Delta add/remove actions with
  ``deltalake``. Nothing is collected to the driver; files of a failed write are never committed,
  so they stay invisible.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

DELTA_EXTENSION_CLASS = "io.delta.sql.DeltaSparkSessionExtension"


class StorageError(RuntimeError):
    """A storage problem worth one clear line to the user."""


class LakeStorage(Protocol):
    """What the jobs need from a table store."""

    engine: str
    lake: str

    def exists(self, table: str) -> bool: ...
    def read(self, table: str, version: int | None = None) -> DataFrame: ...
    def append(self, table: str, df: DataFrame) -> None: ...
    def overwrite(self, table: str, df: DataFrame) -> None: ...
    def upsert(self, table: str, df: DataFrame, keys: list[str]) -> None: ...
    def history(self, table: str) -> list[dict]: ...
    def path(self, table: str) -> str: ...


def delta_jvm_available(spark: SparkSession) -> bool:
    """True when the Delta Lake JVM classes can be loaded in this session."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        # Spark Connect (Databricks serverless, shared clusters): no py4j; Delta is built in there.
        return True
    try:
        jvm.java.lang.Class.forName(DELTA_EXTENSION_CLASS)
        return True
    except Exception:  # py4j raises Py4JJavaError for ClassNotFoundException
        return False


def select_engine(requested: str, delta_available: bool) -> str:
    """Pick the engine for a requested setting (auto | delta-spark | delta-rs)."""
    if requested == "auto":
        return "delta-spark" if delta_available else "delta-rs"
    if requested == "delta-spark" and not delta_available:
        raise StorageError(
            "storage.engine is delta-spark but the Delta JVM classes are not on the classpath "
            "(start Spark with --packages io.delta:delta-spark_2.13:4.0.0 or use engine delta-rs)"
        )
    if requested not in ("delta-spark", "delta-rs"):
        raise StorageError(f"unknown storage.engine {requested!r}: use auto, delta-spark or delta-rs")
    return requested


def open_storage(spark: SparkSession, lake: str, engine: str = "auto") -> LakeStorage:
    """The storage for ``lake`` on the engine ``engine`` resolves to."""
    chosen = select_engine(engine, delta_jvm_available(spark) if engine != "delta-rs" else False)
    log.info("lake %s on engine %s", lake, chosen)
    if chosen == "delta-spark":
        return DeltaSparkStorage(spark, lake)
    return DeltaRsStorage(spark, lake)


def _dedupe_by_keys(df: DataFrame, keys: list[str]) -> DataFrame:
    return df.dropDuplicates(keys)


@dataclass
class DeltaSparkStorage:
    """Delta through the delta-spark JVM package."""

    spark: SparkSession
    lake: str
    engine: str = "delta-spark"

    def path(self, table: str) -> str:
        return f"{self.lake.rstrip('/')}/{table}"

    def exists(self, table: str) -> bool:
        from delta.tables import DeltaTable

        return DeltaTable.isDeltaTable(self.spark, self.path(table))

    def read(self, table: str, version: int | None = None) -> DataFrame:
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(self.path(table))

    def append(self, table: str, df: DataFrame) -> None:
        df.write.format("delta").mode("append").option("mergeSchema", "true").save(self.path(table))

    def overwrite(self, table: str, df: DataFrame) -> None:
        df.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(self.path(table))

    def upsert(self, table: str, df: DataFrame, keys: list[str]) -> None:
        from delta.tables import DeltaTable

        source = _dedupe_by_keys(df, keys)
        if not self.exists(table):
            self.overwrite(table, source)
            return
        cond = " AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys)
        (
            DeltaTable.forPath(self.spark, self.path(table))
            .alias("t")
            .merge(source.alias("s"), cond)
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )

    def history(self, table: str) -> list[dict]:
        from delta.tables import DeltaTable

        rows = DeltaTable.forPath(self.spark, self.path(table)).history().collect()
        return [r.asDict(recursive=True) for r in rows]


@dataclass
class DeltaRsStorage:
    """Delta through delta-rs: Spark writes Parquet, deltalake commits the files."""

    spark: SparkSession
    lake: str
    engine: str = "delta-rs"

    def path(self, table: str) -> str:
        return str(Path(self.lake) / table)

    def exists(self, table: str) -> bool:
        return (Path(self.path(table)) / "_delta_log").is_dir()

    def _table(self, table: str, version: int | None = None):
        from deltalake import DeltaTable

        if not self.exists(table):
            raise StorageError(f"table {table} does not exist in lake {self.lake}")
        return DeltaTable(self.path(table), version=version)

    def spark_schema(self, table: str, version: int | None = None) -> StructType:
        from pyspark.sql.pandas.types import from_arrow_schema

        arrow_schema = pa.schema(self._table(table, version).schema().to_arrow())
        return from_arrow_schema(arrow_schema)

    def read(self, table: str, version: int | None = None) -> DataFrame:
        dt = self._table(table, version)
        schema = self.spark_schema(table, version)
        uris = dt.file_uris()
        if not uris:
            return self.spark.createDataFrame([], schema)
        return self.spark.read.schema(schema).parquet(*uris)

    # -- writing -------------------------------------------------------------------------------
    def _write_files(self, table: str, df: DataFrame) -> tuple[list, pa.Schema]:
        """Executors write Parquet into the table dir; return add actions and the Arrow schema."""
        from deltalake.transaction import AddAction

        table_dir = Path(self.path(table))
        write_dir = f"part-{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:12]}"
        target = table_dir / write_dir
        # Delta (and delta-rs) read microsecond timestamps; Spark's default INT96 would need the
        # timestampNanos reader feature. Set per session: spark-submit sessions keep their defaults.
        self.spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        # One Spark write; Spark creates an empty schema-carrying file for an empty DataFrame.
        df.write.mode("error").option("compression", "snappy").parquet(str(target))
        adds = []
        schema: pa.Schema | None = None
        for name in sorted(os.listdir(target)):
            full = target / name
            if not name.endswith(".parquet"):
                full.unlink()  # _SUCCESS and .crc side files are not table data
                continue
            meta = pq.read_metadata(full)
            if schema is None:
                schema = meta.schema.to_arrow_schema()
            stat = full.stat()
            adds.append(
                AddAction(
                    path=f"{write_dir}/{name}",
                    size=stat.st_size,
                    partition_values={},
                    modification_time=int(stat.st_mtime * 1000),
                    data_change=True,
                    stats=json.dumps({"numRecords": meta.num_rows}),
                )
            )
        if schema is None:
            raise StorageError(f"Spark wrote no Parquet file for {table}")
        return adds, _nullable(schema)

    def _commit(self, table: str, actions: list, schema: pa.Schema, mode: str) -> None:
        from deltalake import DeltaTable
        from deltalake.transaction import create_table_with_add_actions

        if not self.exists(table):
            from deltalake import Schema

            create_table_with_add_actions(
                self.path(table), Schema.from_arrow(schema), [a for a in actions if hasattr(a, "stats")],
                mode="error",
            )
            return
        DeltaTable(self.path(table)).create_write_transaction(actions, mode, schema)

    def append(self, table: str, df: DataFrame) -> None:
        adds, schema = self._write_files(table, df)
        self._commit(table, adds, schema, "append")

    def overwrite(self, table: str, df: DataFrame) -> None:
        # Materialise the new files before the commit replaces the old ones: ``df`` may read the
        # table it overwrites.
        adds, schema = self._write_files(table, df)
        self._commit(table, adds, schema, "overwrite")

    def upsert(self, table: str, df: DataFrame, keys: list[str]) -> None:
        """Exact upsert: rewrite only the files holding a key of ``df``, in one commit."""
        from deltalake.transaction import RemoveAction

        source = _dedupe_by_keys(df, keys)
        if not self.exists(table):
            self.append(table, source)
            return
        dt = self._table(table)
        current = self.read(table).withColumn("_file", F.input_file_name())
        source_keys = source.select(*keys).distinct()
        # eqNullSafe so that null key parts match, as in MERGE with <=>.
        cond = [current[k].eqNullSafe(source_keys[k]) for k in keys]
        affected_df = current.join(source_keys, cond, "left_semi").select("_file").distinct()
        affected = sorted(r["_file"] for r in affected_df.collect())  # file names only: small
        if not affected:
            self.append(table, source)
            return
        kept = (
            current.where(F.col("_file").isin(affected))
            .join(source_keys, [current[k].eqNullSafe(source_keys[k]) for k in keys], "left_anti")
            .drop("_file")
        )
        columns = [c for c in current.columns if c != "_file"]
        rewritten = kept.select(*columns).unionByName(source.select(*columns), allowMissingColumns=False)
        adds, schema = self._write_files(table, rewritten)
        by_uri = {_norm_uri(u): p for u, p in zip(dt.file_uris(), _relative_paths(dt), strict=True)}
        now = int(time.time() * 1000)
        removes = [
            RemoveAction(path=by_uri[_norm_uri(uri)], data_change=True, deletion_timestamp=now)
            for uri in affected
        ]
        self._commit(table, removes + adds, schema, "append")

    def history(self, table: str) -> list[dict]:
        return self._table(table).history()


def _relative_paths(dt) -> list[str]:
    actions = pa.table(dt.get_add_actions(flatten=True))
    return [str(p) for p in actions.column("path").to_pylist()]


def _norm_uri(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    return os.path.normpath(unquote(parsed.path if parsed.scheme else uri))


def _nullable(schema: pa.Schema) -> pa.Schema:
    """Delta table schemas are kept all-nullable so later writes never clash on nullability."""
    return pa.schema([f.with_nullable(True) for f in schema]).remove_metadata()
