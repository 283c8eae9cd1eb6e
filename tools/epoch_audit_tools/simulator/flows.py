"""Multi-step flows shared by benign episodes and fault injectors.

Restarts, leader moves and the victim pickers live here so that :mod:`episodes` and :mod:`faults`
both build on them without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable

from epoch_audit_tools.simulator.formats import kafka_text as kt
from epoch_audit_tools.simulator.kafka import KafkaSim
from epoch_audit_tools.simulator.model import Partition

SECOND_MS = 1000


def restart_candidates(sim: KafkaSim) -> list[int]:
    """Brokers whose loss leaves every partition with another ISR member (no accidental last-replica
    fencing) and, in ZK mode, that are not the active controller."""
    out = []
    for b, br in sorted(sim.brokers.items()):
        if not br.alive or br.fenced or br.retired:
            continue
        if not sim.kraft and b == sim.active:
            continue
        if all(len([r for r in p.state.isr if r != b and sim.eligible(r)]) >= 1
               for p in sim.live_parts() if b in p.state.isr):
            out.append(b)
    return out


def startup(sim: KafkaSim, t: int, b: int) -> None:
    """A fresh broker process logs its state for every hosted partition (current epochs)."""
    parts = [p for p in sim.live_parts() if b in p.state.replicas and p.replicas[b].hosted]
    if sim.kraft:
        sim.log_state_change(b, t, kt.kraft_transitioning(b, len(parts), False))
        for p in parts:
            sim.broker_transition(t, b, p, p.state, p.state.leader if p.state.leader >= 0 else None)


def restart(sim: KafkaSim, t0: int, b: int, clean: bool, down_s: int = 15,
            after_register: Callable[[int], None] | None = None,
            expand: Callable[[int, Partition], None] | None = None,
            skip_catch_up: set[str] = frozenset(), fence_keep: set[str] = frozenset()) -> int:
    """Restart ``b`` (controlled shutdown or crash) and bring it back into its ISRs.

    Returns the time the broker registered again. Hooks let fault injectors change one step.
    """
    br = sim.brokers[b]
    old_epoch = br.epoch
    if sim.kraft:
        if clean:
            sim.at(t0, lambda t: sim.kraft_controlled_shutdown(t, b))
            sim.at(t0 + 2 * SECOND_MS, lambda t: down_and_fence(sim, t, b, False, fence_keep))
        else:
            sim.at(t0, lambda t: crash(sim, t, b))
            sim.at(t0 + 6 * SECOND_MS, lambda t: sim.kraft_fence(t, b, keep_in_isr=fence_keep))
    else:
        if clean:
            sim.at(t0, lambda t: sim.zk_broker_down(t, b, controlled=True))
        else:
            sim.at(t0, lambda t: crash(sim, t, b))
            sim.at(t0 + 6 * SECOND_MS, lambda t: sim.zk_broker_down(t, b, controlled=False))
    t_reg = t0 + down_s * SECOND_MS

    def come_back(t: int) -> None:
        for p in sim.live_parts():
            if b in p.replicas:
                p.replicas[b].le = -1  # a fresh process remembers no leader epoch
        if sim.kraft:
            sim.kraft_register(t, b)
            startup(sim, t + 500, b)
        else:
            br.alive, br.fenced = True, False
            br.epoch = old_epoch + sim.rng.randint(1000, 5000)
            br.registrations += 1
            sim.known_controller_epoch[b] = 0
            parts = [p for p in sim.live_parts() if b in p.state.replicas]
            sim.zk_update_metadata(t + 200, len(sim.live_parts()))
            sim.zk_send_lai(t + 400, parts, {p.tp: p.state for p in parts}, only={b})
        if after_register is not None:
            after_register(t)

    sim.at(t_reg, come_back)
    if sim.kraft:
        sim.at(t_reg + 2 * SECOND_MS, lambda t: sim.kraft_unfence(t, b))
    sim.at(t_reg + 4 * SECOND_MS,
           lambda t: sim.catch_up(t, b, [p for p in sim.live_parts() if p.tp not in skip_catch_up]))

    def rejoin(t: int) -> None:
        for p in sim.live_parts():
            if b in p.state.replicas and b not in p.state.isr and p.replicas[b].hosted and p.state.leader >= 0:
                if expand is not None:
                    expand(t, p)
                elif p.tp not in skip_catch_up:
                    sim.expand_isr(t, p, b)
                t += 7

    sim.at(t_reg + 6 * SECOND_MS, rejoin)
    return t_reg


def crash(sim: KafkaSim, t: int, b: int) -> None:
    sim.brokers[b].alive = False
    sim.stats["crash"] += 1
    # followers of b's partitions notice the broken connection
    seen = set()
    for p in sim.live_parts():
        if p.state.leader == b:
            for f in p.state.isr:
                if f != b and f not in seen and sim.brokers[f].alive:
                    seen.add(f)
                    line, trace = kt.fetch_disconnected(f, b)
                    sim.log(f, "server.log", t + sim.jitter(100, 400), line, f"ReplicaFetcherThread-0-{b}", trace)


def down_and_fence(sim: KafkaSim, t: int, b: int, timeout: bool, keep: set[str]) -> None:
    sim.brokers[b].alive = False
    sim.kraft_fence(t, b, keep_in_isr=keep, session_timeout=timeout)


def pick_follower(sim: KafkaSim, min_leo: int = 0, min_le: int = 0) -> tuple[Partition, int] | None:
    """A live partition with a healthy ISR and an in-sync follower that can be picked on."""
    cands = []
    for p in sim.live_parts():
        s = p.state
        if s.leader < 0 or not sim.eligible(s.leader) or len(s.isr) < 3 or p.hold or p.leo < min_leo:
            continue
        for f in s.isr:
            rep = p.replicas[f]
            if f != s.leader and sim.eligible(f) and not rep.stopped and rep.le >= min_le:
                cands.append((p, f))
    if not cands:
        return None
    return cands[sim.rng.randrange(len(cands))]


def elect(sim: KafkaSim, t: int, p: Partition, new_leader: int) -> None:
    """Move leadership of ``p`` to ``new_leader`` (an ISR member); LE + 1 on every replica."""
    if sim.kraft:
        applied = sim.kraft_apply_changes(t, [], [(p, sim.change(p).set_leader(new_leader))])
        sim.brokers_apply(t + 20, applied)
    else:
        sim.zk_decide(t, p, sim.change(p).set_leader(new_leader))
        sim.zk_send_lai(t + 20, [p], {p.tp: p.state})


def bump_epoch(sim: KafkaSim, t: int, p: Partition) -> None:
    """Schedule a leader move of ``p`` to another ISR member at ``t``."""

    def go(tt: int) -> None:
        others = [r for r in p.state.isr if r != p.state.leader and sim.eligible(r)]
        if others:
            elect(sim, tt, p, others[0])

    sim.at(t, go)
