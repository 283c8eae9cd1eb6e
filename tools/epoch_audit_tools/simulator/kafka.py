"""The Kafka cluster driver (ZooKeeper and KRaft control planes, one data plane).

:class:`KafkaSim` owns the model (brokers, partitions), a time-ordered event queue and the output
hosts. Control-plane primitives (``kraft_*`` / ``zk_*``) commit decisions and make every broker
that would react write the same lines a real one writes; data-plane primitives append produce
batches, replicate them and log fetches. Benign episodes (restarts, failovers, deletions) and the
fault injectors of :mod:`epoch_audit_tools.simulator.faults` are both built from these primitives, so a fault
differs from normal operation only in the one step it breaks.
"""

from __future__ import annotations

import base64
import heapq
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from epoch_audit_tools.simulator.clock import Clocks, copy_suffix
from epoch_audit_tools.simulator.config import SimConfig
from epoch_audit_tools.simulator.formats import dumps
from epoch_audit_tools.simulator.formats import kafka_text as kt
from epoch_audit_tools.simulator.formats import metadata as md
from epoch_audit_tools.simulator.formats import request_log as rl
from epoch_audit_tools.simulator.formats.common import Log4j, Version
from epoch_audit_tools.simulator.model import Batch, Broker, Partition, PartitionChange, PState, Replica
from epoch_audit_tools.simulator.sink import FileSink
from epoch_audit_tools.simulator.truth import Truth

CONTROLLERS = (3000, 3001, 3002)
TOPICS = ("orders", "payments", "user-events", "clicks")
DATA_DIR = "/var/lib/kafka/data"
# Produce quiet windows (fault-free histories must not hold orderings the skew makes ambiguous):
# no PRODUCE is answered within 2 x the per-host skew + this margin before a control-plane step (a
# leadership move of the partition may be among them), and a new leader answers none until this long
# after its own "Leader ... starts at leader epoch N" line.
QUIET_MARGIN_MS = 200
NEW_LEADER_QUIET_MS = 100


