"""Suppressions applied after the checks (``epoch_audit.suppressions``).

Tonight's acknowledged violations leave the counts that make the exit code, the alert, the JUnit
file and the summary line; a violation whose every entry has expired since the last completed run
comes back as new (counted by this run; a killed run leaves it to the next one, since only a
completed run moves "the last run"); ``gold/suppressions`` says which entry covers which violation
(active or expired), for the report and dashboards. Gold itself is not rewritten: a suppression is
a decision about a violation, not part of it.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession

from epoch_audit.gold.suppressions import suppression_matches
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import SUPPRESSIONS_TABLE
from epoch_audit.suppressions import Suppression

log = logging.getLogger(__name__)

SUPPRESSIONS_SCHEMA = (
    "violation_id string, cluster_id string, invariant string, entry int, reason string, owner string, "
    "expires date, status string"
)
_COUNTED = ("invariant", "severity", "confidence")


def _counts(rows: list[Row]) -> list[dict[str, Any]]:
    totals: dict[tuple, int] = {}
    for r in rows:
        key = tuple(r[c] for c in _COUNTED)
        totals[key] = totals.get(key, 0) + 1
    return [dict(zip((*_COUNTED, "count"), (*k, n), strict=True)) for k, n in sorted(totals.items())]


def adjust_counts(
    counts: list[dict[str, Any]], minus: list[dict[str, Any]], plus: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``counts`` ([{invariant, severity, confidence, count}]) less ``minus``, plus ``plus``; empty keys dropped."""
    totals = {tuple(c[k] for k in _COUNTED): c["count"] for c in counts}
    for sign, rows in ((-1, minus), (1, plus)):
        for c in rows:
            key = tuple(c[k] for k in _COUNTED)
            totals[key] = totals.get(key, 0) + sign * c["count"]
    return [dict(zip((*_COUNTED, "count"), (*k, n), strict=True))
            for k, n in sorted(totals.items(), key=lambda kv: tuple("" if v is None else v for v in kv[0])) if n > 0]


def apply_suppressions(
    spark: SparkSession,
    storage: LakeStorage,
    entries: list[Suppression],
    gold: DataFrame | None,
    reported_by: set[str],
    completed: dict[str, Any],
    today: dt.date | None = None,
) -> dict[str, Any]:
    """Match ``entries`` against ``gold`` (all violations), write ``gold/suppressions`` when it changes,
    and return what the check stage reports: ``suppressed_new`` (counts of the violations this run
    would report that an active entry covers), ``resurfaced`` (counts of older violations whose
    entries were active at the last completed run and have all expired now), ``suppressed`` (how many
    violations an active entry covers), ``unmatched`` (entries matching nothing) and ``expired``."""
    today = today or dt.datetime.now(dt.UTC).date()
    if not entries and not storage.exists(SUPPRESSIONS_TABLE):
        return {}
    by_entry = {s.entry: s for s in entries}
    last_run = max((t for t in completed.values() if t is not None), default=None)
    last_day = last_run.date() if last_run is not None else None
    matched: dict[str, list[Row]] = {}
    if entries and gold is not None:
        columns = ["violation_id", "run_id", "cluster_id", "topic", "partition", "broker_id", "invariant",
                   "severity", "confidence"]
        for r in suppression_matches(gold.select(*columns), entries).collect():
            matched.setdefault(r["violation_id"], []).append(r)
    table, suppressed_new, resurfaced = [], [], []
    for vid, rows in sorted(matched.items()):
        v = rows[0]
        covering = sorted((by_entry[r["entry"]] for r in rows), key=lambda s: s.entry)
        active = [s for s in covering if s.active_on(today)]
        chosen = active[0] if active else max(covering, key=lambda s: (s.expires, -s.entry))
        table.append((vid, v["cluster_id"], v["invariant"], chosen.entry, chosen.reason, chosen.owner,
                      chosen.expires, "active" if active else "expired"))
        if active and v["run_id"] in reported_by:
            suppressed_new.append(v)
        elif not active and v["run_id"] not in reported_by and last_day is not None and any(
            s.active_on(last_day) for s in covering
        ):
            resurfaced.append(v)
    _write_if_changed(spark, storage, table)
    used = {r["entry"] for rows in matched.values() for r in rows}
    unmatched = [s.describe() for s in entries if s.entry not in used]
    for text in unmatched:
        log.warning("suppression matches no violation: %s", text)
    return {
        "entries": len(entries),
        "suppressed": sum(1 for row in table if row[-1] == "active"),
        "suppressed_new": _counts(suppressed_new),
        "resurfaced": _counts(resurfaced),
        "resurfaced_ids": sorted(v["violation_id"] for v in resurfaced),
        "unmatched": unmatched,
        "expired": [s.describe() for s in entries if not s.active_on(today)],
    }


def _write_if_changed(spark: SparkSession, storage: LakeStorage, rows: list[tuple]) -> None:
    """Overwrite gold/suppressions with ``rows`` unless it holds them already (a re-run writes nothing)."""
    if storage.exists(SUPPRESSIONS_TABLE):
        current = {tuple(r) for r in storage.read(SUPPRESSIONS_TABLE).collect()}
        if current == set(rows):
            return
    storage.overwrite(SUPPRESSIONS_TABLE, spark.createDataFrame(rows, SUPPRESSIONS_SCHEMA))
