"""The Kafka cluster state that both control planes and the data plane act on.

:class:`KafkaCluster` owns the model (brokers, partitions), a time-ordered event queue and the
output hosts, and holds what every plane shares: log writing, the partition-change rules, the
broker side of a leadership change and the replicas' segment logs. The control planes
(:mod:`.kafka_kraft`, :mod:`.kafka_zk`) and :class:`.kafka.KafkaSim` build on it.
"""

from __future__ import annotations

import base64
import heapq
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from epoch_audit_tools.simulator.clock import Clocks
from epoch_audit_tools.simulator.config import SimConfig
from epoch_audit_tools.simulator.formats import dumps
from epoch_audit_tools.simulator.formats import kafka_text as kt
from epoch_audit_tools.simulator.formats import request_log as rl
from epoch_audit_tools.simulator.formats.common import Log4j, Version
from epoch_audit_tools.simulator.model import Batch, Broker, Partition, PartitionChange, PState
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


class KafkaCluster:
    """Brokers, partitions, the event queue and the output every plane writes through."""

    def __init__(self, cfg: SimConfig, sink: FileSink, truth: Truth, rng: random.Random) -> None:
        self.cfg = cfg
        self.version: Version = cfg.version
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
        self.correlation_ids: Counter[int] = Counter()
        self.brokers = {b: Broker(b) for b in range(1, cfg.brokers + 1)}
        self.parts: list[Partition] = []
        self.hosts: list[int] = list(self.brokers) + (list(CONTROLLERS) if self.kraft else [])
        for h in self.hosts:
            self.clocks.skew(h)
        # KRaft metadata log
        self.metadata_offset = 0
        self.metadata_position = 0
        self.raft_epoch = 1
        self.active = CONTROLLERS[0] if self.kraft else 1
        self.open_txn: int | None = None
        # ZK controller
        self.controller_epoch = 1
        self.known_controller_epoch: dict[int, int] = {b: 0 for b in self.brokers}
        self.zk_epoch_base = 25769803776  # ZK czxid-like broker epochs
        self.session = 1_000_000
        self.last_checkpoint_hw: dict[tuple[int, str], int] = {}
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

    def log_state_change(self, host: int, t: int, line: kt.Line | None) -> int:
        """state-change.log."""
        return self.log(host, "state-change.log", t, line, "data-plane-kafka-request-handler-1")

    def log_request(self, host: int, t: int, text: str) -> int:
        """kafka-request.log (DEBUG ``Completed request:`` lines)."""
        if not rl.has_request_log(self.version):
            return self.local(host, t)
        self.stats["request"] += 1
        return self.log(host, "kafka-request.log", t, ("DEBUG", text, rl.LOGGER), "data-plane-kafka-network-thread-1")

    def next_corr(self, host: int) -> int:
        """Per-sender correlation ids."""
        self.correlation_ids[host] += 1
        return self.correlation_ids[host]

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

    # ------------------------------------------------------------------ partition-change rules
    def change(self, p: Partition, controller_isr_removal: bool = False) -> PartitionChange:
        """A builder for ``p`` with this cluster's epoch rules."""
        return PartitionChange(p.state, self.kraft, bump_on_shrink=not self.version.at_least("3.6"),
                               controller_isr_removal=controller_isr_removal)

    def eligible(self, r: int) -> bool:
        """Alive, unfenced and not shutting down."""
        br = self.brokers[r]
        return br.alive and not br.fenced and not br.in_controlled_shutdown

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

    def live_parts(self) -> list[Partition]:
        """Partitions of topics that still exist."""
        return [p for p in self.parts if not p.deleted]

    # ------------------------------------------------------------------ broker side
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
            self.log_state_change(b, t, kt.leader_line(self.version, b, p.tp, p.topic_id, s.le, rep.leo, s.pe, hw, s.isr,
                                         prev_leader, prev))
            rep.assign_epoch(s.le, rep.leo)
            rep.led_epochs.add(s.le)
            rep.last_leader_hw = hw
            rep.leader_since = t
            self.stats["become_leader"] += 1
        else:
            self.log_state_change(b, t, kt.follower_line(self.version, b, p.tp, s.le, rep.leo, s.pe, rep.hw, s.leader, prev_leader, prev))
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
                self.log_state_change(b, tb, kt.kraft_transitioning(b, len(leaders), True))
            for p, old, new in leaders:
                self.broker_transition(tb, b, p, new, old.leader if old is not None and old.leader >= 0 else None)
            if followers:
                self.log_state_change(b, tb, kt.kraft_transitioning(b, len(followers), False))
            for p, old, new in followers:
                self.broker_transition(tb, b, p, new, old.leader if old is not None and old.leader >= 0 else None)
            if self.version.at_least("3.3"):
                for p, _old, new in items:
                    rep = p.replicas[b]
                    if new.le == rep.le and new.leader != b and (p, _old, new) not in followers:
                        st = kt.lai_partition_state(self.version, p.topic, p.index, -1, new.leader, new.le, new.isr,
                                                    new.pe, new.replicas)
                        self.log_state_change(b, tb, kt.skipped_follower_line(b, p.tp, p.topic_id, st, new.le))

    # ------------------------------------------------------------------ replica logs
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
            self.sink.write(rel, dumps.header(self.version, f"{DATA_DIR}/{p.tp}/00000000000000000000.log"))
            rep.dump_started = True
        self.sink.write(rel, dumps.batch_line(self.version, batch.base, batch.last, batch.producer_id, 0, 0,
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
