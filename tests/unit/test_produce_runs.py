"""``silver.produce_runs``: runs of one epoch from the per-epoch aggregate where a log's epochs keep to
ranges of their own, batch by batch where they meet; both must give the runs of the batch-by-batch
reading over every log."""

from __future__ import annotations

import datetime as dt
import random

from pyspark.sql import functions as F

from epoch_audit.silver.produce_runs import PRODUCE_RUN_COLUMNS, produce_runs, runs_in_offset_order
from tests.helpers import short_run_session

SCHEMA = ("cluster_id string, event_type string, host_id int, broker_id int, topic string, partition int, "
          "offset long, last_offset long, leader_epoch int, event_id string, event_time timestamp")


def _log(rng: random.Random, meeting: bool) -> list[tuple[int, int]]:
    """(base offset, epoch) of a log's batches in offset order: epochs that grow with the offsets, or
    (``meeting``) an old epoch's batches among a newer one's, and a batch repeated at one offset."""
    epoch, offset, out = rng.randrange(0, 5), 0, []
    for _ in range(rng.randrange(1, 40)):
        if rng.random() < 0.15:
            epoch += rng.randrange(1, 3)
        out.append((offset, epoch))
        offset += rng.choice([1, 3, 10])
    if meeting and len(out) > 3:
        at = rng.randrange(1, len(out))
        out.insert(at, (out[at][0], out[at - 1][1] - 1))  # an older epoch at an offset the next epoch has
        out.append((out[-1][0] + 5, out[0][1]))  # the first epoch again, past the end
    return out


def test_runs_from_epoch_ranges_are_the_runs_in_offset_order(spark):
    rng = random.Random(5)
    start = dt.datetime(2024, 3, 5)
    rows, n = [], 0
    hosts = [1, 2, None]
    for host in hosts:
        for topic in ("a", "b"):
            for partition in (0, 1, 2):
                for offset, epoch in _log(rng, meeting=rng.random() < 0.3):
                    n += 1
                    last = None if rng.random() < 0.2 else offset + rng.randrange(0, 3)
                    rows.append(("c", "data_batch", host, host, topic, partition, offset, last,
                                 epoch, f"e{rng.randrange(10**6):06d}-{n}", start + dt.timedelta(seconds=rng.randrange(9999))))
    rows.append(("c", "request_fetch", 1, 1, "a", 0, 5, 5, 3, "not-a-batch", start))
    events = spark.createDataFrame(rows, SCHEMA)
    batches = (
        events.filter(F.col("event_type") == "data_batch")
        .withColumn("broker_id", F.coalesce(F.col("host_id"), F.col("broker_id")))
        .withColumn("last_offset", F.coalesce(F.col("last_offset"), F.col("offset")))
    )
    key = ["cluster_id", "broker_id", "topic", "partition"]
    expected = sorted(map(tuple, runs_in_offset_order(batches, key).collect()), key=str)
    with short_run_session(spark, False):  # a short run sorts every batch (its few) itself
        got = produce_runs(events)
        assert got.columns == PRODUCE_RUN_COLUMNS
        got_rows = sorted(map(tuple, got.collect()), key=str)
    assert len({r[:4] for r in expected}) == 18 and len(expected) > 60 and any(r[1] is None for r in expected)
    assert any(r[6] is not None and r[6] > r[5] for r in expected)  # a log whose epochs meet: a run of a lower epoch
    assert got_rows == expected
