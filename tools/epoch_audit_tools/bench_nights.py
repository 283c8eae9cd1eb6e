"""``epoch-audit bench-nights``: does a night cost what the night holds, or what the lake holds?

1. Corpus: one simulated cluster of ``--nights`` x ``--hours-per-night`` simulated hours
   (default faults), written under ``--corpus-root`` and reused when its manifest is there. One
   simulated stretch of ``--hours-per-night`` stands for a day: the carried-traffic horizon
   (``incremental.traffic_lag_minutes``, a day in the shipped profiles) is scaled by the same factor.
2. Nights: the corpus is cut at ``start + k x hours-per-night`` into the drops a log shipper
   delivers (:mod:`.night_drops`: live files grow, rotated segments appear under their rotated
   names). Drop k is delivered into one tree with night k's date as modification time, then
   ``epoch-audit run --date <night k>`` runs in a child process (Spark start included, as a
   scheduled job runs it) on one lake, followed by ``epoch-audit maintain`` (``--maintain``, the
   documented nightly schedule). Late and re-shipped folders, segment dumps and plain checkpoints
   are one-off deliveries, not daily volume: they stay out (docs/operations.md says what a night
   that receives them reads).
3. Whole: one run over the final tree into a fresh lake. ``gold_equal`` says whether the nights'
   gold/violations equals it, columns naming a run aside; the nights' new-violation counts must add
   up to the whole run's.

Figures: per night its wall time, stage seconds, files delivered, lines read and new violations;
``last_to_second`` is night N's run wall over night 2's (night 1 starts an empty lake), and the
least-squares slope of the run wall over the night number says how fast a night grows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from epoch_audit_tools.bench_corpus import CORPUS_ROOT, REPO
from epoch_audit_tools.bench_report import commit_id
from epoch_audit_tools.night_drops import deliver, drop_tree

log = logging.getLogger("epoch_audit.bench")

RESULTS_DIR = REPO / "benchmarks" / "results"
LAG_LINE = re.compile(r"traffic_lag_minutes: *\d+")
# naming a run or its time: differ between the nights' lake and the whole run's by design
RUN_COLUMNS = {"run_id", "last_run_id", "last_delivered_at", "first_seen_at", "last_seen_at"}
FIRST_NIGHT = dt.date(2024, 6, 1)  # delivery dates: file modification times, one day apart


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``bench-nights`` subcommand's options."""
    p.add_argument("--nights", type=int, default=30, help="nightly runs into one lake (at least 2)")
    p.add_argument("--hours-per-night", type=float, default=1.0, help="simulated hours delivered per night")
    p.add_argument("--produce-rate", type=float, default=1.0, help="simulator produce requests per second")
    p.add_argument("--mode", choices=("kafka-kraft", "kafka-zk", "redpanda"), default="kafka-kraft")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--maintain", action=argparse.BooleanOptionalAction, default=True,
                   help="run `epoch-audit maintain` after each night (the documented schedule)")
    p.add_argument("--whole", action=argparse.BooleanOptionalAction, default=True,
                   help="also run once over the final tree and compare gold")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout (progress on stderr)")
    p.add_argument("--out", nargs="?", const=str(RESULTS_DIR), default=None,
                   help=f"write the JSON into this directory (default {RESULTS_DIR.relative_to(REPO)})")
    p.add_argument("--corpus-root", default=str(CORPUS_ROOT), help="where corpora are generated and reused")
    p.add_argument("--work", default=None, help="tree and lakes directory (default: a temp dir, removed)")
    p.add_argument("--profile", default="local", help="profile in the package's conf/ the nights run with")


# --- corpus and config ------------------------------------------------------------------------


