"""Spark's ``from_json(body, schema, mode PERMISSIVE)`` of a request-log line, in Python.

The request-log parser read its JSON with Spark's Jackson-based ``from_json``; this module gives the
same values and the same verdict (the "corrupt record" flag that makes a line malformed):

* a value that does not fit its field (a number beyond int32 / int64, a float or a string for a
  number, a non-boolean for a boolean, a scalar for a struct or an array, ``""`` for a non-string)
  flags the record corrupt and reads as null; a struct around it keeps its other fields (Spark's
  partial results), an array of scalars holding one becomes null as a whole, an array of structs
  keeps its (partial) elements;
* a key repeated in one object: every occurrence is converted in order, the last one that
  converts wins (a null one too) and any one that does not flags the record;
* a string field holding another JSON value reads as Jackson re-prints it (``12``, ``1.5``,
  ``{"k":[1,2500.0]}``, ``"Infinity"``);
* text after the closing brace of the object is ignored; a lone UTF-16 surrogate reads as ``?``;
* JSON that Python's ``json`` does not read (cut short, a stray byte, single quotes) is left to
  :mod:`~epoch_audit.bronze.parsers.request_log_jackson`, which replays Jackson's recovery.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

_BAD = object()  # a value that does not convert to its field's type (Spark's conversion error)
INT32_LIMIT = 1 << 31
INT64_LIMIT = 1 << 63
# Jackson's StreamReadConstraints: longer numbers and deeper nesting are parse errors
_MAX_NUMBER_CHARS = 1000
_LONG_NUMBER = re.compile(r"\d{" + str(_MAX_NUMBER_CHARS + 1) + "}")
_SURROGATE = re.compile("[\ud800-\udfff]")


class Pairs(dict):
    """A JSON object that repeats a key: its (key, value) pairs in order, as Spark reads them."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]] | None = None) -> None:
        super().__init__(pairs or ())
        self.pairs = pairs if pairs is not None else []


def _object(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    return obj if len(obj) == len(pairs) else Pairs(pairs)


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > _MAX_NUMBER_CHARS:
        raise ValueError("number too long")
    return int(text)


def _bounded_float(text: str) -> float:
    if len(text) > _MAX_NUMBER_CHARS:
        raise ValueError("number too long")
    return float(text)


_DECODER = json.JSONDecoder(object_pairs_hook=_object)
# for a body holding a long run of digits (a number token or just a string's digits)
_BOUNDED_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_int=_bounded_int, parse_float=_bounded_float)

Converter = Callable[[Any, list], Any]


def _java_double(x: float) -> str:
    """Java's ``Double.toString`` (what Jackson prints for a JSON float)."""
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign, digits, exponent = Decimal(repr(x)).as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exponent)  # digits before the decimal point
    prefix = "-" if sign else ""
    if -3 < point <= 7:  # 1e-3 <= |x| < 1e7: plain notation
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{text}"
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return f"{prefix}{whole}.{frac or '0'}"
    return f"{prefix}{text[0]}.{text[1:] or '0'}E{point - 1}"


def jackson_json(value: Any) -> str:
    """``value`` (parsed JSON) printed back as Jackson's generator prints a copied structure."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return '"NaN"' if math.isnan(value) else '"Infinity"' if value > 0 else '"-Infinity"'
        return _java_double(value)
    if isinstance(value, str):
        return json.dumps(no_surrogates(value), ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(jackson_json(v) for v in value) + "]"
    items = value.pairs if type(value) is Pairs else value.items()
    return "{" + ",".join(jackson_json(k) + ":" + jackson_json(v) for k, v in items) + "}"


def no_surrogates(text: str) -> str:
    """A lone surrogate (``\\ud800`` in the JSON) as Spark's UTF-8 conversion writes it: ``?``."""
    return text if text.isascii() else _SURROGATE.sub("?", text)


def _leaf(kind: str) -> Converter:
    if kind in ("int", "bigint"):
        limit = INT32_LIMIT if kind == "int" else INT64_LIMIT

        def number(v: Any, bad: list) -> Any:
            if v is None or (type(v) is int and -limit <= v < limit):
                return v
            bad[0] = True
            return _BAD

        return number
    if kind == "boolean":

        def boolean(v: Any, bad: list) -> Any:
            if v is None or type(v) is bool:
                return v
            bad[0] = True
            return _BAD

        return boolean
    assert kind == "string", kind

    def string(v: Any, bad: list) -> Any:
        if type(v) is str:
            return no_surrogates(v)
        return None if v is None else jackson_json(v)

    return string


def compile_schema(schema: Any) -> Converter:
    """A converter ``(parsed JSON value, bad flag list) -> value`` for one schema type (see
    :mod:`~epoch_audit.bronze.parsers.request_log_schemas`); it sets ``bad[0]`` on any misfit.
    A value that converts to itself is returned as is (no copy of the parsed JSON); a struct may
    keep keys outside its schema (readers only look up the schema's fields)."""
    if isinstance(schema, str):
        return _leaf(schema)
    if isinstance(schema, list):
        element = compile_schema(schema[0])

        def array(v: Any, bad: list) -> Any:
            if v is None:
                return None
            if type(v) is not list:
                bad[0] = True
                return _BAD
            out = v
            for i, x in enumerate(v):
                got = element(x, bad)
                if got is not x:
                    if got is _BAD:  # one element that does not convert: the whole array is null
                        return _BAD
                    if out is v:
                        out = list(v)
                    out[i] = got
            return out

        return array
    fields = {name: compile_schema(sub) for name, sub in schema.items()}

    def struct(v: Any, bad: list) -> Any:
        if v is None:
            return None
        if type(v) is Pairs:
            out = {}
            for key, x in v.pairs:
                convert = fields.get(key)
                if convert is not None:
                    got = convert(x, bad)
                    if got is not _BAD:  # a misfit leaves the field as it was (null, or an earlier duplicate)
                        out[key] = got
            return out
        if type(v) is not dict:
            bad[0] = True
            return _BAD
        out = v
        for key, x in v.items():
            convert = fields.get(key)
            if convert is not None:
                got = convert(x, bad)
                if got is not x:
                    if out is v:
                        out = dict(v)
                    out[key] = None if got is _BAD else got
        return out

    return struct


def from_json(body: str, convert: Converter) -> tuple[dict, bool] | None:
    """(the record's fields, corrupt) as Spark's PERMISSIVE ``from_json`` gives them (a corrupt
    record keeps Spark's partial fields); None when ``body`` is not JSON that Python reads."""
    long_digits = len(body) > _MAX_NUMBER_CHARS and _LONG_NUMBER.search(body) is not None
    try:
        parsed, _ = (_BOUNDED_DECODER if long_digits else _DECODER).raw_decode(body)
    except (ValueError, RecursionError):
        return None
    bad = [False]
    row = convert(parsed, bad)
    return (row if isinstance(row, dict) else {}), bad[0]
