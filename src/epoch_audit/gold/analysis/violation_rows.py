"""Projecting a check's findings to the gold output contract (``CHECK_SCHEMA``)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from epoch_audit.contracts.violations import CHECK_COLUMNS, CHECK_SCHEMA

PARTITION_KEY = ["cluster_id", "topic", "partition"]


def micros(time: Column) -> Column:
    return F.unix_micros(time)


def registry_severity() -> Column:
    """The severity of a row whose check does not override it: the runner puts the registry's."""
    return F.lit(None).cast("string")


def to_check(
    df: DataFrame,
    invariant: str,
    confidence: Column | str,
    broker_id: Column,
    leader_epoch: Column,
    expected_epoch: Column,
    event_time: Column,
    evidence: Column,
    explanation: Column,
    severity: Column | None = None,
) -> DataFrame:
    """Project to CHECK_SCHEMA (types and order); evidence drops null ids. ``severity``: a
    data-dependent override of the registry's (null where the registry's holds)."""
    sev = registry_severity() if severity is None else severity
    conf = F.lit(confidence) if isinstance(confidence, str) else confidence
    out = df.select(
        F.lit(invariant).alias("invariant"),
        sev.alias("severity"),
        conf.alias("confidence"),
        F.col("cluster_id").cast("string").alias("cluster_id"),
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        broker_id.cast("int").alias("broker_id"),
        leader_epoch.cast("int").alias("leader_epoch"),
        expected_epoch.cast("int").alias("expected_epoch"),
        event_time.cast("timestamp").alias("event_time"),
        F.filter(evidence, lambda x: x.isNotNull()).alias("evidence"),
        F.coalesce(explanation, F.lit(invariant)).alias("explanation"),
    )
    return out.select(*[F.col(f.name).cast(f.dataType) for f in CHECK_SCHEMA.fields]).select(*CHECK_COLUMNS)
