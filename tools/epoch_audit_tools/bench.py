"""``epoch-audit bench``: measured speed, memory and scaling of our pipeline, against DuckDB.

1. Corpus: a simulator corpus of about ``--events`` lines, written to disk like real logs and kept
   under ``benchmarks/corpus/<mode>-s<seed>-n<events>/`` (reused when its manifest is there).
   Simulator parameters are calibrated from two small pilots' manifests (lines per simulated hour
   as a linear function of the produce rate); the output says how close the corpus came.
2. Ours: Spark is started before any timing; ingest (raw -> bronze), timelines (bronze -> silver)
   and checks (silver -> gold) run one after the other into a fresh lake, each timed on its own.
   A background thread samples /proc for the driver JVM, this Python process and the PySpark
   workers under the JVM, and keeps per-stage peaks.
3. DuckDB (``--baseline duckdb``), same process, with as many threads as Spark has cores and a
   fixed memory limit (both recorded under ``machine.duckdb_settings``):
   ``epoch_audit_tools.duckdb_baseline`` parses the same raw files for the main families and runs
   three core checks with ASOF JOIN over our bronze and silver tables exported as Parquet;
   ``violations_agree`` says whether both engines found the same violations for those invariants.
4. A table on the console; with ``--json`` one object with every figure and the machine facts.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("epoch_audit.bench")

REPO = Path(__file__).resolve().parents[2]
CORPUS_ROOT = REPO / "benchmarks" / "corpus"
RESULTS_DIR = REPO / "benchmarks" / "results"
STAGE_ORDER = ("ingest", "timelines", "checks")
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
# Invariants both engines check (the DuckDB side implements exactly these rules).
CORE_INVARIANTS = ("write_accepted_by_fenced_leader", "stale_stop_replica_accepted", "stale_broker_epoch_isr_join")
# Our event types the DuckDB parse produces, for the parse-count comparison.
PARSED_TYPES = (
    "become_leader", "become_follower", "stop_replica_received", "stop_replica_fenced",
    "request_produce", "request_fetch", "data_batch",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``bench`` subcommand's options."""
    p.add_argument("--events", type=int, required=True, help="corpus size: about this many log lines")
    p.add_argument("--mode", choices=("kafka-kraft", "kafka-zk", "redpanda"), default="kafka-kraft")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--stages", default="all", help="comma list of ingest,timelines,checks or all")
    p.add_argument("--baseline", choices=("duckdb", "none"), default="duckdb")
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout (table on stderr)")
    p.add_argument("--out", nargs="?", const=str(RESULTS_DIR), default=None,
                   help=f"write the JSON into this directory (default {RESULTS_DIR.relative_to(REPO)})")
    p.add_argument("--corpus-root", default=str(CORPUS_ROOT), help="where corpora are generated and reused")
    p.add_argument("--work", default=None, help="lake / export scratch directory (default: a temp dir, removed)")
    p.add_argument("--driver-memory", default=None, help="spark.driver.memory (default: the profile's)")
    p.add_argument("--conf", default=None, help="YAML config file (default: conf/local.yaml)")
    p.add_argument("--profile", default="local", help="profile in conf/ when --conf is not given")
    p.add_argument("--debug", action="store_true", help="show tracebacks and Spark logs")


# --- corpus ---------------------------------------------------------------------------------


def _total_lines(manifest: dict[str, Any]) -> int:
    return int(sum(manifest.get("file_line_counts", {}).values()))


def shape(events: int) -> tuple[int, int]:
    """(brokers, partitions) of the simulated cluster for a corpus of ``events`` lines."""
    return SMOKE_SHAPE if events < SMOKE_BELOW else FULL_SHAPE


def _simulate(out: Path, seed: int, mode: str, hours: float, rate: float, cluster: tuple[int, int]) -> dict[str, Any]:
    from epoch_audit_tools.simulator import simulate

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


# --- memory sampling --------------------------------------------------------------------------


def _rss_kb(pid: int, field: str = "VmRSS") -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", encoding="ascii", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def _python_workers(jvm_pid: int) -> list[int]:
    """PySpark daemon and worker processes under the JVM (every python descendant)."""
    children = _children_map()
    found, todo = [], list(children.get(jvm_pid, []))
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ")
        except OSError:
            continue
        if b"python" in cmd or b"pyspark" in cmd:
            found.append(pid)
    return found


