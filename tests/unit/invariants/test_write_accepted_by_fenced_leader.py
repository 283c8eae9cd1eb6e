"""``write_accepted_by_fenced_leader``: rules and must-NOT-flag cases (scenarios: ``cases_leadership.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.builders.epoch_events import ts
from tests.unit.invariants.cases_leadership import one, rows


@pytest.fixture
def results(leadership_results):
    return leadership_results


def test_write_offset_rule_reports_epoch_leader_once(results):
    r = one(results, "write_offset_rule", "write_accepted_by_fenced_leader")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"], r["confidence"]) == (1, 5, 6, "confirmed")
    assert r["evidence"] == ["write_offset_rule:3:segment-dump.log:2", "write_offset_rule:2:state-change.log:1"]


def test_write_copies_and_create_time_never_flagged(results):
    assert rows(results, "write_copies_are_replication") == []


def test_write_time_rule_confirmed_beyond_skew(results):
    r = one(results, "write_time_confirmed", "write_accepted_by_fenced_leader")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"], r["confidence"]) == (1, 5, 6, "confirmed")
    assert r["evidence"] == ["write_time_confirmed:1:request.log:1", "write_time_confirmed:ctl:orders-0:2"]


def test_write_time_rule_within_skew_suspected(results):
    r = one(results, "write_time_suspected", "write_accepted_by_fenced_leader")
    assert r["confidence"] == "suspected"


def test_write_produce_before_move_never_reported(results):
    assert rows(results, "write_time_before_move") == []


def test_write_regained_leadership(results):
    r = one(results, "write_time_regained", "write_accepted_by_fenced_leader")
    assert r["confidence"] == "suspected"
    assert r["event_time"] == ts(4_500)


def test_write_regained_leadership_per_own_log_is_not_reported(results):
    assert rows(results, "write_time_regained_per_own_log") == []


def test_write_old_or_later_claim_does_not_excuse(results):
    r = one(results, "write_time_old_claim_is_no_excuse", "write_accepted_by_fenced_leader")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"], r["confidence"]) == (1, 5, 6, "confirmed")


def test_write_fenced_broker(results):
    r = one(results, "write_time_fenced", "write_accepted_by_fenced_leader")
    assert (r["broker_id"], r["topic"], r["confidence"]) == (1, "payments", "confirmed")
