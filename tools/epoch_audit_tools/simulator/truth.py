"""Ground truth: one row per injected violation, keyed like ``gold.violations``."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Truth:
    """Collects injected violations; written as ``truth.jsonl`` sorted by key."""

    cluster_id: str
    max_clock_skew_ms: int
    rows: list[dict[str, object]] = field(default_factory=list)

    def add(self, invariant: str, topic: str, partition: int, broker_id: int, leader_epoch: int | None,
            description: str, confidence: str = "confirmed") -> None:
        """Record one violation the logs now prove."""
        self.rows.append({
            "invariant": invariant,
            "cluster_id": self.cluster_id,
            "topic": topic,
            "partition": partition,
            "broker_id": broker_id,
            "leader_epoch": leader_epoch,
            "confidence": confidence,
            "description": description,
        })

    def confidence(self, earlier_logged_ms: int, later_logged_ms: int) -> str | None:
        """Cross-host order as a checker sees it: confirmed beyond the tolerance, suspected inside,
        ``None`` when the logged times put the events the other way round (not reportable)."""
        gap = later_logged_ms - earlier_logged_ms
        if gap > self.max_clock_skew_ms:
            return "confirmed"
        if gap > 0:
            return "suspected"
        return None

    def write(self, path: Path) -> None:
        """``truth.jsonl``, deterministic order."""
        def key(r: dict[str, object]) -> tuple[str, ...]:
            return tuple(str(r[k]) for k in ("invariant", "topic", "partition", "broker_id", "leader_epoch"))
        with open(path, "w", encoding="utf-8", newline="") as fh:
            for row in sorted(self.rows, key=key):
                fh.write(json.dumps(row, sort_keys=False, separators=(",", ":")) + "\n")
