"""``kafka-dump-log.sh --cluster-metadata-decoder`` output -> one ``md_*`` event per metadata record.

Reference §3.1 (record schemas) and §3.2 (decoder output). Per batch, one batch line (layout of §4.1)
then one line per record:

    | offset: <o> CreateTime: <ts> keySize: -1 valueSize: <n> sequence: -1 headerKeys: [] payload: <json>

with ``<json>`` = ``{"type":"<RECORD_TYPE>","version":<v>,"data":{...}}`` (camelCase keys in schema
order; tagged fields at their default are left out). ``--skip-record-metadata`` drops everything
before `` payload:``; then the record offset is the batch's baseOffset + the record's index.

Events: ``md_batch`` per batch line (commit points: metadata_offset = offset = baseOffset,
last_offset, quorum_epoch = partitionLeaderEpoch, create_time_ms = batch CreateTime) and one
``md_*`` per record (metadata_offset = the record's offset; offset / last_offset = its batch's range,
so records of one batch share one commit point). Record fields go to typed columns exactly as
written: PartitionChangeRecord's leader is null when the key is absent (-2 = unchanged is the
default), and its leader / partition epochs are NOT derived here (silver replays them).

Snapshot sections (§3.2: a ``<endOffset>-<epoch>.checkpoint`` file, header ``Snapshot end offset:
<o>, epoch: <e>``, or the bootstrap file, header ``KRaft bootstrap snapshot``): the raft snapshot
writer numbers its batches from offset 0, so their offsets are NOT ``__cluster_metadata`` log
offsets and would collide with the log's own records (timelines key records by metadata offset).
Their events keep type and record fields but carry no metadata_offset / offset / last_offset and
no event time (a snapshot is the state as of its end offset, not a change at a moment); the
snapshot-local offset, end offset and epoch go to ``details`` (``snapshot_offset``,
``snapshot_end_offset``, ``snapshot_epoch``, ``snapshot`` = snapshot | bootstrap).

A file is read line by line in order: a record belongs to the last batch line above it (a
``Dumping`` line ends a batch), a control batch takes its marker from the record line right after
it. Only lines of this read count (a file read from the middle has no batch until its next batch
line). Records that carry only a topic id are named from the same file's TopicRecord: a record
waits for the end of the file only while no TopicRecord of its id has been seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.bronze.parsers.file_lines import (
    DOT,
    END,
    clean_line,
    drop_nulls,
    millis_time,
    provenance,
    to_int,
    to_long,
)
from epoch_audit.bronze.parsers.metadata_payload import read_payload
from epoch_audit.bronze.parsers.rows import MALFORMED, Row, java_regex, map_files
from epoch_audit.bronze.parsers.segment_dump import DUMPING, UNPARSEABLE_BATCH, control_marker, parse_batch_line

LOG_KIND = "metadata-dump"

# Record line. keySize/valueSize were spelled keysize/valuesize before 3.0: match case-insensitively.
RECORD = java_regex(
    r"(?i)^\| ?offset: (-?\d+) (CreateTime|LogAppendTime|NoTimestampType): (-?\d+) "
    r"keySize: (-?\d+) valueSize: (-?\d+)"
)
PAYLOAD = java_regex(r"^" + DOT + r"*? payload: (" + DOT + r"*)" + END)
OTHER_DATA = java_regex(r'"data":(\{' + DOT + r"*\})\}" + END)
# Snapshot sections (§3.2): the header line after ``Dumping``, or the file name itself.
SNAPSHOT_HEADER = java_regex(r"^Snapshot end offset: (-?\d+), epoch: (-?\d+)" + END)
BOOTSTRAP_HEADER = "KRaft bootstrap snapshot"
SNAPSHOT_FILE = java_regex(r"(?:^|[/\\])(\d+)-(\d+)\.checkpoint" + END)
_LAST_PATH_PART = java_regex(r"([^/\\]+)" + END)

# Record type (decoder enum constant, §3.2) -> event type; anything else is md_other.
RECORD_EVENT_TYPES: dict[str, str] = {
    "REGISTER_BROKER_RECORD": "md_register_broker",
    "UNREGISTER_BROKER_RECORD": "md_unregister_broker",
    "BROKER_REGISTRATION_CHANGE_RECORD": "md_broker_registration_change",
    "FENCE_BROKER_RECORD": "md_fence_broker",
    "UNFENCE_BROKER_RECORD": "md_unfence_broker",
    "TOPIC_RECORD": "md_topic",
    "REMOVE_TOPIC_RECORD": "md_remove_topic",
    "PARTITION_RECORD": "md_partition",
    "PARTITION_CHANGE_RECORD": "md_partition_change",
    "BEGIN_TRANSACTION_RECORD": "md_begin_transaction",
    "END_TRANSACTION_RECORD": "md_end_transaction",
    "ABORT_TRANSACTION_RECORD": "md_abort_transaction",
}
BROKER_RECORDS = frozenset({
    "md_register_broker", "md_unregister_broker", "md_broker_registration_change", "md_fence_broker",
    "md_unfence_broker",
})
PARTITION_RECORDS = frozenset({"md_partition", "md_partition_change"})
NO_BATCH: dict[str, Any] = {"line": None, "base": None, "last": None, "epoch": None, "create_time_ms": None,
                            "is_control": None}


def record_type_name(upper_snake: str) -> str:
    """``PARTITION_CHANGE_RECORD`` -> ``PartitionChangeRecord`` (the schema name, §3.2)."""
    words = upper_snake.lower().replace("_", " ").split(" ")
    return "".join(w[:1].upper() + w[1:] for w in words)


def _all(*values: bool | None) -> bool | None:
    """SQL AND: False if any is False, else unknown (None) if any is unknown."""
    return False if False in values else None if None in values else True


def _any(*values: bool | None) -> bool | None:
    """SQL OR: True if any is True, else unknown (None) if any is unknown."""
    return True if True in values else None if None in values else False


def _not(value: bool | None) -> bool | None:
    return None if value is None else not value


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _snapshot_section(text: str, is_dumping: bool) -> dict[str, Any]:
    """is_snapshot, kind, end_offset, epoch of a ``Dumping`` or snapshot header line."""
    if is_dumping:
        m = DUMPING.search(text)
        path = m.group(1) if m else ""
        name = _LAST_PATH_PART.search(path)
        is_snapshot = path.endswith(".checkpoint")
        kind = ("bootstrap" if name and name.group(1) == "bootstrap.checkpoint" else "snapshot") if is_snapshot else None
        f = SNAPSHOT_FILE.search(path)
    else:
        is_snapshot, kind = True, "bootstrap" if text == BOOTSTRAP_HEADER else "snapshot"
        f = SNAPSHOT_HEADER.search(text)
    end, epoch = f.groups() if f else (None, None)
    return {"is_snapshot": is_snapshot, "kind": kind, "end_offset": to_long(end), "epoch": to_int(epoch)}


def _snapshot_details(snap: dict[str, Any] | None, local_offset: int | None) -> dict[str, Any]:
    """details entries of an event inside a snapshot section (none outside one)."""
    if not (snap and snap["is_snapshot"]):
        return {}
    return {"snapshot": snap["kind"], "snapshot_end_offset": _str(snap["end_offset"]),
            "snapshot_epoch": _str(snap["epoch"]), "snapshot_offset": _str(local_offset)}


class _Context:
    """What the lines above a line say about it: the dump path, batch and snapshot section."""

    def __init__(self) -> None:
        self.dump_path: str | None = None
        self.batch: dict[str, Any] | None = None
        self.snap: dict[str, Any] | None = None


def _batch_event(line: Row, text: str, b: dict[str, Any] | None, ctx: _Context) -> Row:
    """An md_batch event of batch line ``text`` parsed as ``b`` (None: it does not parse)."""
    row = provenance(line)
    row.update(broker_id=line["host_id"], raw=text)
    if b is None:
        row.update(event_type=MALFORMED, details=dict(UNPARSEABLE_BATCH))
        return row
    # Snapshot batches are numbered from 0 by the snapshot writer: not log offsets (no commit point).
    in_log = not (ctx.snap and ctx.snap["is_snapshot"])
    details = {**b["_details"], "dump_path": ctx.dump_path, **_snapshot_details(ctx.snap, b["offset"]),
               "snapshot_last_offset": None if in_log else _str(b["last_offset"])}
    row.update(
        event_type="md_batch",
        metadata_offset=b["offset"] if in_log else None,
        offset=b["offset"] if in_log else None,
        last_offset=b["last_offset"] if in_log else None,
        quorum_epoch=b["leader_epoch"],
        create_time_ms=b["create_time_ms"] if in_log else None,
        event_time=millis_time(b["_ts"]) if in_log else None,
        producer_id=b["producer_id"],
        producer_epoch=b["producer_epoch"],
        is_transactional=b["is_transactional"],
        is_control=b["is_control"],
        details=drop_nulls(details),
    )
    return row


def _record_head(text: str) -> tuple[bool, int | None, int | None]:
    """(has record metadata, the record's offset, its CreateTime) of a record line."""
    if RECORD.search(text) is None:
        return False, None, None
    # ``| offset: <o> <tsType>: <ts> keySize: ..`` split on spaces: [|, offset:, o, tsType:, ts, ...]
    # (``|offset:`` without the space shifts by one; the reference prints the space).
    head = text.split(" ", 6)
    shift = 0 if head[0] == "|" else -1
    rec_ts = to_long(head[4 + shift]) if head[3 + shift] == "CreateTime:" else None
    return True, to_long(head[2 + shift]), rec_ts


def _record_event(line: Row, text: str, ctx: _Context) -> Row | None:
    """The md_* event of a record line, ``__malformed__`` when it cannot be read, None when it
    says nothing (a control record, a line that is no record)."""
    has_meta, rec_offset, rec_ts = _record_head(text)
    payload = None
    if " payload: " in text:
        m = PAYLOAD.search(text)
        payload = m.group(1) if m else ""
    bt = ctx.batch or NO_BATCH
    # Index of the record inside its batch: records print one line each, right after the batch line.
    index_offset = None
    if bt["base"] is not None and bt["line"] is not None:
        index_offset = bt["base"] + (line["line_number"] - bt["line"] - 1)
    offset_guess = rec_offset if rec_offset is not None else index_offset
    # A record belongs to the batch above it only if its offset lies in that batch's range (a
    # snippet with batch lines cut out must not borrow a wrong quorum epoch). SQL logic: unknown
    # (None) where a bound or the offset is null.
    in_batch = _all(
        bt["line"] is not None,
        None if offset_guess is None or bt["base"] is None else bt["base"] <= offset_guess,
        None if offset_guess is None or bt["last"] is None else offset_guess <= bt["last"],
    )
    local_offset = offset_guess if in_batch else rec_offset
    # Inside a snapshot section offsets are snapshot-local (numbered from 0): no log position.
    in_log = not (ctx.snap and ctx.snap["is_snapshot"])
    in_control = _all(in_batch, bt["is_control"])

    rtype, version, d = read_payload(payload) if payload is not None else (None, None, None)
    reason = None
    if payload is not None and payload.startswith("Error at "):
        reason = "undecodable metadata record: " + payload
    elif payload is not None and rtype is None:
        reason = "unparseable metadata record payload"
    elif payload is not None and local_offset is None and in_log:
        reason = "metadata record without offset or batch"
    elif not has_meta and payload is None and _not(in_control) and text.startswith("|"):
        reason = "unparseable kafka-dump-log record line"
    row = provenance(line)
    row["raw"] = text
    row["topic_id"] = d["topicId"] if d else None
    if reason is not None:
        row.update(event_type=MALFORMED, broker_id=line["host_id"], details={"reason": reason})
        return row
    if payload is None:
        return None
    et = RECORD_EVENT_TYPES.get(rtype, "md_other")
    is_broker, is_partition = et in BROKER_RECORDS, et in PARTITION_RECORDS
    is_reg, is_brc = et == "md_register_broker", et == "md_broker_registration_change"
    create_time = (bt["create_time_ms"] if in_batch else rec_ts) if in_log else None
    if is_reg:
        # RegisterBrokerRecord: Fenced bool (0+, default true; absent in 2.8 where a new
        # registration was fenced), InControlledShutdown bool (1+, default false).
        fenced = (d["fenced"] if d["fenced"] is not None else "true") == "true"
        in_cs = (d["inControlledShutdown"] if d["inControlledShutdown"] is not None else "false") == "true"
    elif is_brc:
        # int8 flags: 1 -> true, -1 -> false, 0 / absent -> null (no change)
        fenced = {"1": True, "-1": False}.get(d["fenced"])
        in_cs = True if d["inControlledShutdown"] == "1" else None
    else:
        fenced = {"md_fence_broker": True, "md_unfence_broker": False}.get(et)
        in_cs = None
    details = {
        "record_version": _str(version),
        # The record's own timestamp only where it says more than the batch's.
        "record_create_time_ms": _str(rec_ts) if _any(
            not in_log, _not(in_batch), rec_ts != bt["create_time_ms"]) else None,
        "fenced_raw": d["fenced"] if is_reg or is_brc else None,
        "in_controlled_shutdown_raw": d["inControlledShutdown"] if is_reg or is_brc else None,
        "incarnation_id": d["incarnationId"],
        "rack": d["rack"] if is_reg else None,
        "is_migrating_zk_broker": _str(d["isMigratingZkBroker"]) if is_reg else None,
        "leader_recovery_state": _str(d["leaderRecoveryState"]) if is_partition else None,
        "elr": _ints_text(d["eligibleLeaderReplicas"]) if is_partition else None,
        "last_known_elr": _ints_text(d["lastKnownElr"]) if is_partition else None,
        "name": d["name"] if et in ("md_begin_transaction", "md_other") else None,
        "reason": d["reason"] if et == "md_abort_transaction" else None,
        # Other records (Config, FeatureLevel, ProducerIds, NoOp, ...) keep their data JSON.
        "data": _other_data(payload) if et == "md_other" else None,
        **_snapshot_details(ctx.snap, local_offset),
    }
    in_log_batch = in_batch and in_log
    row.update(
        event_type=et,
        record_type=record_type_name(rtype),
        details=drop_nulls(details),
        broker_id=_first(d["brokerId"], d["id"]) if is_broker else line["host_id"],
        broker_epoch=_first(d["brokerEpoch"], d["epoch"]) if is_broker else None,
        fenced=fenced,
        in_controlled_shutdown=in_cs,
        partition=d["partitionId"] if is_partition else None,
        leader=d["leader"] if is_partition else None,
        leader_epoch=d["leaderEpoch"] if et == "md_partition" else None,
        partition_epoch=d["partitionEpoch"] if et == "md_partition" else None,
        isr=d["isr"] if is_partition else None,
        replicas=d["replicas"] if is_partition else None,
        adding_replicas=d["addingReplicas"] if is_partition else None,
        removing_replicas=d["removingReplicas"] if is_partition else None,
        metadata_offset=local_offset if in_log else None,
        offset=bt["base"] if in_log_batch else None,
        last_offset=bt["last"] if in_log_batch else None,
        quorum_epoch=bt["epoch"] if in_batch else None,
        create_time_ms=create_time,
        event_time=millis_time(create_time),
    )
    if et == "md_topic":
        row["_topic_name"] = d["name"]
    return row


def _first(a: Any, b: Any) -> Any:
    return a if a is not None else b


def _ints_text(values: list[int | None] | None) -> str | None:
    if values is None:
        return None
    return "[" + ",".join(str(v) for v in values if v is not None) + "]"


def _other_data(payload: str) -> str:
    m = OTHER_DATA.search(payload)
    return m.group(1) if m else ""


def _line_kind(text: str) -> str | None:
    if text.startswith("baseOffset: "):
        return "batch"
    if text.startswith(("|", " payload: ")):
        return "record"
    if text.startswith("Dumping "):
        return "dumping"
    if text.startswith("Snapshot end offset: ") or text == BOOTSTRAP_HEADER:
        return "snapshot"
    return None


def _events(lines: Iterator[Row]) -> Iterator[Row]:
    """Every event of one file's lines, in line order; a control batch waits for its next line."""
    ctx = _Context()
    pending: Row | None = None  # the last md_batch, waiting for the marker of the next line
    for line in lines:
        if line["log_kind"] != LOG_KIND:
            continue
        text = clean_line(line["text"])
        kind = _line_kind(text)
        if kind is None:
            continue
        if pending is not None:
            if kind == "record" and pending.get("is_control"):
                # Control batches (raft LEADER_CHANGE, snapshot header/footer...) hold no metadata record.
                pending["record_type"] = control_marker(text)
            yield pending
            pending = None
        if kind == "dumping":
            m = DUMPING.search(text)
            ctx.dump_path = m.group(1) if m else ""
            # records never attach to a batch of an earlier section
            ctx.batch = NO_BATCH
            ctx.snap = _snapshot_section(text, True)
        elif kind == "snapshot":
            ctx.snap = _snapshot_section(text, False)
        elif kind == "batch":
            b = parse_batch_line(text)
            if b is not None:
                ctx.batch = {"line": line["line_number"], "base": b["offset"], "last": b["last_offset"],
                             "epoch": b["leader_epoch"], "create_time_ms": b["create_time_ms"],
                             "is_control": b["is_control"]}
            pending = _batch_event(line, text, b, ctx)
        else:
            event = _record_event(line, text, ctx)
            if event is not None:
                yield event
    if pending is not None:
        yield pending


def parse_file(lines: Iterator[Row]) -> Iterable[Row]:
    """One metadata-log dump's lines (line order) -> ``md_batch`` + one ``md_*`` per record.

    Lines that start like a batch or record line but do not parse, undecodable records
    (``Error at <offset>, skipping. ...``) and unreadable payloads are ``__malformed__``. A record
    with a topic id takes the topic name of the file's TopicRecord of that id.
    """
    names: dict[str, str] = {}  # topic id -> name, from the file's TopicRecords
    waiting: list[Row] = []  # rows whose topic id has no name yet
    for row in _events(lines):
        name = row.pop("_topic_name", None)
        topic_id = row.get("topic_id")
        if name is not None and topic_id is not None:
            names.setdefault(topic_id, name)
        if topic_id is None:
            yield row
        elif topic_id in names:
            row["topic"] = names[topic_id]
            yield row
        else:
            waiting.append(row)
    for row in waiting:
        row["topic"] = names.get(row["topic_id"])
        yield row


def parse_metadata_dump(lines: DataFrame) -> DataFrame:
    """Metadata-log dump lines (log_kind ``metadata-dump``) -> ``md_batch`` + one ``md_*`` per record,
    file by file through :func:`parse_file`."""
    return map_files(lines.filter(F.col("log_kind") == LOG_KIND), parse_file)
