"""One Spark session for the whole test run (a session costs ~8 s)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from hypothesis import settings
from pyspark.sql import SparkSession

from epoch_audit.spark import get_spark
from tests.helpers import release_spark_memory

# Generated histories are reproducible in CI: the same examples every run (a failure is a real
# disagreement, never a lucky draw), and no per-example deadline (Spark jobs take seconds).
settings.register_profile("repeatable", derandomize=True, deadline=None, print_blob=True)
settings.load_profile("repeatable")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files with `slow` tests first, the most slow tests first, then the rest as collected.

    xdist hands each worker a whole file at a time in this order (``--no-loadscope-reorder`` in
    pyproject.toml; its own order puts the files with the most tests first, which left a
    ten-minute file such as the lab's to the end, one worker busy and the other idle).
    """
    slow: dict[object, int] = {}
    for item in items:
        if item.get_closest_marker("slow") is not None:
            slow[item.path] = slow.get(item.path, 0) + 1
    items.sort(key=lambda item: -slow.get(item.path, 0))  # stable: the rest keep their order


@pytest.fixture(scope="session")
def spark():
    # One JVM serves every test file (~250 tests); plans of the big parsers and cached silver views add
    # up over a run, and 2 GB ran out of heap part-way through the suite.
    # Test data is small: the short-run JVM (no C2, no generated code) spends far less on compiling.
    # Maps this machine's class archive when a run has written one; never writes it (it lives as
    # long as the suite).
    session = get_spark(master="local[2]", driver_memory="6g", short_run=True, write_class_archive=False)
    yield session
    session.stop()


@pytest.fixture(autouse=True, scope="module")
def _drop_cached_frames():
    """Each module's DataFrames and caches (run_all's events, the checks' silver caches) hold their
    plans and blocks for the whole session otherwise; release them when the module is done."""
    yield
    session = SparkSession.getActiveSession()
    if session is not None:
        release_spark_memory(session)


@pytest.fixture
def webhook_receiver():
    """A local HTTP server recording each POST (path, headers, JSON body); replies with ``status``."""
    received: list[dict] = []
    state = {"status": 200}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"path": self.path, "type": self.headers["Content-Type"], "body": json.loads(body)})
            self.send_response(state["status"])
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/hooks/T000/SECRET", received, state
    server.shutdown()
    server.server_close()
