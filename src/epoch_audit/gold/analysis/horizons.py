"""Rows timed before a cluster's carry horizon: what a check's ``carry`` chooses from.

A nightly run reads a cluster's traffic from its horizon on and the carried events before it
(``epoch_audit.gold.carry``), so a carry only ever keeps events timed before the next horizon: an
event after it is read from bronze again. A carry that asks "the last one per key" or "one per key"
over the events before the horizon answers what the same question over the whole history answers
for every later probe, and it reads only that part of the traffic (a day of a two-day history less).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from epoch_audit.contracts.events import EVENT_DATE_COLUMN
from epoch_audit.gold.context import CheckContext


def before_horizons(
    horizons: Mapping[str, int], columns: Iterable[str] = (), cluster: str = "cluster_id", time: str = "event_time"
) -> Column:
    """Rows of a cluster of ``horizons`` ({cluster: horizon, epoch microseconds}) timed before its
    horizon (untimed rows are not): a condition on literals, not a join with a frame of horizons,
    whose unknown size made every join above it shuffle in a short run. When ``columns`` holds
    bronze's day partition, the same condition on the day too (the UTC day of the event time), so
    that the scan skips the later days' files."""
    by_day = EVENT_DATE_COLUMN in set(columns)

    def before(c: str, h: int) -> Column:
        rows = (F.col(cluster) == c) & (F.col(time) < F.timestamp_micros(F.lit(h)))
        if by_day:
            last_day = dt.datetime.fromtimestamp((h - 1) // 1_000_000, dt.UTC).date()
            rows = rows & (F.col(EVENT_DATE_COLUMN) <= F.lit(last_day))
        return rows

    return reduce(lambda a, b: a | b, [before(c, h) for c, h in sorted(horizons.items())], F.lit(False))


def before_carry_horizons(ctx: CheckContext, rows: DataFrame, cluster: str = "cluster_id",
                          time: str = "event_time") -> DataFrame:
    """``rows`` timed before their cluster's next carry horizon (``ctx.carry_horizons``): what a carry
    may keep. All of ``rows`` when the context names no horizon (the carry then keeps from everything)."""
    if not ctx.carry_horizons:
        return rows
    return rows.where(before_horizons(ctx.carry_horizons, rows.columns, cluster, time))
