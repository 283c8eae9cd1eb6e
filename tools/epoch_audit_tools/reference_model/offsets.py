"""Reference model of the offset invariants (high_watermark_regression, epoch_start_offset_divergence):
plain Python over bronze-shaped dicts plus partition_timeline rows.

``check(events, timeline, config)`` returns violation dicts with the output contract's columns
(``violations.partition_violation``).
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from epoch_audit_tools.reference_model.broker_views import Row, broker_leader_epochs, produce_runs, replica_offsets
from epoch_audit_tools.reference_model.config import RuleConfig
from epoch_audit_tools.reference_model.leadership import epoch_leaders, partition_key
from epoch_audit_tools.reference_model.ordering import nulls_first
from epoch_audit_tools.reference_model.violations import partition_violation

_ACKS01 = re.compile(r'"acks"\s*:\s*[01]\b|\backs=[01]\b')
HW_SERIES = ("hw_leader_line", "hw_checkpoint")


def rp_expected(events: list[Row]) -> set[tuple]:
    rp, acks, loss = set(), set(), set()
    for e in events:
        k = partition_key(e)
        if e.get("log_kind") == "redpanda":
            rp.add(k)
        if e.get("event_type") == "request_produce":
            d = e.get("details") or {}
            if d.get("acks") in ("0", "1") or _ACKS01.search(e.get("raw") or ""):
                acks.add(k)
        if e.get("event_type") == "rp_step_down" and "heartbeats_majority" in (e.get("raw") or ""):
            loss.add(k)
    return rp & acks & loss


def high_watermark_regression(events: list[Row], offset_series: list[Row]) -> list[Row]:
    expected = rp_expected(events)
    series: dict[tuple, list[Row]] = defaultdict(list)
    for r in offset_series:
        if r["series"] in HW_SERIES:
            series[(r["cluster_id"], r["broker_id"], r["topic"], r["partition"], r["series"])].append(r)
    out = []
    for rs in series.values():
        rs.sort(key=lambda r: r["series_seq"])
        for q, r in zip(rs, rs[1:], strict=False):
            if r["value"] < q["value"] and not (q["tid"] is not None and r["tid"] is not None and q["tid"] != r["tid"]):
                out.append(
                    partition_violation(
                        "high_watermark_regression",
                        r,
                        r["broker_id"],
                        r["leader_epoch"],
                        q["leader_epoch"],
                        r.get("event_time"),
                        [r["event_id"], q["event_id"]],
                        "high watermark moved backwards",
                        severity="warning" if partition_key(r) in expected else "error",
                    )
                )
    return out


def reference_starts(offset_series: list[Row], leaders: dict[tuple, Any]) -> dict[tuple, tuple]:
    """(c, t, p, e) -> (ref, ref_event, source)."""
    line: dict[tuple, tuple] = {}
    ckpt: dict[tuple, tuple] = {}
    dump: dict[tuple, tuple] = {}
    for r in offset_series:
        k = partition_key(r) + (r["leader_epoch"], r["broker_id"])
        v = (r["value"], r["event_id"])
        if r["series"] == "epoch_start_line":
            if k not in line or r["series_seq"] < line[k][0]:
                line[k] = (r["series_seq"], v)
        elif r["series"] == "epoch_start_checkpoint" and r["is_latest_copy"]:
            ckpt[k] = min(ckpt.get(k, v), v)
        elif r["series"] == "epoch_start_dump":
            dump[k] = min(dump.get(k, v), v)
    per_replica = dict(dump)
    per_replica.update(ckpt)
    votes: dict[tuple, dict[Any, list]] = defaultdict(dict)
    for k, v in per_replica.items():
        slot = votes[k[:4]].setdefault(v[0], [0, None, None])
        slot[0] += 1
        if slot[1] is None or nulls_first(k[4]) < nulls_first(slot[1]):
            slot[1], slot[2] = k[4], v[1]
    epochs = {k[:4] for k in per_replica} | {k[:4] for k in line}
    out = {}
    for k in epochs:
        leader = leaders.get(k)
        if leader is not None and k + (leader,) in line:
            v = line[k + (leader,)][1]
            out[k] = (v[0], v[1], "leader line")
        elif leader is not None and k + (leader,) in ckpt:
            v = ckpt[k + (leader,)]
            out[k] = (v[0], v[1], "leader checkpoint")
        elif k in votes:
            mx = max(s[0] for s in votes[k].values())
            tops = [(val, s) for val, s in votes[k].items() if s[0] == mx]
            if len(tops) == 1:
                out[k] = (tops[0][0], tops[0][1][2], "majority")
    return out


def start_rule(offset_series: list[Row], refs: dict[tuple, tuple]) -> list[Row]:
    log_starts: dict[tuple, set] = defaultdict(set)
    for r in offset_series:
        if r["series"] == "log_start":
            log_starts[partition_key(r) + (r["broker_id"],)].add(r["value"])
    found: dict[tuple, list[Row]] = defaultdict(list)
    for r in offset_series:
        is_ck = r["series"] == "epoch_start_checkpoint" and r["is_latest_copy"]
        if not (is_ck or r["series"] == "epoch_start_dump"):
            continue
        k = partition_key(r) + (r["leader_epoch"],)
        if k not in refs or r["value"] == refs[k][0]:
            continue
        clamped = (
            bool(r.get("is_earliest_entry"))
            and r["value"] > refs[k][0]
            and r["value"] in log_starts.get(partition_key(r) + (r["broker_id"],), set())
        )
        if not clamped:
            found[k + (r["broker_id"],)].append(r)
    time_of = {r["event_id"]: r.get("event_time") for r in offset_series}
    out = []
    for k, rs in found.items():
        rs.sort(key=lambda r: (r["series"], r["event_id"], r["value"], nulls_first(r.get("event_time"))))
        ref = refs[k[:4]]
        # a checkpoint read at collection time has no time of its own: the reference's then
        when = rs[0].get("event_time")
        when = when if when is not None else time_of.get(ref[1])
        out.append(
            partition_violation(
                "epoch_start_offset_divergence",
                rs[0],
                k[4],
                k[3],
                None,
                when,
                [r["event_id"] for r in rs] + [ref[1]],
                "epoch start differs from the reference",
            )
        )
    return out


def latest_hw(offset_series: list[Row]) -> dict[tuple, Any]:
    best: dict[tuple, tuple] = {}
    for r in offset_series:
        if r["series"] not in HW_SERIES:
            continue
        k = partition_key(r) + (r["broker_id"],)
        key = (r.get("event_time") is None, nulls_first(r.get("event_time")), r["series"] == "hw_checkpoint",
               r["series_seq"])
        if k not in best or key > best[k][0]:
            best[k] = (key, r["value"])
    return {k: v[1] for k, v in best.items()}


def same_offset_rule(events: list[Row], offset_series: list[Row], refs: dict[tuple, tuple]) -> list[Row]:
    runs = produce_runs(events)
    hw = latest_hw(offset_series)
    by_part: dict[tuple, list[Row]] = defaultdict(list)
    for r in runs:
        by_part[partition_key(r)].append(r)
    best: dict[tuple, tuple] = {}
    for pk, rs in by_part.items():
        for x in rs:
            for y in rs:
                if not (x["broker_id"] < y["broker_id"] and x["leader_epoch"] != y["leader_epoch"]):
                    continue
                o = max(x["first_offset"], y["first_offset"])
                if o > min(x["last_offset"], y["last_offset"]):
                    continue
                hx, hy = hw.get(pk + (x["broker_id"],)), hw.get(pk + (y["broker_id"],))
                if hx is None or hy is None or not o < min(hx, hy):
                    continue
                below = [k[3] for k, v in refs.items() if k[:3] == pk and v[0] <= o]
                ce = max(below) if below else None
                xe, ye = x["leader_epoch"], y["leader_epoch"]
                if ce is not None and xe == ce and ye != ce:
                    fl, ot = y, x
                elif ce is not None and ye == ce and xe != ce:
                    fl, ot = x, y
                else:
                    fl, ot = (y, x) if ye < xe else (x, y)
                k = pk + (fl["broker_id"], fl["leader_epoch"])
                cand = (
                    o,
                    ot["broker_id"],
                    ot["leader_epoch"],
                    fl["first_event_id"],
                    ot["first_event_id"],
                    nulls_first(fl["first_time"]),
                    fl["first_time"],
                )
                if k not in best or cand[:6] < best[k][:6]:
                    best[k] = cand
    out = []
    for k, m in best.items():
        out.append(
            partition_violation(
                "epoch_start_offset_divergence",
                dict(cluster_id=k[0], topic=k[1], partition=k[2]),
                k[3],
                k[4],
                m[2],
                m[6],
                [m[3], m[4]],
                "different epochs at one offset below both high watermarks",
            )
        )
    return out


def check(events: list[Row], timeline: list[Row], config: RuleConfig | None = None) -> list[Row]:
    """All offset violations of one history (any number of clusters)."""
    held_epochs = broker_leader_epochs(events)
    offset_series = replica_offsets(events)
    refs = reference_starts(offset_series, epoch_leaders(held_epochs, timeline))
    return (
        high_watermark_regression(events, offset_series)
        + start_rule(offset_series, refs)
        + same_offset_rule(events, offset_series, refs)
    )
