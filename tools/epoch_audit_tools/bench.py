"""``epoch-audit bench``: measured speed, memory and scaling of our pipeline, against DuckDB.

1. Corpus: a simulator corpus of about ``--events`` lines, written to disk like real logs and kept
   under ``benchmarks/corpus/<mode>-s<seed>-n<events>/`` (reused when its manifest is there).
   Simulator parameters are calibrated from two small pilots' manifests (lines per simulated hour
   as a linear function of the produce rate); the output says how close the corpus came.
2. Ours: Spark is started before any timing; ingest (raw -> bronze), timelines (bronze -> silver),
   checks (silver -> gold) and validate (the GX suites over what the run wrote) run one after the
   other into a fresh lake, each timed on its own. Before that (``--samples``, the default) the
   README's first command runs in a child process on ``data/samples/`` into a fresh lake: its
   wall time, Spark start included, is ``samples.wall_seconds``.
   A background thread samples /proc for the driver JVM, this Python process and the PySpark
   workers under the JVM, and keeps per-stage peaks.
3. DuckDB (``--baseline duckdb``), same process, with as many threads as Spark has cores and a
   fixed memory limit (both recorded under ``machine.duckdb_settings``):
   ``epoch_audit_tools.duckdb_baseline`` parses the same raw files for the main families and runs
   three core checks with ASOF JOIN over our bronze and silver tables exported as Parquet;
   ``violations_agree`` says whether both engines found the same violations for those invariants.
4. A table on the console; with ``--json`` one object with every figure and the machine facts.

This module runs the stages and the baseline; the corpus is :mod:`.bench_corpus`, the /proc
sampling :mod:`.bench_resources`, the figures and the table :mod:`.bench_report`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from epoch_audit_tools.bench_corpus import CORPUS_ROOT, REPO, corpus_for
from epoch_audit_tools.bench_report import (
    CORE_INVARIANTS,
    STAGE_ORDER,
    commit_id,
    machine_facts,
    render_table,
    spark_cores,
    stage_results,
)
from epoch_audit_tools.bench_resources import MemorySampler, cpu_seconds, rss_kb, self_cpu_seconds

log = logging.getLogger("epoch_audit.bench")

RESULTS_DIR = REPO / "benchmarks" / "results"
SAMPLES = REPO / "data" / "samples"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``bench`` subcommand's options."""
    p.add_argument("--events", type=int, required=True, help="corpus size: about this many log lines")
    p.add_argument("--mode", choices=("kafka-kraft", "kafka-zk", "redpanda"), default="kafka-kraft")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--stages", default="all", help="comma list of ingest,timelines,checks,validate or all")
    p.add_argument("--samples", action=argparse.BooleanOptionalAction, default=True,
                   help="also time `epoch-audit run` on data/samples/ (a child process, fresh lake)")
    p.add_argument("--samples-input", default=str(SAMPLES), help=argparse.SUPPRESS)
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


# --- our pipeline -----------------------------------------------------------------------------


def run_ours(spark: Any, storage: Any, corpus: Path, config: Any, stages: list[str],
             sampler: MemorySampler) -> dict[str, Any]:
    """Run ingest / timelines / checks into the fresh lake behind ``storage``, each timed."""
    from epoch_audit.stages.check import run_checks
    from epoch_audit.stages.ingest import ingest
    from epoch_audit.stages.timelines import run_timelines
    from epoch_audit.stages.validate import run_validation

    out: dict[str, Any] = {}
    run_id = "bench-" + time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    for stage in stages:
        sampler.stage = stage
        cpu_before = cpu_seconds(sampler.jvm_pid, sampler)
        started = time.perf_counter()
        if stage == "ingest":
            res = ingest(spark, storage, [str(corpus)], config, run_id)
            detail: dict[str, Any] = res.to_dict()
        elif stage == "timelines":
            detail = run_timelines(spark, storage, config).detail
        elif stage == "validate":
            detail = run_validation(spark, storage, config, run_id, this_run_only=True).detail
        else:
            res_checks, _ = run_checks(spark, storage, config, run_id)
            detail = res_checks.detail
        seconds = time.perf_counter() - started
        cpu = cpu_seconds(sampler.jvm_pid, sampler) - cpu_before
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


