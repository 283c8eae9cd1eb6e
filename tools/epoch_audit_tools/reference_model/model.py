"""Shared event-ordering and replay helpers of the pure-Python reference model (no Spark).

A history is a list of dicts with the bronze columns (epoch_audit.contracts.events.EVENT_COLUMNS). These
helpers restate the ordering rules of the spec ("Ordering and time") in plain Python so the
model's checks replay events one by one with explicit state; the Spark transforms implement the
same rules with window functions, and the differential tests require identical results.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

Event = dict[str, Any]

NO_ERROR = ("NONE", "0")
_MIN_TIME = datetime.min


def is_no_error(error: Any) -> bool:
    """Request-log partition error NONE."""
    return error in NO_ERROR


def own_times(events: Iterable[Event]) -> dict[str, datetime | None]:
    """event_id -> running max of event_time along its file's lines (line order wins in a file)."""
    by_file: dict[Any, list[Event]] = defaultdict(list)
    for e in events:
        by_file[e.get("file_id")].append(e)
    out: dict[str, datetime | None] = {}
    for rows in by_file.values():
        rows.sort(key=lambda e: (e.get("line_number") or 0, e.get("sub_index") or 0))
        cur: datetime | None = None
        for e in rows:
            t = e.get("event_time")
            if t is not None and (cur is None or t > cur):
                cur = t
            out[e["event_id"]] = cur
    return out


def own_pos(e: Event, times: dict[str, datetime | None]) -> tuple:
    """Sort key of a broker's own log order: (own time, file order, file id, line, sub index, id)."""
    t = times.get(e["event_id"])
    return (
        t or _MIN_TIME,
        e.get("file_order") or 0,
        e.get("file_id") or "",
        e.get("line_number") or 0,
        e.get("sub_index") or 0,
        e["event_id"],
    )


def by_broker_in_own_order(events: Iterable[Event]) -> Iterator[tuple[tuple, list[Event]]]:
    """Yield ((cluster_id, broker_id), events in that broker's own log order)."""
    events = list(events)
    times = own_times(events)
    groups: dict[tuple, list[Event]] = defaultdict(list)
    for e in events:
        if e.get("broker_id") is not None:
            groups[(e.get("cluster_id"), e["broker_id"])].append(e)
    for key, rows in groups.items():
        rows.sort(key=lambda e: own_pos(e, times))
        yield key, rows


# --------------------------------------------------------------------------------------------
# KRaft metadata log
# --------------------------------------------------------------------------------------------

TXN_TYPES = ("md_begin_transaction", "md_end_transaction", "md_abort_transaction")


def committed_metadata(events: Iterable[Event], types: tuple[str, ...]) -> list[Event]:
    """Committed KRaft records of ``types`` (one per cluster + offset), each with ``commit_offset``.

    Same rules as epoch_audit.silver.timelines.committed_metadata_records: host copies collapse to one
    record (lowest host id, then event id); a batch commits at its last offset; a transaction
    commits at its End record's commit point; aborted or unterminated transactions commit nothing.
    """
    events = list(events)
    out: list[Event] = []
    clusters: dict[Any, list[Event]] = defaultdict(list)
    batches: dict[Any, dict[int, int]] = defaultdict(dict)
    for e in events:
        if e["event_type"] == "md_batch" and e.get("offset") is not None:
            batches[e.get("cluster_id")].setdefault(e["offset"], e.get("last_offset"))
        elif e["event_type"] in types + TXN_TYPES and e.get("metadata_offset") is not None:
            clusters[e.get("cluster_id")].append(e)
    for cluster, rows in clusters.items():
        picked: dict[int, Event] = {}
        for e in sorted(rows, key=lambda e: (e.get("host_id") is None, e.get("host_id") or 0, e["event_id"])):
            picked.setdefault(e["metadata_offset"], e)
        bases = sorted(batches[cluster].items())

        def batch_commit(off: int, bases: list = bases) -> int:
            last = None
            for base, lst in bases:  # the last header at or before the offset
                if base <= off:
                    last = lst if lst is not None else last
                else:
                    break
            return last if last is not None and last >= off else off

        ordered = [picked[o] for o in sorted(picked)]
        open_txn: list[Event] = []
        in_txn = False
        for e in ordered:
            t = e["event_type"]
            if t == "md_begin_transaction":
                in_txn, open_txn = True, []
            elif t == "md_end_transaction":
                if in_txn:
                    c = batch_commit(e["metadata_offset"])
                    out.extend({**r, "commit_offset": c} for r in open_txn)
                in_txn, open_txn = False, []
            elif t == "md_abort_transaction":
                in_txn, open_txn = False, []
            elif in_txn:
                open_txn.append(e)
            else:
                out.append({**e, "commit_offset": batch_commit(e["metadata_offset"])})
    return out


