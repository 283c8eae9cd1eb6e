"""The ZooKeeper-mode control plane: the controller's decisions and the requests it sends.

The controller logs its own decision lines, then sends LeaderAndIsr / UpdateMetadata / StopReplica
to the brokers, which apply Kafka's epoch rules to each request (and log them in the request log).
"""

from __future__ import annotations

from collections.abc import Sequence

from epoch_audit_tools.simulator.formats import kafka_text as kt
from epoch_audit_tools.simulator.formats import request_log as rl
from epoch_audit_tools.simulator.kafka_cluster import DATA_DIR, KafkaCluster
from epoch_audit_tools.simulator.model import Partition, PartitionChange, PState


class ZkControlPlane(KafkaCluster):
    """ZK controller election and the LeaderAndIsr / UpdateMetadata / StopReplica exchanges."""

    def zk_bootstrap(self, t: int) -> None:
        """Controller election, broker registrations (ZK czxid epochs), initial LeaderAndIsr."""
        for b in self.brokers:
            br = self.brokers[b]
            br.alive, br.fenced = True, False
            br.epoch = self.zk_epoch_base + self.rng.randint(1, 400)
            br.registrations = 1
        self.zk_elect_controller(t, self.active)
        t += 500
        for p in self.parts:
            c, ce = self.active, self.controller_epoch
            s = p.state
            self.log_state_change(c, t, kt.ctl_changed_partition(self.version, c, ce, p.tp, "NewPartition", "OnlinePartition",
                                                   kt.api_leader_and_isr(self.version, s.leader, s.le, s.isr, s.pe)))
        self.zk_send_lai(t + 50, self.parts, {p.tp: p.state for p in self.parts})
        self.zk_update_metadata(t + 200, len(self.parts))

    def zk_elect_controller(self, t: int, c: int) -> None:
        """``c`` becomes the controller with a new controller epoch."""
        self.controller_epoch += 1
        self.active = c
        self.log(c, "controller.log", t, kt.ctl_elected(c, self.controller_epoch), "controller-event-thread")
        self.stats["controller_failover"] += 1

    def zk_update_metadata(self, t: int, count: int, controller: int | None = None, ce: int | None = None) -> None:
        """UpdateMetadata to every live broker (raises their known controller epoch)."""
        c = self.active if controller is None else controller
        ce = self.controller_epoch if ce is None else ce
        live = [b for b in self.brokers if self.brokers[b].alive]
        self.log_state_change(c, t, kt.ctl_send_um(c, ce, live, count))
        for b in live:
            corr = self.next_corr(c)
            self.known_controller_epoch[b] = max(self.known_controller_epoch[b], ce)
            self.log_state_change(b, t + self.jitter(), kt.um_applied(b, count, 0, c, ce, corr))

    def zk_send_lai(self, t: int, parts: Sequence[Partition], states: dict[str, PState],
                    only: set[int] | None = None, controller: int | None = None, ce: int | None = None,
                    force_accept: bool = False) -> dict[int, int]:
        """Controller sends LeaderAndIsr for ``parts`` to their live replicas; brokers handle it."""
        c = self.active if controller is None else controller
        ce = self.controller_epoch if ce is None else ce
        per_broker: dict[int, list[Partition]] = {}
        for p in parts:
            for r in states[p.tp].replicas:
                if self.brokers[r].alive and (only is None or r in only):
                    per_broker.setdefault(r, []).append(p)
        corrs = {}
        for b, ps in sorted(per_broker.items()):
            nl = sum(1 for p in ps if states[p.tp].leader == b)
            for p in ps:
                s = states[p.tp]
                kind = "become-leader" if s.leader == b else "become-follower"
                st = kt.lai_partition_state(self.version, p.topic, p.index, ce, s.leader, s.le, s.isr, s.pe, s.replicas)
                self.log_state_change(c, t, kt.ctl_send_lai_trace(c, ce, kind, st, b, p.tp))
            self.log_state_change(c, t, kt.ctl_send_lai(c, ce, b, nl, len(ps) - nl))
            corr = self.next_corr(c)
            corrs[b] = corr
            self.zk_broker_lai(t + self.jitter(5, 40), b, c, ce, corr, ps, states, force_accept)
        return corrs

    def zk_broker_lai(self, t: int, b: int, c: int, ce: int, corr: int, ps: Sequence[Partition],
                      states: dict[str, PState], force_accept: bool = False) -> list[str]:
        """Broker ``b`` handles one LeaderAndIsr (L1-L16, request log); returns accepted tps."""
        self.log_state_change(b, t, kt.lai_handling(b, corr, c, len(ps)))
        accepted: list[str] = []
        errors = []
        stale_ce = ce < self.known_controller_epoch[b]
        if stale_ce and not force_accept:
            self.log_state_change(b, t, ("WARN", f"[Broker id={b}] Ignoring LeaderAndIsr request from controller {c} with "
                           f"correlation id {corr} since its controller epoch {ce} is old. Latest known controller "
                           f"epoch is {self.known_controller_epoch[b]}", kt.SCL))
            errors = [11] * len(ps)
        else:
            self.known_controller_epoch[b] = max(self.known_controller_epoch[b], ce)
            for p in ps:
                s = states[p.tp]
                st = kt.lai_partition_state(self.version, p.topic, p.index, ce, s.leader, s.le, s.isr, s.pe, s.replicas)
                self.log_state_change(b, t, kt.lai_received(b, st, corr, c, ce))
            for p in ps:
                s = states[p.tp]
                rep = p.replicas[b]
                if s.le > rep.le or force_accept:
                    self.broker_transition(t + 1, b, p, s, prev_leader=None)
                    accepted.append(p.tp)
                    errors.append(0)
                elif s.le == rep.le:
                    self.log_state_change(b, t + 1, kt.lai_equal_epoch(b, c, corr, ce, p.tp, s.le))
                    errors.append(11)
                else:
                    self.log_state_change(b, t + 1, kt.lai_stale_epoch(b, c, corr, ce, p.tp, s.le, rep.le))
                    errors.append(11)
        self.log_state_change(b, t + 3, kt.lai_finished(self.version, b, 3, corr, c, len(ps)))
        by_topic: dict[str, list[int]] = {}
        for i, p in enumerate(ps):
            by_topic.setdefault(p.topic, []).append(i)
        for _topic, idx in by_topic.items():
            p0 = ps[idx[0]]
            sts = [{"partition": ps[i].index, "controller_epoch": ce, "leader": states[ps[i].tp].leader,
                    "leader_epoch": states[ps[i].tp].le, "isr": states[ps[i].tp].isr,
                    "partition_epoch": states[ps[i].tp].pe, "replicas": states[ps[i].tp].replicas} for i in idx]
            req, resp = rl.leader_and_isr(self.version, c, ce, self.brokers[b].epoch, p0.topic, p0.topic_id, sts,
                                          [errors[i] for i in idx],
                                          sorted({states[ps[i].tp].leader for i in idx if states[ps[i].tp].leader >= 0}),
                                          11 if stale_ce and not force_accept else 0)
            self.log_request(b, t + 4, rl.completed(self.version, "LEADER_AND_ISR", corr, str(c), req, resp,
                                            self.conn(b, c), 2.4, "CONTROLLER"))
        self.stats["leader_and_isr"] += 1
        return accepted

    def zk_stop_replica(self, t: int, b: int, p: Partition, le: int, delete: bool,
                        force_accept: bool = False, controller: int | None = None, ce: int | None = None) -> bool:
        """Controller sends one StopReplica (v3+) to ``b``; the broker applies the KIP-570 rule."""
        c = self.active if controller is None else controller
        ce = self.controller_epoch if ce is None else ce
        state = kt.stop_replica_partition_state(p.index, le, delete)
        self.log_state_change(c, t, kt.ctl_send_sr_trace(c, ce, state, b, p.tp))
        self.log_state_change(c, t, kt.ctl_send_sr(c, ce, 1, b))
        corr = self.next_corr(c)
        tb = t + self.jitter(5, 40)
        self.log_state_change(b, tb, kt.sr_handling(b, corr, c, 1))
        self.known_controller_epoch[b] = max(self.known_controller_epoch[b], ce)
        self.log_state_change(b, tb, kt.sr_received(b, state, corr, c, ce, p.tp))
        rep = p.replicas[b]
        cur = rep.le
        if le in (-1, -2) or le > cur or (le == cur and self.version.at_least("3.4.1")) or force_accept:
            accepted, err = True, 0
        elif le == cur:
            self.log_state_change(b, tb + 1, kt.sr_equal(b, delete, c, corr, ce, p.tp, le))
            accepted, err = False, 74
        else:
            self.log_state_change(b, tb + 1, kt.sr_fenced(b, delete, c, corr, ce, p.tp, le, cur))
            accepted, err = False, 74
        if accepted:
            self.log(b, "server.log", tb + 2, kt.removed_fetcher(b, [p.tp]), "data-plane-kafka-request-handler-1")
            if delete:
                self.log(b, "server.log", tb + 3, kt.log_renamed(
                    p.tp, f"{DATA_DIR}/{p.tp}.{self.uuid()[:8].lower()}-delete"), "data-plane-kafka-request-handler-1")
            rep.hosted = not delete and rep.hosted
        req, resp = rl.stop_replica(self.version, c, ce, self.brokers[b].epoch, p.topic, p.index, le, delete, err)
        self.log_request(b, tb + 4, rl.completed(self.version, "STOP_REPLICA", corr, str(c), req, resp, self.conn(b, c), 0.9,
                                         "CONTROLLER"))
        self.stats["stop_replica"] += 1
        return accepted

    def zk_decide(self, t: int, p: Partition, ch: PartitionChange, removed: int | None = None,
                  frm: str = "OnlinePartition", controller: int | None = None, ce: int | None = None) -> PState:
        """Controller's own decision line(s) for ``p`` (the ZK timeline)."""
        c = self.active if controller is None else controller
        ce = self.controller_epoch if ce is None else ce
        new = ch.build()
        if removed is not None and new.leader == p.state.leader:
            lice = kt.leader_isr_and_controller_epoch(self.version, new.leader, new.isr, new.le, new.pe, ce)
            self.log_state_change(c, t, kt.ctl_isr_removed(c, ce, p.tp, lice, removed))
        else:
            self.log_state_change(c, t, kt.ctl_changed_partition(self.version, c, ce, p.tp, frm, "OnlinePartition",
                                                   kt.api_leader_and_isr(self.version, new.leader, new.le, new.isr, new.pe)))
        p.state = new
        self.stats["partition_change"] += 1
        return new

    def zk_broker_down(self, t: int, b: int, controlled: bool) -> None:
        """Controller reacts to ``b`` leaving: new leaders, ISR removals, StopReplica on shutdown."""
        moved = []
        for p in self.live_parts():
            s = p.state
            if s.leader == b:
                isr = tuple(r for r in s.isr if r != b) or s.isr
                cands = [r for r in isr if self.eligible(r) and r != b]
                ch = self.change(p).set_leader(cands[0] if cands else -1).set_isr(isr)
                self.zk_decide(t, p, ch, frm="OnlinePartition" if controlled else "OfflinePartition")
                moved.append(p)
            elif b in s.isr:
                if controlled:
                    # StopReplica(delete=false) carries the current LE: equal to the broker's own
                    self.zk_stop_replica(t, b, p, s.le, False)
                isr = tuple(r for r in s.isr if r != b)
                if not isr:
                    continue
                self.zk_decide(t + 1, p, self.change(p, controller_isr_removal=True).set_isr(isr), removed=b)
                moved.append(p)
        self.brokers[b].alive = not controlled and self.brokers[b].alive
        if moved:
            self.zk_send_lai(t + 20, moved, {p.tp: p.state for p in moved}, only={
                r for p in moved for r in p.state.replicas if r != b})
            self.zk_update_metadata(t + 40, len(moved))

    def zk_expand_isr(self, t: int, p: Partition, r: int) -> None:
        """ZK: leader's AlterPartition (ZK controller logs nothing at INFO on success)."""
        s = p.state
        ld = s.leader
        if ld < 0 or r in s.isr:
            return
        new_isr = tuple(sorted(s.isr + (r,), key=s.replicas.index))
        self.copy_missing(r, p, p.leo)  # caught up before the join (see kraft_expand_isr)
        new = self.change(p).set_isr(new_isr).build()
        if self.version.at_least("2.7"):
            corr = self.next_corr(ld + 500)
            req, resp = rl.alter_partition(self.version, ld, self.brokers[ld].epoch, p.topic, p.topic_id, p.index, s.le,
                                           [(x, -1) for x in new_isr], s.pe, 0, new.le, new.isr, new.pe)
            if self.version.at_least("3.2"):
                self.log_request(self.active, t + 2, rl.completed(self.version, "ALTER_PARTITION", corr, str(ld), req, resp,
                                                          self.conn(self.active, ld), 3.1))
        else:
            self.log(ld, "server.log", t, kt.isr_expanding(p.tp, ld, s.isr, new_isr), "kafka-scheduler-1")
        p.state = new
        self.log(ld, "server.log", t + 8, kt.isr_updated(self.version, p.tp, ld, new.isr, new.pe), "kafka-scheduler-1")
        self.stats["isr_expand"] += 1
