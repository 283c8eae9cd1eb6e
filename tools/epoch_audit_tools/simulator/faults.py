"""Fault injectors: each breaks exactly one step of a normal flow and records the ground truth.

An injector ``(sim, t0) -> None`` schedules its steps in its own time slot. The truth row is added
in the same step that writes the proving lines, with the confidence a checker can reach from the
logged (skewed) times. If the preconditions are not met (no suitable partition), nothing is
injected and no truth is recorded.
"""

from __future__ import annotations

from collections.abc import Callable

from epoch_audit_tools.simulator.flows import SECOND_MS, bump_epoch, elect, pick_follower, restart, restart_candidates
from epoch_audit_tools.simulator.formats import kafka_text as kt
from epoch_audit_tools.simulator.formats import request_log as rl
from epoch_audit_tools.simulator.kafka import KafkaSim
from epoch_audit_tools.simulator.model import Partition, PartitionChange, PState


def fenced_leader_write(sim: KafkaSim, t: int, p: Partition, ld: int, epoch: int, count: int,
                        to_dump: bool) -> list[int]:
    """Deposed leader ``ld`` keeps answering PRODUCE with error 0 (acks=1, HW frozen); returns logged times."""
    rep = p.replicas[ld]
    times = []
    base = rep.leo
    for i in range(count):
        tt = t + i * 700
        batch = sim.make_batch(tt, p, epoch, base)
        if to_dump:
            sim.append(ld, p, batch)
        base = batch.last + 1
        req, resp = rl.produce(sim.version, p.topic, p.index, batch.size, 0, batch.base, acks=1)
        times.append(sim.log_request(ld, tt, rl.completed(sim.version, "PRODUCE", sim.next_corr(-ld), f"{p.topic}-producer-2",
                                                  req, resp, sim.conn(ld, 201), 0.7)))
    return times


# ------------------------------------------------------------------------- ZK-only faults
def stale_stop_replica_accepted(sim: KafkaSim, t0: int) -> None:
    """A StopReplica sent at LE e is delivered after the broker accepted e+1, and is accepted."""
    pick = pick_follower(sim)
    if pick is None:
        return
    p, b = pick
    e = p.state.le
    bump_epoch(sim, t0, p)

    def deliver(t: int) -> None:
        if p.replicas[b].le <= e:
            return
        if sim.zk_stop_replica(t, b, p, e, False, force_accept=True):
            p.replicas[b].stopped = True
            sim.truth.add("stale_stop_replica_accepted", p.topic, p.index, b, e,
                          f"broker {b} accepted StopReplica for {p.tp} at leader epoch {e} after it had accepted "
                          f"leader epoch {p.replicas[b].le}")

    def release(t: int) -> None:
        p.replicas[b].stopped = False
        others = [r for r in p.state.isr if r != p.state.leader and sim.eligible(r)]
        if others:
            elect(sim, t, p, others[0])
        sim.at(t + SECOND_MS, lambda t2: sim.catch_up(t2, b, [p]))

    sim.at(t0 + 2 * SECOND_MS, deliver)
    sim.at(t0 + 8 * SECOND_MS, release)


def stale_controller_epoch_accepted(sim: KafkaSim, t0: int) -> None:
    """After a controller failover, the old (zombie) controller's LeaderAndIsr is applied by a broker."""
    pick = pick_follower(sim)
    if pick is None:
        return
    p, b = pick
    old_c, old_ce = sim.active, sim.controller_epoch

    def failover(t: int) -> None:
        cands = [x for x in sorted(sim.brokers) if x != sim.active and sim.brokers[x].alive]
        sim.zk_elect_controller(t, cands[0])
        sim.zk_update_metadata(t + 300, len(sim.live_parts()))

    def zombie(t: int) -> None:
        if sim.known_controller_epoch[b] <= old_ce:
            return
        p.hold = True
        new = sim.zk_decide(t, p, sim.change(p, controller_isr_removal=True).set_isr(p.state.isr),
                            removed=None, controller=old_c, ce=old_ce)
        acc = sim.zk_send_lai(t + 20, [p], {p.tp: new}, only={b}, controller=old_c, ce=old_ce, force_accept=True)
        if acc:
            sim.truth.add("stale_controller_epoch_accepted", p.topic, p.index, b, new.le,
                          f"broker {b} applied LeaderAndIsr for {p.tp} (leader epoch {new.le}) from controller "
                          f"{old_c} epoch {old_ce} after seeing controller epoch {sim.known_controller_epoch[b]}")

    def heal(t: int) -> None:
        p.hold = False
        others = [r for r in p.state.isr if r != p.state.leader and sim.eligible(r)]
        if others:
            elect(sim, t, p, others[0])

    sim.at(t0, failover)
    sim.at(t0 + 3 * SECOND_MS, zombie)
    sim.at(t0 + 6 * SECOND_MS, heal)


