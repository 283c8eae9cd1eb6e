"""What every invariant check receives and returns.

An invariant is one pure function ``check(ctx: CheckContext) -> DataFrame`` whose docstring names
the protocol rule, registered in ``epoch_audit.gold.invariants.INVARIANTS``. It returns one row per
violation with exactly ``CHECK_COLUMNS`` (the runner adds ``run_id`` and ``violation_id``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pyspark.sql import DataFrame
from pyspark.sql.types import (
    ArrayType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SEVERITIES = ("error", "warning")
CONFIDENCES = ("confirmed", "suspected")

CHECK_SCHEMA = StructType(
    [
        StructField("invariant", StringType(), False),
        StructField("severity", StringType(), False),
        StructField("confidence", StringType(), False),
        StructField("cluster_id", StringType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("broker_id", IntegerType(), True),
        StructField("leader_epoch", IntegerType(), True),
        StructField("expected_epoch", IntegerType(), True),
        StructField("event_time", TimestampType(), True),
        StructField("evidence", ArrayType(StringType()), False),
        StructField("explanation", StringType(), False),
    ]
)
CHECK_COLUMNS = [f.name for f in CHECK_SCHEMA.fields]


@dataclass(frozen=True)
class CheckConfig:
    """Rule parameters from conf/ (``checks:`` section)."""

    max_clock_skew_ms: int = 1000
    source_time_zone: str = "UTC"


@dataclass
class CheckContext:
    """Bronze events plus the silver tables built from them, and the rule parameters."""

    events: DataFrame
    silver: dict[str, DataFrame] = field(default_factory=dict)
    config: CheckConfig = field(default_factory=CheckConfig)

    def table(self, name: str) -> DataFrame:
        return self.silver[name]


@dataclass(frozen=True)
class Invariant:
    """A registered check: the ids it can emit and the function that finds them.

    ``carry``: for a check that reads request-log traffic (FETCH / PRODUCE lines), the traffic
    events (a DataFrame with ``event_id``) that its answers over ``ctx`` stand on or that a later
    answer may need (see ``epoch_audit.gold.carry``); None for a check that reads no traffic.
    """

    ids: tuple[str, ...]
    check: Callable[[CheckContext], DataFrame]
    carry: Callable[[CheckContext], DataFrame] | None = None
