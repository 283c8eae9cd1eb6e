"""``two_leaders_same_epoch``: rules and must-NOT-flag cases (scenarios: ``cases_leadership.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.builders.epoch_events import ts
from tests.unit.invariants.cases_leadership import one, rows


@pytest.fixture
def results(leadership_results):
    return leadership_results


def test_equal_le_leader_change_is_only_two_leaders(results):
    assert rows(results, "two_timeline_equal_le", "leader_epoch_regression") == []
    r = one(results, "two_timeline_equal_le", "two_leaders_same_epoch")
    assert (r["broker_id"], r["leader_epoch"], r["confidence"]) == (2, 5, "confirmed")


def test_two_leaders_by_time_beyond_skew_confirmed(results):
    r = one(results, "two_by_time_confirmed", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (2, "confirmed")
    assert r["event_time"] == ts(5_000)


def test_two_leaders_within_skew_suspected_later_one(results):
    r = one(results, "two_by_time_suspected", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (2, "suspected")


def test_two_leaders_causal_order_beats_clock(results):
    r = one(results, "two_causal_notification", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (2, "confirmed")
    assert "two_causal_notification:2:redpanda.log:1" in r["evidence"]


def test_two_leaders_vote_granted_to_other(results):
    r = one(results, "two_causal_vote_grant", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (2, "confirmed")
    assert r["evidence"][-1] == "two_causal_vote_grant:1:redpanda.log:1"


def test_two_leaders_same_claimant_and_followers_are_not_claims(results):
    assert rows(results, "two_same_claimant_twice") == []


def test_two_leaders_redpanda_became_lines_are_ordered_by_time(results):
    r = one(results, "two_redpanda_became_lines_are_claims", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (1, "suspected")


def test_two_leaders_never_pairs_topic_incarnations(results):
    rs = rows(results, "two_topic_recreated", "two_leaders_same_epoch")
    assert [(r["partition"], r["broker_id"], r["leader_epoch"], r["confidence"]) for r in rs] == [(1, 2, 3, "confirmed")]
