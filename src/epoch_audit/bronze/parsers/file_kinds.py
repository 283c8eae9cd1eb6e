"""Which file-level format a collected file is: kafka-dump-log output, checkpoint, partition.metadata.

Content decides first, the name second (spec "Collected input"): a dump is recognised by its
``Dumping <path>`` header / batch lines (reference §3.2, §4.1), ``partition.metadata`` by its
``version: 0`` / ``topic_id:`` lines (§4.2), a checkpoint by its version line, count line and entry
shape (§4.2). The three offset checkpoints (replication-offset, recovery-point-offset,
log-start-offset) share one layout, so for them the content gives the family and the name the member.

Agents keep periodic copies of checkpoint files as ``<file>.<yyyy-MM-ddTHH-mm-ss>`` (the copying
host's local time); :func:`copy_suffix` / :func:`copy_time` read that suffix.

Pure Python: the lead's framing calls :func:`detect_file_kind` once per file on its name and head.
"""

from __future__ import annotations

import re
from datetime import datetime

SEGMENT_DUMP = "segment-dump"
METADATA_DUMP = "metadata-dump"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
PARTITION_METADATA = "partition-metadata"

FILE_KINDS: tuple[str, ...] = (
    SEGMENT_DUMP,
    METADATA_DUMP,
    LEADER_EPOCH_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    PARTITION_METADATA,
)

# Periodic copy suffix ``.<yyyy-MM-ddTHH-mm-ss>`` (spec "Collected input"). Shared with the checkpoint
# parser (epoch_audit.bronze.parsers.checkpoints) so both read the same suffix.
COPY_SUFFIX_PATTERN = r"\.(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2})$"
COPY_SUFFIX_FORMAT = "%Y-%m-%dT%H-%M-%S"
_COPY_SUFFIX_RE = re.compile(COPY_SUFFIX_PATTERN)

# Offset checkpoints named by the file (OffsetCheckpointFile users, §4.2). cleaner-offset-checkpoint
# has the same layout but no invariant reads it: it is left to the ordinary-file path (None).
_OFFSET_CHECKPOINT_NAMES: tuple[tuple[str, str], ...] = (
    ("replication-offset-checkpoint", REPLICATION_OFFSET_CHECKPOINT),
    ("recovery-point-offset-checkpoint", RECOVERY_POINT_OFFSET_CHECKPOINT),
    ("log-start-offset-checkpoint", LOG_START_OFFSET_CHECKPOINT),
)

# kafka-dump-log header / batch lines (DumpLogSegments.dumpLog / printBatchLevel).
_DUMPING_RE = re.compile(r"^Dumping (.+)$", re.M)
_BATCH_RE = re.compile(r"^baseOffset: -?\d+ lastOffset: -?\d+ count: ", re.M)
_LEGACY_BATCH_RE = re.compile(r"^offset: -?\d+ position: \d+ \w+: -?\d+ size: \d+ magic: [01] ", re.M)
# Metadata-log markers: decoded payloads, snapshot headers, and the raft-only control records
# (LEADER_CHANGE, snapshot header/footer, KRaft version/voters) that only a Raft log holds (§3.2).
_METADATA_PAYLOAD_RE = re.compile(
    r'payload: \{"type":"[A-Z_]+","version":\d+,"data":'
    r"| controlType: LEADER_CHANGE\(2\)| (?:SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters) \{"
    r"| LeaderChange: \{"
)
_METADATA_HEADER_RE = re.compile(r"^(?:Snapshot end offset: -?\d+, epoch: -?\d+|KRaft bootstrap snapshot)$", re.M)
_PARTITION_METADATA_RE = re.compile(r"\Aversion:\s+\d+\r?\ntopic_id:\s+\S+")
_INT_RE = re.compile(r"^-?\d+$")
_EPOCH_ENTRY_RE = re.compile(r"^\s*-?\d+\s+-?\d+\s*$")
_OFFSET_ENTRY_RE = re.compile(r"^\S+\s+-?\d+\s+-?\d+$")


