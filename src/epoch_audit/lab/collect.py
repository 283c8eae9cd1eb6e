"""What a platform team's agent collects, in the ``cluster=<id>/broker-<id>/`` layout the audit reads.

Per host: every log file the log4j config writes (rotated ones included), periodic copies of the checkpoint files
named ``<file>.<yyyy-MM-ddTHH-mm-ss>`` (local time, as docs/operations.md asks), ``kafka-dump-log --deep-iteration``
text of every data segment and, for KRaft, ``--cluster-metadata-decoder`` text of the metadata log and its latest
snapshot.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

from epoch_audit.lab.cluster import Cluster, Node

LOG_FILES = ("server.log", "state-change.log", "kafka-request.log", "controller.log", "log-cleaner.log",
             "kafka-authorizer.log")
CHECKPOINT_FILES = ("replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                    "log-start-offset-checkpoint")
METADATA_PARTITION = "__cluster_metadata-0"


def host_folder(out: Path, cluster: Cluster, node: Node) -> Path:
    return out / f"cluster={cluster.cluster_id}" / f"broker-{node.node_id}"


class CheckpointCopier:
    """Copies every host's checkpoint files every ``interval`` seconds, when they changed, as a cron job would."""

    def __init__(self, cluster: Cluster, out: Path, interval: float) -> None:
        self.cluster, self.out, self.interval = cluster, out, interval
        self._last: dict[Path, bytes] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="checkpoint-copier", daemon=True)
        self.copies = 0

    def __enter__(self) -> CheckpointCopier:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.copy_once()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.copy_once()

    def copy_once(self) -> None:
        stamp = time.strftime("%Y-%m-%dT%H-%M-%S", time.localtime())
        for node in self.cluster.nodes.values():
            target = host_folder(self.out, self.cluster, node) / "data"
            sources = [node.data / name for name in CHECKPOINT_FILES]
            for partition in sorted(p for p in node.data.glob("*-*") if p.is_dir() and p.name != METADATA_PARTITION):
                sources += [partition / "leader-epoch-checkpoint", partition / "partition.metadata"]
            for source in sources:
                try:
                    content = source.read_bytes()
                except OSError:  # not written yet, or being replaced this instant
                    continue
                if not content or self._last.get(source) == content:
                    continue
                self._last[source] = content
                relative = source.relative_to(node.data)
                name = relative.name if relative.name == "partition.metadata" else f"{relative.name}.{stamp}"
                destination = target / relative.parent / name
                destination.parent.mkdir(parents=True, exist_ok=True)
                destination.write_bytes(content)
                self.copies += 1


def copy_logs(cluster: Cluster, out: Path) -> int:
    copied = 0
    for node in cluster.nodes.values():
        target = host_folder(out, cluster, node)
        target.mkdir(parents=True, exist_ok=True)
        for path in sorted(node.logs.iterdir()):
            if any(path.name == name or path.name.startswith(name + ".") for name in LOG_FILES):
                shutil.copy2(path, target / path.name)
                copied += 1
    return copied


def _dump(cluster: Cluster, node: Node, files: list[Path], target: Path, suffix: str, *options: str) -> int:
    """One DumpLogSegments JVM for all ``files``; its output cut at each ``Dumping <path>`` into one file per input."""
    if not files:
        return 0
    target.mkdir(parents=True, exist_ok=True)
    text = cluster.tool("kafka.tools.DumpLogSegments", *options, "--files", ",".join(map(str, files)), timeout=600)
    written, current, lines = 0, None, []
    for line in text.splitlines(keepends=True):
        if line.startswith("Dumping "):
            written += _write_dump(current, lines, target, suffix)
            current, lines = Path(line[len("Dumping "):].strip()), []
        if current is not None:
            lines.append(line)
    return written + _write_dump(current, lines, target, suffix)


def _write_dump(source: Path | None, lines: list[str], target: Path, suffix: str) -> int:
    if source is None:
        return 0
    (target / f"{source.parent.name}-{source.name}{suffix}").write_text("".join(lines))
    return 1


def dump_segments(cluster: Cluster, out: Path) -> int:
    dumped = 0
    for node in cluster.nodes.values():
        host = host_folder(out, cluster, node)
        segments = sorted(p for p in node.data.glob("*-*/*.log") if p.parent.name != METADATA_PARTITION)
        dumped += _dump(cluster, node, segments, host / "kafka-dump-log", ".txt", "--deep-iteration")
        if cluster.mode == "kraft":
            metadata = node.data / METADATA_PARTITION
            files = sorted(metadata.glob("*.log"))
            snapshots = sorted(metadata.glob("*.checkpoint"))
            dumped += _dump(cluster, node, files + snapshots[-1:], host / "metadata-dump", ".txt",
                            "--cluster-metadata-decoder")
    return dumped
