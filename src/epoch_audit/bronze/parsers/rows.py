"""Arrow-side parsing: what every Python parser shares (issue #20, one pass without query plans).

A Python parser is a pure function from one input row (a record or a file line, as a dict) to the
rows it yields, run inside ``mapInArrow``: regexes are compiled once per worker, a literal keyword
routes a row to the few patterns that can match it, and no Spark plan grows with the number of
templates. Its rows carry text or Python values for the bronze columns; :func:`finish_row`
converts them exactly as :func:`epoch_audit.bronze.parsers.finish_events` does in the JVM (Spark's
safe casts: a value that does not fit its column makes the event malformed, naming the column).

Regexes: the patterns are written once for both engines. :func:`java_regex` compiles one the way
Java reads it where the two differ on log text: ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII
only (``re.ASCII``), and ``$1`` in replacements is Python's ``\\1`` (:func:`java_replacement`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from functools import cache
from itertools import groupby
from operator import itemgetter
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    TimestampType,
)

from epoch_audit.contracts.events import EVENT_SCHEMA

MALFORMED = "__malformed__"  # the event type of a line of a known format that cannot be parsed

# Provenance and text columns: set by the reader and the framing, never converted from log text.
TRUSTED = frozenset({
    "event_type", "cluster_id", "host_id", "source_file", "file_id", "file_order", "line_number", "sub_index",
    "log_kind", "level", "logger", "raw", "details", "event_time", "kafka_version_hint",
})

Row = dict[str, Any]
RowParser = Callable[[Row], Iterable[Row]]

_INT_BITS = {"int": 32, "bigint": 64}
# Spark's UTF8String.trimAll: whitespace and ISO control characters at both ends.
_TRIM = "".join(chr(c) for c in range(0x21)) + "\x7f"


@cache
def java_regex(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled with Java's meaning of ``\\d \\w \\s \\b`` (ASCII only); cached."""
    return re.compile(pattern, re.ASCII)


_DOLLAR_GROUP = re.compile(r"\$(\d+)")


def java_replacement(replacement: str) -> str:
    """A Java ``regexp_replace`` replacement (``$1``) as Python's (``\\g<1>``)."""
    return _DOLLAR_GROUP.sub(lambda m: "\\g<" + m.group(1) + ">", replacement.replace("\\", "\\\\"))


def _try_integral(value: Any, bits: int) -> int | None:
    """Spark's ``try_cast(value AS INT|BIGINT)``: trimmed, optional sign, digits only, in range."""
    if value is None:
        return None
    if isinstance(value, bool):
        number = int(value)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str):
        text = value.strip(_TRIM)
        body = text[1:] if text[:1] in "+-" else text
        if not body or not body.isascii() or not body.isdigit():
            return None
        if len(body.lstrip("0")) > 19:  # beyond any 64-bit value (and int() refuses 4,300+ digits)
            return None
        number = int(text)
    else:
        return None
    limit = 1 << (bits - 1)
    return number if -limit <= number < limit else None


_TRUE = frozenset({"t", "true", "y", "yes", "1"})
_FALSE = frozenset({"f", "false", "n", "no", "0"})


