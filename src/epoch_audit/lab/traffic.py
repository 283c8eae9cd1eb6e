"""Topics and producers: Kafka's own TopicCommand and ProducerPerformance, so no Python Kafka client is needed."""

from __future__ import annotations

import os
import re
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from epoch_audit.lab.cluster import Cluster

_PARTITION_LINE = re.compile(
    r"Topic: (\S+)\s+Partition: (\d+)\s+Leader: (-?\d+|none)\s+Replicas: ([\d,]*)\s+Isr: ([\d,]*)"
)
_LEADER_ID = re.compile(r"LeaderId:\s+(\d+)")


@dataclass(frozen=True)
class TopicSpec:
    name: str
    acks: str
    partitions: int = 3
    configs: tuple[str, ...] = ()


LAB_TOPICS = (
    TopicSpec("lab-acks-all", "all"),
    TopicSpec("lab-acks-1", "1"),
)
UNCLEAN_TOPIC = TopicSpec("lab-unclean", "1", partitions=1,
                          configs=("unclean.leader.election.enable=true", "min.insync.replicas=1"))


class _ToolClass:
    """A command-line tool's main class: Kafka moved its Scala admin tools to Java (org.apache.kafka.tools,
    3.5–3.7), so the class a version ships is found in its jars."""

    def __init__(self, *names: str) -> None:
        self.names = names
        self.found: dict[str, str] = {}

    def of(self, cluster: Cluster) -> str:
        if cluster.classpath not in self.found:
            entries = {name.replace(".", "/") + ".class" for name in self.names}
            present: set[str] = set()
            for jar in cluster.classpath.split(os.pathsep):
                if jar.endswith(".jar") and os.path.isfile(jar):
                    with zipfile.ZipFile(jar) as archive:
                        present |= entries & set(archive.namelist())
            self.found[cluster.classpath] = next(
                (n for n in self.names if n.replace(".", "/") + ".class" in present), self.names[0]
            )
        return self.found[cluster.classpath]


_TOPIC_COMMAND = _ToolClass("org.apache.kafka.tools.TopicCommand", "kafka.admin.TopicCommand")
_QUORUM_COMMAND = _ToolClass("org.apache.kafka.tools.MetadataQuorumCommand", "kafka.admin.MetadataQuorumCommand")


def create_topic(cluster: Cluster, topic: TopicSpec) -> None:
    configs = [argument for config in topic.configs for argument in ("--config", config)]
    cluster.tool(_TOPIC_COMMAND.of(cluster), "--bootstrap-server", cluster.bootstrap, "--create",
                 "--topic", topic.name, "--partitions", str(topic.partitions), "--replication-factor", "3", *configs)


def describe(cluster: Cluster, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """partition -> (leader, replicas, isr), as TopicCommand --describe prints them."""
    text = cluster.tool(_TOPIC_COMMAND.of(cluster), "--bootstrap-server", cluster.bootstrap,
                        "--describe", "--topic", topic)
    found = {}
    for name, partition, leader, replicas, isr in _PARTITION_LINE.findall(text):
        if name == topic:
            found[int(partition)] = (-1 if leader == "none" else int(leader),
                                     [int(r) for r in replicas.split(",") if r], [int(r) for r in isr.split(",") if r])
    return found


def active_controller(cluster: Cluster) -> int:
    if cluster.mode == "kraft":
        text = cluster.tool(_QUORUM_COMMAND.of(cluster), "--bootstrap-server", cluster.bootstrap,
                            "describe", "--status")
        match = _LEADER_ID.search(text)
    else:
        assert cluster.zookeeper is not None
        text = cluster.tool("org.apache.zookeeper.ZooKeeperMain", "-server", f"127.0.0.1:{cluster.zookeeper.port}",
                            "get", "/controller")
        match = re.search(r'"brokerid":(\d+)', text)
    if match is None:
        raise RuntimeError(f"no active controller in: {text[-300:]}")
    return int(match.group(1))


def start_producer(cluster: Cluster, topic: TopicSpec, seconds: float, rate: int, output: Path) -> subprocess.Popen:
    """ProducerPerformance at ``rate`` records/s for about ``seconds``; retries on, as a real producer has them."""
    records = max(1, int(seconds * rate))
    command = cluster.java(
        "org.apache.kafka.tools.ProducerPerformance", "--topic", topic.name, "--num-records", str(records),
        "--record-size", "100", "--throughput", str(rate), "--producer-props",
        f"bootstrap.servers={cluster.bootstrap}", f"acks={topic.acks}", "linger.ms=20",
        "delivery.timeout.ms=60000", "request.timeout.ms=10000",
        logging=["-Dlog4j.configuration=none"],
    )
    with output.open("w") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
