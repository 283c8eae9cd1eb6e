"""Spark SQL's string functions as the Python parsers need them, with the JVM's exact results.

The template regexes and the derivations were written for Java's regex engine (``regexp_extract``,
``regexp_replace`` ...). :func:`java_pattern` compiles one with Java's meaning where the engines
differ on log text: ``.`` does not match a line terminator (``\\n \\r \\u0085 \\u2028 \\u2029``) unless
the pattern starts with ``(?s)``; ``$`` also matches before a final line terminator (but not between
``\\r`` and ``\\n``); ``\\d \\w \\s \\b`` are ASCII only. The other helpers follow the Spark function
of the same name: null in, null out; ``""`` where Spark gives ``""`` (no match, group not taking part).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import cache
from typing import Any

from pyspark.sql.types import BooleanType, DataType, IntegerType, LongType, StringType

from epoch_audit.bronze.parsers.rows import try_cast

_JAVA_DOT = r"[^\n\r\x85\u2028\u2029]"
# Java's ``$`` without MULTILINE: at the end, or before a final line terminator (not inside \r\n).
_JAVA_END = r"(?=(?:\r\n|[\r\x85\u2028\u2029]|(?<!\r)\n)?\Z)"
_INT, _LONG, _BOOL = IntegerType(), LongType(), BooleanType()


def _java_syntax(pattern: str) -> tuple[str, int]:
    """``pattern`` rewritten so Python's engine reads ``.`` and ``$`` as Java does; the flags to use."""
    dotall = pattern.startswith("(?s)")
    body = pattern[4:] if dotall else pattern
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\":
            out.append(body[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
            out.append(c)
        elif c == "[":
            in_class = True
            out.append(c)
        elif c == "." and not dotall:
            out.append(_JAVA_DOT)
        elif c == "$":
            out.append(_JAVA_END)
        else:
            out.append(c)
        i += 1
    return "".join(out), re.ASCII | (re.DOTALL if dotall else 0)


@cache
def java_pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` (Java regex text, Python named groups allowed) compiled with Java's semantics; cached."""
    text, flags = _java_syntax(pattern)
    return re.compile(text, flags)


def regexp_extract(s: str | None, pattern: str, idx: int) -> str | None:
    """Spark ``regexp_extract``: group ``idx`` of the first match; ``""`` without a match."""
    if s is None:
        return None
    m = java_pattern(pattern).search(s)
    return (m.group(idx) or "") if m else ""


def regexp_extract_all(s: str | None, pattern: str, idx: int) -> list[str] | None:
    """Spark ``regexp_extract_all``: group ``idx`` of every match (``""`` where it took no part)."""
    if s is None:
        return None
    return [m.group(idx) or "" for m in java_pattern(pattern).finditer(s)]


def regexp_groups_all(s: str | None, pattern: str) -> list[tuple[str, ...]] | None:
    """Every match's groups (``""`` for a group taking no part): several ``regexp_extract_all`` at once."""
    if s is None:
        return None
    return [tuple(g or "" for g in m.groups()) for m in java_pattern(pattern).finditer(s)]


def nz(s: str | None) -> str | None:
    """``when(s != "", s)``: the empty string as null."""
    return s if s else None


def substring_index_last(s: str | None, delim: str) -> str | None:
    """Spark ``substring_index(s, delim, -1)``: the text after the last ``delim`` (all of it without one)."""
    if s is None:
        return None
    return s.rsplit(delim, 1)[-1]


_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _integral(value: Any, low: int, high: int, dtype: DataType) -> int | None:
    """``try_cast`` to INT / BIGINT, with a fast path for what regexes extract (``-?\\d+``) and ints."""
    if type(value) is str:
        if value.isascii() and (value[1:] if value[:1] == "-" else value).isdigit():
            number = int(value)
            return number if low <= number <= high else None
    elif type(value) is int:
        return value if low <= value <= high else None
    return try_cast(value, dtype)


def to_int(value: Any) -> int | None:
    """``try_cast(value AS INT)``."""
    return None if value is None else _integral(value, _INT_MIN, _INT_MAX, _INT)


def to_long(value: Any) -> int | None:
    """``try_cast(value AS BIGINT)``."""
    return None if value is None else _integral(value, _LONG_MIN, _LONG_MAX, _LONG)


def to_bool(value: Any) -> bool | None:
    """``try_cast(value AS BOOLEAN)``."""
    return try_cast(value, _BOOL)


def cast(value: Any, dtype: DataType) -> Any:
    """``try_cast(value AS dtype)`` (:func:`epoch_audit.bronze.parsers.rows.try_cast`, faster on the common types)."""
    if value is None:
        return None
    if isinstance(dtype, StringType) and type(value) is str:
        return value
    if isinstance(dtype, IntegerType):
        return _integral(value, _INT_MIN, _INT_MAX, _INT)
    if isinstance(dtype, LongType):
        return _integral(value, _LONG_MIN, _LONG_MAX, _LONG)
    return try_cast(value, dtype)


_INTEGER = r"-?\d+"


def int_list(s: str | None, long: bool = False) -> list[int | None] | None:
    """Every integer in a printed list, any form: 1,2 / [1, 2] / List(1, 2) / Set() -> list.

    An element beyond the type is a null element (the line is then quarantined), as try_cast gives it."""
    if s is None:
        return None
    cast = to_long if long else to_int
    return [cast(x) for x in java_pattern(_INTEGER).findall(s)]


def array_except(a: list[Any] | None, b: Iterable[Any] | None) -> list[Any] | None:
    """Spark ``array_except``: the elements of ``a`` not in ``b``, without duplicates, in ``a``'s order."""
    if a is None or b is None:
        return None
    drop = set(b)
    out: list[Any] = []
    for x in a:
        if x not in drop:
            drop.add(x)
            out.append(x)
    return out
