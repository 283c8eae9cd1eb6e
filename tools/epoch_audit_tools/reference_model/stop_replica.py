"""Reference model of stale_stop_replica_accepted and stale_controller_epoch_accepted (KIP-570).

Replays each broker's own log with explicit state, like ReplicaManager: per partition the current
leader epoch (last accepted LeaderAndIsr state; dropped when an accepted StopReplica deletes the
replica) and the broker's known controller epoch (raised by every LeaderAndIsr / StopReplica /
UpdateMetadata it processed, or stated by a stale-controller refusal).

Pass 1 decides which requests were accepted (the evidence may follow the request: the
"Removed fetcher" line, a later request-log line); pass 2 replays the state and checks each
accepted request at its first event.
"""

from __future__ import annotations

from typing import Any

from epoch_audit.silver.broker_controller_views import CONTROLLER_REQUEST_TYPES, UNPROCESSED_REQUEST_ERRORS
from epoch_audit_tools.reference_model.model import Event, by_broker_in_own_order, is_no_error, violation

STOP_EVIDENCE = {"fetcher_removed", "log_deletion_scheduled", "log_deleted"}
BECOME = {"become_leader", "become_follower"}
PARTITION_EVENTS = {"stop_replica_received", "leader_and_isr_received", *BECOME, *STOP_EVIDENCE, "fetcher_added"}
REFUSALS = {
    "stop": (
        "stop_replica_stale_controller",
        {"stop_replica_fenced", "stop_replica_equal_epoch_refused", "stop_replica_storage_error"},
    ),
    "lair": (
        "leader_and_isr_stale_controller",
        {"leader_and_isr_stale_epoch", "leader_and_isr_equal_epoch", "leader_and_isr_other_refusal"},
    ),
}
# The requests that show a broker's known controller epoch: the event-type contract, shared with Spark.
VIEW_TYPES = set(CONTROLLER_REQUEST_TYPES)
STALE_CE_REFUSALS = {
    "leader_and_isr_stale_controller",
    "stop_replica_stale_controller",
    "update_metadata_stale_controller",
}


def _req_key(e: Event) -> tuple:
    return (e.get("controller_id"), e.get("controller_epoch"), e.get("correlation_id"))


def _unit_key(e: Event) -> tuple:
    return (e.get("topic"), e.get("partition"), *_req_key(e))


def accepted_units(rows: list[Event], kind: str) -> dict[tuple, dict[str, Any]]:
    """Pass 1 over one broker's events (own order): accepted units keyed by partition + request."""
    trace_t = "stop_replica_received" if kind == "stop" else "leader_and_isr_received"
    req_t = "request_stop_replica" if kind == "stop" else "request_leader_and_isr"
    effect = STOP_EVIDENCE if kind == "stop" else BECOME
    bound = {"stop_replica_received", "leader_and_isr_received"} | (BECOME if kind == "stop" else set())
    whole_t, part_t = REFUSALS[kind]
    whole_ref = {_req_key(e) for e in rows if e["event_type"] == whole_t}
    part_ref = {_unit_key(e) for e in rows if e["event_type"] in part_t}
    req_bad = {_unit_key(e) for e in rows if e["event_type"] == req_t and not is_no_error(e.get("error"))}
    units: dict[tuple, dict[str, Any]] = {}

    def add(e: Event, ids: list[str]) -> None:
        u = units.get(_unit_key(e))
        if u is None:
            units[_unit_key(e)] = {"first": e, "evidence": set(ids)}
        else:
            u["evidence"].update(ids)  # rows come in own order: the first stays first

    for i, e in enumerate(rows):
        if e.get("topic") is None:
            continue
        if e["event_type"] == req_t and is_no_error(e.get("error")):
            add(e, [e["event_id"]])
        elif e["event_type"] == trace_t:
            if _req_key(e) in whole_ref or _unit_key(e) in part_ref or _unit_key(e) in req_bad:
                continue
            for f in rows[i + 1 :]:  # the partition's next events, until its next request
                if f["event_type"] not in PARTITION_EVENTS or (f.get("topic"), f.get("partition")) != (
                    e["topic"],
                    e.get("partition"),
                ):
                    continue
                if f["event_type"] in effect:
                    if kind == "stop" or f.get("leader_epoch") == e.get("leader_epoch"):
                        add(e, [e["event_id"], f["event_id"]])
                    break
                if f["event_type"] in bound:
                    break
    return units


def check(events: list[Event], config: Any = None) -> list[dict[str, Any]]:
    """Violations of both invariants in the history."""
    out: list[dict[str, Any]] = []
    for (cluster, broker), rows in by_broker_in_own_order(events):
        stops = accepted_units(rows, "stop")
        lairs = accepted_units(rows, "lair")
        first_stop = {u["first"]["event_id"]: u for u in stops.values()}
        first_any = {
            **{u["first"]["event_id"]: ("LeaderAndIsr", u) for u in lairs.values()},
            **{u["first"]["event_id"]: ("StopReplica", u) for u in stops.values()},
        }
        current: dict[tuple, tuple[int, str] | None] = {}
        known: tuple[int, str] | None = None
        for e in rows:
            t, tp, eid = e["event_type"], (e.get("topic"), e.get("partition")), e["event_id"]
            # checks at an accepted request's first event, against the state before it
            if eid in first_any:
                what, u = first_any[eid]
                ce = e.get("controller_epoch")
                if ce is not None and known is not None and ce < known[0]:
                    out.append(
                        violation(
                            "stale_controller_epoch_accepted",
                            cluster,
                            e["topic"],
                            e.get("partition"),
                            broker,
                            e.get("leader_epoch"),  # the request LE of the applied state
                            expected_epoch=known[0],
                            evidence=sorted(u["evidence"] | {known[1]}),
                            what=what,
                        )
                    )
            if eid in first_stop:
                u = first_stop[eid]
                le, cur = e.get("leader_epoch"), current.get(tp)
                if le is not None and le >= 0 and cur is not None and cur[0] > le:
                    out.append(
                        violation(
                            "stale_stop_replica_accepted",
                            cluster,
                            e["topic"],
                            e.get("partition"),
                            broker,
                            le,
                            expected_epoch=cur[0],
                            evidence=sorted(u["evidence"] | {cur[1]}),
                        )
                    )
                if e.get("delete_partition") is True:
                    current[tp] = None  # the replica is gone: no current epoch any more
            # state updates
            if e.get("leader_epoch") is not None and (
                t in BECOME or (t == "request_leader_and_isr" and is_no_error(e.get("error")))
            ):
                current[tp] = (e["leader_epoch"], eid)
            seen = (
                e.get("known_controller_epoch")
                if t in STALE_CE_REFUSALS
                else (e.get("controller_epoch") if t in VIEW_TYPES else None)
            )
            if e.get("error") in UNPROCESSED_REQUEST_ERRORS:
                seen = None  # refused before processing: the broker never took its controller epoch
            if seen is not None and (known is None or seen > known[0] or (seen == known[0] and eid > known[1])):
                known = (seen, eid)
    return out
