"""An alert on a webhook when a run needs a human: new violations, failed critical expectations.

The body is Slack-compatible (an incoming webhook's ``text`` plus ``blocks``), which Mattermost,
Rocket.Chat, Teams workflows and most alert relays also take. A quiet run (nothing new, every
critical expectation passed) sends nothing. The URL comes from an environment variable named in the
config (``alerts.webhook_url_env``): it carries its token, so it is never logged or stored; the
summary records only whether the alert went out. A failed post is logged and recorded, and never
changes the run's exit code: the findings are in the lake and the exit code either way.
"""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from typing import Any

log = logging.getLogger(__name__)

MAX_LISTED = 10  # lines per section: an alert is a pointer to the report, not the report


def _lines(items: list[str]) -> str:
    shown = items[:MAX_LISTED]
    more = len(items) - len(shown)
    return "\n".join(f"• {i}" for i in shown) + (f"\n• … and {more} more" if more > 0 else "")


def alert_payload(summary: dict[str, Any]) -> dict[str, Any] | None:
    """The webhook body for a run ``summary`` (as ``--json`` prints it), or None when there is
    nothing to alert on."""
    stages = summary.get("stages", {})
    new = stages.get("check", {}).get("violations", [])
    failed = stages.get("validate", {}).get("critical_failures", [])
    if not new and not failed:
        return None
    run_id, lake = summary.get("run_id", "?"), summary.get("lake", "?")
    total = sum(v["count"] for v in new)
    headline = (
        f"epoch-audit run {run_id}: {total} new violation(s), {len(failed)} failed critical expectation(s)"
        f" (exit {summary.get('exit_code', '?')})"
    )
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": headline[:150]}}]
    if new:
        items = [f"`{v['invariant']}` {v['count']} ({v['severity']}, {v['confidence']})" for v in new]
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": "*New violations*\n" + _lines(items)}})
    if failed:
        items = [f"`{c['table']}` {c['expectation']}: {c.get('unexpected_count')} unexpected" for c in failed]
        blocks.append(
            {"type": "section", "text": {"type": "mrkdwn", "text": "*Failed critical expectations*\n" + _lines(items)}}
        )
    report = stages.get("report", {}).get("report")
    where = f"lake `{lake}`" + (f", report `{report}`" if report else "")
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": where}]})
    return {"text": headline, "blocks": blocks}


def post_alert(url: str, payload: dict[str, Any], timeout_seconds: float) -> dict[str, Any]:
    """POST ``payload`` as JSON; return what the summary records (never the URL)."""
    if not url.lower().startswith(("http://", "https://")):  # never file:// or other urllib schemes
        log.error("webhook alert not sent: the URL is not http(s)")
        return {"sent": False, "error": "the URL is not http(s)"}
    try:
        request = urllib.request.Request(
            url, data=json.dumps(payload).encode(), method="POST",
            headers={"Content-Type": "application/json", "User-Agent": "epoch-audit"},
        )
        with urllib.request.urlopen(request, timeout=timeout_seconds) as response:  # noqa: S310 (http(s) only)
            return {"sent": True, "status": response.status}
    except urllib.error.HTTPError as err:
        log.error("webhook alert refused: HTTP %s %s", err.code, err.reason)
        return {"sent": False, "status": err.code, "error": f"HTTP {err.code} {err.reason}"}
    except (urllib.error.URLError, OSError, ValueError) as err:
        reason = getattr(err, "reason", err)
        log.error("webhook alert not sent: %s", reason)
        return {"sent": False, "error": str(reason)}


def send_alert(summary: dict[str, Any], url: str | None, timeout_seconds: float) -> dict[str, Any] | None:
    """Alert on ``summary`` if a URL is set and the run needs a human; the record for the summary."""
    if not url:
        return None
    payload = alert_payload(summary)
    if payload is None:
        return {"sent": False, "reason": "nothing to alert on"}
    return post_alert(url, payload, timeout_seconds)
