"""What the run report shows, as plain data: the pure transforms (DataFrame -> DataFrame) and the
gathering that runs them over the lake.

The driver only ever collects aggregates and bounded selections: at most ``report_max_violations``
violations, ``report_max_evidence`` evidence events per violation (fetched with a semi-join),
``report_max_partitions`` timelines of at most ``report_max_timeline_points`` decisions each, and
one small row per past run (``epoch_audit.report.runs``).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from epoch_audit.config import AppConfig
from epoch_audit.gold.evidence import CITED_COLUMNS, RAW_CHARS, cited_events
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import (
    EVENTS_TABLE,
    INPUT_PROBLEMS_TABLE,
    LEDGER_TABLE,
    RUN_SUMMARY_TABLE,
    SUPPRESSIONS_TABLE,
    VIOLATIONS_TABLE,
)
from epoch_audit.lake.tables import PARTITION_TIMELINE_TABLE as TIMELINE_TABLE
from epoch_audit.lake.tables import VALIDATION_RESULTS_TABLE as RESULTS_TABLE
from epoch_audit.report.runs import current_run, lines_read_by, run_history

PARTITION_KEY = ["cluster_id", "topic", "partition"]

# ---------------------------------------------------------------------------------------------
# Pure transforms
# ---------------------------------------------------------------------------------------------

def daily_invariant_counts(violations: DataFrame, suppressed: DataFrame | None = None) -> DataFrame:
    """Violations per (date of the offending event, cluster, invariant, severity, confidence), and
    how many of them an active suppression covers (``suppressed``: ids, ``violation_id``).

    ``date`` is the UTC date of ``event_time``; violations without an event time count under a
    null date (never dropped). ``count`` is every violation; ``count - suppressed`` the open ones.
    """
    if suppressed is None:
        marked = violations.withColumn("_suppressed", F.lit(0))
    else:
        ids = suppressed.select("violation_id").distinct().withColumn("_suppressed", F.lit(1))
        marked = violations.join(ids, "violation_id", "left").fillna(0, ["_suppressed"])
    return (
        marked.groupBy(F.to_date("event_time").alias("date"), "cluster_id", "invariant", "severity", "confidence")
        .agg(F.count("*").alias("count"), F.sum("_suppressed").cast("long").alias("suppressed"))
        .select("date", "cluster_id", "invariant", "severity", "confidence", "count", "suppressed")
    )


def violations_to_show(violations: DataFrame, limit: int, run_id: str | None = None) -> DataFrame:
    """The ``limit`` violations the report lists: the ones ``run_id`` reported first (tonight's), then
    errors first, then by invariant, partition, epoch."""
    tonight = F.when(F.col("run_id") == F.lit(run_id), 0).otherwise(1)
    sev = F.when(F.col("severity") == "error", 0).otherwise(1)
    return violations.orderBy(
        tonight, sev, "invariant", "cluster_id", "topic", "partition", "leader_epoch", "broker_id", "violation_id"
    ).limit(limit)


def tonight(new_counts: list[dict[str, Any]], suppressed_new: int, expectations: list[dict[str, Any]] | None
            ) -> dict[str, Any]:
    """What this run found, as its exit code counts it (docs/operations.md, exit codes): violations it
    reported first (``new_counts``: per severity) less the acknowledged ones, and its own failed
    expectations (None: the run did not validate)."""
    new = sum(c["count"] for c in new_counts)
    errors = sum(c["count"] for c in new_counts if c["severity"] == "error")
    failed = [r for r in expectations or [] if r["status"] in ("failed", "error")]
    critical = [r for r in failed if r["critical"]]
    found = errors - suppressed_new > 0 or bool(critical)
    return {
        "status": "found" if found else "ok", "exit_code": 3 if found else 0, "new": new, "new_errors": errors,
        "suppressed": suppressed_new, "failed_expectations": len(failed), "critical_failures": len(critical),
        "validated": expectations is not None,
    }


def cited_ids(shown: list[dict[str, Any]], per_violation: int) -> list[str]:
    """The event ids the listed violations cite (``evidence`` sorted, as the report shows it): the
    first ``per_violation`` of each, distinct, sorted."""
    return sorted({i for row in shown for i in (row.get("evidence") or [])[:per_violation] if i is not None})


def evidence_events(events: DataFrame, ids: list[str], clusters: list[str] | None = None) -> DataFrame:
    """The bronze events whose ``event_id`` is in ``ids`` (:func:`cited_ids`), read from ``clusters``'
    partitions only when given.

    A filter on a set of literals, not a semi-join: the ids are a few thousand at most, and a short
    run (no broadcasts) sorted every bronze event id to join them (2 s of the report at night 16 of
    ``bench-nights``)."""
    if clusters is not None:
        events = events.where(F.col("cluster_id").isin(clusters))
    shown = [F.col(c).cast("string").alias(c) if c == "event_time" else F.col(c) for c in CITED_COLUMNS]
    return events.where(F.col("event_id").isin(ids)).select(*shown, F.substring("raw", 1, RAW_CHARS).alias("raw"))


def event_summary(events: DataFrame) -> DataFrame:
    """Events per (cluster, host): one small grouped aggregate the driver adds up (:func:`summary_counts`)."""
    return events.groupBy("cluster_id", "host_id").agg(F.count("*").alias("events"))


def summary_counts(per_host: list[dict[str, Any]]) -> dict[str, int]:
    """Events, clusters and hosts (a host is a (cluster, host id): host ids repeat across clusters)
    from :func:`event_summary`'s rows; a null cluster or host id is no cluster or host."""
    return {
        "events": sum(r["events"] for r in per_host),
        "clusters": len({r["cluster_id"] for r in per_host if r["cluster_id"] is not None}),
        "hosts": len({(r["cluster_id"], r["host_id"]) for r in per_host if r["host_id"] is not None}),
    }


def lake_summary_counts(storage: LakeStorage) -> dict[str, int] | None:
    """:func:`summary_counts` without reading a bronze row: events per cluster partition from the
    Delta log's file statistics, hosts from the ledger (a chunk that parsed lines put events of its
    file's host in bronze, and every event comes from such a chunk). None where either is not at
    hand (the engine keeps no statistics here, a file has none, bronze is not partitioned by
    cluster, no ledger): :func:`event_summary` answers then."""
    counts = storage.partition_row_counts(EVENTS_TABLE)
    wanted = ["cluster_id", "host_id", "parsed"]
    if counts is None or not storage.exists(LEDGER_TABLE) or not set(wanted) <= set(storage.columns(LEDGER_TABLE)):
        return None
    per_cluster: dict[str | None, int] = {}
    for key, n in counts.items():
        values = dict(key)
        if "cluster_id" not in values:
            return None
        per_cluster[values["cluster_id"]] = per_cluster.get(values["cluster_id"], 0) + n
    hosts = {
        (r["cluster_id"], r["host_id"]) for r in storage.rows(LEDGER_TABLE, wanted)
        if r["host_id"] is not None and (r["parsed"] or 0) > 0
    }
    return {
        "events": sum(per_cluster.values()),
        "clusters": len([c for c, n in per_cluster.items() if c is not None and n > 0]),
        "hosts": len(hosts),
    }


def partitions_with_violations(violations: DataFrame, limit: int) -> DataFrame:
    """The partitions (cluster, topic, partition) with a violation, most violations first."""
    return (
        violations.where(F.col("topic").isNotNull() & F.col("partition").isNotNull())
        .groupBy(*PARTITION_KEY)
        .agg(F.count("*").alias("n"), F.max(F.when(F.col("severity") == "error", 1).otherwise(0)).alias("err"))
        .orderBy(F.desc("err"), F.desc("n"), *PARTITION_KEY)
        .limit(limit)
    )


def timeline_points(timeline: DataFrame, partitions: DataFrame, max_points: int) -> DataFrame:
    """The latest ``max_points`` decisions of each partition in ``partitions``, in causal order."""
    keyed = timeline.join(
        partitions.select(*PARTITION_KEY), [timeline[c].eqNullSafe(partitions[c]) for c in PARTITION_KEY], "left_semi"
    )
    w = Window.partitionBy(*PARTITION_KEY).orderBy(
        F.col("decision_seq").desc(), F.col("commit_offset").desc_nulls_last(), F.col("event_id").desc()
    )
    return (
        keyed.withColumn("_rank", F.row_number().over(w))
        .withColumn("_total", F.count("*").over(Window.partitionBy(*PARTITION_KEY)))
        .where(F.col("_rank") <= max_points)
        .select(
            *PARTITION_KEY,
            "topic_id",
            "decision_seq",
            "source",
            "leader",
            "leader_epoch",
            "partition_epoch",
            "isr",
            F.col("event_time").cast("string").alias("event_time"),
            "event_id",
            (F.col("_total") > max_points).alias("truncated"),
        )
    )



def anchor(identifier: str) -> str:
    """A short, HTML-id-safe anchor for a violation or event id (also a run's report folder name)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(identifier))[:40]


# ---------------------------------------------------------------------------------------------
# Gathering (aggregates and bounded collects only)
# ---------------------------------------------------------------------------------------------


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def gather(spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str,
           ingested: bool = False) -> dict[str, Any]:
    """Everything the page shows, as plain data; notes say what was absent. ``ingested``: this run
    ran the ingest stage (its lines read are those of its ledger rows, 0 when it has none)."""
    v = config.validation
    notes: list[str] = []
    now = datetime.now(UTC)
    data: dict[str, Any] = {"run_id": run_id, "generated_at": now.strftime("%Y-%m-%d %H:%M:%S UTC")}
    events = storage.read(EVENTS_TABLE) if storage.exists(EVENTS_TABLE) else None
    timeline = storage.read(TIMELINE_TABLE) if storage.exists(TIMELINE_TABLE) else None
    violations = storage.read(VIOLATIONS_TABLE) if storage.exists(VIOLATIONS_TABLE) else None

    summary: dict[str, Any] = {}
    if events is not None:
        summary.update(lake_summary_counts(storage) or summary_counts(_rows(event_summary(events))))
    else:
        notes.append(f"{EVENTS_TABLE} is absent: no event counts, no evidence lines")
    parts_source = timeline if timeline is not None else events
    if parts_source is not None:
        summary["partitions"] = parts_source.where(F.col("topic").isNotNull()).select(*PARTITION_KEY).distinct().count()
    data["summary"] = summary

    data["violations"], data["evidence"], data["timelines"] = [], {}, []
    data["input_problems"] = (
        _rows(storage.read(INPUT_PROBLEMS_TABLE).orderBy("cluster_id", "problem", "detail"))
        if storage.exists(INPUT_PROBLEMS_TABLE) else []
    )
    data["violation_counts"], data["violations_total"], data["new_counts"], data["suppressed_new"] = [], 0, [], 0
    suppressed_all = 0  # of every severity: the run's summary row counts new violations less these
    if violations is None:
        notes.append(f"{VIOLATIONS_TABLE} is absent: the check stage has not run on this lake")
    else:
        is_new = (F.col("run_id") == F.lit(run_id)).alias("new")
        counts = _rows(violations.groupBy("invariant", "severity", "confidence", is_new).count().orderBy("invariant"))
        data["new_counts"] = [c for c in counts if c["new"]]
        data["violation_counts"] = list(_merged_counts(counts))
        data["violations_total"] = sum(c["count"] for c in counts)
        if data["new_counts"] and storage.exists(SUPPRESSIONS_TABLE):  # acknowledged: out of the exit code
            active = storage.read(SUPPRESSIONS_TABLE).where("status = 'active'").select("violation_id")
            new_rows = violations.where(F.col("run_id") == F.lit(run_id))
            covered = _rows(new_rows.join(active, "violation_id", "left_semi").groupBy("severity").count())
            data["suppressed_new"] = sum(c["count"] for c in covered if c["severity"] == "error")
            suppressed_all = sum(c["count"] for c in covered)
        shown = violations_to_show(violations, v.report_max_violations, run_id)
        data["violations"] = _rows(
            shown.select(
                "violation_id",
                "run_id",
                "invariant",
                "severity",
                "confidence",
                "cluster_id",
                "topic",
                "partition",
                "broker_id",
                "leader_epoch",
                "expected_epoch",
                F.col("event_time").cast("string").alias("event_time"),
                F.array_sort("evidence").alias("evidence"),
                "explanation",
            )
        )
        if data["input_problems"]:  # a cluster whose input is not one cluster: its violations are doubtful
            doubtful = {p["cluster_id"] for p in data["input_problems"]}
            for row in data["violations"]:
                row["doubtful"] = row["cluster_id"] in doubtful
        if storage.exists(SUPPRESSIONS_TABLE):  # acknowledged violations are listed, marked
            covered = {r["violation_id"]: r for r in _rows(storage.read(SUPPRESSIONS_TABLE).where("status = 'active'"))}
            for row in data["violations"]:
                row["suppression"] = covered.get(row["violation_id"])
        ids = cited_ids(data["violations"], v.report_max_evidence)
        if events is not None and ids:
            named = {r["cluster_id"] for r in data["violations"]}
            clusters = None if None in named else sorted(named)  # a violation without a cluster: read them all
            cited = cited_events(storage)  # looked up once a run (validation's)
            source = events if cited is None else cited
            data["evidence"] = {r["event_id"]: r for r in _rows(evidence_events(source, ids, clusters))}
        if timeline is None:
            notes.append(f"{TIMELINE_TABLE} is absent: no epoch timeline charts")
        else:
            parts = partitions_with_violations(violations, v.report_max_partitions)
            points = _rows(timeline_points(timeline, parts, v.report_max_timeline_points))
            marks = _rows(
                violations.join(parts.select(*PARTITION_KEY), PARTITION_KEY, "left_semi")
                .select(*PARTITION_KEY, "violation_id", "invariant", "severity", "leader_epoch", "explanation")
                .limit(v.report_max_partitions * 20)
            )
            data["timelines"] = build_timelines(_rows(parts), points, marks)
    if storage.exists(RESULTS_TABLE):
        results = storage.read(RESULTS_TABLE)
        mine = results.where(F.col("run_id") == run_id)
        data["validated"] = mine.limit(1).count() > 0
        if not data["validated"]:
            latest = results.agg(F.max_by("run_id", "validated_at").alias("r")).collect()[0]["r"]
            if latest is not None:
                notes.append(f"this run did not validate: expectation results of run {latest}")
            mine = results.where(F.col("run_id") == latest)
        data["expectations"] = _rows(
            mine.select(
                "suite",
                "table",
                "expectation",
                "critical",
                "status",
                "unexpected_count",
                "observed_value",
                "unexpected_sample",
                "note",
            ).orderBy(F.col("status").isin("failed", "error").desc(), "suite", "table", "expectation")  # failures first
        )
    else:
        data["expectations"] = []
        notes.append(f"{RESULTS_TABLE} is absent: the validate stage has not run on this lake")
    data["runs"] = _run_rows(storage, run_id, ingested, data, suppressed_all, now.replace(tzinfo=None))
    data["notes"] = notes
    return data


def _run_rows(storage: LakeStorage, run_id: str, ingested: bool, data: dict[str, Any], suppressed: int,
              now: datetime) -> list[dict[str, Any]]:
    """Every completed run (``gold/run_summary``) and this one, in one small collect."""
    parts = []
    if storage.exists(RUN_SUMMARY_TABLE):  # a rerun under the same id replaces its old row
        parts.append(run_history(storage.read(RUN_SUMMARY_TABLE)).where(F.col("run_id") != F.lit(run_id)))
    if ingested and storage.exists(LEDGER_TABLE):
        parts.append(lines_read_by(storage.read(LEDGER_TABLE), run_id))
    rows = []
    if parts:
        union = parts[0]
        for part in parts[1:]:
            union = union.unionByName(part, allowMissingColumns=True)
        rows = _rows(union)
    # Only ``run`` ingests before its report; a standalone ``report`` neither reads lines nor checks,
    # and its summary row will say so (nothing to draw), so its own row says so too.
    lines = next((r["lines_read"] or 0 for r in rows if r["run_id"] == run_id), 0) if ingested else None
    known = data["violations_total"] if ingested and storage.exists(VIOLATIONS_TABLE) else None
    new = sum(c["count"] for c in data["new_counts"]) - suppressed
    validated = data["expectations"] if data.get("validated") else None
    outcome = tonight(data["new_counts"], data["suppressed_new"], validated)
    this = current_run(run_id, "run" if ingested else "report", outcome, new, known, lines, now)
    return [r for r in rows if r["run_id"] != run_id] + [this]


def build_timelines(
    parts: list[dict[str, Any]], points: list[dict[str, Any]], marks: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Chart payloads: per partition its decisions (causal order) and its violation markers."""

    def key(r: dict[str, Any]) -> tuple:
        return (r["cluster_id"], r["topic"], r["partition"])

    by_part: dict[tuple, list[dict[str, Any]]] = {}
    for p in points:
        by_part.setdefault(key(p), []).append(p)
    marks_by: dict[tuple, list[dict[str, Any]]] = {}
    for m in marks:
        marks_by.setdefault(key(m), []).append(m)
    out = []
    for part in parts:
        k = key(part)
        pts = sorted(by_part.get(k, []), key=lambda p: (p["decision_seq"], p["event_id"]))
        out.append(
            {
                "title": f"{part['topic']}-{part['partition']} (cluster {part['cluster_id']})",
                "key": list(k),
                "truncated": any(p["truncated"] for p in pts),
                "points": [
                    {
                        "seq": p["decision_seq"],
                        "t": p["event_time"],
                        "leader": p["leader"],
                        "le": p["leader_epoch"],
                        "pe": p["partition_epoch"],
                        "isr": p["isr"],
                        "source": p["source"],
                        "event_id": p["event_id"],
                    }
                    for p in pts
                ],
                "marks": [
                    {
                        "vid": anchor(m["violation_id"]),
                        "invariant": m["invariant"],
                        "severity": m["severity"],
                        "le": m["leader_epoch"],
                        "text": m["explanation"],
                    }
                    for m in sorted(marks_by.get(k, []), key=lambda m: (m["leader_epoch"] or 0, m["violation_id"]))
                ],
            }
        )
    return out



def _merged_counts(counts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (invariant, severity, confidence), the counts of new and older violations added up."""
    merged: dict[tuple, int] = {}
    for c in counts:
        key = (c["invariant"], c["severity"], c["confidence"])
        merged[key] = merged.get(key, 0) + c["count"]
    return [{"invariant": i, "severity": s, "confidence": f, "count": n} for (i, s, f), n in merged.items()]