def copy_suffix(file_name: str) -> str | None:
    """The periodic-copy suffix ``yyyy-MM-ddTHH-mm-ss`` of ``<file>.<suffix>``, else None."""
    m = _COPY_SUFFIX_RE.search(_strip_gz(_basename(file_name)))
    return m.group(1) if m else None


def copy_time(file_name: str) -> datetime | None:
    """The periodic-copy suffix as a naive datetime (the copying host's local time), else None."""
    suffix = copy_suffix(file_name)
    if suffix is None:
        return None
    try:
        return datetime.strptime(suffix, COPY_SUFFIX_FORMAT)
    except ValueError:  # e.g. month 13: not a copy suffix after all
        return None


def base_file_name(file_name: str) -> str:
    """The file name without directory, ``.gz`` and periodic-copy suffix."""
    name = _strip_gz(_basename(file_name))
    if copy_time(name) is not None:
        name = _COPY_SUFFIX_RE.sub("", name)
    return name


def detect_file_kind(file_name: str, head: str) -> str | None:
    """The file-level format of a file from its name and first ~4 KB; None for ordinary log files."""
    by_content = _kind_from_content(head)
    name = base_file_name(file_name)
    by_name = _kind_from_name(name)
    if by_content is None:
        # Content says nothing (empty file, only a version line, a cut-off head): the name decides.
        return by_name
    if by_content == "offset-checkpoint":
        # Same layout for all three: the name picks the member; an unknown name stays unknown.
        return by_name if by_name in {k for _, k in _OFFSET_CHECKPOINT_NAMES} else None
    if by_content == "checkpoint":
        # Version and count lines only (0 entries): any checkpoint name fits.
        return by_name if by_name in _CHECKPOINT_KINDS else None
    return by_content


_CHECKPOINT_KINDS = {LEADER_EPOCH_CHECKPOINT} | {k for _, k in _OFFSET_CHECKPOINT_NAMES}


def _kind_from_name(name: str) -> str | None:
    if name == "partition.metadata":
        return PARTITION_METADATA
    if name.endswith("leader-epoch-checkpoint"):
        return LEADER_EPOCH_CHECKPOINT
    for marker, kind in _OFFSET_CHECKPOINT_NAMES:
        if name.endswith(marker):
            return kind
    return None


def _kind_from_content(head: str) -> str | None:
    """A kind, "offset-checkpoint" / "checkpoint" (member unknown), or None when content is silent."""
    if not head:
        return None
    dumping = _DUMPING_RE.search(head)
    if dumping or _BATCH_RE.search(head) or _LEGACY_BATCH_RE.search(head) or _METADATA_HEADER_RE.search(head):
        is_metadata = (
            (dumping is not None and "__cluster_metadata" in dumping.group(1))
            or _METADATA_PAYLOAD_RE.search(head) is not None
            or _METADATA_HEADER_RE.search(head) is not None
        )
        return METADATA_DUMP if is_metadata else SEGMENT_DUMP
    if _PARTITION_METADATA_RE.match(head):
        return PARTITION_METADATA
    return _checkpoint_family(head)


def _checkpoint_family(head: str) -> str | None:
    lines = head.splitlines()
    # The head may end inside a line: drop an incomplete last line of a long head.
    if len(head) >= 4096 and not head.endswith("\n") and len(lines) > 2:
        lines = lines[:-1]
    if len(lines) < 2 or not _INT_RE.match(lines[0].strip()) or not _INT_RE.match(lines[1].strip()):
        return None
    entries = [ln for ln in lines[2:] if ln.strip()]
    if not entries:
        return "checkpoint"
    if all(_EPOCH_ENTRY_RE.match(e) for e in entries):
        return LEADER_EPOCH_CHECKPOINT
    if all(_OFFSET_ENTRY_RE.match(e.strip()) for e in entries):
        return "offset-checkpoint"
    # Version and count lines but broken entries: still a checkpoint (its parser quarantines the
    # bad lines); which one only the name can tell.
    return "checkpoint"


def _basename(path: str) -> str:
    return re.split(r"[/\\]", path)[-1]


def _strip_gz(name: str) -> str:
    return name[:-3] if name.endswith(".gz") else name
