"""GX Data Docs that work offline: the pages Great Expectations builds load Bootstrap, jQuery,
bootstrap-table, Vega and Font Awesome from CDNs (a blank, unstyled site without a network, and
one request per page view to third parties) and its logo from a tracking URL. After every build
the vendored copies (``docs_assets/``, see its README) are put beside the site, under
``static/vendor/``, and every page's URLs are rewritten to relative paths to them.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

ASSETS = Path(__file__).parent / "docs_assets"
VENDOR = "static/vendor"

# The URLs of GX's Data Docs templates (great_expectations/render/view/templates) -> vendored file.
CDN_ASSETS: dict[str, str] = {
    "https://code.jquery.com/jquery-3.7.1.min.js": "jquery-3.7.1.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js": "popper-1.12.9.min.js",
    "https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css": "bootstrap-4.3.1.min.css",
    "https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js": "bootstrap-4.3.1.min.js",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css": "bootstrap-table-1.19.1.min.css",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js": "bootstrap-table-1.19.1.min.js",
    # GX names 1.19.0 for the filter-control CSS (min and not): the 1.19.1 one is the same rules
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.min.css":
        "bootstrap-table-filter-control-1.19.1.min.css",
    "https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css":
        "bootstrap-table-filter-control-1.19.1.min.css",
    "https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/bootstrap-table-filter-control.min.js":
        "bootstrap-table-filter-control-1.19.1.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css":
        "bootstrap-datepicker-1.9.0.min.css",
    "https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js":
        "bootstrap-datepicker-1.9.0.min.js",
    "https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css":
        "bootstrap-prefers-dark-1.1.0.min.css",
    "https://cdn.jsdelivr.net/npm/vega@5": "vega-5.33.1.min.js",
    "https://cdn.jsdelivr.net/npm/vega-lite@5": "vega-lite-5.23.0.min.js",
    "https://cdn.jsdelivr.net/npm/vega-embed@6": "vega-embed-6.29.0.min.js",
    "https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css": "fontawesome/css/all.min.css",
}
# The header logo comes from GX's web-assets bucket with the context's id in the query (a beacon);
# the site already holds the same image.
_LOGO = re.compile(r'"https://great-expectations-web-assets\.[^"]*/logo-long\.png[^"]*"')
_URL = re.compile("|".join(re.escape(f'"{url}"') for url in sorted(CDN_ASSETS, key=len, reverse=True)))
# Subresource-integrity attributes of the CDN tags: with crossorigin a browser refuses a file:// script
# (no CORS there), so Bootstrap's JS never ran from a local copy; the copies are the vendored files.
_INTEGRITY = re.compile(r'\s+(?:integrity="[^"]*"|crossorigin="[^"]*")')
# GX's own links to the site's static files, at whatever depth it guessed (its validation pages are
# one level deeper than their favicon link says).
_STATIC = re.compile(r'((?:src|href)=")(?:\./|\.\./)*static/')
# What a page still loads from the network after the rewrite (links to websites are not loads).
REMOTE_LOAD = re.compile(r"<(?:script|img|link)\b[^>]*\b(?:src|href)=[\"']https?://[^\"']*", re.I)


def vendor_assets(docs_dir: Path) -> None:
    """Copy the vendored assets to ``<docs_dir>/static/vendor`` (skipped when already there)."""
    target = docs_dir / VENDOR
    for source in ASSETS.rglob("*"):
        if source.is_dir() or source.name == "README.md":
            continue
        dest = target / source.relative_to(ASSETS)
        if dest.exists() and dest.stat().st_size == source.stat().st_size:
            continue
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, dest)


def offline_page(html: str, to_root: str) -> str:
    """``html`` with its CDN and logo URLs pointed at the site's own copies; ``to_root``: the page's
    relative path to the site root (``""`` or ``"../../"``)."""
    html = _INTEGRITY.sub("", html)
    html = _STATIC.sub(lambda m: f"{m.group(1)}{to_root}static/", html)
    html = _URL.sub(lambda m: f'"{to_root}{VENDOR}/{CDN_ASSETS[m.group(0)[1:-1]]}"', html)
    return _LOGO.sub(f'"{to_root}static/images/logo-long.png"', html)


def page_versions(docs_dir: Path) -> dict[Path, int]:
    """Every page of the site and its modification time (ns): what a build left as it was."""
    return {page: page.stat().st_mtime_ns for page in docs_dir.rglob("*.html")}


def make_offline(docs_dir: Path, unchanged: dict[Path, int] | None = None) -> list[str]:
    """Make the built site at ``docs_dir`` self-contained; the pages that still load something
    remotely (a URL this build does not know: a newer GX), relative to ``docs_dir``. ``unchanged``:
    :func:`page_versions` before the build; a page the build did not write was made offline already."""
    vendor_assets(docs_dir)
    left = []
    for page in sorted(docs_dir.rglob("*.html")):
        if unchanged is not None and unchanged.get(page) == page.stat().st_mtime_ns:
            continue
        rel = page.relative_to(docs_dir)
        to_root = "../" * (len(rel.parts) - 1)
        html = page.read_text(encoding="utf-8")
        fixed = offline_page(html, to_root)
        if fixed != html:
            page.write_text(fixed, encoding="utf-8")
        if REMOTE_LOAD.search(fixed):
            left.append(str(rel).replace(os.sep, "/"))
    return left
