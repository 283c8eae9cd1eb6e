"""The scenarios of each family of invariants (``cases_*.py``) run once per test session: every
check of the family over every scenario of the family, and the reference model over the same
(a scenario of one invariant must not flag its siblings). Each test file takes its family's
results as ``results``."""

from __future__ import annotations

import pytest

from tests.unit.invariants import cases_controller_requests, cases_isr, cases_leadership, cases_offsets


@pytest.fixture(scope="session")
def leadership_results(spark):
    return cases_leadership.family_results(spark)


@pytest.fixture(scope="session")
def offsets_results(spark):
    return cases_offsets.family_results(spark)


@pytest.fixture(scope="session")
def isr_results(spark):
    return cases_isr.family_results(spark)


@pytest.fixture(scope="session")
def controller_request_results(spark):
    return cases_controller_requests.family_results(spark)
