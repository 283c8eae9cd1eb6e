"""Carried traffic, the I/O side (the rules are in ``epoch_audit.gold.carry``).

``state/traffic_carry`` holds, per cluster, the request-log traffic events before the cluster's
horizon that a check still needs (bronze rows, same columns) and one marker row
(``event_type = carry_horizon``) with the horizon (``carry_horizon_micros``, epoch microseconds)
and the anchor fingerprint the carry was taken against. One table, replaced per cluster in one
commit: a run killed at any point leaves either the old carry or the new one, and either one is
exact for the bronze it was taken from.

- ``ingest`` drops a cluster's carry before it writes traffic timed before the horizon
  (:func:`drop_outdated_carries`): the next check re-reads that cluster's whole history.
- The timelines stage reads only state events (:func:`read_state_events`): silver never reads
  traffic.
- The check stage reads, per cluster with a carry, its state events, its traffic from the horizon on
  and its carried events (:func:`read_check_traffic`); the others whole. In a short run it takes the
  state events the timelines stage read (``epoch_audit.stages.base``). Before its checks run it plans
  the new carry from what it read (:func:`plan_carries`), its queries run beside the checks
  (:func:`carry_tasks`: among them the anchor fingerprints at the stored horizon, which say whether
  the carry still holds, :func:`changed_anchors`; if not, that cluster is checked again over its
  whole history before anything is written), and after gold is written it stores it
  (:func:`write_carries`).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial, reduce
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from epoch_audit.contracts.events import EVENT_CLASS_COLUMN, EVENT_DATE_COLUMN, OWN_TIME_COLUMN
from epoch_audit.gold.analysis.keys import literal_map
from epoch_audit.gold.carry import anchor_fingerprints, carried_events, is_traffic, next_horizons
from epoch_audit.gold.context import CheckContext
from epoch_audit.gold.registry import InvariantSpec
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.one_partition import one_partition

log = logging.getLogger(__name__)

EVENTS_TABLE = "bronze/events"
CARRY_TABLE = "state/traffic_carry"
MARKER_TYPE = "carry_horizon"
HORIZON_COLUMN = "carry_horizon_micros"
FINGERPRINT_COLUMN = "carry_fingerprint"


def supports_carry(storage: LakeStorage) -> bool:
    """Bronze written with the event_class partition and the own_time column (older lakes: no)."""
    if not storage.exists(EVENTS_TABLE):
        return False
    return {EVENT_CLASS_COLUMN, OWN_TIME_COLUMN, EVENT_DATE_COLUMN} <= set(storage.columns(EVENTS_TABLE))


def day_of(micros: int) -> str:
    """The UTC day (ISO) of an epoch-microsecond time."""
    return dt.datetime.fromtimestamp(micros / 1e6, dt.UTC).date().isoformat()


def iso_of(micros: int) -> str:
    """An epoch-microsecond time as ISO 8601 (UTC, minutes)."""
    return dt.datetime.fromtimestamp(micros / 1e6, dt.UTC).strftime("%Y-%m-%dT%H:%MZ")


def _carry_matches_bronze(storage: LakeStorage) -> bool:
    """A carry table exists and holds every bronze column (a carry written before bronze's schema
    changed is no carry: the clusters are read whole once and carried again)."""
    if not storage.exists(CARRY_TABLE):
        return False
    if not storage.exists(EVENTS_TABLE):
        return True
    return set(storage.columns(EVENTS_TABLE)) <= set(storage.columns(CARRY_TABLE))


def carried_horizons(storage: LakeStorage, clusters: list[str] | None = None) -> dict[str, tuple[int, str]]:
    """{cluster: (horizon micros, anchor fingerprint)} of the carries stored (one marker row each)."""
    if not _carry_matches_bronze(storage):
        return {}
    table = storage.read_where(CARRY_TABLE, "cluster_id", clusters) if clusters is not None else storage.read(
        CARRY_TABLE
    )
    rows = table.where(F.col("event_type") == MARKER_TYPE).select("cluster_id", HORIZON_COLUMN, FINGERPRINT_COLUMN)
    return {r["cluster_id"]: (r[HORIZON_COLUMN], r[FINGERPRINT_COLUMN]) for r in rows.collect()}  # one per cluster


def drop_outdated_carries(storage: LakeStorage, events: DataFrame) -> list[str]:
    """Drop the carry of every cluster that ``events`` (about to be ingested) bring traffic to that
    is timed before its horizon; return those clusters."""
    horizons = carried_horizons(storage)
    if not horizons:
        return []
    earliest = (
        events.where(is_traffic(events) & F.col("event_time").isNotNull() & F.col("cluster_id").isin(list(horizons)))
        .groupBy("cluster_id")
        .agg(F.min(F.unix_micros("event_time")).alias("m"))
        .collect()
    )
    stale = sorted(r["cluster_id"] for r in earliest if r["m"] < horizons[r["cluster_id"]][0])
    if stale:
        log.info("traffic before the carried horizon of %s: their next check reads the whole history", stale)
        storage.replace_where(CARRY_TABLE, storage.read(CARRY_TABLE).limit(0), "cluster_id", stale)
    return stale


def read_state_events(storage: LakeStorage, clusters: list[str]) -> DataFrame:
    """Every state event (not request-log traffic) of ``clusters``: what the silver tables read."""
    if not supports_carry(storage):
        return storage.read_where(EVENTS_TABLE, "cluster_id", clusters)
    wanted = set(clusters)
    return storage.read_partitions(
        EVENTS_TABLE,
        lambda v: v.get("cluster_id") in wanted and v.get(EVENT_CLASS_COLUMN) != "traffic",
        F.col("cluster_id").isin(clusters) & (F.col(EVENT_CLASS_COLUMN) != "traffic"),
    )


def read_check_traffic(storage: LakeStorage, clusters: list[str], horizons: dict[str, int]) -> DataFrame | None:
    """The traffic the checks read besides the state events (:func:`read_state_events`): a cluster
    with a horizon its traffic from the horizon on (or untimed) and its carried traffic, every other
    cluster all of it. None for a bronze without the event class (its state read holds every event)."""
    if not supports_carry(storage):
        return None
    wanted = set(clusters)
    days = {c: day_of(h) for c, h in horizons.items() if c in wanted}

    def keep(v: dict[str, str | None]) -> bool:
        c, day = v.get("cluster_id"), v.get(EVENT_DATE_COLUMN)
        if c not in wanted or v.get(EVENT_CLASS_COLUMN) != "traffic":
            return False
        return c not in days or day is None or day >= days[c]

    rows = F.col("cluster_id").isin(clusters) & (F.col(EVENT_CLASS_COLUMN) == "traffic")
    if days:
        recent: Column = reduce(
            lambda a, b: a | b,
            [(F.col("cluster_id") == c) & (F.unix_micros("event_time") >= F.lit(horizons[c])) for c in days],
        )
        rows = rows & (~F.col("cluster_id").isin(list(days)) | F.col("event_time").isNull() | recent)
    traffic = storage.read_partitions(EVENTS_TABLE, keep, rows)
    if not days:
        return traffic
    carried = storage.read_where(CARRY_TABLE, "cluster_id", list(days)).where(F.col("event_type") != MARKER_TYPE)
    return traffic.unionByName(carried.select(*traffic.columns))


@dataclass(frozen=True)
class CarryPlan:
    """A run's next carry, decided before its checks run: each checked cluster's next horizon
    (epoch microseconds) and whether traffic lies before one (only then do the checks' carried
    ids matter: a carry holds traffic before its horizon and nothing else)."""

    horizons: dict[str, int]
    holds_traffic: bool


def plan_carries(events: DataFrame, clusters: list[str], previous: dict[str, int], lag_minutes: int) -> CarryPlan:
    """The next carry of ``clusters`` from what this run read (``events``, state and traffic): one small
    query, before the checks' context is made (its ``carry_horizons``). A carried horizon never moves
    back (the carry before it holds less than an earlier horizon needs)."""
    spans = next_horizons(events, lag_minutes).select(
        "cluster_id", F.unix_micros("horizon").alias("h"), F.unix_micros("first_traffic").alias("first")
    ).collect()  # one row per cluster
    first = {r["cluster_id"]: r["first"] for r in spans}
    horizons = {r["cluster_id"]: max(r["h"], previous.get(r["cluster_id"], r["h"])) for r in spans
                if r["cluster_id"] in clusters}
    return CarryPlan(horizons, any(first[c] < h for c, h in horizons.items()))


FINGERPRINTS_TASK = "carry_fingerprints"
IDS_TASK = "carry_ids:"  # + the check's id


def carry_tasks(
    ctx: CheckContext,
    specs: tuple[InvariantSpec, ...],
    plan: CarryPlan,
    staged: str,
    read_from: Mapping[str, int] | None = None,
) -> dict[str, Callable[[], Any]]:
    """The queries the carry of ``plan`` needs before its write, named, to run beside the checks
    (``epoch_audit.spark.run_longest_first``): the anchor fingerprints, and, when the carry holds
    traffic, each carrying check's ids (its ``carry``) staged as Parquet under ``staged``, one query
    per check as the checks' own (each plan stays small). The fingerprints task answers
    {"next": {cluster: fingerprint at its next horizon}, "read_from": {cluster: fingerprint at the
    stored horizon it read from}} in one query (``read_from``: the horizons the run read traffic
    from, which :func:`changed_anchors` checks against the stored fingerprints). No ids without
    traffic before a horizon (the carry is its markers alone: the large plans of the checks' carries
    are neither built nor run)."""
    read_from = dict(read_from or {})
    if not plan.horizons and not read_from:
        return {}

    def fingerprints() -> dict[str, dict[str, str]]:
        asked = {c: [h for h in (plan.horizons.get(c), read_from.get(c)) if h is not None]
                 for c in {*plan.horizons, *read_from}}
        found = anchor_fingerprints(ctx, asked)
        return {"next": {c: found[(c, h)] for c, h in plan.horizons.items()},
                "read_from": {c: found[(c, h)] for c, h in read_from.items()}}

    def stage_ids(spec: InvariantSpec) -> str:
        path = f"{staged}/{spec.id}"
        spec.carry(ctx).select("event_id").write.mode("overwrite").parquet(path)
        return path

    tasks: dict[str, Callable[[], Any]] = {FINGERPRINTS_TASK: fingerprints}
    if plan.horizons and plan.holds_traffic:
        tasks.update({IDS_TASK + spec.id: partial(stage_ids, spec) for spec in specs if spec.carry is not None})
    return tasks


def changed_anchors(stored: Mapping[str, tuple[int, str]], done: Mapping[str, Any]) -> list[str]:
    """The clusters whose state before their stored horizon changed since their carry was taken (a
    late state file, a dump that changed an old epoch): the fingerprint :func:`carry_tasks` took at
    the stored horizon is not the stored one. Their answers over the carry are void: the caller
    checks them again over their whole history."""
    now = done.get(FINGERPRINTS_TASK, {}).get("read_from", {})
    return sorted(c for c, (_, fingerprint) in stored.items() if now.get(c) != fingerprint)


def write_carries(
    spark: SparkSession,
    storage: LakeStorage,
    ctx: CheckContext,
    specs: tuple[InvariantSpec, ...],
    clusters: list[str],
    plan: CarryPlan,
    done: Mapping[str, Any],
) -> dict[str, str]:
    """Store the carry of ``plan`` (taken from what this run read, ``ctx``), replacing the
    ``clusters``' old carries in one commit; return {cluster: new horizon (ISO, UTC)}. ``done``: the
    results of :func:`carry_tasks` (the fingerprints and the staged ids' paths)."""
    schema_cols = storage.columns(EVENTS_TABLE)
    fps: dict[str, str] = done.get(FINGERPRINTS_TASK, {}).get("next", {})
    if plan.holds_traffic:
        paths = [done[IDS_TASK + spec.id] for spec in specs if spec.carry is not None]
        ids = one_partition(spark.read.parquet(*paths) if paths else spark.createDataFrame([], "event_id string"))
        rows = carried_events(ctx, specs, plan.horizons, ids).select(*schema_cols)
        # the horizon of each row's cluster as a literal map (a join with a frame of horizons made the
        # write shuffle every carried event in a short run: its size is unknown to Spark)
        horizon_of = literal_map(plan.horizons)
        rows = rows.withColumns({
            HORIZON_COLUMN: horizon_of[F.col("cluster_id")], FINGERPRINT_COLUMN: F.lit(None).cast("string"),
        })
    else:
        rows = _no_carried_rows(ctx, schema_cols)
    markers = spark.createDataFrame(
        [(c, f"{MARKER_TYPE}|{c}", MARKER_TYPE, h, fps.get(c, "empty")) for c, h in sorted(plan.horizons.items())],
        f"cluster_id string, event_id string, event_type string, {HORIZON_COLUMN} long, {FINGERPRINT_COLUMN} string",
    )
    out = rows.select(*schema_cols, HORIZON_COLUMN, FINGERPRINT_COLUMN).unionByName(markers, allowMissingColumns=True)
    if storage.exists(CARRY_TABLE) and set(storage.columns(CARRY_TABLE)) != set(out.columns):
        storage.overwrite(CARRY_TABLE, out)  # another layout: every other cluster's carry goes too
    else:
        storage.replace_where(CARRY_TABLE, out, "cluster_id", clusters)
    return {c: iso_of(h) for c, h in sorted(plan.horizons.items())}


def _no_carried_rows(ctx: CheckContext, schema_cols: list[str]) -> DataFrame:
    """No carried event, in the carry's columns (the markers are added to it)."""
    return ctx.events.limit(0).select(*schema_cols).withColumn(HORIZON_COLUMN, F.lit(None).cast("long")).withColumn(
        FINGERPRINT_COLUMN, F.lit(None).cast("string"))
