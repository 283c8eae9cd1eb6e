"""Pure-Python twin of ``epoch_audit.silver.timelines.partition_timeline``: controller decisions per partition.

Replays the same bronze events with explicit state, one small transition per record:

* KRaft (PartitionRegistration.merge / PartitionChangeBuilder): a PartitionRecord sets the whole
  state (leader, LE, PE, ISR, replicas) and starts a new replay segment; a PartitionChangeRecord
  carries only what changed: ``leader`` absent or -2 = unchanged, otherwise the leader is set AND
  the LE goes up by one (also when the same leader is re-sent, KAFKA-15021); the PE goes up on
  every change; ISR / replicas absent = unchanged. Changes before any PartitionRecord (a dump that
  starts mid-log) keep leader / ISR but have no epochs. Only committed records count (batch
  commit points, KIP-868 transactions: ``metadata_log.committed_metadata``). The transitions are
  ``partition_replay``'s.
* ZooKeeper: the controller's own decision lines in its own log order, controllers ordered by
  controller epoch; a broker's received LeaderAndIsr state stands in only when its issuing
  controller (id, request CE) left no line of its own, and never when it is a re-send (partition
  state CE below the request CE, or LE not above the latest decided LE).
* Redpanda: each "became the leader term: N" (leader = node, LE = term), ordered by term.

``partition_timeline(events)`` returns dicts with :data:`TIMELINE_COLUMNS`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from epoch_audit_tools.reference_model.event_types import (
    REDPANDA_DECISION_TYPE,
    ZK_CONTROLLER_LOG_TYPES,
    ZK_DECISION_TYPES,
    ZK_STAND_IN_TYPES,
    Event,
    is_no_error,
)
from epoch_audit_tools.reference_model.metadata_log import (
    capped,
    covered_intervals,
    hole_after,
    topic_names,
    topic_removals,
)
from epoch_audit_tools.reference_model.ordering import nulls_first, own_times
from epoch_audit_tools.reference_model.partition_replay import replay_partitions

# The columns of the silver partition timeline (its output contract, the same list as the Spark
# table's: the differential tests compare the two row by row on these columns).
TIMELINE_COLUMNS = [
    "cluster_id",
    "topic",
    "partition",
    "topic_id",
    "decision_seq",
    "source",
    "leader",
    "leader_epoch",
    "partition_epoch",
    "isr",
    "replicas",
    "event_time",
    "metadata_offset",
    "controller_id",
    "controller_epoch",
    "event_id",
    "commit_offset",
    "next_commit_offset",
    "is_leader_change",
]
# The event columns a timeline row keeps as they are.
_EVENT_COLUMNS_KEPT = ("cluster_id", "topic", "partition", "topic_id", "leader", "leader_epoch", "partition_epoch",
                       "isr", "replicas", "event_time", "metadata_offset", "controller_id", "controller_epoch",
                       "event_id")


def _row(e: Event, **cols: Any) -> Event:
    """A timeline row: the event's own columns where the timeline keeps them, then ``cols``."""
    base = {column: e.get(column) for column in _EVENT_COLUMNS_KEPT}
    base["commit_offset"] = None
    base.update(cols)
    return base


# --- KRaft -------------------------------------------------------------------------------------
def kraft_decisions(events: list[Event]) -> list[Event]:
    names = topic_names(events)
    out: list[Event] = []
    for r, state in replay_partitions(events):
        out.append(_row(
            r, **state.as_dict(),
            topic=names.get((r["cluster_id"], r.get("topic_id")), r.get("topic")),
            decision_seq=r["_pos"],
            source="kraft",
            controller_id=None,
            controller_epoch=r.get("quorum_epoch"),  # KRaft: the batch's quorum epoch plays that role
            commit_offset=r["commit_offset"],
        ))
    return out


# --- ZooKeeper ---------------------------------------------------------------------------------
def _log_stream(event: Event) -> tuple:
    """A broker's log of one kind, across its rotated files (no host folder: the file alone)."""
    host = event.get("host_id")
    where = ("host", host) if host is not None else ("file", event.get("file_id"))
    return (event.get("cluster_id"), event.get("log_kind"), where)


def _filled_controller_epochs(events: list[Event]) -> dict[str, Any]:
    """event_id -> controller epoch, for the decision lines without one ("ISR for partition ...
    updated to"): the epoch of the last earlier line of its broker's log of that kind (every
    rotated file of it, in the broker's own order) that names one."""
    times = own_times(events)

    def own_position(event: Event) -> tuple:
        return (nulls_first(times.get(event["event_id"])), nulls_first(event.get("file_order")),
                nulls_first(event.get("file_id")), nulls_first(event.get("line_number")),
                nulls_first(event.get("sub_index")))

    last_epoch_in_log: dict[Any, Any] = {}
    filled: dict[str, Any] = {}
    for event in sorted(events, key=own_position):
        # the election line ("... Epoch incremented to E") names the epoch in controller.log too
        marks_epoch = event["event_type"] in ZK_CONTROLLER_LOG_TYPES or event["event_type"] == "controller_failover"
        if marks_epoch and event.get("controller_epoch") is not None:
            last_epoch_in_log[_log_stream(event)] = event["controller_epoch"]
        elif event["event_type"] in ZK_DECISION_TYPES:  # a decision line without an epoch
            filled[event["event_id"]] = last_epoch_in_log.get(_log_stream(event))
    return filled


