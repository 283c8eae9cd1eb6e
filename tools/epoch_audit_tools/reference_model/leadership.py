"""Reference model of the leadership invariants (leader_epoch_regression, two_leaders_same_epoch,
write_accepted_by_fenced_leader, produce_epoch_mismatch_accepted): a plain Python replay over
bronze-shaped dicts plus partition_timeline rows, with explicit state.

``check(events, timeline, config)`` returns violation dicts with the output contract's columns
(``violations.partition_violation``).
"""

from __future__ import annotations

import datetime as dt
import re
from collections import defaultdict
from typing import Any

from epoch_audit_tools.reference_model.broker_views import (
    Row,
    broker_leader_epochs,
    is_ok,
    own_key,
    produce_runs,
    replica_offsets,
    rp_term,
)
from epoch_audit_tools.reference_model.config import RuleConfig, clock_skew_ms
from epoch_audit_tools.reference_model.event_types import (
    KRAFT_BROKER_TYPES,
    KRAFT_FENCE_BROKER,
    KRAFT_REGISTER_BROKER,
    KRAFT_UNFENCE_BROKER,
    KRAFT_UNREGISTER_BROKER,
    VOTE_GRANTED,
    VOTE_REPLY,
)
from epoch_audit_tools.reference_model.ordering import nulls_first, nulls_last
from epoch_audit_tools.reference_model.violations import partition_violation

_GRANTED = re.compile(r"vote_granted:\s*(1|true)\b")
# The broker records that fence or unfence a broker (spec write_accepted_by_fenced_leader: "or B
# fenced"): every KRaft broker-registration record (KIP-631).
FENCE_TYPES = KRAFT_BROKER_TYPES
_EPOCH = dt.datetime(1970, 1, 1)


def _micros(time: dt.datetime) -> int:
    """Same arithmetic as Spark's unix_micros on a UTC session."""
    return (time - _EPOCH) // dt.timedelta(microseconds=1)


def partition_key(row: Row) -> tuple:
    """(cluster, topic, partition) of an event or a row."""
    return (row.get("cluster_id"), row.get("topic"), row.get("partition"))


def epoch_leaders(held_epochs: list[Row], timeline: list[Row]) -> dict[tuple, Any]:
    """(cluster, topic, partition, LE) -> leader: first timeline decision, else first broker claim."""
    from_timeline: dict[tuple, tuple] = {}
    for d in timeline:
        if d.get("leader") is None or d["leader"] < 0 or d.get("leader_epoch") is None or d["leader_epoch"] < 0:
            continue
        k = partition_key(d) + (d["leader_epoch"],)
        if k not in from_timeline or d["decision_seq"] < from_timeline[k][0]:
            from_timeline[k] = (d["decision_seq"], d["leader"])
    from_claims: dict[tuple, tuple] = {}
    for r in held_epochs:
        if not r["is_claim"]:
            continue
        k = partition_key(r) + (r["leader_epoch"],)
        key = (r.get("event_time") is None, nulls_first(r.get("event_time")), r["event_id"])
        if k not in from_claims or key < from_claims[k][0]:
            from_claims[k] = (key, r["broker_id"])
    out = {k: v[1] for k, v in from_claims.items()}
    out.update({k: v[1] for k, v in from_timeline.items()})
    return out


def leader_epoch_regression(held_epochs: list[Row], timeline: list[Row]) -> list[Row]:
    out = []
    series: dict[tuple, list[Row]] = defaultdict(list)
    for r in held_epochs:
        if r["row_kind"] == "epoch":
            series[(r["cluster_id"], r["broker_id"], r["topic"], r["partition"], r["gen"])].append(r)
    for rs in series.values():
        rs.sort(key=lambda r: r["seq"])
        for q, r in zip(rs, rs[1:], strict=False):
            if r["leader_epoch"] < q["leader_epoch"] and not (
                q["tid"] is not None and r["tid"] is not None and q["tid"] != r["tid"]
            ):
                out.append(
                    partition_violation(
                        "leader_epoch_regression",
                        r,
                        r["broker_id"],
                        r["leader_epoch"],
                        q["leader_epoch"],
                        r.get("event_time"),
                        [r["event_id"], q["event_id"]],
                        f"Broker {r['broker_id']} holds {r['topic']}-{r['partition']} at leader epoch "
                        f"{r['leader_epoch']} after already holding epoch {q['leader_epoch']}.",
                    )
                )
    parts: dict[tuple, list[Row]] = defaultdict(list)
    for d in timeline:
        if d.get("is_leader_change"):
            parts[partition_key(d) + (d.get("topic_id"),)].append(d)
    for ds in parts.values():
        ds.sort(key=lambda d: d["decision_seq"])
        for q, r in zip(ds, ds[1:], strict=False):
            # an unknown epoch (after a hole in the dumped metadata log) proves nothing
            if None not in (r["leader_epoch"], q["leader_epoch"]) and r["leader_epoch"] < q["leader_epoch"]:
                out.append(
                    partition_violation(
                        "leader_epoch_regression",
                        r,
                        r["leader"] if r["leader"] is not None and r["leader"] >= 0 else None,
                        r["leader_epoch"],
                        q["leader_epoch"],
                        r.get("event_time"),
                        [r["event_id"], q["event_id"]],
                        "controller leader change at a lower epoch",
                    )
                )
    return out


