"""``epoch-audit simulate`` arguments and entry point (wired by epoch_audit.cli)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from epoch_audit_tools.simulator.config import DEFAULT_RATE, FAULTS, MODES
from epoch_audit_tools.simulator.core import simulate


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the simulator's options to ``parser``."""
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument("--seed", required=True, type=int, help="random seed (same seed -> same bytes)")
    parser.add_argument("--mode", choices=MODES, default="kafka-kraft")
    parser.add_argument("--kafka-version", default="3.6", help="Kafka release whose templates are used")
    parser.add_argument("--brokers", type=int, default=5)
    parser.add_argument("--partitions", type=int, default=200)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--produce-rate", type=float, default=20.0, help="produce requests per second (cluster)")
    parser.add_argument("--faults", default="default",
                        help=f"default | none | comma list of id[:rate per hour, default {DEFAULT_RATE}] "
                             f"from: {', '.join(FAULTS)}")
    parser.add_argument("--cluster-id", default="prod-eu1", help="cluster id (the cluster=<id> folder)")
    parser.add_argument("--strimzi", action="store_true", help="Strimzi log line pattern")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    """Run the simulation; prints a one-line summary. Returns the exit code."""
    manifest = simulate(args.out, args.seed, mode=args.mode, kafka_version=args.kafka_version,
                        brokers=args.brokers, partitions=args.partitions, hours=args.hours,
                        produce_rate=args.produce_rate, faults=args.faults, strimzi=args.strimzi,
                        progress=not args.no_progress, cluster_id=args.cluster_id)
    print(json.dumps({"out": str(args.out), "truth_count": manifest["truth_count"],
                      "truth_by_invariant": manifest["truth_by_invariant"]}))
    return 0


def main() -> int:
    """Standalone entry point: ``python -m epoch_audit_tools.simulator.cli``."""
    parser = argparse.ArgumentParser(prog="simulate")
    add_arguments(parser)
    return run(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