def _cpu_ticks(pid: int) -> int:
    """utime + stime + cutime + cstime of ``pid`` (clock ticks; children only once reaped)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return sum(int(x) for x in fields[11:15])
    except (OSError, ValueError, IndexError):
        return 0


def cpu_seconds(jvm_pid: int | None) -> float:
    """CPU seconds used so far by the driver JVM, this Python driver and the PySpark workers.

    Workers that exited count through their reaped parent (the daemon's, or the JVM's, cutime).
    On a shared machine this is the figure that does not depend on the other tenants' load.
    """
    ticks = _cpu_ticks(os.getpid())
    if jvm_pid:
        ticks += _cpu_ticks(jvm_pid) + sum(_cpu_ticks(p) for p in _python_workers(jvm_pid))
    return ticks / os.sysconf("SC_CLK_TCK")


class MemorySampler:
    """Samples RSS of the driver JVM, this Python driver and the PySpark workers every ``interval`` s.

    Peaks are kept overall and per stage label (``stage`` attribute); MB = 2^20 bytes.
    """

    def __init__(self, jvm_pid: int | None, interval: float = 0.2) -> None:
        self.jvm_pid = jvm_pid
        self.interval = interval
        self.stage = "startup"
        self.peaks: dict[str, dict[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-memory", daemon=True)

    def start(self) -> MemorySampler:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def sample(self) -> None:
        jvm = _rss_kb(self.jvm_pid) if self.jvm_pid else 0
        py = _rss_kb(os.getpid())
        workers = [_rss_kb(p) for p in _python_workers(self.jvm_pid)] if self.jvm_pid else []
        now = {
            "driver_rss_mb": (jvm + py) / 1024,
            "jvm_rss_mb": jvm / 1024,
            "python_driver_rss_mb": py / 1024,
            "python_workers_rss_mb": sum(workers) / 1024,
            "python_worker_max_rss_mb": max(workers, default=0) / 1024,
            "python_workers": float(len(workers)),
        }
        for label in (self.stage, "all"):
            peak = self.peaks.setdefault(label, {})
            for key, value in now.items():
                peak[key] = max(peak.get(key, 0.0), value)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def stage_peaks(self, label: str) -> dict[str, float]:
        return {k: round(v, 1) for k, v in self.peaks.get(label, {}).items()}


# --- our pipeline -----------------------------------------------------------------------------


def _count(df: Any) -> int:
    return int(df.count())


def run_ours(spark: Any, storage: Any, corpus: Path, config: Any, stages: list[str],
             sampler: MemorySampler) -> dict[str, Any]:
    """Run ingest / timelines / checks into the fresh lake behind ``storage``, each timed."""
    from epoch_audit.stages.check import run_checks
    from epoch_audit.stages.ingest import ingest
    from epoch_audit.stages.timelines import run_timelines

    out: dict[str, Any] = {}
    run_id = "bench-" + time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    for stage in stages:
        sampler.stage = stage
        cpu_before = cpu_seconds(sampler.jvm_pid)
        started = time.perf_counter()
        if stage == "ingest":
            res = ingest(spark, storage, [str(corpus)], config, run_id)
            detail: dict[str, Any] = res.to_dict()
        elif stage == "timelines":
            detail = run_timelines(spark, storage, config).detail
        else:
            res_checks, _ = run_checks(spark, storage, config, run_id)
            detail = res_checks.detail
        seconds = time.perf_counter() - started
        cpu = cpu_seconds(sampler.jvm_pid) - cpu_before
        sampler.sample()
        out[stage] = {"seconds": round(seconds, 3), "cpu_seconds": round(cpu, 1), "detail": detail}
        log.info("bench: ours %s %.1f s (%.1f CPU s)", stage, seconds, cpu)
    sampler.stage = "after"
    return out


def time_core_checks(spark: Any, storage: Any, config: Any) -> dict[str, float]:
    """Our three core invariants alone over the same silver (the like-for-like DuckDB comparison)."""
    from epoch_audit.gold.context import check_context
    from epoch_audit.gold.registry import SPECS, violations_of
    from epoch_audit.silver.tables import SILVER_TABLES
    from epoch_audit.stages.base import check_config

    silver = {n: storage.read(f"silver/{n}") for n in SILVER_TABLES if storage.exists(f"silver/{n}")}
    ctx = check_context(storage.read("bronze/events"), silver, check_config(config))
    seconds: dict[str, float] = {}
    for name in ("write_accepted_by_fenced_leader", "stale_stop_replica_accepted", "stale_broker_epoch_isr_join"):
        started = time.perf_counter()
        violations_of(SPECS[name], ctx).write.format("noop").mode("overwrite").save()
        seconds[name] = round(time.perf_counter() - started, 3)
    return seconds


def export_for_duckdb(storage: Any, export_dir: Path) -> float:
    """Our bronze events and the silver tables the DuckDB checks read, as plain Parquet."""
    started = time.perf_counter()
    tables = {"events": "bronze/events"}
    for name in ("partition_timeline", "broker_registrations", "broker_leader_epochs", "replica_offsets"):
        tables[name] = f"silver/{name}"
    for name, table in tables.items():
        storage.read(table).write.mode("overwrite").parquet(str(export_dir / name))
    return round(time.perf_counter() - started, 3)


def our_core_violations(storage: Any) -> set[tuple]:
    """Violation keys of the core invariants from gold (small), restricted to the rules DuckDB runs:
    the offset rule of write_accepted_by_fenced_leader and rule 1 of stale_broker_epoch_isr_join."""
    from pyspark.sql import functions as F

    if not storage.exists("gold/violations"):
        return set()
    v = storage.read("gold/violations").where(F.col("invariant").isin(*CORE_INVARIANTS))
    v = v.where(
        (F.col("invariant") == "stale_stop_replica_accepted")
        | ((F.col("invariant") == "write_accepted_by_fenced_leader") & F.col("explanation").startswith("Batch "))
        | (
            (F.col("invariant") == "stale_broker_epoch_isr_join")
            & F.col("explanation").contains("through AlterPartition")
        )
    )
    rows = v.select("invariant", "cluster_id", "topic", "partition", "broker_id", "leader_epoch").distinct().collect()
    return {tuple(r) for r in rows}


def detection_quality(storage: Any, corpus: Path) -> dict[str, Any] | None:
    """All our violations against the corpus's ground truth (truth.jsonl): precision and recall."""
    from epoch_audit_tools.evaluate import found_keys, load_truth, score

    if not storage.exists("gold/violations"):
        return None
    result = score(found_keys(storage.read("gold/violations")), load_truth([corpus]))
    return result.summary()