def two_leaders_same_epoch(events: list[Row], held_epochs: list[Row], timeline: list[Row], skew_ms: int) -> list[Row]:
    claimants: dict[tuple, dict[Any, Row]] = defaultdict(dict)
    for r in held_epochs:
        if not r["is_claim"]:
            continue
        c = claimants[partition_key(r) + (r["leader_epoch"],)].setdefault(r["broker_id"], {"claimant": r["broker_id"]})
        k = own_key(r)
        if c.get("bk_key") is None or k < c["bk_key"]:
            c.update(bk_key=k, bk_event=r["event_id"], bk_time=r.get("event_time"), bk_tid=r.get("tid"))
    for d in timeline:
        if d.get("leader") is None or d["leader"] < 0 or d.get("leader_epoch") is None or d["leader_epoch"] < 0:
            continue
        if d.get("source") == "redpanda":  # nodes' own "became the leader" lines: claims, not decisions
            continue
        c = claimants[partition_key(d) + (d["leader_epoch"],)].setdefault(d["leader"], {"claimant": d["leader"]})
        if c.get("tl_seq") is None or d["decision_seq"] < c["tl_seq"]:
            c.update(tl_seq=d["decision_seq"], tl_event=d["event_id"], tl_time=d.get("event_time"),
                     tl_tid=d.get("topic_id"))
    # A recreated topic restarts its epochs: claims of different topic ids never pair; a claim
    # without one joins the partition's only topic id, else pairs only with its like ("").
    by_incarnation: dict[tuple, dict[Any, Row]] = defaultdict(dict)
    for k, cs in claimants.items():
        tids = {c.get("tl_tid") or c.get("bk_tid") for c in cs.values()} - {None}
        for claimant, c in cs.items():
            tid = c.get("tl_tid") or c.get("bk_tid")
            grp = tid if tid is not None else (next(iter(tids)) if len(tids) == 1 else "")
            by_incarnation[k + (grp,)][claimant] = c
    claimants = by_incarnation
    acks: dict[tuple, list[tuple]] = defaultdict(list)
    for r in held_epochs:
        is_ack = r["row_kind"] == "ack" or (r["row_kind"] == "epoch" and r["event_type"] == "become_follower")
        if is_ack and r.get("leader") is not None:
            ack_key = partition_key(r) + (r["leader_epoch"], r["broker_id"], r["leader"])
            acks[ack_key].append((own_key(r), r["event_id"]))
    grants: dict[tuple, list[str]] = defaultdict(list)
    for e in events:
        et = e.get("event_type")
        if et not in (VOTE_REPLY, VOTE_GRANTED) or e.get("replica_id") is None:
            continue
        d = e.get("details") or {}
        term = e.get("leader_epoch") if e.get("leader_epoch") is not None else rp_term(e)
        granted = str(d.get("vote_granted")).lower() in ("true", "1") or bool(_GRANTED.search(e.get("raw") or ""))
        if term is None or not granted or str(d.get("prevote")).lower() == "true":
            continue
        own = e.get("broker_id") if e.get("broker_id") is not None else e.get("host_id")
        voter, cand = (e["replica_id"], own) if et == VOTE_REPLY else (own, e["replica_id"])
        grants[partition_key(e) + (term, voter, cand)].append(e["event_id"])

    def ack(k: tuple, second: Row, first: Row) -> Any:
        k = k[:4]  # (cluster, topic, partition, LE): acks and grants name no topic incarnation
        own = None
        if second.get("bk_key") is not None:
            cands = [a for a in acks.get(k + (second["claimant"], first["claimant"]), []) if a[0] < second["bk_key"]]
            if cands:
                own = min(cands)[1]
        if own is not None:
            return own
        g = grants.get(k + (second["claimant"], first["claimant"]), [])
        return min(g) if g else None

    out = []
    skew_us = skew_ms * 1000
    for k, cs in claimants.items():
        if len(cs) < 2:
            continue
        for c in cs.values():
            tl_t, bk_t = c.get("tl_time"), c.get("bk_time")
            times = [t for t in (tl_t, bk_t) if t is not None]
            c["time"] = min(times) if times else None
            use_tl = bk_t is None or (tl_t is not None and tl_t <= bk_t)
            c["event"] = (c.get("tl_event") or c.get("bk_event")) if use_tl else c.get("bk_event")
        ranked = sorted(cs.values(), key=lambda c: (nulls_last(c.get("tl_seq")), nulls_last(c["time"]), c["claimant"]))
        a, b = ranked[0], ranked[1]
        ack_ba = ack(k, b, a)
        ack_ab = ack(k, a, b)
        if a.get("tl_seq") is not None and b.get("tl_seq") is not None:
            mode = "timeline"
        elif ack_ba is not None:
            mode = "ack_ba"
        elif ack_ab is not None:
            mode = "ack_ab"
        else:
            mode = "time"
        if mode == "time":
            a_first = (nulls_last(a["time"]), a["claimant"]) < (nulls_last(b["time"]), b["claimant"])
        else:
            a_first = mode in ("timeline", "ack_ba")
        first, second = (a, b) if a_first else (b, a)
        if mode != "time":
            conf = "confirmed"
        elif (
            first["time"] is not None
            and second["time"] is not None
            and (_micros(second["time"]) - _micros(first["time"]) > skew_us)
        ):
            conf = "confirmed"
        else:
            conf = "suspected"
        ack_id = ack_ba if mode == "ack_ba" else ack_ab if mode == "ack_ab" else None
        row = dict(cluster_id=k[0], topic=k[1], partition=k[2])
        out.append(
            partition_violation(
                "two_leaders_same_epoch",
                row,
                second["claimant"],
                k[3],
                None,
                second["time"],
                [second["event"], first["event"], ack_id],
                "two claimants of one epoch",
                confidence=conf,
            )
        )
    return out


