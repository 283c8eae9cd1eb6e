"""The request log's FETCH and PRODUCE lines a batch at a time, in Arrow (issue #20).

Nearly every line of a busy broker's request log is a FETCH or a PRODUCE.
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
* the shape: any number of topics and partitions a side, each request partition matched to the
  first response entry the per-line parser's topic rule matches (name where the request names
  one, else the topic id), and (FETCH) a response partition no request entry may match an event
  of its own after the request's; a message with no event, or naming more than :data:`MAX_PAIRS`
  request × response partitions, goes to the per-line parser.
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
# the same in RE2 for lines joined by newlines (a newline is no control character there)
GUARDED_RE2 = r"[\x00-\x09\x0b-\x1f]|[:,\[ +-](?:NaN|Inf|INF)|[0-9]{" + str(_LONG_DIGITS) + "}"
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


def eligible_apis(messages: Sequence[str], plain: bool = False) -> list[str | None]:
    """Per message: FETCH or PRODUCE when this module may read it, else None (the per-line parser).
    ``messages`` start with ``Completed request:{`` and end with ``}`` (the caller's test);
    ``plain``: the caller found nothing :data:`GUARDED_RE2` looks for in their lines."""
    suspicious = not plain and _suspicious("\n".join(messages).encode("utf-8"))
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


def _nonneg(values: pa.Array) -> pa.Array:
    """-1 (and other negatives) are "none" sentinels in these fields."""
    return pc.if_else(pc.fill_null(pc.greater_equal(values, 0), False), values, pa.scalar(None, values.type))


def _error_names(codes: pa.Array) -> pa.Array:
    names = [None if c is None else ERROR_NAMES.get(c) or f"UNKNOWN_ERROR_CODE_{c}" for c in codes.to_pylist()]
    return pa.array(names, pa.string())


@dataclass
class _Side:
    """One side's (topic, partition) entries, flattened in the per-line parser's order (``_flatten``:
    line by line, topics in order, a null topic skipped, a null partition an entry of nulls)."""

    line: np.ndarray  # the message each entry belongs to
    topic: pa.Array  # the entry's topic struct
    part: pa.Array  # the entry's partition struct
    name: pa.Array
    tid: pa.Array
    idx: pa.Array


def _side(topic_lists: pa.Array, parts_field: str, name_field: str, index_field: str) -> _Side:
    topics = pc.list_flatten(topic_lists)
    topic_line = np.asarray(pc.list_parent_indices(topic_lists))
    part_lists = pc.struct_field(topics, parts_field)  # null for a null topic: no entries
    part_topic = pc.list_parent_indices(part_lists)
    parts = pc.list_flatten(part_lists)
    topic = topics.take(part_topic)
    return _Side(topic_line[np.asarray(part_topic)], topic, parts, pc.struct_field(topic, name_field),
                 pc.struct_field(topic, "topicId"), pc.struct_field(parts, index_field))


def _pairs(q: _Side, r: _Side, lines: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every (request entry, response entry) of one message, request entry by request entry, the
    response entries in order; and per message whether it is small enough to pair (MAX_PAIRS)."""
    q_count = np.bincount(q.line, minlength=lines)
    r_count = np.bincount(r.line, minlength=lines)
    r_start = np.concatenate([[0], np.cumsum(r_count)[:-1]]).astype(np.int64)
    pairable = q_count * r_count <= MAX_PAIRS
    per_q = np.where(pairable[q.line], r_count[q.line], 0)
    qi = np.repeat(np.arange(len(q.line)), per_q)
    first = np.cumsum(per_q) - per_q
    ri = np.arange(len(qi)) - np.repeat(first, per_q) + np.repeat(r_start[q.line], per_q)
    return qi, ri, pairable


def _take(values: pa.Array, at: np.ndarray) -> pa.Array:
    return values.take(pa.array(at, pa.int64()))


def _matches(q: _Side, r: _Side, qi: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """Per pair: ``request_log._TopicIndex.first``'s test of a response entry for a request entry —
    the same partition index, and the same topic name or (the response naming none) the same topic
    id; with no request name, the same id."""
    name, tid, idx = _take(q.name, qi), _take(q.tid, qi), _take(q.idx, qi)
    rname, rtid, ridx = _take(r.name, ri), _take(r.tid, ri), _take(r.idx, ri)
    named = pc.or_kleene(pc.equal(name, rname), pc.and_kleene(pc.is_null(rname), pc.equal(tid, rtid)))
    test = pc.and_kleene(pc.equal(idx, ridx), pc.if_else(pc.is_valid(name), named, pc.equal(tid, rtid)))
    return np.asarray(pc.fill_null(test, False), dtype=bool)


def _answered(q: _Side, r: _Side, qi: np.ndarray, ri: np.ndarray) -> np.ndarray:
    """Per response entry: ``request_log._TopicIndex.may_match`` over the request's entries (a
    response entry none may match is a partition answered without being listed)."""
    name, tid, idx = _take(q.name, qi), _take(q.tid, qi), _take(q.idx, qi)
    rname, rtid, ridx = _take(r.name, ri), _take(r.tid, ri), _take(r.idx, ri)
    same_id = pc.fill_null(pc.equal(tid, rtid), False)
    compatible = pc.if_else(pc.is_valid(rname),
                            pc.or_(pc.fill_null(pc.equal(name, rname), False), pc.and_(pc.is_null(name), same_id)),
                            same_id)
    any_index = pc.or_(pc.or_(pc.is_null(ridx), pc.is_null(idx)), pc.fill_null(pc.equal(idx, ridx), False))
    hit = np.asarray(pc.and_(compatible, any_index), dtype=bool)
    answered = np.zeros(len(r.line), dtype=bool)
    answered[ri[hit]] = True
    return answered


# per API: the request's topics and partitions fields, their name and index fields; the response's
REQUEST_FIELDS = {"FETCH": ("topics", "partitions", "topic", "partition"),
                  "PRODUCE": ("topicData", "partitionData", "name", "index")}
RESPONSE_FIELDS = {"FETCH": ("partitions", "topic", "partitionIndex"),
                   "PRODUCE": ("partitionResponses", "name", "index")}
MAX_PAIRS = 10_000  # a message naming more partitions on both sides goes to the per-line parser


@dataclass
class ParsedBatch:
    """The events of the records read here, as bronze columns (Arrow arrays by name): per event
    its record's position in the batch given and its ``sub_index``."""

    positions: list[int]
    subs: list[int]
    columns: dict[str, pa.Array]


def _events(api: str, j: pa.StructArray) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict, list]:
    """(per message whether it is read here; per event its message, its sub_index; the event
    columns; the details columns in the per-line order) of FETCH or PRODUCE messages ``j``."""
    rq, resp = _field(j, "request"), _field(j, "response")
    topics, parts, name, index = REQUEST_FIELDS[api]
    rparts, rname, rindex = RESPONSE_FIELDS[api]
    q = _side(_field(rq, topics), parts, name, index)
    r = _side(_field(resp, "responses"), rparts, rname, rindex)
    lines = len(j)
    qi, ri, pairable = _pairs(q, r, lines)
    matched = np.full(len(q.line), -1, dtype=np.int64)
    hit = np.flatnonzero(_matches(q, r, qi, ri))
    first_q, first_at = np.unique(qi[hit], return_index=True)
    matched[first_q] = ri[hit[first_at]]
    only = np.flatnonzero(~_answered(q, r, qi, ri)) if api == "FETCH" else np.zeros(0, dtype=np.int64)
    # events: the request's entries in order, then (FETCH) the response's unlisted ones
    event_line = np.concatenate([q.line, r.line[only]])
    q_count = np.bincount(q.line, minlength=lines)
    q_first = np.concatenate([[0], np.cumsum(q_count)[:-1]])
    only_line = r.line[only]
    only_rank = np.arange(len(only)) - np.searchsorted(only_line, only_line, "left")
    subs = np.concatenate([np.arange(len(q.line)) - q_first[q.line], q_count[only_line] + only_rank])
    events = np.bincount(event_line, minlength=lines)
    read = pairable & (events > 0) & np.asarray(pc.is_valid(_field(j, "requestHeader")), dtype=bool)
    q_at = pa.array(np.concatenate([np.arange(len(q.line)), np.full(len(only), -1)]), pa.int64(),
                    mask=np.concatenate([np.zeros(len(q.line), bool), np.ones(len(only), bool)]))
    r_at_all = np.concatenate([matched, only])
    r_at = pa.array(r_at_all, pa.int64(), mask=r_at_all < 0)
    part, rpart = q.part.take(q_at), r.part.take(r_at)
    in_request = pc.is_valid(q_at)
    topic = pc.if_else(in_request, q.name.take(q_at), r.name.take(r_at))
    topic_id = pc.if_else(in_request, q.tid.take(q_at), r.tid.take(r_at))
    partition = pc.if_else(in_request, q.idx.take(q_at), r.idx.take(r_at))
    line_of = pa.array(event_line, pa.int64())
    header = _field(j, "requestHeader").take(line_of)
    leader = _field(rpart, "currentLeader")
    columns = {
        "topic": topic, "topic_id": topic_id, "partition": partition, "error_code": _field(rpart, "errorCode"),
        "api_version": _field(header, "requestApiVersion"), "correlation_id": _field(header, "correlationId"),
        "client_id": _field(header, "clientId"),
    }
    request = rq.take(line_of)
    if api == "FETCH":
        replica = _nonneg(pc.coalesce(_field(request, "replicaState", "replicaId"), _field(request, "replicaId")))
        columns.update(
            top_error_code=_field(resp, "errorCode").take(line_of), replica_id=replica,
            broker_epoch=_nonneg(_field(request, "replicaState", "replicaEpoch")),
            offset=_field(part, "fetchOffset"), current_leader_epoch=_nonneg(_field(part, "currentLeaderEpoch")),
            high_watermark=_nonneg(_field(rpart, "highWatermark")),
            log_start_offset=_nonneg(_field(rpart, "logStartOffset")), leader=_nonneg(_field(leader, "leaderId")),
        )
        details = [
            ("last_fetched_epoch", _field(part, "lastFetchedEpoch")),
            ("fetch_log_start_offset", _field(part, "logStartOffset")),
            ("last_stable_offset", _field(rpart, "lastStableOffset")),
            ("diverging_epoch", _field(rpart, "divergingEpoch", "epoch")),
            ("diverging_end_offset", _field(rpart, "divergingEpoch", "endOffset")),
            ("response_leader_epoch", _field(leader, "leaderEpoch")),
            ("records_size", _field(rpart, "recordsSizeInBytes")),
            ("session_id", _field(request, "sessionId")), ("session_epoch", _field(request, "sessionEpoch")),
            ("in_request", in_request),
            ("fetcher", pc.if_else(pc.is_valid(replica), pa.scalar("replica"), pa.scalar("consumer"))),
        ]
    else:
        columns.update(
            top_error_code=pa.nulls(len(event_line), pa.int32()), offset=_nonneg(_field(rpart, "baseOffset")),
            log_start_offset=_nonneg(_field(rpart, "logStartOffset")), leader=_nonneg(_field(leader, "leaderId")),
            current_leader_epoch=_nonneg(_field(leader, "leaderEpoch")),
        )
        details = [
            ("records_size", _field(part, "recordsSizeInBytes")), ("error_message", _field(rpart, "errorMessage")),
            ("acks", _field(request, "acks")), ("transactional_id", _field(request, "transactionalId")),
            ("log_append_time_ms", _field(rpart, "logAppendTimeMs")),
        ]
    return read, event_line, subs, columns, details


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
            read, event_line, subs, columns, details = _events(api, j)
            keep = read[event_line]
            if not keep.any():
                continue
            if not keep.all():
                mask = pa.array(keep)
                columns = {k: v.filter(mask) for k, v in columns.items()}
                details = [(k, v.filter(mask)) for k, v in details]
                event_line, subs = event_line[keep], subs[keep]
            top = columns.pop("top_error_code")
            error_code = pc.coalesce(columns.pop("error_code"),
                                     pc.if_else(pc.fill_null(pc.not_equal(top, 0), False), top,
                                                pa.scalar(None, top.type)))
            rows = len(event_line)
            client_id = columns.pop("client_id")
            columns.update(
                event_type=pa.array([API_EVENT_TYPES[api]] * rows, pa.string()),
                kafka_version_hint=pa.array(["2.8+"] * rows, pa.string()),
                api_key=pa.array([api] * rows, pa.string()),
                correlation_id=pc.cast(columns["correlation_id"], pa.int64()),
                error=_error_names(error_code),
                details=details_map([("error_code", error_code), ("top_error_code", top),
                                     ("client_id", client_id), *details], rows),
            )
            out.append(ParsedBatch([chosen[positions[k]] for k in event_line.tolist()], subs.tolist(), columns))
    return out


def event_batch(parsed: ParsedBatch, file: FileConstants, lines: Sequence[int], micros: Sequence[int],
                own_micros: Sequence[int], levels: Sequence[str], raws: Sequence[str],
                schema: pa.Schema) -> pa.RecordBatch:
    """``parsed``'s events as the ingest pass's rows (``schema``: its Arrow schema); per event its
    line number, event time and running max event time of the file (epoch microseconds), level and
    raw text (a later event of a long line: a pointer to the first's, as ``FilePass.emit_events``)."""
    rows = len(parsed.positions)
    columns = dict(parsed.columns)
    columns.update(level=pa.array(levels, pa.string()), logger=pa.array([REQUEST_LOGGER] * rows, pa.string()))
    return pass_batch(columns, file, lines, pa.array(micros, pa.int64()), own_micros, raws, "traffic", schema,
                      parsed.subs)