# ------------------------------------------------------------------------- KRaft-only faults
def stale_broker_epoch_isr_join(sim: KafkaSim, t0: int) -> None:
    """KAFKA-14139. Alternates the two rules: (2) join right after re-registration with no fetch of the
    new incarnation; (1, 3.5+) join whose AlterPartition carries the old broker epoch."""
    cands = restart_candidates(sim)
    parts = [(p, f) for p in sim.live_parts() for f in p.state.isr
             if f in cands and f != p.state.leader and len(p.state.isr) >= 3 and not p.hold
             and p.replicas[f].last_fetch_epoch == sim.brokers[f].epoch]
    if not parts:
        return
    p, r = parts[sim.rng.randrange(len(parts))]
    n = sim.stats["fault:stale_broker_epoch_isr_join"]
    sim.stats["fault:stale_broker_epoch_isr_join"] += 1
    rule1 = sim.version.at_least("3.5") and n % 2 == 1
    old_epoch = sim.brokers[r].epoch

    def join(t: int, q: Partition) -> None:
        if q is not p:
            sim.kraft_expand_isr(t, q, r)
            return
        sent = old_epoch if rule1 else -1
        if sim.kraft_expand_isr(t, q, r, sent_epoch=sent, accept=True):
            rule = "1 (newIsrWithEpochs carries the old broker epoch)" if rule1 else (
                "2 (no caught-up fetch of the new incarnation before the join)")
            sim.truth.add("stale_broker_epoch_isr_join", p.topic, p.index, r, q.state.le,
                          f"replica {r} joined the ISR of {p.tp} on stale evidence, rule {rule}")
            if not rule1:
                sim.at(t + 3 * SECOND_MS, lambda t2: sim.catch_up(t2, r, [p]))

    restart(sim, t0, r, clean=False, expand=join, skip_catch_up=set() if rule1 else {p.tp})
    if not rule1:
        # rule 2 needs the new incarnation to join before any fetch for p: expand it early
        sim.at(t0 + 15 * SECOND_MS + 3 * SECOND_MS, lambda t: join(t, p))


def fenced_replica_in_isr(sim: KafkaSim, t0: int) -> None:
    """The fence batch of a crashed broker forgets to remove it from one partition's ISR."""
    cands = restart_candidates(sim)
    parts = [(p, f) for p in sim.live_parts() for f in p.state.isr
             if f in cands and f != p.state.leader and len(p.state.isr) >= 3 and not p.hold]
    if not parts:
        return
    p, b = parts[sim.rng.randrange(len(parts))]

    def check(t: int) -> None:
        if b in p.state.isr and sim.brokers[b].fenced:
            sim.truth.add("fenced_replica_in_isr", p.topic, p.index, b, p.state.le,
                          f"broker {b} stayed in the ISR of {p.tp} in the batch that fenced it")
            applied = sim.kraft_apply_changes(t, [], [(p, sim.change(p).set_isr(
                tuple(x for x in p.state.isr if x != b)))])
            sim.brokers_apply(t + 20, applied)

    restart(sim, t0, b, clean=False, fence_keep={p.tp})
    sim.at(t0 + 9 * SECOND_MS, check)


