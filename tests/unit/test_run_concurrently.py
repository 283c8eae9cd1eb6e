"""``run_concurrently``: results in task order, every task runs, the first failure is raised."""

from __future__ import annotations

import threading
import time

import pytest

from epoch_audit.config import ConfigError, load_config
from epoch_audit.spark import run_concurrently


def test_results_keep_task_order_and_tasks_overlap():
    started: list[str] = []
    both_running = threading.Barrier(2, timeout=5)

    def task(name: str, delay: float):
        def run() -> str:
            started.append(threading.current_thread().name)
            both_running.wait()  # fails (BrokenBarrierError) unless two tasks run at once
            time.sleep(delay)
            return name
        return run

    assert run_concurrently([task("slow", 0.2), task("fast", 0.0)], workers=2) == ["slow", "fast"]
    assert all(name.startswith("epoch-audit-query") for name in started)


def test_one_worker_runs_in_order_on_the_calling_thread():
    seen: list[tuple[int, str]] = []
    tasks = [lambda i=i: seen.append((i, threading.current_thread().name)) or i for i in range(3)]
    assert run_concurrently(tasks, workers=1) == [0, 1, 2]
    assert seen == [(i, threading.current_thread().name) for i in range(3)]


def test_every_task_runs_and_the_first_failure_is_raised():
    ran: list[int] = []

    def fail(i: int):
        def run() -> int:
            ran.append(i)
            if i in (1, 2):
                raise ValueError(f"task {i}")
            return i
        return run

    with pytest.raises(ValueError, match="task 1"):
        run_concurrently([fail(i) for i in range(4)], workers=2)
    assert sorted(ran) == [0, 1, 2, 3]


def test_concurrent_queries_must_be_positive(tmp_path):
    conf = tmp_path / "c.yaml"
    conf.write_text("spark:\n  concurrent_queries: 0\n")
    with pytest.raises(ConfigError, match="spark.concurrent_queries"):
        load_config(conf)
    conf.write_text("spark:\n  concurrent_queries: 3\n")
    assert load_config(conf).spark.concurrent_queries == 3