def zk_decisions(events: list[Event]) -> list[Event]:
    times = own_times(events)
    # (cluster, controller id, controller epoch) of every controller whose own log is in the input
    controllers_present = {
        (e.get("cluster_id"), e["controller_id"], e["controller_epoch"])
        for e in events
        if e["event_type"] in ZK_CONTROLLER_LOG_TYPES
        and e.get("controller_id") is not None
        and e.get("controller_epoch") is not None
    }
    filled = _filled_controller_epochs(events)
    candidates: list[tuple[bool, Event]] = []  # (the controller's own line, event)
    for event in events:
        event_type = event["event_type"]
        if event.get("topic") is None or event.get("leader_epoch") is None:
            continue
        if event_type in ZK_DECISION_TYPES:
            if event.get("controller_epoch") is None and filled.get(event["event_id"]) is not None:
                event = {**event, "controller_epoch": filled[event["event_id"]]}
            candidates.append((True, event))
        elif event_type in ZK_STAND_IN_TYPES and event["leader_epoch"] >= 0:
            if event_type == "request_leader_and_isr" and not is_no_error(event.get("error")):
                continue  # a request-log state counts only when the broker applied it
            if (event.get("cluster_id"), event.get("controller_id"), event.get("controller_epoch")) \
                    in controllers_present:
                continue  # its controller's own lines are in the input: not a stand-in
            candidates.append((False, event))

    def decision_order(candidate: tuple[bool, Event]) -> tuple:
        own, e = candidate
        return (
            nulls_first(e.get("controller_epoch")),
            nulls_first(None if own else e.get("leader_epoch")),
            nulls_first(None if own else e.get("partition_epoch")),
            nulls_first(times.get(e["event_id"])),
            nulls_first(e.get("file_order")),
            nulls_first(e.get("file_id")),
            nulls_first(e.get("line_number")),
            nulls_first(e.get("sub_index")),
            e["event_id"],
        )

    by_partition: dict[tuple, list[tuple[bool, Event]]] = defaultdict(list)
    for own, event in candidates:
        by_partition[(event.get("cluster_id"), event["topic"], event.get("partition"))].append((own, event))
    out: list[Event] = []
    for partition_candidates in by_partition.values():
        partition_candidates.sort(key=decision_order)
        max_decided_epoch = None  # the highest LE decided so far (re-sends by CE excluded)
        seq = 0
        for own, event in partition_candidates:
            # a stand-in whose partition-state CE is below its request CE is a re-send (spec "Timeline")
            state_epoch = event.get("state_controller_epoch")
            is_resend = not own and state_epoch is not None and event.get("controller_epoch") is not None \
                and state_epoch < event["controller_epoch"]
            keep = own or (not is_resend and (max_decided_epoch is None or event["leader_epoch"] > max_decided_epoch))
            if not is_resend:
                max_decided_epoch = event["leader_epoch"] if max_decided_epoch is None \
                    else max(max_decided_epoch, event["leader_epoch"])
            if keep:
                seq += 1
                out.append(_row(event, decision_seq=seq, source="zk-controller" if own else "zk-leader-and-isr"))
    return out


# --- Redpanda ----------------------------------------------------------------------------------
def redpanda_decisions(events: list[Event]) -> list[Event]:
    by_partition: dict[tuple, list[Event]] = defaultdict(list)
    for event in events:
        if event["event_type"] == REDPANDA_DECISION_TYPE and event.get("topic") is not None \
                and event.get("leader_epoch") is not None:
            by_partition[(event.get("cluster_id"), event["topic"], event.get("partition"))].append(event)
    out: list[Event] = []
    for partition_events in by_partition.values():
        partition_events.sort(key=lambda e: (e["leader_epoch"], nulls_first(e.get("event_time")), e["event_id"]))
        for seq, event in enumerate(partition_events, 1):
            out.append(_row(event, decision_seq=seq, source="redpanda", leader=event.get("broker_id"),
                            partition_epoch=None, isr=None, replicas=None, controller_id=None, controller_epoch=None))
    return out


# --- the timeline ------------------------------------------------------------------------------
def partition_timeline(events: Iterable[Event]) -> list[Event]:
    """Every decision of every partition (KRaft, ZK, Redpanda), with ``is_leader_change`` (first
    decision of its series or a different leader) and ``next_commit_offset`` (KRaft: the next
    decision's commit point, or the topic id's RemoveTopicRecord commit point, or the first offset
    of a hole in the dumped log, if that comes first)."""
    events = list(events)
    rows = kraft_decisions(events) + zk_decisions(events) + redpanda_decisions(events)
    covered = covered_intervals(events)
    removed = topic_removals(events)
    series: dict[tuple, list[Event]] = defaultdict(list)
    for row in rows:
        family = "zk" if row["source"].startswith("zk") else row["source"]
        series[(row["cluster_id"], row["topic"], row["partition"], row["topic_id"], family)].append(row)
    for decisions in series.values():
        decisions.sort(key=lambda r: r["decision_seq"])
        previous = None
        for i, row in enumerate(decisions):
            row["is_leader_change"] = previous is None or previous["leader"] != row["leader"]
            next_commit = decisions[i + 1]["commit_offset"] if i + 1 < len(decisions) else None
            removal = removed.get((row["cluster_id"], row["topic_id"]))
            if removal is not None and row["commit_offset"] is not None and removal >= row["commit_offset"]:
                next_commit = removal if next_commit is None else min(next_commit, removal)
            hole = hole_after(covered, row["cluster_id"], row["commit_offset"])
            row["next_commit_offset"] = capped(next_commit, hole)
            previous = row
    return [{column: row.get(column) for column in TIMELINE_COLUMNS} for row in rows]
