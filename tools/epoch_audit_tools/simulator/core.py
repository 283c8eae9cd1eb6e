"""``simulate()``: schedule episodes and faults, run the event loop, write truth and manifest."""

from __future__ import annotations

import heapq
import json
import random
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

from epoch_audit_tools.simulator.clock import parse_start
from epoch_audit_tools.simulator.config import FAULTS, SimConfig
from epoch_audit_tools.simulator.episodes import BENIGN, delete_topic
from epoch_audit_tools.simulator.faults import FAULT_INJECTORS, choose_epoch_divergence
from epoch_audit_tools.simulator.kafka import KafkaSim
from epoch_audit_tools.simulator.redpanda import run_redpanda
from epoch_audit_tools.simulator.sink import FileSink
from epoch_audit_tools.simulator.truth import Truth

WARMUP_S = 120


def _progress(enabled: bool, total: int) -> Any:
    """A rich progress bar over simulated seconds (a no-op object when disabled)."""
    if not enabled:
        return None
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    prog = Progress(TextColumn("simulating"), BarColumn(), TextColumn("{task.completed}/{task.total} s"),
                    TimeElapsedColumn(), transient=True)
    prog.start()
    prog.add_task("sim", total=total)
    return prog


def _episode_plan(cfg: SimConfig, rng: random.Random, slots: int) -> list[tuple[str, str]]:
    """[(kind, name)] for each slot: faults first (count = rate x hours, at least 1), then benign."""
    plan: list[tuple[str, str]] = []
    for name, rate in cfg.fault_rates.items():
        plan.extend(("fault", name) for _ in range(max(1, round(rate * cfg.hours))))
    if cfg.mode != "redpanda":
        plan = [x for x in plan if x[1] != "epoch_start_offset_divergence"]  # injected at collection time
    benign = [n for n, (modes, _) in BENIGN.items() if cfg.mode in modes]
    i = 0
    while len(plan) < slots - 1 and benign:
        plan.append(("benign", benign[i % len(benign)]))
        i += 1
    rng.shuffle(plan)
    return plan


def simulate_config(cfg: SimConfig) -> dict[str, Any]:
    """Run one simulation described by ``cfg``; returns the manifest."""
    cfg.validate()
    out = Path(cfg.out_dir)
    if (out / f"cluster={cfg.cluster_id}").exists():
        shutil.rmtree(out / f"cluster={cfg.cluster_id}")
    for stale in ("late", "truth.jsonl", "manifest.json"):
        target = out / stale
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(cfg.seed)
    sink = FileSink(out)
    truth = Truth(cfg.cluster_id, cfg.max_clock_skew_ms)
    if cfg.mode == "redpanda":
        stats, extra = run_redpanda(cfg, sink, truth, rng)
    else:
        stats, extra = _run_kafka(cfg, sink, truth, rng)
    counts = sink.close()
    extra.update(_ship(cfg, out, rng, counts))
    truth.write(out / "truth.jsonl")
    manifest = {
        "seed": cfg.seed,
        "parameters": {
            "mode": cfg.mode, "kafka_version": cfg.kafka_version, "brokers": cfg.brokers,
            "partitions": cfg.partitions, "hours": cfg.hours, "produce_rate": cfg.produce_rate,
            "faults": cfg.faults, "strimzi": cfg.strimzi, "cluster_id": cfg.cluster_id, "start": cfg.start,
            "clock_skew_ms": cfg.clock_skew_ms, "max_clock_skew_ms": cfg.max_clock_skew_ms,
        },
        "faults_enabled": dict(sorted(cfg.fault_rates.items())),
        "faults_not_applicable": sorted(k for k, (modes, _) in FAULTS.items() if cfg.mode not in modes),
        "truth_count": len(truth.rows),
        "truth_by_invariant": dict(sorted(Counter(str(r["invariant"]) for r in truth.rows).items())),
        "event_counts": dict(sorted(stats.items())),
        "file_line_counts": counts,
        **extra,
    }
    with open(out / "manifest.json", "w", encoding="utf-8", newline="") as fh:
        json.dump(manifest, fh, indent=2, sort_keys=False)
        fh.write("\n")
    return manifest


