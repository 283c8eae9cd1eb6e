"""Framing in Python: one file's physical lines -> log records, inside the single ingest pass.

The steps :mod:`epoch_audit.bronze.records` describes (§8 of the format reference): redact
secrets, strip the collector's wrapper, mark the lines that start a record (Kafka default /
Strimzi / Strimzi log4j2 / Seastar / CSV export), attach every other line to the record above it,
and split the first line into time, level, logger, thread and message. The patterns are the
module constants of ``records``, compiled with Java's reading of ``.`` (no line terminator),
``$`` and ``\\d \\s \\w`` so a hostile line is framed as the JVM framed it before the pass.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

from epoch_audit.bronze.parsers.spark_strings import java_pattern
from epoch_audit.bronze.records import (
    COMPOSE_PREFIX,
    CRI_PREFIX,
    CSV_EXPORT,
    EMBEDDED_PREFIX,
    JOURNALD_PREFIX,
    KAFKA_START,
    LOGGER_TAIL,
    MULTI_LOGGER_TAIL,
    REDACTIONS,
    SEASTAR_SRC,
    SEASTAR_START,
    SECRET_HINTS,
    STRIMZI2_START,
    STRIMZI_START,
)

_REDACTIONS = [(java_pattern(p), r.replace("$1", "\\g<1>")) for p, r in REDACTIONS]
_CR_END = java_pattern(r"\r$")
_OUTER = java_pattern("^(?:" + CRI_PREFIX + "|" + JOURNALD_PREFIX + ")")
_COMPOSE = java_pattern("^" + COMPOSE_PREFIX)
_EMBEDDED = java_pattern("^" + EMBEDDED_PREFIX)
_CSV = java_pattern(CSV_EXPORT)
_KAFKA = java_pattern(KAFKA_START)
_STRIMZI = java_pattern(STRIMZI_START)
_STRIMZI2 = java_pattern(STRIMZI2_START)
_SEASTAR = java_pattern(SEASTAR_START)
_TAIL = java_pattern(LOGGER_TAIL)
_MULTI_TAIL = java_pattern(MULTI_LOGGER_TAIL)
_SRC = java_pattern(SEASTAR_SRC)


def redact(text: str) -> tuple[str, int]:
    """Secret values replaced by ``[redacted]``, and how many (the ``records.REDACTIONS`` in order)."""
    low = text.lower()
    if not any(hint in low for hint in SECRET_HINTS):
        return text, 0
    count = 0
    for pattern, replacement in _REDACTIONS:
        text, n = pattern.subn(replacement, text)
        count += n
    return text, count


def _group(match: re.Match[str] | None, index: int) -> str:
    """``regexp_extract``: "" when there is no match or the group did not take part."""
    if match is None:
        return ""
    value = match.group(index)
    return "" if value is None else value


@dataclass
class MarkedLine:
    """A log line after wrapper stripping and start marking."""

    line_number: int
    inner: str
    line_format: str | None
    match: re.Match[str] | None = None  # the start pattern's match (CSV: the export pattern's)


def mark(text: str) -> tuple[str, str | None, re.Match[str] | None]:
    """(inner line, record-start format or None, its match) of one redacted line."""
    stripped = _CR_END.sub("", text)
    outer = _OUTER.sub("", stripped, count=1)
    inner = _EMBEDDED.sub("", _COMPOSE.sub("", outer, count=1), count=1)
    if inner.startswith('"'):
        csv = _CSV.search(inner)
        if csv is not None:
            return inner, "csv", csv
    if inner.startswith("["):
        found = _KAFKA.search(inner)
        if found is not None:
            return inner, "kafka", found
    for fmt, pattern in (("redpanda", _SEASTAR), ("strimzi", _STRIMZI), ("strimzi2", _STRIMZI2)):
        found = pattern.search(inner)
        if found is not None:
            return inner, fmt, found
    return inner, None, None


@cache
def _zone(name: str) -> Any:
    return UTC if name.upper() in ("UTC", "Z", "GMT") else ZoneInfo(name)


def local_time(text: str, zone_name: str) -> datetime | None:
    """``to_utc_timestamp(try_to_timestamp(text, 'yyyy-MM-dd HH:mm:ss,SSS'), zone)`` (naive UTC)."""
    # The start patterns fixed the shape (yyyy-MM-dd HH:mm:ss,SSS): only the values can be wrong.
    try:
        local = datetime(int(text[0:4]), int(text[5:7]), int(text[8:10]), int(text[11:13]), int(text[14:16]),
                         int(text[17:19]), int(text[20:23]) * 1000)
    except ValueError:
        return None
    zone = _zone(zone_name)
    if zone is UTC:
        return local
    return local.replace(tzinfo=zone).astimezone(UTC).replace(tzinfo=None)


def _iso_time(text: str) -> datetime | None:
    """``try_to_timestamp(text)`` of a CSV export's ISO time (zone suffix honoured; naive UTC)."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value


