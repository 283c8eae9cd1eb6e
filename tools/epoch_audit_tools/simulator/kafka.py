"""The Kafka cluster driver (ZooKeeper and KRaft control planes, one data plane).

:class:`KafkaSim` owns the model (brokers, partitions), a time-ordered event queue and the output
hosts (:class:`.kafka_cluster.KafkaCluster`). Control-plane primitives (``kraft_*`` in
:mod:`.kafka_kraft`, ``zk_*`` in :mod:`.kafka_zk`) commit decisions and make every broker
that would react write the same lines a real one writes; data-plane primitives append produce
batches, replicate them and log fetches. Benign episodes (restarts, failovers, deletions) and the
fault injectors of :mod:`epoch_audit_tools.simulator.faults` are both built from these primitives, so a fault
differs from normal operation only in the one step it breaks.
"""

from __future__ import annotations

from collections.abc import Sequence

from epoch_audit_tools.simulator.clock import copy_suffix
from epoch_audit_tools.simulator.formats import dumps
from epoch_audit_tools.simulator.formats import kafka_text as kt
from epoch_audit_tools.simulator.formats import request_log as rl
from epoch_audit_tools.simulator.kafka_cluster import NEW_LEADER_QUIET_MS, TOPICS
from epoch_audit_tools.simulator.kafka_kraft import KraftControlPlane
from epoch_audit_tools.simulator.kafka_zk import ZkControlPlane
from epoch_audit_tools.simulator.model import Batch, Partition, PState, Replica


class KafkaSim(KraftControlPlane, ZkControlPlane):
    """Discrete-event simulation of one Kafka cluster: either control plane, the data plane and the
    periodic output (the mode picks which control-plane methods run)."""

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

    # ------------------------------------------------------------------ data plane
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
        req, resp = rl.produce(self.version, p.topic, p.index, batch.size, 0, batch.base)
        corr = self.next_corr(-ld)
        self.log_request(ld, t + 1, rl.completed(self.version, "PRODUCE", corr, f"{p.topic}-producer-1", req, resp,
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
        req, resp = rl.fetch(self.version, f, be, p.topic, p.topic_id, p.index, p.state.le, fetch_offset, last_epoch,
                             hw, size, 1702244 + f, self.session % 100000)
        corr = self.next_corr(-1000 - f)
        self.stats["fetch"] += 1
        if fetch_offset >= hw:
            rep.last_fetch_epoch = be
        return self.log_request(ld, t, rl.completed(self.version, "FETCH", corr, f"broker-{f}-fetcher-0", req, resp,
                                            self.conn(ld, f), 1.2, software=("apache-kafka-java", str(self.version)[:-2])))

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

    def expand_isr(self, t: int, p: Partition, r: int) -> None:
        """Mode-independent ISR expansion of a caught-up replica."""
        if self.kraft:
            self.kraft_expand_isr(t, p, r)
        else:
            self.zk_expand_isr(t, p, r)

    # ------------------------------------------------------------------ periodic output
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
            self.last_checkpoint_hw[(b, p.tp)] = hw
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
