"""Suppressions applied after the checks (``epoch_audit.suppressions``).

Tonight's acknowledged violations leave the counts that make the exit code, the alert, the JUnit
file and the summary line; a violation an active entry covered after the last run and none covers
now (the entry expired, or left the file) comes back as new: its row moves to this run, so a
killed run leaves it to the next one; ``gold/suppressions`` says which entry covers which violation
(active or expired), for the report, dashboards and the next run. A violation row itself changes
only when it comes back (its ``run_id``): a suppression is a decision about a violation, not part of it.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

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
    """[{invariant, severity, confidence, count}] of ``rows``."""
    return adjust_counts([], [], [{**{c: r[c] for c in _COUNTED}, "count": 1} for r in rows])


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


def plan_suppressions(
    storage: LakeStorage,
    entries: list[Suppression],
    gold: DataFrame | None,
    reported_by: set[str],
    today: dt.date | None = None,
) -> tuple[dict[str, Any], list[tuple] | None]:
    """Match ``entries`` against ``gold`` (all violations) and compare with what ``gold/suppressions``
    said after the last run. Returns what the check stage reports — ``suppressed_new`` (counts of the
    violations this run would report that an active entry covers), ``resurfaced`` (counts and ids of
    older violations an active entry covered last time and none covers now: expired, or taken out of
    the file), ``suppressed`` (violations an active entry covers), ``unmatched`` (entries matching
    nothing), ``expired`` — and the rows ``gold/suppressions`` should hold (None: as it is)."""
    today = today or dt.datetime.now(dt.UTC).date()
    exists = storage.exists(SUPPRESSIONS_TABLE)
    if not entries and not exists:
        return {}, None
    previous = {tuple(r) for r in storage.read(SUPPRESSIONS_TABLE).collect()} if exists else set()
    was_active = {row[0] for row in previous if row[-1] == "active"}
    by_entry = {s.entry: s for s in entries}
    matched: dict[str, list[Row]] = {}
    if entries and gold is not None:
        columns = ["violation_id", "run_id", "cluster_id", "topic", "partition", "broker_id", "invariant",
                   "severity", "confidence"]
        for r in suppression_matches(gold.select(*columns), entries).collect():
            matched.setdefault(r["violation_id"], []).append(r)
    table, suppressed_new = [], []
    for vid, rows in sorted(matched.items()):
        v = rows[0]
        covering = sorted((by_entry[r["entry"]] for r in rows), key=lambda s: s.entry)
        active = [s for s in covering if s.active_on(today)]
        chosen = active[0] if active else max(covering, key=lambda s: (s.expires, -s.entry))
        table.append((vid, v["cluster_id"], v["invariant"], chosen.entry, chosen.reason, chosen.owner,
                      chosen.expires, "active" if active else "expired"))
        if active and v["run_id"] in reported_by:
            suppressed_new.append(v)
    now_active = {row[0] for row in table if row[-1] == "active"}
    back = sorted(was_active - now_active)
    resurfaced = []
    if back and gold is not None:
        rows_back = gold.where(F.col("violation_id").isin(back)).select(*_COUNTED, "violation_id", "run_id").collect()
        resurfaced = [r for r in rows_back if r["run_id"] not in reported_by]
    used = {r["entry"] for rows in matched.values() for r in rows}
    unmatched = [s.describe() for s in entries if s.entry not in used]
    for text in unmatched:
        log.warning("suppression matches no violation: %s", text)
    detail = {
        "entries": len(entries),
        "suppressed": len(now_active),
        "suppressed_new": _counts(suppressed_new),
        "resurfaced": _counts(resurfaced),
        "resurfaced_ids": sorted(r["violation_id"] for r in resurfaced),
        "unmatched": unmatched,
        "expired": [s.describe() for s in entries if not s.active_on(today)],
    }
    return detail, (None if set(table) == previous and exists else table)


def write_suppressions(spark: SparkSession, storage: LakeStorage, rows: list[tuple] | None) -> None:
    """Overwrite gold/suppressions with ``rows`` (None: it holds them already; a re-run writes nothing).
    After the resurfaced violations' rows moved to this run: a run killed in between leaves them to
    the next one either way."""
    if rows is not None:
        storage.overwrite(SUPPRESSIONS_TABLE, spark.createDataFrame(rows, SUPPRESSIONS_SCHEMA))
