"""The rules of the house (docs/architecture.md), checked on the source tree: no module over 600
lines, no import cycle (lazy imports inside functions count too), plain imports only, and a
production wheel whose only top-level package is ``epoch_audit``."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ROOTS = (REPO / "src", REPO / "tools")
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    modules = {}
    for root in ROOTS:
        for path in root.rglob("*.py"):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in modules else node.module)
            elif isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            advanced = False
            for nxt in successors:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_over_600_lines():
    long = {str(p.relative_to(REPO)): n for p in _modules().values() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


def test_no_import_cycles():
    assert _cycles(_import_graph()) == []


def test_cycle_finder_sees_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_string_registries():
    offenders = [
        str(p.relative_to(REPO)) for p in _modules().values()
        if "importlib.import_module" in p.read_text() or "spec_from_file_location" in p.read_text()
    ]
    assert offenders == []


def test_the_production_wheel_holds_only_epoch_audit(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(REPO)],
        check=True, capture_output=True, cwd=tmp_path,
    )
    (wheel,) = tmp_path.glob("epoch_audit-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith((".dist-info", ".data"))}
    assert top == {"epoch_audit"}
    # the profiles, the report's assets and its templates travel inside the package
    assert "epoch_audit/conf/local.yaml" in names and "epoch_audit/report/assets/report.js" in names
    templates = {p.name for p in (REPO / "src/epoch_audit/report/templates").iterdir()}
    assert templates and {f"epoch_audit/report/templates/{t}" for t in templates} <= set(names)
    # and the Data Docs' vendored libraries, every file of them (the site is built offline from them)
    assets = REPO / "src/epoch_audit/validate/docs_assets"
    vendored = {f"epoch_audit/validate/docs_assets/{p.relative_to(assets).as_posix()}"
                for p in assets.rglob("*") if p.is_file()}
    assert len(vendored) > 20 and vendored <= set(names), sorted(vendored - set(names))[:5]