def bronze_counts(storage: Any) -> dict[str, int]:
    """Bronze rows per event type (a few dozen rows)."""
    rows = storage.read("bronze/events").groupBy("event_type").count().collect()
    return {r["event_type"]: int(r["count"]) for r in rows}


# --- report -----------------------------------------------------------------------------------


def _self_cpu() -> float:
    """CPU seconds of this process (DuckDB runs its threads here)."""
    t = os.times()
    return t.user + t.system


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or theirs <= 0:
        return None
    return round(ours / theirs, 2)


def spark_cores(spark: Any) -> int:
    """Cores Spark's local master runs tasks on (local[N], local[*], local); else its default parallelism."""
    master = spark.sparkContext.master or ""
    m = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master)
    if master == "local":
        return 1
    if m:
        return int(m.group(1)) if m.group(1) != "*" else (os.cpu_count() or 1)
    return int(spark.sparkContext.defaultParallelism)


def machine_facts(spark: Any) -> dict[str, Any]:
    import pyspark

    mem_kb = 0
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            mem_kb = int(next(line for line in fh if line.startswith("MemTotal:")).split()[1])
    except (OSError, StopIteration, ValueError):
        pass
    try:
        import duckdb

        duck_version: str | None = duckdb.__version__
    except ImportError:
        duck_version = None
    conf = spark.sparkContext.getConf()
    keys = ("spark.master", "spark.driver.memory", "spark.sql.shuffle.partitions", "spark.default.parallelism",
            "spark.sql.adaptive.enabled")
    return {
        "cores": os.cpu_count(),
        "spark_cores": spark_cores(spark),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "spark_version": spark.version,
        "pyspark_version": pyspark.__version__,
        "duckdb_version": duck_version,
        "spark_conf": {k: conf.get(k, None) for k in keys},
    }


