"""``kafka-dump-log.sh`` output (reference §3.2, §4.1) and checkpoint files (§4.2)."""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from epoch_audit_tools.simulator.formats.common import Version


def header(v: Version, path: str) -> str:
    """``Dumping <path>`` then ``Log starting offset: 0`` (3.3+; ``Starting offset:`` before)."""
    start = "Log starting offset: 0" if v.at_least("3.3") else "Starting offset: 0"
    return f"Dumping {path}\n{start}\n"


def batch_line(
    v: Version,
    base: int,
    last: int,
    producer_id: int,
    producer_epoch: int,
    base_seq: int,
    leader_epoch: int,
    position: int,
    create_time: int,
    size: int,
) -> str:
    """One magic-2 batch line (field order of §4.1; ``deleteHorizonMs`` from 3.2)."""
    count = last - base + 1
    last_seq = base_seq + count - 1 if base_seq >= 0 else -1
    crc = zlib.crc32(f"{base}:{last}:{producer_id}:{leader_epoch}:{create_time}".encode())
    horizon = " deleteHorizonMs: OptionalLong.empty" if v.at_least("3.2") else ""
    return (
        f"baseOffset: {base} lastOffset: {last} count: {count} baseSequence: {base_seq} lastSequence: {last_seq} "
        f"producerId: {producer_id} producerEpoch: {producer_epoch} partitionLeaderEpoch: {leader_epoch} "
        f"isTransactional: false isControl: false{horizon} position: {position} CreateTime: {create_time} "
        f"size: {size} magic: 2 compresscodec: none crc: {crc} isvalid: true\n"
    )


def record_line(offset: int, create_time: int, payload: str) -> str:
    """``| offset: N CreateTime: T keySize: -1 valueSize: V sequence: -1 headerKeys: [] payload: <json>``."""
    value_size = len(payload.encode()) // 2 + 3
    return (
        f"| offset: {offset} CreateTime: {create_time} keySize: -1 valueSize: {value_size} sequence: -1 "
        f"headerKeys: [] payload: {payload}\n"
    )


def leader_epoch_checkpoint(entries: Sequence[tuple[int, int]]) -> str:
    """``leader-epoch-checkpoint``: version 0, count, ``<epoch> <startOffset>`` lines."""
    return "0\n" + f"{len(entries)}\n" + "".join(f"{e} {o}\n" for e, o in entries)


def offset_checkpoint(entries: Sequence[tuple[str, int, int]]) -> str:
    """``replication-offset-checkpoint`` (and siblings): version 0, count, ``<topic> <partition> <offset>``."""
    return "0\n" + f"{len(entries)}\n" + "".join(f"{t} {p} {o}\n" for t, p, o in entries)


def partition_metadata(topic_id: str) -> str:
    """``partition.metadata``: two lines, no trailing newline."""
    return f"version: 0\ntopic_id: {topic_id}"
