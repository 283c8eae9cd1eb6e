"""What a command writes on stderr: log lines, a progress display on a terminal, one summary line.

On a terminal, log lines are rich's and a progress bar with the elapsed time and an ETA stands under
them. Anywhere else (a job log, CI, a file) each log record is one plain, unwrapped line with a UTC
timestamp, a stage's start and end are logged, and a long stage says every few minutes that it is
still running. Third-party loggers (Great Expectations, py4j, ...) show only warnings, and Python
warnings are off, unless ``--debug``.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, SpinnerColumn, Task, TextColumn, TimeElapsedColumn
from rich.text import Text

LOGGER = "epoch_audit"
OWN_LOGGERS = (LOGGER, "epoch_audit_tools")
PLAIN_FORMAT = "%(asctime)s %(levelname)s %(message)s"
PLAIN_TIME = "%Y-%m-%dT%H:%M:%SZ"
HEARTBEAT_SECONDS = 300.0  # plain logs: a stage running longer says so this often
MIN_SCALE, MAX_SCALE = 0.25, 4.0  # bounds of the ETA's "this run is N times as fast as expected"
# A first run has no earlier run to time its stages by: their shares in a run over the samples
# (scaled, as the run goes, by how long its first stages really took).
DEFAULT_STAGE_SECONDS = {"ingest": 100.0, "timelines": 120.0, "check": 270.0, "validate": 70.0, "report": 15.0}

log = logging.getLogger(__name__)


def stderr_is_terminal() -> bool:
    """Whether stderr is an interactive terminal (a dumb one counts as not)."""
    return sys.stderr.isatty() and os.environ.get("TERM") != "dumb"


class _UtcFormatter(logging.Formatter):
    converter = time.gmtime


def setup_logging(debug: bool, terminal: bool | None = None) -> Console | None:
    """Route log records to stderr; return the rich console on a terminal (progress shares it), else None."""
    terminal = stderr_is_terminal() if terminal is None else terminal
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "epoch_audit", False)]:
        root.removeHandler(old)  # a second call in one process (tests) replaces, never doubles
    console: Console | None = None
    handler: logging.Handler
    if terminal:
        from rich.logging import RichHandler

        console = Console(stderr=True)
        handler = RichHandler(console=console, show_path=False, markup=False, rich_tracebacks=debug)
        handler.setFormatter(logging.Formatter("%(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_UtcFormatter(PLAIN_FORMAT, PLAIN_TIME))
    handler.epoch_audit = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    # Third-party loggers inherit the root's level, including those named by file path (GX's
    # "Stashing FluentDatasource" logger is logging.getLogger(__file__)): setting known names would miss them.
    root.setLevel(logging.INFO if debug else logging.WARNING)
    for name in OWN_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if debug else logging.INFO)
    logging.captureWarnings(True)
    logging.getLogger("py.warnings").setLevel(logging.WARNING if debug else logging.CRITICAL)
    return console


class _EtaColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        eta = task.fields.get("eta")
        return Text("ETA -:--:--" if eta is None else f"ETA ~{_clock(eta)}", style="progress.remaining")


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


class RunProgress:
    """Progress over a command's stages, each expected to take as long as it did last time.

    The ETA is the expected time left of the current stage plus the later ones, all scaled by how
    much faster or slower than expected the finished stages ran (a night with more logs ingests
    longer and checks longer too), by a factor kept within [MIN_SCALE, MAX_SCALE].
    """

    def __init__(self, stages: list[str], expected: dict[str, float], console: Console | None) -> None:
        self.stages = stages
        self.expected = {s: max(float(expected.get(s, DEFAULT_STAGE_SECONDS.get(s, 30.0))), 0.1) for s in stages}
        self.console = console
        self.done: dict[str, float] = {}
        self.current: str | None = None
        self.current_started = 0.0
        self._stop = threading.Event()
        self._progress: Progress | None = None
        self._task: Any = None
        self._ticker: threading.Thread | None = None

    def remaining(self, now: float | None = None) -> float:
        """Expected seconds left in the run."""
        now = time.monotonic() if now is None else now
        spent = sum(self.done.values())
        planned = sum(self.expected[s] for s in self.done)
        # clamped: a night with nothing new ingests in seconds, yet validating still takes its time
        scale = min(max(spent / planned, MIN_SCALE), MAX_SCALE) if planned else 1.0
        pending = [s for s in self.stages if s not in self.done and s != self.current]
        left = sum(self.expected[s] for s in pending) * scale
        if self.current:
            left += max(self.expected[self.current] * scale - (now - self.current_started), 0.0)
        return left

    def __enter__(self) -> RunProgress:
        if self.console is not None:
            self._progress = Progress(
                SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(), _EtaColumn(),
                console=self.console, transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("starting", total=1.0, eta=None)
        self._ticker = threading.Thread(target=self._tick, name="run-progress", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2)
        if self._progress is not None:
            self._progress.stop()

    def _tick(self) -> None:
        last_beat = time.monotonic()
        while not self._stop.wait(0.5):
            now = time.monotonic()
            if self._progress is not None:
                self._refresh(now)
            elif self.current and now - last_beat >= HEARTBEAT_SECONDS:
                last_beat = now
                log.info("%s: still running after %s", self.current, _clock(now - self.current_started))

    def _refresh(self, now: float) -> None:
        if self._progress is None:
            return
        elapsed = sum(self.done.values()) + (now - self.current_started if self.current else 0.0)
        left = self.remaining(now)
        label = f"{self.current} ({self.stages.index(self.current) + 1}/{len(self.stages)})" if self.current else ""
        self._progress.update(self._task, description=label, total=elapsed + left or 1.0, completed=elapsed, eta=left)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time one stage: the display follows it; plain logs get its start line."""
        self.current, self.current_started = name, time.monotonic()
        if self._progress is None:
            log.info("%s: started", name)
        else:
            self._refresh(self.current_started)
        try:
            yield
        finally:
            self.done[name] = time.monotonic() - self.current_started
            self.current = None


def stage_seconds(summary: dict[str, Any]) -> dict[str, float]:
    """Per stage, the seconds a run's summary records it took."""
    return {
        name: float(detail["seconds"])
        for name, detail in summary.get("stages", {}).items()
        if isinstance(detail, dict) and isinstance(detail.get("seconds"), int | float)
    }


def summary_line(summary: dict[str, Any], command: str, exit_code: int, wall_seconds: float) -> str:
    """The one line that ends a command's stderr: status, exit code, what is new, wall time, the report."""
    status = {0: "ok", 3: "found"}.get(exit_code, "failed")
    stages = summary.get("stages", {})
    parts = [f"status {status}", f"exit {exit_code}"]
    check = stages.get("check", {})
    if check.get("status") == "ran":
        counts = check.get("violations", [])
        new = sum(v.get("count", 0) for v in counts)
        errors = sum(v.get("count", 0) for v in counts if v.get("severity") == "error")
        parts.append(f"{new} new violations ({errors} error)")
        doubtful = sorted({p["cluster_id"] for p in check.get("input_problems", [])})
        if doubtful:
            parts.append(f"input problems in {', '.join(doubtful)} (their violations are doubtful)")
    validate = stages.get("validate", {})
    if validate.get("status") == "ran":
        failed = validate.get("expectations", {}).get("failed", 0)
        critical = len(validate.get("critical_failures", []))
        parts.append(f"{failed} failed expectations ({critical} critical)")
    parts.append(f"{wall_seconds:.1f} s")
    report = stages.get("report", {}).get("report")
    if report:
        parts.append(f"report {report}")
    return f"epoch-audit {command} {summary.get('run_id', '')}: " + ", ".join(parts)
