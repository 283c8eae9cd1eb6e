"""Benign episodes: what a healthy cluster does, including the look-alikes a checker must not flag.

Each episode runs inside its own time slot (``cfg.episode_slot_s``) so episodes never overlap,
and schedules its steps on the simulation queue. Produce traffic continues meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable

from epoch_audit_tools.simulator.flows import SECOND_MS, bump_epoch, pick_follower, restart, restart_candidates
from epoch_audit_tools.simulator.formats import kafka_text as kt
from epoch_audit_tools.simulator.formats import metadata as md
from epoch_audit_tools.simulator.kafka import KafkaSim
from epoch_audit_tools.simulator.model import Partition


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
                    sim.log_state_change(b, t + 20, kt.kraft_deleting(b, len(mine)))
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
    if not cands or not sim.kraft or not sim.version.at_least("3.5"):
        return unclean_restart(sim, t0)
    b = sim.rng.choice(cands)
    old = sim.brokers[b].epoch
    state = {"first": True}

    def expand(t: int, p: Partition) -> None:
        if state["first"]:
            state["first"] = False
            sim.kraft_expand_isr(t, p, b, sent_epoch=old)
            sim.at(t + 2 * SECOND_MS, lambda t2: sim.kraft_expand_isr(t2, p, b))
        else:
            sim.kraft_expand_isr(t, p, b)

    restart(sim, t0, b, clean=False, expand=expand)


def stale_stop_replica_refused(sim: KafkaSim, t0: int) -> None:
    """ZK: a reordered StopReplica older than the broker's LE is refused (S5, FENCED_LEADER_EPOCH)."""
    pick = pick_follower(sim)
    if pick is None:
        return
    p, b = pick
    e = p.state.le
    bump_epoch(sim, t0, p)
    sim.at(t0 + 2 * SECOND_MS, lambda t: sim.zk_stop_replica(t, b, p, e, False))


def sentinel_stop_replica(sim: KafkaSim, t0: int) -> None:
    """ZK: StopReplica with LE -1 (controller without leadership data) is accepted; then the broker is
    given its partition back with a LeaderAndIsr at a higher epoch."""
    pick = pick_follower(sim)
    if pick is None:
        return
    p, b = pick
    sim.at(t0, lambda t: _stop_and_hold(sim, t, b, p, -1))
    bump_epoch(sim, t0 + 3 * SECOND_MS, p)
    sim.at(t0 + 5 * SECOND_MS, lambda t: _release(sim, t, b, p))


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
