"""The report stage: ``gold/daily_invariant_counts`` and one self-contained HTML page per run.

``<lake>/reports/<run_id>/index.html`` (all CSS/JS inline, no network): summary cards (events,
partitions, violations by invariant and severity, expectation results), a sortable violations
table whose evidence ids link to the evidence events' raw lines, and an epoch timeline chart
(leader and LE per controller decision, ISR changes, violation markers; inline SVG drawn by
vanilla JS) for every partition with a violation.

The pure part (DataFrame -> DataFrame) comes first; the driver only ever collects aggregates and
bounded selections: at most ``report_max_violations`` violations, ``report_max_evidence`` evidence
events per violation (fetched with a semi-join), ``report_max_partitions`` timelines of at most
``report_max_timeline_points`` decisions each. All user-derived text is escaped (``html.escape``;
the JSON payload sits in a ``<script type="application/json">`` with ``</`` escaped).
"""

from __future__ import annotations

import html
import json
import logging
import re
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import DAILY_COUNTS_TABLE, EVENTS_TABLE, SUPPRESSIONS_TABLE, VIOLATIONS_TABLE
from epoch_audit.lake.tables import PARTITION_TIMELINE_TABLE as TIMELINE_TABLE
from epoch_audit.lake.tables import VALIDATION_RESULTS_TABLE as RESULTS_TABLE
from epoch_audit.stages.base import StageResult

log = logging.getLogger(__name__)

PARTITION_KEY = ["cluster_id", "topic", "partition"]
RAW_CHARS = 4000

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


def evidence_events(events: DataFrame, shown: DataFrame, per_violation: int) -> DataFrame:
    """Bronze events cited as evidence by ``shown`` (first ``per_violation`` ids each), via a semi-join."""
    ids = (
        shown.select(F.posexplode(F.array_sort("evidence")).alias("pos", "event_id"))
        .where(F.col("pos") < per_violation)
        .select("event_id")
        .distinct()
    )
    return events.join(ids, "event_id", "left_semi").select(
        "event_id",
        "event_type",
        "cluster_id",
        "host_id",
        "broker_id",
        "topic",
        "partition",
        F.col("event_time").cast("string").alias("event_time"),
        "source_file",
        "line_number",
        F.substring("raw", 1, RAW_CHARS).alias("raw"),
    )


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


# ---------------------------------------------------------------------------------------------
# Gathering (aggregates and bounded collects only)
# ---------------------------------------------------------------------------------------------


def _rows(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.collect()]


def gather(spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str) -> dict[str, Any]:
    """Everything the page shows, as plain data; notes say what was absent."""
    v = config.validation
    notes: list[str] = []
    data: dict[str, Any] = {"run_id": run_id, "generated_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")}
    events = storage.read(EVENTS_TABLE) if storage.exists(EVENTS_TABLE) else None
    timeline = storage.read(TIMELINE_TABLE) if storage.exists(TIMELINE_TABLE) else None
    violations = storage.read(VIOLATIONS_TABLE) if storage.exists(VIOLATIONS_TABLE) else None

    summary: dict[str, Any] = {}
    if events is not None:
        row = events.agg(
            F.count("*").alias("events"),
            F.countDistinct("cluster_id").alias("clusters"),
            F.countDistinct("host_id").alias("hosts"),
        ).collect()[0]
        summary.update(row.asDict())
    else:
        notes.append(f"{EVENTS_TABLE} is absent: no event counts, no evidence lines")
    parts_source = timeline if timeline is not None else events
    if parts_source is not None:
        summary["partitions"] = parts_source.where(F.col("topic").isNotNull()).select(*PARTITION_KEY).distinct().count()
    data["summary"] = summary

    data["violations"], data["evidence"], data["timelines"] = [], {}, []
    data["violation_counts"], data["violations_total"], data["new_counts"], data["suppressed_new"] = [], 0, [], 0
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
            new_errors = violations.where((F.col("run_id") == F.lit(run_id)) & (F.col("severity") == "error"))
            data["suppressed_new"] = new_errors.join(active, "violation_id", "left_semi").count()
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
        if storage.exists(SUPPRESSIONS_TABLE):  # acknowledged violations are listed, marked
            covered = {r["violation_id"]: r for r in _rows(storage.read(SUPPRESSIONS_TABLE).where("status = 'active'"))}
            for row in data["violations"]:
                row["suppression"] = covered.get(row["violation_id"])
        if events is not None:
            data["evidence"] = {r["event_id"]: r for r in _rows(evidence_events(events, shown, v.report_max_evidence))}
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
    data["notes"] = notes
    return data


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


