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

VIOLATION_KEY = ("invariant", "cluster_id", "topic", "partition", "broker_id", "leader_epoch", "expected_epoch")
