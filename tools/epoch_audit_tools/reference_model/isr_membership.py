"""Reference model of stale_broker_epoch_isr_join, fenced_replica_in_isr, last_replica_fenced_in_isr.

Replays the KRaft metadata log commit point by commit point with explicit partition and broker
state (``partition_replay.partition_states`` / ``broker_replay.broker_states``), like
ReplicationControlManager.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

from epoch_audit_tools.reference_model.broker_replay import broker_states
from epoch_audit_tools.reference_model.config import RuleConfig, clock_skew_ms
from epoch_audit_tools.reference_model.event_types import Event, is_no_error
from epoch_audit_tools.reference_model.metadata_log import state_at
from epoch_audit_tools.reference_model.partition_replay import partition_states
from epoch_audit_tools.reference_model.violations import violation


def _fenced_checks(parts: list[Event], brokers: dict[tuple, list[Event]]) -> list[dict[str, Any]]:
    out = []
    # every commit point at which a partition or broker state starts, in order
    by_part: dict[tuple, list[Event]] = defaultdict(list)
    for p in parts:
        by_part[(p["cluster_id"], p["topic_id"], p["partition"])].append(p)
    for (cluster, _topic_id, _partition), states in by_part.items():
        commits = sorted(
            {s["commit_offset"] for s in states}
            | {b["commit_offset"] for bs in brokers.values() for b in bs if b["cluster_id"] == cluster}
        )
        open_ep: dict[tuple[int, str], bool] = {}
        for c in commits:
            p = state_at(states, c)
            members = set(p["isr"] or []) if p else set()
            bad_now: dict[tuple[int, str], tuple] = {}
            for r in members:
                b = state_at(brokers.get((cluster, r), []), c)
                if b and (b["fenced"] is True or b["in_controlled_shutdown"] is True):
                    inv = "last_replica_fenced_in_isr" if len(p["isr"]) == 1 else "fenced_replica_in_isr"
                    bad_now[(r, inv)] = (p, b)
            for (r, inv), (p, _b) in bad_now.items():
                if (r, inv) not in open_ep:  # a new episode
                    out.append(
                        violation(
                            inv,
                            cluster,
                            p["topic"],
                            p["partition"],
                            r,
                            p["leader_epoch"],
                            severity="warning" if inv.startswith("last") else "error",
                            evidence=sorted([p["event_id"], _b["event_id"]]),
                        )
                    )
            open_ep = dict.fromkeys(bad_now, True)
    return out


def _joins(parts: list[Event]) -> list[tuple[Event, int]]:
    """(state, R) per commit point whose ISR adds R to the previous commit point's ISR."""
    out = []
    prev: dict[tuple, Event] = {}
    for p in parts:
        k = (p["cluster_id"], p["topic_id"], p["partition"])
        nxt = p.get("next_commit_offset")
        if nxt is not None and nxt <= p["commit_offset"]:
            continue  # superseded inside its own batch / transaction: not a state at a commit point
        q = prev.get(k)
        # the previous state must hold up to this commit (one ending earlier ends at a hole)
        contiguous = q is not None and q["next_commit_offset"] == p["commit_offset"]
        if contiguous and q["isr"] is not None and p["isr"] is not None:
            out.extend((p, r) for r in p["isr"] if r not in q["isr"])
        prev[k] = p
    return out


def _omitted_from_response(e: Event) -> bool:
    """Named by an incremental fetch (KIP-227, session epoch > 0) and left out of its response."""
    d = e.get("details") or {}
    try:
        session_epoch = int(d.get("session_epoch"))
    except (TypeError, ValueError):
        return False
    return (
        e.get("high_watermark") is None
        and d.get("error_code") is None
        and str(d.get("in_request")).lower() == "true"
        and session_epoch > 0
    )


def _caught_up_fetches(events: list[Event]) -> list[Event]:
    """Follower fetches whose offset reached the leader's high watermark: the response's, or for a
    partition an incremental session's response leaves out, the one that session last sent for it
    (the last earlier fetch of that replica and partition on the leader's log that named one)."""
    def order(e: Event) -> tuple:
        return tuple(
            (e.get(c) is not None, e.get(c) if e.get(c) is not None else 0)
            for c in ("event_time", "file_order", "line_number", "sub_index")
        )

    last_hw: dict[tuple, Any] = {}
    out = []
    mine = [e for e in events if e["event_type"] == "request_fetch" and e.get("replica_id") is not None]
    for e in sorted(mine, key=order):
        key = (e["cluster_id"], e.get("broker_id"), e["replica_id"], e.get("partition"),
               e.get("topic_id") if e.get("topic_id") is not None else e.get("topic"))
        hw = e.get("high_watermark")
        if hw is None and _omitted_from_response(e):
            hw = last_hw.get(key)
        elif hw is not None:
            last_hw[key] = hw
        if e.get("offset") is not None and hw is not None and e["offset"] >= hw:
            out.append(e)
    return out


