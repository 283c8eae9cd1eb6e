"""Redpanda mode: raft groups with terms, Seastar log lines (reference §7) and log wrappers (§8).

Each partition is a raft group of three nodes. Elections follow Raft: a candidate asks the others
for votes in term T+1, voters log the larger term they adopt, the old leader steps down, the
candidate logs ``becoming the leader term:T`` and ``became the leader term: T``.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from epoch_audit_tools.simulator.clock import Clocks, cri_ts, log4j_ts, parse_start, syslog_ts
from epoch_audit_tools.simulator.config import SimConfig
from epoch_audit_tools.simulator.sink import FileSink
from epoch_audit_tools.simulator.truth import Truth

TOPICS = ("orders", "payments", "user-events", "clicks")


def _node(n: int) -> str:
    """A raft vnode as printed up to v23.3: ``{id: {n}, revision: {45}}``."""
    return f"{{id: {{{n}}}, revision: {{45}}}}"


class Seastar:
    """``<LEVEL padded to 5> <ts> [shard <s>] raft - [group_id:G, {kafka/t/p}] <file>:<line> - <msg>``."""

    def __init__(self, with_group: bool) -> None:
        self.with_group = with_group

    def line(self, local_ms: int, level: str, shard: int, group: int, ntp: str, src: str, msg: str) -> str:
        """One raft line (no wrapper)."""
        sh = f"{shard}:main" if self.with_group else f"{shard}"
        return f"{level:<5} {log4j_ts(local_ms)} [shard {sh}] raft - [group_id:{group}, {{{ntp}}}] {src} - {msg}"


def run_redpanda(cfg: SimConfig, sink: FileSink, truth: Truth, rng: random.Random) -> tuple[Counter[str], dict[str, Any]]:
    """Simulate elections over ``cfg.hours``; returns (stats, manifest extras)."""
    stats: Counter[str] = Counter()
    clocks = Clocks(cfg.clock_skew_ms, random.Random(rng.getrandbits(64)))
    nodes = list(range(cfg.brokers))
    for n in nodes:
        clocks.skew(n)
    fmt = Seastar(with_group=rng.random() < 0.5)
    wrappers = {0: "compose", 1: "journald", 2: "cri"}
    t0 = parse_start(cfg.start)
    end = t0 + int(cfg.hours * 3600 * 1000)
    per, extra = divmod(cfg.partitions, len(TOPICS))
    groups = []
    g = 0
    for ti, topic in enumerate(TOPICS):
        for i in range(per + (1 if ti < extra else 0)):
            reps = [(g + k) % len(nodes) for k in range(3)]
            groups.append({"topic": topic, "partition": i, "group": g + 1, "replicas": reps, "term": 0,
                           "leader": None, "shard": g % 4, "node_term": {r: 0 for r in reps},
                           "logged_term": {r: 0 for r in reps}})
            g += 1

    def write(n: int, t: int, level: str, grp: dict[str, Any], src: str, msg: str) -> int:
        lt = clocks.local(n, t)
        ntp = f"kafka/{grp['topic']}/{grp['partition']}"
        text = fmt.line(lt, level, grp["shard"], grp["group"], ntp, src, msg)
        w = wrappers.get(n)
        if w == "compose":
            text = f"redpanda-{n}  | " + text
        elif w == "journald":
            text = f"{syslog_ts(lt)} redpanda-{n} rpk[4242]: " + text
        elif w == "cri":
            text = f"{cri_ts(lt, 123)} stderr F " + text
        sink.log(f"cluster={cfg.cluster_id}/broker-{n}/redpanda.log", lt, text + "\n")
        stats["line:redpanda.log"] += 1
        return lt

    def elect(t: int, grp: dict[str, Any], cand: int, claim_only: bool = False) -> int:
        """``cand`` wins term+1; returns its logged time of ``became the leader``."""
        term = grp["term"] + 1
        for v in grp["replicas"]:
            if v == cand:
                continue
            write(cand, t, "INFO", grp, "vote_stm.cc:52", f"Sending vote request to {_node(v)} with timeout 1500ms")
            if not claim_only:
                cur = grp["node_term"][v]
                write(v, t + 3, "INFO", grp, "consensus.cc:1867",
                      f"Received vote request with larger term from node {_node(cand)}, received {term}, current {cur}")
                grp["node_term"][v] = term
                grp["logged_term"][v] = max(grp["logged_term"][v], cur)
                if grp["leader"] == v:
                    write(v, t + 4, "INFO", grp, "consensus.cc:2904",
                          f"[candidate_term_greater] Stepping down as leader in term {cur}, dirty offset {5000 + term}")
            write(cand, t + 6, "INFO", grp, "vote_stm.cc:77",
                  f"vote reply from {_node(v)} - {{term:{{{term}}}, target_node_id{_node(cand)}, vote_granted: 1, log_ok:1}}")
        write(cand, t + 8, "INFO", grp, "vote_stm.cc:265", f"becoming the leader term:{term}")
        lt = write(cand, t + 15, "INFO", grp, "vote_stm.cc:280", f"became the leader term: {term}")
        grp["node_term"][cand] = term
        grp["logged_term"][cand] = max(grp["logged_term"][cand], term)
        if not claim_only:
            grp["term"], grp["leader"] = term, cand
        stats["election"] += 1
        return lt

    for grp in groups:
        elect(t0 + rng.randint(1000, 5000), grp, grp["replicas"][0])
    # a stream of leadership transfers / elections in time order
    t = t0 + 60_000
    step = max(2000, int(3600_000 / max(1.0, cfg.produce_rate * 10)))
    faults = dict(cfg.fault_rates)
    fault_times: list[tuple[int, str]] = []
    for name, rate in sorted(faults.items()):
        for k in range(max(1, round(rate * cfg.hours))):
            fault_times.append((t0 + 120_000 + rng.randint(0, max(1, end - t0 - 240_000)), f"{name}:{k}"))
    fault_times.sort()
    # Faults run at their scheduled time, between elections: with a long election step (low
    # produce rate) a fault scheduled after the last election tick must still be injected.
    next_elect = t
    while t < end:
        while fault_times and fault_times[0][0] <= t:
            _, name = fault_times.pop(0)
            grp = groups[rng.randrange(len(groups))]
            if name.startswith("two_leaders_same_epoch"):
                # the old leader misses the new term and re-claims it 3 s later (after granting its vote)
                first = grp["leader"]
                cand = next(r for r in grp["replicas"] if r != first)
                lt1 = elect(t, grp, cand)
                lt2 = write(first, t + 3000, "INFO", grp, "vote_stm.cc:265", f"becoming the leader term:{grp['term']}")
                lt2 = write(first, t + 3010, "INFO", grp, "vote_stm.cc:280", f"became the leader term: {grp['term']}")
                grp["logged_term"][first] = max(grp["logged_term"][first], grp["term"])
                conf = truth.confidence(lt1, lt2) or "suspected"
                truth.add("two_leaders_same_epoch", grp["topic"], grp["partition"], first, grp["term"],
                          f"node {first} became leader of {grp['topic']}/{grp['partition']} in term {grp['term']} "
                          f"already won by node {cand}", conf)
                elect(t + 6000, grp, cand)
            elif name.startswith("leader_epoch_regression"):
                # the regression must go below a term the node itself logged as its current term
                # (spec: leader lines, the "current N" of a received vote request, ...), not below
                # the candidate's "received N" it adopted silently
                # (a follower of the drawn group or the next one that has such a term; early in a
                # run only leaders have one: then the leader restarts and loses its leadership)
                gi = groups.index(grp)
                ring = groups[gi:] + groups[:gi]
                held = [(h, r) for h in ring for r in h["replicas"] if r != h["leader"] and h["logged_term"][r] >= 1]
                held += [(h, h["leader"]) for h in ring if h["leader"] is not None and h["logged_term"][h["leader"]] >= 1]
                if held:
                    grp, n = held[0]
                    had = grp["logged_term"][n]
                    write(n, t, "INFO", grp, "consensus.cc:1290",
                          f"Recovered persistent state from kvstore: voted for: {_node(grp['leader'])}, term: {had - 1}")
                    if grp["leader"] == n:
                        grp["leader"] = None
                    truth.add("leader_epoch_regression", grp["topic"], grp["partition"], n, had - 1,
                              f"node {n} recovered term {had - 1} for {grp['topic']}/{grp['partition']} after {had}")
                    elect(t + 2000, grp, n)
            t += 10_000
        if t >= next_elect:
            grp = groups[rng.randrange(len(groups))]
            cand = rng.choice([r for r in grp["replicas"] if r != grp["leader"]])
            elect(t, grp, cand)
            next_elect = t + step
        t = max(t, min(next_elect, fault_times[0][0]) if fault_times else next_elect)
    return stats, {"clock_skews_ms": {str(n): clocks.skew(n) for n in nodes}}
