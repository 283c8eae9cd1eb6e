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


def partition_states(events: Iterable[Event]) -> list[Event]:
    """KRaft partition decisions replayed with explicit state (PartitionRegistration.merge).

    Returns dicts: cluster_id, topic, topic_id, partition, metadata_offset, commit_offset, leader,
    leader_epoch, partition_epoch, isr, event_id, event_time, next_commit_offset (the next state's
    commit point, or the topic id's RemoveTopicRecord commit point if that comes first) — sorted by
    (cluster, topic id, partition, offset).
    """
    events = list(events)
    names = {}
    for t in committed_metadata(events, ("md_topic",)):
        if t.get("topic_id") and t.get("topic"):
            names.setdefault((t["cluster_id"], t["topic_id"]), t["topic"])
    recs = committed_metadata(events, ("md_partition", "md_partition_change"))
    recs.sort(key=lambda r: (r["cluster_id"], r.get("topic_id") or "", r.get("partition") or 0, r["metadata_offset"]))
    out: list[Event] = []
    state: dict[tuple, dict[str, Any]] = {}
    for r in recs:
        key = (r["cluster_id"], r.get("topic_id"), r.get("partition"))
        if r["event_type"] == "md_partition":
            s = {
                "leader": r.get("leader"),
                "leader_epoch": r.get("leader_epoch"),
                "partition_epoch": r.get("partition_epoch"),
                "isr": r.get("isr"),
            }
        else:
            s = dict(state.get(key) or {"leader": None, "leader_epoch": None, "partition_epoch": None, "isr": None})
            if r.get("leader") is not None and r["leader"] != -2:
                s["leader"] = r["leader"]
                s["leader_epoch"] = None if s["leader_epoch"] is None else s["leader_epoch"] + 1
            s["partition_epoch"] = None if s["partition_epoch"] is None else s["partition_epoch"] + 1
            if r.get("isr") is not None:
                s["isr"] = r["isr"]
        state[key] = s
        out.append(
            {
                "cluster_id": r["cluster_id"],
                "topic_id": r.get("topic_id"),
                "topic": names.get((r["cluster_id"], r.get("topic_id")), r.get("topic")),
                "partition": r.get("partition"),
                "metadata_offset": r["metadata_offset"],
                "commit_offset": r["commit_offset"],
                "event_id": r["event_id"],
                "event_time": r.get("event_time"),
                **s,
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
    recs = [r for r in committed_metadata(events, BROKER_TYPES) if r.get("broker_id") is not None]
    recs.sort(key=lambda r: (r["cluster_id"], r["broker_id"], r["metadata_offset"]))
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
                "in_controlled_shutdown": False,
            }
        )
        t = r["event_type"]
        if t != "md_unregister_broker" and r.get("broker_epoch") is not None:
            s["broker_epoch"] = r["broker_epoch"]
        if t == "md_register_broker":
            s.update(
                registered_at_offset=r["metadata_offset"],
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
        out.append(
            {
                "cluster_id": r["cluster_id"],
                "broker_id": r["broker_id"],
                "metadata_offset": r["metadata_offset"],
                "commit_offset": r["commit_offset"],
                "event_id": r["event_id"],
                "event_time": r.get("event_time"),
                **s,
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