def topic_names(events: Iterable[Event]) -> dict[tuple, str]:
    """(cluster, topic id) -> name from every TopicRecord, snapshots included (a name never changes)."""
    names: dict[tuple, str] = {}
    for t in sorted(events, key=lambda e: e["event_id"]):
        if t["event_type"] == "md_topic" and t.get("topic_id") is not None and t.get("topic") is not None:
            names.setdefault((t.get("cluster_id"), t["topic_id"]), t["topic"])
    return names


def snapshot_records(events: Iterable[Event], types: tuple[str, ...]) -> list[Event]:
    """KRaft snapshot records of ``types``, each with ``_snap_pos`` (epoch_audit.silver.timelines.snapshot_records).

    A snapshot states the partition / broker as of its end offset - 1; the bootstrap snapshot -1.
    Copies of one snapshot on several hosts collapse (lowest host id, then event id).
    """
    picked: dict[tuple, Event] = {}
    for e in sorted(events, key=lambda e: (e.get("host_id") is None, e.get("host_id") or 0, e["event_id"])):
        d = e.get("details") or {}
        if e["event_type"] not in types or e.get("metadata_offset") is not None or d.get("snapshot") is None:
            continue
        if d["snapshot"] == "bootstrap":
            pos = -1
        elif d.get("snapshot_end_offset") is not None:
            pos = int(d["snapshot_end_offset"]) - 1
        else:
            continue
        picked.setdefault((e.get("cluster_id"), pos, d.get("snapshot_offset")), {**e, "_snap_pos": pos})
    return list(picked.values())


def covered_intervals(events: Iterable[Event]) -> dict[Any, list[tuple[int, int]]]:
    """Per cluster with batch headers, the merged offset intervals its metadata dumps cover
    (epoch_audit.silver.timelines.covered_intervals): batch ranges and records' own offsets, merged when
    they overlap or touch. A cluster without any batch header is absent (assumed contiguous)."""
    spans: dict[Any, list[tuple[int, int]]] = defaultdict(list)
    headers: set[Any] = set()
    for e in events:
        o = e.get("metadata_offset")
        if o is None and e["event_type"] == "md_batch":
            o = e.get("offset")  # a batch header's base
        if not e["event_type"].startswith("md_") or o is None:
            continue
        lo = min(o if e.get("offset") is None else e["offset"], o)
        hi = next((v for v in (e.get("last_offset"), e.get("offset")) if v is not None), o)
        spans[e.get("cluster_id")].append((lo, max(hi, o)))
        if e["event_type"] == "md_batch":
            headers.add(e.get("cluster_id"))
    out: dict[Any, list[tuple[int, int]]] = {}
    for c in headers:
        merged: list[list[int]] = []
        for lo, hi in sorted(spans[c]):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        out[c] = [(s, e) for s, e in merged]
    return out


def covered_interval(ivs: dict[Any, list[tuple[int, int]]], cluster: Any, pos: int, slack: int) -> int:
    """The start of the covered interval holding ``pos`` (widened by ``slack`` below its start: a
    snapshot ending where the interval starts belongs to it); -2 - pos outside every interval; 0 in
    a cluster without batch headers (epoch_audit.silver.timelines.with_covered_interval)."""
    if cluster not in ivs:
        return 0
    for s, e in ivs[cluster]:
        if s - slack <= pos <= e:
            return s
    return -2 - pos


def hole_after(ivs: dict[Any, list[tuple[int, int]]], cluster: Any, commit: int | None) -> int | None:
    """The first offset of the hole right after the covered interval holding ``commit`` (widened by
    one below its start, for a snapshot's starting state), ``commit`` + 1 when no interval holds it
    but a later one exists, or None: no later interval, or a cluster without batch headers
    (epoch_audit.silver.timelines.with_hole_after). A state holds at most up to it."""
    if commit is None or cluster not in ivs:
        return None
    last = max(e for _, e in ivs[cluster])
    for s, e in ivs[cluster]:
        if s - 1 <= commit <= e:
            return e + 1 if e < last else None
    return commit + 1 if commit < last else None  # in no interval: the hole starts right after it