# ---------------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------------


def anchor(identifier: str) -> str:
    """A short, HTML-id-safe anchor for a violation or event id."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", str(identifier))[:40]


def esc(value: Any) -> str:
    """Escaped text for HTML content and attribute values ('' for None)."""
    return "" if value is None else html.escape(str(value), quote=True)


def json_for_script(data: Any) -> str:
    """JSON safe inside a <script> element: ``<``, ``>`` and ``&`` become \\u escapes (no ``</``, no ``<!--``)."""
    text = json.dumps(data, default=str, sort_keys=True, ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _asset(name: str) -> str:
    return resources.files("epoch_audit.report.assets").joinpath(name).read_text(encoding="utf-8")


def _merged_counts(counts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (invariant, severity, confidence), the counts of new and older violations added up."""
    merged: dict[tuple, int] = {}
    for c in counts:
        key = (c["invariant"], c["severity"], c["confidence"])
        merged[key] = merged.get(key, 0) + c["count"]
    return [{"invariant": i, "severity": s, "confidence": f, "count": n} for (i, s, f), n in merged.items()]


def _tonight_html(data: dict[str, Any]) -> str:
    """The first thing on the page: this run's outcome as its exit code counts it."""
    t = tonight(data.get("new_counts", []), data.get("suppressed_new", 0),
                data["expectations"] if data.get("validated") else None)
    new = f"{t['new']} new violations ({t['new_errors']} error)"
    if t["suppressed"]:
        new += f", {t['suppressed']} of them acknowledged"
    checks = (f"{t['failed_expectations']} failed expectations ({t['critical_failures']} critical)"
              if t["validated"] else "not validated by this run")
    return (
        f"<section id='tonight' class='tonight-{t['status']}' data-exit-code='{t['exit_code']}'>"
        f"<b>{'FOUND' if t['status'] == 'found' else 'OK'}</b> · exit code {t['exit_code']} · {esc(new)} · "
        f"{esc(checks)}</section>"
    )


def _card(label: str, value: Any, extra: str = "") -> str:
    return f'<div class="card"><div class="n">{esc(value)}</div><div class="l">{esc(label)}</div>{extra}</div>'


def _summary_html(data: dict[str, Any]) -> str:
    s = data["summary"]
    by_sev: dict[str, int] = {}
    by_inv: dict[str, dict[str, int]] = {}
    for c in data["violation_counts"]:
        by_sev[c["severity"]] = by_sev.get(c["severity"], 0) + c["count"]
        inv = by_inv.setdefault(c["invariant"], {})
        inv[c["severity"]] = inv.get(c["severity"], 0) + c["count"]
    inv_rows = "".join(
        f"<tr><td>{esc(i)}</td><td class='sev-error'>{esc(n.get('error', 0))}</td>"
        f"<td class='sev-warning'>{esc(n.get('warning', 0))}</td></tr>"
        for i, n in sorted(by_inv.items())
    )
    exp_counts: dict[str, int] = {}
    for r in data["expectations"]:
        exp_counts[r["status"]] = exp_counts.get(r["status"], 0) + 1
    exp_table = "".join(
        f"<tr><td class='st-{esc(k)}'>{esc(k)}</td><td>{esc(exp_counts.get(k, 0))}</td></tr>"
        for k in ("passed", "failed", "error", "skipped")
    )
    sev_table = "".join(
        f"<tr><td class='sev-{esc(k)}'>{esc(k)}</td><td>{esc(n)}</td></tr>" for k, n in sorted(by_sev.items())
    )
    return (
        '<div class="cards" id="summary">'
        + _card(
            "events",
            s.get("events", "n/a"),
            f"<div class='l'>{esc(s.get('hosts', 0))} hosts, {esc(s.get('clusters', 0))} clusters</div>",
        )
        + _card("partitions", s.get("partitions", "n/a"))
        + _card("violations", data["violations_total"], f"<table>{sev_table}</table>")
        + _card("by invariant (error / warning)", len(by_inv), f"<table id='by-invariant'>{inv_rows}</table>")
        + _card("expectations", len(data["expectations"]), f"<table id='expectation-counts'>{exp_table}</table>")
        + "</div>"
    )


