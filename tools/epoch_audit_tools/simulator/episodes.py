"""Benign episodes: what a healthy cluster does, including the look-alikes a checker must not flag.

Each episode runs inside its own time slot (``cfg.episode_slot_s``) so episodes never overlap,
and schedules its steps on the simulation queue. Produce traffic continues meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable

from epoch_audit_tools.simulator.formats import kafka_text as kt
from epoch_audit_tools.simulator.formats import metadata as md
from epoch_audit_tools.simulator.kafka import KafkaSim
from epoch_audit_tools.simulator.model import Partition

S = 1000  # ms per second


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
        sim.sc(b, t, kt.kraft_transitioning(b, len(parts), False))
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
            sim.at(t0 + 2 * S, lambda t: _down_and_fence(sim, t, b, False, fence_keep))
        else:
            sim.at(t0, lambda t: _crash(sim, t, b))
            sim.at(t0 + 6 * S, lambda t: sim.kraft_fence(t, b, keep_in_isr=fence_keep))
    else:
        if clean:
            sim.at(t0, lambda t: sim.zk_broker_down(t, b, controlled=True))
        else:
            sim.at(t0, lambda t: _crash(sim, t, b))
            sim.at(t0 + 6 * S, lambda t: sim.zk_broker_down(t, b, controlled=False))
    t_reg = t0 + down_s * S

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
            sim.known_ce[b] = 0
            parts = [p for p in sim.live_parts() if b in p.state.replicas]
            sim.zk_update_metadata(t + 200, len(sim.live_parts()))
            sim.zk_send_lai(t + 400, parts, {p.tp: p.state for p in parts}, only={b})
        if after_register is not None:
            after_register(t)

    sim.at(t_reg, come_back)
    if sim.kraft:
        sim.at(t_reg + 2 * S, lambda t: sim.kraft_unfence(t, b))
    sim.at(t_reg + 4 * S, lambda t: sim.catch_up(t, b, [p for p in sim.live_parts() if p.tp not in skip_catch_up]))

    def rejoin(t: int) -> None:
        for p in sim.live_parts():
            if b in p.state.replicas and b not in p.state.isr and p.replicas[b].hosted and p.state.leader >= 0:
                if expand is not None:
                    expand(t, p)
                elif p.tp not in skip_catch_up:
                    sim.expand_isr(t, p, b)
                t += 7

    sim.at(t_reg + 6 * S, rejoin)
    return t_reg


def _crash(sim: KafkaSim, t: int, b: int) -> None:
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


def _down_and_fence(sim: KafkaSim, t: int, b: int, timeout: bool, keep: set[str]) -> None:
    sim.brokers[b].alive = False
    sim.kraft_fence(t, b, keep_in_isr=keep, session_timeout=timeout)


def failover(sim: KafkaSim, t0: int) -> None:
    """Controller failover (KRaft quorum leader change; ZK controller moves to another broker)."""
    if sim.kraft:
        sim.at(t0, sim.kraft_failover)
        return

    def go(t: int) -> None:
        cands = [b for b in sorted(sim.brokers) if b != sim.active and sim.brokers[b].alive]
        sim.zk_elect_controller(t, cands[0])
        sim.zk_update_metadata(t + 300, len(sim.live_parts()))

    sim.at(t0, go)


def delete_topic(sim: KafkaSim, t0: int, topic: str = "clicks") -> None:
    """Topic deletion: KRaft RemoveTopicRecord; ZK StopReplica with the -2 sentinel (never a violation)."""

    def go(t: int) -> None:
        parts = [p for p in sim.live_parts() if p.topic == topic]
        if not parts:
            return
        if sim.kraft:
            sim.kraft_commit(t, [md.remove_topic_record(parts[0].topic_id)], [{"topic": topic}])
            for b in sorted(sim.brokers):
                mine = [p.tp for p in parts if b in p.state.replicas]
                if mine and sim.brokers[b].alive:
                    sim.sc(b, t + 20, kt.kraft_deleting(b, len(mine)))
                    sim.log(b, "server.log", t + 21, kt.removed_fetcher(b, mine), "kafka-metadata-loader")
        else:
            for p in parts:
                for r in p.state.replicas:
                    if sim.brokers[r].alive:
                        sim.zk_stop_replica(t, r, p, -2, True)
        for p in parts:
            p.deleted = True
            for r, rep in p.replicas.items():
                rep.hosted = False
                if rep.dump_started:
                    sim.deleted_dumps.append(sim.dump_rel(r, p))
        sim.stats["topic_deletion"] += 1

    sim.at(t0, go)


def clean_restart(sim: KafkaSim, t0: int) -> None:
    """Controlled shutdown and restart. ZK: equal-epoch StopReplicas (S6 on <=3.4.0, accepted after)
    and one StopReplica with the -1 sentinel."""
    cands = restart_candidates(sim)
    if not cands:
        return
    b = sim.rng.choice(cands)
    restart(sim, t0, b, clean=True)


def unclean_restart(sim: KafkaSim, t0: int) -> None:
    """Crash, session timeout / ZK session expiry, re-registration with a new broker epoch."""
    cands = restart_candidates(sim)
    if not cands:
        return
    b = sim.rng.choice(cands)
    restart(sim, t0, b, clean=False)


def ineligible_rejection(sim: KafkaSim, t0: int) -> None:
    """KIP-903 working: the first AlterPartition carries the old incarnation's epoch and is rejected
    (INELIGIBLE_REPLICA); the replica joins after a fetch of its new incarnation."""
    cands = restart_candidates(sim)
    if not cands or not sim.kraft or not sim.v.at_least("3.5"):
        return unclean_restart(sim, t0)
    b = sim.rng.choice(cands)
    old = sim.brokers[b].epoch
    state = {"first": True}

    def expand(t: int, p: Partition) -> None:
        if state["first"]:
            state["first"] = False
            sim.kraft_expand_isr(t, p, b, sent_epoch=old)
            sim.at(t + 2 * S, lambda t2: sim.kraft_expand_isr(t2, p, b))
        else:
            sim.kraft_expand_isr(t, p, b)

    restart(sim, t0, b, clean=False, expand=expand)


def stale_stop_replica_refused(sim: KafkaSim, t0: int) -> None:
    """ZK: a reordered StopReplica older than the broker's LE is refused (S5, FENCED_LEADER_EPOCH)."""
    from epoch_audit_tools.simulator.faults import bump_epoch, pick_follower

    pick = pick_follower(sim)
    if pick is None:
        return
    p, b = pick
    e = p.state.le
    bump_epoch(sim, t0, p)
    sim.at(t0 + 2 * S, lambda t: sim.zk_stop_replica(t, b, p, e, False))


