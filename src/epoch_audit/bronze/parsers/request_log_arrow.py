"""The request log's FETCH and PRODUCE lines a batch at a time, in Arrow (issue #20).

Nearly every line of a busy broker's request log is a FETCH or a PRODUCE naming one partition.
:mod:`~epoch_audit.bronze.parsers.request_log` reads a line in about 60 us of Python (its JSON with
Spark's type rules, the events as dicts, the finished row); here a batch of such records is read by
Arrow's JSON reader with the same explicit schema and its events are built as Arrow columns, the
same values in the same columns (``tests/unit/test_request_log_arrow.py`` compares the two readings
on real and hostile lines).

A record is read here only where the two readings cannot differ; any other record goes back to the
per-line parser, which stays the definition:

* the JSON: Arrow's reader refuses everything Spark's ``from_json`` flags or re-prints (a repeated
  key, a number beyond its field or with a fraction, a string where a number is or the reverse, a
  lone surrogate, a scalar for a struct, text after the object): a batch it refuses is split in
  halves until the lines it refuses are found. What Arrow would accept and Spark refuse is kept out
  before: control characters, ``NaN`` / ``Inf`` tokens, nesting deeper than Jackson's limit (more
  than :data:`MAX_BRACKETS` brackets), a digit run near Jackson's number length limit;
* the shape: one topic with one partition in the request and in the response, matched to each
  other by the request parser's topic rule (name where both name one, else the topic id), so the
  line yields exactly one event, ``sub_index`` 0, and no response-only partition.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from epoch_audit.bronze.parsers.arrow_rows import FileConstants, details_map, pass_batch
from epoch_audit.bronze.parsers.request_log_schemas import API_EVENT_TYPES, ERROR_NAMES, PREFIX, SCHEMAS

FAST_APIS = ("FETCH", "PRODUCE")
REQUEST_LOGGER = "kafka.request.logger"
MAX_BRACKETS = 256  # Jackson refuses nesting deeper than 1000: fewer brackets than that cannot nest so deep
# request_log's API is its regex's first match: the first key when its value is an API name, as here
_API_KEY = '"requestApiKeyName":"'
# JSON Arrow would read and Spark not, or not alike: control characters, a NaN / Inf token (or a
# string that looks like one), a run of digits near Jackson's 1000-character number limit
_LONG_DIGITS = 900
_NOT_ARROWS = re.compile(r"[\x00-\x1f]|[:,\[ +-](?:NaN|Inf|INF)|[0-9]{" + str(_LONG_DIGITS) + "}")
_NOT_CONTROL = bytes(range(0x20, 256)) + b"\n"  # deleted, what is left of a batch is its control characters
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= c <= 0x39 else 0x78 for c in range(256))
_SPLIT_BELOW = 8  # a refused batch this small goes back to the per-line parser whole
_ARROW_LEAF = {"int": pa.int32(), "bigint": pa.int64(), "string": pa.string(), "boolean": pa.bool_()}


def arrow_schema_type(schema: Any) -> pa.DataType:
    """A ``request_log_schemas`` type as Arrow's (struct: dict, array: one-element list, leaf: name)."""
    if isinstance(schema, str):
        return _ARROW_LEAF[schema]
    if isinstance(schema, list):
        return pa.list_(arrow_schema_type(schema[0]))
    return pa.struct([(name, arrow_schema_type(sub)) for name, sub in schema.items()])


_PARSE_OPTIONS = {
    api: pajson.ParseOptions(explicit_schema=pa.schema(list(arrow_schema_type(SCHEMAS[api]))),
                             unexpected_field_behavior="ignore")
    for api in FAST_APIS
}


