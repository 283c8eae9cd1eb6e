"""Resource figures of a benchmark run from /proc: RSS and CPU of the driver JVM, this Python
process and the PySpark workers under the JVM (a background sampler keeps per-stage peaks)."""

from __future__ import annotations

import os
import threading


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def _python_workers(jvm_pid: int) -> list[int]:
    """PySpark daemon and worker processes under the JVM (every python descendant)."""
    children = _children_map()
    found, todo = [], list(children.get(jvm_pid, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ")
        except OSError:
            continue
        if b"python" in cmd or b"pyspark" in cmd:
            found.append(pid)
    return found


def _cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of ``pid`` (clock ticks; children only once reaped)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15])
    except (OSError, ValueError, IndexError):
        return 0


def cpu_seconds(jvm_pid: int | None, sampler: MemorySampler | None = None) -> float:
    """CPU seconds used so far by the driver JVM, this Python driver and the PySpark workers.

    PySpark's daemon ignores SIGCHLD, so the kernel drops the CPU of a worker that exited instead
    of adding it to the daemon's: with a ``sampler`` running, the workers gone since are counted at
    their last sampled figure (at most one sampling interval short each); without one, only the
    live workers count. On a shared machine this is the figure that does not depend on the other
    tenants' load.
    """
    ticks = _cpu_ticks(os.getpid())
    if jvm_pid:
        ticks += _cpu_ticks(jvm_pid)
        if sampler is not None:
            ticks += sampler.worker_ticks()
        else:
            ticks += sum(_cpu_ticks(p) for p in _python_workers(jvm_pid))
    return ticks / os.sysconf("SC_CLK_TCK")


def self_cpu_seconds() -> float:
    """CPU seconds of this process (DuckDB runs its threads here)."""
    t = os.times()
    return t.user + t.system


class MemorySampler:
    """Samples RSS of the driver JVM, this Python driver and the PySpark workers every ``interval`` s.

    Peaks are kept overall and per stage label (``stage`` attribute); MB = 2^20 bytes.
    """

    def __init__(self, jvm_pid: int | None, interval: float = 0.2) -> None:
        self.jvm_pid = jvm_pid
        self.interval = interval
        self.stage = "startup"
        self.peaks: dict[str, dict[str, float]] = {}
        self._live_ticks: dict[int, int] = {}  # CPU ticks last read of each live worker
        self._gone_ticks = 0  # of the workers that exited since (the kernel keeps them nowhere)
        self._ticks_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-memory", daemon=True)

    def start(self) -> MemorySampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def worker_ticks(self) -> int:
        """CPU ticks of every PySpark worker seen so far, live or exited (read now)."""
        if self.jvm_pid:
            self._note_worker_ticks(_python_workers(self.jvm_pid))
        with self._ticks_lock:
            return self._gone_ticks + sum(self._live_ticks.values())

    def _note_worker_ticks(self, pids: list[int]) -> None:
        with self._ticks_lock:
            # a worker that exits between the listing and the read keeps its last figure
            now = {p: max(_cpu_ticks(p), self._live_ticks.get(p, 0)) for p in pids}
            self._gone_ticks += sum(t for p, t in self._live_ticks.items() if p not in now)
            self._live_ticks = now

    def sample(self) -> None:
        jvm = rss_kb(self.jvm_pid) if self.jvm_pid else 0
        py = rss_kb(os.getpid())
        pids = _python_workers(self.jvm_pid) if self.jvm_pid else []
        self._note_worker_ticks(pids)
        workers = [rss_kb(p) for p in pids]
        now = {
            "driver_rss_mb": (jvm + py) / 1024,
            "jvm_rss_mb": jvm / 1024,
            "python_driver_rss_mb": py / 1024,
            "python_workers_rss_mb": sum(workers) / 1024,
            "python_worker_max_rss_mb": max(workers, default=0) / 1024,
            "python_workers": float(len(workers)),
        }
        for label in (self.stage, "all"):
            peak = self.peaks.setdefault(label, {})
            for key, value in now.items():
                peak[key] = max(peak.get(key, 0.0), value)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def stage_peaks(self, label: str) -> dict[str, float]:
        return {k: round(v, 1) for k, v in self.peaks.get(label, {}).items()}
