"""The KRaft control plane: the __cluster_metadata log and the lines its records make brokers write.

Every decision is one metadata batch (written to the dump of the first controller and replayed on
every controller); the brokers then apply the committed partition states.
"""

from __future__ import annotations

from typing import Any

from epoch_audit_tools.simulator.formats import dumps
from epoch_audit_tools.simulator.formats import kafka_text as kt
from epoch_audit_tools.simulator.formats import metadata as md
from epoch_audit_tools.simulator.formats import request_log as rl
from epoch_audit_tools.simulator.kafka_cluster import CONTROLLERS, KafkaCluster
from epoch_audit_tools.simulator.model import Partition, PartitionChange, PState


class KraftControlPlane(KafkaCluster):
    """KRaft controller decisions: registrations, fencing, controlled shutdown, failover, ISR joins."""

    def kraft_commit(self, t: int, records: list[md.Record], ctx: list[dict[str, Any]] | None = None,
                     write: bool = True) -> int:
        """Append one metadata batch at ``t``; returns the base offset. Replay lines on every controller."""
        base = self.metadata_offset
        ctx = ctx or [{} for _ in records]
        ct = self.local(self.active, t)
        rel = f"{self.hostdir(CONTROLLERS[0])}/metadata-dump/__cluster_metadata-0.txt"
        if self.metadata_offset == 0 and self.metadata_position == 0:
            self.sink.write(rel, dumps.header(self.version, "/var/lib/kafka/meta/__cluster_metadata-0/00000000000000000000.log"))
        lines = [md.payload(r) for r in records]
        size = 61 + sum(len(x) // 2 + 12 for x in lines)
        text = dumps.batch_line(self.version, base, base + len(records) - 1, -1, -1, -1, self.raft_epoch,
                                self.metadata_position, ct, size)
        text += "".join(dumps.record_line(base + i, ct, x) for i, x in enumerate(lines))
        self.sink.write(rel, text)
        self.metadata_position += size
        self.metadata_offset += len(records)
        self.stats["md_batch"] += 1
        for i, rec in enumerate(records):
            self.stats[f"md:{rec[0]}"] += 1
            for c in CONTROLLERS:
                for line in md.replay_lines(self.version, c, rec, base + i, ctx[i]):
                    self.log(c, "controller.log", t + 1, line, "quorum-controller-0-event-handler")
        return base

    def kraft_bootstrap(self, t: int) -> None:
        """Raft election, bootstrap records, broker registrations, topics."""
        for c in CONTROLLERS:
            self.log(c, "server.log", t, md.raft_transition(self.version, c, self.raft_epoch, self.active, CONTROLLERS,
                                                            c == self.active), "raft-io-thread")
        recs: list[md.Record] = []
        if self.version.at_least("3.6"):
            recs.append(md.begin_txn_record("Bootstrap records"))
        recs.append(md.feature_level_record(self.version))
        if self.version.at_least("3.6"):
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
                    self.version, s.replicas, s.isr, s.leader, s.le, s.pe)})
            self.kraft_commit(t, recs, ctx)
            self.brokers_apply(t + 20, [(p, None, p.state) for p in ps])
            t += 200

    def kraft_register(self, t: int, b: int, initial: bool = False) -> None:
        """RegisterBrokerRecord (fenced); the broker epoch is the record's metadata offset."""
        br = self.brokers[b]
        br.epoch = self.metadata_offset
        br.incarnation = self.uuid()
        br.alive, br.fenced, br.in_controlled_shutdown = True, True, False
        br.registrations += 1
        rec = md.register_broker_record(self.version, b, br.incarnation, br.epoch, f"kafka-{b}.prod.internal")
        self.kraft_commit(t, [rec], [{"initial": initial}])
        self.stats["broker_registration"] += 1

    def kraft_unfence(self, t: int, b: int) -> None:
        """BrokerRegistrationChangeRecord fenced=-1."""
        br = self.brokers[b]
        br.fenced = False
        self.kraft_commit(t, [md.registration_change_record(b, br.epoch, fenced=-1)])
        self.stats["unfence"] += 1

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
            self.log(self.active, "controller.log", t, md.fencing_line(self.version, self.active, b),
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
        self.log_state_change(b, t + 10, kt.kraft_stopped_fetchers_cs(b, len(moves)))
        self.brokers_apply(t + 20, applied, skip={b})
        self.stats["controlled_shutdown"] += 1

    def kraft_failover(self, t: int) -> None:
        """The active controller resigns; the next one wins the raft election (epoch + 1)."""
        self.raft_epoch += 1
        self.active = CONTROLLERS[(CONTROLLERS.index(self.active) + 1) % len(CONTROLLERS)]
        for c in CONTROLLERS:
            self.log(c, "server.log", t + self.jitter(), md.raft_transition(
                self.version, c, self.raft_epoch, self.active, CONTROLLERS, c == self.active), "raft-io-thread")
        if self.version.at_least("3.3"):
            self.kraft_commit(t + 50, [md.noop_record()])
        self.stats["controller_failover"] += 1

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
                epochs.append((x, e if self.version.at_least("3.5") else -1))
            else:
                epochs.append((x, p.replicas[x].last_fetch_epoch if self.version.at_least("3.5") else -1))
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
            req, resp = rl.alter_partition(self.version, ld, self.brokers[ld].epoch, p.topic, p.topic_id, p.index, s.le,
                                           epochs, s.pe, 0, new.le, new.isr, new.pe)
            self.log_request(self.active, tc + 2, rl.completed(self.version, "ALTER_PARTITION", corr, str(ld), req, resp,
                                                       self.conn(self.active, ld), 3.1, "CONTROLLER"))
            self.log(ld, "server.log", tc + 10, kt.isr_updated(self.version, p.tp, ld, new.isr, new.pe),
                     "kafka-scheduler-1")
            self.brokers_apply(tc + 12, applied, skip={ld})
            self.stats["isr_expand"] += 1
        else:
            self.log(self.active, "controller.log", tc, md.rejecting_ineligible(
                self.version, self.active, ld, p.tp, r, sent, registered, epochs), "quorum-controller-0-event-handler")
            req, resp = rl.alter_partition(self.version, ld, self.brokers[ld].epoch, p.topic, p.topic_id, p.index, s.le,
                                           epochs, s.pe, 107)
            self.log_request(self.active, tc + 2, rl.completed(self.version, "ALTER_PARTITION", corr, str(ld), req, resp,
                                                       self.conn(self.active, ld), 1.1, "CONTROLLER"))
            self.log(ld, "server.log", tc + 10, kt.alter_partition_ineligible(
                self.version, p.tp, ld, r, s.le, epochs, s.pe, s.isr), "kafka-scheduler-1")
            self.stats["isr_expand_rejected"] += 1
        return ok