def capped(nxt: int | None, hole: int | None) -> int | None:
    """The smaller of two optional ends (None = open)."""
    return hole if nxt is None else nxt if hole is None else min(nxt, hole)


def replay_segments(
    snap: list[Event], log: list[Event], key: Any, full_type: str, ivs: dict[Any, list[tuple[int, int]]]
) -> dict[tuple, list[tuple[Event, int, Event | None]]]:
    """Per key, its replay rows in order as (row, segment, serving snapshot or None)
    (epoch_audit.silver.timelines.with_snapshot_bases).

    Rows: the log records (``_pos`` = offset) and the starting snapshot row (the latest snapshot
    below the key's first log record, ``_pos`` = ``commit_offset`` = its last offset). A full record
    (``full_type``, the starting row included) starts a segment; so does a row whose previous row
    lies in another covered interval (a hole between them). A segment without a full record takes
    the earliest snapshot at or after the key's first log record that falls into it (same covered
    interval, before the next full record).
    """
    logs: dict[tuple, list[Event]] = defaultdict(list)
    for r in log:
        logs[key(r)].append(r)
    snaps: dict[tuple, list[Event]] = defaultdict(list)
    for s in snap:
        snaps[key(s)].append(s)
    out: dict[tuple, list[tuple[Event, int, Event | None]]] = {}
    for k in list(logs) + [k for k in snaps if k not in logs]:
        first_log = min((r["_pos"] for r in logs.get(k, [])), default=None)
        below = [s for s in snaps.get(k, []) if first_log is None or s["_snap_pos"] < first_log]
        rows: list[tuple[Event, bool]] = [(r, False) for r in logs.get(k, [])]
        if below:
            start = min(below, key=lambda s: (-s["_snap_pos"], s["event_id"]))
            rows.append(({**start, "_pos": start["_snap_pos"], "commit_offset": start["_snap_pos"]}, False))
        rows += [({**s, "_pos": s["_snap_pos"]}, True) for s in snaps.get(k, [])
                 if first_log is not None and s["_snap_pos"] >= first_log]
        rows.sort(key=lambda x: (x[0]["_pos"], x[1], x[0]["event_id"]))
        segs: list[list[tuple[Event, bool]]] = []
        prev_cov = None
        for r, cand in rows:
            cov = covered_interval(ivs, r["cluster_id"], r["_pos"], 1 if r.get("_snap_pos") is not None else 0)
            full = not cand and r["event_type"] == full_type
            if not segs or full or cov != prev_cov:
                segs.append([])
            segs[-1].append((r, cand))
            prev_cov = cov
        res: list[tuple[Event, int, Event | None]] = []
        for i, seg in enumerate(segs):
            has_full = any(not cand and r["event_type"] == full_type for r, cand in seg)
            cands = [r for r, cand in seg if cand]
            serving = None if has_full or not cands else min(cands, key=lambda s: (s["_pos"], s["event_id"]))
            res += [(r, i, serving) for r, cand in seg if not cand]
        if res:
            out[k] = res
    return out