def _violations_html(data: dict[str, Any]) -> str:
    if not data["violations"]:
        return '<p class="note">No violations.</p>'
    head = (
        "severity",
        "confidence",
        "invariant",
        "cluster",
        "topic",
        "partition",
        "broker",
        "LE",
        "expected LE",
        "event time",
        "new",
        "explanation",
        "evidence",
    )
    rows = []
    for v in data["violations"]:
        links = " ".join(
            f'<a class="mono" href="#ev-{anchor(e)}">{esc(str(e)[:10])}</a>'
            if e in data["evidence"]
            else f'<span class="mono" title="not shown">{esc(str(e)[:10])}</span>'
            for e in v["evidence"] or []
        )
        cells = [
            f"<td class='sev-{esc(v['severity'])}'>{esc(v['severity'])}</td>",
            f"<td>{esc(v['confidence'])}</td>",
            f"<td>{esc(v['invariant'])}</td>",
            f"<td>{esc(v['cluster_id'])}</td>",
            f"<td>{esc(v['topic'])}</td>",
            f"<td data-sort='{esc(v['partition'])}'>{esc(v['partition'])}</td>",
            f"<td>{esc(v['broker_id'])}</td>",
            f"<td>{esc(v['leader_epoch'])}</td>",
            f"<td>{esc(v['expected_epoch'])}</td>",
            f"<td class='mono'>{esc(v['event_time'])}</td>",
            _new_cell(v, data["run_id"]),
            f"<td>{esc(v['explanation'])}</td>",
            f"<td>{links}</td>",
        ]
        rows.append(f"<tr id='v-{anchor(v['violation_id'])}'>{''.join(cells)}</tr>")
    more = ""
    if data["violations_total"] > len(data["violations"]):
        more = (
            f"<p class='note'>Showing {len(data['violations'])} of {data['violations_total']} violations "
            "(validation.report_max_violations).</p>"
        )
    return (
        more
        + '<table class="data sortable" id="violations"><thead><tr>'
        + "".join(f"<th>{esc(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _new_cell(v: dict[str, Any], run_id: str) -> str:
    """"yes" when this run reported the violation; "suppressed" (why, whose, until when) when acknowledged."""
    s = v.get("suppression")
    if s:
        why = f"{s['reason']} ({s['owner']}, until {s['expires']}; entry {s['entry']})"
        return f"<td class='suppressed' title='{esc(why)}'>suppressed: {esc(why)}</td>"
    return f"<td>{'yes' if v['run_id'] == run_id else ''}</td>"


def _evidence_html(data: dict[str, Any]) -> str:
    if not data["evidence"]:
        return '<p class="note">No evidence events to show.</p>'
    blocks = []
    for eid, e in sorted(data["evidence"].items(), key=lambda kv: (str(kv[1]["event_time"]), kv[0])):
        blocks.append(
            f"<div id='ev-{anchor(eid)}'><span class='mono'>{esc(eid)}</span> "
            f"<b>{esc(e['event_type'])}</b> host {esc(e['host_id'])} broker {esc(e['broker_id'])} "
            f"{esc(e['topic'])}-{esc(e['partition'])} at {esc(e['event_time'])}<br>"
            f"<span class='mono'>{esc(e['source_file'])}:{esc(e['line_number'])}</span>"
            f"<pre>{esc(e['raw'])}</pre></div>"
        )
    return '<div class="evidence">' + "".join(blocks) + "</div>"


def _expectations_html(data: dict[str, Any]) -> str:
    if not data["expectations"]:
        return '<p class="note">No expectation results.</p>'
    rows = []
    for r in data["expectations"]:
        sample = "<br>".join(esc(s) for s in (r["unexpected_sample"] or [])[:5])
        rows.append(
            f"<tr><td>{esc(r['suite'])}</td><td>{esc(r['table'])}</td><td>{esc(r['expectation'])}</td>"
            f"<td>{'yes' if r['critical'] else ''}</td><td class='st-{esc(r['status'])}'>{esc(r['status'])}</td>"
            f"<td>{esc(r['unexpected_count'])}</td><td class='mono'>{sample or esc(r['note'])}</td></tr>"
        )
    return (
        '<table class="data sortable" id="expectations"><thead><tr><th>suite</th><th>table</th><th>expectation</th>'
        "<th>critical</th><th>status</th><th>unexpected</th><th>offending keys / note</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def render(data: dict[str, Any]) -> str:
    """The whole page (pure: data in, HTML out)."""
    charts = (
        "".join(
            f"<div class='chart' id='chart-{i}'><h3>{esc(t['title'])}</h3></div>"
            for i, t in enumerate(data["timelines"])
        )
        or '<p class="note">No partition timelines to draw.</p>'
    )
    notes = "".join(f"<li>{esc(n)}</li>" for n in data["notes"])
    body = (
        f"<header><h1>epoch-audit run {esc(data['run_id'])}</h1>"
        f"<div class='meta'>generated {esc(data['generated_at'])}</div></header><main>"
        + _tonight_html(data)
        + (f"<ul class='note' id='notes'>{notes}</ul>" if notes else "")
        + "<h2>Summary</h2>"
        + _summary_html(data)
        + "<h2>Violations</h2>"
        + _violations_html(data)
        + "<h2>Epoch timelines</h2>"
        + charts
        + "<h2>Expectations</h2>"
        + _expectations_html(data)
        + "<h2>Evidence</h2>"
        + _evidence_html(data)
        + "<div id='report-status' data-state='pending'>pending</div></main>"
    )
    payload = {"run_id": data["run_id"], "timelines": data["timelines"]}
    parts = {
        "TITLE": esc(f"epoch-audit run {data['run_id']}"),
        "CSS": _asset("report.css"),
        "BODY": body,
        "DATA": json_for_script(payload),
        "JS": _asset("report.js"),
    }
    # One pass over the template only: substituted text is never scanned again.
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: parts[m.group(1)], _asset("report.html"))


# ---------------------------------------------------------------------------------------------
# The stage
# ---------------------------------------------------------------------------------------------


def run_report(spark: SparkSession, storage: LakeStorage, config: AppConfig, run_id: str) -> StageResult:
    """Write gold/daily_invariant_counts and ``<lake>/reports/<run_id>/index.html``."""
    detail: dict[str, Any] = {}
    if storage.exists(VIOLATIONS_TABLE):
        active = (
            storage.read(SUPPRESSIONS_TABLE).where(F.col("status") == "active")
            if storage.exists(SUPPRESSIONS_TABLE) else None
        )
        storage.overwrite(DAILY_COUNTS_TABLE, daily_invariant_counts(storage.read(VIOLATIONS_TABLE), active))
        detail["daily_invariant_counts"] = DAILY_COUNTS_TABLE
    if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://", storage.lake) and not storage.lake.startswith("file://"):
        detail["report"] = None
        detail["note"] = "the lake is not a local directory: no HTML report written"
        return StageResult("report", "ran", detail)
    data = gather(spark, storage, config, run_id)
    out = Path(storage.lake.removeprefix("file://")) / "reports" / anchor(run_id) / "index.html"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(data), encoding="utf-8")
    log.info("report: %s", out)
    detail.update(
        {
            "report": str(out),
            "violations_shown": len(data["violations"]),
            "charts": len(data["timelines"]),
            "notes": data["notes"],
        }
    )
    return StageResult("report", "ran", detail)
