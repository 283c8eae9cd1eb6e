"""The run report's HTML and the index of past runs (pure: gathered data in, a page out).

Each page is self-contained (all CSS and JS inline from ``report/assets``, no network). All
user-derived text is escaped (``html.escape``); the JSON payload the charts are drawn from sits in a
``<script type="application/json">`` with ``<``, ``>`` and ``&`` as ``\\u`` escapes.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from typing import Any

from epoch_audit.report.gather import anchor, tonight
from epoch_audit.report.runs import newest_first, trend_points


def esc(value: Any) -> str:
    """Escaped text for HTML content and attribute values ('' for None)."""
    return "" if value is None else html.escape(str(value), quote=True)


def json_for_script(data: Any) -> str:
    """JSON safe inside a <script> element: ``<``, ``>`` and ``&`` become \\u escapes (no ``</``, no ``<!--``)."""
    text = json.dumps(data, default=str, sort_keys=True, ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _asset(name: str) -> str:
    return resources.files("epoch_audit.report.assets").joinpath(name).read_text(encoding="utf-8")


def _page(title: str, body: str, payload: dict[str, Any]) -> str:
    """``body`` in the page template with the CSS, the chart data and the JS inline."""
    parts = {
        "TITLE": esc(title),
        "CSS": _asset("report.css"),
        "BODY": body,
        "DATA": json_for_script(payload),
        "JS": _asset("report.js"),
    }
    # One pass over the template only: substituted text is never scanned again.
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: parts[m.group(1)], _asset("report.html"))


def report_href(run_id: str, prefix: str) -> str:
    """The link to ``run_id``'s report from a page ``prefix`` away from the reports folder."""
    return f"{prefix}{anchor(run_id)}/index.html"


def _linked(runs: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """``runs`` with ``href`` set where the run has a report page (``has_report``)."""
    return [{**r, "href": report_href(r["run_id"], prefix) if r.get("has_report") else None} for r in runs]


def _trend_html(runs: list[dict[str, Any]], prefix: str) -> tuple[str, list[dict[str, Any]]]:
    """The trend section and its chart points (drawn by report.js into ``#trend``)."""
    points = trend_points(_linked(runs, prefix))
    if not points:
        return '<p class="note" id="trend-none">No completed run has ingested or checked yet: no trend.</p>', []
    first, last = points[0], points[-1]
    caption = (f"{len(points)} runs, {esc(first['t'] or first['run_id'])} to {esc(last['t'] or last['run_id'])}: "
               "new violations (bars) and violations known to gold (line); lines read below")
    return f"<div class='chart' id='trend'><h3>{caption}</h3></div>", points


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
    trend, points = _trend_html(data.get("runs", []), "../")
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
        f"<div class='meta'>generated {esc(data['generated_at'])} · <a href='../index.html'>all runs</a></div>"
        "</header><main>"
        + _tonight_html(data)
        + (f"<ul class='note' id='notes'>{notes}</ul>" if notes else "")
        + "<h2>Summary</h2>"
        + _summary_html(data)
        + "<h2>Trend <a class='more' href='../index.html'>all runs</a></h2>"
        + trend
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
    payload = {"run_id": data["run_id"], "timelines": data["timelines"], "trend": points}
    return _page(f"epoch-audit run {data['run_id']}", body, payload)


def _count(value: Any) -> str:
    """A table cell for a count that may be unknown (the run did not run the stage that counts it)."""
    return "<td data-sort='-1'>–</td>" if value is None else f"<td data-sort='{esc(value)}'>{value:,}</td>"


def render_index(runs: list[dict[str, Any]], generated_at: str) -> str:
    """``<lake>/reports/index.html``: the trend and every run, newest first, linked to its report."""
    trend, points = _trend_html(runs, "")
    rows = []
    for r in newest_first(_linked(runs, "")):
        when = r.get("started_at") or r.get("finished_at")
        seconds = ((r["finished_at"] - r["started_at"]).total_seconds()
                   if r.get("started_at") and r.get("finished_at") else None)
        run = esc(r["run_id"]) + (" <b>(this run)</b>" if r.get("current") else "")
        link = f"<a href='{esc(r['href'])}'>{run}</a>" if r["href"] else run
        failed = _count(r["failed_expectations"])
        if r["critical_failures"]:
            failed = failed.replace("</td>", f" ({r['critical_failures']:,} critical)</td>")
        rows.append(
            f"<tr class='run-{esc(r['status'])}'>"
            f"<td class='mono'>{link}</td>"
            f"<td class='mono'>{esc(when.strftime('%Y-%m-%d %H:%M:%S') if when else '')}</td>"
            f"<td>{esc(r['command'])}</td>"
            f"<td class='st-{'failed' if r['status'] == 'found' else 'passed'}'>{esc(r['status'])}</td>"
            f"<td>{esc(r['exit_code'])}</td>"
            + _count(r["new_violations"]) + failed + _count(r["lines_read"]) + _count(r["known_violations"])
            + f"<td data-sort='{esc(seconds if seconds is not None else -1)}'>"
            f"{'' if seconds is None else f'{seconds:,.0f} s'}</td></tr>"
        )
    head = ("run", "started (UTC)", "command", "status", "exit code", "new violations", "failed expectations",
            "lines read", "known violations", "took")
    table = (
        '<table class="data sortable" id="runs"><thead><tr>' + "".join(f"<th>{esc(h)}</th>" for h in head)
        + "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
        if rows else '<p class="note">No completed run yet.</p>'
    )
    body = (
        f"<header><h1>epoch-audit runs</h1><div class='meta'>generated {esc(generated_at)} from gold/run_summary"
        "</div></header><main><h2>Trend</h2>" + trend + f"<h2>Runs ({len(rows)})</h2>" + table
        + "<div id='report-status' data-state='pending'>pending</div></main>"
    )
    return _page("epoch-audit runs", body, {"timelines": [], "trend": points})
