"""Carried traffic: what a nightly run keeps of the request-log traffic before its horizon.

Nearly all of a busy cluster's bronze is request-log traffic: per-partition FETCH and PRODUCE lines
(``epoch_audit.contracts.events.TRAFFIC_TYPES``, bronze partition ``event_class = traffic``). Everything else
(``state``: epochs, decisions, registrations, controller requests, dumps, checkpoints) builds the
silver tables, which never read traffic; the checks read silver, state events and traffic.

A nightly run over a cluster with a *horizon* H (by default a day before its latest traffic) reads
all of its state events, its traffic from H on, and the *carried* traffic: the few events before H
that a check still needs.
Each check that reads traffic registers a ``carry`` (``epoch_audit.gold.registry.InvariantSpec``):
given every event a run read, the traffic its answers stand on (the fetch a join's as-of picked,
every produce after a move or a fence) and the traffic a later answer may need (per key the last
caught-up fetch, per broker its last request-log line, one acks=0/1 produce per partition). Those
are "last per key" and "every candidate" sets, so they carry over: the carry computed from (the
carried events + the traffic from H on) holds every event the carry over the whole history would
hold before the next horizon H' >= H. The checks over (state + carried + traffic >= H) then give
exactly the answers of the whole history, for every anchor, old or new.

That holds while the past before H stays as it was when the carry was taken:
- no traffic before H arrives later (ingest drops the cluster's carry first, ``epoch_audit.stages.carry``);
- the state the carried answers were taken against (the anchors: partition timeline, broker
  registrations, the epochs brokers held, KRaft fence records) is unchanged before H: a late
  state-change file or a dump that changes an old epoch changes :func:`anchor_fingerprints`, and
  the run reads the whole history again. A re-dumped metadata log that only repeats records
  changes nothing.

tests/differential/test_carry.py compares every check over windowed inputs with the whole-history answers on
simulated histories, over two successive horizons.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from functools import reduce

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import MapType

from epoch_audit.contracts.events import EVENT_CLASS_COLUMN, TRAFFIC_TYPES
from epoch_audit.gold.analysis.horizons import before_horizons
from epoch_audit.gold.analysis.keys import literal_map
from epoch_audit.gold.analysis.leadership import fence_markers
from epoch_audit.gold.context import CheckContext
from epoch_audit.gold.registry import InvariantSpec

_MICROS_PER_MINUTE = 60_000_000


def is_traffic(events: DataFrame) -> Column:
    """Request-log traffic rows of ``events``. Over bronze with the ``event_class`` partition, also by
    that partition (the same rows: ingest files every traffic type there and nothing else), so that a
    query over the union of state events and traffic drops the state files when it is planned: the
    carry's write read every column of every state event to keep none (about 2 s at night 16 of
    ``bench-nights``, growing with the history)."""
    by_type = F.col("event_type").isin(*TRAFFIC_TYPES)
    if EVENT_CLASS_COLUMN in events.columns:
        return by_type & (F.col(EVENT_CLASS_COLUMN) == "traffic")
    return by_type


def carried_event_ids(ctx: CheckContext, specs: tuple[InvariantSpec, ...]) -> DataFrame:
    """Every traffic event id some registered check still needs (``event_id``, distinct)."""
    parts = [spec.carry(ctx).select("event_id") for spec in specs if spec.carry is not None]
    if not parts:
        return ctx.events.sparkSession.createDataFrame([], "event_id string")
    return reduce(DataFrame.unionByName, parts).where(F.col("event_id").isNotNull()).distinct()


def next_horizons(events: DataFrame, lag_minutes: int) -> DataFrame:
    """(cluster_id, horizon, first_traffic): ``lag_minutes`` before the cluster's latest traffic
    event (floored to the minute), and its earliest timed traffic event. Traffic timed before the
    horizon is what the next run will not read from bronze (none when ``first_traffic`` is not
    before it: the carry holds no event then)."""
    span = (
        events.where(is_traffic(events) & F.col("event_time").isNotNull())
        .groupBy("cluster_id")
        .agg(F.max(F.unix_micros("event_time")).alias("_last"), F.min("event_time").alias("first_traffic"))
    )
    minute = F.floor(F.col("_last") / _MICROS_PER_MINUTE) - F.lit(lag_minutes)
    return span.select(
        "cluster_id",
        F.timestamp_micros((minute * _MICROS_PER_MINUTE).cast("long")).alias("horizon"),
        "first_traffic",
    )


def carried_events(
    ctx: CheckContext, specs: tuple[InvariantSpec, ...], horizons: Mapping[str, int], ids: DataFrame | None = None
) -> DataFrame:
    """The traffic events of ``ctx.events`` timed before their cluster's horizon (``horizons``:
    {cluster: epoch microseconds}) that some check still needs: what the next run reads instead of
    that part of bronze. ``ids``: the checks' carried event ids computed already
    (:func:`carried_event_ids`' rows, in any number of rows)."""
    before = ctx.events.where(is_traffic(ctx.events) & before_horizons(horizons, ctx.events.columns))
    needed = carried_event_ids(ctx, specs) if ids is None else ids.where(F.col("event_id").isNotNull())
    # An inner join with the distinct ids, not a semi join: Spark pushes a semi join below a union
    # and below the coalesce that keeps a short run in one partition, and then shuffled and sorted
    # every traffic event (all columns) to join it (about 3 s of the carry's write at night 16).
    return before.join(needed.distinct(), "event_id").select(*before.columns)


def windowed(events: DataFrame, horizons: DataFrame) -> DataFrame:
    """What a nightly run reads of a whole history: state events, and traffic from the horizon on
    (or untimed). Clusters without a horizon: everything."""
    h = events.join(F.broadcast(horizons.select("cluster_id", F.col("horizon").alias("_h"))), "cluster_id", "left")
    keep = ~is_traffic(h) | F.col("_h").isNull() | F.col("event_time").isNull() | (F.col("event_time") >= F.col("_h"))
    return h.where(keep).drop("_h").select(*events.columns)


def _row_hash(df: DataFrame, drop: tuple[str, ...] = ()) -> Column:
    cols = [f.name for f in df.schema.fields if f.name not in drop and not isinstance(f.dataType, MapType)]
    return F.xxhash64(*[F.col(c) for c in cols])


def anchor_fingerprints(ctx: CheckContext, horizons: Mapping[str, Iterable[int]]) -> dict[tuple[str, int], str]:
    """{(cluster_id, horizon): fingerprint} for each horizon (epoch microseconds) of each cluster of
    ``horizons``: a digest of the state the carried answers stand on, before that horizon:
    partition-timeline and broker-registration rows (without the end of their validity, which a
    later row moves), the epochs brokers held, and KRaft fence records. Rows without a time count as
    before. ``ctx`` holds every silver table (``check_context``); "empty" when no row lies before.

    One query for every horizon asked (a night checks the stored horizon and digests the next one):
    each row's horizons are literal maps, counted and summed per cluster in one aggregation per
    table, no join. The digest of a (cluster, horizon) is per table its row count and the sum of its
    rows' hashes, sorted and hashed (SHA-256) here: the same text whatever the query's shape, so a
    stored fingerprint stays comparable."""
    slots: dict[str, list[int]] = {c: sorted({int(h) for h in hs}) for c, hs in horizons.items()}
    slots = {c: hs for c, hs in slots.items() if hs}
    if not slots:
        return {}
    clusters = sorted(slots)
    width = max(len(hs) for hs in slots.values())
    slot_maps = [literal_map({c: slots[c][j] for c in clusters if j < len(slots[c])}) for j in range(width)]
    tables = [
        (ctx.silver["partition_timeline"], ("next_commit_offset",)),
        (ctx.silver["broker_registrations"], ("next_commit_offset",)),
        (ctx.silver["broker_leader_epochs"], ()),
        (fence_markers(ctx.events), ()),
    ]
    digests = []
    for i, (df, drop) in enumerate(tables):
        rows = df.where(F.col("cluster_id").isin(clusters)).select(
            "cluster_id", F.unix_micros("event_time").alias("_time"), _row_hash(df, drop).alias("_x")
        )
        sums = []
        for j, horizon_of in enumerate(slot_maps):
            h = horizon_of[F.col("cluster_id")]
            before = h.isNotNull() & F.coalesce(F.col("_time") < h, F.lit(True))
            sums += [F.count_if(before).alias(f"_n{j}"),
                     F.sum(F.when(before, F.col("_x").cast("decimal(38,0)"))).alias(f"_s{j}")]
        digests.append(rows.groupBy("cluster_id").agg(F.lit(i).alias("_table"), *sums))
    texts: dict[tuple[str, int], list[str]] = {(c, h): [] for c, hs in slots.items() for h in hs}
    for r in reduce(DataFrame.unionByName, digests).collect():  # a row per (cluster, table)
        for j, h in enumerate(slots[r["cluster_id"]]):
            if r[f"_n{j}"]:
                texts[(r["cluster_id"], h)].append(f"{r['_table']}:{r[f'_n{j}']}:{int(r[f'_s{j}'])}")
    return {key: hashlib.sha256(",".join(sorted(t)).encode()).hexdigest() if t else "empty"
            for key, t in texts.items()}
