"""The fault schedule: read from YAML (or ``none``), run against the cluster, every step stamped with wall-clock time.

A schedule file::

    faults:
      - {at: 20, action: kill, target: leader, topic: lab-acks-all, partition: 0, down: 5}
      - {at: 45, action: pause, target: leader, topic: lab-acks-1, partition: 1, seconds: 10}
      - {at: 70, action: kill, target: controller, down: 5}
      - {at: 90, action: shutdown, target: broker, broker: 2, down: 3}
      - {at: 110, action: unclean, topic: lab-unclean}

``at`` is seconds after traffic starts (a step that is due while the previous one still runs waits for it);
``down`` is how long a killed or shut-down node stays down before it restarts (a restart is a new incarnation:
a new broker epoch); ``seconds`` is how long a paused node stays stopped (past the session timeout, it wakes up a
zombie).
"""

from __future__ import annotations

import datetime as dt
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from epoch_audit.lab.cluster import SESSION_TIMEOUT_MS, Cluster, Node
from epoch_audit.lab.fetch import LabError
from epoch_audit.lab.traffic import active_controller, describe

ACTIONS = ("kill", "pause", "shutdown", "restart", "unclean")
TARGETS = ("leader", "controller", "broker")


@dataclass(frozen=True)
class Fault:
    at: float
    action: str
    target: str = "leader"
    topic: str = "lab-acks-all"
    partition: int = 0
    broker: int | None = None
    down: float = 5.0
    seconds: float = SESSION_TIMEOUT_MS / 1000 + 6


def load_schedule(spec: str) -> list[Fault]:
    """``none`` or a YAML file with a ``faults`` list; a bad file is a usage error naming it (exit 2)."""
    if spec == "none":
        return []
    path = Path(spec)
    if not path.is_file():
        raise LabError(f"--faults {spec}: not a file (give a YAML schedule or 'none')", exit_code=2)
    try:
        document = yaml.safe_load(path.read_text()) or {}
        entries = document.get("faults", []) if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise ValueError("expected a mapping with a 'faults' list")
        faults = [Fault(**entry) for entry in entries]
    except (yaml.YAMLError, TypeError, ValueError, AttributeError) as err:
        raise LabError(f"--faults {spec}: {str(err).splitlines()[0]}", exit_code=2) from err
    for fault in faults:
        if fault.action not in ACTIONS or fault.target not in TARGETS:
            raise LabError(f"--faults {spec}: unknown action {fault.action!r} or target {fault.target!r} "
                           f"(actions {', '.join(ACTIONS)}; targets {', '.join(TARGETS)})", exit_code=2)
        if fault.target == "broker" and fault.broker is None:
            raise LabError(f"--faults {spec}: target broker needs 'broker: <id>'", exit_code=2)
    return sorted(faults, key=lambda fault: fault.at)


def now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class FaultRunner:
    """Runs a schedule; ``steps`` is the manifest's record of what was done to which node, and when."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.steps: list[dict[str, Any]] = []

    def step(self, what: str, node: Node | None = None, **detail: Any) -> None:
        step = {"time": now(), "step": what, **({"node": node.node_id} if node else {}), **detail}
        self.steps.append(step)
        print(f"lab: {step['time']} {what}" + (f" node {node.node_id}" if node else ""), flush=True, file=sys.stderr)

    def _resolve(self, fault: Fault) -> Node:
        if fault.target == "broker":
            node_id = fault.broker
        elif fault.target == "controller":
            node_id = active_controller(self.cluster)
        else:
            node_id = describe(self.cluster, fault.topic)[fault.partition][0]
        if node_id not in self.cluster.nodes:
            raise LabError(f"fault at {fault.at}: no running node for target {fault.target} ({node_id})")
        return self.cluster.nodes[node_id]

    def run(self, faults: list[Fault], started: float) -> None:
        for fault in faults:
            time.sleep(max(0.0, started + fault.at - time.monotonic()))
            if fault.action == "unclean":
                self._unclean(fault)
                continue
            node = self._resolve(fault)
            detail = {"fault_at": fault.at, "target": fault.target}
            if fault.target == "leader":
                detail.update(topic=fault.topic, partition=fault.partition)
            if fault.action == "pause":
                self.cluster.signal(node, signal.SIGSTOP)
                self.step("SIGSTOP", node, **detail)
                time.sleep(fault.seconds)
                self.cluster.signal(node, signal.SIGCONT)
                self.step("SIGCONT", node, **detail)
                continue
            if fault.action == "kill":
                self.cluster.kill(node)
                self.step("kill -9", node, **detail)
            elif fault.action in ("shutdown", "restart"):
                self.step("SIGTERM (controlled shutdown)", node, **detail)
                self.cluster.shutdown(node)
                self.step("stopped", node, **detail)
            down = fault.down
            if fault.action == "kill" and self.cluster.mode == "zk":
                # restarted before its killed session expires, a ZooKeeper-mode broker finds its ephemeral
                # /brokers/ids node still there and exits (NodeExistsException): wait the session out
                down = max(down, SESSION_TIMEOUT_MS / 1000 + 1)
            time.sleep(down)
            self._restart(node)

    def _restart(self, node: Node) -> None:
        self.cluster.start(node)
        self.step("restart", node)
        self.cluster.wait_ready(node)
        self.step("ready", node)

    def _unclean(self, fault: Fault) -> None:
        """Unclean leader election: stop the followers, keep writing with acks=1 to the lone leader, kill it,
        then bring a stale follower back first so the controller elects it out of the ISR."""
        leader_id, replicas, _ = describe(self.cluster, fault.topic)[fault.partition]
        followers = [self.cluster.nodes[r] for r in replicas if r != leader_id]
        stale = followers[0]
        for follower in followers:
            self.cluster.kill(follower)
            self.step("kill -9 (follower of unclean topic)", follower, topic=fault.topic)
        time.sleep(SESSION_TIMEOUT_MS / 1000 + 8)  # the ISR shrinks to the leader; acks=1 writes go on
        leader = self.cluster.nodes[leader_id]
        self.cluster.kill(leader)
        self.step("kill -9 (leader of unclean topic)", leader, topic=fault.topic)
        self._restart(stale)
        time.sleep(fault.down)
        for node in [*followers[1:], leader]:
            self._restart(node)
