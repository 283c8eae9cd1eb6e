"""The violation rows the reference model returns (the output contract: ``gold.violations`` columns).

Two builders: :func:`violation` (the key columns plus whatever the check adds, for the checks
that replay one broker's or the controller's state) and :func:`partition_violation` (every column
of the output contract but ``run_id``, for the leadership and offset checks). The differential
tests compare the model with Spark on :data:`VIOLATION_KEY` and the evidence.
"""

from __future__ import annotations

from typing import Any

# What a model violation and a Spark violation must agree on (with the evidence).
VIOLATION_KEY = ("invariant", "cluster_id", "topic", "partition", "broker_id", "leader_epoch", "confidence")


def violation(
    invariant: str,
    cluster_id: Any,
    topic: Any,
    partition: Any,
    broker_id: Any,
    leader_epoch: Any,
    confidence: str = "confirmed",
    severity: str = "error",
    **extra: Any,
) -> dict[str, Any]:
    """One model violation (compare on VIOLATION_KEY)."""
    return {
        "invariant": invariant,
        "cluster_id": cluster_id,
        "topic": topic,
        "partition": partition,
        "broker_id": broker_id,
        "leader_epoch": leader_epoch,
        "confidence": confidence,
        "severity": severity,
        **extra,
    }


def key_of(found: dict[str, Any]) -> tuple:
    """The comparison key of a violation (model dict or Spark row as dict)."""
    return tuple(found.get(column) for column in VIOLATION_KEY)


def partition_violation(
    invariant: str,
    partition_row: dict[str, Any],
    broker_id: Any,
    leader_epoch: Any,
    expected_epoch: Any,
    event_time: Any,
    evidence: list[Any],
    explanation: str,
    severity: str = "error",
    confidence: str = "confirmed",
) -> dict[str, Any]:
    """A violation with every output column; cluster, topic and partition from ``partition_row``;
    evidence without its missing (None) ids."""
    return dict(
        invariant=invariant,
        severity=severity,
        confidence=confidence,
        cluster_id=partition_row.get("cluster_id"),
        topic=partition_row.get("topic"),
        partition=partition_row.get("partition"),
        broker_id=broker_id,
        leader_epoch=leader_epoch,
        expected_epoch=expected_epoch,
        event_time=event_time,
        evidence=[event_id for event_id in evidence if event_id is not None],
        explanation=explanation,
    )