def epoch_starts_by_leader(offset_series: list[Row], leaders: dict[tuple, Any]) -> dict[tuple, tuple]:
    """(c, t, p, e) -> (start, start_event): the epoch leader's line, else its latest checkpoint."""
    line: dict[tuple, tuple] = {}
    ckpt: dict[tuple, tuple] = {}
    for r in offset_series:
        k = partition_key(r) + (r["leader_epoch"], r["broker_id"])
        if r["series"] == "epoch_start_line":
            if k not in line or r["series_seq"] < line[k][0]:
                line[k] = (r["series_seq"], (r["value"], r["event_id"]))
        elif r["series"] == "epoch_start_checkpoint" and r["is_latest_copy"]:
            v = (r["value"], r["event_id"])
            if k not in ckpt or v < ckpt[k]:
                ckpt[k] = v
    out = {}
    for k, leader in leaders.items():
        if leader is None:
            continue
        s = line[k + (leader,)][1] if k + (leader,) in line else ckpt.get(k + (leader,))
        if s is not None:
            out[k] = s
    return out


def offset_rule(events: list[Row], held_epochs: list[Row], offset_series: list[Row], timeline: list[Row]) -> list[Row]:
    leaders = epoch_leaders(held_epochs, timeline)
    starts = epoch_starts_by_leader(offset_series, leaders)
    runs = produce_runs(events)
    thr: dict[tuple, tuple] = {}
    for run in runs:
        k = partition_key(run) + (run["leader_epoch"],)
        later = [(s[0], kk[3], s[1]) for kk, s in starts.items() if kk[:3] == k[:3] and kk[3] > k[3]]
        if later:
            thr[k] = min(later)
    crossing = {
        partition_key(run) + (run["leader_epoch"],)
        for run in runs
        if partition_key(run) + (run["leader_epoch"],) in thr
        and run["last_base_offset"] >= thr[partition_key(run) + (run["leader_epoch"],)][0]
    }
    best: dict[tuple, tuple] = {}
    for e in events:
        if e.get("event_type") != "data_batch" or e.get("offset") is None or e.get("leader_epoch") is None:
            continue
        k = partition_key(e) + (e["leader_epoch"],)
        if k not in crossing or e["offset"] < thr[k][0]:
            continue
        host = e.get("host_id") if e.get("host_id") is not None else e.get("broker_id")
        cand = (e["offset"], host, e["event_id"], e.get("event_time"))
        if k not in best or cand[:3] < best[k][:3]:
            best[k] = cand
    out = []
    for k, b in best.items():
        start, nxt, start_event = thr[k]
        out.append(
            partition_violation(
                "write_accepted_by_fenced_leader",
                dict(cluster_id=k[0], topic=k[1], partition=k[2]),
                leaders.get(k),
                k[3],
                nxt,
                b[3],
                [b[2], start_event],
                "batch past the end of its epoch",
            )
        )
    return out


