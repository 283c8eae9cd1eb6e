"""One Spark session for the whole test run (a session costs ~8 s)."""

from __future__ import annotations

import pytest

from jobs.spark import get_spark


@pytest.fixture(scope="session")
def spark():
    session = get_spark(master="local[2]", driver_memory="2g")
    yield session
    session.stop()
