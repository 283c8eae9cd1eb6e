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
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))

from epoch_audit_tools.duckdb_baseline import (  # noqa: E402  (after the path above)
    EXPORTED_TABLES,
    NEXT_REQUEST,
    NO_ERROR,
    PART,
    PARTITION_EVENTS,
    STOP_EVIDENCE,
    STOP_REFUSALS,
    UNIT,
)

# The DuckDB statements of ``duckdb_baseline.PREPARE_SQL`` in Spark's dialect: ``arg_min`` is
# ``min_by``, ``first(x ORDER BY y)`` a ``min_by`` over a struct, list functions are array ones,
# ``unnest`` is ``explode``, DuckDB's 1-based ``a[i]`` is ``element_at``.
PREPARE_SQL: list[tuple[str, str]] = [
    ("ev", """
        SELECT event_id, event_type, cluster_id, broker_id, topic, partition, topic_id, event_time,
               file_id, file_order, line_number, sub_index, leader_epoch, delete_partition, error,
               controller_id, controller_epoch, correlation_id, `offset`,
               max(event_time) OVER (PARTITION BY file_id ORDER BY line_number, sub_index
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS own_time
        FROM events
    """),
    ("pev", """
        SELECT *, row_number() OVER (
                   PARTITION BY cluster_id, broker_id, topic, partition
                   ORDER BY own_time NULLS FIRST, file_order NULLS FIRST, file_id NULLS FIRST,
                            line_number NULLS FIRST, sub_index NULLS FIRST, event_id) AS pos
        FROM ev
        WHERE event_type IN """ + PARTITION_EVENTS[:-1] + """, 'request_stop_replica', 'request_leader_and_isr')
    """),
    ("stops", """
        WITH part AS (
            SELECT *,
                   min(CASE WHEN event_type IN """ + STOP_EVIDENCE + """ THEN pos END) OVER w AS eff,
                   min(CASE WHEN event_type IN """ + NEXT_REQUEST + """ THEN pos END) OVER w AS nreq
            FROM pev WHERE event_type IN """ + PARTITION_EVENTS + """
            WINDOW w AS (PARTITION BY cluster_id, broker_id, topic, partition ORDER BY pos
                         ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING)
        ), chain AS (
            SELECT * FROM part c
            WHERE event_type = 'stop_replica_received' AND eff IS NOT NULL AND (nreq IS NULL OR eff < nreq)
              AND NOT EXISTS (SELECT 1 FROM ev r WHERE r.event_type = 'stop_replica_stale_controller'
                              AND r.cluster_id = c.cluster_id AND r.broker_id = c.broker_id
                              AND r.controller_id = c.controller_id AND r.controller_epoch = c.controller_epoch
                              AND r.correlation_id = c.correlation_id)
              AND NOT EXISTS (SELECT 1 FROM ev r WHERE r.event_type IN """ + STOP_REFUSALS + """
                              AND r.cluster_id = c.cluster_id AND r.broker_id = c.broker_id
                              AND r.topic = c.topic AND r.partition = c.partition
                              AND r.controller_id = c.controller_id AND r.controller_epoch = c.controller_epoch
                              AND r.correlation_id = c.correlation_id)
              AND NOT EXISTS (SELECT 1 FROM pev r WHERE r.event_type = 'request_stop_replica'
                              AND NOT coalesce(r.error IN """ + NO_ERROR + """, false)
                              AND r.cluster_id = c.cluster_id AND r.broker_id = c.broker_id
                              AND r.topic = c.topic AND r.partition = c.partition
                              AND r.controller_id = c.controller_id AND r.controller_epoch = c.controller_epoch
                              AND r.correlation_id = c.correlation_id)
        ), units AS (
            SELECT """ + UNIT + """, leader_epoch, delete_partition, event_time, pos FROM chain
            UNION ALL
            SELECT """ + UNIT + """, leader_epoch, delete_partition, event_time, pos FROM pev
            WHERE event_type = 'request_stop_replica' AND coalesce(error IN """ + NO_ERROR + """, false)
        )
        SELECT """ + UNIT + """,
               min_by(leader_epoch, pos) AS leader_epoch, min_by(delete_partition, pos) AS delete_partition,
               min_by(event_time, pos) AS event_time, min(pos) AS pos
        FROM units WHERE topic IS NOT NULL
        GROUP BY """ + UNIT + """
    """),
    ("le_states", """
        SELECT cluster_id, broker_id, topic, partition, pos * 3 AS p, leader_epoch AS cur_le
        FROM pev
        WHERE leader_epoch IS NOT NULL
          AND (event_type IN ('become_leader', 'become_follower')
               OR (event_type = 'request_leader_and_isr' AND coalesce(error IN """ + NO_ERROR + """, false)))
        UNION ALL
        SELECT cluster_id, broker_id, topic, partition, pos * 3 + 2 AS p, CAST(NULL AS INT) AS cur_le
        FROM stops WHERE delete_partition
    """),
    ("epoch_leaders", """
        WITH tl AS (
            SELECT """ + PART + """, leader_epoch, min_by(leader, decision_seq) AS tl_leader
            FROM partition_timeline
            WHERE leader >= 0 AND leader_epoch >= 0 GROUP BY """ + PART + """, leader_epoch
        ), bk AS (
            SELECT """ + PART + """, leader_epoch,
                   min_by(broker_id, struct(event_time IS NULL, event_time, event_id)) AS bk_leader
            FROM broker_leader_epochs WHERE is_claim GROUP BY """ + PART + """, leader_epoch
        )
        SELECT COALESCE(tl.cluster_id, bk.cluster_id) AS cluster_id, COALESCE(tl.topic, bk.topic) AS topic,
               COALESCE(tl.partition, bk.partition) AS partition,
               COALESCE(tl.leader_epoch, bk.leader_epoch) AS leader_epoch,
               COALESCE(tl_leader, bk_leader) AS epoch_leader
        FROM tl FULL JOIN bk
          ON tl.cluster_id = bk.cluster_id AND tl.topic = bk.topic AND tl.partition = bk.partition
         AND tl.leader_epoch = bk.leader_epoch
    """),
    ("epoch_intervals", """
        WITH line AS (
            SELECT """ + PART + """, broker_id, leader_epoch, min_by(value, series_seq) AS v
            FROM replica_offsets WHERE series = 'epoch_start_line'
            GROUP BY """ + PART + """, broker_id, leader_epoch
        ), ckpt AS (
            SELECT """ + PART + """, broker_id, leader_epoch, min(value) AS v
            FROM replica_offsets WHERE series = 'epoch_start_checkpoint' AND is_latest_copy
            GROUP BY """ + PART + """, broker_id, leader_epoch
        ), starts AS (
            SELECT e.cluster_id, e.topic, e.partition, e.leader_epoch, COALESCE(l.v, c.v) AS start
            FROM epoch_leaders e
            LEFT JOIN line l ON l.cluster_id = e.cluster_id AND l.topic = e.topic AND l.partition = e.partition
                 AND l.leader_epoch = e.leader_epoch AND l.broker_id = e.epoch_leader
            LEFT JOIN ckpt c ON c.cluster_id = e.cluster_id AND c.topic = e.topic AND c.partition = e.partition
                 AND c.leader_epoch = e.leader_epoch AND c.broker_id = e.epoch_leader
            WHERE e.epoch_leader IS NOT NULL AND COALESCE(l.v, c.v) IS NOT NULL
        ), per_start AS (
            SELECT """ + PART + """, start, max(leader_epoch) AS le FROM starts GROUP BY """ + PART + """, start
        )
        SELECT """ + PART + """, start,
               max(le) OVER (PARTITION BY """ + PART + """ ORDER BY start
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS max_started_epoch
        FROM per_start
    """),
    ("batches", """
        SELECT cluster_id, topic, partition, leader_epoch, `offset`, event_id
        FROM events
        WHERE event_type = 'data_batch' AND `offset` IS NOT NULL AND leader_epoch IS NOT NULL
    """),
    ("isr_joins", """
        WITH tl AS (
            SELECT *, lag(isr) OVER (PARTITION BY cluster_id, topic_id, partition ORDER BY decision_seq) AS prev_isr
            FROM partition_timeline WHERE source = 'kraft'
        )
        SELECT cluster_id, topic, topic_id, partition, leader_epoch, partition_epoch, commit_offset, event_id,
               explode(array_distinct(filter(isr, x -> NOT array_contains(prev_isr, x)))) AS replica
        FROM tl WHERE prev_isr IS NOT NULL AND isr IS NOT NULL
    """),
    ("registrations", """
        SELECT cluster_id, broker_id, broker_epoch, commit_offset,
               COALESCE(next_commit_offset, 9223372036854775807) AS next_commit_offset
        FROM broker_registrations
        WHERE next_commit_offset IS NULL OR next_commit_offset > commit_offset
    """),
    ("alter_partitions", """
        SELECT cluster_id, topic_id, partition, partition_epoch, isr, isr_broker_epochs, event_id
        FROM events
        WHERE event_type = 'request_alter_partition' AND coalesce(error IN """ + NO_ERROR + """, false)
          AND api_version >= 3 AND isr_broker_epochs IS NOT NULL
    """),
]

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


def run_once(spark, export: Path, materialize: bool) -> dict:
    """Register the exported tables, build the prepare steps, run the checks; seconds of each."""
    started = time.perf_counter()
    for table in EXPORTED_TABLES:
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
