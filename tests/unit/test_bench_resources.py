"""The bench's CPU figure keeps the CPU of PySpark workers that exited (their daemon ignores SIGCHLD)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from epoch_audit_tools.bench_resources import MemorySampler, _cpu_ticks, _python_workers, cpu_seconds

# Stands in for the JVM and PySpark's daemon: ignores SIGCHLD, as daemon.py does, so the kernel
# drops its children's CPU; starts one Python worker that burns CPU and exits, then waits.
PARENT = r"""
import signal, subprocess, sys, time
signal.signal(signal.SIGCHLD, signal.SIG_IGN)
worker = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass"
subprocess.Popen([sys.executable, "-c", worker])
time.sleep(30)
"""


def test_cpu_of_exited_workers_is_kept():
    ticks_per_second = os.sysconf("SC_CLK_TCK")
    parent = subprocess.Popen([sys.executable, "-c", PARENT])
    sampler = MemorySampler(parent.pid, interval=0.02).start()
    try:
        deadline = time.monotonic() + 20
        seen = False
        while time.monotonic() < deadline:  # the worker appears, burns, and is gone
            live = dict(sampler._live_ticks)
            seen = seen or bool(live)
            if seen and not live:
                break
            time.sleep(0.02)
        assert seen
        kept = sampler.worker_ticks() / ticks_per_second
        # what the kernel still holds of it: nothing (neither the worker nor its parent's cutime)
        left = sum(_cpu_ticks(p) for p in [parent.pid, *_python_workers(parent.pid)]) / ticks_per_second
        with_sampler = cpu_seconds(parent.pid, sampler) - cpu_seconds(parent.pid)
    finally:
        sampler.stop()
        parent.kill()
        parent.wait()
    assert kept >= 0.4  # 0.6 s burnt, read at most one 20 ms interval before it exited
    assert left < 0.3
    assert with_sampler >= 0.4 - 0.05  # the bench's figure has it; without the sampler's record, lost
