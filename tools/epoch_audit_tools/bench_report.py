"""Benchmark results: per-stage figures (ours against DuckDB), machine facts and the console table."""

from __future__ import annotations

import os
import platform
import re
from typing import Any

from epoch_audit_tools.bench_corpus import REPO
from epoch_audit_tools.bench_resources import MemorySampler

STAGE_ORDER = ("ingest", "timelines", "checks", "validate")
CORE_INVARIANTS = ("write_accepted_by_fenced_leader", "stale_stop_replica_accepted", "stale_broker_epoch_isr_join")
# Our event types the DuckDB parse produces, for the parse-count comparison.
PARSED_TYPES = (
    "become_leader", "become_follower", "stop_replica_received", "stop_replica_fenced",
    "request_produce", "request_fetch", "data_batch",
)


def ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or theirs <= 0:
        return None
    return round(ours / theirs, 2)


def stage_results(ours: dict[str, Any], duck: dict[str, Any], core: dict[str, float], counts: dict[str, int],
                  requested: list[str], sampler: MemorySampler) -> dict[str, dict[str, Any]]:
    """Per stage that ran: our time, CPU, memory peaks and rates, beside DuckDB's figures where it ran."""
    ingest_detail = ours.get("ingest", {}).get("detail", {})
    lines = int(ingest_detail.get("lines_read") or 0)
    bronze_total = sum(counts.values()) if counts else None
    stages_out: dict[str, dict[str, Any]] = {}
    for stage in STAGE_ORDER:
        if stage not in ours:
            continue
        result: dict[str, Any] = {"seconds": ours[stage]["seconds"], "cpu_seconds": ours[stage]["cpu_seconds"],
                                  "memory": sampler.stage_peaks(stage),
                                  "requested": stage in requested, "duckdb_seconds": None, "ratio": None}
        if stage == "ingest":
            result["lines_per_second"] = round(lines / result["seconds"]) if result["seconds"] else None
            result["bronze_events"] = bronze_total
            result["detail"] = ingest_detail
            if "parse" in duck:
                parse = duck["parse"]
                result["duckdb_seconds"] = parse["seconds"]
                result["duckdb_cpu_seconds"] = parse["cpu_seconds"]
                result["duckdb_lines"] = parse["lines"]
                result["duckdb_lines_per_second"] = (round(parse["lines"] / parse["seconds"])
                                                     if parse["seconds"] else None)
                result["duckdb_steps"] = parse["seconds_by_family"]
                result["parse_counts"] = {event_type: {"ours": counts.get(event_type, 0),
                                                       "duckdb": parse["rows"].get(event_type, 0)}
                                          for event_type in PARSED_TYPES}
                result["parse_counts_agree"] = all(v["ours"] == v["duckdb"] for v in result["parse_counts"].values())
        elif stage == "timelines":
            result["rows_per_second"] = (round(bronze_total / result["seconds"])
                                         if bronze_total and result["seconds"] else None)
            result["tables"] = ours[stage]["detail"].get("tables")
            result["task_seconds"] = ours[stage]["detail"].get("task_seconds")
            if "prepare_seconds" in duck:
                result["duckdb_seconds"] = duck["prepare_seconds"]
                result["duckdb_cpu_seconds"] = duck["prepare_cpu_seconds"]
                result["duckdb_steps"] = duck["prepare_steps"]
                result["duckdb_export_seconds"] = duck["export_seconds"]
        elif stage == "validate":  # no DuckDB counterpart: GX suites over the layers this run wrote
            result["expectations"] = ours[stage]["detail"].get("expectations")
            result["critical_failures"] = len(ours[stage]["detail"].get("critical_failures") or [])
        else:
            result["rows_per_second"] = (round(bronze_total / result["seconds"])
                                         if bronze_total and result["seconds"] else None)
            result["violations"] = ours[stage]["detail"].get("violations")
            result["task_seconds"] = ours[stage]["detail"].get("task_seconds")
            result["core_seconds"] = round(sum(core.values()), 3) if core else None
            result["core_steps"] = core
            if "checks_seconds" in duck:
                result["duckdb_seconds"] = duck["checks_seconds"]
                result["duckdb_cpu_seconds"] = duck["checks_cpu_seconds"]
                result["duckdb_steps"] = duck["check_steps"]
                result["core_ratio"] = ratio(result["core_seconds"], result["duckdb_seconds"])
        result["ratio"] = ratio(result["seconds"], result["duckdb_seconds"])
        stages_out[stage] = result
    return stages_out


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
    samples = result.get("samples")
    if samples:
        console.print(f"samples run (`epoch-audit run --input data/samples`, fresh lake, Spark start included): "
                      f"{samples['wall_seconds']:.1f} s wall, exit {samples['exit_code']}")
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


def commit_id() -> str | None:
    try:
        import subprocess

        # .git is a directory in a clone and a file in a worktree: ask git either way
        return subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip() if (REPO / ".git").exists() else None
    except (OSError, subprocess.CalledProcessError):
        return None