def check(events: list[Event], config: RuleConfig | None = None) -> list[dict[str, Any]]:
    """Violations of the three ISR-membership invariants in the history."""
    skew = timedelta(milliseconds=clock_skew_ms(config))
    parts = partition_states(events)
    brokers: dict[tuple, list[Event]] = defaultdict(list)
    for b in broker_states(events):
        brokers[(b["cluster_id"], b["broker_id"])].append(b)
    out = _fenced_checks(parts, brokers)

    alter = [
        e
        for e in events
        if e["event_type"] == "request_alter_partition"
        and is_no_error(e.get("error"))
        and (e.get("api_version") or 0) >= 3
        and e.get("isr_broker_epochs") is not None
    ]
    fetches = _caught_up_fetches(events)
    last_req: dict[tuple, Any] = {}
    for e in events:
        if e.get("log_kind") == "request" and e.get("event_time") is not None:
            k = (e["cluster_id"], e.get("broker_id"))
            last_req[k] = max(last_req.get(k, e["event_time"]), e["event_time"])

    for p, r in _joins(parts):
        cluster, c = p["cluster_id"], p["commit_offset"]
        b = state_at(brokers.get((cluster, r), []), c)
        be = b["broker_epoch"] if b else None
        # rule 1: the accepted AlterPartition's broker epoch for R
        found = vouched = False
        for a in alter:
            if (a["cluster_id"], a.get("topic_id"), a.get("partition"), a.get("partition_epoch")) != (
                cluster,
                p["topic_id"],
                p["partition"],
                p["partition_epoch"],
            ) or r not in (a.get("isr") or []):
                continue
            req_be = a["isr_broker_epochs"][a["isr"].index(r)]
            # KIP-903: the leader sent the epoch of the fetch that caught R up; the registered one
            # vouches that the catch-up came from the current incarnation
            vouched = vouched or (req_be is not None and req_be != -1 and req_be == be)
            if req_be is not None and req_be != -1 and be is not None and req_be != be:
                out.append(
                    violation(
                        "stale_broker_epoch_isr_join",
                        cluster,
                        p["topic"],
                        p["partition"],
                        r,
                        p["leader_epoch"],
                        evidence=sorted({p["event_id"], a["event_id"], b["registration_event_id"]} - {None}),
                    )
                )
                found = True
                break
        if found or vouched or b is None or b["registered_at_time"] is None or p["event_time"] is None:
            continue
        # rule 2: stale catch-up
        treg, tc = b["registered_at_time"], p["event_time"]
        mine = [
            f
            for f in fetches
            if f["cluster_id"] == cluster
            and f.get("broker_id") == p["leader"]
            and f.get("replica_id") == r
            and f.get("partition") == p["partition"]
            and (f.get("topic_id") == p["topic_id"] or f.get("topic") == p["topic"])
            and f.get("event_time") is not None
            and f["event_time"] <= tc
        ]
        if not mine:
            continue
        if any(
            f.get("broker_epoch") == be or (f.get("broker_epoch") is None and f["event_time"] > treg + skew)
            for f in mine
        ):
            continue
        if not (last_req.get((cluster, p["leader"])) and last_req[(cluster, p["leader"])] > tc):
            continue
        last = max(mine, key=lambda f: (f["event_time"], f["event_id"], f.get("broker_epoch") or 0))
        fbe = last.get("broker_epoch")
        confirmed = (fbe is not None and fbe != be) or (fbe is None and last["event_time"] < treg - skew)
        # a new-incarnation fetch timed within the skew after the commit may really precede it
        late_new = any(
            f["cluster_id"] == cluster
            and f.get("broker_id") == p["leader"]
            and f.get("replica_id") == r
            and f.get("partition") == p["partition"]
            and (f.get("topic_id") == p["topic_id"] or f.get("topic") == p["topic"])
            and f.get("event_time") is not None
            and tc < f["event_time"] <= tc + skew
            and (f.get("broker_epoch") == be or (f.get("broker_epoch") is None and f["event_time"] > treg + skew))
            for f in fetches
        )
        confirmed = confirmed and not late_new
        out.append(
            violation(
                "stale_broker_epoch_isr_join",
                cluster,
                p["topic"],
                p["partition"],
                r,
                p["leader_epoch"],
                confidence="confirmed" if confirmed else "suspected",
                evidence=sorted({p["event_id"], last["event_id"], b["registration_event_id"]} - {None}),
            )
        )
    return out
