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

# What each column of silver/partition_timeline holds (its Delta column comments, docs/tables.md).
TIMELINE_COLUMN_DESCRIPTIONS: dict[str, str] = {
    "cluster_id": "Cluster of the partition: the partition column.",
    "topic": "Topic.",
    "partition": "Partition number.",
    "topic_id": "KRaft topic id: a recreated topic gets a new id and restarts its epochs.",
    "decision_seq": "Causal order within the partition: the metadata offset (KRaft), the rank in controller "
                    "order (ZooKeeper, Redpanda).",
    "source": "kraft, zk-controller, zk-leader-and-isr or redpanda.",
    "leader": "Leader after the decision.",
    "leader_epoch": "Leader epoch after the decision.",
    "partition_epoch": "Partition epoch (KRaft) or zkVersion after the decision.",
    "isr": "In-sync replicas after the decision.",
    "replicas": "Assigned replicas after the decision.",
    "event_time": "Time of the decision's event.",
    "metadata_offset": "KRaft metadata-log offset of the record.",
    "controller_id": "Controller that decided.",
    "controller_epoch": "ZooKeeper: the deciding controller's epoch; KRaft: the batch's quorum epoch.",
    "event_id": "The decision's event in bronze/events.",
    "commit_offset": "KRaft: the commit point from which the decision is visible.",
    "next_commit_offset": "KRaft: where the state stops holding (the next decision, the topic's removal or a "
                          "hole in the dumped log); the state holds for [commit_offset, next_commit_offset).",
    "is_leader_change": "First decision, or its leader differs from the previous decision's.",
}
