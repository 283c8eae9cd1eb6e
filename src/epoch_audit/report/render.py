"""The run report's HTML and the index of past runs (pure: gathered data in, a page out).

The pages are Jinja2 templates (``report/templates``) with autoescape on: every value a template
prints is escaped unless it is ``Markup`` — here only the inlined CSS and JS (``report/assets``) and
the JSON payload the charts are drawn from, which sits in a ``<script type="application/json">``
with ``<``, ``>`` and ``&`` as ``\\u`` escapes. Each page is self-contained (no network).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from epoch_audit.report.gather import anchor, tonight
from epoch_audit.report.runs import newest_first, trend_points


def json_for_script(data: Any) -> str:
    """JSON safe inside a <script> element: ``<``, ``>`` and ``&`` become \\u escapes (no ``</``, no ``<!--``)."""
    text = json.dumps(data, default=str, sort_keys=True, ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _grouped(value: float) -> str:
    """A count or a number of seconds with thousands separators (1,234,567; 251)."""
    return f"{value:,}" if isinstance(value, int) else f"{value:,.0f}"


def _environment() -> Environment:
    environment = Environment(
        loader=PackageLoader("epoch_audit.report", "templates"),
        autoescape=True,
        # A misspelt key fails the report loudly instead of printing an empty cell.
        undefined=StrictUndefined,
        # None prints as an empty cell, as a missing value should.
        finalize=lambda value: "" if value is None else value,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["anchor"] = anchor
    environment.filters["grouped"] = _grouped
    return environment


_ENVIRONMENT = _environment()


def _asset(name: str) -> Markup:
    """A static asset inlined verbatim: our own CSS and JS, never user data."""
    return Markup(resources.files("epoch_audit.report.assets").joinpath(name).read_text(encoding="utf-8"))


def _page(template: str, title: str, payload: dict[str, Any], **context: Any) -> str:
    """``template`` (which extends page.html) with the CSS, the chart data and the JS inline."""
    return _ENVIRONMENT.get_template(template).render(
        title=title, css=_asset("report.css"), js=_asset("report.js"), payload=Markup(json_for_script(payload)),
        **context,
    )


def report_href(run_id: str, prefix: str) -> str:
    """The link to ``run_id``'s report from a page ``prefix`` away from the reports folder."""
    return f"{prefix}{anchor(run_id)}/index.html"


def _linked(runs: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """``runs`` with ``href`` set where the run has a report page (``has_report``)."""
    return [{**r, "href": report_href(r["run_id"], prefix) if r.get("has_report") else None} for r in runs]


def _summary(data: dict[str, Any]) -> dict[str, Any]:
    """The summary cards' tables: violations per severity and per invariant, expectations per status."""
    by_severity: dict[str, int] = {}
    by_invariant: dict[str, dict[str, int]] = {}
    for c in data["violation_counts"]:
        by_severity[c["severity"]] = by_severity.get(c["severity"], 0) + c["count"]
        per_severity = by_invariant.setdefault(c["invariant"], {})
        per_severity[c["severity"]] = per_severity.get(c["severity"], 0) + c["count"]
    statuses: dict[str, int] = {}
    for r in data["expectations"]:
        statuses[r["status"]] = statuses.get(r["status"], 0) + 1
    return {
        "by_severity": sorted(by_severity.items()),
        "by_invariant": sorted(by_invariant.items()),
        "expectation_counts": [(s, statuses.get(s, 0)) for s in ("passed", "failed", "error", "skipped")],
    }


def render(data: dict[str, Any]) -> str:
    """The whole page (pure: data in, HTML out)."""
    points = trend_points(_linked(data.get("runs", []), "../"))
    outcome = tonight(data.get("new_counts", []), data.get("suppressed_new", 0),
                      data["expectations"] if data.get("validated") else None)
    evidence = sorted(data["evidence"].items(), key=lambda kv: (str(kv[1]["event_time"]), kv[0]))
    payload = {"run_id": data["run_id"], "timelines": data["timelines"], "trend": points}
    return _page("run.html", f"epoch-audit run {data['run_id']}", payload,
                 data=data, tonight=outcome, points=points, evidence=evidence, **_summary(data))


def render_index(runs: list[dict[str, Any]], generated_at: str) -> str:
    """``<lake>/reports/index.html``: the trend and every run, newest first, linked to its report."""
    points = trend_points(_linked(runs, ""))
    return _page("runs.html", "epoch-audit runs", {"timelines": [], "trend": points},
                 runs=newest_first(_linked(runs, "")), generated_at=generated_at, points=points)
