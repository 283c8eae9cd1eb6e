"""Rows kept by key: what a window partitioned by that key reads only where another frame has rows;
literal per-key maps."""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F


def with_keys_of(rows: DataFrame, keyed: DataFrame, key: list[str], broadcast: bool = False) -> DataFrame:
    """``rows`` whose ``key`` (null equal to null) some row of ``keyed`` has.

    A window partitioned by ``key`` whose answers are read only on ``keyed``'s rows needs no
    partition ``keyed`` has no row in: filtered first, the window sorts those rows alone (a
    semi-join on a few keys, against a sort of every line of the history). ``broadcast``: the keys
    are few whatever the data (a broadcast join, so ``rows`` is not shuffled for it).
    """
    keys = keyed.select(*(F.col(c).alias(f"_k_{c}") for c in key)).distinct()
    same = reduce(lambda a, b: a & b, [F.col(c).eqNullSafe(F.col(f"_k_{c}")) for c in key])
    return rows.join(F.broadcast(keys) if broadcast else keys, same, "left_semi")


def literal_map(values: Mapping[str, Any]) -> Column:
    """``values`` ({key: value}, e.g. a horizon per cluster) as a literal map column, to look a row's
    value up by its key: a join with a frame of them would have an unknown size, which made every
    join above it shuffle in a short run."""
    return F.create_map(*[F.lit(x) for k, v in sorted(values.items()) for x in (k, v)])


def extreme_struct_by_key(
    rows: DataFrame, key: list[str], fields: list[str], alias: str, largest: bool = True,
    also: tuple[Column, ...] = (),
) -> DataFrame:
    """``rows.groupBy(key).agg(max(struct(fields)).alias(alias), *also)`` (``min`` when not
    ``largest``): the same rows, without sorting every input row. ``also``: aggregates of
    fixed-width values (a hash aggregate keeps them).

    Spark aggregates a struct (and ``max_by`` / ``min_by``) only by sorting (its hash aggregate
    keeps fixed-width buffers alone): at 10^7 lines the ISR carry sorted every caught-up fetch and
    every request line so. Here a hash aggregate finds each key's extreme first field (and
    ``also``), the rows holding it are picked by a broadcast join on the key, null equal to null,
    and only those (ties of the first field) are sorted. For ``min``, a key with a row whose first
    field is null takes its answer from those rows (a struct orders a null field first). For keys
    with few groups beside their rows: the groups are broadcast."""
    lead = fields[0]
    pick = F.max if largest else F.min
    tops = rows.groupBy(*key).agg(
        pick(lead).alias("_x_lead"), F.max(F.col(lead).isNull()).alias("_x_null"), *also
    )
    extras = [c for c in tops.columns if c not in (*key, "_x_lead", "_x_null")]
    # the first field's extreme as the struct orders it: null when the key has a null there (min)
    target = F.col("_x_lead") if largest else F.when(~F.col("_x_null"), F.col("_x_lead"))
    tops = tops.select(*(F.col(c).alias(f"_x_{c}") for c in key), target.alias("_x_target"), *extras)
    same = [F.col(c).eqNullSafe(F.col(f"_x_{c}")) for c in key] + [F.col(lead).eqNullSafe(F.col("_x_target"))]
    picked = rows.join(F.broadcast(tops), reduce(lambda a, b: a & b, same))
    return picked.groupBy(*key, *extras).agg(pick(F.struct(*fields)).alias(alias)).select(*key, alias, *extras)
