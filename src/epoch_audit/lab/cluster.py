"""Kafka processes on loopback: configuration, storage format, start, kill -9, SIGSTOP/SIGCONT, controlled shutdown."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from epoch_audit.lab.fetch import LabError
from epoch_audit.lab.logging_config import write_logging_config

BROKER_IDS = (1, 2, 3)
# Shorter than Kafka's defaults so a few minutes show session expiries, ISR shrinks and metadata snapshots.
SESSION_TIMEOUT_MS = 6000
_COMMON_PROPERTIES = {
    "num.partitions": "3",
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    "num.replica.fetchers": "1",
    "log.segment.bytes": "1048576",
    "replica.lag.time.max.ms": "10000",
    "group.initial.rebalance.delay.ms": "0",
    "leader.imbalance.check.interval.seconds": "30",
}


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def kafka_uuid() -> str:
    """A Kafka ``Uuid`` string (22 characters of URL-safe base64), as ``kafka-storage random-uuid`` prints:
    never one starting with ``-`` (Kafka's ``Uuid.randomUuid`` draws again; a tool's argument parser
    takes it for an option: ``format -t -x...`` fails)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


@dataclass
class Node:
    """One JVM: a broker (ZooKeeper mode), a combined broker+controller (KRaft) or the ZooKeeper server."""

    node_id: int
    folder: Path
    port: int
    main_class: str
    arguments: list[str]
    process: subprocess.Popen | None = None
    starts: int = 0

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    @property
    def data(self) -> Path:
        return self.folder / "data"


