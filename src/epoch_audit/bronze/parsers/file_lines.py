"""What the file-level parsers (segment dumps, metadata dumps, checkpoints) share, in plain Python.

A file parser reads one file's lines in line order (:func:`epoch_audit.bronze.parsers.rows.map_files`).
The patterns here are written to read text the way the Java regexes of the JVM parsers did: Java's
``.`` does not match a line terminator (``\\r``, ``\\u0085``, ``\\u2028``, ``\\u2029``), and ``$``
(without MULTILINE) also matches before one final line terminator; :data:`DOT` and :data:`END`
spell that for Python's ``re``. ``\\d \\w \\s`` are ASCII (``java_regex``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from epoch_audit.bronze.parsers.rows import Row, java_regex

DOT = r"[^\n\r\u0085\u2028\u2029]"  # Java's ``.``
END = r"(?:\r\n|[\n\r\u0085\u2028\u2029])?\Z"  # Java's ``$`` (no MULTILINE)

PROVENANCE = ("file_id", "source_file", "cluster_id", "host_id", "file_order", "log_kind", "line_number")

_MIN_LONG, _MAX_LONG = -(1 << 63), (1 << 63) - 1
_MIN_INT, _MAX_INT = -(1 << 31), (1 << 31) - 1
_EPOCH = datetime(1970, 1, 1)
_TERMINATORS = "\u0085\u2028\u2029"


def _too_long(digits: str) -> bool:
    # beyond 19 significant digits no long fits (and int() refuses thousands of digits)
    return len(digits.lstrip("-").lstrip("0")) > 19


def to_long(digits: str | None) -> int | None:
    """Spark's ``try_cast(digits AS BIGINT)`` of a regex group ``-?\\d+`` (ASCII digits): None beyond int64."""
    if digits is None or len(digits) > 20 and _too_long(digits):
        return None
    n = int(digits)
    return n if _MIN_LONG <= n <= _MAX_LONG else None


def to_int(digits: str | None) -> int | None:
    """Spark's ``try_cast(digits AS INT)`` of a regex group ``-?\\d+`` (ASCII digits): None beyond int32."""
    if digits is None or len(digits) > 20 and _too_long(digits):
        return None
    n = int(digits)
    return n if _MIN_INT <= n <= _MAX_INT else None


def millis_time(ms: int | None) -> datetime | None:
    """Spark's ``timestamp_millis`` as a naive UTC datetime (None beyond Python's datetime range)."""
    if ms is None:
        return None
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None


def clean_line(text: str) -> str:
    """The line without a trailing carriage return (CRLF files): Spark's ``regexp_replace(text, '\\r$', '')``.

    Java's ``$`` also matches before a final line terminator, so ``\\r`` is dropped when it is last,
    or second to last before ``\\r`` / ``\\u0085`` / ``\\u2028`` / ``\\u2029``."""
    if "\r" not in text[-2:]:
        return text
    if text[-1] == "\r":
        return text[:-2] if text[-2:-1] == "\r" else text[:-1]
    return text[:-2] + text[-1] if text[-1] in _TERMINATORS else text


def provenance(line: Row) -> Row:
    """The provenance columns of an event read from ``line``."""
    return {name: line[name] for name in PROVENANCE}


_PARENT_DIR = java_regex(r"([^/\\]+)[/\\][^/\\]+" + END)
# Partition directory ``<topic>-<partition>``, also renamed ``.<32 hex>-delete|-future|-stray``.
_PARTITION_DIR = java_regex(
    r"^(" + DOT + r"+)-(\d+)(?:\.([0-9a-fA-F]{32})-(delete|future|stray))?" + END
)
# Host path segments that look like ``<name>-<n>`` but are not partition directories.
_HOST_DIR = java_regex(r"^(?:broker|node)[-=]\d+" + END)


def parent_dir(path: str | None) -> str | None:
    """Name of the directory holding the file at ``path`` ('' when the path has none)."""
    if path is None:
        return None
    m = _PARENT_DIR.search(path)
    return m.group(1) if m else ""


def partition_dir(directory: str | None) -> tuple[str | None, int | None, str | None]:
    """(topic, partition, dir state) of a partition directory ``<topic>-<partition>[.<id>-<state>]``.

    Topic names may contain ``-``: the greedy group splits on the last one (reference §0.3).
    All None when the directory is not a partition directory.
    """
    if directory is None:
        return None, None, None
    m = _PARTITION_DIR.search(directory)
    if m is None or _HOST_DIR.search(directory):
        return None, None, None
    return m.group(1), to_int(m.group(2)), m.group(4) or None


def drop_nulls(details: dict[str, Any]) -> dict[str, Any]:
    """A details map without its null entries."""
    return {k: v for k, v in details.items() if v is not None}
