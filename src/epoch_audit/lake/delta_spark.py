"""The delta-spark engine: used where the Delta JVM classes are in the session (Databricks, a
local session started with Delta's package, ``spark-submit --packages io.delta:delta-spark_4.1_2.13:...``).

Everything goes through Spark SQL and the DataFrame writer (``format("delta")``, ``MERGE INTO``,
``DESCRIBE DETAIL`` / ``HISTORY``), not through the ``delta`` Python package: the same calls work
in a classic session, under Spark Connect and on Databricks, and the wheel needs no extra package.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from dataclasses import field as dataclass_field

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from epoch_audit.lake.descriptions import commented, describe_delta_spark
from epoch_audit.lake.engine_base import (
    crash_point,
    dedupe_by_keys,
    replaced_trivially,
    source_partitions,
)
from epoch_audit.lake.evolve import add_columns_delta_spark
from epoch_audit.lake.staging import read_staged
from epoch_audit.lake.tables import partition_columns_for

# Settings a session needs for this engine (a local session sets them when it loads the package).
DELTA_SESSION_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def delta_session_conf() -> dict[str, str]:
    """What an embedded session needs besides the package to run this engine. Delta rebuilds a
    table's snapshot in ``snapshotPartitions`` tasks (50 by default): on a laptop's lake, a
    handful of tiny tasks is faster."""
    return {**DELTA_SESSION_CONF, "spark.databricks.delta.snapshotPartitions": "2"}


_view_ids = itertools.count()
_view_lock = threading.Lock()


def _quoted_path(path: str) -> str:
    """``delta.`<path>``` with the path's backticks doubled (a path is data, never SQL)."""
    return "delta.`" + path.replace("`", "``") + "`"


def _sql_literal(value: object) -> str:
    """A partition value as a SQL literal of its own type (strings escaped)."""
    import datetime as dt

    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP'{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE'{value.isoformat()}'"
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _merge_condition(keys: list[str], partition_columns: list[str], tuples: list[tuple]) -> str:
    """``t.k <=> s.k`` per key, and per partition column ``t.c IN (values of the source)`` (null
    matched too when among them): the simple shape Delta uses to read only those partitions."""
    terms = [f"t.`{k}` <=> s.`{k}`" for k in keys]
    for i, column in enumerate(partition_columns):
        values = sorted({t[i] for t in tuples if t[i] is not None})
        options = [f"t.`{column}` IN ({', '.join(_sql_literal(v) for v in values)})"] if values else []
        if any(t[i] is None for t in tuples):
            options.append(f"t.`{column}` IS NULL")
        terms.append("(" + (" OR ".join(options) or "false") + ")")
    return " AND ".join(terms)


