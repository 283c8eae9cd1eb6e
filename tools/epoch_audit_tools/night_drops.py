"""A collected log tree cut into the nightly drops a log shipper delivers.

Each drop is what the collector holds at a cut time: a live file grows from night to night, a
segment appears under its rotated name once the next one has started, checkpoint copies appear once
taken. The late and retry folders, segment dumps and plain checkpoints are one-off deliveries: only
the last drop (``cut=None``) holds them. Used by the nightly tests and ``epoch-audit bench-nights``.
"""

from __future__ import annotations

import datetime as dt
import gzip
import os
import re
from pathlib import Path

from epoch_audit.bronze.discover import stream_order
from epoch_audit.bronze.parsers.file_kinds import copy_time

LINE_TIME = re.compile(rb"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})")
SIMULATOR_FILES = ("truth.jsonl", "manifest.json")  # the simulator's own files, not logs


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _timed_lines(data: bytes) -> list[tuple[dt.datetime | None, bytes]]:
    """Each line with its timestamp (continuation lines inherit the line before them)."""
    out, last = [], None
    for line in data.splitlines(keepends=True):
        m = LINE_TIME.match(line)
        if m:
            last = dt.datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S")
        out.append((last, line))
    return out


def _before(t: dt.datetime | None, cut: dt.datetime | None) -> bool:
    return cut is None or t is None or t < cut


def drop_tree(sample: Path, cut: dt.datetime | None) -> dict[str, bytes]:
    """{relative path: bytes} of what the collector has delivered by ``cut`` (None: everything)."""
    if cut is None:
        return {p.relative_to(sample).as_posix(): p.read_bytes() for p in sample.rglob("*") if p.is_file()}
    tree: dict[str, bytes] = {}
    streams: dict[tuple[Path, str], list[tuple[int, Path]]] = {}
    for path in sorted(p for p in sample.rglob("*") if p.is_file()):
        rel = path.relative_to(sample)
        if rel.parts[0] in ("late",) or "retry" in rel.parts or rel.name in SIMULATOR_FILES:
            continue  # late and re-shipped folders arrive with the last drop
        stream, order = stream_order(path.name)
        if stream.endswith(".log") and "dump" not in rel.as_posix():
            streams.setdefault((rel.parent, stream), []).append((order, path))
        elif copy_time(path.name) is not None:
            if copy_time(path.name) < cut:
                tree[rel.as_posix()] = path.read_bytes()
        # dumps and plain checkpoints: collected with the last drop
    for (parent, stream), files in streams.items():
        files.sort()
        for i, (_, path) in enumerate(files):
            lines = _timed_lines(_read(path))
            head = [line for t, line in lines if _before(t, cut)]
            if not head:
                break  # this segment (and every later one) has not started yet
            rotated = i + 1 < len(files) and any(
                _before(t, cut) for t, _ in _timed_lines(_read(files[i + 1][1]))[:1]
            )
            if rotated:  # the next segment has started: this one is complete, under its rotated name
                tree[(parent / path.name).as_posix()] = path.read_bytes()
            else:  # the live segment so far, under the live name
                tree[(parent / stream).as_posix()] = b"".join(head)
                break
    return tree


def deliver(tree_dir: Path, drop: dict[str, bytes], night: str) -> int:
    """Copy a drop into the collected tree; new or grown files get the night's delivery time."""
    stamp = dt.datetime.strptime(night, "%Y-%m-%d").replace(hour=1, tzinfo=dt.UTC).timestamp()
    changed = 0
    for rel, data in sorted(drop.items()):
        target = tree_dir / rel
        if target.is_file() and target.read_bytes() == data:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.utime(target, (stamp, stamp))
        changed += 1
    return changed
