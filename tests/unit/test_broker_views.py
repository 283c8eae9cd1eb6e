"""Silver broker views: Spark builders vs the reference model, plus the rules each view encodes."""

from __future__ import annotations

import pytest
from epoch_audit_tools.reference_model import broker_views as model

from epoch_audit.silver.broker_leader_epochs import broker_leader_epochs
from epoch_audit.silver.produce_runs import produce_runs
from epoch_audit.silver.replica_offsets import replica_offsets
from epoch_audit.silver.tables import SILVER_TABLES, silver_builds
from tests.builders.epoch_events import H, to_frames


def _history() -> H:
    h = H("views")
    # Redpanda multi-shard file: line order wins over the (earlier) timestamp of the next line.
    h.ev("rp_became_leader", 1, 10_000, leader_epoch=5)
    h.ev("rp_step_down", 1, 10_001, details={"term": "5"})
    h.ev("rp_new_term", 1, 9_000, leader_epoch=6, current_leader_epoch=5)
    h.ev("become_leader", 2, 0, leader_epoch=3, offset=40, high_watermark=35, topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    h.ev("request_leader_and_isr", 2, 5, leader_epoch=2, error="STALE_CONTROLLER_EPOCH", log_kind="request")
    h.ev("log_deleted", 2, 10)
    h.ev("become_follower", 2, 20, leader_epoch=0, leader=1)
    for o, n, e in ((0, 9, 2), (10, 19, 2), (20, 29, 3), (30, 39, 3), (40, 49, 2)):
        h.ev("data_batch", 3, 0, offset=o, last_offset=n, leader_epoch=e)
    h.ev("checkpoint_leader_epoch", 3, 1_000, leader_epoch=2, offset=0, file="lec.1")
    h.ev("checkpoint_leader_epoch", 3, 2_000, leader_epoch=2, offset=5, file="lec.2")
    h.ev("checkpoint_leader_epoch", 3, 2_000, leader_epoch=3, offset=20, file="lec.2")
    h.ev("checkpoint_replication_offset", 3, 2_000, high_watermark=44, file="roc.2")
    h.ev("checkpoint_replication_offset", 3, 1_000, high_watermark=40, file="roc.1")
    return h


@pytest.fixture(scope="module")
def views(spark):
    h = _history()
    events, _ = to_frames(spark, [h])
    return h, events


def _cmp(rows, cols):
    return sorted((tuple(r[c] for c in cols) for r in rows), key=str)


def test_broker_leader_epochs_own_terms_and_order(views):
    h, events = views
    cols = ["broker_id", "row_kind", "leader_epoch", "seq", "gen", "tid", "is_claim", "event_id"]
    got = [r.asDict() for r in broker_leader_epochs(events).collect()]
    assert _cmp(got, cols) == _cmp(model.broker_leader_epochs(h.events), cols)
    b1 = sorted((r for r in got if r["broker_id"] == 1), key=lambda r: r["seq"])
    assert [r["leader_epoch"] for r in b1] == [5, 6]  # step-down not held; file order kept
    b2 = sorted((r for r in got if r["broker_id"] == 2), key=lambda r: r["seq"])
    assert [(r["row_kind"], r["leader_epoch"], r["gen"]) for r in b2] == [
        ("epoch", 3, 0),
        ("series_break", None, 1),
        ("epoch", 0, 1),
    ]  # the refused LeaderAndIsr is not held
    assert b2[0]["tid"] == "AAAAAAAAAAAAAAAAAAAAAA" and b2[2]["tid"] is None


def test_produce_runs_compact_batches(views):
    h, events = views
    cols = ["broker_id", "run_no", "leader_epoch", "prev_run_epoch", "first_offset", "last_offset", "batch_count"]
    got = [r.asDict() for r in produce_runs(events).collect()]
    assert _cmp(got, cols) == _cmp(model.produce_runs(h.events), cols)
    assert sorted((r["leader_epoch"], r["first_offset"], r["last_offset"], r["batch_count"]) for r in got) == [
        (2, 0, 19, 2),
        (2, 40, 49, 1),
        (3, 20, 39, 2),
    ]


def test_replica_offsets_series(views):
    h, events = views
    cols = ["broker_id", "series", "leader_epoch", "value", "series_seq", "is_latest_copy", "is_earliest_entry", "tid"]
    got = [r.asDict() for r in replica_offsets(events).collect()]
    assert _cmp(got, cols) == _cmp(model.replica_offsets(h.events), cols)
    by = {(r["series"], r["leader_epoch"], r["value"]): r for r in got if r["broker_id"] == 3}
    # newest leader-epoch-checkpoint copy only; its smallest epoch is the earliest entry
    assert by[("epoch_start_checkpoint", 2, 5)]["is_latest_copy"]
    assert by[("epoch_start_checkpoint", 2, 5)]["is_earliest_entry"]
    assert not by[("epoch_start_checkpoint", 2, 0)]["is_latest_copy"]
    # first dumped batch of epoch 3 (boundary visible after epoch 2); epoch 2 has no visible start
    assert ("epoch_start_dump", 3, 20) in by and not any(k[0] == "epoch_start_dump" and k[1] == 2 for k in by)
    # checkpoint copies ordered by suffix time, not file order of arrival
    hw = sorted((r for r in got if r["series"] == "hw_checkpoint"), key=lambda r: r["series_seq"])
    assert [r["value"] for r in hw] == [40, 44]


def test_silver_builds_compute_produce_runs_once(views):
    """The stage's builds equal the tables' own builders, and replica_offsets reads the one reused
    produce_runs frame instead of deriving its runs again."""
    h, events = views
    reused = []

    def cached_reads(df):
        return df._jdf.queryExecution().optimizedPlan().toString().count("InMemoryRelation")

    # before anything is cached (Spark's cache manager then substitutes the cached runs everywhere)
    reads_alone = cached_reads(replica_offsets(events))

    def reuse(df):
        reused.append(df.cache())
        return reused[-1]

    builds = silver_builds(events, None, reuse)
    assert sorted(builds) == sorted(SILVER_TABLES)
    try:
        for name, build in builds.items():
            got = sorted(map(tuple, build().collect()), key=str)
            assert got == sorted(map(tuple, SILVER_TABLES[name](events).collect()), key=str), name
        assert cached_reads(builds["replica_offsets"]()) > reads_alone
        assert builds["produce_runs"]() is reused[0]
    finally:
        for df in reused:
            df.unpersist()