def eligible_apis(messages: Sequence[str]) -> list[str | None]:
    """Per message: FETCH or PRODUCE when this module may read it, else None (the per-line parser).
    ``messages`` start with ``Completed request:{`` and end with ``}`` (the caller's test)."""
    suspicious = _suspicious("\n".join(messages).encode("utf-8"))
    out: list[str | None] = []
    for message in messages:
        at = message.find(_API_KEY)
        api = message[at + len(_API_KEY):message.find('"', at + len(_API_KEY))] if at >= 0 else None
        if api not in FAST_APIS or message.count("{") + message.count("[") > MAX_BRACKETS or (
                suspicious and _NOT_ARROWS.search(message)):
            api = None
        out.append(api)
    return out


def _suspicious(data: bytes) -> bool:
    """Whether some line of ``data`` (lines joined by newlines) may hold what :data:`_NOT_ARROWS` finds."""
    if data.translate(None, _NOT_CONTROL):
        return True
    if b"0" * _LONG_DIGITS in data.translate(_DIGITS_AS_ZERO):
        return True
    codes = np.frombuffer(data + b"   ", np.uint8)  # padded: a token's next two bytes always exist
    starts = np.flatnonzero((codes == ord("N")) | (codes == ord("I")))
    if len(starts) == 0:
        return False
    before = codes[np.maximum(starts - 1, 0)]
    after = codes[starts + 1].astype(np.int32) * 256 + codes[starts + 2]
    token = np.isin(after, [ord("a") * 256 + ord("N"), ord("n") * 256 + ord("f"), ord("N") * 256 + ord("F")])
    return bool((token & np.isin(before, list(b":,[ +-"))).any())


def _read_json(bodies: list[str], api: str) -> list[tuple[list[int], pa.StructArray]]:
    """(positions in ``bodies``, their parsed rows) for every run of bodies Arrow reads; the
    positions it refuses are in no run."""
    out: list[tuple[list[int], pa.StructArray]] = []
    pending = [list(range(len(bodies)))]
    while pending:
        positions = pending.pop()
        data = "\n".join(bodies[i] for i in positions).encode("utf-8")
        try:
            table = pajson.read_json(
                io.BytesIO(data), parse_options=_PARSE_OPTIONS[api],
                read_options=pajson.ReadOptions(use_threads=False, block_size=max(len(data) + 1, 1 << 20)),
            )
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            if len(positions) > _SPLIT_BELOW:
                half = len(positions) // 2
                pending += [positions[half:], positions[:half]]
            continue
        if table.num_rows != len(positions):  # never seen; the per-line parser then reads them
            continue
        out.append((positions, table.to_struct_array().combine_chunks()))
    return out


def _field(array: pa.Array, *names: str) -> pa.Array:
    for name in names:
        array = pc.struct_field(array, name)
    return array


