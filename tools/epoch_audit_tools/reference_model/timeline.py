"""Pure-Python twin of ``epoch_audit.silver.timelines.partition_timeline``: controller decisions per partition.

Replays the same bronze events with explicit state, one small transition per record:

* KRaft (PartitionRegistration.merge / PartitionChangeBuilder): a PartitionRecord sets the whole
  state (leader, LE, PE, ISR, replicas) and starts a new replay segment; a PartitionChangeRecord
  carries only what changed: ``leader`` absent or -2 = unchanged, otherwise the leader is set AND
  the LE goes up by one (also when the same leader is re-sent, KAFKA-15021); the PE goes up on
  every change; ISR / replicas absent = unchanged. Changes before any PartitionRecord (a dump that
  starts mid-log) keep leader / ISR but have no epochs. Only committed records count (batch
  commit points, KIP-868 transactions: ``model.committed_metadata``).
* ZooKeeper: the controller's own decision lines in its own log order, controllers ordered by
  controller epoch; a broker's received LeaderAndIsr state stands in only when its issuing
  controller (id, request CE) left no line of its own, and never when it is a re-send (partition
  state CE below the request CE, or LE not above the latest decided LE).
* Redpanda: each "became the leader term: N" (leader = node, LE = term), ordered by term.

``partition_timeline(events)`` returns dicts with ``epoch_audit.silver.timelines.TIMELINE_COLUMNS``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from epoch_audit.silver.partition_timeline import (
    KRAFT_TOPIC_REMOVAL_TYPES,
    TIMELINE_COLUMNS,
    ZK_CONTROLLER_LOG_TYPES,
    ZK_DECISION_TYPES,
    ZK_STAND_IN_TYPES,
)
from epoch_audit_tools.reference_model.model import (
    capped,
    committed_metadata,
    covered_intervals,
    hole_after,
    own_times,
    replay_partitions,
    topic_names,
)

Event = dict[str, Any]


def _nf(v: Any) -> tuple[bool, Any]:
    """Sort key part: nulls first (Spark's ascending default)."""
    return (v is not None, v if v is not None else 0)


def _row(e: Event, **cols: Any) -> Event:
    """A timeline row: the event's own columns where the timeline keeps them, then ``cols``."""
    base = {c: e.get(c) for c in ("cluster_id", "topic", "partition", "topic_id", "leader", "leader_epoch",
                                  "partition_epoch", "isr", "replicas", "event_time", "metadata_offset",
                                  "controller_id", "controller_epoch", "event_id")}
    base["commit_offset"] = None
    base.update(cols)
    return base


# --- KRaft -------------------------------------------------------------------------------------
def kraft_decisions(events: list[Event]) -> list[Event]:
    names = topic_names(events)
    out: list[Event] = []
    for r, s in replay_partitions(events):
        out.append(_row(
            r, **s,
            topic=names.get((r["cluster_id"], r.get("topic_id")), r.get("topic")),
            decision_seq=r["_pos"],
            source="kraft",
            controller_id=None,
            controller_epoch=r.get("quorum_epoch"),  # KRaft: the batch's quorum epoch plays that role
            commit_offset=r["commit_offset"],
        ))
    return out


# --- ZooKeeper ---------------------------------------------------------------------------------
def zk_decisions(events: list[Event]) -> list[Event]:
    times = own_times(events)
    present = {
        (e.get("cluster_id"), e["controller_id"], e["controller_epoch"])
        for e in events
        if e["event_type"] in ZK_CONTROLLER_LOG_TYPES
        and e.get("controller_id") is not None
        and e.get("controller_epoch") is not None
    }
    # A controller line without an epoch ("ISR for partition ... updated to") takes the epoch of the
    # last earlier line of its own file that names one.
    last_ce: dict[Any, Any] = {}  # file_id -> the last controller epoch its lines named
    filled: dict[str, Any] = {}
    for e in sorted(events, key=lambda e: (str(e.get("file_id")), _nf(e.get("line_number")), _nf(e.get("sub_index")))):
        if e["event_type"] in ZK_CONTROLLER_LOG_TYPES and e.get("controller_epoch") is not None:
            last_ce[e.get("file_id")] = e["controller_epoch"]
        elif e["event_type"] in ZK_DECISION_TYPES:  # a decision line without an epoch
            filled[e["event_id"]] = last_ce.get(e.get("file_id"))
    rows: list[tuple[bool, Event]] = []
    for e in events:
        et = e["event_type"]
        if e.get("topic") is None or e.get("leader_epoch") is None:
            continue
        if et in ZK_DECISION_TYPES:
            if e.get("controller_epoch") is None and filled.get(e["event_id"]) is not None:
                e = {**e, "controller_epoch": filled[e["event_id"]]}
            rows.append((True, e))
        elif et in ZK_STAND_IN_TYPES and e["leader_epoch"] >= 0:
            if et == "request_leader_and_isr" and e.get("error") not in ("NONE", "0"):
                continue  # a request-log state counts only when the broker applied it
            if (e.get("cluster_id"), e.get("controller_id"), e.get("controller_epoch")) in present:
                continue  # its controller's own lines are in the input: not a stand-in
            rows.append((False, e))

    def order(x: tuple[bool, Event]) -> tuple:
        own, e = x
        return (
            _nf(e.get("controller_epoch")),
            _nf(None if own else e.get("leader_epoch")),
            _nf(None if own else e.get("partition_epoch")),
            _nf(times.get(e["event_id"])),
            _nf(e.get("file_order")),
            _nf(e.get("file_id")),
            _nf(e.get("line_number")),
            _nf(e.get("sub_index")),
            e["event_id"],
        )

    parts: dict[tuple, list[tuple[bool, Event]]] = defaultdict(list)
    for x in rows:
        parts[(x[1].get("cluster_id"), x[1]["topic"], x[1].get("partition"))].append(x)
    out: list[Event] = []
    for xs in parts.values():
        xs.sort(key=order)
        max_le = None  # the highest LE decided so far (re-sends by CE excluded)
        seq = 0
        for own, e in xs:
            sce = e.get("state_controller_epoch")
            resend_ce = not own and sce is not None and e.get("controller_epoch") is not None \
                and sce < e["controller_epoch"]
            keep = own or (not resend_ce and (max_le is None or e["leader_epoch"] > max_le))
            if not resend_ce:
                max_le = e["leader_epoch"] if max_le is None else max(max_le, e["leader_epoch"])
            if keep:
                seq += 1
                out.append(_row(e, decision_seq=seq, source="zk-controller" if own else "zk-leader-and-isr"))
    return out


# --- Redpanda ----------------------------------------------------------------------------------
def redpanda_decisions(events: list[Event]) -> list[Event]:
    parts: dict[tuple, list[Event]] = defaultdict(list)
    for e in events:
        if e["event_type"] == "rp_became_leader" and e.get("topic") is not None and e.get("leader_epoch") is not None:
            parts[(e.get("cluster_id"), e["topic"], e.get("partition"))].append(e)
    out: list[Event] = []
    for es in parts.values():
        es.sort(key=lambda e: (e["leader_epoch"], _nf(e.get("event_time")), e["event_id"]))
        for i, e in enumerate(es, 1):
            out.append(_row(e, decision_seq=i, source="redpanda", leader=e.get("broker_id"), partition_epoch=None,
                            isr=None, replicas=None, controller_id=None, controller_epoch=None))
    return out


# --- the timeline ------------------------------------------------------------------------------
def partition_timeline(events: Iterable[Event]) -> list[Event]:
    """Every decision of every partition (KRaft, ZK, Redpanda), with ``is_leader_change`` (first
    decision of its series or a different leader) and ``next_commit_offset`` (KRaft: the next
    decision's commit point, or the topic id's RemoveTopicRecord commit point, or the first offset
    of a hole in the dumped log, if that comes first)."""
    events = list(events)
    rows = kraft_decisions(events) + zk_decisions(events) + redpanda_decisions(events)
    ivs = covered_intervals(events)
    removed: dict[tuple, int] = {}
    for t in committed_metadata(events, KRAFT_TOPIC_REMOVAL_TYPES):
        if t.get("topic_id") is not None:
            k = (t["cluster_id"], t["topic_id"])
            removed[k] = min(removed.get(k, t["commit_offset"]), t["commit_offset"])
    series: dict[tuple, list[Event]] = defaultdict(list)
    for r in rows:
        family = "zk" if r["source"].startswith("zk") else r["source"]
        series[(r["cluster_id"], r["topic"], r["partition"], r["topic_id"], family)].append(r)
    for rs in series.values():
        rs.sort(key=lambda r: r["decision_seq"])
        prev = None
        for i, r in enumerate(rs):
            r["is_leader_change"] = prev is None or prev["leader"] != r["leader"]
            nxt = rs[i + 1]["commit_offset"] if i + 1 < len(rs) else None
            gone = removed.get((r["cluster_id"], r["topic_id"]))
            if gone is not None and r["commit_offset"] is not None and gone >= r["commit_offset"]:
                nxt = gone if nxt is None else min(nxt, gone)
            r["next_commit_offset"] = capped(nxt, hole_after(ivs, r["cluster_id"], r["commit_offset"]))
            prev = r
    return [{c: r.get(c) for c in TIMELINE_COLUMNS} for r in rows]
