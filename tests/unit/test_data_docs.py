"""GX Data Docs are self-contained: built for a tiny validation, no page loads anything from the
network (the CDN libraries and GX's logo are vendored copies beside the site, at relative paths),
no file of the site or the GX project names the lake's absolute path, and headless Chromium with
every host unresolvable renders the index and a validation page without an error."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import great_expectations.expectations as gxe
import pytest

from epoch_audit.validate.base import TableSuite, ValidationSettings
from epoch_audit.validate.data_docs import REMOTE_LOAD
from epoch_audit.validate.runner import GxProject

LOCAL_REF = re.compile(r"<(?:script|link|img)\b[^>]*\b(?:src|href)=\"((?:\.\./)*static/[^\"#?]+)\"")


@pytest.fixture(scope="module")
def site(spark, tmp_path_factory) -> Path:
    """The reports folder of a lake after one validation of a two-row frame (one failed expectation)."""
    reports = tmp_path_factory.mktemp("lake") / "reports"
    df = spark.createDataFrame([(1, "a"), (None, "b")], "x int, k string")
    suite = TableSuite("gold", "gold/tiny", lambda settings: [], ("k",))
    for run_id in ("r1", "r2"):  # a second build over the first one's pages
        project = GxProject(reports)
        project.validate(suite, [gxe.ExpectColumnValuesToNotBeNull(column="x"),
                                 gxe.ExpectColumnValuesToBeBetween(column="x", min_value=0, max_value=5)],
                         df, ValidationSettings(run_id=run_id))
        assert project.build_docs(run_id) == str(reports / "data_docs" / "index.html")
    return reports


def test_a_later_build_renders_only_its_runs_pages(spark, tmp_path):
    """A site with an index gets the pages of this run's results and its suites, and a new index
    listing every run; earlier runs' pages are left as they were (rendering every stored result
    grew with the nights)."""
    import os

    reports = tmp_path / "reports"
    df = spark.createDataFrame([(1, "a")], "x int, k string")
    suite = TableSuite("gold", "gold/tiny", lambda settings: [], ("k",))
    pages: dict[str, list[Path]] = {}
    for run_id in ("night-1", "night-2"):
        project = GxProject(reports)
        project.validate(suite, [gxe.ExpectColumnValuesToNotBeNull(column="x")], df, ValidationSettings(run_id=run_id))
        project.build_docs(run_id)
        validations = reports / "data_docs" / "validations"
        pages[run_id] = sorted(p for p in validations.rglob("*.html") if run_id in p.parts)
        assert len(pages[run_id]) == 1
        if run_id == "night-1":  # night 1's pages (a full build: no index yet), dated back an hour
            for page in (reports / "data_docs").rglob("*.html"):
                os.utime(page, (page.stat().st_atime, page.stat().st_mtime - 3600))
            old = {p: p.stat().st_mtime for p in (reports / "data_docs").rglob("*.html")}
    index = (reports / "data_docs" / "index.html").read_text(encoding="utf-8")
    assert "night-1" in index and "night-2" in index
    kept = [p for p, mtime in old.items() if p.stat().st_mtime == mtime]
    assert pages["night-1"][0] in kept and reports / "data_docs" / "index.html" not in kept
    for page in (reports / "data_docs").rglob("*.html"):
        assert not REMOTE_LOAD.findall(page.read_text(encoding="utf-8")), page


def _pages(site: Path) -> list[Path]:
    pages = sorted((site / "data_docs").rglob("*.html"))
    assert len(pages) >= 3  # the index, the suite, the validation results
    return pages


def test_no_page_loads_from_the_network_and_every_local_asset_exists(site):
    for page in _pages(site):
        html = page.read_text(encoding="utf-8")
        assert not REMOTE_LOAD.findall(html), (page, REMOTE_LOAD.findall(html)[:3])
        refs = LOCAL_REF.findall(html)
        assert any("static/vendor/jquery" in r for r in refs), page
        for ref in refs:
            assert (page.parent / ref).resolve().is_file(), (page, ref)
    fonts = site / "data_docs" / "static" / "vendor" / "fontawesome" / "webfonts"
    assert sorted(p.suffix for p in fonts.iterdir()) == [".woff2"] * 4


def test_no_file_names_the_lakes_absolute_path(site):
    lake = str(site.parent)
    for path in site.rglob("*"):
        if path.is_file() and path.suffix in (".html", ".json", ".yml", ".yaml", ".css", ".js"):
            assert lake not in path.read_text(encoding="utf-8", errors="replace"), path


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="no chromium binary on this machine")
def test_chromium_renders_the_site_offline(site, tmp_path):
    index = site / "data_docs" / "index.html"
    result = next(p for p in _pages(site) if "validations" in p.parts)
    for name, page in (("index", index), ("result", result)):
        res = subprocess.run([
            _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--no-first-run", "--disable-dev-shm-usage",
            f"--user-data-dir={tmp_path / name}", "--virtual-time-budget=5000",
            "--host-resolver-rules=MAP * ~NOTFOUND",  # offline: any network load fails (and is logged)
            "--enable-logging=stderr", "--v=0", "--dump-dom", page.resolve().as_uri(),
        ], capture_output=True, text=True, timeout=180, check=False)
        assert res.returncode == 0, res.stderr[-2000:]
        problems = [line for line in res.stderr.splitlines() if "Uncaught" in line or "net::ERR_" in line]
        assert problems == [], problems[:5]
        if page is index:  # jQuery, Bootstrap and bootstrap-table ran: the runs table is built
            assert 'class="bootstrap-table bootstrap4"' in res.stdout