def time_samples_run(samples: Path, work: Path, conf: str | None, profile: str) -> dict[str, Any]:
    """The README's first command on ``samples`` into a fresh lake, in a child process (its own
    Spark, started inside the timing): wall seconds, exit code and its stages' seconds."""
    lake = work / "samples-lake"
    shutil.rmtree(lake, ignore_errors=True)
    cmd = [sys.executable, "-m", "epoch_audit.cli", "run", "--input", str(samples), "--lake", str(lake), "--json"]
    cmd += ["--conf", conf] if conf else ["--profile", profile]
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - started
    try:
        stages = {k: v.get("seconds") for k, v in json.loads(proc.stdout).get("stages", {}).items()}
    except (json.JSONDecodeError, AttributeError):
        stages = {}
    shutil.rmtree(lake, ignore_errors=True)
    log.info("bench: samples run %.1f s wall, exit %d", wall, proc.returncode)
    return {"command": "epoch-audit run --input data/samples --lake <fresh>", "input": str(samples),
            "wall_seconds": round(wall, 3), "exit_code": proc.returncode, "stages": stages,
            "error": proc.stderr.strip().splitlines()[-1] if proc.returncode not in (0, 3) and proc.stderr else None}


# --- DuckDB -----------------------------------------------------------------------------------


def run_duckdb(spark: Any, storage: Any, corpus: Path, work: Path, stages: list[str], requested: list[str],
               ours_keys: set[tuple]) -> tuple[dict[str, Any], bool | None]:
    """The DuckDB baseline in this process: parse the raw corpus, prepare and check over our exported
    bronze and silver, each timed. Returns its figures and whether both engines found the same core
    violations (None when the checks did not run)."""
    from epoch_audit_tools import duckdb_baseline as baseline  # duckdb is an optional dependency

    duck: dict[str, Any] = {}
    agree: bool | None = None
    # Same cores as Spark, a fixed memory limit (its default is 80 % of RAM, in this process),
    # spilling into the scratch directory.
    con = baseline.connect(threads=spark_cores(spark), memory_limit=baseline.DEFAULT_MEMORY_LIMIT,
                           temp_directory=work / "duckdb_tmp")
    duck["settings"] = {"memory_limit_requested": baseline.DEFAULT_MEMORY_LIMIT, **baseline.settings(con)}
    if "ingest" in requested:
        started, cpu0 = time.perf_counter(), self_cpu_seconds()
        duck["parse"] = baseline.parse(con, corpus, work / "duckdb_parsed")
        duck["parse"]["seconds"] = round(time.perf_counter() - started, 3)
        duck["parse"]["cpu_seconds"] = round(self_cpu_seconds() - cpu0, 1)
    if "timelines" in stages:
        duck["export_seconds"] = export_for_duckdb(storage, work / "export")
        started, cpu0 = time.perf_counter(), self_cpu_seconds()
        duck["prepare_steps"] = baseline.prepare(con, work / "export")
        duck["prepare_seconds"] = round(time.perf_counter() - started, 3)
        duck["prepare_cpu_seconds"] = round(self_cpu_seconds() - cpu0, 1)
    if "checks" in stages:
        started, cpu0 = time.perf_counter(), self_cpu_seconds()
        duck_keys, duck["check_steps"] = baseline.checks(con)
        duck["checks_seconds"] = round(time.perf_counter() - started, 3)
        duck["checks_cpu_seconds"] = round(self_cpu_seconds() - cpu0, 1)
        agree = duck_keys == ours_keys
        duck["violations"] = {
            "ours": sorted(map(list, ours_keys), key=str),
            "duckdb": sorted(map(list, duck_keys), key=str),
            "only_ours": sorted(map(list, ours_keys - duck_keys), key=str),
            "only_duckdb": sorted(map(list, duck_keys - ours_keys), key=str),
        }
    con.close()
    return duck, agree


# --- entry point ------------------------------------------------------------------------------


def _stages(spec: str) -> list[str]:
    from epoch_audit.errors import UsageError

    wanted = {s.strip() for s in spec.split(",") if s.strip()}
    if "all" in wanted or not wanted:
        return list(STAGE_ORDER)
    unknown = wanted - set(STAGE_ORDER)
    if unknown:
        raise UsageError(
            f"--stages: unknown stage(s) {', '.join(sorted(unknown))}; use ingest,timelines,checks,validate,all"
        )
    last = max(STAGE_ORDER.index(s) for s in wanted)
    return list(STAGE_ORDER[: last + 1])  # a later stage needs the earlier ones' tables