@contextmanager
def _session_settings(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` for the statements inside only; the session's own values come back after."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _listing_parallelism(spark: SparkSession) -> int:
    """Tasks for a directory listing: the session's shuffle partitions (a cluster's are many)."""
    try:
        return max(1, int(spark.conf.get("spark.sql.shuffle.partitions", "200")))
    except ValueError:  # "auto" on Databricks
        return 200


@dataclass
class DeltaSparkStorage:
    """Delta through the delta-spark JVM package."""

    spark: SparkSession
    lake: str
    engine: str = "delta-spark"
    # tables whose description this process has checked (see DeltaRsStorage)
    described: set[str] = dataclass_field(default_factory=set, repr=False, compare=False)

    def path(self, table: str) -> str:
        return f"{self.lake.rstrip('/')}/{table}"

    def exists(self, table: str) -> bool:
        try:
            self.spark.sql(f"DESCRIBE DETAIL {_quoted_path(self.path(table))}").select("format").collect()
        except Exception as err:  # an AnalysisException, classic or through Spark Connect
            if any(sign in str(err) for sign in ("DELTA_MISSING_DELTA_TABLE", "PATH_NOT_FOUND", "not a Delta table")):
                return False
            raise
        return True

    def read(self, table: str, version: int | None = None) -> DataFrame:
        reader = self.spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return reader.load(self.path(table))

    def columns(self, table: str) -> list[str]:
        """The table's columns, in order (a lazy read: only the schema is resolved)."""
        return self.read(table).columns

    def add_columns(self, table: str, wanted: StructType) -> list[str]:
        """Add the columns of ``wanted`` the table lacks (:mod:`epoch_audit.lake.evolve`); the names added."""
        return add_columns_delta_spark(self.spark, _quoted_path(self.path(table)), table, self.columns(table), wanted)

    def partition_columns(self, table: str) -> list[str]:
        detail = self.spark.sql(f"DESCRIBE DETAIL {_quoted_path(self.path(table))}").select("partitionColumns")
        return list(detail.first()["partitionColumns"] or [])

    def _writer(self, table: str, df: DataFrame):
        # the columns' comments travel in the schema a new table (or an overwrite) takes
        writer = commented(table, df).write.format("delta")
        if not self.exists(table):
            cols = partition_columns_for(table, df.columns)
            if cols:
                writer = writer.partitionBy(*cols)
        return writer

    def append(self, table: str, df: DataFrame) -> None:
        crash_point(f"commit:{table}")
        self._writer(table, df).mode("append").option("mergeSchema", "true").save(self.path(table))
        crash_point(f"committed:{table}")
        self.describe(table)

    def overwrite(self, table: str, df: DataFrame) -> None:
        crash_point(f"commit:{table}")
        # the whole table, whatever the session's partitionOverwriteMode (the local profile's is dynamic)
        (
            self._writer(table, df).mode("overwrite").option("partitionOverwriteMode", "static")
            .option("overwriteSchema", "true").save(self.path(table))
        )
        crash_point(f"committed:{table}")
        self.describe(table)

    def read_where(self, table: str, column: str, values: list[str]) -> DataFrame:
        return self.read(table).where(F.col(column).isin(list(values)))

    def read_written(self, table: str) -> DataFrame | None:
        """None: which files this process's commits added is not tracked here (callers read the table)."""
        del table
        return None

    def partition_row_counts(self, table: str) -> dict[tuple[tuple[str, str | None], ...], int] | None:
        """None: not read from the log here (callers count the rows)."""
        del table
        return None

    def files_by_partition(self, table: str) -> dict[tuple[tuple[str, str | None], ...], list[str]] | None:
        """None: the files per partition are not listed here (callers read the partitions' rows)."""
        del table
        return None

    def read_partitions(
        self, table: str, keep: Callable[[dict[str, str | None]], bool], rows: Column
    ) -> DataFrame:
        """Rows satisfying ``rows`` (Spark prunes the partitions from it; ``keep`` is not needed)."""
        del keep
        return self.read(table).where(rows)

    def replace_where(self, table: str, df: DataFrame, column: str, values: list[str]) -> None:
        """Replace every row whose ``column`` is in ``values`` by ``df`` (one atomic commit)."""
        if replaced_trivially(self, table, df, values):
            return
        quoted = ", ".join(_sql_literal(v) for v in sorted(values))
        crash_point(f"commit:{table}")
        (
            df.write.format("delta").mode("overwrite").option("replaceWhere", f"`{column}` IN ({quoted})")
            .option("mergeSchema", "true").save(self.path(table))
        )
        crash_point(f"committed:{table}")
        self.describe(table)

    def upsert(self, table: str, df: DataFrame, keys: list[str], unique: bool = False) -> None:
        """``MERGE INTO`` on ``keys``. On a partitioned table whose partition columns are all in
        ``df``, the condition also bounds the target to the partition values of ``df`` (an IN list
        per column), so that Delta only reads those partitions' files: this assumes a key lives in
        the partition its source row maps to (see DeltaRsStorage.upsert)."""
        source = df if unique else dedupe_by_keys(df, keys)
        if not self.exists(table):
            self.overwrite(table, source)
            return
        bounded = self.partition_columns(table)
        if not all(c in source.columns for c in bounded):
            bounded = []
        condition = _merge_condition(keys, bounded, source_partitions(source, bounded) if bounded else [])
        with _view_lock:  # temp views are per session, and stages merge from several threads
            view = f"epoch_audit_merge_source_{next(_view_ids)}"
        source.createOrReplaceTempView(view)
        crash_point(f"commit:{table}")
        try:
            self.spark.sql(
                f"MERGE INTO {_quoted_path(self.path(table))} AS t USING {view} AS s ON {condition} "
                "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
            )
        finally:
            self.spark.catalog.dropTempView(view)
        crash_point(f"committed:{table}")
        self.describe(table)

    def upsert_staged(
        self, table: str, staged: str, schema: StructType, part_cols: list[str], keys: list[str], unique: bool = False
    ) -> None:
        """:meth:`upsert` of the rows staged under ``staged`` (see DeltaRsStorage.upsert_staged): Delta
        writes files of its own, so the staged rows are read once more."""
        self.upsert(table, read_staged(self.spark, staged, schema), keys, unique)

    # small tables (see DeltaRsStorage.rows): through Spark here
    def rows(self, table: str, columns: list[str] | None = None) -> list[dict]:
        if not self.exists(table):
            return []
        return [r.asDict() for r in self.read(table).select(*(columns or ["*"])).collect()]

    def upsert_rows(self, table: str, rows: list[tuple], schema: StructType, keys: list[str]) -> None:
        self.upsert(table, self.spark.createDataFrame(rows, schema), keys)

    def overwrite_rows(self, table: str, rows: list[tuple], schema: StructType) -> None:
        self.overwrite(table, self.spark.createDataFrame(rows, schema))

    def describe(self, table: str) -> int:
        """Give ``table`` its contract's description and column comments where it lacks them
        (:func:`epoch_audit.lake.descriptions.describe_delta_spark`); the commits made."""
        return describe_delta_spark(self.spark, _quoted_path(self.path(table)), table,
                                    lambda: self.read(table).schema, self.described)

    def history(self, table: str) -> list[dict]:
        rows = self.spark.sql(f"DESCRIBE HISTORY {_quoted_path(self.path(table))}").collect()
        return [r.asDict(recursive=True) for r in rows]

    def _file_count(self, table: str) -> int:
        return int(self.spark.sql(f"DESCRIBE DETAIL {_quoted_path(self.path(table))}").select("numFiles").first()[0])

    def maintain(self, table: str, retention_hours: int) -> dict[str, int]:
        """``OPTIMIZE`` (compaction, one commit) then ``VACUUM ... RETAIN n HOURS``: see
        :meth:`epoch_audit.lake.delta_rs.DeltaRsStorage.maintain`. Delta writes log checkpoints
        and drops expired log entries itself (every ten commits)."""
        name = _quoted_path(self.path(table))
        before = self._file_count(table)
        optimized = self.spark.sql(f"OPTIMIZE {name}").select("metrics.numFilesRemoved").first()
        vacuum = f"VACUUM {name} RETAIN {int(retention_hours)} HOURS"
        with _session_settings(self.spark, {
            # Delta refuses a retention under its minimum (a week) unless this check is off: the
            # lake lock is what makes a shorter one safe.
            "spark.databricks.delta.retentionDurationCheck.enabled": "false",
            # VACUUM lists the table's directories in this many tasks (10,000 by default): a
            # local session spent minutes scheduling empty tasks per table.
            "spark.sql.sources.parallelPartitionDiscovery.parallelism": str(_listing_parallelism(self.spark)),
            # VACUUM START / END commits: the end's metrics count the files deleted (the statement
            # itself returns only the table's path; a DRY RUN first would list everything twice).
            "spark.databricks.delta.vacuum.logging.enabled": "true",
        }):
            self.spark.sql(vacuum).collect()
        last = self.spark.sql(f"DESCRIBE HISTORY {name} LIMIT 1").select("operation", "operationMetrics").first()
        ended = last is not None and last["operation"] == "VACUUM END"
        metrics = (last["operationMetrics"] or {}) if ended else {}
        deleted = int(metrics.get("numDeletedFiles", 0))
        return {
            "files_before": before,
            "files_after": self._file_count(table),
            "files_compacted": int(optimized[0] or 0) if optimized is not None else 0,
            "files_deleted": int(deleted),
        }
