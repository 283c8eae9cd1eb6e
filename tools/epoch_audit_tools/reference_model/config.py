"""The rule parameters the reference model reads (spec "Ordering and time").

The model keeps its own config rather than the Spark side's ``CheckConfig``: any object with the
same two attributes works (the differential tests pass ``CheckConfig``), and ``None`` means the
spec's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


class RuleConfig(Protocol):
    """What the model reads from a config: ``ModelConfig`` or anything shaped like it."""

    max_clock_skew_ms: int
    source_time_zone: str


@dataclass(frozen=True)
class ModelConfig:
    """Rule parameters with the spec's defaults.

    ``max_clock_skew_ms``: the tolerance under which cross-host times prove nothing (confidence
    ``suspected``). ``source_time_zone``: the zone of zone-less line timestamps; the model reads
    ``event_time`` as parsed, so it only documents which input the history was read with.
    """

    max_clock_skew_ms: int = 1000
    source_time_zone: str = "UTC"


def clock_skew_ms(config: RuleConfig | None) -> int:
    """The skew tolerance of ``config`` (the default without one)."""
    return (config or ModelConfig()).max_clock_skew_ms
