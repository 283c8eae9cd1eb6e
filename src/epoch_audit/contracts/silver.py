"""Silver table schemas the later layers rely on.

``TIMELINE_SCHEMA``: the columns and types of ``silver/partition_timeline`` as
``epoch_audit.silver.timelines.partition_timeline`` writes them (``TIMELINE_COLUMNS`` there, in that
order). Used where the table must exist without a build: test builders and empty stand-ins.
"""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

TIMELINE_SCHEMA = StructType(
    [
        StructField("cluster_id", StringType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("topic_id", StringType()),
        StructField("decision_seq", LongType()),
        StructField("source", StringType()),
        StructField("leader", IntegerType()),
        StructField("leader_epoch", IntegerType()),
        StructField("partition_epoch", IntegerType()),
        StructField("isr", ArrayType(IntegerType())),
        StructField("replicas", ArrayType(IntegerType())),
        StructField("event_time", TimestampType()),
        StructField("metadata_offset", LongType()),
        StructField("controller_id", IntegerType()),
        StructField("controller_epoch", IntegerType()),
        StructField("event_id", StringType()),
        StructField("commit_offset", LongType()),
        StructField("next_commit_offset", LongType()),
        StructField("is_leader_change", BooleanType()),
    ]
)