def last_replica_fenced_in_isr(sim: KafkaSim, t0: int) -> None:
    """The ISR shrinks to the leader alone, then the leader is fenced: it stays the only ISR member."""
    cands = restart_candidates(sim)
    parts = [p for p in sim.live_parts() if p.state.leader in cands and len(p.state.isr) >= 2 and not p.hold]
    if not parts:
        return
    p = parts[sim.rng.randrange(len(parts))]
    ld = p.state.leader

    def shrink(t: int) -> None:
        s = p.state
        out = [x for x in s.isr if x != ld]
        lrep = p.replicas[ld]
        sim.log(ld, "server.log", t, kt.isr_shrink(sim.version, p.tp, ld, s.isr, (ld,), lrep.hw, lrep.leo,
                                                   [(x, p.replicas[x].leo, sim.local(ld, t) - 30000) for x in out]),
                "kafka-scheduler-2")
        epochs = [(ld, sim.brokers[ld].epoch if sim.version.at_least("3.5") else -1)]
        applied = sim.kraft_apply_changes(t + 5, [], [(p, sim.change(p).set_isr((ld,)))])
        new = applied[0][2]
        req, resp = rl.alter_partition(sim.version, ld, sim.brokers[ld].epoch, p.topic, p.topic_id, p.index, s.le, epochs,
                                       s.pe, 0, new.le, new.isr, new.pe)
        sim.log_request(sim.active, t + 7, rl.completed(sim.version, "ALTER_PARTITION", sim.next_corr(ld + 500), str(ld), req, resp,
                                                sim.conn(sim.active, ld), 2.0, "CONTROLLER"))
        sim.log(ld, "server.log", t + 15, kt.isr_updated(sim.version, p.tp, ld, new.isr, new.pe), "kafka-scheduler-2")
        sim.brokers_apply(t + 20, applied, skip={ld} if new.le == s.le else set())

    def check(t: int) -> None:
        if p.state.isr == (ld,) and sim.brokers[ld].fenced:
            sim.truth.add("last_replica_fenced_in_isr", p.topic, p.index, ld, p.state.le,
                          f"broker {ld}, the only ISR member of {p.tp}, was fenced and kept in the ISR")

    def reelect(t: int) -> None:
        if p.state.leader < 0 and p.state.isr == (ld,) and sim.eligible(ld):
            applied = sim.kraft_apply_changes(t, [], [(p, sim.change(p).set_leader(ld))])
            sim.brokers_apply(t + 20, applied)
            followers = [r for r in p.state.replicas if r != ld and sim.eligible(r)]
            for i, r in enumerate(followers):
                sim.at(t + 2 * SECOND_MS + i * 100, lambda t2, r=r: sim.catch_up(t2, r, [p]))
                sim.at(t + 4 * SECOND_MS + i * 100, lambda t2, r=r: sim.kraft_expand_isr(t2, p, r))

    sim.at(t0, shrink)
    restart(sim, t0 + 2 * SECOND_MS, ld, clean=False)
    sim.at(t0 + 9 * SECOND_MS, check)
    # the unfence of the restart is at t0 + 2 s + 15 s + 2 s; the leader comes back right after
    sim.at(t0 + 19 * SECOND_MS + 500, reelect)


# ------------------------------------------------------------------------- both Kafka modes
def write_accepted_by_fenced_leader(sim: KafkaSim, t0: int) -> None:
    """An isolated leader keeps appending after leadership moved. Variants alternate: (a) it stays down,
    its segment dump keeps the stale batches (offset rule + time rule); (b) it comes back and truncates,
    only the request log shows it; (c) like (b) with a single produce inside the skew tolerance."""
    n = sim.stats["fault:write_accepted_by_fenced_leader"]
    sim.stats["fault:write_accepted_by_fenced_leader"] += 1
    variant = "abc"[n % 3]
    cands = restart_candidates(sim)
    parts = [p for p in sim.live_parts() if p.state.leader in cands and len(p.state.isr) >= 3 and p.leo > 0
             and not p.hold]
    if not parts:
        return
    p = parts[sim.rng.randrange(len(parts))]
    ld = p.state.leader
    e = p.state.le
    br = sim.brokers[ld]

    def isolate(t: int) -> None:
        # the leader loses the controller (session) but still serves its clients
        if sim.kraft:
            br.alive = False
            sim.kraft_fence(t, ld)
            move_t = sim.local(sim.active, t)
        else:
            br.alive = False
            sim.zk_broker_down(t, ld, controlled=False)
            move_t = sim.local(sim.active, t)
        p.hold = True
        br.alive = True
        if variant == "c":
            # one produce just after the move, inside the tolerance as the logs show it
            gap = sim.cfg.max_clock_skew_ms // 2
            tt = t + gap - (sim.local(ld, t) - move_t)
            times = fenced_leader_write(sim, max(tt, t + 1), p, ld, e, 1, False)
        else:
            times = fenced_leader_write(sim, t + 2 * SECOND_MS, p, ld, e, 4, variant == "a")
        br.alive = False
        p.hold = False
        conf = None
        for lt in times:
            c = sim.truth.confidence(move_t, lt)
            if c == "confirmed" or (c == "suspected" and conf is None):
                conf = c
        if conf is not None:
            sim.truth.add("write_accepted_by_fenced_leader", p.topic, p.index, ld, e,
                          f"broker {ld} appended to {p.tp} at leader epoch {e} after leadership moved "
                          f"(variant {variant})", conf)
        if variant == "a":
            br.retired = True

    sim.at(t0, isolate)
    if variant != "a":
        def come_back(t: int) -> None:
            br.alive = True
            br.fenced = True

        # (b)/(c): the broker restarts and truncates its stale suffix (never written to its dump)
        sim.at(t0 + 10 * SECOND_MS, come_back)
        restart(sim, t0 + 11 * SECOND_MS, ld, clean=False, down_s=8)