def _only(lists: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(the single element of each list, whether the list holds exactly one non-null element)."""
    single = pc.fill_null(pc.equal(pc.list_value_length(lists), 1), False)
    element = pc.list_element(pc.if_else(single, lists, pa.scalar(None, lists.type)), 0)
    return element, pc.and_(single, pc.is_valid(element))


def _nonneg(values: pa.Array) -> pa.Array:
    """-1 (and other negatives) are "none" sentinels in these fields."""
    return pc.if_else(pc.fill_null(pc.greater_equal(values, 0), False), values, pa.scalar(None, values.type))


def _topic_match(name: pa.Array, tid: pa.Array, idx: pa.Array, rname: pa.Array, rtid: pa.Array,
                 ridx: pa.Array) -> pa.Array:
    """``request_log._TopicIndex.first`` with one entry a side: the same partition index, and the
    same topic name, or (the response naming none) the same topic id; with no request name, the id."""
    same_idx = pc.equal(idx, ridx)
    by_name = pc.equal(name, rname)
    by_id = pc.equal(tid, rtid)
    named = pc.or_kleene(by_name, pc.and_kleene(pc.is_null(rname), by_id))
    return pc.fill_null(pc.and_kleene(same_idx, pc.if_else(pc.is_valid(name), named, by_id)), False)


def _error_names(codes: pa.Array) -> pa.Array:
    names = [None if c is None else ERROR_NAMES.get(c) or f"UNKNOWN_ERROR_CODE_{c}" for c in codes.to_pylist()]
    return pa.array(names, pa.string())


def _one_partition(rq: pa.Array, resp: pa.Array, request_names: tuple[str, str, str, str],
                   response_names: tuple[str, str, str]) -> tuple[pa.Array, pa.Array, pa.Array, pa.Array]:
    """(whether the request and the response each name one topic with one partition, matched by
    :func:`_topic_match`; the request's topic and partition, the response's partition).
    ``request_names``: the topics list, partitions list, topic name and partition index fields;
    ``response_names``: the response's partitions list, topic name and partition index fields."""
    topics, parts, name, index = request_names
    rparts, rname, rindex = response_names
    topic, one_topic = _only(_field(rq, topics))
    part, one_part = _only(_field(topic, parts))
    rtopic, one_rtopic = _only(_field(resp, "responses"))
    rpart, one_rpart = _only(_field(rtopic, rparts))
    matched = _topic_match(_field(topic, name), _field(topic, "topicId"), _field(part, index),
                           _field(rtopic, rname), _field(rtopic, "topicId"), _field(rpart, rindex))
    return pc.and_(pc.and_(pc.and_(one_topic, one_part), pc.and_(one_rtopic, one_rpart)), matched), topic, part, rpart


def _fetch(j: pa.StructArray) -> tuple[pa.Array, dict[str, pa.Array], list[tuple[str, pa.Array]]]:
    rq, resp = _field(j, "request"), _field(j, "response")
    ok, topic, part, rpart = _one_partition(rq, resp, ("topics", "partitions", "topic", "partition"),
                                            ("partitions", "topic", "partitionIndex"))
    name, tid, idx = _field(topic, "topic"), _field(topic, "topicId"), _field(part, "partition")
    replica = _nonneg(pc.coalesce(_field(rq, "replicaState", "replicaId"), _field(rq, "replicaId")))
    leader = _field(rpart, "currentLeader")
    columns = {
        "topic": name, "topic_id": tid, "partition": idx, "error_code": _field(rpart, "errorCode"),
        "top_error_code": _field(resp, "errorCode"), "replica_id": replica,
        "broker_epoch": _nonneg(_field(rq, "replicaState", "replicaEpoch")), "offset": _field(part, "fetchOffset"),
        "current_leader_epoch": _nonneg(_field(part, "currentLeaderEpoch")),
        "high_watermark": _nonneg(_field(rpart, "highWatermark")),
        "log_start_offset": _nonneg(_field(rpart, "logStartOffset")), "leader": _nonneg(_field(leader, "leaderId")),
    }
    fetcher = pc.if_else(pc.is_valid(replica), pa.scalar("replica"), pa.scalar("consumer"))
    details = [
        ("last_fetched_epoch", _field(part, "lastFetchedEpoch")),
        ("fetch_log_start_offset", _field(part, "logStartOffset")),
        ("last_stable_offset", _field(rpart, "lastStableOffset")),
        ("diverging_epoch", _field(rpart, "divergingEpoch", "epoch")),
        ("diverging_end_offset", _field(rpart, "divergingEpoch", "endOffset")),
        ("response_leader_epoch", _field(leader, "leaderEpoch")),
        ("records_size", _field(rpart, "recordsSizeInBytes")),
        ("session_id", _field(rq, "sessionId")), ("session_epoch", _field(rq, "sessionEpoch")),
        ("in_request", pa.array(["true"] * len(j), pa.string())), ("fetcher", fetcher),
    ]
    return ok, columns, details


def _produce(j: pa.StructArray) -> tuple[pa.Array, dict[str, pa.Array], list[tuple[str, pa.Array]]]:
    rq, resp = _field(j, "request"), _field(j, "response")
    ok, topic, part, rpart = _one_partition(rq, resp, ("topicData", "partitionData", "name", "index"),
                                            ("partitionResponses", "name", "index"))
    name, tid, idx = _field(topic, "name"), _field(topic, "topicId"), _field(part, "index")
    leader = _field(rpart, "currentLeader")
    columns = {
        "topic": name, "topic_id": tid, "partition": idx, "error_code": _field(rpart, "errorCode"),
        "top_error_code": pa.nulls(len(j), pa.int32()), "offset": _nonneg(_field(rpart, "baseOffset")),
        "log_start_offset": _nonneg(_field(rpart, "logStartOffset")), "leader": _nonneg(_field(leader, "leaderId")),
        "current_leader_epoch": _nonneg(_field(leader, "leaderEpoch")),
    }
    details = [
        ("records_size", _field(part, "recordsSizeInBytes")), ("error_message", _field(rpart, "errorMessage")),
        ("acks", _field(rq, "acks")), ("transactional_id", _field(rq, "transactionalId")),
        ("log_append_time_ms", _field(rpart, "logAppendTimeMs")),
    ]
    return ok, columns, details


_BUILDERS = {"FETCH": _fetch, "PRODUCE": _produce}


@dataclass
class ParsedBatch:
    """The events of the records read here: ``positions`` (into the batch given), one event each,
    in that order, as bronze columns (Arrow arrays by name)."""

    positions: list[int]
    columns: dict[str, pa.Array]


def parse_batch(messages: Sequence[str], apis: Sequence[str | None]) -> list[ParsedBatch]:
    """The FETCH / PRODUCE records of ``messages`` (``apis``: :func:`eligible_apis`) that this module
    reads: their event columns (no provenance). A record in no batch goes to the per-line parser."""
    out: list[ParsedBatch] = []
    for api in FAST_APIS:
        chosen = [i for i, a in enumerate(apis) if a == api]
        if not chosen:
            continue
        bodies = [messages[i][len(PREFIX):] for i in chosen]
        for positions, j in _read_json(bodies, api):
            header = _field(j, "requestHeader")
            ok, columns, details = _BUILDERS[api](j)
            ok = pc.and_(ok, pc.is_valid(header))
            if not pc.any(ok).as_py():
                continue
            if not pc.all(ok).as_py():
                keep = ok
                header = header.filter(keep)
                columns = {k: v.filter(keep) for k, v in columns.items()}
                details = [(k, v.filter(keep)) for k, v in details]
                positions = [p for p, good in zip(positions, ok.to_pylist(), strict=True) if good]
            top = columns.pop("top_error_code")
            error_code = pc.coalesce(columns.pop("error_code"),
                                     pc.if_else(pc.fill_null(pc.not_equal(top, 0), False), top,
                                                pa.scalar(None, top.type)))
            rows = len(positions)
            columns.update(
                event_type=pa.array([API_EVENT_TYPES[api]] * rows, pa.string()),
                kafka_version_hint=pa.array(["2.8+"] * rows, pa.string()),
                api_key=pa.array([api] * rows, pa.string()),
                api_version=_field(header, "requestApiVersion"),
                correlation_id=pc.cast(_field(header, "correlationId"), pa.int64()),
                error=_error_names(error_code),
                details=details_map([("error_code", error_code), ("top_error_code", top),
                                  ("client_id", _field(header, "clientId")), *details], rows),
            )
            out.append(ParsedBatch([chosen[p] for p in positions], columns))
    return out


def event_batch(parsed: ParsedBatch, file: FileConstants, lines: Sequence[int], micros: Sequence[int],
                own_micros: Sequence[int], levels: Sequence[str], raws: Sequence[str],
                schema: pa.Schema) -> pa.RecordBatch:
    """``parsed``'s events as the ingest pass's rows (``schema``: its Arrow schema); per event its
    line number, event time and running max event time of the file (epoch microseconds), level and raw text."""
    rows = len(parsed.positions)
    columns = dict(parsed.columns)
    columns.update(level=pa.array(levels, pa.string()), logger=pa.array([REQUEST_LOGGER] * rows, pa.string()))
    return pass_batch(columns, file, lines, pa.array(micros, pa.int64()), own_micros, raws, "traffic", schema)