def render_table(result: dict[str, Any], to_stderr: bool) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(stderr=to_stderr)
    table = Table(title=f"epoch-audit bench: {result['mode']}, {result['lines']:,} lines, "
                        f"{result['bronze_events'] or 0:,} bronze events")
    for col in ("stage", "ours s", "ours CPU s", "DuckDB s", "DuckDB CPU s", "ours / DuckDB", "ours rate",
                "peak driver RSS MB"):
        table.add_column(col, justify="right" if col != "stage" else "left")
    for stage in STAGE_ORDER:
        s = result["stages"].get(stage)
        if not s:
            continue
        rate = s.get("lines_per_second") or s.get("rows_per_second")
        unit = "lines/s" if "lines_per_second" in s else "rows/s"
        table.add_row(
            stage,
            f"{s['seconds']:.1f}" if s["seconds"] is not None else "-",
            f"{s['cpu_seconds']:.1f}",
            f"{s['duckdb_seconds']:.2f}" if s.get("duckdb_seconds") is not None else "-",
            f"{s['duckdb_cpu_seconds']:.1f}" if s.get("duckdb_cpu_seconds") is not None else "-",
            f"{s['ratio']:.1f}x" if s.get("ratio") is not None else "-",
            f"{rate:,.0f} {unit}" if rate else "-",
            f"{s['memory'].get('driver_rss_mb', 0):,.0f}" if s.get("memory") else "-",
        )
        if stage == "checks" and s.get("core_seconds") is not None:
            table.add_row("  checks (3 core invariants)", f"{s['core_seconds']:.1f}", "-",
                          f"{s['duckdb_seconds']:.2f}" if s.get("duckdb_seconds") is not None else "-", "-",
                          f"{s['core_ratio']:.1f}x" if s.get("core_ratio") is not None else "-", "-", "-")
    console.print(table)
    console.print(
        f"corpus: {result['corpus']['actual_lines']:,} lines written for {result['events']:,} requested "
        f"({result['corpus']['deviation_pct']:+.1f}%); peak driver RSS {result['peak_driver_rss_mb']:,.0f} MB, "
        f"peak Python workers RSS {result['peak_python_workers_rss_mb']:,.0f} MB; "
        f"violations_agree={result['violations_agree']}"
    )
    d = result.get("detection")
    if d:
        console.print(f"against truth.jsonl: precision {d['precision']}, recall {d['recall']} "
                      f"({d['true_positives']} found; false positives {d['false_positives'] or 'none'}; "
                      f"false negatives {d['false_negatives'] or 'none'})")


# --- entry point ------------------------------------------------------------------------------


