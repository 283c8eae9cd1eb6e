"""``stale_stop_replica_accepted``: rules and must-NOT-flag cases (scenarios: ``cases_controller_requests.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.unit.invariants.cases_controller_requests import B, _ids, _of


@pytest.fixture
def results(controller_request_results):
    return controller_request_results


def test_stale_stop_replica_accepted_trace_chain(results):
    (v,) = _of(results, "stale_trace")
    assert (v["invariant"], v["broker_id"], v["topic"], v["partition"]) == ("stale_stop_replica_accepted", B,
                                                                            "orders", 3)
    assert (v["leader_epoch"], v["expected_epoch"], v["severity"], v["confidence"]) == (4, 5, "error", "confirmed")
    assert sorted(v["evidence"]) == sorted(
        _ids("stale_trace", "become_follower", "stop_replica_received", "fetcher_removed"))
    assert "leader epoch 4" in v["explanation"] and "current leader epoch was 5" in v["explanation"]


@pytest.mark.parametrize("cluster", [
    "refused_by_warn_line", "sentinel_minus_two", "sentinel_minus_one", "equal_epoch", "higher_epoch",
    "request_log_refusal_vetoes_trace", "no_stop_evidence", "no_current_epoch", "other_partition_epoch",
    "deleted_replica_has_no_epoch", "partition_state_ce_is_not_request_ce", "stale_controller_refused",
    "equal_controller_epoch", "stale_broker_epoch_request_not_processed",
])
def test_must_not_flag(results, cluster):
    assert _of(results, cluster) == []


def test_request_log_acceptance(results):
    (v,) = _of(results, "request_log_accepted")
    assert (v["leader_epoch"], v["expected_epoch"]) == (5, 6)


def test_trace_and_request_log_are_one_violation(results):
    (v,) = _of(results, "trace_and_request_log_one_row")
    assert len(v["evidence"]) == 4  # LAIR state, Received, Removed fetcher, request-log line