def nights_corpus(root: Path, mode: str, seed: int, hours: float, rate: float) -> tuple[Path, dict[str, Any]]:
    """The simulated cluster (generated once, then reused) and its manifest."""
    out = root / f"nights-{mode}-s{seed}-h{hours:g}-r{rate:g}"
    manifest = out / "manifest.json"
    if not manifest.is_file():
        shutil.rmtree(out, ignore_errors=True)
        cmd = [sys.executable, "-m", "epoch_audit.cli", "simulate", "--out", str(out), "--seed", str(seed),
               "--mode", mode, "--hours", f"{hours:g}", "--produce-rate", f"{rate:g}", "--no-progress"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out, json.loads(manifest.read_text())


def scaled_config(profile: str, hours_per_night: float, target: Path) -> Path:
    """The profile's YAML with the carried-traffic horizon scaled from a day to a simulated night."""
    import epoch_audit

    text = (Path(epoch_audit.__file__).parent / "conf" / f"{profile}.yaml").read_text()
    lag = max(1, round(1440 * hours_per_night / 24))
    scaled, n = LAG_LINE.subn(f"traffic_lag_minutes: {lag}", text)
    if n != 1:
        raise SystemExit(f"epoch-audit bench-nights: conf/{profile}.yaml: no single traffic_lag_minutes line")
    target.write_text(scaled)
    return target


# --- runs -------------------------------------------------------------------------------------


def _cli(args: list[str]) -> tuple[float, int, dict[str, Any], str]:
    """``epoch-audit <args> --json`` in a child process: wall seconds, exit code, summary, stderr tail."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "epoch_audit.cli", *args, "--json"], capture_output=True, text=True)
    wall = time.perf_counter() - started
    try:
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        summary = {}
    tail = proc.stderr.strip().splitlines()[-1] if proc.returncode not in (0, 3) and proc.stderr.strip() else ""
    return wall, proc.returncode, summary, tail


def _night_figures(summary: dict[str, Any]) -> dict[str, Any]:
    stages = summary.get("stages", {})
    ingest, check = stages.get("ingest", {}), stages.get("check", {})
    return {
        "stages": {k: v.get("seconds") for k, v in stages.items() if isinstance(v, dict)},
        "files_read": ingest.get("files_read"),
        "lines_read": ingest.get("lines_read"),
        "new_violations": sum(v.get("count", 0) for v in check.get("violations", [])),
        "traffic_read_from": check.get("carried_traffic", {}).get("read_from"),
        "carry_write_seconds": check.get("carried_traffic", {}).get("seconds"),
    }


def stage_figures(night: dict[str, Any]) -> str:
    """A night's stage seconds and carry write as one log phrase: a bench stopped before its JSON is
    written keeps them on stderr."""
    parts = [f"{name} {seconds:.1f}" for name, seconds in night.get("stages", {}).items() if seconds is not None]
    if night.get("carry_write_seconds") is not None:
        parts.append(f"carry write {night['carry_write_seconds']:.1f}")
    return "stages (s): " + (", ".join(parts) if parts else "none")


def gold_rows(lake: Path) -> list[str]:
    """gold/violations as sorted JSON rows, without the columns naming a run."""
    from deltalake import DeltaTable

    table = DeltaTable(str(lake / "gold" / "violations")).to_pyarrow_table()
    table = table.select(sorted(c for c in table.column_names if c not in RUN_COLUMNS))
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def slope(ys: list[float]) -> float | None:
    """Least-squares slope of ``ys`` over 1..n (seconds per night)."""
    n = len(ys)
    if n < 2:
        return None
    xs = range(1, n + 1)
    mx, my = (n + 1) / 2, sum(ys) / n
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def run_nights(corpus: Path, start: dt.datetime, args: argparse.Namespace, work: Path, conf: Path) -> dict[str, Any]:
    """Deliver and run every night into one lake; then (``--whole``) one run over the final tree."""
    tree, lake = work / "tree", work / "lake-nights"
    nights: list[dict[str, Any]] = []
    for k in range(1, args.nights + 1):
        date = (FIRST_NIGHT + dt.timedelta(days=k - 1)).isoformat()
        last = k == args.nights
        cut = start + dt.timedelta(hours=args.hours_per_night * k + (24 if last else 0))  # last: the stragglers
        delivered = deliver(tree, drop_tree(corpus, cut), date)
        wall, code, summary, error = _cli(["run", "--input", str(tree), "--lake", str(lake), "--date", date,
                                           "--run-id", f"night-{k:02d}", "--conf", str(conf)])
        night = {"night": k, "date": date, "files_delivered": delivered, "wall_seconds": round(wall, 3),
                 "exit_code": code, "error": error or None, **_night_figures(summary)}
        if args.maintain:
            m_wall, m_code, _, m_error = _cli(["maintain", "--lake", str(lake), "--conf", str(conf),
                                               "--run-id", f"maintain-{k:02d}"])
            night["maintain"] = {"wall_seconds": round(m_wall, 3), "exit_code": m_code, "error": m_error or None}
        nights.append(night)
        log.info("bench-nights: night %d/%d %s: %.1f s, exit %d, %s files, %s new violations; %s", k, args.nights,
                 date, wall, code, delivered, night["new_violations"], stage_figures(night))
    walls = [n["wall_seconds"] for n in nights]
    result: dict[str, Any] = {
        "nights": nights,
        "last_to_second": round(walls[-1] / walls[1], 3),
        "slope_seconds_per_night": round(slope(walls) or 0.0, 3),
        "new_violations_total": sum(n["new_violations"] for n in nights),
    }
    if args.whole:
        whole_lake = work / "lake-whole"
        wall, code, summary, error = _cli(["run", "--input", str(tree), "--lake", str(whole_lake),
                                           "--run-id", "whole", "--conf", str(conf)])
        figures = _night_figures(summary)
        nightly_gold, whole_gold = gold_rows(lake), gold_rows(whole_lake)
        result["whole"] = {"wall_seconds": round(wall, 3), "exit_code": code, "error": error or None,
                           "stages": figures["stages"], "lines_read": figures["lines_read"],
                           "violations": figures["new_violations"]}
        result["gold_rows"] = {"nights": len(nightly_gold), "whole": len(whole_gold)}
        result["gold_equal"] = nightly_gold == whole_gold
        log.info("bench-nights: whole run %.1f s, exit %d; gold equal: %s", wall, code, result["gold_equal"])
    return result


def run(args: argparse.Namespace) -> int:
    """The ``bench-nights`` subcommand."""
    if args.nights < 2:
        print("epoch-audit bench-nights: --nights: at least 2 (night 2 is the reference)", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    hours = args.nights * args.hours_per_night
    corpus, manifest = nights_corpus(Path(args.corpus_root), args.mode, args.seed, hours, args.produce_rate)
    start = dt.datetime.fromisoformat(manifest["parameters"]["start"])
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="epoch-nights-"))
    shutil.rmtree(work / "tree", ignore_errors=True)
    for lake in ("lake-nights", "lake-whole"):
        shutil.rmtree(work / lake, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    conf = scaled_config(args.profile, args.hours_per_night, work / "nights.yaml")
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    try:
        figures = run_nights(corpus, start, args, work, conf)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    lines = sum(manifest.get("file_line_counts", {}).values())
    result = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit_id(),
        "command": "epoch-audit bench-nights " + " ".join(sys.argv[2:]),
        "corpus": {"path": str(corpus), "mode": args.mode, "seed": args.seed, "simulated_hours": hours,
                   "produce_rate": args.produce_rate, "lines": lines, "lines_per_night": round(lines / args.nights)},
        "hours_per_night": args.hours_per_night,
        "traffic_lag_minutes": max(1, round(1440 * args.hours_per_night / 24)),
        "maintain": args.maintain,
        "machine": {"cores": os.cpu_count(), "load_average_at_start": load_at_start,
                    "load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        **figures,
    }
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        name = f"nights-{args.mode}-{args.nights}x{args.hours_per_night:g}h-{stamp}.json"
        (out / name).write_text(text + "\n")
        log.info("bench-nights: wrote %s", out / name)
    walls = [n["wall_seconds"] for n in figures["nights"]]
    log.info("bench-nights: night 2 %.1f s, night %d %.1f s (x%.2f), slope %.2f s/night, gold equal: %s",
             walls[1], len(walls), walls[-1], figures["last_to_second"], figures["slope_seconds_per_night"],
             figures.get("gold_equal"))
    if args.json:
        print(json.dumps(result, sort_keys=True))
    failed = [n["night"] for n in figures["nights"] if n["exit_code"] not in (0, 3)]
    return 1 if failed or figures.get("gold_equal") is False else 0