def replay_partitions(events: list[Event]) -> list[tuple[Event, dict[str, Any]]]:
    """(record, state after it) per committed KRaft partition record, snapshots included.

    PartitionRegistration.merge; a snapshot below a partition's first log record is its starting
    state (a record at the snapshot's last offset, ``commit_offset`` there, no metadata offset); a
    segment without a PartitionRecord (the log's start, or after a hole in the dumped log) has
    unknown epochs unless a snapshot serves it (:func:`replay_segments`): the bumps between the
    segment's start and the snapshot's offset are counted back from it.
    """
    def key(r: Event) -> tuple:
        return (r["cluster_id"], r.get("topic_id"), r.get("partition"))

    types = ("md_partition", "md_partition_change")
    log = [{**r, "_pos": r["metadata_offset"]} for r in committed_metadata(events, types)]
    segs = replay_segments(snapshot_records(events, ("md_partition",)), log, key, "md_partition",
                           covered_intervals(events))
    fields = ("leader", "leader_epoch", "partition_epoch", "isr", "replicas")

    def order(k: tuple) -> tuple:
        return (str(k[0]), str(k[1]), k[2] is not None, k[2] or 0)

    out: list[tuple[Event, dict[str, Any]]] = []
    for k in sorted(segs, key=order):
        rows = segs[k]
        s: dict[str, Any] = {}
        for i, (r, seg, snap) in enumerate(rows):
            if (i == 0 or seg != rows[i - 1][1]) and r["event_type"] != "md_partition":  # starts unknown
                le0 = pe0 = None
                if snap is not None:  # the epochs from the snapshot: count the bumps up to it
                    mine = [x for x, g, _ in rows if g == seg and x["_pos"] <= snap["_snap_pos"]]
                    le_at = sum(int(x.get("leader") is not None and x["leader"] != -2) for x in mine)
                    le0 = None if snap.get("leader_epoch") is None else snap["leader_epoch"] - le_at
                    pe0 = None if snap.get("partition_epoch") is None else snap["partition_epoch"] - len(mine)
                s = {"leader": None, "leader_epoch": le0, "partition_epoch": pe0, "isr": None, "replicas": None}
            if r["event_type"] == "md_partition":  # the whole state: a new segment
                s = {x: r.get(x) for x in fields}
            else:
                s = dict(s)
                if r.get("leader") is not None and r["leader"] != -2:
                    s["leader"] = r["leader"]
                    s["leader_epoch"] = None if s["leader_epoch"] is None else s["leader_epoch"] + 1
                s["partition_epoch"] = None if s["partition_epoch"] is None else s["partition_epoch"] + 1
                for x in ("isr", "replicas"):
                    if r.get(x) is not None:
                        s[x] = r[x]
            shown = dict(s)
            if snap is not None and r["_pos"] > snap["_snap_pos"]:
                for x in ("leader", "isr", "replicas"):  # not set by a change yet: the snapshot's
                    if shown[x] is None:
                        shown[x] = snap.get(x)
            out.append((r, shown))
    return out


def partition_states(events: Iterable[Event]) -> list[Event]:
    """KRaft partition decisions replayed with explicit state (PartitionRegistration.merge).

    Returns dicts: cluster_id, topic, topic_id, partition, metadata_offset, commit_offset, leader,
    leader_epoch, partition_epoch, isr, event_id, event_time, next_commit_offset (the next state's
    commit point, or the topic id's RemoveTopicRecord commit point, or the first offset of a hole
    in the dumped log, if that comes first) — sorted by
    (cluster, topic id, partition, offset).
    """
    events = list(events)
    names = topic_names(events)
    out: list[Event] = []
    for r, s in replay_partitions(events):
        out.append(
            {
                "cluster_id": r["cluster_id"],
                "topic_id": r.get("topic_id"),
                "topic": names.get((r["cluster_id"], r.get("topic_id")), r.get("topic")),
                "partition": r.get("partition"),
                "metadata_offset": r.get("metadata_offset"),
                "commit_offset": r["commit_offset"],
                "event_id": r["event_id"],
                "event_time": r.get("event_time"),
                **{x: s[x] for x in ("leader", "leader_epoch", "partition_epoch", "isr")},
            }
        )
    ivs = covered_intervals(events)
    removed: dict[tuple, int] = {}  # (cluster, topic id) -> commit point of its RemoveTopicRecord
    for t in committed_metadata(events, ("md_remove_topic",)):
        if t.get("topic_id") is not None:
            k = (t["cluster_id"], t["topic_id"])
            removed[k] = min(removed.get(k, t["commit_offset"]), t["commit_offset"])
    for a, b in zip(out, out[1:] + [None], strict=True):
        same = b is not None and (a["cluster_id"], a["topic_id"], a["partition"]) == (
            b["cluster_id"],
            b["topic_id"],
            b["partition"],
        )
        nxt = b["commit_offset"] if same else None
        # a removed topic's partitions hold no state from the removal's commit point on
        gone = removed.get((a["cluster_id"], a["topic_id"]))
        if gone is not None and gone >= a["commit_offset"]:
            nxt = gone if nxt is None else min(nxt, gone)
        # ... and never past a hole in the dumped log (a change there may have replaced it)
        a["next_commit_offset"] = capped(nxt, hole_after(ivs, a["cluster_id"], a["commit_offset"]))
    return out


BROKER_TYPES = (
    "md_register_broker",
    "md_unregister_broker",
    "md_broker_registration_change",
    "md_fence_broker",
    "md_unfence_broker",
)