def _run_kafka(cfg: SimConfig, sink: FileSink, truth: Truth, rng: random.Random) -> tuple[Counter[str], dict[str, Any]]:
    sim = KafkaSim(cfg, sink, truth, rng)
    t0 = parse_start(cfg.start)
    end = t0 + int(cfg.hours * 3600 * 1000)
    sim.setup(t0)
    slot_ms = cfg.episode_slot_s * 1000
    slots = max(0, (end - t0 - WARMUP_S * 1000) // slot_ms - 1)
    plan = _episode_plan(cfg, rng, int(slots))
    deletion_slot = len(plan) // 2 if plan else -1
    for i, (kind, name) in enumerate(plan):
        ts = t0 + WARMUP_S * 1000 + i * slot_ms
        if kind == "fault":
            sim.at(ts, lambda t, n=name: FAULT_INJECTORS[n](sim, t))
            sim.stats[f"scheduled_fault:{name}"] += 1
        else:
            sim.at(ts, lambda t, n=name: BENIGN[n][1](sim, t))
            sim.stats[f"scheduled_episode:{name}"] += 1
        if i == deletion_slot:
            delete_topic(sim, ts + slot_ms // 2)
    interval = cfg.checkpoint_interval_s * 1000
    for b in sim.brokers:
        for k, tt in enumerate(range(t0 + interval, end, interval)):
            sim.at(tt + 37 * b + k % 3, lambda t, b=b: sim.checkpoint_copy(t, b), control=False)
        for tt in range(t0 + 45_000 + 1000 * b, end, 300_000):
            sim.at(tt, lambda t, b=b: sim.noise(t, b), control=False)
    rate_ms = cfg.produce_rate / 1000.0
    next_produce = t0 + 5000
    prog = _progress(cfg.progress, int((end - t0) / 1000))
    last_tick = t0
    while True:
        nxt = sim.queue[0][0] if sim.queue else end
        if next_produce <= nxt and next_produce < end:
            parts = sim.live_parts()
            sim.now = next_produce
            sim.produce(next_produce, parts[rng.randrange(len(parts))])
            next_produce += max(1, int(rng.expovariate(rate_ms))) if rate_ms > 0 else end
        elif sim.queue and nxt < end + 120_000:
            t, _, fn, args = heapq.heappop(sim.queue)
            sim.now = t
            fn(t, *args)
        else:
            break
        if prog is not None and sim.now - last_tick >= 60_000:
            prog.update(prog.task_ids[0], completed=min(int((sim.now - t0) / 1000), int((end - t0) / 1000)))
            last_tick = sim.now
    if prog is not None:
        prog.stop()
    corrupt = {}
    if "epoch_start_offset_divergence" in cfg.fault_rates:
        n = max(1, round(cfg.fault_rates["epoch_start_offset_divergence"] * cfg.hours))
        corrupt = choose_epoch_divergence(sim, n)
    sim.finish(end, corrupt)
    sink.flush()
    for rel in sim.deleted_dumps:
        path = sink.root / rel
        if path.exists():
            path.unlink()
        sink.line_counts.pop(rel, None)
    # rotated logs of even brokers are gzipped (logrotate compress on some hosts)
    for h in sim.hosts:
        if h % 2 == 0:
            for f in ("state-change.log", "server.log", "controller.log", "kafka-request.log"):
                sink.gzip_rotated(f"{sim.hostdir(h)}/{f}")
    extra = {"clock_skews_ms": {str(h): sim.clocks.skew(h) for h in sim.hosts},
             "retired_brokers": sorted(b for b, br in sim.brokers.items() if br.retired)}
    return sim.stats, extra


def _ship(cfg: SimConfig, out: Path, rng: random.Random, counts: dict[str, int]) -> dict[str, Any]:
    """Collection artefacts: a duplicate shipment under ``retry/`` and one late-arriving file."""
    root = out / f"cluster={cfg.cluster_id}"
    hosts = sorted(p.name for p in root.iterdir() if p.is_dir() and p.name.startswith("broker-"))
    dup_files: list[str] = []
    late: list[str] = []
    if not hosts:
        return {}
    src = root / hosts[0]
    for f in sorted(src.iterdir()):
        if f.is_file() and (f.name.endswith(".log") or ".log." in f.name):
            rel = f.relative_to(root)
            dst = root / "retry" / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dst)
            dup_files.append(str(dst.relative_to(out)))
    # a rotated file of another host arrives late (next collection run): moved, not copied
    cand = sorted(p for h in hosts for p in (root / h).glob("server.log.*") if p.is_file())
    if not cand:  # short runs have no rotated log: a periodic checkpoint copy arrives late instead
        cand = sorted(p for h in hosts for p in (root / h).glob("data/replication-offset-checkpoint.*"))
    if cand:
        f = cand[len(cand) // 2]
        dst = out / "late" / f.relative_to(out)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(f), str(dst))
        late.append(str(dst.relative_to(out)))
    return {"duplicate_shipments": sorted(dup_files), "late_files": late}


def simulate(
    out_dir: Path,
    seed: int,
    mode: str = "kafka-kraft",
    kafka_version: str = "3.6",
    brokers: int = 5,
    partitions: int = 200,
    hours: float = 24,
    produce_rate: float = 20.0,
    faults: str = "default",
    strimzi: bool = False,
    progress: bool = True,
    cluster_id: str = "prod-eu1",
) -> dict[str, Any]:
    """Simulate a cluster and write its logs, ``truth.jsonl`` and ``manifest.json`` under ``out_dir``.

    ``produce_rate`` is produce requests per second over the whole cluster. Same arguments give
    byte-identical output. Returns the manifest.
    """
    cfg = SimConfig(out_dir=Path(out_dir), seed=seed, mode=mode, kafka_version=kafka_version, brokers=brokers,
                    partitions=partitions, hours=hours, produce_rate=produce_rate, faults=faults,
                    strimzi=strimzi, progress=progress, cluster_id=cluster_id)
    return simulate_config(cfg)
