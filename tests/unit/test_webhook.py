"""Webhook alerts: posted to a real local HTTP server, only when a run needs a human, never the URL stored."""

from __future__ import annotations

import json

from epoch_audit.report.webhook import alert_payload, post_alert, send_alert

FOUND = {
    "run_id": "night-7", "lake": "/lakes/prod", "exit_code": 3,
    "stages": {
        "check": {"violations": [
            {"invariant": "two_leaders_same_epoch", "severity": "error", "confidence": "proven", "count": 2},
        ]},
        "validate": {"critical_failures": [
            {"table": "bronze/events", "expectation": "event_time_in_window", "unexpected_count": 1},
        ]},
        "report": {"report": "/lakes/prod/reports/night-7/index.html"},
    },
}
QUIET = {"run_id": "night-8", "exit_code": 0, "stages": {"check": {"violations": []},
                                                          "validate": {"critical_failures": []}}}


def test_a_run_with_findings_posts_one_slack_compatible_alert(webhook_receiver):
    url, received, _ = webhook_receiver
    record = send_alert(FOUND, url, 5)
    assert record == {"sent": True, "status": 200}
    assert "SECRET" not in json.dumps(record)
    (post,) = received
    assert post["path"] == "/hooks/T000/SECRET" and post["type"] == "application/json"
    body = post["body"]
    assert body["text"].startswith("epoch-audit run night-7: 2 new violation(s), 1 failed critical expectation(s)")
    text = json.dumps(body["blocks"])
    assert "two_leaders_same_epoch" in text and "event_time_in_window" in text and "night-7/index.html" in text
    assert all(b["type"] in ("header", "section", "context") for b in body["blocks"])


def test_a_quiet_run_or_no_url_sends_nothing(webhook_receiver):
    url, received, _ = webhook_receiver
    assert alert_payload(QUIET) is None
    assert send_alert(QUIET, url, 5) == {"sent": False, "reason": "nothing to alert on"}
    assert send_alert(FOUND, None, 5) is None and send_alert(FOUND, "", 5) is None
    assert received == []


def test_a_refused_or_unreachable_webhook_is_recorded_not_raised(webhook_receiver):
    url, received, state = webhook_receiver
    state["status"] = 403
    assert post_alert(url, {"text": "x"}, 5) == {"sent": False, "status": 403, "error": "HTTP 403 Forbidden"}
    unreachable = post_alert("http://127.0.0.1:9/hook", {"text": "x"}, 2)
    assert unreachable["sent"] is False and unreachable["error"]
    assert post_alert("not a url", {"text": "x"}, 2) == {"sent": False, "error": "the URL is not http(s)"}
    assert post_alert("file:///etc/passwd", {"text": "x"}, 2)["sent"] is False
    assert post_alert("http://[::1", {"text": "x"}, 2)["sent"] is False  # malformed: recorded, not raised


def test_long_lists_are_cut_to_a_pointer():
    many = {**FOUND, "stages": {**FOUND["stages"], "check": {"violations": [
        {"invariant": f"inv_{i}", "severity": "error", "confidence": "proven", "count": 1} for i in range(25)]}}}
    section = alert_payload(many)["blocks"][1]["text"]["text"]
    assert section.count("•") == 11 and "… and 15 more" in section
