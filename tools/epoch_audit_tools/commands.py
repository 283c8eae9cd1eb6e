"""The development subcommands of ``epoch-audit``: ``simulate``, ``bench`` and ``bench-nights``."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from epoch_audit_tools.bench import add_arguments as add_bench_arguments
from epoch_audit_tools.bench import run as run_bench
from epoch_audit_tools.bench_nights import add_arguments as add_bench_nights_arguments
from epoch_audit_tools.bench_nights import run as run_bench_nights
from epoch_audit_tools.simulator.cli import add_arguments as add_simulate_arguments
from epoch_audit_tools.simulator.cli import run as run_simulator


def add_commands(sub: argparse._SubParsersAction) -> dict[str, Callable[[argparse.Namespace], Any]]:
    """Add the subcommands to the CLI's parser; return each one's entry point by name."""
    add_simulate_arguments(sub.add_parser("simulate", help="write a simulated cluster's logs with injected faults"))
    add_bench_arguments(sub.add_parser("bench", help="measure speed and memory per stage, against DuckDB"))
    add_bench_nights_arguments(sub.add_parser("bench-nights", help="simulated nights into one lake: cost per night"))
    return {"simulate": run_simulator, "bench": run_bench, "bench-nights": run_bench_nights}
