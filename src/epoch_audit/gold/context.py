"""What every invariant check receives: bronze events, the silver tables, the rule parameters.

A check is a pure ``check(ctx: CheckContext) -> DataFrame``: it reads ``ctx`` and builds nothing
into it. The check stage (or a test) makes the context once with :func:`check_context`, which
builds every silver table it was not given from the events, so all checks share the same frames.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pyspark.sql import DataFrame

from epoch_audit.silver.tables import SILVER_TABLES

# Timelines are read once per check; the broker views several times each (cached when built here).
TIMELINE_TABLES = ("partition_timeline", "broker_registrations", "broker_controller_views")


@dataclass(frozen=True)
class CheckConfig:
    """Rule parameters from conf/ (``checks:`` section)."""

    max_clock_skew_ms: int = 1000
    source_time_zone: str = "UTC"


@dataclass(frozen=True)
class CheckContext:
    """Bronze events plus the silver tables built from them, and the rule parameters (read-only).
    ``absent_types``: event types known to be missing from ``events`` (the check stage asks for the
    ones the registry's ``needs`` name); empty when not asked."""

    events: DataFrame
    silver: Mapping[str, DataFrame] = field(default_factory=dict)
    config: CheckConfig = field(default_factory=CheckConfig)
    absent_types: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        # A read-only view: a check that filled the map would change what the next check reads.
        object.__setattr__(self, "silver", MappingProxyType(dict(self.silver)))

    def table(self, name: str) -> DataFrame:
        return self.silver[name]


def check_context(
    events: DataFrame,
    silver: Mapping[str, DataFrame] | None = None,
    config: CheckConfig | None = None,
    absent_types: frozenset[str] = frozenset(),
) -> CheckContext:
    """A context holding every silver table: the ones given, the others built from ``events``.

    Built broker views are cached: several checks read each of them several times. Built
    timelines are not (each check reads them once; the stage reads them from silver/ anyway).
    """
    config = config or CheckConfig()
    tables = dict(silver or {})
    for name, build in SILVER_TABLES.items():
        if name not in tables:
            built = build(events, config)
            tables[name] = built if name in TIMELINE_TABLES else built.cache()
    return CheckContext(events=events, silver=tables, config=config, absent_types=absent_types)
