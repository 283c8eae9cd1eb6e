"""Detection quality against a simulator's ground truth (``truth.jsonl``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame

TRUTH_KEY = ("invariant", "cluster_id", "topic", "partition", "broker_id", "leader_epoch", "confidence")


def load_truth(paths: list[Path]) -> set[tuple]:
    """Every truth.jsonl under ``paths`` as a set of violation keys."""
    keys: set[tuple] = set()
    for root in paths:
        files = [root] if root.is_file() else sorted(root.rglob("truth.jsonl"))
        for f in files:
            for line in f.read_text().splitlines():
                if line.strip():
                    row = json.loads(line)
                    keys.add(tuple(row.get(k) for k in TRUTH_KEY))
    return keys


def found_keys(violations: DataFrame) -> set[tuple]:
    """The violation keys of a gold violations DataFrame (small: one row per violation)."""
    return {tuple(r[k] for k in TRUTH_KEY) for r in violations.select(*TRUTH_KEY).distinct().collect()}


@dataclass
class Score:
    true_positives: set[tuple] = field(default_factory=set)
    false_positives: set[tuple] = field(default_factory=set)
    false_negatives: set[tuple] = field(default_factory=set)

    @property
    def precision(self) -> float:
        n = len(self.true_positives) + len(self.false_positives)
        return len(self.true_positives) / n if n else 1.0

    @property
    def recall(self) -> float:
        n = len(self.true_positives) + len(self.false_negatives)
        return len(self.true_positives) / n if n else 1.0

    def summary(self) -> dict:
        return {
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "true_positives": len(self.true_positives),
            "false_positives": sorted(map(str, self.false_positives)),
            "false_negatives": sorted(map(str, self.false_negatives)),
        }


def score(found: set[tuple], truth: set[tuple]) -> Score:
    return Score(found & truth, found - truth, truth - found)
