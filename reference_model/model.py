"""Shared event-ordering and replay helpers of the pure-Python reference model (no Spark).

A history is a list of dicts with the bronze columns (transforms.schema.EVENT_COLUMNS). These
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

    Same rules as transforms.timelines.committed_metadata_records: host copies collapse to one
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
    """KRaft snapshot records of ``types``, each with ``_snap_pos`` (transforms.timelines.snapshot_records).

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


def snapshot_bases(snap: list[Event], log: list[Event], key: Any, full_type: str) -> dict[tuple, Event]:
    """Per key, the snapshot record that completes its log replay (transforms.timelines.with_snapshot_bases).

    The latest snapshot below the key's first log record (``_before``: the starting state), else
    the earliest one at or after it, used only while the log has no full record up to it.
    """
    firsts: dict[tuple, list] = {}
    for r in log:
        f = firsts.setdefault(key(r), [None, None])
        o = r["metadata_offset"]
        f[0] = o if f[0] is None else min(f[0], o)
        if r["event_type"] == full_type:
            f[1] = o if f[1] is None else min(f[1], o)
    best: dict[tuple, tuple] = {}
    for s in snap:
        k = key(s)
        first_log, first_full = firsts.get(k, [None, None])
        before = first_log is None or s["_snap_pos"] < first_log
        rank = (0, -s["_snap_pos"], s["event_id"]) if before else (1, s["_snap_pos"], s["event_id"])
        if k not in best or rank < best[k][0]:
            best[k] = (rank, {**s, "_before": before}, first_full)
    return {
        k: s for k, (_, s, first_full) in best.items()
        if s["_before"] or first_full is None or first_full > s["_snap_pos"]
    }


def replay_partitions(events: list[Event]) -> list[tuple[Event, dict[str, Any]]]:
    """(record, state after it) per committed KRaft partition record, snapshots included.

    PartitionRegistration.merge; a snapshot below a partition's first log record is its starting
    state (a record at the snapshot's last offset, ``commit_offset`` there, no metadata offset); a
    snapshot the log overlaps gives the epochs of the changes before the first PartitionRecord.
    """
    def key(r: Event) -> tuple:
        return (r["cluster_id"], r.get("topic_id"), r.get("partition"))

    types = ("md_partition", "md_partition_change")
    log = [{**r, "_pos": r["metadata_offset"]} for r in committed_metadata(events, types)]
    bases = snapshot_bases(snapshot_records(events, ("md_partition",)), log, key, "md_partition")
    starts = [{**s, "_pos": s["_snap_pos"], "commit_offset": s["_snap_pos"]} for s in bases.values() if s["_before"]]
    recs = log + starts
    recs.sort(key=lambda r: (str(r["cluster_id"]), str(r.get("topic_id")), r.get("partition") is not None,
                             r.get("partition") or 0, r["_pos"]))
    fields = ("leader", "leader_epoch", "partition_epoch", "isr", "replicas")
    by_key: dict[tuple, list[Event]] = defaultdict(list)
    for r in recs:
        by_key[key(r)].append(r)
    out: list[tuple[Event, dict[str, Any]]] = []
    for k, rows in by_key.items():
        snap = bases.get(k) if bases.get(k) and not bases[k]["_before"] else None
        if snap is not None:  # segment 0's epochs from the snapshot: count the bumps up to it
            le_at = pe_at = 0
            for r in rows:
                if r["event_type"] == "md_partition" or r["_pos"] > snap["_snap_pos"]:
                    break
                pe_at += 1
                le_at += int(r.get("leader") is not None and r["leader"] != -2)
            le0 = None if snap.get("leader_epoch") is None else snap["leader_epoch"] - le_at
            pe0 = None if snap.get("partition_epoch") is None else snap["partition_epoch"] - pe_at
        else:
            le0 = pe0 = None
        s: dict[str, Any] = {"leader": None, "leader_epoch": le0, "partition_epoch": pe0, "isr": None, "replicas": None}
        seg0 = True
        for r in rows:
            if r["event_type"] == "md_partition":  # the whole state: a new segment
                s = {x: r.get(x) for x in fields}
                seg0 = False
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
            if seg0 and snap is not None and r["_pos"] > snap["_snap_pos"]:
                for x in ("leader", "isr", "replicas"):  # not set by a change yet: the snapshot's
                    if shown[x] is None:
                        shown[x] = snap.get(x)
            out.append((r, shown))
    return out


def partition_states(events: Iterable[Event]) -> list[Event]:
    """KRaft partition decisions replayed with explicit state (PartitionRegistration.merge).

    Returns dicts: cluster_id, topic, topic_id, partition, metadata_offset, commit_offset, leader,
    leader_epoch, partition_epoch, isr, event_id, event_time, next_commit_offset (the next state's
    commit point, or the topic id's RemoveTopicRecord commit point if that comes first) — sorted by
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
        a["next_commit_offset"] = nxt
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
    # a broker whose log records all follow a snapshot starts from the snapshot's registration
    snap = [r for r in snapshot_records(events, ("md_register_broker",)) if r.get("broker_id") is not None]
    starts = snapshot_bases(snap, recs, lambda r: (r["cluster_id"], r["broker_id"]), "md_register_broker")
    recs += [{**r, "_pos": r["_snap_pos"], "commit_offset": r["_snap_pos"]} for r in starts.values() if r["_before"]]
    # overlapped by the log: what no record has stated yet is the snapshot's, after its offset
    overlap = {k: r for k, r in starts.items() if not r["_before"]}
    recs.sort(key=lambda r: (r["cluster_id"], r["broker_id"], r["_pos"]))
    out: list[Event] = []
    state: dict[tuple, dict[str, Any]] = {}
    for r in recs:
        key = (r["cluster_id"], r["broker_id"])
        s = dict(
            state.get(key)
            or {
                "broker_epoch": None,
                "registered_at_offset": None,
                "registered_at_time": None,
                "registration_event_id": None,
                "fenced": None,
                "in_controlled_shutdown": None,
            }
        )
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
        state[key] = s
        shown = dict(s)
        snap = overlap.get(key)
        if snap is not None and r["_pos"] > snap["_snap_pos"]:
            for mine, theirs in (("broker_epoch", "broker_epoch"), ("fenced", "fenced"),
                                 ("in_controlled_shutdown", "in_controlled_shutdown"),
                                 ("registration_event_id", "event_id")):
                if shown[mine] is None:
                    shown[mine] = snap.get(theirs)
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
    for a, b in zip(out, out[1:] + [None], strict=True):
        same = b is not None and (a["cluster_id"], a["broker_id"]) == (b["cluster_id"], b["broker_id"])
        a["next_commit_offset"] = b["commit_offset"] if same else None
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