def run(args: argparse.Namespace) -> int:
    """Run the benchmark; prints the table (and JSON). Returns the exit code (0)."""
    from epoch_audit.config import load_config
    from epoch_audit.errors import UsageError
    from epoch_audit.lake.storage import open_storage
    from epoch_audit.spark import get_spark, is_below, local_bytes

    if args.events < 1000:
        raise UsageError("--events must be at least 1000")
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    stages = _stages(args.stages)
    requested = [s for s in STAGE_ORDER if args.stages == "all" or s in args.stages.split(",")]
    config = load_config(args.conf, args.profile)
    if args.driver_memory:
        config.spark.driver_memory = args.driver_memory
    corpus, manifest, corpus_info = corpus_for(Path(args.corpus_root), args.mode, args.seed, args.events)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="epoch-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    # Before this process starts its Spark: the child has the machine to itself.
    samples = time_samples_run(Path(args.samples_input), work, args.conf, args.profile) if args.samples else None

    # Spark starts before any timing, its JIT chosen as `epoch-audit run` chooses it for the corpus
    # (a first run: no bronze yet).
    c2_compiler = not is_below(local_bytes([corpus]), config.spark.c2_min_bytes)
    spark = get_spark(config.spark.master, config.spark.driver_memory, config.spark.conf, c2_compiler=c2_compiler)
    try:
        jvm_pid: int | None = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # a remote driver (Spark Connect): no JVM in reach
        jvm_pid = None
    spark.range(1).count()  # warm the JVM and the Python worker daemon

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
        ours_keys = our_core_violations(storage) if "checks" in stages else set()
        detection = detection_quality(storage, corpus) if "checks" in stages else None
        counts = bronze_counts(storage)
        if args.baseline == "duckdb":
            duck, agree = run_duckdb(spark, storage, corpus, work, stages, requested, ours_keys)
        else:
            duck, agree = {}, None
        sampler.sample()
    finally:
        sampler.stop()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)

    stages_out = stage_results(ours, duck, core, counts, requested, sampler)
    lines = int(ours.get("ingest", {}).get("detail", {}).get("lines_read") or 0)
    bronze_total = sum(counts.values()) if counts else None
    overall = sampler.stage_peaks("all")
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": commit_id(),
        "mode": args.mode,
        "seed": args.seed,
        "events": args.events,
        "lines": lines,
        "bronze_events": bronze_total,
        "corpus": corpus_info,
        "stages": stages_out,
        "total_seconds": round(sum(s["seconds"] for s in stages_out.values()), 3),
        "samples": samples,
        "peak_driver_rss_mb": overall.get("driver_rss_mb", 0.0),
        "peak_jvm_rss_mb": overall.get("jvm_rss_mb", 0.0),
        "peak_python_driver_rss_mb": overall.get("python_driver_rss_mb", 0.0),
        "peak_python_workers_rss_mb": overall.get("python_workers_rss_mb", 0.0),
        "peak_python_worker_rss_mb": overall.get("python_worker_max_rss_mb", 0.0),
        "jvm_peak_rss_hwm_mb": round(rss_kb(jvm_pid, "VmHWM") / 1024, 1) if jvm_pid else None,
        "violations_agree": agree,
        "detection": detection,
        "core_invariants": list(CORE_INVARIANTS),
        "duckdb": {k: v for k, v in duck.items() if k in ("violations",)},
        "baseline": args.baseline,
        "machine": {**machine_facts(spark), "load_average_at_start": load_at_start,
                    "duckdb_settings": duck.get("settings")},
        "config": {"driver_memory": config.spark.driver_memory, "master": config.spark.master,
                   "storage_engine": storage.engine, "spark_conf": config.spark.conf,
                   "c2_compiler": c2_compiler},
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


def main(argv: list[str] | None = None) -> int:
    """Standalone entry point, ``python -m epoch_audit_tools.bench``: the options of ``epoch-audit bench``."""
    from epoch_audit.errors import UsageError

    parser = argparse.ArgumentParser(prog="bench", description="measure speed and memory per stage, against DuckDB")
    add_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.INFO, format="%(message)s", stream=sys.stderr)
    try:
        return run(args)
    except UsageError as err:
        print(f"bench: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