def broker_states(events: Iterable[Event]) -> list[Event]:
    """KRaft broker registration states after each committed record (see timelines.broker_registrations)."""
    events = list(events)
    recs = [{**r, "_pos": r["metadata_offset"]} for r in committed_metadata(events, BROKER_TYPES)
            if r.get("broker_id") is not None]
    # a broker whose log records all follow a snapshot starts from the snapshot's registration; a
    # segment without a RegisterBrokerRecord (the log's start, or after a hole in the dumped log)
    # starts unknown: what no record of it has stated yet is its serving snapshot's, after its offset
    snap = [r for r in snapshot_records(events, ("md_register_broker",)) if r.get("broker_id") is not None]
    segs = replay_segments(snap, recs, lambda r: (r["cluster_id"], r["broker_id"]), "md_register_broker",
                           covered_intervals(events))
    unknown = dict.fromkeys(("broker_epoch", "registered_at_offset", "registered_at_time", "registration_event_id",
                             "fenced", "in_controlled_shutdown"))
    out: list[Event] = []
    for key in sorted(segs):
        s: dict[str, Any] = {}
        prev_seg = None
        for r, seg, base in segs[key]:
            # a new segment: nothing is carried over a hole (or past a new registration)
            s = dict(unknown) if seg != prev_seg else dict(s)
            prev_seg = seg
            t = r["event_type"]
            if t != "md_unregister_broker" and r.get("broker_epoch") is not None:
                s["broker_epoch"] = r["broker_epoch"]
            if t == "md_register_broker":
                s.update(
                    registered_at_offset=r.get("metadata_offset"),
                    registered_at_time=r.get("event_time"),
                    registration_event_id=r["event_id"],
                    fenced=True if r.get("fenced") is None else r["fenced"],
                    in_controlled_shutdown=bool(r.get("in_controlled_shutdown")),
                )
            elif t in ("md_unregister_broker", "md_fence_broker"):
                s.update(fenced=True, in_controlled_shutdown=False)
            elif t == "md_unfence_broker":
                s["fenced"] = False
            else:  # BrokerRegistrationChangeRecord: only the fields it changes
                if r.get("fenced") is not None:
                    s["fenced"] = r["fenced"]
                if r.get("fenced") is True:
                    s["in_controlled_shutdown"] = False
                elif r.get("in_controlled_shutdown") is True:
                    s["in_controlled_shutdown"] = True
            shown = dict(s)
            if base is not None and r["_pos"] > base["_snap_pos"]:
                for mine, theirs in (("broker_epoch", "broker_epoch"), ("fenced", "fenced"),
                                     ("in_controlled_shutdown", "in_controlled_shutdown"),
                                     ("registration_event_id", "event_id")):
                    if shown[mine] is None:
                        shown[mine] = base.get(theirs)
            shown["in_controlled_shutdown"] = bool(shown["in_controlled_shutdown"])
            out.append(
                {
                    "cluster_id": r["cluster_id"],
                    "broker_id": r["broker_id"],
                    "metadata_offset": r.get("metadata_offset"),
                    "commit_offset": r["commit_offset"],
                    "event_id": r["event_id"],
                    "event_time": r.get("event_time"),
                    **shown,
                }
            )
    ivs = covered_intervals(events)
    for a, b in zip(out, out[1:] + [None], strict=True):
        same = b is not None and (a["cluster_id"], a["broker_id"]) == (b["cluster_id"], b["broker_id"])
        a["next_commit_offset"] = capped(b["commit_offset"] if same else None,
                                         hole_after(ivs, a["cluster_id"], a["commit_offset"]))
    return out


def state_at(states: list[Event], commit: int) -> Event | None:
    """The state holding at a commit point: commit_offset <= commit < next_commit_offset."""
    for s in states:
        nxt = s["next_commit_offset"]
        if s["commit_offset"] <= commit and (nxt is None or commit < nxt):
            return s
    return None


def violation(
    invariant: str,
    cluster_id: Any,
    topic: Any,
    partition: Any,
    broker_id: Any,
    leader_epoch: Any,
    confidence: str = "confirmed",
    severity: str = "error",
    **extra: Any,
) -> dict[str, Any]:
    """One model violation (compare on VIOLATION_KEY)."""
    return {
        "invariant": invariant,
        "cluster_id": cluster_id,
        "topic": topic,
        "partition": partition,
        "broker_id": broker_id,
        "leader_epoch": leader_epoch,
        "confidence": confidence,
        "severity": severity,
        **extra,
    }


VIOLATION_KEY = ("invariant", "cluster_id", "topic", "partition", "broker_id", "leader_epoch", "confidence")


def key_of(v: dict[str, Any]) -> tuple:
    return tuple(v.get(k) for k in VIOLATION_KEY)
