"""What every stage shares: the record of what it did, and the checks' rule parameters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from epoch_audit.config import AppConfig
from epoch_audit.gold.context import CheckConfig


@dataclass
class StageResult:
    """What a stage did, for the console and the --json summary."""

    name: str
    status: str  # ran | skipped
    detail: dict[str, Any] = field(default_factory=dict)


def check_config(config: AppConfig) -> CheckConfig:
    """The rule parameters of the ``checks:`` section (and the source time zone)."""
    return CheckConfig(
        max_clock_skew_ms=config.checks.max_clock_skew_ms, source_time_zone=config.ingest.source_time_zone
    )
