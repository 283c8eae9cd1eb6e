"""Which acknowledged-violation entries (``epoch_audit.suppressions``) match which gold violations."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.suppressions import Suppression

ENTRY_SCHEMA = (
    "entry int, s_violation_id string, s_invariant string, s_cluster_id string, s_topic string, "
    "s_partition int, s_broker_id int"
)


def _either(column: str) -> F.Column:
    """The entry leaves ``column`` open, or names the violation's value."""
    return F.col(f"s_{column}").isNull() | (F.col(f"s_{column}") == F.col(column))


def suppression_matches(violations: DataFrame, entries: list[Suppression]) -> DataFrame:
    """``violations`` with ``entry``, a row per violation and entry that matches it: by id (the entry's
    id is the violation id or a prefix of it), or by invariant and the fields the entry names."""
    rows = [
        (s.entry, s.violation_id, s.invariant, s.cluster_id, s.topic, s.partition, s.broker_id) for s in entries
    ]
    table = violations.sparkSession.createDataFrame(rows, ENTRY_SCHEMA)
    by_id = F.col("s_violation_id").isNotNull() & F.col("violation_id").startswith(F.col("s_violation_id"))
    by_fields = (
        F.col("s_invariant").isNotNull()
        & (F.col("s_invariant") == F.col("invariant"))
        & _either("cluster_id")
        & _either("topic")
        & _either("partition")
        & _either("broker_id")
    )
    return violations.join(F.broadcast(table), by_id | by_fields).select(*violations.columns, "entry")