def _try_bool(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        text = value.strip(_TRIM).lower()
        return True if text in _TRUE else False if text in _FALSE else None
    return None


def try_cast(value: Any, dtype: DataType) -> Any:
    """``value`` as Spark's ``try_cast`` to ``dtype`` would give it (None where it does not fit)."""
    if value is None:
        return None
    if isinstance(dtype, (IntegerType, LongType)):
        return _try_integral(value, _INT_BITS[dtype.simpleString()])
    if isinstance(dtype, StringType):
        return value if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else str(value)
    if isinstance(dtype, BooleanType):
        return _try_bool(value)
    if isinstance(dtype, ArrayType):
        return [try_cast(v, dtype.elementType) for v in value]
    if isinstance(dtype, TimestampType):
        return value if isinstance(value, datetime) else None
    if isinstance(dtype, MapType):
        return {str(k): (None if v is None else str(v)) for k, v in value.items()}
    raise TypeError(f"no safe cast to {dtype.simpleString()}")


def event_id(file_id: Any, line_number: Any, sub_index: Any) -> str:
    """sha256 of ``file_id|line_number|sub_index`` (Spark's ``concat_ws`` skips nulls)."""
    key = "|".join(str(p) for p in (file_id, line_number, sub_index) if p is not None)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _caster(dtype: DataType) -> Callable[[Any], Any]:
    """A fast ``try_cast`` to ``dtype``: values already of the column's Python type pass through."""
    if isinstance(dtype, (IntegerType, LongType)):
        bits = _INT_BITS[dtype.simpleString()]
        limit = 1 << (bits - 1)

        def integral(value: Any) -> Any:
            if type(value) is int:
                return value if -limit <= value < limit else None
            return _try_integral(value, bits)

        return integral
    if isinstance(dtype, ArrayType):
        element = _caster(dtype.elementType)
        return lambda value: [None if v is None else element(v) for v in value]
    native = {StringType: str, BooleanType: bool, TimestampType: datetime}.get(type(dtype))
    if native is not None:
        return lambda value: value if type(value) is native else try_cast(value, dtype)
    if isinstance(dtype, MapType):  # details: string values pass through
        return lambda value: value if all(type(v) is str for v in value.values()) else try_cast(value, dtype)
    return lambda value: try_cast(value, dtype)


_EVENT_COLUMNS = tuple(f.name for f in EVENT_SCHEMA.fields)


def _native(dtype: DataType) -> tuple[type | None, int | None]:
    """(the Python type a value of ``dtype`` already has when no cast is needed, the bound of an
    integral one): such a value is kept as it is without a call (None: always cast)."""
    if isinstance(dtype, (IntegerType, LongType)):
        return int, 1 << (_INT_BITS[dtype.simpleString()] - 1)
    return {StringType: str, BooleanType: bool, TimestampType: datetime}.get(type(dtype)), None


# column -> (its position, its native type and integral bound, fast safe cast, checked for misfits,
# an array, the misfit reason)
_FINISH_PLAN = {
    f.name: (position, *_native(f.dataType), _caster(f.dataType), f.name not in TRUSTED,
             isinstance(f.dataType, ArrayType), f"{f.name}: value out of range for {f.dataType.simpleString()}")
    for position, f in enumerate(EVENT_SCHEMA.fields) if f.name != "event_id"
}


def finish_row(row: Row) -> Row:
    """A parser's row completed to the bronze schema (EVENT_SCHEMA order), as finish_events does:
    safe casts, deterministic id, and the first value (in column order) that does not fit its
    column makes the event malformed with ``{"reason": "<column>: value out of range for <type>"}``."""
    sub_index = row.get("sub_index")
    if sub_index is None:
        sub_index = row["sub_index"] = 0
    out: Row = dict.fromkeys(_EVENT_COLUMNS)
    out["event_id"] = event_id(row.get("file_id"), row.get("line_number"), sub_index)
    misfit: tuple[int, str] | None = None
    plans = _FINISH_PLAN
    for name, source in row.items():
        if source is None:
            continue
        plan = plans.get(name)
        if plan is None:
            continue
        position, native, bound, cast, checked, is_array, reason = plan
        # the common case inline: a value of the column's own type (an integer inside its range)
        if type(source) is native and (bound is None or -bound <= source < bound):
            out[name] = source
            continue
        value = cast(source)
        out[name] = value
        if checked and (value is None or (is_array and None in value)) and (misfit is None or position < misfit[0]):
            misfit = (position, reason)
    if misfit is not None and out["event_type"] != MALFORMED:
        out["event_type"] = MALFORMED
        out["details"] = {"reason": misfit[1]}
    return out


def arrow_type(dtype: DataType) -> pa.DataType:
    """The Arrow type Spark's mapInArrow expects for ``dtype``."""
    if isinstance(dtype, IntegerType):
        return pa.int32()
    if isinstance(dtype, LongType):
        return pa.int64()
    if isinstance(dtype, StringType):
        return pa.string()
    if isinstance(dtype, BooleanType):
        return pa.bool_()
    if isinstance(dtype, TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(dtype, DateType):
        return pa.date32()
    if isinstance(dtype, ArrayType):
        return pa.list_(arrow_type(dtype.elementType))
    if isinstance(dtype, MapType):
        return pa.map_(arrow_type(dtype.keyType), arrow_type(dtype.valueType))
    raise TypeError(dtype)


EVENT_ARROW_SCHEMA = pa.schema([pa.field(f.name, arrow_type(f.dataType), f.nullable) for f in EVENT_SCHEMA.fields])


def rows_to_batch(rows: list[Row]) -> pa.RecordBatch:
    """Finished rows (EVENT_SCHEMA) -> one Arrow batch (a missing key is null, a dict is a map, a
    naive time is UTC: Arrow's converter reads them as bronze means them)."""
    return pa.RecordBatch.from_pylist(rows, schema=EVENT_ARROW_SCHEMA)


BATCH_ROWS = 10_000  # rows per output Arrow batch


def parse_batches(batches: Iterable[pa.RecordBatch], parse_one: RowParser) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: every input row through ``parse_one``, finished, in bounded batches."""
    out: list[Row] = []
    for batch in batches:
        for row in batch.to_pylist():
            for parsed in parse_one(row):
                out.append(finish_row(parsed))
            if len(out) >= BATCH_ROWS:
                yield rows_to_batch(out)
                out = []
    if out:
        yield rows_to_batch(out)


def map_rows(frame: DataFrame, parse_one: RowParser) -> DataFrame:
    """``frame``'s rows through a Python parser: bronze-schema rows (finished), one Spark stage.

    ``parse_one`` must be a module-level function (workers import it by name)."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return parse_batches(batches, parse_one)

    return frame.mapInArrow(run, EVENT_SCHEMA)


def parse_locally(rows: Iterable[Row], parse_one: RowParser) -> list[Row]:
    """The same as :func:`map_rows` without Spark (tests, the golden comparisons): finished rows."""
    return [finish_row(parsed) for row in rows for parsed in parse_one(row)]


FileParser = Callable[[Iterator[Row]], Iterable[Row]]


def _file_runs(batches: Iterable[pa.RecordBatch]) -> Iterator[Iterator[Row]]:
    """Consecutive rows of one file_id (rows sorted by file_id, line_number) as one iterator each,
    across Arrow batch boundaries (``groupby`` skips what a parser left unread)."""
    rows = (row for batch in batches for row in batch.to_pylist())
    for _, lines in groupby(rows, key=itemgetter("file_id")):
        yield lines


def map_files(frame: DataFrame, parse_file: FileParser) -> DataFrame:
    """``frame``'s lines, file by file in line order, through a Python file parser (a dump or a
    checkpoint reads lines in the context of the lines above them): finished bronze rows.

    ``parse_file`` gets one file's lines (``line_number`` order) as an iterator and yields rows;
    it must be a module-level function (workers import it by name)."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out: list[Row] = []
        for lines in _file_runs(batches):
            for parsed in parse_file(lines):
                out.append(finish_row(parsed))
                if len(out) >= BATCH_ROWS:
                    yield rows_to_batch(out)
                    out = []
        if out:
            yield rows_to_batch(out)

    ordered = frame.repartition("file_id").sortWithinPartitions("file_id", "line_number")
    return ordered.mapInArrow(run, EVENT_SCHEMA)


def parse_files_locally(lines: Iterable[Row], parse_file: FileParser) -> list[Row]:
    """:func:`map_files` without Spark: ``lines`` of any files, finished rows."""
    ordered = sorted(lines, key=lambda r: (r["file_id"], r["line_number"]))
    out: list[Row] = []
    for file_lines in _file_runs([pa.RecordBatch.from_pylist(ordered)] if ordered else []):
        out.extend(finish_row(parsed) for parsed in parse_file(file_lines))
    return out