def leader_epoch_regression(sim: KafkaSim, t0: int) -> None:
    """ZK: a reordered LeaderAndIsr at an older epoch (same controller) is accepted. KRaft: a broker
    restarting from a stale metadata image logs an older epoch before the current one."""
    pick = pick_follower(sim, min_le=1 if sim.kraft else 0)
    if pick is None:
        return
    p, b = pick
    if sim.kraft:
        had_le = p.replicas[b].le
        if had_le < 1:
            return
        # remember the epoch it held before going down (restart() resets the in-memory value)
        def replay(t: int) -> None:
            s = p.state
            sim.log_state_change(b, t, kt.follower_line(sim.version, b, p.tp, had_le - 1, p.replicas[b].leo, s.pe, p.replicas[b].hw,
                                          s.leader, None, -1))
            sim.truth.add("leader_epoch_regression", p.topic, p.index, b, had_le - 1,
                          f"broker {b} replayed a stale metadata image and logged leader epoch {had_le - 1} for "
                          f"{p.tp} after {had_le}")

        restart(sim, t0, b, clean=True, after_register=lambda t: sim.at(t + 200, replay))
        return
    e = p.state.le
    old_state = p.state
    bump_epoch(sim, t0, p)

    def reorder(t: int) -> None:
        if p.replicas[b].le <= e:
            return
        had = p.replicas[b].le
        acc = sim.zk_send_lai(t, [p], {p.tp: old_state}, only={b}, force_accept=True)
        if acc:
            sim.truth.add("leader_epoch_regression", p.topic, p.index, b, e,
                          f"broker {b} accepted a reordered LeaderAndIsr for {p.tp} at leader epoch {e} after {had}")

    sim.at(t0 + 2 * SECOND_MS, reorder)
    bump_epoch(sim, t0 + 5 * SECOND_MS, p)


