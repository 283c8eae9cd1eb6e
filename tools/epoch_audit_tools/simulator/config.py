"""Simulation parameters and the fault catalogue (which fault applies to which mode)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from epoch_audit_tools.simulator.formats.common import Version

MODES = ("kafka-zk", "kafka-kraft", "redpanda")

# fault id -> (modes it applies to, description). Ids equal the spec's violation ids.
FAULTS: dict[str, tuple[tuple[str, ...], str]] = {
    "stale_stop_replica_accepted": (("kafka-zk",), "a reordered StopReplica older than the broker's LE is accepted"),
    "stale_controller_epoch_accepted": (("kafka-zk",), "a zombie controller's LeaderAndIsr is applied"),
    "stale_broker_epoch_isr_join": (("kafka-kraft",), "KAFKA-14139: a replica joins the ISR on stale evidence"),
    "fenced_replica_in_isr": (("kafka-kraft",), "a fence batch leaves the fenced broker in an ISR"),
    "last_replica_fenced_in_isr": (("kafka-kraft",), "the only ISR member is fenced and stays in the ISR"),
    "write_accepted_by_fenced_leader": (("kafka-zk", "kafka-kraft"), "a deposed leader keeps appending"),
    "leader_epoch_regression": (("kafka-zk", "kafka-kraft", "redpanda"), "a broker's own LE/term goes back"),
    "two_leaders_same_epoch": (("kafka-zk", "kafka-kraft", "redpanda"), "two leaders claim one LE/term"),
    "high_watermark_regression": (("kafka-zk", "kafka-kraft"), "a broker's HW series goes back"),
    "epoch_start_offset_divergence": (("kafka-zk", "kafka-kraft"), "a replica's epoch start offset differs"),
}
DEFAULT_RATE = 1.0  # injections per simulated hour (at least one per enabled fault)


def parse_faults(spec: str, mode: str) -> dict[str, float]:
    """``default`` | ``none`` | ``id[:rate],id[:rate]`` -> {fault id: rate}, restricted to ``mode``.

    Raises ValueError on an unknown id. Faults that do not apply to ``mode`` are dropped (the
    manifest lists them under ``faults_not_applicable``).
    """
    spec = spec.strip()
    if spec == "none" or spec == "":
        return {}
    if spec == "default":
        chosen = {k: DEFAULT_RATE for k in FAULTS}
    else:
        chosen = {}
        for item in spec.split(","):
            name, _, rate = item.strip().partition(":")
            if name not in FAULTS:
                raise ValueError(f"unknown fault {name!r}; known: {', '.join(FAULTS)}")
            chosen[name] = float(rate) if rate else DEFAULT_RATE
    return {k: r for k, r in chosen.items() if mode in FAULTS[k][0] and r > 0}


@dataclass
class SimConfig:
    """Everything a run depends on (recorded in the manifest)."""

    out_dir: Path
    seed: int
    mode: str = "kafka-kraft"
    kafka_version: str = "3.6"
    brokers: int = 5
    partitions: int = 200
    hours: float = 24.0
    produce_rate: float = 20.0
    faults: str = "default"
    strimzi: bool = False
    progress: bool = True
    cluster_id: str = "prod-eu1"
    start: str = "2024-03-05T00:00:00"
    clock_skew_ms: int = 400
    max_clock_skew_ms: int = 1000
    checkpoint_interval_s: int = 600
    episode_slot_s: int = 90
    fault_rates: dict[str, float] = field(default_factory=dict)

    @property
    def version(self) -> Version:
        """The Kafka version whose templates are used."""
        return Version.parse(self.kafka_version)

    def validate(self) -> None:
        """Reject parameter combinations no real cluster has."""
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        if self.brokers < 3:
            raise ValueError("at least 3 brokers (replication factor 3)")
        if self.partitions < 4:
            raise ValueError("at least 4 partitions")
        if 2 * self.clock_skew_ms >= self.max_clock_skew_ms:
            # pairwise skew must stay inside the checker tolerance, else clean histories would
            # contain cross-host orderings the checker may legitimately misread
            raise ValueError("clock_skew_ms must be below max_clock_skew_ms / 2")
        v = self.version
        if self.mode == "kafka-zk" and not (Version(2, 6) <= v < Version(4, 0)):
            raise ValueError("kafka-zk supports Kafka 2.6-3.9")
        if self.mode == "kafka-kraft" and not (Version(3, 3) <= v < Version(4, 1)):
            raise ValueError("kafka-kraft supports Kafka 3.3-3.9 and 4.0")
        self.fault_rates = parse_faults(self.faults, self.mode)