def fence_markers(events: list[Row]) -> list[Row]:
    out = []
    for e in events:
        et = e.get("event_type")
        if et not in FENCE_TYPES:
            continue
        if et == KRAFT_FENCE_BROKER:
            kind = "fence"
        elif et == KRAFT_UNFENCE_BROKER:
            kind = "unfence"
        elif et == KRAFT_UNREGISTER_BROKER or (et == KRAFT_REGISTER_BROKER and e.get("fenced") is None):
            kind = "fence"
        elif e.get("fenced") is True:
            kind = "fence"
        elif e.get("fenced") is False:
            kind = "unfence"
        else:
            continue
        if e.get("broker_id") is None or e.get("event_time") is None:
            continue
        out.append(dict(e, kind=kind))
    return out


def time_rule(events: list[Row], timeline: list[Row], skew_ms: int, held_epochs: list[Row] | None = None) -> list[Row]:
    skew_us = skew_ms * 1000
    # B's own leadership claims (leader lines, B's clock) per (c, t, p, broker).
    claims: dict[tuple, list[tuple]] = defaultdict(list)
    for r in held_epochs if held_epochs is not None else broker_leader_epochs(events):
        if r["is_claim"] and r.get("event_time") is not None and r.get("leader_epoch") is not None:
            claims[partition_key(r) + (r["broker_id"],)].append((r["event_time"], r["leader_epoch"]))
    # Leadership markers per (c, t, p, broker).
    marks: dict[tuple, list[Row]] = defaultdict(list)
    parts: dict[tuple, list[Row]] = defaultdict(list)
    for d in timeline:
        parts[partition_key(d)].append(d)
    for ds in parts.values():
        ds.sort(key=lambda d: d["decision_seq"])
        prev = None
        for d in ds:
            if d.get("event_time") is not None:
                if d.get("leader") is not None and d["leader"] >= 0:
                    marks[partition_key(d) + (d["leader"],)].append(
                        dict(kind="lead", t=d["event_time"], seq=d["decision_seq"], id=d["event_id"])
                    )
                if (
                    prev is not None
                    and prev.get("leader") is not None
                    and prev["leader"] >= 0
                    and d.get("leader") != prev["leader"]
                    and d.get("leader_epoch") is not None
                    and prev.get("leader_epoch") is not None
                    and d["leader_epoch"] > prev["leader_epoch"]
                ):
                    marks[partition_key(d) + (prev["leader"],)].append(
                        dict(
                            kind="move",
                            t=d["event_time"],
                            seq=d["decision_seq"],
                            id=d["event_id"],
                            held_le=prev["leader_epoch"],
                            new_le=d["leader_epoch"],
                            new_leader=d.get("leader"),
                        )
                    )
            prev = d
    fences: dict[tuple, list[Row]] = defaultdict(list)
    for f in fence_markers(events):
        fences[(f["cluster_id"], f["broker_id"])].append(
            dict(kind=f["kind"], t=f["event_time"], seq=f.get("metadata_offset"), id=f["event_id"])
        )

    def mkey(m: Row) -> tuple:
        return (m["t"], 1, nulls_first(m["seq"]), m["id"])

    groups: dict[tuple, list[tuple]] = defaultdict(list)
    for e in events:
        if e.get("event_type") != "request_produce" or not is_ok(e.get("error")):
            continue
        if e.get("event_time") is None or e.get("topic") is None:
            continue
        b = e.get("host_id") if e.get("host_id") is not None else e.get("broker_id")
        pk = partition_key(e) + (b,)
        t = e["event_time"]
        pkey = (t, 0, nulls_first(None), e["event_id"])
        ms = [m for m in marks.get(pk, []) if mkey(m) < pkey]
        has_move = any(m["kind"] == "move" for m in marks.get(pk, []))
        last = max(ms, key=mkey) if ms and has_move else None
        if last is not None and last["kind"] == "move":
            # B's own log shows it leader again (an LE above the one it was moved out of) at or
            # before t: causally after the move, so not timed before it by more than the tolerance.
            if any(
                le > last["held_le"] and ct <= t and _micros(ct) >= _micros(last["t"]) - skew_us
                for ct, le in claims.get(pk, [])
            ):
                continue
            leads = [m["t"] for m in marks[pk] if m["kind"] == "lead" and mkey(m) > pkey]
            nxt = min(leads) if leads else None
            near = nxt is not None and _micros(nxt) - _micros(t) <= skew_us
            ok_conf = (_micros(t) - _micros(last["t"]) > skew_us) and not near
            groups[pk + (last["id"], "move", last["held_le"], last["new_le"], last["new_leader"])].append(
                (not ok_conf, t, e["event_id"])
            )
            continue
        fs = [m for m in fences.get((e.get("cluster_id"), b), []) if mkey(m) < pkey]
        if fs:
            lf = max(fs, key=mkey)
            if lf["kind"] == "fence":
                ok_conf = _micros(t) - _micros(lf["t"]) > skew_us
                groups[pk + (lf["id"], "fence", None, None, None)].append((not ok_conf, t, e["event_id"]))
    out = []
    for k, ps in groups.items():
        nc, t, pid = min(ps)
        out.append(
            partition_violation(
                "write_accepted_by_fenced_leader",
                dict(cluster_id=k[0], topic=k[1], partition=k[2]),
                k[3],
                k[6],
                k[7],
                t,
                [pid, k[4]],
                "produce accepted after the move",
                confidence="suspected" if nc else "confirmed",
            )
        )
    return out


