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