def sentinel_stop_replica(sim: KafkaSim, t0: int) -> None:
    """ZK: StopReplica with LE -1 (controller without leadership data) is accepted; then the broker is
    given its partition back with a LeaderAndIsr at a higher epoch."""
    from epoch_audit_tools.simulator.faults import bump_epoch, pick_follower

    pick = pick_follower(sim)
    if pick is None:
        return
    p, b = pick
    sim.at(t0, lambda t: _stop_and_hold(sim, t, b, p, -1))
    bump_epoch(sim, t0 + 3 * S, p)
    sim.at(t0 + 5 * S, lambda t: _release(sim, t, b, p))


def _stop_and_hold(sim: KafkaSim, t: int, b: int, p: Partition, le: int, force: bool = False) -> None:
    if sim.zk_stop_replica(t, b, p, le, False, force_accept=force):
        p.replicas[b].stopped = True


def _release(sim: KafkaSim, t: int, b: int, p: Partition) -> None:
    p.replicas[b].stopped = False
    sim.catch_up(t, b, [p])


BENIGN: dict[str, tuple[tuple[str, ...], Callable[[KafkaSim, int], None]]] = {
    "clean_restart": (("kafka-zk", "kafka-kraft"), clean_restart),
    "unclean_restart": (("kafka-zk", "kafka-kraft"), unclean_restart),
    "controller_failover": (("kafka-zk", "kafka-kraft"), failover),
    "ineligible_replica_rejected": (("kafka-kraft",), ineligible_rejection),
    "stale_stop_replica_refused": (("kafka-zk",), stale_stop_replica_refused),
    "sentinel_stop_replica": (("kafka-zk",), sentinel_stop_replica),
}
