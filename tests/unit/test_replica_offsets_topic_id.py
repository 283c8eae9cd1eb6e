"""silver.replica_offsets' topic id in force: one aggregate for a partition its host named by one
id, the as-of window for a partition named by several; both give what the window gives everywhere."""

from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

from epoch_audit.contracts.ordering import asof_last
from epoch_audit.silver.replica_offsets import _topic_id_asof

PLACE = ["cluster_id", "host_id", "topic", "partition"]
EVENTS = "cluster_id string, host_id int, topic string, partition int, event_type string, topic_id string, " \
         "event_time timestamp"
ROWS = "cluster_id string, host_id int, topic string, partition int, topic_id string, event_time timestamp, _rid string"


def _t(minute: int | None) -> dt.datetime | None:
    return None if minute is None else dt.datetime(2024, 3, 4, 1, minute)


def _window_asof(rows, events):
    """What the table computed before: the as-of window over every naming line."""
    named = events.filter(F.col("topic_id").isNotNull() & (F.col("event_type") != "log_deleted")).select(
        *PLACE, "event_time", F.col("topic_id").alias("src_tid"))
    asof = asof_last(rows.select(*PLACE, "event_time", "_rid"), named, PLACE, [F.col("event_time").asc_nulls_last()],
                     ["src_tid"]).select("_rid", F.col("src_tid").alias("asof_tid"))
    return rows.join(asof, "_rid", "left").withColumn("tid", F.coalesce(F.col("topic_id"), F.col("asof_tid")))


def test_topic_id_in_force_equals_the_window_as_of(spark):
    named = [
        # one id, named at 10 and 20, once without a time
        ("c", 1, "t", 0, "become_leader", "A", _t(10)),
        ("c", 1, "t", 0, "become_follower_skipped", "A", _t(20)),
        ("c", 1, "t", 0, "partition_metadata", "A", None),
        # a recreated topic: A then B (several ids: the window)
        ("c", 1, "t", 1, "become_leader", "A", _t(10)),
        ("c", 1, "t", 1, "become_follower", "B", _t(30)),
        # a host without an id (null host), one id, named only without a time
        ("c", None, "t", 2, "partition_metadata", "C", None),
        # a line of another type names no id in force
        ("c", 1, "t", 3, "log_deleted", "Z", _t(1)),
    ]
    events = spark.createDataFrame(named, EVENTS)
    probes = [
        ("c", 1, "t", 0, None, _t(5), "before the first naming line"),
        ("c", 1, "t", 0, None, _t(10), "at the first naming line"),
        ("c", 1, "t", 0, None, _t(50), "after"),
        ("c", 1, "t", 0, None, None, "untimed"),
        ("c", 1, "t", 0, "OWN", _t(5), "own id"),
        ("c", 1, "t", 1, None, _t(20), "recreated, before B"),
        ("c", 1, "t", 1, None, _t(30), "recreated, at B"),
        ("c", 1, "t", 1, None, None, "recreated, untimed"),
        ("c", None, "t", 2, None, _t(40), "null host, timed"),
        ("c", None, "t", 2, None, None, "null host, untimed"),
        ("c", 2, "t", 2, None, None, "another host: never named"),
        ("c", 1, "t", 3, None, _t(2), "only another type's id"),
    ]
    rows = spark.createDataFrame(probes, ROWS)
    got = {r["_rid"]: r["tid"] for r in _topic_id_asof(rows, events).collect()}
    want = {r["_rid"]: r["tid"] for r in _window_asof(rows, events).collect()}
    assert got == want
    assert got == {
        "before the first naming line": None, "at the first naming line": "A", "after": "A", "untimed": "A",
        "own id": "OWN", "recreated, before B": "A", "recreated, at B": "B", "recreated, untimed": "B",
        "null host, timed": None, "null host, untimed": "C", "another host: never named": None,
        "only another type's id": None,
    }
