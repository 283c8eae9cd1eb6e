"""Projecting a check's findings to the gold output contract (``CHECK_SCHEMA``)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, WindowSpec
from pyspark.sql import functions as F

from epoch_audit.contracts.violations import CHECK_COLUMNS, CHECK_SCHEMA

PARTITION_KEY = ["cluster_id", "topic", "partition"]


def backward_steps(rows: DataFrame, in_order: WindowSpec, value: str, previous: dict[str, str]) -> DataFrame:
    """The rows of ``rows`` whose ``value`` is below the previous row's in ``in_order``, each with the
    previous row's columns: ``p_<name>`` for every {name: column} of ``previous`` (which names
    ``value`` and ``tid``). A step between two topic incarnations (both topic ids known, different:
    a deleted and recreated topic restarts its epochs and offsets) is none."""
    prev = rows.withColumns({f"p_{name}": F.lag(column).over(in_order) for name, column in previous.items()})
    p_value = F.col(f"p_{next(n for n, c in previous.items() if c == value)}")
    other_topic = F.col("p_tid").isNotNull() & F.col("tid").isNotNull() & (F.col("p_tid") != F.col("tid"))
    return prev.filter(p_value.isNotNull() & (F.col(value) < p_value) & ~other_topic)


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