def _stages(spec: str) -> list[str]:
    from epoch_audit.errors import UsageError

    wanted = {s.strip() for s in spec.split(",") if s.strip()}
    if "all" in wanted or not wanted:
        return list(STAGE_ORDER)
    unknown = wanted - set(STAGE_ORDER)
    if unknown:
        raise UsageError(f"--stages: unknown stage(s) {', '.join(sorted(unknown))}; use ingest,timelines,checks,all")
    last = max(STAGE_ORDER.index(s) for s in wanted)
    return list(STAGE_ORDER[: last + 1])  # a later stage needs the earlier ones' tables


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; prints the table (and JSON). Returns the exit code (0)."""
    from epoch_audit.config import load_config
    from epoch_audit.errors import UsageError
    from epoch_audit.lake.storage import open_storage
    from epoch_audit.spark import get_spark

    if args.events < 1000:
        raise UsageError("--events must be at least 1000")
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    stages = _stages(args.stages)
    requested = [s for s in STAGE_ORDER if args.stages == "all" or s in args.stages.split(",")]
    config = load_config(args.conf, args.profile)
    if args.driver_memory:
        config.spark.driver_memory = args.driver_memory
    corpus, manifest, corpus_info = corpus_for(Path(args.corpus_root), args.mode, args.seed, args.events)

    # Spark starts before any timing.
    spark = get_spark(config.spark.master, config.spark.driver_memory, config.spark.conf)
    try:
        jvm_pid: int | None = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # a remote driver (Spark Connect): no JVM in reach
        jvm_pid = None
    spark.range(1).count()  # warm the JVM and the Python worker daemon

    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="epoch-bench-"))
    lake = work / "lake"
    if lake.exists():
        shutil.rmtree(lake)
    storage = open_storage(spark, str(lake), config.storage.engine)
    sampler = MemorySampler(jvm_pid).start()
    try:
        ours = run_ours(spark, storage, corpus, config, stages, sampler)
        sampler.stage = "core_checks"
        core = time_core_checks(spark, storage, config) if "checks" in stages else {}
        sampler.stage = "baseline"
        duck: dict[str, Any] = {}
        agree: bool | None = None
        ours_keys = our_core_violations(storage) if "checks" in stages else set()
        detection = detection_quality(storage, corpus) if "checks" in stages else None
        counts = bronze_counts(storage)
        if args.baseline == "duckdb":
            from epoch_audit_tools import duckdb_baseline as baseline
            # Same cores as Spark, a fixed memory limit (its default is 80 % of RAM, in this process),
            # spilling into the scratch directory.
            con = baseline.connect(threads=spark_cores(spark), memory_limit=baseline.DEFAULT_MEMORY_LIMIT,
                                   temp_directory=work / "duckdb_tmp")
            duck["settings"] = {"memory_limit_requested": baseline.DEFAULT_MEMORY_LIMIT, **baseline.settings(con)}
            if "ingest" in requested:
                started, cpu0 = time.perf_counter(), _self_cpu()
                duck["parse"] = baseline.parse(con, corpus, work / "duckdb_parsed")
                duck["parse"]["seconds"] = round(time.perf_counter() - started, 3)
                duck["parse"]["cpu_seconds"] = round(_self_cpu() - cpu0, 1)
            if "timelines" in stages:
                duck["export_seconds"] = export_for_duckdb(storage, work / "export")
                started, cpu0 = time.perf_counter(), _self_cpu()
                duck["prepare_steps"] = baseline.prepare(con, work / "export")
                duck["prepare_seconds"] = round(time.perf_counter() - started, 3)
                duck["prepare_cpu_seconds"] = round(_self_cpu() - cpu0, 1)
            if "checks" in stages:
                started, cpu0 = time.perf_counter(), _self_cpu()
                duck_keys, duck["check_steps"] = baseline.checks(con)
                duck["checks_seconds"] = round(time.perf_counter() - started, 3)
                duck["checks_cpu_seconds"] = round(_self_cpu() - cpu0, 1)
                agree = duck_keys == ours_keys
                duck["violations"] = {
                    "ours": sorted(map(list, ours_keys), key=str),
                    "duckdb": sorted(map(list, duck_keys), key=str),
                    "only_ours": sorted(map(list, ours_keys - duck_keys), key=str),
                    "only_duckdb": sorted(map(list, duck_keys - ours_keys), key=str),
                }
            con.close()
        sampler.sample()
    finally:
        sampler.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    ingest_detail = ours.get("ingest", {}).get("detail", {})
    lines = int(ingest_detail.get("lines_read") or 0)
    bronze_total = sum(counts.values()) if counts else None
    stages_out: dict[str, Any] = {}
    for stage in STAGE_ORDER:
        if stage not in ours:
            continue
        s: dict[str, Any] = {"seconds": ours[stage]["seconds"], "cpu_seconds": ours[stage]["cpu_seconds"],
                             "memory": sampler.stage_peaks(stage),
                             "requested": stage in requested, "duckdb_seconds": None, "ratio": None}
        if stage == "ingest":
            s["lines_per_second"] = round(lines / s["seconds"]) if s["seconds"] else None
            s["bronze_events"] = bronze_total
            s["detail"] = ingest_detail
            if "parse" in duck:
                p = duck["parse"]
                s["duckdb_seconds"] = p["seconds"]
                s["duckdb_cpu_seconds"] = p["cpu_seconds"]
                s["duckdb_lines"] = p["lines"]
                s["duckdb_lines_per_second"] = round(p["lines"] / p["seconds"]) if p["seconds"] else None
                s["duckdb_steps"] = p["seconds_by_family"]
                s["parse_counts"] = {t: {"ours": counts.get(t, 0), "duckdb": p["rows"].get(t, 0)} for t in PARSED_TYPES}
                s["parse_counts_agree"] = all(v["ours"] == v["duckdb"] for v in s["parse_counts"].values())
        elif stage == "timelines":
            s["rows_per_second"] = round(bronze_total / s["seconds"]) if bronze_total and s["seconds"] else None
            s["tables"] = ours[stage]["detail"].get("tables")
            if "prepare_seconds" in duck:
                s["duckdb_seconds"] = duck["prepare_seconds"]
                s["duckdb_cpu_seconds"] = duck["prepare_cpu_seconds"]
                s["duckdb_steps"] = duck["prepare_steps"]
                s["duckdb_export_seconds"] = duck["export_seconds"]
        else:
            s["rows_per_second"] = round(bronze_total / s["seconds"]) if bronze_total and s["seconds"] else None
            s["violations"] = ours[stage]["detail"].get("violations")
            s["core_seconds"] = round(sum(core.values()), 3) if core else None
            s["core_steps"] = core
            if "checks_seconds" in duck:
                s["duckdb_seconds"] = duck["checks_seconds"]
                s["duckdb_cpu_seconds"] = duck["checks_cpu_seconds"]
                s["duckdb_steps"] = duck["check_steps"]
                s["core_ratio"] = _ratio(s["core_seconds"], s["duckdb_seconds"])
        s["ratio"] = _ratio(s["seconds"], s["duckdb_seconds"])
        stages_out[stage] = s
    overall = sampler.stage_peaks("all")
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": _commit(),
        "mode": args.mode,
        "seed": args.seed,
        "events": args.events,
        "lines": lines,
        "bronze_events": bronze_total,
        "corpus": corpus_info,
        "stages": stages_out,
        "total_seconds": round(sum(s["seconds"] for s in stages_out.values()), 3),
        "peak_driver_rss_mb": overall.get("driver_rss_mb", 0.0),
        "peak_jvm_rss_mb": overall.get("jvm_rss_mb", 0.0),
        "peak_python_driver_rss_mb": overall.get("python_driver_rss_mb", 0.0),
        "peak_python_workers_rss_mb": overall.get("python_workers_rss_mb", 0.0),
        "peak_python_worker_rss_mb": overall.get("python_worker_max_rss_mb", 0.0),
        "jvm_peak_rss_hwm_mb": round(_rss_kb(jvm_pid, "VmHWM") / 1024, 1) if jvm_pid else None,
        "violations_agree": agree,
        "detection": detection,
        "core_invariants": list(CORE_INVARIANTS),
        "duckdb": {k: v for k, v in duck.items() if k in ("violations",)},
        "baseline": args.baseline,
        "machine": {**machine_facts(spark), "load_average_at_start": load_at_start,
                    "duckdb_settings": duck.get("settings")},
        "config": {"driver_memory": config.spark.driver_memory, "master": config.spark.master,
                   "storage_engine": storage.engine, "spark_conf": config.spark.conf},
    }
    render_table(result, to_stderr=args.json)
    if args.json:
        print(json.dumps(result, sort_keys=True, default=str))
    if args.out:
        out_dir = Path(args.out)
        out_dir.mkdir(parents=True, exist_ok=True)
        name = f"bench-{args.mode}-n{args.events}-{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}.json"
        (out_dir / name).write_text(json.dumps(result, indent=1, sort_keys=True, default=str) + "\n")
        log.info("bench: results written to %s", out_dir / name)
    return 0


def _commit() -> str | None:
    try:
        import subprocess

        # .git is a directory in a clone and a file in a worktree: ask git either way
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip() if (REPO / ".git").exists() else None
    except (OSError, subprocess.CalledProcessError):
        return None


if __name__ == "__main__":
    from epoch_audit.cli import main

    sys.exit(main(["bench", *sys.argv[1:]]))