def _held_position(held: Row) -> tuple:
    """A held-epoch row's place among a broker's produces (by time; at one time, before them)."""
    return (nulls_first(held.get("event_time")), 0, nulls_first(held["seq"]), held["event_id"])


def produce_epoch_mismatch(events: list[Row], held_epochs: list[Row]) -> list[Row]:
    held: dict[tuple, list[Row]] = defaultdict(list)
    for r in held_epochs:
        if r["row_kind"] == "epoch":
            held[partition_key(r) + (r["broker_id"],)].append(r)
    out = []
    for e in events:
        if e.get("event_type") != "request_produce" or not is_ok(e.get("error")):
            continue
        if e.get("leader_epoch") is None or e["leader_epoch"] < 0 or e.get("topic") is None:
            continue
        b = e.get("host_id") if e.get("host_id") is not None else e.get("broker_id")
        produce_position = (nulls_first(e.get("event_time")), 1, nulls_first(None), e["event_id"])
        hs = [h for h in held.get(partition_key(e) + (b,), []) if _held_position(h) < produce_position]
        last = max(hs, key=_held_position) if hs else None
        if e.get("current_leader_epoch") is not None:
            expected, hid = e["current_leader_epoch"], None
        elif last is not None:
            expected, hid = last["leader_epoch"], last["event_id"]
        else:
            continue
        if expected != e["leader_epoch"]:
            out.append(
                partition_violation(
                    "produce_epoch_mismatch_accepted",
                    dict(e, broker_id=b),
                    b,
                    e["leader_epoch"],
                    expected,
                    e.get("event_time"),
                    [e["event_id"], hid],
                    "produce epoch mismatch",
                )
            )
    return out


def check(events: list[Row], timeline: list[Row], config: RuleConfig | None = None) -> list[Row]:
    """All leadership violations of one history (any number of clusters)."""
    skew_ms = clock_skew_ms(config)
    held_epochs = broker_leader_epochs(events)
    offset_series = replica_offsets(events)
    return (
        leader_epoch_regression(held_epochs, timeline)
        + two_leaders_same_epoch(events, held_epochs, timeline, skew_ms)
        + offset_rule(events, held_epochs, offset_series, timeline)
        + time_rule(events, timeline, skew_ms, held_epochs)
        + produce_epoch_mismatch(events, held_epochs)
    )
