"""``fenced_replica_in_isr``: rules and must-NOT-flag cases (scenarios: ``cases_isr.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.unit.invariants.cases_isr import _id, _of


@pytest.fixture
def results(isr_results):
    return isr_results


def test_fenced_replica_in_isr_across_batches(results):
    (v,) = _of(results, "fenced_separate_batch")
    assert (v["invariant"], v["severity"], v["broker_id"], v["topic"], v["partition"], v["leader_epoch"]) == (
        "fenced_replica_in_isr", "error", 3, "orders", 0, 0)
    assert sorted(v["evidence"]) == sorted([
        _id("fenced_separate_batch", "md_partition"),
        _id("fenced_separate_batch", "md_broker_registration_change")])
    assert "broker 3" in v["explanation"] and "fenced" in v["explanation"]


def test_batch_that_fences_and_removes_is_clean(results):
    assert _of(results, "fence_and_remove_same_batch") == []


def test_regression_no_fenced_replica_after_topic_removal(results):
    assert _of(results, "fenced_after_topic_removed") == []


def test_fenced_replica_reported_before_topic_removal(results):
    (v,) = _of(results, "fenced_then_topic_removed")
    assert (v["invariant"], v["broker_id"], v["leader_epoch"]) == ("fenced_replica_in_isr", 3, 0)


def test_controlled_shutdown_replica_in_isr(results):
    (v,) = _of(results, "controlled_shutdown_in_isr")
    assert (v["invariant"], v["broker_id"]) == ("fenced_replica_in_isr", 2)
    assert "controlled shutdown" in v["explanation"]


def test_one_row_per_episode(results):
    got = _of(results, "episode_spans_isr_changes")
    assert [(v["invariant"], v["broker_id"]) for v in got] == [("fenced_replica_in_isr", 3)]
