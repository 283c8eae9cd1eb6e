"""The delta-spark engine: used when the Delta JVM classes are loadable in the session
(Databricks, ``spark-submit --packages io.delta:delta-spark_2.13:...``): plain ``format("delta")``
writes and ``MERGE`` for upserts."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from epoch_audit.lake.engine_base import (
    crash_point,
    dedupe_by_keys,
    partition_condition,
    replaced_trivially,
    source_partitions,
)
from epoch_audit.lake.tables import partition_columns_for


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

    def columns(self, table: str) -> list[str]:
        """The table's columns, in order (a lazy read: only the schema is resolved)."""
        return self.read(table).columns

    def _writer(self, table: str, df: DataFrame):
        writer = df.write.format("delta")
        if not self.exists(table):
            cols = partition_columns_for(table, df.columns)
            if cols:
                writer = writer.partitionBy(*cols)
        return writer

    def append(self, table: str, df: DataFrame) -> None:
        crash_point(f"commit:{table}")
        self._writer(table, df).mode("append").option("mergeSchema", "true").save(self.path(table))
        crash_point(f"committed:{table}")

    def overwrite(self, table: str, df: DataFrame) -> None:
        crash_point(f"commit:{table}")
        self._writer(table, df).mode("overwrite").option("overwriteSchema", "true").save(self.path(table))
        crash_point(f"committed:{table}")

    def read_where(self, table: str, column: str, values: list[str]) -> DataFrame:
        return self.read(table).where(F.col(column).isin(list(values)))

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
        quoted = ", ".join("'" + str(v).replace("'", "''") + "'" for v in sorted(values))
        crash_point(f"commit:{table}")
        (
            df.write.format("delta").mode("overwrite").option("replaceWhere", f"`{column}` IN ({quoted})")
            .save(self.path(table))
        )
        crash_point(f"committed:{table}")

    def upsert(self, table: str, df: DataFrame, keys: list[str]) -> None:
        """MERGE on ``keys``. On a partitioned table whose partition columns are all in ``df``, the
        condition also bounds the target to the partition values of ``df`` (an IN list per column),
        so that Delta only reads those partitions' files: this assumes a key lives in the partition
        its source row maps to (see DeltaRsStorage.upsert)."""
        from delta.tables import DeltaTable

        source = dedupe_by_keys(df, keys)
        if not self.exists(table):
            self.overwrite(table, source)
            return
        target = DeltaTable.forPath(self.spark, self.path(table))
        cond = F.expr(" AND ".join(f"t.`{k}` <=> s.`{k}`" for k in keys))
        part_cols = list(target.detail().first()["partitionColumns"] or [])
        if part_cols and all(c in source.columns for c in part_cols):
            cond = cond & partition_condition(part_cols, source_partitions(source, part_cols), "t")
        crash_point(f"commit:{table}")
        (
            target
            .alias("t")
            .merge(source.alias("s"), cond)
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
        crash_point(f"committed:{table}")

    def history(self, table: str) -> list[dict]:
        from delta.tables import DeltaTable

        rows = DeltaTable.forPath(self.spark, self.path(table)).history().collect()
        return [r.asDict(recursive=True) for r in rows]