@dataclass
class Record:
    """One log record: its start line and its continuation lines (``inner`` texts)."""

    start: MarkedLine
    continuation: list[str] = field(default_factory=list)
    continuation_lines: list[int] = field(default_factory=list)


def frame_lines(lines: Iterator[MarkedLine]) -> Iterator[Record | MarkedLine]:
    """Records (complete with their continuation lines) and orphan lines (before any record
    start), in line order: a record is yielded when the next start (or the end) is reached."""
    current: Record | None = None
    for line in lines:
        if line.line_format is not None:
            if current is not None:
                yield current
            current = Record(line)
        elif current is None:
            yield line
        else:
            current.continuation.append(line.inner)
            current.continuation_lines.append(line.line_number)
    if current is not None:
        yield current


def record_row(record: Record, provenance: dict[str, Any], zone_name: str) -> dict[str, Any]:
    """A record as the parsers read it (``epoch_audit.bronze.parsers`` documents the columns)."""
    start = record.start
    fmt, found, inner = start.line_format, start.match, start.inner
    ts_text: str | None = None
    event_time: datetime | None = None
    shard_text: str | None = None
    fixed_logger: str | None = None
    fixed_thread: str | None = None
    problem: str | None = None
    if fmt == "csv":
        level, logger_text = _group(found, 2), _group(found, 3)
        body = _group(found, 4).replace('""', '"')
        csv_ts = _group(found, 1)
        event_time = _iso_time(csv_ts)
        fixed_logger = logger_text
        if event_time is None:
            problem = "event_time: invalid timestamp " + csv_ts
    else:
        if fmt in ("kafka", "strimzi"):
            ts_text, level, body = _group(found, 1), _group(found, 2), _group(found, 3)
        elif fmt == "strimzi2":
            ts_text, level, body = _group(found, 1) + ",000", _group(found, 2), _group(found, 6)
            fixed_logger, fixed_thread = _group(found, 4), _group(found, 3)
        else:  # redpanda
            ts_text, level, body = _group(found, 2), _group(found, 1), _group(found, 6)
            fixed_logger, shard_text = _group(found, 5), _group(found, 3)
        event_time = local_time(ts_text, zone_name)
        if event_time is None:
            problem = "event_time: invalid timestamp " + ts_text
    shard = None
    if shard_text is not None:
        shard = int(shard_text) if shard_text.isdigit() and int(shard_text) < 1 << 31 else None
        if shard is None and problem is None:
            problem = "shard: value out of range " + shard_text
    continuation = "\n".join(record.continuation) if record.continuation else None
    message, logger, thread = body, fixed_logger, fixed_thread
    src_loc = None
    if fmt in ("kafka", "strimzi"):
        tail = _TAIL.search(body)
        if tail is not None:
            message, logger = _group(tail, 1), _group(tail, 2)
        else:
            full = body if continuation is None else body + "\n" + continuation
            multi = _MULTI_TAIL.search(full)
            if multi is not None:
                message, logger = _group(multi, 1), _group(multi, 2)
        if fmt == "strimzi":
            thread = _group(tail, 3)
    elif fmt == "redpanda":
        src = _SRC.search(body)
        message = _group(src, 1) + _group(src, 3) if src is not None else body
        src_loc = _group(src, 2)
    text = message if continuation is None else message + "\n" + continuation
    return {
        **provenance,
        "line_number": start.line_number,
        "line_count": len(record.continuation) + 1,
        "event_time": event_time,
        "level": level,
        "logger": logger or None,
        "thread": thread or None,
        "message": message,
        "text": text,
        "raw": inner if continuation is None else inner + "\n" + continuation,
        "line_format": "strimzi" if fmt == "strimzi2" else fmt,
        "shard": shard,
        "src_loc": src_loc,
        "problem": problem,
    }
