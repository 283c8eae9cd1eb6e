"""``kafka-dump-log.sh --files <segment>.log`` output -> one ``data_batch`` event per record batch.

Reference §4.1 (``DumpLogSegments.dumpLog`` / ``printBatchLevel``). A file holds one or more
``Dumping <path>`` sections; the segment's partition directory ``<topic>-<partition>`` (split on the
LAST ``-``) names the topic-partition. Every batch is one line:

    baseOffset: B lastOffset: L count: N baseSequence: .. lastSequence: .. producerId: P
    producerEpoch: E partitionLeaderEpoch: LE isTransactional: T isControl: C [deleteHorizonMs: D]
    position: .. <CreateTime|LogAppendTime|NoTimestampType>: TS size: .. magic: 2 compresscodec: ..
    crc: .. isvalid: ..

``deleteHorizonMs`` exists from 3.2; magic < 2 batches print ``offset: <lastOffset>`` instead of
everything before `` position:``. ``--deep-iteration`` / ``--print-data-log`` add one ``| offset: ..``
line per record: they belong to their batch and yield no event (only a control batch's marker,
``endTxnMarker: COMMIT`` / ``controlType: ..``, is read, into the batch's ``record_type``).

Dumps can hold 10^7 lines: a file is streamed line by line (never held whole), cheap ``startswith``
tests route a line before any regex, and only the current section and the last batch are kept.
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
    parent_dir,
    partition_dir,
    provenance,
    to_int,
    to_long,
)
from epoch_audit.bronze.parsers.rows import MALFORMED, Row, java_regex, map_files

LOG_KIND = "segment-dump"

# The magic >= 2 batch line (3.2+ with deleteHorizonMs, 2.x-3.1 without). compresscodec prints the
# enum constant on 2.x (``NONE``) and the lower-case name on 3.x (``none``).
BATCH_V2 = java_regex(
    r"^baseOffset: (?P<baseOffset>-?\d+) lastOffset: (?P<lastOffset>-?\d+) count: (?P<count>-?\d+|null) "
    r"baseSequence: (?P<baseSequence>-?\d+) lastSequence: (?P<lastSequence>-?\d+) producerId: (?P<producerId>-?\d+) "
    r"producerEpoch: (?P<producerEpoch>-?\d+) partitionLeaderEpoch: (?P<partitionLeaderEpoch>-?\d+) "
    r"isTransactional: (?P<isTransactional>true|false) isControl: (?P<isControl>true|false)"
    r"(?: deleteHorizonMs: (?P<deleteHorizonMs>OptionalLong\.empty|OptionalLong\[(?P<horizon>-?\d+)\]))?"
    r" position: (?P<position>\d+) (?P<tsType>CreateTime|LogAppendTime|NoTimestampType): (?P<ts>-?\d+) "
    r"size: (?P<size>\d+) magic: (?P<magic>\d+) compresscodec: (?P<compresscodec>\w+) crc: (?P<crc>\d+) "
    r"isvalid: (?P<isvalid>true|false)" + END
)
# magic 0/1 (message-format v0/v1): only the last offset; no leader epoch, no producer.
BATCH_LEGACY = java_regex(
    r"^offset: (?P<offset>-?\d+) position: (?P<position>\d+) (?P<tsType>CreateTime|LogAppendTime|NoTimestampType): "
    r"(?P<ts>-?\d+) size: (?P<size>\d+) magic: (?P<magic>\d+) compresscodec: (?P<compresscodec>\w+) "
    r"crc: (?P<crc>\d+) isvalid: (?P<isvalid>true|false)" + END
)
DUMPING = java_regex(r"^Dumping (" + DOT + r"+)" + END)
_LAST_PATH_PART = java_regex(r"([^/\\]+)" + END)
# Control-record markers of a deep-iterated control batch (§3.2, §4.1).
CONTROL_MARKER = java_regex(
    r" (?:endTxnMarker: (COMMIT|ABORT)|controlType: ([A-Z_]+)\(-?\d+\)"
    r"|(SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters) \{|(LeaderChange): \{)"
)
_PRINTED_CONTROL = {
    "SnapshotHeader": "SNAPSHOT_HEADER",
    "SnapshotFooter": "SNAPSHOT_FOOTER",
    "KRaftVersion": "KRAFT_VERSION",
    "KRaftVoters": "KRAFT_VOTERS",
}
_MARKER_WORDS = ("endTxnMarker: ", "controlType: ", "Snapshot", "KRaftV", "LeaderChange: ")
UNPARSEABLE_BATCH = {"reason": "unparseable kafka-dump-log batch line"}


def dump_section(text: str) -> dict[str, Any]:
    """path, segment, topic, partition, state of a ``Dumping <path>`` line."""
    m = DUMPING.search(text)
    path = m.group(1) if m else ""
    segment = _LAST_PATH_PART.search(path)
    topic, partition, state = partition_dir(parent_dir(path))
    return {"path": path, "segment": segment.group(1) if segment else "", "topic": topic, "partition": partition,
            "state": state}


def control_marker(text: str) -> str | None:
    """The control type a control-record line names (COMMIT, ABORT, LEADER_CHANGE, SNAPSHOT_HEADER...)."""
    if not any(word in text for word in _MARKER_WORDS):
        return None
    m = CONTROL_MARKER.search(text)
    if m is None:
        return None
    txn, control, printed, leader_change = m.groups()
    return txn or control or _PRINTED_CONTROL.get(printed or "") or ("LEADER_CHANGE" if leader_change else None)


def parse_batch_line(text: str) -> dict[str, Any] | None:
    """Typed fields of a batch line (magic >= 2 or legacy magic 0/1), None when it does not parse.

    Legacy lines only know their last offset (``offset: <lastOffset>``): no base offset, no leader
    epoch, no producer. ``_ts`` is the batch timestamp when it is one (not NoTimestampType, >= 0)."""
    m = BATCH_V2.match(text)
    if m is not None:
        g = m.groupdict()
    else:
        m = BATCH_LEGACY.match(text)
        if m is None:
            return None
        g = dict.fromkeys(("baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId",
                           "producerEpoch", "partitionLeaderEpoch", "isTransactional", "isControl",
                           "deleteHorizonMs", "horizon"))
        g.update(m.groupdict())
    ts_type = g["tsType"]
    ts = to_long(g["ts"])
    is_v2 = g["baseOffset"] is not None
    return {
        "offset": to_long(g["baseOffset"]),
        "last_offset": to_long(g["lastOffset"] if is_v2 else g["offset"]),
        "leader_epoch": to_int(g["partitionLeaderEpoch"]),
        "producer_id": to_long(g["producerId"]),
        "producer_epoch": to_int(g["producerEpoch"]),
        "is_transactional": g["isTransactional"] == "true",
        "is_control": g["isControl"] == "true",
        "create_time_ms": ts if ts_type == "CreateTime" else None,
        "_ts": ts if ts_type != "NoTimestampType" and ts is not None and ts >= 0 else None,
        "_details": {
            "count": g["count"],
            "base_sequence": g["baseSequence"],
            "last_sequence": g["lastSequence"],
            "timestamp_type": ts_type,
            "max_timestamp": g["ts"],
            "position": g["position"],
            "size": g["size"],
            "magic": g["magic"],
            "compresscodec": g["compresscodec"],
            "crc": g["crc"],
            "isvalid": g["isvalid"],
            "delete_horizon_ms": g["horizon"],
        },
        # deleteHorizonMs is printed from 3.2.0 on (reference §4.1); legacy lines cannot tell.
        "kafka_version_hint": ("3.2+" if g["deleteHorizonMs"] is not None else "2.6-3.1") if is_v2 else None,
    }


def _line_kind(text: str) -> str | None:
    if text.startswith("baseOffset: "):
        return "batch"
    # ``offset: N position: P`` alone is an .index dump entry, not a legacy batch.
    if text.startswith("offset: "):
        return "batch" if " magic: " in text else None
    if text.startswith("Dumping "):
        return "dumping"
    if text.startswith("|") and ("endTxnMarker: " in text or "controlType: " in text):
        return "marker"
    return None


def _batch_event(line: Row, text: str, section: dict[str, Any] | None, file_dir: tuple) -> Row:
    row = provenance(line)
    row["broker_id"] = line["host_id"]
    row["raw"] = text
    b = parse_batch_line(text)
    if b is None:
        row["event_type"] = MALFORMED
        row["details"] = dict(UNPARSEABLE_BATCH)
        return row
    if section is not None and section["topic"] is not None:
        topic, partition, state, source = section["topic"], section["partition"], section["state"], "dumping"
    else:
        # The dump was run inside the partition directory (``Dumping 0000.log``): fall back to the
        # directory the collected file sits in, when that is a partition directory.
        (topic, partition, state), source = file_dir, "file_path"
    details = b["_details"]
    details["segment"] = section["segment"] if section else None
    details["dump_path"] = section["path"] if section else None
    details["dir_state"] = state
    details["topic_partition_from"] = source if topic is not None else None
    row.update(
        event_type="data_batch", topic=topic, partition=partition, event_time=millis_time(b["_ts"]),
        offset=b["offset"], last_offset=b["last_offset"], leader_epoch=b["leader_epoch"],
        producer_id=b["producer_id"], producer_epoch=b["producer_epoch"], is_transactional=b["is_transactional"],
        is_control=b["is_control"], create_time_ms=b["create_time_ms"], kafka_version_hint=b["kafka_version_hint"],
        details=drop_nulls(details),
    )
    return row


class DumpReader:
    """:func:`parse_file`'s state, fed a line at a time: the current ``Dumping`` section, the
    directory the file sits in, and the last batch event, waiting for a marker line."""

    def __init__(self) -> None:
        self.section: dict[str, Any] | None = None
        self.file_dir: tuple | None = None
        self.pending: Row | None = None

    def feed(self, line: Row) -> list[Row]:
        """The events ``line`` completes (the waiting batch's, once a later line shows it has no marker)."""
        if line["log_kind"] != LOG_KIND:
            return []
        text = clean_line(line["text"])
        kind = _line_kind(text)
        if kind is None:
            return []
        done = []
        if self.pending is not None:
            if kind == "marker" and self.pending.get("is_control"):
                self.pending["record_type"] = control_marker(text)
            done.append(self.pending)
            self.pending = None
        if kind == "dumping":
            self.section = dump_section(text)
        elif kind == "batch":
            self.pending = _batch_event(line, text, self.section, self.directory(line["source_file"]))
        return done

    def directory(self, source_file: str) -> tuple:
        """(topic, partition, state) of the directory the file sits in (all None if no partition's)."""
        if self.file_dir is None:
            self.file_dir = partition_dir(parent_dir(source_file))
        return self.file_dir

    def close(self) -> list[Row]:
        """The waiting batch event, at the end of the file."""
        done = [] if self.pending is None else [self.pending]
        self.pending = None
        return done


def parse_file(lines: Iterator[Row]) -> Iterable[Row]:
    """One segment dump's lines (line order) -> ``data_batch`` events (§4.1), streamed.

    offset = baseOffset, last_offset, leader_epoch = partitionLeaderEpoch, producer_id/epoch,
    is_transactional, is_control, create_time_ms (CreateTime batches), event_time = the batch
    timestamp (UTC epoch ms); count, timestamp type, sizes and crc in ``details``. A line that starts
    like a batch line but does not parse is ``__malformed__``. Record (``|``) lines yield nothing,
    except that a control batch takes its marker from a marker line right after it (any later batch
    would put its own batch line in between). Only lines of this read count: a file read from the
    middle has no section until its next ``Dumping`` line.
    """
    reader = DumpReader()
    for line in lines:
        yield from reader.feed(line)
    yield from reader.close()


def parse_segment_dump(lines: DataFrame) -> DataFrame:
    """kafka-dump-log segment dump lines (log_kind ``segment-dump``) -> ``data_batch`` events (§4.1),
    file by file through :func:`parse_file`."""
    return map_files(lines.filter(F.col("log_kind") == LOG_KIND), parse_file)
