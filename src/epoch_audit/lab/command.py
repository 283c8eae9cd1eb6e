"""``epoch-audit lab``: start a real Kafka cluster, drive traffic, run the faults, collect, then audit the tree."""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from epoch_audit.lab.cluster import Cluster
from epoch_audit.lab.collect import CheckpointCopier, copy_logs, dump_segments
from epoch_audit.lab.faults import FaultRunner, load_schedule, now
from epoch_audit.lab.fetch import LabError, default_cache, kafka_classpath, major_version
from epoch_audit.lab.traffic import LAB_TOPICS, UNCLEAN_TOPIC, create_topic, start_producer

HELP = "a real Kafka cluster on loopback: traffic, faults, collection, then `run` on what was collected"
_VERSION = re.compile(r"\d+\.\d+\.\d+")


def add_lab_command(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], int]]:
    """Register ``lab``; the mapping the CLI dispatches on (like the development commands)."""
    lab = sub.add_parser("lab", help=HELP, description=HELP)
    lab.add_argument("--kafka", required=True, metavar="VERSION", help="Kafka version, e.g. 3.9.1 or 4.1.1")
    lab.add_argument("--mode", required=True, choices=("zk", "kraft"), help="ZooKeeper (3.x only) or KRaft")
    lab.add_argument("--faults", required=True, metavar="FILE|none", help="YAML fault schedule, or none")
    lab.add_argument("--minutes", required=True, type=float, metavar="N", help="traffic duration in minutes")
    lab.add_argument("--out", required=True, metavar="DIR", help="where the collected tree goes (new or empty)")
    where = lab.add_mutually_exclusive_group(required=True)
    where.add_argument("--lake", metavar="DIR", help="run `epoch-audit run --input OUT --lake DIR` afterwards")
    where.add_argument("--no-audit", action="store_true", help="leave the collected tree for the user")
    lab.add_argument("--rate", type=int, default=100, metavar="N", help="records per second per topic (100)")
    lab.add_argument("--heap", default="320m", metavar="SIZE", help="-Xmx of every Kafka JVM (320m)")
    lab.add_argument("--rotate", choices=("hour", "minute"), default="hour",
                     help="roll the log files every hour (Kafka's shipped log4j config, the default) or every minute")
    lab.add_argument("--checkpoint-interval", type=float, default=10.0, metavar="S",
                     help="seconds between checkpoint-file copies (10)")
    lab.add_argument("--cache", default=None, metavar="DIR",
                     help=f"jar cache (default ${'{'}EPOCH_AUDIT_LAB_CACHE{'}'} or {default_cache()})")
    lab.add_argument("--json", action="store_true", help="print the manifest (and the audit's summary) as JSON")
    lab.add_argument("--debug", action="store_true", help="keep the cluster's working folder (OUT/.lab)")
    return {"lab": run_lab}


def _check_options(args: argparse.Namespace) -> None:
    if not _VERSION.fullmatch(args.kafka):
        raise LabError(f"--kafka {args.kafka}: expected a release version such as 3.9.1 or 4.1.1", 2)
    if args.mode == "zk" and major_version(args.kafka) >= 4:
        raise LabError(f"--mode zk: Kafka {args.kafka} has no ZooKeeper mode (4.0 removed it)", 2)
    if args.minutes <= 0:
        raise LabError(f"--minutes {args.minutes}: must be positive", 2)
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise LabError(f"--out {args.out}: exists and is not an empty folder", 2)
    if shutil.which("java") is None:
        raise LabError("java: not found on PATH; the lab runs Kafka's JVMs", 2)


def run_lab(args: argparse.Namespace) -> int:
    try:
        _check_options(args)
        manifest = _lab(args)
    except LabError as err:
        print(f"epoch-audit: error: {err} (exit {err.exit_code})", file=sys.stderr)
        return err.exit_code
    code = 0
    if not args.no_audit:
        code, manifest["audit"] = _audit(Path(args.out), Path(args.lake))
    if args.json:
        print(json.dumps(manifest, sort_keys=True, default=str))
    return code


def _lab(args: argparse.Namespace) -> dict[str, Any]:
    out = Path(args.out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    schedule = load_schedule(args.faults)
    classpath = kafka_classpath(args.kafka, Path(args.cache) if args.cache else None)
    cluster = Cluster(args.kafka, args.mode, classpath, out / ".lab", heap=args.heap, rotate=args.rotate)
    manifest: dict[str, Any] = {
        "kafka": args.kafka, "mode": args.mode, "cluster_id": cluster.cluster_id, "faults_file": args.faults,
        "schedule": [asdict(fault) for fault in schedule], "minutes": args.minutes, "rate": args.rate,
        "rotate": args.rotate,
        "started_at": now(),
    }
    runner = FaultRunner(cluster)
    try:
        cluster.configure()
        cluster.start_all()
        runner.step("cluster ready", bootstrap=cluster.bootstrap)
        topics = [*LAB_TOPICS, *([UNCLEAN_TOPIC] if any(f.action == "unclean" for f in schedule) else [])]
        for topic in topics:
            create_topic(cluster, topic)
        seconds = args.minutes * 60
        with CheckpointCopier(cluster, out, args.checkpoint_interval) as copier:
            producers = [start_producer(cluster, topic, seconds, args.rate, cluster.work / f"producer-{topic.name}.out")
                         for topic in topics]
            started = time.monotonic()
            runner.step("traffic started", topics=[t.name for t in topics])
            runner.run(schedule, started)
            time.sleep(max(0.0, started + seconds - time.monotonic()))
            for producer in producers:  # ends on its own at its record count, unless retries held it back
                try:
                    producer.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    producer.terminate()
                    producer.wait()
            runner.step("traffic stopped")
            time.sleep(3)  # the last fetches and checkpoint writes land
        # Collected from the live cluster, as a nightly agent does: stopping every broker first would end the
        # history with each partition's last replica fenced in its ISR (true, but a lab artefact).
        manifest["checkpoint_copies"] = copier.copies
        manifest["log_files"] = copy_logs(cluster, out)
        manifest["dumps"] = dump_segments(cluster, out)
        runner.step("collected")
        cluster.stop_all()
        runner.step("cluster stopped")
    finally:
        cluster.kill_all()
        for producer in locals().get("producers", []):
            if producer.poll() is None:
                producer.kill()
                producer.wait()
        manifest["steps"] = runner.steps
        manifest["finished_at"] = now()
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True, default=str) + "\n")
    if not args.debug:
        shutil.rmtree(cluster.work, ignore_errors=True)
    return manifest


def _audit(out: Path, lake: Path) -> tuple[int, dict[str, Any]]:
    """``epoch-audit run`` in its own process (its Spark session and exit code are its own)."""
    command = [sys.executable, "-m", "epoch_audit.cli", "run", "--input", str(out), "--lake", str(lake), "--json"]
    print(f"lab: {' '.join(command[1:])}", file=sys.stderr, flush=True)
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, env=os.environ.copy())
    try:
        summary = json.loads(result.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        summary = {"error": result.stdout[-2000:]}
    return result.returncode, summary
