"""``epoch_start_offset_divergence``: rules and must-NOT-flag cases (scenarios: ``cases_offsets.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.unit.invariants.cases_offsets import one, rows


@pytest.fixture
def results(offsets_results):
    return offsets_results


def test_div_checkpoint_differs_from_leader_line(results):
    r = one(results, "div_checkpoint", "epoch_start_offset_divergence")
    assert (r["broker_id"], r["leader_epoch"]) == (2, 5)
    assert r["evidence"][-1] == "div_checkpoint:1:state-change.log:1"
    # the checkpoint was read at collection time (no time of its own): the leader line's time, for daily charts
    assert r["event_time"] is not None


def test_div_retention_clamp_is_consistent(results):
    r = one(results, "div_retention_clamp", "epoch_start_offset_divergence")
    assert r["broker_id"] == 3


def test_div_majority_reference_and_tie(results):
    r = one(results, "div_majority_reference", "epoch_start_offset_divergence")
    assert (r["broker_id"], r["leader_epoch"]) == (4, 7)


def test_div_dump_first_batch_needs_visible_boundary(results):
    r = one(results, "div_dump_first_batch", "epoch_start_offset_divergence")
    assert (r["broker_id"], r["leader_epoch"]) == (2, 5)


def test_div_same_offset_different_epoch_below_hw(results):
    rs = rows(results, "div_same_offset_below_hw", "epoch_start_offset_divergence")
    assert [(r["partition"], r["broker_id"], r["leader_epoch"], r["expected_epoch"]) for r in rs] == [(0, 2, 5, 6)]


def test_the_reference_starts_are_kept_by_the_context_and_released_with_it(spark, offsets_results):
    """Both rules read the reference starts: kept once by the check context in a long run (two
    readers), and nothing of them stays cached once the stage releases the context."""
    from epoch_audit.gold.context import check_context
    from epoch_audit.gold.invariants import epoch_start_offset_divergence as esod
    from tests.builders.epoch_events import H, to_frames
    from tests.helpers import short_run_session
    from tests.unit.invariants.cases_offsets import SCENARIOS

    histories = []
    for name, build in SCENARIOS.items():
        histories.append(H(name))
        build(histories[-1])
    events, timeline = to_frames(spark, histories)
    persistent = spark.sparkContext._jsc.getPersistentRDDs
    cached_before = persistent().size()
    with short_run_session(spark, False):
        ctx = check_context(events, {"partition_timeline": timeline})
        views = list(ctx._persisted)  # the broker views the context built (not given) and cached
        found = esod.check(ctx).collect()
        expected = [r for rs in offsets_results[0].values() for r in rs
                    if r["invariant"] == "epoch_start_offset_divergence"]
        assert len(found) == len(expected) > 0
        (kept,) = [df for df in ctx._persisted if not any(df is v for v in views)]  # persisted once for both rules
        assert kept.storageLevel.useMemory and views and all(v.storageLevel.useMemory for v in views)
        ctx.release()
        # nothing the context kept stays cached (Spark's cleaner may meanwhile drop other tests' RDDs
        # whose frames were collected: the count can only fall)
        assert not any(df.storageLevel.useMemory for df in [kept, *views])
        assert persistent().size() <= cached_before
