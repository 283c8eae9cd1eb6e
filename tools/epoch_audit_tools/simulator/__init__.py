"""Deterministic Kafka / Redpanda cluster simulator with injected faults and ground truth.

``simulate(out_dir, seed, ...)`` writes the files a real cluster writes (logs, request logs,
segment and metadata dumps, checkpoints) under ``<out>/cluster=<id>/broker-<id>/`` plus
``truth.jsonl`` (one row per injected violation) and ``manifest.json``. See docs/simulator.md.
"""

from epoch_audit_tools.simulator.core import simulate

__all__ = ["simulate"]
