"""Checkpoint files and ``partition.metadata`` -> one event per entry (reference §4.2).

``CheckpointFile`` layout (2.x-3.9): line 1 the format version (``0``), line 2 the entry count N,
then N entries:
- ``leader-epoch-checkpoint`` (in a partition directory): ``<leaderEpoch> <startOffset>``; the
  topic-partition is the parent directory ``<topic>-<partition>`` -> ``checkpoint_leader_epoch``
  (leader_epoch, offset = start offset).
- ``replication-offset-checkpoint`` / ``recovery-point-offset-checkpoint`` /
  ``log-start-offset-checkpoint`` (log-dir root): ``<topic> <partition> <offset>`` ->
  ``checkpoint_replication_offset`` (high_watermark) / ``checkpoint_recovery_offset`` (offset) /
  ``checkpoint_log_start_offset`` (log_start_offset).
- ``partition.metadata`` (2.8+, KIP-516): ``version: 0`` / ``topic_id: <uuid>`` ->
  ``partition_metadata`` (topic_id; topic-partition from the parent directory).

Which kind a file is comes from ``log_kind`` (set by the framing with
:func:`epoch_audit.bronze.parsers.file_kinds.detect_file_kind`): the three offset checkpoints share one layout.

Periodic copies ``<file>.<yyyy-MM-ddTHH-mm-ss>`` carry the copying host's local time: it becomes
``event_time`` (read in ``source_time_zone``) and ``details.copy_time``; a file with its plain name
is the state at collection time (no event_time). ``details.entry_index`` (0-based) marks the first
leader-epoch entry, which retention may have clamped to the log start offset (§4.3).

Quarantined (``__malformed__`` with a reason, as the broker's reader would reject them): a version
other than 0, a non-numeric count, an entry that does not parse, and a count line that disagrees
with the number of entries (the entries themselves are still emitted). The header lines are read
by line number: in a read that starts in the middle of a grown file (no line 1 / 2 in it), entries
are not emitted (the version is unknown) and only an invalid copy-time suffix is reported.

Checkpoint files are small (one line per partition): a file's lines are held while it is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from functools import cache, partial
from typing import Any
from zoneinfo import ZoneInfo

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.bronze.parsers.file_kinds import (
    COPY_SUFFIX_PATTERN,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    PARTITION_METADATA,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from epoch_audit.bronze.parsers.file_lines import (
    END,
    clean_line,
    drop_nulls,
    parent_dir,
    partition_dir,
    provenance,
    to_int,
    to_long,
)
from epoch_audit.bronze.parsers.rows import MALFORMED, Row, java_regex, map_files

OFFSET_KINDS: dict[str, str] = {
    REPLICATION_OFFSET_CHECKPOINT: "checkpoint_replication_offset",
    RECOVERY_POINT_OFFSET_CHECKPOINT: "checkpoint_recovery_offset",
    LOG_START_OFFSET_CHECKPOINT: "checkpoint_log_start_offset",
}
CHECKPOINT_KINDS = (LEADER_EPOCH_CHECKPOINT, *OFFSET_KINDS)

INT_LINE = java_regex(r"^\s*(-?\d+)\s*" + END)
VERSION_0 = java_regex(r"^\s*0\s*" + END)
# Readers split entries on runs of whitespace (CheckpointFile / OffsetCheckpointFile formatters).
EPOCH_ENTRY = java_regex(r"^\s*(-?\d+)\s+(-?\d+)\s*" + END)
OFFSET_ENTRY = java_regex(r"^\s*(\S+)\s+(-?\d+)\s+(-?\d+)\s*" + END)
# PartitionMetadataFile splits each line on a colon followed by whitespace.
PM_VERSION = java_regex(r"^version:\s+(\S+)\s*" + END)
PM_TOPIC_ID = java_regex(r"^topic_id:\s+([A-Za-z0-9_-]{22})\s*" + END)
_GZ = java_regex(r"\.gz" + END)
_COPY_SUFFIX = java_regex(COPY_SUFFIX_PATTERN.removesuffix("$") + END)


@cache
def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def copy_time_of(file_name: str | None, source_time_zone: str = "UTC") -> tuple[str | None, datetime | None]:
    """(suffix, time) of a periodic copy ``<file>.<yyyy-MM-ddTHH-mm-ss>``: the suffix text (None when
    there is none) and its instant read in ``source_time_zone`` as a naive UTC datetime (None when
    the suffix is no valid local time, e.g. month 13; a time in a DST gap moves forward, like Java)."""
    if file_name is None:
        return None, None
    m = _COPY_SUFFIX.search(_GZ.sub("", file_name, count=1))
    if m is None:
        return None, None
    s = m.group(1)
    second = int(s[17:19])
    if second > 60:
        return s, None
    try:
        # make_timestamp takes second 60 as 0 of the next minute
        local = datetime(int(s[0:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]), int(s[14:16]), second % 60)
        local += timedelta(minutes=second // 60)
    except (ValueError, OverflowError):
        return s, None
    return s, local.replace(tzinfo=_zone(source_time_zone)).astimezone(UTC).replace(tzinfo=None)


def _is_blank(text: str) -> bool:
    return text.strip(" ") == ""  # Spark's trim: spaces only


def _out_of_range(name: str, text: str, fits: Any, line: str) -> str | None:
    if text != "" and fits(text) is None:
        return f"{name}: value out of range in checkpoint line: {line}"
    return None


def _entry_misfit(text: str, is_epoch: bool) -> str | None:
    """Why an entry line's numbers do not fit their columns (an epoch beyond int32, an offset beyond
    int64), naming the column; None when they fit."""
    if is_epoch:
        m = EPOCH_ENTRY.search(text)
        epoch, start = m.groups() if m else ("", "")
        return _out_of_range("leader_epoch", epoch, to_int, text) or _out_of_range("offset", start, to_long, text)
    m = OFFSET_ENTRY.search(text)
    partition, offset = m.group(2, 3) if m else ("", "")
    return _out_of_range("partition", partition, to_int, text) or _out_of_range("offset", offset, to_long, text)


class _File:
    """Facts every event of one file shares: provenance source, copy time, partition directory."""

    def __init__(self, first: Row, source_time_zone: str) -> None:
        self.kind = first["log_kind"]
        self.source_file = first["source_file"]
        self.file_name = first["file_name"]
        self.copy_time, self.event_time = copy_time_of(first["file_name"], source_time_zone)
        self.topic, self.partition, self.state = partition_dir(parent_dir(first["source_file"]))

    def event(self, line: Row, text: str, event_type: str, reason: str | None) -> Row:
        row = provenance(line)
        row.update(event_type=event_type, broker_id=line["host_id"], event_time=self.event_time, raw=text)
        if reason is not None:
            row["details"] = {"reason": reason}
        return row


def _checkpoint_reason(f: _File, ln: int, text: str, header: dict[str, Any], entry: Any) -> str | None:
    """Why a checkpoint line is quarantined (the broker reader's rules), None when it is fine.
    ``header["version_ok"]`` is None when line 1 is not in this read (SQL's unknown)."""
    version_ok = header["version_ok"]
    if ln == 1 and version_ok is False:
        return f"Unrecognised checkpoint version: {text}, expected version: 0"
    if ln == 2:
        if INT_LINE.search(text) is None:
            return f"Malformed checkpoint count line: {text}"
        if header["declared"] is None:
            return f"declared_entries: value out of range: {text}"
        if version_ok and header["declared"] != header["entries"]:
            # The broker reader's own text (CheckpointFile.CheckpointReadBuffer.read).
            return (f"Expected [{header['declared']}] entries in checkpoint file [{f.source_file}], "
                    f"but found only [{header['entries']}]")
    if ln > 2 and version_ok:
        if entry is None:
            return f"Malformed line in checkpoint file: {text}"
        misfit = _entry_misfit(text, f.kind == LEADER_EPOCH_CHECKPOINT)
        if misfit is not None:
            return misfit
    if f.copy_time is not None and f.event_time is None:
        return f"event_time: invalid copy time suffix {f.copy_time}"
    if ln > 2 and version_ok and f.kind == LEADER_EPOCH_CHECKPOINT and f.topic is None:
        return "leader-epoch-checkpoint outside a <topic>-<partition> directory"
    return None


def _checkpoint_events(f: _File, lines: list[tuple[Row, str]]) -> Iterator[Row]:
    version_text = next((t for line, t in lines if line["line_number"] == 1), None)
    count_text = next((t for line, t in lines if line["line_number"] == 2), None)
    count = INT_LINE.search(count_text) if count_text is not None else None
    header = {
        "version_ok": None if version_text is None else VERSION_0.search(version_text) is not None,
        "declared": to_long(count.group(1)) if count else None,
        "entries": sum(1 for line, _ in lines if line["line_number"] > 2),
    }
    is_epoch = f.kind == LEADER_EPOCH_CHECKPOINT
    for line, text in lines:
        ln = line["line_number"]
        entry = (EPOCH_ENTRY if is_epoch else OFFSET_ENTRY).search(text)
        reason = _checkpoint_reason(f, ln, text, header, entry)
        if reason is not None:
            yield f.event(line, text, MALFORMED, reason)
            continue
        if not (ln > 2 and header["version_ok"]):
            continue  # header lines; entries of a file whose version this read does not hold
        event_type = "checkpoint_leader_epoch" if is_epoch else OFFSET_KINDS[f.kind]
        row = f.event(line, text, event_type, None)
        offset = to_long(entry.group(2 if is_epoch else 3))
        if is_epoch:
            row.update(topic=f.topic, partition=f.partition, leader_epoch=to_int(entry.group(1)), offset=offset)
        else:
            row.update(topic=entry.group(1), partition=to_int(entry.group(2)))
            column = {"checkpoint_recovery_offset": "offset", "checkpoint_replication_offset": "high_watermark",
                      "checkpoint_log_start_offset": "log_start_offset"}[event_type]
            row[column] = offset
        row["details"] = drop_nulls({
            "copy_time": f.copy_time,
            "entry_index": str(ln - 3),
            "declared_entries": None if header["declared"] is None else str(header["declared"]),
            "dir_state": f.state if is_epoch else None,
            "file_name": f.file_name,
        })
        yield row


def _partition_metadata_reason(f: _File, ln: int, text: str) -> str | None:
    if ln == 1:
        m = PM_VERSION.search(text)
        if m is None:
            return f"Malformed partition.metadata version line: {text}"
        if m.group(1) != "0":
            return f"Unrecognised partition.metadata version: {m.group(1)}"
    if ln == 2 and PM_TOPIC_ID.search(text) is None:
        return f"Malformed partition.metadata topic_id line: {text}"
    if ln > 2:
        return f"Unexpected line in partition.metadata: {text}"
    if ln == 2 and f.topic is None:
        return "partition.metadata outside a <topic>-<partition> directory"
    return None


def _partition_metadata_events(f: _File, lines: Iterable[tuple[Row, str]]) -> Iterator[Row]:
    for line, text in lines:
        ln = line["line_number"]
        reason = _partition_metadata_reason(f, ln, text)
        if reason is not None:
            yield f.event(line, text, MALFORMED, reason)
        elif ln == 2:
            row = f.event(line, text, "partition_metadata", None)
            row.update(topic=f.topic, partition=f.partition, topic_id=PM_TOPIC_ID.search(text).group(1))
            row["details"] = drop_nulls({"copy_time": f.copy_time, "dir_state": f.state, "file_name": f.file_name})
            yield row


def parse_file_in_zone(lines: Iterator[Row], source_time_zone: str = "UTC") -> Iterable[Row]:
    """One checkpoint / partition.metadata file's lines (line order) -> its events (§4.2); copy
    suffixes are read in ``source_time_zone``."""
    kept = [(line, text) for line in lines
            if line["log_kind"] in _KINDS and not _is_blank(text := clean_line(line["text"]))]
    if not kept:
        return []
    f = _File(kept[0][0], source_time_zone)
    if f.kind == PARTITION_METADATA:
        return _partition_metadata_events(f, kept)
    return _checkpoint_events(f, kept)


def parse_file(lines: Iterator[Row]) -> Iterable[Row]:
    """:func:`parse_file_in_zone` with copy suffixes in UTC."""
    return parse_file_in_zone(lines)


_KINDS = frozenset({*CHECKPOINT_KINDS, PARTITION_METADATA})


def parse_checkpoints(lines: DataFrame, source_time_zone: str = "UTC") -> DataFrame:
    """Checkpoint / partition.metadata lines -> ``checkpoint_*`` / ``partition_metadata`` events (§4.2),
    file by file through :func:`parse_file_in_zone`."""
    selected = lines.filter(F.col("log_kind").isin(*_KINDS))
    return map_files(selected, partial(parse_file_in_zone, source_time_zone=source_time_zone))
