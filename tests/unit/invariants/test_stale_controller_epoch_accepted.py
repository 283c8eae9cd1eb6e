"""``stale_controller_epoch_accepted``: rules and must-NOT-flag cases (scenarios: ``cases_controller_requests.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.unit.invariants.cases_controller_requests import B, _ids, _of


@pytest.fixture
def results(controller_request_results):
    return controller_request_results


def test_stale_controller_epoch_leader_and_isr(results):
    (v,) = _of(results, "stale_controller_epoch_lair")
    # leader_epoch = the request LE of the applied state (6), not the stale request's CE (8)
    assert (v["invariant"], v["broker_id"], v["leader_epoch"], v["expected_epoch"]) == (
        "stale_controller_epoch_accepted", B, 6, 9)
    assert _ids("stale_controller_epoch_lair", "update_metadata_applied")[0] in v["evidence"]
    assert "leader epoch 6" in v["explanation"]
    assert "controller epoch 8" in v["explanation"] and "controller epoch 9" in v["explanation"]


def test_known_controller_epoch_from_default_level_lines(results):
    (v,) = _of(results, "known_epoch_from_info_lines")
    assert (v["invariant"], v["leader_epoch"], v["expected_epoch"]) == ("stale_controller_epoch_accepted", 5, 9)
    assert _ids("known_epoch_from_info_lines", "leader_and_isr_fetchers_stopped")[0] in v["evidence"]


def test_stale_controller_epoch_stop_replica(results):
    got = _of(results, "stale_controller_epoch_stop")
    assert [(v["invariant"], v["leader_epoch"], v["expected_epoch"]) for v in got] == [
        ("stale_controller_epoch_accepted", 5, 9)]
