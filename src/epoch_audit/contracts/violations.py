"""The gold output contract: one row per violation (spec ``invariants.md``, "Output contract").

Every check returns rows with exactly ``CHECK_COLUMNS`` (types of ``CHECK_SCHEMA``); the check
stage adds ``run_id`` and ``violation_id``. ``VIOLATION_KEY`` is what makes two rows the same
violation across runs (its evidence may grow as later logs arrive).
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SEVERITIES = ("error", "warning")
CONFIDENCES = ("confirmed", "suspected")

CHECK_SCHEMA = StructType(
    [
        StructField("invariant", StringType(), False),
        StructField("severity", StringType(), False),
        StructField("confidence", StringType(), False),
        StructField("cluster_id", StringType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("broker_id", IntegerType(), True),
        StructField("leader_epoch", IntegerType(), True),
        StructField("expected_epoch", IntegerType(), True),
        StructField("event_time", TimestampType(), True),
        StructField("evidence", ArrayType(StringType()), False),
        StructField("explanation", StringType(), False),
    ]
)
CHECK_COLUMNS = [f.name for f in CHECK_SCHEMA.fields]

# When a violation was first and last proved: stamped by the check stage after CHECK_COLUMNS (never
# part of a violation's id, key or the reference model's comparison). A lake written before them
# gets them as new columns, filled once from gold/run_summary (epoch_audit.stages.seen).
SEEN_SCHEMA = StructType(
    [
        StructField("first_seen_at", TimestampType(), True),
        StructField("last_seen_at", TimestampType(), True),
    ]
)
SEEN_COLUMNS = [f.name for f in SEEN_SCHEMA.fields]

# What each column of gold/violations holds (its Delta column comments, docs/tables.md).
VIOLATION_COLUMN_DESCRIPTIONS: dict[str, str] = {
    "run_id": "The run that first reported the violation (kept while that run completed).",
    "violation_id": "Stable id of the violation: sha256 of its key and evidence.",
    "invariant": "Id of the broken invariant (docs/invariants.md).",
    "severity": "error or warning.",
    "confidence": "confirmed, or suspected (cross-host times closer than checks.max_clock_skew_ms).",
    "cluster_id": "Cluster the violation is in.",
    "topic": "Topic of the partition concerned (null for broker-wide violations).",
    "partition": "Partition concerned.",
    "broker_id": "Broker that broke the invariant (or whose state did).",
    "leader_epoch": "The leader epoch at issue.",
    "expected_epoch": "The epoch the broker should have held or required.",
    "event_time": "Time of the offending event (the evidence's own time).",
    "evidence": "Event ids in bronze/events that prove the violation.",
    "explanation": "One sentence: what happened, with the evidence's ids.",
    "first_seen_at": "Start (UTC) of the first run whose check wrote the violation to gold, completed or "
                     "killed; kept when later logs change its evidence, and when it is reported again "
                     "(after a killed run, an expired suppression). Rows older than the column: the start "
                     "of the run named by run_id (null if that run has no gold/run_summary row).",
    "last_seen_at": "Start (UTC) of the latest run that re-checked the violation's cluster and still "
                    "found it (a run whose inputs did not grow for the cluster does not re-check it). "
                    "Rows older than the column: the start of the run that last checked the cluster "
                    "(state/gold_checked), else null.",
}

VIOLATION_KEY = ("invariant", "cluster_id", "topic", "partition", "broker_id", "leader_epoch", "expected_epoch")
