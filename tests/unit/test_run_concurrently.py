"""``run_concurrently``: results in task order, every task runs, the first failure is raised.
``run_longest_first``: named results and seconds, the longest (by an earlier run) started first."""

from __future__ import annotations

import threading
import time

import pytest

from epoch_audit.config import ConfigError, load_config
from epoch_audit.spark import run_concurrently, run_longest_first


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


def test_longest_first_starts_the_longest_known_tasks_first_then_the_rest_in_order():
    started: list[str] = []

    def task(name: str):
        def run() -> str:
            started.append(name)
            return name.upper()
        return run

    names = ["a", "b", "c", "d", "e"]
    expected = {"b": 0.5, "d": 3.0, "e": 1.0, "gone": 9.0}  # "gone": a task of an earlier run only
    results, seconds = run_longest_first({n: task(n) for n in names}, workers=1, expected=expected)
    assert started == ["d", "e", "b", "a", "c"]
    assert results == {n: n.upper() for n in names}
    assert set(seconds) == set(names) and all(s >= 0 for s in seconds.values())
    # no earlier figures: the given order
    started.clear()
    run_longest_first({n: task(n) for n in names}, workers=1)
    assert started == names


def test_longest_first_times_each_task_and_raises_the_first_failure():
    def sleep(s: float):
        return lambda: time.sleep(s) or s

    results, seconds = run_longest_first({"slow": sleep(0.3), "fast": sleep(0.0)}, workers=2)
    assert results == {"slow": 0.3, "fast": 0.0}
    assert seconds["slow"] >= 0.3 > seconds["fast"]

    def fail():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_longest_first({"ok": sleep(0.0), "bad": fail}, workers=2)


def test_concurrent_queries_must_be_positive(tmp_path):
    conf = tmp_path / "c.yaml"
    conf.write_text("spark:\n  concurrent_queries: 0\n")
    with pytest.raises(ConfigError, match="spark.concurrent_queries"):
        load_config(conf)
    conf.write_text("spark:\n  concurrent_queries: 3\n")
    assert load_config(conf).spark.concurrent_queries == 3
