"""Spark's floor for target 2: the DuckDB baseline's own prepare + core-check SQL, run by Spark.

``epoch-audit bench --baseline duckdb --work DIR`` leaves DIR/export: our bronze events and four
silver tables as plain Parquet, which DuckDB's ``prepare`` (the counterpart of our timelines
stage) and ``checks`` (three core invariants, ASOF joins) read. This script runs the same
statements in Spark SQL on the same files, in a local session set up as a run's
(``epoch_audit.spark.get_spark``), and prints the seconds: the least Spark spends on the work
DuckDB is timed on, with no silver table built and no Delta involved. ASOF JOIN has no Spark SQL
form; each is the usual union of both sides ordered by the join key, the last earlier row's
columns carried down a window.

    python benchmarks/spark_floor.py DIR/export [--repeat 3] [--materialize] [--c2]

``--materialize``: each prepare step cached and counted before the checks (DuckDB's
``CREATE TABLE``); otherwise the checks' plans include the steps they read (views).
Prints one JSON object: seconds per step and per check, per repeat, and the violation keys.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from epoch_audit_tools import duckdb_baseline as baseline  # noqa: E402  (after the path above)

# ``duckdb_baseline.PREPARE_SQL`` read as Spark SQL: its dialect's spellings replaced, nothing
# else (``arg_min`` is ``min_by``, ``first(x ORDER BY k)`` a ``min_by`` over a struct of the keys,
# list functions are array ones, ``unnest`` is ``explode``, a table's Parquet its temp view).
_SPELLINGS: list[tuple[str, str]] = [
    (r"CREATE OR REPLACE TABLE \w+ AS", ""),
    (r"read_parquet\('\{(\w+)\}'\)", r"\1"),
    (r'"offset"', "`offset`"),
    (r"\barg_min\(", "min_by("),
    (r"NULL::INTEGER", "CAST(NULL AS INT)"),
    (r"\bfirst\((\w+) ORDER BY ([^)]*)\)", r"min_by(\1, struct(\2))"),
    (r"\bunnest\(", "explode("),
    (r"\blist_distinct\(", "array_distinct("),
    (r"\blist_filter\(", "filter("),
    (r"\blist_contains\(", "array_contains("),
    (r"lambda (\w+): ", r"\1 -> "),
]
_DUCKDB_ONLY = re.compile(r"::|read_parquet|\blist_|\bunnest\b|\barg_min\b|lambda|\bfirst\(")


def spark_sql(duckdb_sql: str) -> str:
    """A DuckDB statement of ``duckdb_baseline.PREPARE_SQL`` as Spark SQL (its SELECT)."""
    sql = duckdb_sql
    for pattern, replacement in _SPELLINGS:
        sql = re.sub(pattern, replacement, sql)
    left = _DUCKDB_ONLY.search(sql)
    if left:
        raise ValueError(f"a DuckDB spelling left untranslated: {left.group(0)!r} in {sql[:200]}")
    return sql


def _view_name(duckdb_sql: str) -> str:
    return re.search(r"CREATE OR REPLACE TABLE (\w+) AS", duckdb_sql).group(1)


PREPARE_SQL: list[tuple[str, str]] = [(_view_name(sql), spark_sql(sql)) for _, sql in baseline.PREPARE_SQL]

# ``duckdb_baseline.CHECK_SQL``: each ASOF JOIN as a union of both sides ordered by the join key
# (the right side first at a tie, as ``>=`` asks; ``>`` for the StopReplica keys, made strict by
# the +1), the last right-side row's columns carried down.
CHECK_SQL: dict[str, str] = {
    "write_accepted_by_fenced_leader": """
        WITH u AS (
            SELECT cluster_id, topic, partition, start AS k, 0 AS side, max_started_epoch AS mse,
                   CAST(NULL AS INT) AS leader_epoch
            FROM epoch_intervals
            UNION ALL
            SELECT cluster_id, topic, partition, `offset` AS k, 1 AS side, CAST(NULL AS INT) AS mse, leader_epoch
            FROM batches
        ), a AS (
            SELECT *, last(mse, true) OVER (PARTITION BY cluster_id, topic, partition ORDER BY k, side
                                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS iv_mse
            FROM u
        )
        SELECT DISTINCT 'write_accepted_by_fenced_leader' AS invariant, a.cluster_id, a.topic, a.partition,
               el.epoch_leader AS broker_id, a.leader_epoch
        FROM a LEFT JOIN epoch_leaders el
          ON el.cluster_id = a.cluster_id AND el.topic = a.topic AND el.partition = a.partition
         AND el.leader_epoch = a.leader_epoch
        WHERE a.side = 1 AND a.iv_mse > a.leader_epoch
    """,
    "stale_stop_replica_accepted": """
        WITH u AS (
            SELECT cluster_id, broker_id, topic, partition, p AS k, 0 AS side, named_struct('v', cur_le) AS st,
                   CAST(NULL AS INT) AS leader_epoch
            FROM le_states
            UNION ALL
            SELECT cluster_id, broker_id, topic, partition, pos * 3 + 1 AS k, 1 AS side, NULL AS st, leader_epoch
            FROM stops
        ), a AS (
            SELECT *, last(st, true) OVER (PARTITION BY cluster_id, broker_id, topic, partition ORDER BY k, side
                                           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS cur
            FROM u
        )
        SELECT DISTINCT 'stale_stop_replica_accepted' AS invariant, cluster_id, topic, partition, broker_id,
               leader_epoch
        FROM a
        WHERE side = 1 AND leader_epoch >= 0 AND cur.v IS NOT NULL AND cur.v > leader_epoch
    """,
    "stale_broker_epoch_isr_join": """
        WITH u AS (
            SELECT cluster_id, broker_id AS replica, commit_offset AS k, 0 AS side,
                   named_struct('be', broker_epoch, 'next', next_commit_offset) AS reg,
                   CAST(NULL AS STRING) AS topic, CAST(NULL AS STRING) AS topic_id, CAST(NULL AS INT) AS partition,
                   CAST(NULL AS INT) AS leader_epoch, CAST(NULL AS INT) AS partition_epoch
            FROM registrations
            UNION ALL
            SELECT cluster_id, replica, commit_offset AS k, 1 AS side, NULL AS reg,
                   topic, topic_id, partition, leader_epoch, partition_epoch
            FROM isr_joins
        ), j AS (
            SELECT *, last(reg, true) OVER (PARTITION BY cluster_id, replica ORDER BY k, side
                                            ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS r
            FROM u
        ), joins AS (
            SELECT *, r.be AS registered_be FROM j
            WHERE side = 1 AND (r IS NULL OR k < r.next)
        )
        SELECT DISTINCT 'stale_broker_epoch_isr_join' AS invariant, j.cluster_id, j.topic, j.partition,
               j.replica AS broker_id, j.leader_epoch
        FROM joins j JOIN alter_partitions a
          ON a.cluster_id = j.cluster_id AND a.topic_id = j.topic_id AND a.partition = j.partition
         AND a.partition_epoch = j.partition_epoch
        WHERE array_contains(a.isr, j.replica)
          AND element_at(a.isr_broker_epochs, CAST(array_position(a.isr, j.replica) AS INT)) <> -1
          AND j.registered_be IS NOT NULL
          AND element_at(a.isr_broker_epochs, CAST(array_position(a.isr, j.replica) AS INT)) <> j.registered_be
    """,
}


def run_once(spark: SparkSession, export: Path, materialize: bool) -> dict:
    """Register the exported tables, build the prepare steps, run the checks; seconds of each."""
    started = time.perf_counter()
    for table in baseline.EXPORTED_TABLES:
        spark.read.parquet(str(export / table)).createOrReplaceTempView(table)
    steps: dict[str, float] = {}
    cached = []
    for name, sql in PREPARE_SQL:
        t0 = time.perf_counter()
        frame = spark.sql(sql)
        if materialize:
            frame = frame.cache()
            frame.count()  # the materialisation DuckDB's CREATE TABLE does
            cached.append(frame)
        frame.createOrReplaceTempView(name)
        steps[name] = round(time.perf_counter() - t0, 3)
    prepared = time.perf_counter()
    checks: dict[str, float] = {}
    keys: set[tuple] = set()
    for name, sql in CHECK_SQL.items():
        t0 = time.perf_counter()
        keys.update(tuple(r) for r in spark.sql(sql).collect())
        checks[name] = round(time.perf_counter() - t0, 3)
    done = time.perf_counter()
    for frame in cached:
        frame.unpersist()
    return {"prepare_seconds": round(prepared - started, 3), "checks_seconds": round(done - prepared, 3),
            "total_seconds": round(done - started, 3), "prepare_steps": steps, "checks": checks,
            "violations": sorted(keys, key=repr)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("export", type=Path)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--materialize", action="store_true")
    p.add_argument("--c2", action="store_true", help="the JIT's C2 (a long run's); default C1, a mid-size run's")
    args = p.parse_args()
    from epoch_audit.spark import get_spark

    started = time.perf_counter()
    spark = get_spark("local[2]", "2g", c2_compiler=args.c2)
    session_seconds = round(time.perf_counter() - started, 3)
    runs = [run_once(spark, args.export, args.materialize) for _ in range(args.repeat)]
    print(json.dumps({"export": str(args.export), "materialize": args.materialize, "c2": args.c2,
                      "session_seconds": session_seconds,
                      "runs": [{k: v for k, v in r.items() if k != "violations"} for r in runs],
                      "violations": [list(k) for k in runs[-1]["violations"]]}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
