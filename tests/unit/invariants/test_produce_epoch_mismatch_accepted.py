"""``produce_epoch_mismatch_accepted``: rules and must-NOT-flag cases (scenarios: ``cases_leadership.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.unit.invariants.cases_leadership import one


@pytest.fixture
def results(leadership_results):
    return leadership_results


def test_produce_epoch_mismatch(results):
    r = one(results, "produce_epoch_mismatch", "produce_epoch_mismatch_accepted")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"]) == (1, 4, 5)
