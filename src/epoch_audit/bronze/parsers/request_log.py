"""Kafka request log ``Completed request:`` lines (reference §5, §6.4) -> ``request_*`` events.

Input: ``records`` (see :mod:`epoch_audit.bronze.parsers`) whose message starts with ``Completed request:``
(logger ``kafka.request.logger``, DEBUG).

2.8+ (KIP-673): the message is ``Completed request:`` + compact JSON. Lines whose
``requestApiKeyName`` is PRODUCE, FETCH, STOP_REPLICA, LEADER_AND_ISR, UPDATE_METADATA,
ALTER_PARTITION (or its pre-3.2 name ALTER_ISR) are read with an explicit schema per API (all
versions' fields; a field absent from a version parses as null) exactly as Spark's ``from_json``
reads them (:mod:`~epoch_audit.bronze.parsers.request_log_json`), and yield one
event per partition of the request, ``sub_index`` = position in request order. The response
partition is matched by (topic name or topic id, partition index). Column mapping:

* every API: ``api_key`` (requestApiKeyName), ``api_version``, ``correlation_id``; ``broker_id`` =
  the logging broker (``host_id``) except ALTER_PARTITION; ``error`` = the response partition's
  error NAME, else (no partition entry, e.g. a whole-request refusal that lists no partitions) the
  top-level error when non-zero; ``details.error_code`` keeps the number.
* STOP_REPLICA / LEADER_AND_ISR / UPDATE_METADATA: ``controller_id``/``controller_epoch`` = the
  request's top-level fields (the sender's CE), ``broker_epoch`` = request brokerEpoch,
  ``state_controller_epoch`` = the partition state's controllerEpoch (LAI/UM only).
  STOP_REPLICA v0-2 carry no leader epoch: ``leader_epoch`` = -1 (the broker's own default, the
  "no epoch" sentinel of KIP-570), ``delete_partition`` = the request-level deletePartitions.
  UPDATE_METADATA without partition states still yields one event (topic null): it raises the
  broker's known controller epoch.
* FETCH: ``replica_id`` = replicaId (v0-14) or replicaState.replicaId (v15+), null for consumers
  (-1 / absent); ``broker_epoch`` = replicaState.replicaEpoch; ``offset`` = fetchOffset;
  ``current_leader_epoch`` = the request's currentLeaderEpoch (-1 -> null); ``high_watermark`` and
  ``log_start_offset`` from the response partition (the leader's values). Partitions present only
  in the response (incremental fetch sessions) yield events too, with ``offset`` null.
* PRODUCE: ``offset`` = baseOffset (null when -1), ``log_start_offset``, ``leader`` /
  ``current_leader_epoch`` from the tagged ``currentLeader`` (v10+), errorMessage in details.
* ALTER_PARTITION: ``broker_id`` = request brokerId (the leader asking), ``broker_epoch`` = its
  brokerEpoch, ``isr``/``isr_broker_epochs`` from newIsrWithEpochs (v3+) or newIsr (-1 epochs);
  ``partition_epoch``, ``leader_epoch``, ``leader`` from the RESPONSE partition when its error is
  NONE (the state the controller committed; on an error those fields are defaults, so null); the
  request's values in details (``request_leader_epoch``, ``request_partition_epoch``), the
  committed ISR in ``details.committed_isr``.
* topic names vs ids: FETCH v13+, ALTER_PARTITION v2+, LAI v5+ responses use ``topicId`` ->
  ``topic_id`` (LAI requests carry both; ``topic`` stays null where only an id is logged).

A line of one of these APIs whose JSON does not parse, or holds a value that does not fit its field
(an epoch beyond int32), becomes ``__malformed__`` ("unparseable request-log JSON"); a line cut
short (no ``(logger)`` tail, or JSON that does not close) of any other API too ("truncated
request-log line"). Events are produced one partition at a time (a request naming thousands of
partitions is never held as rows).

<=2.7 (plain text, ``Completed request:RequestHeader(apiKey=..., apiVersion=..., clientId=...,
correlationId=...) ...``): the body is Struct-style and request details exist only at TRACE, so only
the header is read: one event per line for the APIs above, topic null, ``details.format = text``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame

from epoch_audit.bronze.parsers.request_log_jackson import jackson_from_json
from epoch_audit.bronze.parsers.request_log_json import compile_schema, from_json
from epoch_audit.bronze.parsers.request_log_schemas import API_EVENT_TYPES, ERROR_NAMES, PREFIX, SCHEMAS
from epoch_audit.bronze.parsers.rows import MALFORMED, Row, map_rows

# Java's "." stops at any line terminator: \r, \u0085, \u2028, \u2029 as well as \n
_ANY = "[^\n\r\u0085\u2028\u2029]"
_TEXT_HEADER = re.compile(
    r"^Completed request:RequestHeader\(apiKey=([A-Z_]+), apiVersion=(\d+), clientId=(" + _ANY + r"*?), "
    r"correlationId=(-?\d+)\)",
    re.ASCII,
)
_API_NAME = re.compile(r'"requestApiKeyName":"([A-Z_]+)"')
_JSON_PREFIX = PREFIX + "{"
_CONVERTERS = {name: compile_schema(schema) for name, schema in SCHEMAS.items()}
_PROVENANCE = ("file_id", "source_file", "cluster_id", "host_id", "file_order", "log_kind", "line_number",
               "event_time", "level", "logger", "raw")
_EMPTY: dict = {}
_INT32, _INT64 = 1 << 31, 1 << 63

Event = dict[str, Any]


def _get(d: Any, *keys: str) -> Any:
    """``d[k1][k2]...``, null through missing or null levels (Spark's struct field access)."""
    for k in keys:
        if d is None:
            return None
        d = d.get(k)
    return d


def _nonneg(v: Any) -> Any:
    """-1 (and other negatives) are "none" sentinels in these fields."""
    return v if v is not None and v >= 0 else None


def _text(v: Any) -> str | None:
    """A details value as Spark's cast to string prints it."""
    if v is None or isinstance(v, str):
        return v
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _join(values: Any) -> str | None:
    """Spark's ``array_join(values, ",")``: nulls skipped, null for a null array."""
    return None if values is None else ",".join(str(v) for v in values if v is not None)


def _coalesce(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _flatten(topics: Any, part_field: str, names: tuple[str, ...], tid: str | None) -> Iterator[tuple]:
    """array<topic{partitions[]}> -> (topic name, topic id, partition) in request order; ``names``: the
    keys naming the topic, the first non-null wins (topicName / name differ by API version)."""
    for t in topics or ():
        if t is None:
            continue
        name = _coalesce(*(t.get(n) for n in names))
        topic_id = t.get(tid) if tid else None
        for p in t.get(part_field) or ():
            yield name, topic_id, (p if p is not None else _EMPTY)


class _TopicIndex:
    """Flattened (name, id, partition) entries grouped for Spark's topic match (by name where both
    sides name one, else by topic id): ``first`` finds the first entry matching a partition,
    ``may_match`` whether some entry matches or compares null (Spark's three-valued ``exists``)."""

    def __init__(self, entries: list[tuple], index_field: str) -> None:
        self.entries = entries
        self.by_name: dict[Any, dict] = {}
        self.by_id: dict[Any, dict] = {}
        self.by_id_nameless: dict[Any, dict] = {}
        for pos, (name, tid, p) in enumerate(entries):
            idx = p.get(index_field)
            if name is not None:
                self.by_name.setdefault(name, {}).setdefault(idx, pos)
            if tid is not None:
                self.by_id.setdefault(tid, {}).setdefault(idx, pos)
                if name is None:
                    self.by_id_nameless.setdefault(tid, {}).setdefault(idx, pos)

    def _groups(self, name: Any, tid: Any) -> list[dict]:
        if name is not None:
            groups = [self.by_name.get(name), self.by_id_nameless.get(tid) if tid is not None else None]
        else:
            groups = [self.by_id.get(tid) if tid is not None else None]
        return [g for g in groups if g]

    def first(self, name: Any, tid: Any, idx: Any) -> dict:
        """The partition of the first entry of the same topic and index (empty if none)."""
        if idx is None:
            return _EMPTY
        hits = [g[idx] for g in self._groups(name, tid) if idx in g]
        return self.entries[min(hits)][2] if hits else _EMPTY

    def may_match(self, name: Any, tid: Any, idx: Any) -> bool:
        return any(idx is None or None in g or idx in g for g in self._groups(name, tid))


def _produce(j: dict) -> Iterator[Event]:
    rq = j.get("request")
    resp = _TopicIndex(list(_flatten(_get(j, "response", "responses"), "partitionResponses", ("name",), "topicId")),
                       "index")
    for name, tid, p in _flatten(_get(rq, "topicData"), "partitionData", ("name",), "topicId"):
        rp = resp.first(name, tid, p.get("index"))
        leader = rp.get("currentLeader")
        yield {
            "topic": name, "topic_id": tid, "partition": p.get("index"), "error_code": rp.get("errorCode"),
            "offset": _nonneg(rp.get("baseOffset")), "log_start_offset": _nonneg(rp.get("logStartOffset")),
            "leader": _nonneg(_get(leader, "leaderId")), "current_leader_epoch": _nonneg(_get(leader, "leaderEpoch")),
            "details": {
                "records_size": p.get("recordsSizeInBytes"), "error_message": rp.get("errorMessage"),
                "acks": _get(rq, "acks"), "transactional_id": _get(rq, "transactionalId"),
                "log_append_time_ms": rp.get("logAppendTimeMs"),
            },
        }


def _fetch(j: dict) -> Iterator[Event]:
    rq = j.get("request")
    req = list(_flatten(_get(rq, "topics"), "partitions", ("topic",), "topicId"))
    resp = list(_flatten(_get(j, "response", "responses"), "partitions", ("topic",), "topicId"))
    replica = _nonneg(_coalesce(_get(rq, "replicaState", "replicaId"), _get(rq, "replicaId")))
    replica_epoch = _nonneg(_get(rq, "replicaState", "replicaEpoch"))
    session = (_get(rq, "sessionId"), _get(rq, "sessionEpoch"))

    def event(qp: dict | None, rp: dict, name: Any, tid: Any, part: Any) -> Event:
        q = qp if qp is not None else _EMPTY
        leader = rp.get("currentLeader")
        diverging = rp.get("divergingEpoch")
        return {
            "topic": name, "topic_id": tid, "partition": part, "error_code": rp.get("errorCode"),
            "replica_id": replica, "broker_epoch": replica_epoch, "offset": q.get("fetchOffset"),
            "current_leader_epoch": _nonneg(q.get("currentLeaderEpoch")),
            "high_watermark": _nonneg(rp.get("highWatermark")), "log_start_offset": _nonneg(rp.get("logStartOffset")),
            "leader": _nonneg(_get(leader, "leaderId")),
            "details": {
                "last_fetched_epoch": q.get("lastFetchedEpoch"), "fetch_log_start_offset": q.get("logStartOffset"),
                "last_stable_offset": rp.get("lastStableOffset"), "diverging_epoch": _get(diverging, "epoch"),
                "diverging_end_offset": _get(diverging, "endOffset"),
                "response_leader_epoch": _get(leader, "leaderEpoch"), "records_size": rp.get("recordsSizeInBytes"),
                "session_id": session[0], "session_epoch": session[1], "in_request": qp is not None,
                "fetcher": "replica" if replica is not None else "consumer",
            },
        }

    resp_index = _TopicIndex(resp, "partitionIndex")
    for name, tid, p in req:
        yield event(p, resp_index.first(name, tid, p.get("partition")), name, tid, p.get("partition"))
    # incremental fetch sessions: partitions answered without being (re)listed in the request
    req_index = _TopicIndex(req, "partition")
    for name, tid, p in resp:
        if not req_index.may_match(name, tid, p.get("partitionIndex")):
            yield event(None, p, name, tid, p.get("partitionIndex"))


def _controller_common(rq: Any) -> Event:
    return {
        "controller_id": _get(rq, "controllerId"),
        "controller_epoch": _get(rq, "controllerEpoch"),
        "broker_epoch": _nonneg(_get(rq, "brokerEpoch")),
    }


def _stop_replica(j: dict, version: Any) -> Iterator[Event]:
    rq = j.get("request")
    errors: dict[tuple, int] = {}
    for pos, e in enumerate(_get(j, "response", "partitionErrors") or ()):
        if e is not None:
            errors.setdefault((e.get("topicName"), e.get("partitionIndex")), pos)
    error_list = _get(j, "response", "partitionErrors")
    common = _controller_common(rq)
    kraft = _get(rq, "isKRaftController")

    def event(name: Any, idx: Any, le: Any, delete: Any) -> Event:
        pos = errors.get((name, idx)) if name is not None and idx is not None else None
        return {
            "topic": name, "partition": idx, "error_code": None if pos is None else error_list[pos].get("errorCode"),
            "leader_epoch": le, "delete_partition": delete, "details": {"is_kraft_controller": kraft}, **common,
        }

    # v3+: topicStates with per-partition LE and delete flag; v1-2 topics[{name, partitionIndexes}];
    # v0 ungroupedPartitions. v0-2 have no epoch: the broker reads it as -1 (no epoch).
    if version is not None and version >= 3:
        for name, _, p in _flatten(_get(rq, "topicStates"), "partitionStates", ("topicName",), None):
            yield event(name, p.get("partitionIndex"), p.get("leaderEpoch"), p.get("deletePartition"))
        return
    delete = _get(rq, "deletePartitions")
    for p in _get(rq, "ungroupedPartitions") or ():
        p = p if p is not None else _EMPTY
        yield event(p.get("topicName"), p.get("partitionIndex"), -1, delete)
    for t in _get(rq, "topics") or ():
        for idx in (t or _EMPTY).get("partitionIndexes") or ():
            yield event(t.get("name"), idx, -1, delete)


def _partition_states(rq: Any) -> Iterator[tuple]:
    """(topic name, topic id, partition state): the ungrouped (v0-1) states, then the grouped ones."""
    for p in _get(rq, "ungroupedPartitionStates") or ():
        p = p if p is not None else _EMPTY
        yield p.get("topicName"), None, p
    yield from _flatten(_get(rq, "topicStates"), "partitionStates", ("topicName",), "topicId")


def _leader_and_isr(j: dict) -> Iterator[Event]:
    rq = j.get("request")
    resp = j.get("response")
    # v0-4: partitionErrors[{topicName, partitionIndex, errorCode}]; v5+: topics[{topicId, partitionErrors}]
    errors = [(e.get("topicName"), None, e) for e in _get(resp, "partitionErrors") or () if e is not None]
    errors += [(None, tid, p) for _, tid, p in _flatten(_get(resp, "topics"), "partitionErrors", (), "topicId")]
    error_index = _TopicIndex(errors, "partitionIndex")
    common = _controller_common(rq)
    for t_name, tid, p in _partition_states(rq):
        # the topic name may sit in the topic state (v2+) or in the partition state (v0-1)
        name = _coalesce(t_name, p.get("topicName"))
        err = error_index.first(name, tid, p.get("partitionIndex"))
        yield {
            "topic": name, "topic_id": tid, "partition": p.get("partitionIndex"), "error_code": err.get("errorCode"),
            "state_controller_epoch": p.get("controllerEpoch"), "leader": p.get("leader"),
            "leader_epoch": p.get("leaderEpoch"),
            "partition_epoch": _coalesce(p.get("partitionEpoch"), p.get("zkVersion")),
            "isr": p.get("isr"), "replicas": p.get("replicas"), "adding_replicas": p.get("addingReplicas"),
            "removing_replicas": p.get("removingReplicas"),
            "details": {
                "is_new": p.get("isNew"), "leader_recovery_state": p.get("leaderRecoveryState"),
                "type": _get(rq, "type"), "is_kraft_controller": _get(rq, "isKRaftController"),
            },
            **common,
        }


def _update_metadata(j: dict) -> Iterator[Event]:
    rq = j.get("request")
    error_code = _get(j, "response", "errorCode")
    common = _controller_common(rq)
    kraft = _get(rq, "isKRaftController")
    any_state = False
    for t_name, tid, p in _partition_states(rq):
        any_state = True
        yield {
            "topic": _coalesce(t_name, p.get("topicName")), "topic_id": tid, "partition": p.get("partitionIndex"),
            "state_controller_epoch": p.get("controllerEpoch"), "leader": p.get("leader"),
            "leader_epoch": p.get("leaderEpoch"), "partition_epoch": p.get("zkVersion"), "isr": p.get("isr"),
            "replicas": p.get("replicas"),
            # UpdateMetadata answers with one request-level error code only
            "error_code": error_code,
            "details": {"offline_replicas": _join(p.get("offlineReplicas")), "is_kraft_controller": kraft},
            **common,
        }
    if not any_state:  # a request with no partition states still raises the broker's known controller epoch
        yield {"error_code": error_code, "details": {"is_kraft_controller": kraft, "partitions": 0}, **common}


def _alter_partition(j: dict) -> Iterator[Event]:
    rq = j.get("request")
    # a topics entry names its topic by topicName (AlterPartition v0-1), name (AlterIsr) or topicId (v2+)
    names = ("topicName", "name")
    resp = _TopicIndex(list(_flatten(_get(j, "response", "topics"), "partitions", names, "topicId")),
                       "partitionIndex")
    broker_id, broker_epoch = _get(rq, "brokerId"), _nonneg(_get(rq, "brokerEpoch"))
    for name, tid, p in _flatten(_get(rq, "topics"), "partitions", names, "topicId"):
        r = resp.first(name, tid, p.get("partitionIndex"))
        with_epochs = p.get("newIsrWithEpochs")
        new_isr = p.get("newIsr")
        if with_epochs is not None:
            isr = [_get(b, "brokerId") for b in with_epochs]
            isr_epochs = [_get(b, "brokerEpoch") for b in with_epochs]
        else:
            isr = new_isr
            isr_epochs = None if new_isr is None else [-1] * len(new_isr)
        # the committed state: matched to the controller's commit by its partition epoch
        ok = r.get("errorCode") == 0
        yield {
            "topic": name, "topic_id": tid, "partition": p.get("partitionIndex"), "error_code": r.get("errorCode"),
            "broker_id": broker_id, "broker_epoch": broker_epoch, "isr": isr, "isr_broker_epochs": isr_epochs,
            "partition_epoch": _coalesce(r.get("partitionEpoch"), r.get("currentIsrVersion")) if ok else None,
            "leader_epoch": r.get("leaderEpoch") if ok else None, "leader": r.get("leaderId") if ok else None,
            "details": {
                "request_leader_epoch": p.get("leaderEpoch"),
                "request_partition_epoch": _coalesce(p.get("partitionEpoch"), p.get("currentIsrVersion")),
                "committed_isr": _join(r.get("isr")) if ok else None,
                "leader_recovery_state": p.get("leaderRecoveryState"), "with_broker_epochs": with_epochs is not None,
            },
        }


def _api_events(api: str, j: dict, version: Any) -> Iterator[Event]:
    if api == "PRODUCE":
        return _produce(j)
    if api == "FETCH":
        return _fetch(j)
    if api == "STOP_REPLICA":
        return _stop_replica(j, version)
    if api == "LEADER_AND_ISR":
        return _leader_and_isr(j)
    if api == "UPDATE_METADATA":
        return _update_metadata(j)
    return _alter_partition(j)  # ALTER_PARTITION, ALTER_ISR


def _error_name(code: int | None) -> str | None:
    if code is None:
        return None
    return ERROR_NAMES.get(code) or f"UNKNOWN_ERROR_CODE_{code}"


def _try_int(text: str, limit: int) -> int | None:
    """``try_cast`` of a ``-?\\d+`` capture ("" when absent)."""
    if not text or len(text.lstrip("-").lstrip("0")) > 20:  # beyond int64 (and int() refuses thousands)
        return None
    value = int(text)
    return value if -limit <= value < limit else None


def parse_record(record: Row) -> Iterable[Row]:
    """One ``Completed request:`` record -> its request_* events (one per partition), a malformed row,
    or nothing (an API not read here). Spark: :func:`parse_request_log`."""
    msg = record.get("message")
    if msg is None or not msg.startswith(PREFIX):
        return
    is_json = msg.startswith(_JSON_PREFIX)
    header_match = None if is_json else _TEXT_HEADER.search(msg)
    if is_json:
        found = _API_NAME.search(msg)
        api = found.group(1) if found else ""
    else:
        api = header_match.group(1) if header_match else ""
    # A line cut short (lost its "(logger)" tail, or its JSON does not close) is malformed whatever
    # its API: counting it irrelevant would hide the loss.
    truncated = record.get("logger") is None or (is_json and not msg.rstrip(" ").endswith("}"))
    ours = api in API_EVENT_TYPES
    if not ours and not truncated:
        return
    j: dict = {}
    corrupt = False
    if is_json and ours:
        body = msg[len(PREFIX):]
        j, corrupt = from_json(body, _CONVERTERS[api]) or jackson_from_json(body, SCHEMAS[api])
    header = j.get("requestHeader")
    malformed = truncated or (is_json and (corrupt or header is None))
    if is_json:
        api_version, correlation_id = _get(header, "requestApiVersion"), _get(header, "correlationId")
    else:
        groups = header_match.groups() if header_match else ("", "", "", "")
        api_version, correlation_id = _try_int(groups[1], _INT32), _try_int(groups[3], _INT64)
    top = None if api == "PRODUCE" else _get(j, "response", "errorCode")
    if malformed:
        # A cut line of an API we parse keeps the JSON parser's verdict; others are named truncated.
        reason = "truncated request-log line" if truncated and not ours else "unparseable request-log JSON"
        events: Iterable[Event] = ({"details": {"reason": reason}},)
    elif not is_json:
        events = ({"details": {}},)
    else:
        events = _api_events(api, j, api_version)
    base = {name: record.get(name) for name in _PROVENANCE}
    base.update(
        event_type=MALFORMED if malformed else API_EVENT_TYPES[api],
        kafka_version_hint="2.8+" if is_json else "2.6-2.7",
        api_key=api, api_version=api_version, correlation_id=correlation_id,
    )
    extra = {
        "top_error_code": _text(top),
        "client_id": _get(header, "clientId"),
        "format": None if is_json else "text",
        "text_client_id": None if is_json else (header_match.group(3) if header_match else ""),
    }
    for sub_index, e in enumerate(events):
        # a partition absent from the response's error list inherits a whole-request refusal
        code = _coalesce(e.get("error_code"), top if top is not None and top != 0 else None)
        details = {"error_code": _text(code), **extra}
        for k, v in e["details"].items():
            if k != "format":
                details[k] = _text(v)
        row = dict(base, **e)
        row["sub_index"] = sub_index
        row["broker_id"] = _coalesce(e.get("broker_id"), record.get("host_id"))
        row["error"] = None if malformed else _error_name(code)
        row["details"] = {k: v for k, v in details.items() if v is not None}
        yield row


def parse_request_log(records: DataFrame) -> DataFrame:
    """Completed-request lines (KIP-673 JSON, 2.8+; header only for the <=2.7 text form) -> request_* events.

    Rules served: KIP-570 StopReplica fencing, controller-epoch fencing, KIP-903 AlterPartition
    broker epochs, fetch high watermarks for catch-up, produce acceptance (see the module docstring).
    """
    return map_rows(records, parse_record)