def two_leaders_same_epoch(sim: KafkaSim, t0: int) -> None:
    """ZK: zombie controller elects X at e+1 just after failover while the new controller elects Y at
    e+1. KRaft: a replica logs leadership of an epoch the controller gave to another broker."""
    pick = pick_follower(sim)
    if pick is None:
        return
    p, x = pick
    if sim.kraft:
        others = [r for r in p.state.isr if r not in (x, p.state.leader) and sim.eligible(r)]
        if not others:
            return
        y = others[0]

        def legit(t: int) -> None:
            elect(sim, t, p, y)

        def bogus(t: int) -> None:
            s = p.state
            if s.leader != y:
                return
            rep = p.replicas[x]
            y_logged = sim.local(y, t - 3 * SECOND_MS + 60)
            lt = sim.log_state_change(x, t, kt.leader_line(sim.version, x, p.tp, p.topic_id, s.le, rep.leo, s.pe, rep.hw, s.isr, None,
                                             s.le))
            conf = sim.truth.confidence(y_logged, lt) or "suspected"
            sim.truth.add("two_leaders_same_epoch", p.topic, p.index, x, s.le,
                          f"broker {x} claimed leadership of {p.tp} in leader epoch {s.le}, already led by {y}", conf)
            sim.at(t + 300, lambda t2: sim.broker_transition(t2, x, p, p.state, y))

        sim.at(t0, legit)
        sim.at(t0 + 3 * SECOND_MS, bogus)
        return
    # ZK zombie race
    others = [r for r in p.state.isr if r not in (x, p.state.leader) and sim.eligible(r)]
    if not others:
        return
    y = others[0]
    old_c, old_ce = sim.active, sim.controller_epoch

    def new_controller(t: int) -> None:
        p.hold = True
        cands = [c for c in sorted(sim.brokers) if c != sim.active and sim.brokers[c].alive]
        sim.zk_elect_controller(t, cands[0])

    def zombie(t: int) -> None:
        sim.zk_decide(t, p, sim.change(p).set_leader(x), controller=old_c, ce=old_ce)
        sim.zk_send_lai(t + 20, [p], {p.tp: p.state}, only={x}, controller=old_c, ce=old_ce)
        state["x_logged"] = sim.local(x, t + 60)

    def legit(t: int) -> None:
        sim.zk_update_metadata(t, len(sim.live_parts()))
        base = p.state
        pre = PState(base.leader, base.le - 1, base.pe - 1, base.isr, base.replicas)
        new = PartitionChange(pre, False).set_leader(y).build()
        sim.log_state_change(sim.active, t + 100, kt.ctl_changed_partition(sim.version, sim.active, sim.controller_epoch, p.tp, "OnlinePartition",
                                                              "OnlinePartition", kt.api_leader_and_isr(
                                                                  sim.version, y, new.le, new.isr, new.pe)))
        p.state = new
        sim.zk_send_lai(t + 150, [p], {p.tp: new})
        y_logged = sim.local(y, t + 150)
        conf = sim.truth.confidence(state["x_logged"], y_logged) or "suspected"
        sim.truth.add("two_leaders_same_epoch", p.topic, p.index, y, new.le,
                      f"brokers {x} (zombie controller {old_c}) and {y} (controller {sim.active}) both led {p.tp} in "
                      f"leader epoch {new.le}", conf)

    def heal(t: int) -> None:
        p.hold = False
        if sim.eligible(x):
            elect(sim, t, p, x)

    state: dict[str, int] = {}
    sim.at(t0, new_controller)
    sim.at(t0 + 100, zombie)
    sim.at(t0 + 2 * SECOND_MS, legit)
    sim.at(t0 + 5 * SECOND_MS, heal)


