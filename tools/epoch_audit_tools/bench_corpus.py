"""Benchmark corpora: simulator output of about the requested number of lines, generated once and reused.

Simulator parameters are calibrated from two small pilots' manifests (lines per simulated hour as a
linear function of the produce rate); a corpus that misses the target by more than
``MAX_DEVIATION`` is generated once more with its hours scaled to fit.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from epoch_audit_tools.simulator import simulate

log = logging.getLogger("epoch_audit.bench")

REPO = Path(__file__).resolve().parents[2]
CORPUS_ROOT = REPO / "benchmarks" / "corpus"
# Cluster shape: 5 brokers x 40 partitions from 10^4 lines up (the measured sizes share one shape);
# smoke sizes use the smallest cluster the simulator allows, so a test corpus has few files.
FULL_SHAPE = (5, 40)
SMOKE_SHAPE = (3, 4)
SMOKE_BELOW = 10_000
PILOT_HOURS = 0.25
PILOT_RATES = (2.0, 10.0)
MIN_HOURS, MAX_HOURS = 0.1, 72.0
# Lines per simulated hour fall over a long run (short pilots overshoot: 10^7 asked, 7.3 M made in
# 24 h): a corpus off by more than this is generated once more with its hours scaled to fit.
MAX_DEVIATION = 0.10


def _total_lines(manifest: dict[str, Any]) -> int:
    return int(sum(manifest.get("file_line_counts", {}).values()))


def shape(events: int) -> tuple[int, int]:
    """(brokers, partitions) of the simulated cluster for a corpus of ``events`` lines."""
    return SMOKE_SHAPE if events < SMOKE_BELOW else FULL_SHAPE


def _simulate(out: Path, seed: int, mode: str, hours: float, rate: float, cluster: tuple[int, int]) -> dict[str, Any]:
    brokers, partitions = cluster
    return simulate(out, seed, mode=mode, brokers=brokers, partitions=partitions, hours=hours,
                    produce_rate=rate, faults="default", progress=False, cluster_id=f"bench-{mode}")


def calibrate(root: Path, mode: str, seed: int, cluster: tuple[int, int]) -> dict[str, float]:
    """Lines per simulated hour = base + per_rate x produce_rate, from two pilots (cached)."""
    cache = root / f"calibration-{mode}-s{seed}-b{cluster[0]}p{cluster[1]}.json"
    if cache.is_file():
        return json.loads(cache.read_text())
    per_hour = []
    with tempfile.TemporaryDirectory(prefix="epoch-bench-pilot-") as tmp:
        for rate in PILOT_RATES:
            manifest = _simulate(Path(tmp) / f"r{rate}", seed, mode, PILOT_HOURS, rate, cluster)
            per_hour.append(_total_lines(manifest) / PILOT_HOURS)
    per_rate = max((per_hour[1] - per_hour[0]) / (PILOT_RATES[1] - PILOT_RATES[0]), 1e-6)
    base = max(per_hour[0] - per_rate * PILOT_RATES[0], 0.0)
    result = {"base_lines_per_hour": base, "lines_per_hour_per_rate": per_rate,
              "pilot_hours": PILOT_HOURS, "pilot_rates": list(PILOT_RATES), "pilot_lines_per_hour": per_hour}
    root.mkdir(parents=True, exist_ok=True)
    cache.write_text(json.dumps(result, indent=1))
    return result


def plan_parameters(events: int, cal: dict[str, float]) -> dict[str, float]:
    """Hours and produce rate expected to give ``events`` lines: the simulator's default rate (20/s)
    for as many hours as needed, within [0.1, 24] hours, then the rate is scaled to fit."""
    base, per_rate = cal["base_lines_per_hour"], cal["lines_per_hour_per_rate"]
    rate = 20.0
    hours = events / (base + per_rate * rate)
    if hours > MAX_HOURS or hours < MIN_HOURS:
        hours = min(max(hours, MIN_HOURS), MAX_HOURS)
        rate = max((events / hours - base) / per_rate, 0.01)
    hours = round(hours, 4)
    rate = round(rate, 4)
    return {"hours": hours, "produce_rate": rate, "predicted_lines": round(hours * (base + per_rate * rate))}


def corpus_for(root: Path, mode: str, seed: int, events: int) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """The corpus directory for (mode, seed, size), generated unless already there; (path, manifest, info)."""
    path = root / f"{mode}-s{seed}-n{events}"
    manifest_file = path / "manifest.json"
    info: dict[str, Any] = {"path": str(path), "reused": manifest_file.is_file()}
    if manifest_file.is_file():
        manifest = json.loads(manifest_file.read_text())
        info["generate_seconds"] = None
    else:
        cluster = shape(events)
        cal = calibrate(root, mode, seed, cluster)
        params = plan_parameters(events, cal)
        log.info("bench: generating %s corpus of ~%d lines (%s)", mode, events, params)
        started = time.perf_counter()
        manifest = _simulate(path, seed, mode, params["hours"], params["produce_rate"], cluster)
        made = _total_lines(manifest)
        scaled = round(min(max(params["hours"] * events / max(made, 1), MIN_HOURS), MAX_HOURS), 4)
        if events >= SMOKE_BELOW and abs(made - events) > MAX_DEVIATION * events and scaled != params["hours"]:
            log.info("bench: %d lines made in %.4g h: generating again for %.4g h", made, params["hours"], scaled)
            shutil.rmtree(path)
            params = {**params, "first_attempt": {"hours": params["hours"], "lines": made}, "hours": scaled}
            manifest = _simulate(path, seed, mode, params["hours"], params["produce_rate"], cluster)
        info["generate_seconds"] = round(time.perf_counter() - started, 1)
        (path / "bench-plan.json").write_text(json.dumps({"calibration": cal, **params}, indent=1))
    plan_file = path / "bench-plan.json"
    plan = json.loads(plan_file.read_text()) if plan_file.is_file() else {}
    actual = _total_lines(manifest)
    info.update(
        requested_events=events,
        actual_lines=actual,
        deviation_pct=round(100.0 * (actual - events) / events, 1) if events else None,
        simulator={**{k: manifest["parameters"][k] for k in ("mode", "brokers", "partitions", "hours",
                                                             "produce_rate", "kafka_version")}},
        predicted_lines=plan.get("predicted_lines"),
        calibration=plan.get("calibration"),
        bytes=sum(p.stat().st_size for p in path.rglob("*") if p.is_file()),
    )
    return path, manifest, info
