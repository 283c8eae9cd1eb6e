"""The KRaft metadata log as the dumps show it: commit points, snapshots and holes (plain Python).

Spec "Ordering and time": the controller commits a batch atomically at its last offset; a KIP-868
metadata transaction (Begin .. End, over any batches) is one commit point and an aborted one
commits nothing. A snapshot states the log as of its end offset - 1. The dumped log may have holes
(whole batches in no dump): nothing is carried over a hole. The partition and broker replays
(``partition_replay``, ``broker_replay``) read the log through these helpers.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from epoch_audit_tools.reference_model.event_types import (
    KRAFT_ABORT_TRANSACTION,
    KRAFT_BATCH_TYPE,
    KRAFT_BEGIN_TRANSACTION,
    KRAFT_END_TRANSACTION,
    KRAFT_TOPIC_REMOVAL_TYPES,
    KRAFT_TOPIC_TYPE,
    KRAFT_TRANSACTION_TYPES,
    Event,
)

# Per cluster, the merged offset intervals the dumps cover.
CoveredIntervals = dict[Any, list[tuple[int, int]]]


def committed_metadata(events: Iterable[Event], types: tuple[str, ...]) -> list[Event]:
    """Committed KRaft records of ``types`` (one per cluster + offset), each with ``commit_offset``.

    Host copies collapse to one record (lowest host id, then event id); a batch commits at its last
    offset; a transaction commits at its End record's commit point; aborted or unterminated
    transactions commit nothing.
    """
    events = list(events)
    out: list[Event] = []
    records_by_cluster: dict[Any, list[Event]] = defaultdict(list)
    batch_ends: dict[Any, dict[int, int]] = defaultdict(dict)  # cluster -> base offset -> last offset
    for event in events:
        if event["event_type"] == KRAFT_BATCH_TYPE and event.get("offset") is not None:
            batch_ends[event.get("cluster_id")].setdefault(event["offset"], event.get("last_offset"))
        elif event["event_type"] in types + KRAFT_TRANSACTION_TYPES and event.get("metadata_offset") is not None:
            records_by_cluster[event.get("cluster_id")].append(event)
    for cluster, rows in records_by_cluster.items():
        by_offset: dict[int, Event] = {}
        for event in sorted(rows, key=lambda e: (e.get("host_id") is None, e.get("host_id") or 0, e["event_id"])):
            by_offset.setdefault(event["metadata_offset"], event)
        headers = sorted(batch_ends[cluster].items())

        def batch_commit(offset: int, headers: list = headers) -> int:
            last = None
            for base, header_last in headers:  # the last header at or before the offset
                if base <= offset:
                    last = header_last if header_last is not None else last
                else:
                    break
            return last if last is not None and last >= offset else offset

        open_transaction: list[Event] = []
        in_transaction = False
        for record in (by_offset[offset] for offset in sorted(by_offset)):
            record_type = record["event_type"]
            if record_type == KRAFT_BEGIN_TRANSACTION:
                in_transaction, open_transaction = True, []
            elif record_type == KRAFT_END_TRANSACTION:
                if in_transaction:
                    commit = batch_commit(record["metadata_offset"])
                    out.extend({**r, "commit_offset": commit} for r in open_transaction)
                in_transaction, open_transaction = False, []
            elif record_type == KRAFT_ABORT_TRANSACTION:
                in_transaction, open_transaction = False, []
            elif in_transaction:
                open_transaction.append(record)
            else:
                out.append({**record, "commit_offset": batch_commit(record["metadata_offset"])})
    return out


def topic_names(events: Iterable[Event]) -> dict[tuple, str]:
    """(cluster, topic id) -> name from every TopicRecord, snapshots included (a name never changes)."""
    names: dict[tuple, str] = {}
    for record in sorted(events, key=lambda e: e["event_id"]):
        if record["event_type"] == KRAFT_TOPIC_TYPE and record.get("topic_id") is not None \
                and record.get("topic") is not None:
            names.setdefault((record.get("cluster_id"), record["topic_id"]), record["topic"])
    return names


def snapshot_records(events: Iterable[Event], types: tuple[str, ...]) -> list[Event]:
    """KRaft snapshot records of ``types``, each with ``_snap_pos``.

    A snapshot states the partition / broker as of its end offset - 1; the bootstrap snapshot -1.
    Copies of one snapshot on several hosts collapse (lowest host id, then event id).
    """
    picked: dict[tuple, Event] = {}
    for event in sorted(events, key=lambda e: (e.get("host_id") is None, e.get("host_id") or 0, e["event_id"])):
        details = event.get("details") or {}
        if event["event_type"] not in types or event.get("metadata_offset") is not None \
                or details.get("snapshot") is None:
            continue
        if details["snapshot"] == "bootstrap":
            position = -1
        elif details.get("snapshot_end_offset") is not None:
            position = int(details["snapshot_end_offset"]) - 1
        else:
            continue
        picked.setdefault((event.get("cluster_id"), position, details.get("snapshot_offset")),
                          {**event, "_snap_pos": position})
    return list(picked.values())


def covered_intervals(events: Iterable[Event]) -> CoveredIntervals:
    """Per cluster with batch headers, the merged offset intervals its metadata dumps cover: batch
    ranges and records' own offsets, merged when they overlap or touch. A cluster without any batch
    header is absent (assumed contiguous)."""
    spans: CoveredIntervals = defaultdict(list)
    clusters_with_headers: set[Any] = set()
    for event in events:
        offset = event.get("metadata_offset")
        if offset is None and event["event_type"] == KRAFT_BATCH_TYPE:
            offset = event.get("offset")  # a batch header's base
        if not event["event_type"].startswith("md_") or offset is None:
            continue
        low = min(offset if event.get("offset") is None else event["offset"], offset)
        high = next((v for v in (event.get("last_offset"), event.get("offset")) if v is not None), offset)
        spans[event.get("cluster_id")].append((low, max(high, offset)))
        if event["event_type"] == KRAFT_BATCH_TYPE:
            clusters_with_headers.add(event.get("cluster_id"))
    out: CoveredIntervals = {}
    for cluster in clusters_with_headers:
        merged: list[list[int]] = []
        for low, high in sorted(spans[cluster]):
            if merged and low <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], high)
            else:
                merged.append([low, high])
        out[cluster] = [(low, high) for low, high in merged]
    return out


def covered_interval(covered: CoveredIntervals, cluster: Any, position: int, slack: int) -> int:
    """The start of the covered interval holding ``position`` (widened by ``slack`` below its start:
    a snapshot ending where the interval starts belongs to it); -2 - position outside every
    interval; 0 in a cluster without batch headers."""
    if cluster not in covered:
        return 0
    for start, end in covered[cluster]:
        if start - slack <= position <= end:
            return start
    return -2 - position


def hole_after(covered: CoveredIntervals, cluster: Any, commit: int | None) -> int | None:
    """The first offset of the hole right after the covered interval holding ``commit`` (widened by
    one below its start, for a snapshot's starting state), ``commit`` + 1 when no interval holds it
    but a later one exists, or None: no later interval, or a cluster without batch headers. A
    state holds at most up to it."""
    if commit is None or cluster not in covered:
        return None
    last = max(end for _, end in covered[cluster])
    for start, end in covered[cluster]:
        if start - 1 <= commit <= end:
            return end + 1 if end < last else None
    return commit + 1 if commit < last else None  # in no interval: the hole starts right after it


def capped(next_commit: int | None, hole: int | None) -> int | None:
    """The smaller of two optional ends (None = open)."""
    return hole if next_commit is None else next_commit if hole is None else min(next_commit, hole)


# (row, segment number, serving snapshot or None), per replay key
ReplayRows = dict[tuple, list[tuple[Event, int, Event | None]]]


def replay_segments(
    snapshots: list[Event],
    log: list[Event],
    key: Callable[[Event], tuple],
    full_type: str,
    covered: CoveredIntervals,
) -> ReplayRows:
    """Per key, its replay rows in order as (row, segment, serving snapshot or None).

    Rows: the log records (``_pos`` = offset) and the starting snapshot row (the latest snapshot
    below the key's first log record, ``_pos`` = ``commit_offset`` = its last offset). A full record
    (``full_type``, the starting row included) starts a segment; so does a row whose previous row
    lies in another covered interval (a hole between them). A segment without a full record takes
    the earliest snapshot at or after the key's first log record that falls into it (same covered
    interval, before the next full record).
    """
    logs: dict[tuple, list[Event]] = defaultdict(list)
    for record in log:
        logs[key(record)].append(record)
    snapshots_by_key: dict[tuple, list[Event]] = defaultdict(list)
    for snapshot in snapshots:
        snapshots_by_key[key(snapshot)].append(snapshot)
    out: ReplayRows = {}
    for k in list(logs) + [k for k in snapshots_by_key if k not in logs]:
        first_log = min((r["_pos"] for r in logs.get(k, [])), default=None)
        below = [s for s in snapshots_by_key.get(k, []) if first_log is None or s["_snap_pos"] < first_log]
        # (row, is a serving-snapshot candidate)
        rows: list[tuple[Event, bool]] = [(r, False) for r in logs.get(k, [])]
        if below:
            start = min(below, key=lambda s: (-s["_snap_pos"], s["event_id"]))
            rows.append(({**start, "_pos": start["_snap_pos"], "commit_offset": start["_snap_pos"]}, False))
        rows += [({**s, "_pos": s["_snap_pos"]}, True) for s in snapshots_by_key.get(k, [])
                 if first_log is not None and s["_snap_pos"] >= first_log]
        rows.sort(key=lambda x: (x[0]["_pos"], x[1], x[0]["event_id"]))
        segments: list[list[tuple[Event, bool]]] = []
        previous_interval = None
        for row, candidate in rows:
            interval = covered_interval(covered, row["cluster_id"], row["_pos"],
                                        1 if row.get("_snap_pos") is not None else 0)
            is_full = not candidate and row["event_type"] == full_type
            if not segments or is_full or interval != previous_interval:
                segments.append([])
            segments[-1].append((row, candidate))
            previous_interval = interval
        replay: list[tuple[Event, int, Event | None]] = []
        for number, segment in enumerate(segments):
            has_full = any(not candidate and row["event_type"] == full_type for row, candidate in segment)
            candidates = [row for row, candidate in segment if candidate]
            serving = None if has_full or not candidates else min(candidates, key=lambda s: (s["_pos"], s["event_id"]))
            replay += [(row, number, serving) for row, candidate in segment if not candidate]
        if replay:
            out[k] = replay
    return out


def topic_removals(events: Iterable[Event]) -> dict[tuple, int]:
    """(cluster, topic id) -> the first commit point of its RemoveTopicRecord."""
    removed: dict[tuple, int] = {}
    for record in committed_metadata(events, KRAFT_TOPIC_REMOVAL_TYPES):
        if record.get("topic_id") is not None:
            key = (record["cluster_id"], record["topic_id"])
            removed[key] = min(removed.get(key, record["commit_offset"]), record["commit_offset"])
    return removed


def state_at(states: list[Event], commit: int) -> Event | None:
    """The state holding at a commit point: commit_offset <= commit < next_commit_offset."""
    for state in states:
        next_commit = state["next_commit_offset"]
        if state["commit_offset"] <= commit and (next_commit is None or commit < next_commit):
            return state
    return None
