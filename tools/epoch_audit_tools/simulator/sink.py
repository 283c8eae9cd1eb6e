"""Streaming file output: bounded memory, few open handles, byte-identical reruns.

Every output line goes through :class:`FileSink`. Lines are buffered per file and appended in
bulk when the buffer passes a size limit, so a run of 10^8 events never holds them in memory and
never keeps thousands of files open. Rotated log4j files are written directly under their final
rotation name (``state-change.log.2024-03-05-09``): DailyRollingFileAppender names a rotated file
after the hour its content belongs to, so the name is known when the line is written. At
:meth:`FileSink.close` the newest hour of each log becomes the live file and the chosen rotated
files are gzipped with a fixed mtime (gzip headers otherwise embed the wall clock).
"""

from __future__ import annotations

import gzip
import os
import shutil
from collections import Counter
from pathlib import Path

from epoch_audit_tools.simulator.clock import hour_suffix

_FLUSH_BYTES = 8 * 1024 * 1024


class FileSink:
    """Buffered append-only writer for every file of a run, rooted at ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._pending: dict[str, list[str]] = {}
        self._pending_bytes = 0
        self.line_counts: Counter[str] = Counter()
        # rotating logs: base relative path -> hour suffixes in first-seen order
        self._hours: dict[str, list[str]] = {}
        self._gzip_bases: set[str] = set()
        self._closed = False

    # -- plain files -------------------------------------------------------------------------
    def write(self, rel: str, text: str) -> None:
        """Append ``text`` (one or more complete lines, each ending in ``\\n``) to ``rel``."""
        buf = self._pending.get(rel)
        if buf is None:
            buf = self._pending[rel] = []
        buf.append(text)
        self._pending_bytes += len(text)
        self.line_counts[rel] += text.count("\n")
        if self._pending_bytes >= _FLUSH_BYTES:
            self.flush()

    def write_whole(self, rel: str, text: str) -> None:
        """Create ``rel`` with exactly ``text`` (checkpoint files, ``partition.metadata``)."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        self.line_counts[rel] = text.count("\n") + (0 if text.endswith("\n") or not text else 1)

    # -- rotating log4j files ----------------------------------------------------------------
    def log(self, base: str, local_ms: int, text: str) -> None:
        """Append a log record to the hourly file of ``base`` that holds ``local_ms``."""
        hour = hour_suffix(local_ms)
        hours = self._hours.setdefault(base, [])
        if not hours or hours[-1] != hour:
            if hour not in hours:
                hours.append(hour)
        self.write(f"{base}.{hour}", text)

    def gzip_rotated(self, base: str) -> None:
        """Compress the rotated (not live) files of ``base`` at close (logrotate ``compress``)."""
        self._gzip_bases.add(base)

    # -- lifecycle ---------------------------------------------------------------------------
    def flush(self) -> None:
        """Append every buffered line to its file."""
        for rel, chunks in self._pending.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8", newline="") as fh:
                fh.write("".join(chunks))
        self._pending.clear()
        self._pending_bytes = 0

    def rotated_files(self, base: str) -> list[str]:
        """Relative paths of ``base``'s hourly files, oldest first (before :meth:`close`)."""
        return [f"{base}.{h}" for h in self._hours.get(base, [])]

    def close(self) -> dict[str, int]:
        """Flush, turn each log's newest hour into the live file, gzip; return lines per file."""
        if self._closed:
            return dict(self.line_counts)
        self.flush()
        for base, hours in sorted(self._hours.items()):
            live = f"{base}.{hours[-1]}"
            os.replace(self.root / live, self.root / base)
            self.line_counts[base] = self.line_counts.pop(live)
            if base in self._gzip_bases:
                for hour in hours[:-1]:
                    rel = f"{base}.{hour}"
                    src = self.root / rel
                    with open(src, "rb") as raw, open(str(src) + ".gz", "wb") as out:
                        with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as gz:
                            shutil.copyfileobj(raw, gz)
                    src.unlink()
                    self.line_counts[rel + ".gz"] = self.line_counts.pop(rel)
        self._closed = True
        return dict(sorted(self.line_counts.items()))
