"""Segment-dump batch lines (``baseOffset: ...``) a batch at a time, in Arrow (issue #20).

:func:`~epoch_audit.bronze.parsers.segment_dump.parse_batch_line` reads a line in Python; here a
batch of ASCII lines is matched by RE2 with the same pattern and its fields are converted by Arrow,
the same values as the per-line reader's (``tests/unit/test_segment_dump_arrow.py`` compares the
two on real and hostile dumps). A batch holding a line that does not match, a control batch (whose
marker line the per-line reader looks for), or a number of more than 18 digits is left to it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from epoch_audit.bronze.parsers.file_lines import END
from epoch_audit.bronze.parsers.segment_dump import BATCH_V2

# RE2 reads the per-line pattern alike on ASCII text without line terminators (the caller's test),
# where Java's ``$`` is the end of the line
_PATTERN = BATCH_V2.pattern.removesuffix(END) + "$"
# the same without its names: RE2 tells a match by its DFA alone, about four times faster than it
# extracts the groups (which needs its NFA); a matching line's fields are then its tokens
_MATCH_ONLY = re.sub(r"\(\?P<\w+>", "(?:", _PATTERN)
# a matching line split at its spaces is "<key>: <value>" pairs (no value holds a space), the
# deleteHorizonMs pair only from Kafka 3.2 on; the time stamp's key is its type
_PAIRS = ("baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId", "producerEpoch",
          "partitionLeaderEpoch", "isTransactional", "isControl", "deleteHorizonMs", "position", "tsType", "size",
          "magic", "compresscodec", "crc", "isvalid")
_LEGACY_PAIRS = tuple(key for key in _PAIRS if key != "deleteHorizonMs")
_HORIZON_PREFIX = "OptionalLong["
_LONGS = ("baseOffset", "lastOffset", "producerId", "ts")
_INTS = ("partitionLeaderEpoch", "producerEpoch")
_MAX_DIGITS = 18  # a -?\d+ of at most 18 characters fits a long: Arrow's cast then equals try_cast
_INT32 = (-(1 << 31), (1 << 31) - 1)
# datetime's range (millis_time gives None outside it)
_MIN_MS, _MAX_MS = -62_135_596_800_000, 253_402_300_799_999
_DETAILS = (("count", "count"), ("base_sequence", "baseSequence"), ("last_sequence", "lastSequence"),
            ("timestamp_type", "tsType"), ("max_timestamp", "ts"), ("position", "position"), ("size", "size"),
            ("magic", "magic"), ("compresscodec", "compresscodec"), ("crc", "crc"), ("isvalid", "isvalid"),
            ("delete_horizon_ms", "horizon"))


def _null_if_empty(values: pa.Array) -> pa.Array:
    """An optional group that took no part: "" from RE2, None from Python's ``re``."""
    return pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)


def _groups(lines: pa.Array) -> dict[str, pa.Array] | None:
    """Each named group of the per-line pattern over ``lines`` as RE2 extracts it ("" where an
    optional group took no part), or None when a line does not match."""
    if not pc.all(pc.match_substring_regex(lines, _MATCH_ONLY)).as_py():
        return None
    tokens = pc.split_pattern(lines, " ")
    sizes = pc.min_max(pc.list_value_length(tokens))
    size = sizes["min"].as_py()
    pairs = {2 * len(_PAIRS): _PAIRS, 2 * len(_LEGACY_PAIRS): _LEGACY_PAIRS}.get(size)
    if pairs is None or sizes["max"].as_py() != size:  # dumps of both layouts in one chunk: extracted
        groups = pc.extract_regex(lines, _PATTERN)
        return {name: pc.struct_field(groups, name) for name in (f.name for f in groups.type)}
    g = {key: pc.list_element(tokens, 2 * k + 1) for k, key in enumerate(pairs)}
    g["ts"] = g["tsType"]  # "CreateTime: <ts>": the key names the type
    g["tsType"] = pc.utf8_slice_codeunits(pc.list_element(tokens, 2 * pairs.index("tsType")), 0, -1)
    none = pa.array([""] * len(lines), pa.string())
    horizon = g.get("deleteHorizonMs", none)
    g["deleteHorizonMs"] = horizon
    g["horizon"] = pc.if_else(pc.starts_with(horizon, _HORIZON_PREFIX),
                              pc.utf8_slice_codeunits(horizon, len(_HORIZON_PREFIX), -1), none)
    return g


def parse_batch_lines(texts: Sequence[str]) -> tuple[dict[str, pa.Array], list[tuple[str, pa.Array]]] | None:
    """(event columns, details columns in the per-line order) of magic >= 2 batch lines, or None when
    a line is one this module does not read alike."""
    g = _groups(pa.array(texts, pa.string()))
    if g is None:
        return None
    is_control = pc.equal(g["isControl"], "true")
    if pc.any(is_control).as_py():
        return None
    numbers = {}
    for name in _LONGS + _INTS:
        if pc.max(pc.utf8_length(g[name])).as_py() > _MAX_DIGITS:
            return None
        numbers[name] = pc.cast(g[name], pa.int64())
    for name in _INTS:
        value = numbers[name]
        fits = pc.and_(pc.greater_equal(value, _INT32[0]), pc.less_equal(value, _INT32[1]))
        numbers[name] = pc.if_else(fits, value, pa.scalar(None, pa.int64())).cast(pa.int32())
    ts, ts_type = numbers["ts"], g["tsType"]
    timed = pc.and_(pc.not_equal(ts_type, "NoTimestampType"), pc.greater_equal(ts, 0))
    in_range = pc.and_(pc.greater_equal(ts, _MIN_MS), pc.less_equal(ts, _MAX_MS))
    event_ms = pc.if_else(pc.and_(timed, in_range), ts, pa.scalar(None, pa.int64()))
    horizon_printed = pc.not_equal(g["deleteHorizonMs"], "")
    columns = {
        "offset": numbers["baseOffset"], "last_offset": numbers["lastOffset"],
        "leader_epoch": numbers["partitionLeaderEpoch"], "producer_id": numbers["producerId"],
        "producer_epoch": numbers["producerEpoch"], "is_transactional": pc.equal(g["isTransactional"], "true"),
        "is_control": is_control,
        "create_time_ms": pc.if_else(pc.equal(ts_type, "CreateTime"), ts, pa.scalar(None, pa.int64())),
        "_event_micros": pc.multiply(event_ms, 1000),
        "kafka_version_hint": pc.if_else(horizon_printed, pa.scalar("3.2+"), pa.scalar("2.6-3.1")),
    }
    details = [(key, _null_if_empty(g[group]) if group == "horizon" else g[group]) for key, group in _DETAILS]
    return columns, details
