"""Rows kept by key: what a window partitioned by that key reads only where another frame has rows;
literal per-key maps."""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def with_keys_of(rows: DataFrame, keyed: DataFrame, key: list[str]) -> DataFrame:
    """``rows`` whose ``key`` (null equal to null) some row of ``keyed`` has.

    A window partitioned by ``key`` whose answers are read only on ``keyed``'s rows needs no
    partition ``keyed`` has no row in: filtered first, the window sorts those rows alone (a
    semi-join on a few keys, against a sort of every line of the history).
    """
    keys = keyed.select(*(F.col(c).alias(f"_k_{c}") for c in key)).distinct()
    same = reduce(lambda a, b: a & b, [F.col(c).eqNullSafe(F.col(f"_k_{c}")) for c in key])
    return rows.join(keys, same, "left_semi")


def literal_map(values: Mapping[str, Any]) -> Column:
    """``values`` ({key: value}, e.g. a horizon per cluster) as a literal map column, to look a row's
    value up by its key: a join with a frame of them would have an unknown size, which made every
    join above it shuffle in a short run."""
    return F.create_map(*[F.lit(x) for k, v in sorted(values.items()) for x in (k, v)])