class KafkaSim:
    """Discrete-event simulation of one Kafka cluster."""

    def __init__(self, cfg: SimConfig, sink: FileSink, truth: Truth, rng: random.Random) -> None:
        self.cfg = cfg
        self.v: Version = cfg.version
        self.kraft = cfg.mode == "kafka-kraft"
        self.sink = sink
        self.truth = truth
        self.rng = rng
        self.stats: Counter[str] = Counter()
        self.fmt = Log4j(cfg.strimzi)
        self.clocks = Clocks(cfg.clock_skew_ms, random.Random(rng.getrandbits(64)))
        self.queue: list[tuple[int, int, Callable[..., None], tuple[Any, ...]]] = []
        # times of pending control-plane steps (every queued event but periodic output): a step may
        # move leadership, so produce traffic pauses for ``quiet_ms`` before each
        self.control_times: list[int] = []
        self.quiet_ms = 2 * cfg.clock_skew_ms + QUIET_MARGIN_MS
        self._seq = 0
        self.now = 0
        self.corr: Counter[int] = Counter()
        self.brokers = {b: Broker(b) for b in range(1, cfg.brokers + 1)}
        self.parts: list[Partition] = []
        self.hosts: list[int] = list(self.brokers) + (list(CONTROLLERS) if self.kraft else [])
        for h in self.hosts:
            self.clocks.skew(h)
        # KRaft metadata log
        self.md_offset = 0
        self.md_position = 0
        self.raft_epoch = 1
        self.active = CONTROLLERS[0] if self.kraft else 1
        self.open_txn: int | None = None
        # ZK controller
        self.ce = 1
        self.known_ce: dict[int, int] = {b: 0 for b in self.brokers}
        self.zk_epoch_base = 25769803776  # ZK czxid-like broker epochs
        self.session = 1_000_000
        self.ckpt_last: dict[tuple[int, str], int] = {}
        self.deleted_dumps: list[str] = []
        self.late_files: list[str] = []

    # ------------------------------------------------------------------ output helpers
    def hostdir(self, host: int) -> str:
        """``cluster=<id>/broker-<host>``."""
        return f"cluster={self.cfg.cluster_id}/broker-{host}"

    def local(self, host: int, t: int) -> int:
        """Host-local clock reading at true time ``t``."""
        return self.clocks.local(host, t)

    def log(self, host: int, file: str, t: int, line: kt.Line | None, thread: str = "main",
            cont: Sequence[str] = ()) -> int:
        """Write one log4j record to ``file`` of ``host``; returns the logged (local) time."""
        if line is None:
            return self.local(host, t)
        level, msg, logger = line
        lt = self.local(host, t)
        self.sink.log(f"{self.hostdir(host)}/{file}", lt, self.fmt.record(lt, level, msg, logger, thread, cont))
        self.stats[f"line:{file}"] += 1
        return lt

    def sc(self, host: int, t: int, line: kt.Line | None) -> int:
        """state-change.log."""
        return self.log(host, "state-change.log", t, line, "data-plane-kafka-request-handler-1")

    def req(self, host: int, t: int, text: str) -> int:
        """kafka-request.log (DEBUG ``Completed request:`` lines)."""
        if not rl.has_request_log(self.v):
            return self.local(host, t)
        self.stats["request"] += 1
        return self.log(host, "kafka-request.log", t, ("DEBUG", text, rl.LOGGER), "data-plane-kafka-network-thread-1")

    def next_corr(self, host: int) -> int:
        """Per-sender correlation ids."""
        self.corr[host] += 1
        return self.corr[host]

    def at(self, t: int, fn: Callable[..., None], *args: Any, control: bool = True) -> None:
        """Schedule ``fn(t, *args)``. ``control=False`` marks a step that never changes partition
        state (periodic checkpoint copies, noise): produce traffic need not pause before it."""
        self._seq += 1
        heapq.heappush(self.queue, (t, self._seq, fn, args))
        if control:
            heapq.heappush(self.control_times, t)

    def quiet_before_control(self, t: int) -> bool:
        """True if a control-plane step is pending within ``quiet_ms`` after ``t`` (events before
        ``t`` have all run; one at ``t`` itself runs after a produce at ``t``)."""
        ct = self.control_times
        while ct and ct[0] < t:
            heapq.heappop(ct)
        return bool(ct) and ct[0] <= t + self.quiet_ms

    def uuid(self) -> str:
        """22-char url-safe base64 Uuid from the seeded rng."""
        return base64.urlsafe_b64encode(self.rng.randbytes(16)).decode().rstrip("=")

    def jitter(self, lo: int = 2, hi: int = 30) -> int:
        """A small processing delay in ms."""
        return self.rng.randint(lo, hi)

    # ------------------------------------------------------------------ setup
    def setup(self, t: int) -> None:
        """Bootstrap the cluster at ``t``: controllers, registrations, topics, initial leaders."""
        n = self.cfg.brokers
        per, extra = divmod(self.cfg.partitions, len(TOPICS))
        g = 0
        for ti, topic in enumerate(TOPICS):
            tid = self.uuid()
            for i in range(per + (1 if ti < extra else 0)):
                reps = tuple((g + k) % n + 1 for k in range(3))
                p = Partition(topic, i, tid, PState(reps[0], 0, 0, reps, reps))
                for r in reps:
                    p.replicas[r] = Replica()
                self.parts.append(p)
                g += 1
        if self.kraft:
            self.kraft_bootstrap(t)
        else:
            self.zk_bootstrap(t)

    # ================================================================== KRaft control plane
    def kraft_commit(self, t: int, records: list[md.Record], ctx: list[dict[str, Any]] | None = None,
                     write: bool = True) -> int:
        """Append one metadata batch at ``t``; returns the base offset. Replay lines on every controller."""
        base = self.md_offset
        ctx = ctx or [{} for _ in records]
        ct = self.local(self.active, t)
        rel = f"{self.hostdir(CONTROLLERS[0])}/metadata-dump/__cluster_metadata-0.txt"
        if self.md_offset == 0 and self.md_position == 0:
            self.sink.write(rel, dumps.header(self.v, "/var/lib/kafka/meta/__cluster_metadata-0/00000000000000000000.log"))
        lines = [md.payload(r) for r in records]
        size = 61 + sum(len(x) // 2 + 12 for x in lines)
        text = dumps.batch_line(self.v, base, base + len(records) - 1, -1, -1, -1, self.raft_epoch,
                                self.md_position, ct, size)
        text += "".join(dumps.record_line(base + i, ct, x) for i, x in enumerate(lines))
        self.sink.write(rel, text)
        self.md_position += size
        self.md_offset += len(records)
        self.stats["md_batch"] += 1
        for i, rec in enumerate(records):
            self.stats[f"md:{rec[0]}"] += 1
            for c in CONTROLLERS:
                for line in md.replay_lines(self.v, c, rec, base + i, ctx[i]):
                    self.log(c, "controller.log", t + 1, line, "quorum-controller-0-event-handler")
        return base

    def kraft_bootstrap(self, t: int) -> None:
        """Raft election, bootstrap records, broker registrations, topics."""
        for c in CONTROLLERS:
            self.log(c, "server.log", t, md.raft_transition(self.v, c, self.raft_epoch, self.active, CONTROLLERS,
                                                            c == self.active), "raft-io-thread")
        recs: list[md.Record] = []
        if self.v.at_least("3.6"):
            recs.append(md.begin_txn_record("Bootstrap records"))
        recs.append(md.feature_level_record(self.v))
        if self.v.at_least("3.6"):
            recs.append(md.end_txn_record())
        self.kraft_commit(t, recs)
        t += 500
        for b in self.brokers:
            self.kraft_register(t, b, initial=True)
            t += 50
        t += 500
        for b in self.brokers:
            self.kraft_unfence(t, b)
        t += 500
        by_topic: dict[str, list[Partition]] = {}
        for p in self.parts:
            by_topic.setdefault(p.topic, []).append(p)
        for topic, ps in by_topic.items():
            recs = [md.topic_record(topic, ps[0].topic_id)]
            ctx: list[dict[str, Any]] = [{}]
            for p in ps:
                s = p.state
                recs.append(md.partition_record(p.index, p.topic_id, s.replicas, s.isr, s.leader, s.le, s.pe))
                ctx.append({"topic": topic, "registration": md.partition_registration(
                    self.v, s.replicas, s.isr, s.leader, s.le, s.pe)})
            self.kraft_commit(t, recs, ctx)
            self.brokers_apply(t + 20, [(p, None, p.state) for p in ps])
            t += 200

    def kraft_register(self, t: int, b: int, initial: bool = False) -> None:
        """RegisterBrokerRecord (fenced); the broker epoch is the record's metadata offset."""
        br = self.brokers[b]
        br.epoch = self.md_offset
        br.incarnation = self.uuid()
        br.alive, br.fenced, br.in_controlled_shutdown = True, True, False
        br.registrations += 1
        rec = md.register_broker_record(self.v, b, br.incarnation, br.epoch, f"kafka-{b}.prod.internal")
        self.kraft_commit(t, [rec], [{"initial": initial}])
        self.stats["broker_registration"] += 1

    def kraft_unfence(self, t: int, b: int) -> None:
        """BrokerRegistrationChangeRecord fenced=-1."""
        br = self.brokers[b]
        br.fenced = False
        self.kraft_commit(t, [md.registration_change_record(b, br.epoch, fenced=-1)])
        self.stats["unfence"] += 1

    def leadership_moves(self, b: int, keep_in_isr: set[str] = frozenset()) -> list[tuple[Partition, PartitionChange]]:
        """Changes that take broker ``b`` out of every ISR and leadership (PartitionChangeBuilder).

        A partition whose ISR is only ``b`` keeps it (KIP-903 last replica) with no leader.
        """
        out = []
        for p in self.live_parts():
            s = p.state
            if b not in s.isr and s.leader != b:
                continue
            ch = self.change(p)
            isr = tuple(r for r in s.isr if r != b)
            if p.tp in keep_in_isr:
                isr = s.isr
            if not isr:
                isr = s.isr  # the last replica stays in the ISR
            if s.leader == b:
                cands = [r for r in isr if r != b and self.eligible(r)]
                ch.set_leader(cands[0] if cands else -1)
            if isr != s.isr:
                ch.set_isr(isr)
            out.append((p, ch))
        return out

    def change(self, p: Partition, controller_isr_removal: bool = False) -> PartitionChange:
        """A builder for ``p`` with this cluster's epoch rules."""
        return PartitionChange(p.state, self.kraft, bump_on_shrink=not self.v.at_least("3.6"),
                               controller_isr_removal=controller_isr_removal)

    def eligible(self, r: int) -> bool:
        """Alive, unfenced and not shutting down."""
        br = self.brokers[r]
        return br.alive and not br.fenced and not br.in_controlled_shutdown

    def kraft_apply_changes(self, t: int, head: list[md.Record], changes: list[tuple[Partition, PartitionChange]],
                            head_ctx: list[dict[str, Any]] | None = None) -> list[tuple[Partition, PState, PState]]:
        """Commit ``head`` records plus one PartitionChangeRecord per change in one batch."""
        recs = list(head)
        ctx = list(head_ctx or [{} for _ in head])
        applied = []
        for p, ch in changes:
            recs.append(md.partition_change_record(p.index, p.topic_id, ch.new_isr, ch.record_leader()))
            ctx.append({})
            new = ch.build()
            applied.append((p, p.state, new))
        if recs:
            self.kraft_commit(t, recs, ctx)
        for p, _, new in applied:
            p.state = new
            self.stats["partition_change"] += 1
        return applied

    def kraft_fence(self, t: int, b: int, keep_in_isr: set[str] = frozenset(), session_timeout: bool = True) -> list[tuple[Partition, PState, PState]]:
        """Fence ``b`` and, in the same batch, move leadership / ISR membership away from it."""
        br = self.brokers[b]
        if session_timeout:
            self.log(self.active, "controller.log", t, md.fencing_line(self.v, self.active, b),
                     "quorum-controller-0-event-handler")
        br.fenced = True
        br.in_controlled_shutdown = False
        applied = self.kraft_apply_changes(t, [md.registration_change_record(b, br.epoch, fenced=1)],
                                           self.leadership_moves(b, keep_in_isr))
        self.stats["fence"] += 1
        self.brokers_apply(t + 20, applied)
        return applied

    def kraft_controlled_shutdown(self, t: int, b: int) -> None:
        """inControlledShutdown=1 and leadership/ISR moves in one batch; then fenced when done."""
        br = self.brokers[b]
        br.in_controlled_shutdown = True
        moves = self.leadership_moves(b)
        applied = self.kraft_apply_changes(t, [md.registration_change_record(b, br.epoch, controlled_shutdown=1)], moves)
        self.sc(b, t + 10, kt.kraft_stopped_fetchers_cs(b, len(moves)))
        self.brokers_apply(t + 20, applied, skip={b})
        self.stats["controlled_shutdown"] += 1

    def kraft_failover(self, t: int) -> None:
        """The active controller resigns; the next one wins the raft election (epoch + 1)."""
        self.raft_epoch += 1
        self.active = CONTROLLERS[(CONTROLLERS.index(self.active) + 1) % len(CONTROLLERS)]
        for c in CONTROLLERS:
            self.log(c, "server.log", t + self.jitter(), md.raft_transition(
                self.v, c, self.raft_epoch, self.active, CONTROLLERS, c == self.active), "raft-io-thread")
        if self.v.at_least("3.3"):
            self.kraft_commit(t + 50, [md.noop_record()])
        self.stats["controller_failover"] += 1

    # ================================================================== ZK control plane
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
            c, ce = self.active, self.ce
            s = p.state
            self.sc(c, t, kt.ctl_changed_partition(self.v, c, ce, p.tp, "NewPartition", "OnlinePartition",
                                                   kt.api_leader_and_isr(self.v, s.leader, s.le, s.isr, s.pe)))
        self.zk_send_lai(t + 50, self.parts, {p.tp: p.state for p in self.parts})
        self.zk_update_metadata(t + 200, len(self.parts))

    def zk_elect_controller(self, t: int, c: int) -> None:
        """``c`` becomes the controller with a new controller epoch."""
        self.ce += 1
        self.active = c
        self.log(c, "controller.log", t, kt.ctl_elected(c, self.ce), "controller-event-thread")
        self.stats["controller_failover"] += 1

    def zk_update_metadata(self, t: int, count: int, controller: int | None = None, ce: int | None = None) -> None:
        """UpdateMetadata to every live broker (raises their known controller epoch)."""
        c = self.active if controller is None else controller
        ce = self.ce if ce is None else ce
        live = [b for b in self.brokers if self.brokers[b].alive]
        self.sc(c, t, kt.ctl_send_um(c, ce, live, count))
        for b in live:
            corr = self.next_corr(c)
            self.known_ce[b] = max(self.known_ce[b], ce)
            self.sc(b, t + self.jitter(), kt.um_applied(b, count, 0, c, ce, corr))

    def zk_send_lai(self, t: int, parts: Sequence[Partition], states: dict[str, PState],
                    only: set[int] | None = None, controller: int | None = None, ce: int | None = None,
                    force_accept: bool = False) -> dict[int, int]:
        """Controller sends LeaderAndIsr for ``parts`` to their live replicas; brokers handle it."""
        c = self.active if controller is None else controller
        ce = self.ce if ce is None else ce
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
                st = kt.lai_partition_state(self.v, p.topic, p.index, ce, s.leader, s.le, s.isr, s.pe, s.replicas)
                self.sc(c, t, kt.ctl_send_lai_trace(c, ce, kind, st, b, p.tp))
            self.sc(c, t, kt.ctl_send_lai(c, ce, b, nl, len(ps) - nl))
            corr = self.next_corr(c)
            corrs[b] = corr
            self.zk_broker_lai(t + self.jitter(5, 40), b, c, ce, corr, ps, states, force_accept)
        return corrs

    def zk_broker_lai(self, t: int, b: int, c: int, ce: int, corr: int, ps: Sequence[Partition],
                      states: dict[str, PState], force_accept: bool = False) -> list[str]:
        """Broker ``b`` handles one LeaderAndIsr (L1-L16, request log); returns accepted tps."""
        self.sc(b, t, kt.lai_handling(b, corr, c, len(ps)))
        accepted: list[str] = []
        errors = []
        stale_ce = ce < self.known_ce[b]
        if stale_ce and not force_accept:
            self.sc(b, t, ("WARN", f"[Broker id={b}] Ignoring LeaderAndIsr request from controller {c} with "
                           f"correlation id {corr} since its controller epoch {ce} is old. Latest known controller "
                           f"epoch is {self.known_ce[b]}", kt.SCL))
            errors = [11] * len(ps)
        else:
            self.known_ce[b] = max(self.known_ce[b], ce)
            for p in ps:
                s = states[p.tp]
                st = kt.lai_partition_state(self.v, p.topic, p.index, ce, s.leader, s.le, s.isr, s.pe, s.replicas)
                self.sc(b, t, kt.lai_received(b, st, corr, c, ce))
            for p in ps:
                s = states[p.tp]
                rep = p.replicas[b]
                if s.le > rep.le or force_accept:
                    self.broker_transition(t + 1, b, p, s, prev_leader=None)
                    accepted.append(p.tp)
                    errors.append(0)
                elif s.le == rep.le:
                    self.sc(b, t + 1, kt.lai_equal_epoch(b, c, corr, ce, p.tp, s.le))
                    errors.append(11)
                else:
                    self.sc(b, t + 1, kt.lai_stale_epoch(b, c, corr, ce, p.tp, s.le, rep.le))
                    errors.append(11)
        self.sc(b, t + 3, kt.lai_finished(self.v, b, 3, corr, c, len(ps)))
        by_topic: dict[str, list[int]] = {}
        for i, p in enumerate(ps):
            by_topic.setdefault(p.topic, []).append(i)
        for _topic, idx in by_topic.items():
            p0 = ps[idx[0]]
            sts = [{"partition": ps[i].index, "controller_epoch": ce, "leader": states[ps[i].tp].leader,
                    "leader_epoch": states[ps[i].tp].le, "isr": states[ps[i].tp].isr,
                    "partition_epoch": states[ps[i].tp].pe, "replicas": states[ps[i].tp].replicas} for i in idx]
            req, resp = rl.leader_and_isr(self.v, c, ce, self.brokers[b].epoch, p0.topic, p0.topic_id, sts,
                                          [errors[i] for i in idx],
                                          sorted({states[ps[i].tp].leader for i in idx if states[ps[i].tp].leader >= 0}),
                                          11 if stale_ce and not force_accept else 0)
            self.req(b, t + 4, rl.completed(self.v, "LEADER_AND_ISR", corr, str(c), req, resp,
                                            self.conn(b, c), 2.4, "CONTROLLER"))
        self.stats["leader_and_isr"] += 1
        return accepted

    def zk_stop_replica(self, t: int, b: int, p: Partition, le: int, delete: bool,
                        force_accept: bool = False, controller: int | None = None, ce: int | None = None) -> bool:
        """Controller sends one StopReplica (v3+) to ``b``; the broker applies the KIP-570 rule."""
        c = self.active if controller is None else controller
        ce = self.ce if ce is None else ce
        state = kt.stop_replica_partition_state(p.index, le, delete)
        self.sc(c, t, kt.ctl_send_sr_trace(c, ce, state, b, p.tp))
        self.sc(c, t, kt.ctl_send_sr(c, ce, 1, b))
        corr = self.next_corr(c)
        tb = t + self.jitter(5, 40)
        self.sc(b, tb, kt.sr_handling(b, corr, c, 1))
        self.known_ce[b] = max(self.known_ce[b], ce)
        self.sc(b, tb, kt.sr_received(b, state, corr, c, ce, p.tp))
        rep = p.replicas[b]
        cur = rep.le
        if le in (-1, -2) or le > cur or (le == cur and self.v.at_least("3.4.1")) or force_accept:
            accepted, err = True, 0
        elif le == cur:
            self.sc(b, tb + 1, kt.sr_equal(b, delete, c, corr, ce, p.tp, le))
            accepted, err = False, 74
        else:
            self.sc(b, tb + 1, kt.sr_fenced(b, delete, c, corr, ce, p.tp, le, cur))
            accepted, err = False, 74
        if accepted:
            self.log(b, "server.log", tb + 2, kt.removed_fetcher(b, [p.tp]), "data-plane-kafka-request-handler-1")
            if delete:
                self.log(b, "server.log", tb + 3, kt.log_renamed(
                    p.tp, f"{DATA_DIR}/{p.tp}.{self.uuid()[:8].lower()}-delete"), "data-plane-kafka-request-handler-1")
            rep.hosted = not delete and rep.hosted
        req, resp = rl.stop_replica(self.v, c, ce, self.brokers[b].epoch, p.topic, p.index, le, delete, err)
        self.req(b, tb + 4, rl.completed(self.v, "STOP_REPLICA", corr, str(c), req, resp, self.conn(b, c), 0.9,
                                         "CONTROLLER"))
        self.stats["stop_replica"] += 1
        return accepted

    def zk_decide(self, t: int, p: Partition, ch: PartitionChange, removed: int | None = None,
                  frm: str = "OnlinePartition", controller: int | None = None, ce: int | None = None) -> PState:
        """Controller's own decision line(s) for ``p`` (the ZK timeline)."""
        c = self.active if controller is None else controller
        ce = self.ce if ce is None else ce
        new = ch.build()
        if removed is not None and new.leader == p.state.leader:
            lice = kt.leader_isr_and_controller_epoch(self.v, new.leader, new.isr, new.le, new.pe, ce)
            self.sc(c, t, kt.ctl_isr_removed(c, ce, p.tp, lice, removed))
        else:
            self.sc(c, t, kt.ctl_changed_partition(self.v, c, ce, p.tp, frm, "OnlinePartition",
                                                   kt.api_leader_and_isr(self.v, new.leader, new.le, new.isr, new.pe)))
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

    # ================================================================== broker side
    def live_parts(self) -> list[Partition]:
        """Partitions of topics that still exist."""
        return [p for p in self.parts if not p.deleted]

    def conn(self, local: int, remote: int) -> str:
        """``localIp:port-remoteIp:port-index``."""
        return f"10.0.1.{local % 250}:9092-10.0.1.{remote % 250}:{40000 + remote}-{local % 7}"

    def broker_transition(self, t: int, b: int, p: Partition, s: PState, prev_leader: int | None,
                          hw_override: int | None = None) -> None:
        """``b`` becomes leader or follower of ``p`` at ``s.le`` (Leader/Follower line)."""
        rep = p.replicas[b]
        prev = rep.le
        if s.leader == b:
            hw = rep.hw if hw_override is None else hw_override
            self.sc(b, t, kt.leader_line(self.v, b, p.tp, p.topic_id, s.le, rep.leo, s.pe, hw, s.isr,
                                         prev_leader, prev))
            rep.assign_epoch(s.le, rep.leo)
            rep.led_epochs.add(s.le)
            rep.last_leader_hw = hw
            rep.leader_since = t
            self.stats["become_leader"] += 1
        else:
            self.sc(b, t, kt.follower_line(self.v, b, p.tp, s.le, rep.leo, s.pe, rep.hw, s.leader, prev_leader, prev))
            self.stats["become_follower"] += 1
        rep.le = s.le
        rep.hosted = True

    def brokers_apply(self, t: int, applied: Sequence[tuple[Partition, PState | None, PState]],
                      skip: set[int] = frozenset()) -> None:
        """KRaft brokers apply committed partition states from the metadata log."""
        per: dict[int, list[tuple[Partition, PState | None, PState]]] = {}
        for p, old, new in applied:
            for r in new.replicas:
                if self.brokers[r].alive and r not in skip:
                    per.setdefault(r, []).append((p, old, new))
        for b, items in sorted(per.items()):
            tb = t + self.jitter()
            leaders = [x for x in items if x[2].leader == b and x[2].le > x[0].replicas[b].le]
            followers = [x for x in items if x[2].leader != b and x[2].le > x[0].replicas[b].le]
            if leaders:
                self.sc(b, tb, kt.kraft_transitioning(b, len(leaders), True))
            for p, old, new in leaders:
                self.broker_transition(tb, b, p, new, old.leader if old is not None and old.leader >= 0 else None)
            if followers:
                self.sc(b, tb, kt.kraft_transitioning(b, len(followers), False))
            for p, old, new in followers:
                self.broker_transition(tb, b, p, new, old.leader if old is not None and old.leader >= 0 else None)
            if self.v.at_least("3.3"):
                for p, _old, new in items:
                    rep = p.replicas[b]
                    if new.le == rep.le and new.leader != b and (p, _old, new) not in followers:
                        st = kt.lai_partition_state(self.v, p.topic, p.index, -1, new.leader, new.le, new.isr,
                                                    new.pe, new.replicas)
                        self.sc(b, tb, kt.skipped_follower_line(b, p.tp, p.topic_id, st, new.le))

    # ================================================================== data plane
    def dump_rel(self, b: int, p: Partition) -> str:
        """Segment dump text file of ``p`` on ``b``."""
        return f"{self.hostdir(b)}/kafka-dump-log/{p.tp}-00000000000000000000.log.txt"

    def append(self, b: int, p: Partition, batch: Batch) -> None:
        """Append ``batch`` to ``b``'s replica (dump line, epoch cache, LEO).

        A replica's log has no holes: a follower fetches sequentially, so batches it missed below
        ``batch.base`` are copied first (else its first batch of an epoch would start past the epoch
        leader's start offset, a real ``epoch_start_offset_divergence`` the truth does not record).
        """
        rep = p.replicas[b]
        if batch.base > rep.leo:
            self.copy_missing(b, p, batch.base)
        rel = self.dump_rel(b, p)
        if not rep.dump_started:
            self.sink.write(rel, dumps.header(self.v, f"{DATA_DIR}/{p.tp}/00000000000000000000.log"))
            rep.dump_started = True
        self.sink.write(rel, dumps.batch_line(self.v, batch.base, batch.last, batch.producer_id, 0, 0,
                                              batch.epoch, rep.position, batch.create_time, batch.size))
        rep.position += batch.size
        rep.assign_epoch(batch.epoch, batch.base)
        rep.leo = batch.last + 1
        self.stats["segment_batch"] += 1

    def copy_missing(self, b: int, p: Partition, upto: int) -> None:
        """Silently copy to ``b`` the leader's batches from ``b``'s LEO up to offset ``upto``
        (replication that the request log does not show)."""
        rep = p.replicas[b]
        for batch in list(p.recent):
            if rep.leo <= batch.base < upto:
                self.append(b, p, batch)

    def make_batch(self, t: int, p: Partition, epoch: int, base: int) -> Batch:
        """A producer batch (CreateTime = the producer's clock, not a broker's)."""
        count = self.rng.randint(1, 5)
        return Batch(base, base + count - 1, epoch, 4000 + self.rng.randint(0, 40), t - self.rng.randint(1, 50),
                     70 + 60 * count)

    def produce(self, t: int, p: Partition) -> None:
        """A client produce to the leader, synchronously replicated to the in-sync followers."""
        s = p.state
        if p.deleted or p.hold or s.leader < 0 or not self.eligible(s.leader):
            return
        lrep = p.replicas[s.leader]
        if lrep.le != s.le or t < lrep.leader_since + NEW_LEADER_QUIET_MS:
            # a new leader answers PRODUCE only once it logged its Leader line for this epoch (else
            # the batch would carry its previous epoch, or the request log would precede the line)
            self.stats["produce_quiet_new_leader"] += 1
            return
        if self.quiet_before_control(t):
            # the old leader must not answer just before a move: with per-host skew its log line
            # could follow the controller's decision, an ordering a real cluster would not show
            # unambiguously (the checker rightly calls it suspected; the truth does not list it)
            self.stats["produce_quiet_control"] += 1
            return
        if any(p.replicas[r].stopped and self.brokers[r].alive for r in s.isr if r != s.leader):
            # An in-sync follower whose fetcher a StopReplica removed stays in the ISR until the
            # leader shrinks it: the high watermark cannot pass its log end, so no acks=all produce
            # completes meanwhile (clients back off). Appending here would leave that ISR member
            # without acknowledged data it could then be elected with (divergent logs, a fenced
            # leader write the truth does not record).
            return
        ld = s.leader
        batch = self.make_batch(t, p, lrep.le, lrep.leo)
        self.append(ld, p, batch)
        p.leo = lrep.leo
        p.recent.append(batch)
        req, resp = rl.produce(self.v, p.topic, p.index, batch.size, 0, batch.base)
        corr = self.next_corr(-ld)
        self.req(ld, t + 1, rl.completed(self.v, "PRODUCE", corr, f"{p.topic}-producer-1", req, resp,
                                         self.conn(ld, 200), 0.8, software=("apache-kafka-java", "3.6.1")))
        for f in s.isr:
            if f == ld or not self.brokers[f].alive or p.replicas[f].stopped:
                continue
            self.append(f, p, batch)
            self.log_fetch(t + 3 + self.jitter(0, 5), p, f, p.leo, p.leo, batch.size)
        for r in s.isr:
            if self.brokers[r].alive and not p.replicas[r].stopped:
                p.replicas[r].hw = p.leo
        p.trim_recent()
        self.stats["produce"] += 1

    def log_fetch(self, t: int, p: Partition, f: int, fetch_offset: int, hw: int, size: int,
                  replica_epoch: int | None = None) -> int:
        """A follower fetch as the leader's request log records it; returns the leader-logged time."""
        ld = p.state.leader
        rep = p.replicas[f]
        last_epoch = rep.epochs[-1][0] if rep.epochs else -1
        be = self.brokers[f].epoch if replica_epoch is None else replica_epoch
        self.session += 1
        req, resp = rl.fetch(self.v, f, be, p.topic, p.topic_id, p.index, p.state.le, fetch_offset, last_epoch,
                             hw, size, 1702244 + f, self.session % 100000)
        corr = self.next_corr(-1000 - f)
        self.stats["fetch"] += 1
        if fetch_offset >= hw:
            rep.last_fetch_epoch = be
        return self.req(ld, t, rl.completed(self.v, "FETCH", corr, f"broker-{f}-fetcher-0", req, resp,
                                            self.conn(ld, f), 1.2, software=("apache-kafka-java", str(self.v)[:-2])))

    def catch_up(self, t: int, b: int, parts: Sequence[Partition] | None = None, log: bool = True) -> None:
        """``b`` copies what it missed from each leader and sends a caught-up fetch."""
        for p in parts if parts is not None else self.live_parts():
            s = p.state
            if b not in s.replicas or s.leader == b or s.leader < 0 or not self.brokers[s.leader].alive:
                continue
            rep = p.replicas[b]
            if not rep.hosted:
                continue
            size = 0
            for batch in p.recent:
                if batch.base >= rep.leo:
                    self.append(b, p, batch)
                    size += batch.size
            rep.leo = max(rep.leo, p.leo)
            rep.hw = p.replicas[s.leader].hw
            if log:
                self.log_fetch(t + self.jitter(), p, b, rep.leo, rep.hw, size)
            p.trim_recent()

    def kraft_expand_isr(self, t: int, p: Partition, r: int, sent_epoch: int | None = None,
                         accept: bool | None = None) -> bool:
        """Leader proposes adding ``r`` (AlterPartition); the controller commits or rejects (KIP-903)."""
        s = p.state
        ld = s.leader
        if ld < 0 or r in s.isr:
            return False
        new_isr = tuple(sorted(s.isr + (r,), key=s.replicas.index))
        epochs = []
        for x in new_isr:
            if x == ld:
                epochs.append((x, self.brokers[x].epoch))
            elif x == r:
                e = sent_epoch if sent_epoch is not None else p.replicas[r].last_fetch_epoch
                epochs.append((x, e if self.v.at_least("3.5") else -1))
            else:
                epochs.append((x, p.replicas[x].last_fetch_epoch if self.v.at_least("3.5") else -1))
        registered = self.brokers[r].epoch
        sent = dict(epochs)[r]
        ok = accept if accept is not None else (sent in (-1, registered) and self.eligible(r))
        corr = self.next_corr(ld + 500)
        tc = t + 5
        if ok:
            # the leader proposes the join once the replica reached its log end: a joining replica
            # holds every batch, so it can never be elected without data the ISR acknowledged
            self.copy_missing(r, p, p.leo)
            ch = self.change(p).set_isr(new_isr)
            applied = self.kraft_apply_changes(tc, [], [(p, ch)])
            new = applied[0][2]
            req, resp = rl.alter_partition(self.v, ld, self.brokers[ld].epoch, p.topic, p.topic_id, p.index, s.le,
                                           epochs, s.pe, 0, new.le, new.isr, new.pe)
            self.req(self.active, tc + 2, rl.completed(self.v, "ALTER_PARTITION", corr, str(ld), req, resp,
                                                       self.conn(self.active, ld), 3.1, "CONTROLLER"))
            self.log(ld, "server.log", tc + 10, kt.isr_updated(self.v, p.tp, ld, new.isr, new.pe),
                     "kafka-scheduler-1")
            self.brokers_apply(tc + 12, applied, skip={ld})
            self.stats["isr_expand"] += 1
        else:
            self.log(self.active, "controller.log", tc, md.rejecting_ineligible(
                self.v, self.active, ld, p.tp, r, sent, registered, epochs), "quorum-controller-0-event-handler")
            req, resp = rl.alter_partition(self.v, ld, self.brokers[ld].epoch, p.topic, p.topic_id, p.index, s.le,
                                           epochs, s.pe, 107)
            self.req(self.active, tc + 2, rl.completed(self.v, "ALTER_PARTITION", corr, str(ld), req, resp,
                                                       self.conn(self.active, ld), 1.1, "CONTROLLER"))
            self.log(ld, "server.log", tc + 10, kt.alter_partition_ineligible(
                self.v, p.tp, ld, r, s.le, epochs, s.pe, s.isr), "kafka-scheduler-1")
            self.stats["isr_expand_rejected"] += 1
        return ok

    def zk_expand_isr(self, t: int, p: Partition, r: int) -> None:
        """ZK: leader's AlterPartition (ZK controller logs nothing at INFO on success)."""
        s = p.state
        ld = s.leader
        if ld < 0 or r in s.isr:
            return
        new_isr = tuple(sorted(s.isr + (r,), key=s.replicas.index))
        self.copy_missing(r, p, p.leo)  # caught up before the join (see kraft_expand_isr)
        new = self.change(p).set_isr(new_isr).build()
        if self.v.at_least("2.7"):
            corr = self.next_corr(ld + 500)
            req, resp = rl.alter_partition(self.v, ld, self.brokers[ld].epoch, p.topic, p.topic_id, p.index, s.le,
                                           [(x, -1) for x in new_isr], s.pe, 0, new.le, new.isr, new.pe)
            if self.v.at_least("3.2"):
                self.req(self.active, t + 2, rl.completed(self.v, "ALTER_PARTITION", corr, str(ld), req, resp,
                                                          self.conn(self.active, ld), 3.1))
        else:
            self.log(ld, "server.log", t, kt.isr_expanding(p.tp, ld, s.isr, new_isr), "kafka-scheduler-1")
        p.state = new
        self.log(ld, "server.log", t + 8, kt.isr_updated(self.v, p.tp, ld, new.isr, new.pe), "kafka-scheduler-1")
        self.stats["isr_expand"] += 1

    def expand_isr(self, t: int, p: Partition, r: int) -> None:
        """Mode-independent ISR expansion of a caught-up replica."""
        if self.kraft:
            self.kraft_expand_isr(t, p, r)
        else:
            self.zk_expand_isr(t, p, r)

    # ================================================================== periodic output
    def checkpoint_copy(self, t: int, b: int, dip: tuple[str, int] | None = None) -> None:
        """A periodic copy ``replication-offset-checkpoint.<local time>`` of ``b``'s HWs."""
        if not self.brokers[b].alive:
            return
        entries = []
        for p in self.live_parts():
            rep = p.replicas.get(b)
            if rep is None or not rep.hosted:
                continue
            hw = rep.hw
            if dip is not None and dip[0] == p.tp:
                hw = dip[1]
            entries.append((p.topic, p.index, hw))
            self.ckpt_last[(b, p.tp)] = hw
        entries.sort()
        name = f"{self.hostdir(b)}/data/replication-offset-checkpoint.{copy_suffix(self.local(b, t))}"
        self.sink.write_whole(name, dumps.offset_checkpoint(entries))
        self.stats["checkpoint_copy"] += 1

    def noise(self, t: int, b: int) -> None:
        """Irrelevant INFO lines and an occasional ERROR with a stack trace."""
        if not self.brokers[b].alive:
            return
        p = self.rng.choice(self.parts)
        for line in kt.noise_lines(b, p.tp, p.leo, self.rng.randint(1, 500)):
            self.log(b, "server.log", t + self.jitter(), line, "kafka-scheduler-3")
        if self.rng.random() < 0.3:
            line, trace = kt.append_error(b, p.tp)
            self.log(b, "server.log", t + self.jitter(), line, "data-plane-kafka-request-handler-4", trace)
        self.stats["noise"] += 1

    def finish(self, t: int, corrupt_epochs: dict[tuple[int, str], tuple[int, int]]) -> None:
        """Write the collection-time files: checkpoints, partition.metadata."""
        for b in self.brokers:
            entries = []
            for p in self.live_parts():
                rep = p.replicas.get(b)
                if rep is None or not rep.hosted:
                    continue
                entries.append((p.topic, p.index, rep.hw))
                epochs = list(rep.epochs)
                fix = corrupt_epochs.get((b, p.tp))
                if fix is not None:
                    epochs = [(e, fix[1] if e == fix[0] else o) for e, o in epochs]
                base = f"{self.hostdir(b)}/data/{p.tp}"
                self.sink.write_whole(f"{base}/leader-epoch-checkpoint", dumps.leader_epoch_checkpoint(epochs))
                self.sink.write_whole(f"{base}/partition.metadata", dumps.partition_metadata(p.topic_id))
            entries.sort()
            self.sink.write_whole(f"{self.hostdir(b)}/data/replication-offset-checkpoint",
                                  dumps.offset_checkpoint(entries))