def high_watermark_regression(sim: KafkaSim, t0: int) -> None:
    """Alternates: (a) a broker's own Leader line reports a lower HW than its previous one;
    (b) a replication-offset-checkpoint copy holds a lower HW than the previous copy."""
    n = sim.stats["fault:high_watermark_regression"]
    sim.stats["fault:high_watermark_regression"] += 1
    if n % 2 == 1:
        cands = [(b, tp, hw) for (b, tp), hw in sorted(sim.last_checkpoint_hw.items())
                 if hw > 1 and sim.brokers[b].alive and any(p.tp == tp and not p.deleted for p in sim.parts)]
        if not cands:
            return
        b, tp, hw = cands[sim.rng.randrange(len(cands))]

        def dip(t: int) -> None:
            p = next(q for q in sim.parts if q.tp == tp)
            low = max(0, min(hw, p.replicas[b].hw) - sim.rng.randint(1, 5))
            if not sim.brokers[b].alive or low >= sim.last_checkpoint_hw.get((b, tp), -1):
                return
            sim.checkpoint_copy(t, b, dip=(tp, low))
            sim.truth.add("high_watermark_regression", p.topic, p.index, b, None,
                          f"broker {b}'s replication-offset-checkpoint copy shows {tp} at {low} after "
                          f"{hw}")

        sim.at(t0 + 1000, dip)
        return
    pick = pick_follower(sim, min_leo=10)
    if pick is None:
        return
    p, b = pick
    first = p.state.leader

    def second(t: int) -> None:
        if p.state.leader == b and sim.eligible(first) and first in p.state.isr:
            elect(sim, t, p, first)

    def third(t: int) -> None:
        rep = p.replicas[b]
        if p.state.leader != first or b not in p.state.isr or rep.last_leader_hw < 1 or not sim.eligible(b):
            return
        low = rep.last_leader_hw - sim.rng.randint(1, min(5, rep.last_leader_hw))
        prev = rep.last_leader_hw
        applied = (sim.kraft_apply_changes(t, [], [(p, sim.change(p).set_leader(b))]) if sim.kraft else None)
        if not sim.kraft:
            sim.zk_decide(t, p, sim.change(p).set_leader(b))
        s = p.state
        sim.log_state_change(b, t + 20, kt.leader_line(sim.version, b, p.tp, p.topic_id, s.le, rep.leo, s.pe, low, s.isr, first, rep.le))
        rep.assign_epoch(s.le, rep.leo)
        rep.led_epochs.add(s.le)
        rep.le = s.le
        rep.last_leader_hw = low
        rep.leader_since = t + 20
        sim.truth.add("high_watermark_regression", p.topic, p.index, b, s.le,
                      f"broker {b}'s Leader line for {p.tp} at epoch {s.le} reports high watermark {low} after {prev}")
        if sim.kraft and applied is not None:
            sim.brokers_apply(t + 20, applied, skip={b})
        else:
            sim.zk_send_lai(t + 20, [p], {p.tp: s}, only={r for r in s.replicas if r != b})

    sim.at(t0, lambda t: elect(sim, t, p, b))
    sim.at(t0 + 10 * SECOND_MS, second)
    sim.at(t0 + 20 * SECOND_MS, third)


def choose_epoch_divergence(sim: KafkaSim, count: int) -> dict[tuple[int, str], tuple[int, int]]:
    """At collection time, corrupt ``count`` followers' leader-epoch-checkpoint entries (not the first
    entry, so the retention clamp cannot explain them). Returns {(broker, tp): (epoch, bad offset)}."""
    cands = []
    for p in sim.live_parts():
        for b, rep in sorted(p.replicas.items()):
            if not rep.hosted or len(rep.epochs) < 2:
                continue
            for i in range(1, len(rep.epochs)):
                e, o = rep.epochs[i]
                nxt = rep.epochs[i + 1][1] if i + 1 < len(rep.epochs) else rep.leo
                leader_rep = _epoch_leader(sim, p, e)
                if leader_rep is None or leader_rep == b or nxt - o < 2:
                    continue
                cands.append((b, p, e, o, nxt))
    out: dict[tuple[int, str], tuple[int, int]] = {}
    sim.rng.shuffle(cands)
    for b, p, e, o, nxt in cands:
        if len(out) >= count or (b, p.tp) in out:
            continue
        bad = o + sim.rng.randint(1, nxt - o - 1)
        out[(b, p.tp)] = (e, bad)
        sim.truth.add("epoch_start_offset_divergence", p.topic, p.index, b, e,
                      f"broker {b}'s leader-epoch-checkpoint says epoch {e} of {p.tp} starts at {bad}, the epoch "
                      f"leader's start is {o}")
    return out


def _epoch_leader(sim: KafkaSim, p: Partition, e: int) -> int | None:
    """The broker that logged a Leader line for epoch ``e`` (and so holds the reference start)."""
    for b, rep in sorted(p.replicas.items()):
        if e in rep.led_epochs:
            return b
    return None


FAULT_INJECTORS: dict[str, Callable[[KafkaSim, int], None]] = {
    "stale_stop_replica_accepted": stale_stop_replica_accepted,
    "stale_controller_epoch_accepted": stale_controller_epoch_accepted,
    "stale_broker_epoch_isr_join": stale_broker_epoch_isr_join,
    "fenced_replica_in_isr": fenced_replica_in_isr,
    "last_replica_fenced_in_isr": last_replica_fenced_in_isr,
    "write_accepted_by_fenced_leader": write_accepted_by_fenced_leader,
    "leader_epoch_regression": leader_epoch_regression,
    "two_leaders_same_epoch": two_leaders_same_epoch,
    "high_watermark_regression": high_watermark_regression,
}