@dataclass
class Cluster:
    version: str
    mode: str
    classpath: str
    work: Path
    heap: str = "320m"
    rotate: str = "hour"  # log files roll every hour (Kafka's shipped config) or every minute
    cluster_id: str = field(default_factory=kafka_uuid)
    nodes: dict[int, Node] = field(default_factory=dict)
    zookeeper: Node | None = None
    bootstrap: str = ""

    def java(self, main_class: str, *arguments: str, logging: list[str] | None = None) -> list[str]:
        options = [f"-Xmx{self.heap}", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                   "-Djava.awt.headless=true", *(logging or [])]
        return ["java", *options, "-cp", self.classpath, main_class, *arguments]

    def configure(self) -> None:
        """Write every node's configuration (and, for KRaft, format its storage)."""
        self.work.mkdir(parents=True, exist_ok=True)
        ports = free_ports(2 * len(BROKER_IDS) + 1)
        broker_ports, controller_ports = ports[: len(BROKER_IDS)], ports[len(BROKER_IDS):-1]
        self.bootstrap = ",".join(f"127.0.0.1:{p}" for p in broker_ports)
        voters = ",".join(f"{n}@127.0.0.1:{p}" for n, p in zip(BROKER_IDS, controller_ports, strict=True))
        if self.mode == "zk":
            self._configure_zookeeper(ports[-1])
        for node_id, port, controller_port in zip(BROKER_IDS, broker_ports, controller_ports, strict=True):
            folder = self.work / f"node-{node_id}"
            (folder / "logs").mkdir(parents=True, exist_ok=True)
            properties = dict(_COMMON_PROPERTIES, **{"log.dirs": str(folder / "data")})
            if self.mode == "kraft":
                properties.update({
                    "process.roles": "broker,controller", "node.id": str(node_id),
                    "controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
                    "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
                    "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                    "inter.broker.listener.name": "PLAINTEXT",
                    "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS), "broker.heartbeat.interval.ms": "1000",
                    "metadata.log.max.snapshot.interval.ms": "30000",
                    "metadata.log.max.record.bytes.between.snapshots": "20000",
                })
            else:
                properties.update({
                    "broker.id": str(node_id), "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                    "zookeeper.connect": f"127.0.0.1:{self.zookeeper.port}" if self.zookeeper else "",
                    "zookeeper.session.timeout.ms": str(SESSION_TIMEOUT_MS),
                })
            config = folder / "server.properties"
            config.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
            self.nodes[node_id] = Node(node_id, folder, port, "kafka.Kafka", [str(config)])
            if self.mode == "kraft":
                self._run_tool(folder / "format.out", "kafka.tools.StorageTool", "format", "-t", self.cluster_id,
                               "-c", str(config))

    def _configure_zookeeper(self, port: int) -> None:
        folder = self.work / "zookeeper"
        (folder / "logs").mkdir(parents=True, exist_ok=True)
        config = folder / "zoo.cfg"
        config.write_text(f"dataDir={folder / 'data'}\nclientPort={port}\nclientPortAddress=127.0.0.1\n"
                          "tickTime=1000\nmaxClientCnxns=0\nadmin.enableServer=false\n4lw.commands.whitelist=*\n")
        self.zookeeper = Node(0, folder, port, "org.apache.zookeeper.server.ZooKeeperServerMain", [str(config)])

    def _run_tool(self, output: Path, main_class: str, *arguments: str, timeout: float = 120) -> str:
        with output.open("w") as out:
            result = subprocess.run(self.java(main_class, *arguments, logging=["-Dlog4j.configuration=none"]),
                                    stdout=out, stderr=subprocess.STDOUT, timeout=timeout)
        text = output.read_text()
        if result.returncode != 0:
            raise LabError(f"{main_class} {' '.join(arguments[:2])} failed (exit {result.returncode}): "
                           f"{text.strip().splitlines()[-1:] or ''} (see {output})")
        return text

    def tool(self, main_class: str, *arguments: str, timeout: float = 120) -> str:
        """Run one of Kafka's command-line tools against the cluster; its output."""
        output = self.work / "tools.out"
        return self._run_tool(output, main_class, *arguments, timeout=timeout)

    def start(self, node: Node) -> None:
        logging = write_logging_config(self.version, node.folder, self.rotate)
        command = self.java(node.main_class, *node.arguments, logging=[f"-Dkafka.logs.dir={node.logs}", *logging])
        stdout = (node.logs / "kafkaServer.out").open("a")
        node.process = subprocess.Popen(command, stdout=stdout, stderr=subprocess.STDOUT, cwd=node.folder,
                                        start_new_session=True)
        stdout.close()
        node.starts += 1

    def wait_ready(self, node: Node, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if node.process is not None and node.process.poll() is not None:
                raise LabError(f"node {node.node_id} exited with {node.process.returncode} while starting "
                               f"(see {node.logs / 'kafkaServer.out'})")
            if port_open(node.port) and (node is self.zookeeper or self._started_lines(node) >= node.starts):
                return
            time.sleep(0.5)
        raise LabError(f"node {node.node_id} not ready after {timeout:.0f} s (see {node.logs})")

    @staticmethod
    def _started_lines(node: Node) -> int:
        """How many times this node's server.log says the server started (one per incarnation)."""
        count = 0
        for path in node.logs.glob("server.log*"):
            with path.open(errors="replace") as lines:
                count += sum(1 for line in lines if "started (kafka.server." in line and "Kafka Server" in line
                             or "] started (kafka.server.KafkaServer)" in line)
        return count

    def start_all(self) -> None:
        if self.zookeeper is not None:
            self.start(self.zookeeper)
            self.wait_ready(self.zookeeper)
        for node in self.nodes.values():
            self.start(node)
        for node in self.nodes.values():
            self.wait_ready(node)

    def signal(self, node: Node, sig: signal.Signals) -> None:
        if node.process is None or node.process.poll() is not None:
            raise LabError(f"node {node.node_id} is not running")
        os.kill(node.process.pid, sig)

    def kill(self, node: Node) -> None:
        self.signal(node, signal.SIGKILL)
        node.process.wait()

    def shutdown(self, node: Node, timeout: float = 60) -> None:
        """SIGTERM: Kafka's controlled shutdown (leaders moved away first), as ``kafka-server-stop`` does."""
        if node.process is None or node.process.poll() is not None:
            return
        os.kill(node.process.pid, signal.SIGCONT)
        os.kill(node.process.pid, signal.SIGTERM)
        try:
            node.process.wait(timeout)
        except subprocess.TimeoutExpired:
            node.process.kill()
            node.process.wait()

    def stop_all(self, timeout: float = 40) -> None:
        """SIGTERM to every broker at once: one by one, the last KRaft voters would wait for a quorum forever."""
        running = [n for n in self.nodes.values() if n.process is not None and n.process.poll() is None]
        for node in running:
            os.kill(node.process.pid, signal.SIGCONT)
            os.kill(node.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for node in running:
            try:
                node.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                node.process.kill()
                node.process.wait()
        if self.zookeeper is not None:
            self.shutdown(self.zookeeper)

    def kill_all(self) -> None:
        """Last resort on an error: nothing of the lab stays running."""
        for node in [*self.nodes.values(), *([self.zookeeper] if self.zookeeper else [])]:
            if node.process is not None and node.process.poll() is None:
                os.killpg(node.process.pid, signal.SIGKILL)
                node.process.wait()
