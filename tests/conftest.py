"""One Spark session for the whole test run (a session costs ~8 s)."""

from __future__ import annotations

import pytest
from hypothesis import settings

from jobs.spark import get_spark

# Generated histories are reproducible in CI: the same examples every run (a failure is a real
# disagreement, never a lucky draw), and no per-example deadline (Spark jobs take seconds).
settings.register_profile("repeatable", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("repeatable")


@pytest.fixture(scope="session")
def spark():
    session = get_spark(master="local[2]", driver_memory="2g")
    yield session
    session.stop()
