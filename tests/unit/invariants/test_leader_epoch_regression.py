"""``leader_epoch_regression``: rules and must-NOT-flag cases (scenarios: ``cases_leadership.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.unit.invariants.cases_leadership import one, rows


@pytest.fixture
def results(leadership_results):
    return leadership_results


def test_le_regression_in_own_log_order(results):
    r = one(results, "le_follower_regression", "leader_epoch_regression")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"]) == (1, 4, 6)
    assert r["confidence"] == "confirmed"
    assert r["evidence"] == [
        "le_follower_regression:1:state-change.log:3",
        "le_follower_regression:1:state-change.log:2",
    ]


def test_le_equal_epoch_is_not_a_regression(results):
    assert rows(results, "le_equal_is_fine") == []


def test_le_refused_leader_and_isr_is_not_held(results):
    r = one(results, "le_refused_request_not_held", "leader_epoch_regression")
    assert (r["leader_epoch"], r["expected_epoch"]) == (2, 5)  # only the accepted LE 2 counts


def test_le_series_restarts_on_deletion_or_new_topic_id(results):
    assert rows(results, "le_topic_recreated") == []


def test_le_redpanda_own_terms_only(results):
    r = one(results, "le_redpanda_terms", "leader_epoch_regression")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"]) == (2, 3, 4)


def test_le_redpanda_multishard_file_uses_line_order(results):
    assert rows(results, "le_redpanda_shards_file_order") == []


def test_le_timeline_leader_changes_strictly_increase(results):
    r = one(results, "le_timeline_regression", "leader_epoch_regression")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"]) == (2, 4, 5)
