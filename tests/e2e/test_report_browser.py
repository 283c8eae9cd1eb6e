"""Open the run report in headless Chromium: no JS error, charts drawn, table rows present, screenshot.

The page records every error (window.onerror, unhandled rejections, console.error) from its first
script on, and a last script writes a status element (`data-state`, errors, charts, rows) that runs
even when the main script threw; ``--dump-dom`` returns the DOM after the scripts ran.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.unit.test_report import report_lake  # noqa: F401  (session fixture shared with test_report)

CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def _chromium() -> str | None:
    for path in CANDIDATES:
        if Path(path).is_file():
            return path
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(binary: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
        f"--user-data-dir={profile}", "--virtual-time-budget=5000", *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False)


def _status(dom: subprocess.CompletedProcess) -> tuple[str, dict]:
    """The page's status element (state, facts) from a --dump-dom run."""
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<div id="report-status" data-state="(\w+)">(.*?)</div>', dom.stdout, re.S)
    assert m, "status element missing: " + dom.stdout[-2000:]
    return m.group(1), json.loads(m.group(2).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.mark.skipif(_chromium() is None, reason="no chromium binary on this machine (CI installs it)")
def test_report_fits_a_laptop_screen_and_leads_with_tonight(report_lake, tmp_path):  # noqa: F811
    """At 1366 px (a common laptop width) no table, chart or log line needs a horizontal scroll, and
    the first thing under the title is this run's outcome as its exit code counts it."""
    _, page, _ = report_lake
    binary = _chromium()
    assert binary is not None
    dom = _run(binary, tmp_path / "profile-1366", "--window-size=1366,900", "--dump-dom", page.resolve().as_uri())
    state, status = _status(dom)
    assert state == "ok", status
    assert status["viewport"] == 1366
    assert status["overflowing"] == [] and status["page_width"] <= 1366, status
    # the trend over past runs is drawn (the fixture's two nights) and links to the index of runs
    assert status["trend"] == 1 and status["trend_runs"] == 2, status
    assert (page.parent / "../index.html").resolve().is_file()
    main = dom.stdout[dom.stdout.index("<main>"):]
    assert main.index('id="tonight"') < main.index('id="summary"')
    # the fixture's run wrote no violation and failed one critical expectation: exit 3
    tonight = re.search(r'<section id="tonight"[^>]*data-exit-code="(\d)"[^>]*>(.*?)</section>', main, re.S)
    assert tonight and tonight.group(1) == "3", main[:1500]
    assert "FOUND" in tonight.group(2) and "0 new violations" in tonight.group(2)
    assert "1 failed expectations (1 critical)" in tonight.group(2)


@pytest.mark.skipif(_chromium() is None, reason="no chromium binary on this machine (CI installs it)")
def test_report_renders_in_chromium(report_lake, tmp_path):  # noqa: F811
    _, page, code = report_lake
    assert code == 0
    binary = _chromium()
    assert binary is not None
    url = page.resolve().as_uri()

    dom = _run(binary, tmp_path / "profile-dom", "--dump-dom", url)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<div id="report-status" data-state="(\w+)">(.*?)</div>', dom.stdout, re.S)
    assert m, "status element missing: " + dom.stdout[-2000:]
    status = json.loads(m.group(2).replace("&quot;", '"').replace("&amp;", "&"))
    assert status["errors"] == [], status["errors"]
    assert m.group(1) == "ok" and status["rendered"] is True
    # one SVG chart per partition with a violation, drawn by the page's own JS
    assert status["charts"] == 2
    assert dom.stdout.count('class="timeline"') == 2
    assert dom.stdout.count('class="decision"') == 7  # 5 + 2 controller decisions (orders-0 logs one state twice)
    assert dom.stdout.count('class="violation-mark"') == 2
    assert dom.stdout.count('class="isr-change"') == 3  # orders-0: [1,2]->[2]->[1,2]; orders-1: [3]->[2,3]
    # the violations table has its rows, errors first
    assert status["rows"] == 2
    assert re.findall(r'<tr id="v-(\w+)">', dom.stdout) == ["v1", "v2"]

    shot = tmp_path / "report.png"
    res = _run(binary, tmp_path / "profile-shot", f"--screenshot={shot}", "--window-size=1280,2000", url)
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(_chromium() is None, reason="no chromium binary on this machine (CI installs it)")
def test_index_of_runs_renders_and_links_resolve(report_lake, tmp_path):  # noqa: F811
    """reports/index.html at 1366 px: no JS error, the trend drawn, one row per completed run plus this
    one, nothing wider than the window, and every link (rows and chart) opens a page that exists."""
    lake, page, _ = report_lake
    binary = _chromium()
    assert binary is not None
    index = lake / "reports" / "index.html"
    dom = _run(binary, tmp_path / "profile-index", "--window-size=1366,900", "--dump-dom", index.resolve().as_uri())
    state, status = _status(dom)
    assert state == "ok" and status["errors"] == [], status
    assert status["runs"] == 4 and status["trend"] == 1 and status["trend_runs"] == 2, status
    assert status["overflowing"] == [] and status["page_width"] <= 1366, status
    links = re.findall(r'<a [^>]*href="([^"#]+)"', dom.stdout)
    assert f"{page.parent.name}/index.html" in links
    assert links and all((index.parent / link).resolve().is_file() for link in links), links
