"""A metadata record's decoded payload ``{"type":..,"version":..,"data":{..}}`` read like Spark's
``from_json`` with a fixed schema (reference §3.1): the fields the events need, each converted by
its JSON token, a value of the wrong kind null (Spark's partial results), unknown fields ignored.

``fenced`` and ``inControlledShutdown`` are bool in RegisterBrokerRecord but int8 tri-states in
BrokerRegistrationChangeRecord: read as strings (a non-string JSON scalar keeps its text, as Spark
does) and interpreted per record type by the parser.
"""

from __future__ import annotations

import json
import re
from typing import Any

_INT32 = 1 << 31
_INT64 = 1 << 63


def _int(value: Any, limit: int) -> int | None:
    # JSON integer tokens only (not bool, not 1.0); out of range does not convert
    if type(value) is int and -limit <= value < limit:
        return value
    return None


def _int32(value: Any) -> int | None:
    return _int(value, _INT32)


def _int64(value: Any) -> int | None:
    return _int(value, _INT64)


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _java_double(value: float) -> str:
    """A JSON float as Jackson re-prints it (Java's ``Double.toString``; exponents where Python's
    ``repr`` uses them)."""
    if value != value or value in (float("inf"), float("-inf")):
        return {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[repr(value)]
    mantissa, _, exponent = repr(value).partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}E{int(exponent)}" if exponent else mantissa


def _string(value: Any) -> str | None:
    """A string field: a JSON string as is; any other token as its JSON text (Spark keeps it)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _ints(value: Any) -> list[int | None] | None:
    """array<int>: JSON nulls stay null elements (finish_row then quarantines the event); an
    element that is no int32 makes the whole array null (as Spark's reader does)."""
    if not isinstance(value, list):
        return None
    out: list[int | None] = []
    for v in value:
        n = _int32(v)
        if n is None and v is not None:
            return None
        out.append(n)
    return out


DATA_FIELDS = {
    "brokerId": _int32,
    "brokerEpoch": _int64,
    "id": _int32,
    "epoch": _int64,
    "incarnationId": _string,
    "isMigratingZkBroker": _bool,
    "rack": _string,
    "fenced": _string,
    "inControlledShutdown": _string,
    "name": _string,
    "topicId": _string,
    "partitionId": _int32,
    "replicas": _ints,
    "isr": _ints,
    "removingReplicas": _ints,
    "addingReplicas": _ints,
    "leader": _int32,
    "leaderRecoveryState": _int32,
    "leaderEpoch": _int32,
    "partitionEpoch": _int32,
    "eligibleLeaderReplicas": _ints,
    "lastKnownElr": _ints,
    "reason": _string,
}
_NO_DATA: dict[str, Any] = dict.fromkeys(DATA_FIELDS)


def _parse_constant(name: str) -> float:
    return float(name)  # NaN / Infinity, which Spark's JSON reader accepts


_LENIENT = json.JSONDecoder(parse_constant=_parse_constant)


# Spark's JSON reader also takes 'single-quoted' strings: the fallback rewrites them as "...".
_STRINGS = re.compile(r""""(?:[^"\\]|\\.)*"|'((?:[^'\\]|\\.)*)'""", re.S)


def _double_quoted(match: re.Match[str]) -> str:
    body = match.group(1)
    if body is None:
        return match.group(0)
    return '"' + re.sub(r"\\'|\"", lambda m: "'" if m.group(0) == "\\'" else '\\"', body) + '"'


def _decode(text: str) -> Any:
    try:
        return _LENIENT.raw_decode(text)[0]
    except ValueError:
        if "'" not in text:
            raise
        return _LENIENT.raw_decode(_STRINGS.sub(_double_quoted, text))[0]


def read_payload(payload: str) -> tuple[str | None, int | None, dict[str, Any]]:
    """(type, version, data fields) of a payload; type None when it is no JSON object (unreadable).

    Like Spark's reader, text after the root object is not read."""
    try:
        root = _decode(payload.lstrip(" \t\r\n"))
    except (ValueError, RecursionError):
        return None, None, _NO_DATA
    if not isinstance(root, dict):
        return None, None, _NO_DATA
    data = root.get("data")
    fields = {k: conv(data.get(k)) for k, conv in DATA_FIELDS.items()} if isinstance(data, dict) else _NO_DATA
    return _string(root.get("type")), _int32(root.get("version")), fields
