"""Cluster state and its small explicit transitions.

:class:`PartitionChange` mirrors Kafka's ``PartitionChangeBuilder``: start from the committed
state, set a new leader and/or ISR, and :meth:`PartitionChange.build` returns the next state with
the epochs bumped by the rules of the controller in use:

* KRaft: the leader epoch goes up by one only when the record sets ``leader``; the partition epoch
  goes up on every change. Before metadata.version 3.6-IV0 an ISR shrink re-sends the current
  leader (KAFKA-15021), so shrinks bump the leader epoch too.
* ZooKeeper: a leader election or a controller-side ISR removal bumps the leader epoch; every
  write bumps the zkVersion (partition epoch). A leader's AlterPartition only bumps the zkVersion.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass
class Broker:
    """A broker's registration as the controller knows it."""

    id: int
    epoch: int = -1
    incarnation: str = ""
    alive: bool = False
    fenced: bool = True
    in_controlled_shutdown: bool = False
    registrations: int = 0
    retired: bool = False  # down for good (a fault took it out); never restarted


@dataclass(frozen=True)
class PState:
    """Committed partition state."""

    leader: int
    le: int
    pe: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]


@dataclass
class PartitionChange:
    """Builder for the next :class:`PState` (see module docstring for the epoch rules)."""

    base: PState
    kraft: bool
    bump_on_shrink: bool = False
    controller_isr_removal: bool = False
    new_leader: int | None = None
    new_isr: tuple[int, ...] | None = None

    def set_leader(self, leader: int) -> PartitionChange:
        """Elect ``leader`` (-1 = no leader)."""
        self.new_leader = leader
        return self

    def set_isr(self, isr: tuple[int, ...]) -> PartitionChange:
        """Replace the ISR."""
        self.new_isr = tuple(isr)
        return self

    def record_leader(self) -> int | None:
        """The ``leader`` a KRaft PartitionChangeRecord carries (None = field left at default)."""
        if self.new_leader is not None and self.new_leader != self.base.leader:
            return self.new_leader
        if self.kraft and self.bump_on_shrink and self.new_isr is not None and len(self.new_isr) < len(self.base.isr):
            return self.base.leader
        return None

    def build(self) -> PState:
        """The next state."""
        b = self.base
        leader = self.new_leader if self.new_leader is not None else b.leader
        isr = self.new_isr if self.new_isr is not None else b.isr
        if self.kraft:
            bump = self.record_leader() is not None
        else:
            bump = leader != b.leader or self.controller_isr_removal
        return PState(leader, b.le + 1 if bump else b.le, b.pe + 1, isr, b.replicas)


@dataclass
class Batch:
    """A produced record batch as written on every replica that holds it."""

    base: int
    last: int
    epoch: int
    producer_id: int
    create_time: int
    size: int


@dataclass
class Replica:
    """One broker's copy of a partition."""

    leo: int = 0
    hw: int = 0
    le: int = -1  # last leader epoch this broker accepted for the partition (its own log order)
    epochs: list[tuple[int, int]] = field(default_factory=list)
    position: int = 0
    hosted: bool = True
    dump_started: bool = False
    last_leader_hw: int = -1
    last_fetch_epoch: int = -1  # broker epoch carried by its last caught-up fetch
    led_epochs: set[int] = field(default_factory=set)  # epochs this broker logged a Leader line for
    stopped: bool = False  # fetcher removed by an accepted StopReplica (delete=false)
    leader_since: int = -(1 << 62)  # true time of its last Leader line (it answers PRODUCE only after)

    def assign_epoch(self, epoch: int, start: int) -> None:
        """Leader-epoch cache: add ``epoch`` from ``start`` if newer than the last entry."""
        if not self.epochs or epoch > self.epochs[-1][0]:
            self.epochs.append((epoch, start))


@dataclass
class Partition:
    """A topic-partition: committed state, log end offset and per-broker replicas."""

    topic: str
    index: int
    topic_id: str
    state: PState
    leo: int = 0
    replicas: dict[int, Replica] = field(default_factory=dict)
    recent: deque[Batch] = field(default_factory=deque)
    deleted: bool = False
    hold: bool = False  # no client traffic (a fault needs the log end offset still)

    @property
    def tp(self) -> str:
        """``<topic>-<partition>``."""
        return f"{self.topic}-{self.index}"

    def trim_recent(self) -> None:
        """Forget batches every hosted replica already holds (bounded catch-up memory)."""
        low = min((r.leo for r in self.replicas.values() if r.hosted), default=self.leo)
        while self.recent and self.recent[0].last < low:
            self.recent.popleft()
