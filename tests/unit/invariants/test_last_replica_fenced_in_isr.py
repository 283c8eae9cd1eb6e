"""``last_replica_fenced_in_isr``: rules and must-NOT-flag cases (scenarios: ``cases_isr.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.unit.invariants.cases_isr import _of


@pytest.fixture
def results(isr_results):
    return isr_results


def test_last_replica_is_a_warning(results):
    (v,) = _of(results, "last_replica")
    assert (v["invariant"], v["severity"], v["broker_id"]) == ("last_replica_fenced_in_isr", "warning", 3)
