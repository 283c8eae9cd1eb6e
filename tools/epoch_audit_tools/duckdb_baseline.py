"""The DuckDB side of ``epoch-audit bench``: every SQL statement the baseline runs, in one module.

Two jobs, both in-process on one DuckDB connection:

1. ``parse``: the regex parse of the same raw files our ingest reads, into the same typed columns,
   for the main event families — state-change leader / follower start lines and StopReplica
   received / fenced lines, request-log PRODUCE and FETCH (one row per partition), and
   ``kafka-dump-log`` batches — written to Parquet (our ingest stages its parser outputs as Parquet
   too). Other families (controller.log, server.log, metadata dumps, checkpoints, Redpanda) are not
   parsed here: the figures say so.
2. ``prepare`` + ``checks``: three core checks written with ``ASOF JOIN`` over our bronze and silver
   tables exported as Parquet —
   ``write_accepted_by_fenced_leader`` (offset rule: batches -> leader-epoch start intervals),
   ``stale_stop_replica_accepted`` (accepted StopReplica -> the broker's current LE) and
   ``stale_broker_epoch_isr_join`` rule 1 (ISR joins -> registered broker epoch at the commit).
   ``prepare`` builds the inputs of the joins (own log order, accepted StopReplica units, epoch
   starts by leader, ISR joins): the counterpart of our ``timelines`` stage; ``checks`` runs the
   ASOF joins: the counterpart of our ``check`` stage.

The rules mirror ``epoch_audit/gold/invariants/``; the bench
compares the violation keys both engines find (``violations_agree``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import duckdb

# --- 1. parse ---------------------------------------------------------------------------------

_TS = r"^\[(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3})\] (\w+) "

# Families -> (file glob relative to the corpus root, line prefilter, SQL producing typed rows).
# ``{lines}`` is the per-family line table; every query yields typed columns plus ``event_type``.
PARSE_SQL: dict[str, tuple[str, str]] = {
    "state_change_epochs": (
        "state-change",
        r"""
        SELECT filename AS source_file, event_type, level,
               strptime(m.ts, '%Y-%m-%d %H:%M:%S,%g') AS event_time,
               TRY_CAST(m.broker AS INTEGER) AS broker_id, m.topic AS topic,
               TRY_CAST(m.part AS INTEGER) AS partition, TRY_CAST(m.le AS INTEGER) AS leader_epoch,
               TRY_CAST(m.off AS BIGINT) AS "offset",
               TRY_CAST(regexp_extract(line, 'high watermark (\d+)', 1) AS BIGINT) AS high_watermark
        FROM (
            SELECT filename, line, regexp_extract(line, '^\[[^\]]*\] (\w+) ', 1) AS level,
                   CASE WHEN m.role = 'Leader' THEN 'become_leader' ELSE 'become_follower' END AS event_type,
                   m
            FROM (
                SELECT filename, line, regexp_extract(line,
                    '^\[([^\]]*)\] \w+ \[Broker id=(\d+)\] (Leader|Follower) (\S+)-(\d+) '
                    || '(?:with topic id \S+ )?starts at leader epoch (-?\d+) from offset (-?\d+)',
                    ['ts', 'broker', 'role', 'topic', 'part', 'le', 'off']) AS m
                FROM {lines} WHERE contains(line, 'starts at leader epoch')
            ) WHERE m.role <> ''
        )
        """,
    ),
    "state_change_stop_replica": (
        "state-change",
        r"""
        SELECT source_file, event_type, level, strptime(ts, '%Y-%m-%d %H:%M:%S,%g') AS event_time,
               TRY_CAST(broker AS INTEGER) AS broker_id, topic, TRY_CAST(part AS INTEGER) AS partition,
               TRY_CAST(le AS INTEGER) AS leader_epoch, TRY_CAST(cur AS INTEGER) AS current_leader_epoch,
               delete_partition = 'true' AS delete_partition, TRY_CAST(corr AS BIGINT) AS correlation_id,
               TRY_CAST(ctl AS INTEGER) AS controller_id, TRY_CAST(cep AS INTEGER) AS controller_epoch
        FROM (
            SELECT filename AS source_file, 'stop_replica_received' AS event_type, m.*, NULL AS cur
            FROM (
                SELECT filename, regexp_extract(line,
                    '^\[([^\]]*)\] (\w+) \[Broker id=(\d+)\] Received StopReplica request '
                    || 'StopReplicaPartitionState\(partitionIndex=\d+, leaderEpoch=(-?\d+), deletePartition=(\w+)\) '
                    || 'correlation id (\d+) from controller (\d+) epoch (\d+) for partition (\S+)-(\d+)',
                    ['ts', 'level', 'broker', 'le', 'delete_partition', 'corr', 'ctl', 'cep', 'topic', 'part']) AS m
                FROM {lines} WHERE contains(line, 'Received StopReplica request')
            ) WHERE m.ts <> ''
            UNION ALL BY NAME
            SELECT filename AS source_file, 'stop_replica_fenced' AS event_type, m.*
            FROM (
                SELECT filename, regexp_extract(line,
                    '^\[([^\]]*)\] (\w+) \[Broker id=(\d+)\] Ignoring StopReplica request \(delete=(\w+)\) '
                    || 'from controller (\d+) with correlation id (\d+) epoch (\d+) for partition (\S+)-(\d+) '
                    || 'since its associated leader epoch (-?\d+) is smaller than the current leader epoch (-?\d+)',
                    ['ts', 'level', 'broker', 'delete_partition', 'ctl', 'corr', 'cep', 'topic', 'part', 'le',
                     'cur']) AS m
                FROM {lines} WHERE contains(line, 'Ignoring StopReplica request')
            ) WHERE m.ts <> ''
        )
        """,
    ),
    "request_produce": (
        "request",
        r"""
        WITH req AS (
            SELECT filename AS source_file,
                   strptime(regexp_extract(line, '^\[([^\]]*)\]', 1), '%Y-%m-%d %H:%M:%S,%g') AS event_time,
                   regexp_extract(line, 'Completed request:(\{.*\}) \(kafka\.request\.logger\)$', 1)::JSON AS j
            FROM {lines} WHERE contains(line, '"requestApiKeyName":"PRODUCE"')
        ), topics AS (
            SELECT source_file, event_time,
                   (j->>'$.requestHeader.requestApiVersion')::INTEGER AS api_version,
                   (j->>'$.requestHeader.correlationId')::BIGINT AS correlation_id,
                   unnest(from_json(j->'$.response.responses',
                       '[{"name":"VARCHAR","partitionResponses":[{"index":"INTEGER","errorCode":"INTEGER",
                          "baseOffset":"BIGINT","logStartOffset":"BIGINT"}]}]')) AS t
            FROM req
        ), parts AS (
            SELECT source_file, event_time, api_version, correlation_id, t.name AS topic,
                   unnest(t.partitionResponses) AS p
            FROM topics
        )
        SELECT source_file, 'request_produce' AS event_type, event_time, api_version, correlation_id, topic,
               p.index AS partition, p.errorCode AS error_code, p.baseOffset AS "offset",
               p.logStartOffset AS log_start_offset
        FROM parts
        """,
    ),
    "request_fetch": (
        "request",
        r"""
        WITH req AS (
            SELECT row_number() OVER () AS rid, filename AS source_file,
                   strptime(regexp_extract(line, '^\[([^\]]*)\]', 1), '%Y-%m-%d %H:%M:%S,%g') AS event_time,
                   regexp_extract(line, 'Completed request:(\{.*\}) \(kafka\.request\.logger\)$', 1)::JSON AS j
            FROM {lines} WHERE contains(line, '"requestApiKeyName":"FETCH"')
        ), rq AS (
            SELECT rid, source_file, event_time,
                   (j->>'$.requestHeader.requestApiVersion')::INTEGER AS api_version,
                   COALESCE(j->>'$.request.replicaState.replicaId', j->>'$.request.replicaId')::INTEGER
                       AS replica_id,
                   (j->>'$.request.replicaState.replicaEpoch')::BIGINT AS broker_epoch,
                   unnest(from_json(j->'$.request.topics',
                       '[{"topicId":"VARCHAR","topic":"VARCHAR","partitions":[{"partition":"INTEGER",
                          "currentLeaderEpoch":"INTEGER","fetchOffset":"BIGINT"}]}]')) AS t
            FROM req
        ), rqp AS (
            SELECT rid, source_file, event_time, api_version, replica_id, broker_epoch,
                   COALESCE(t.topicId, t.topic) AS tkey, unnest(t.partitions) AS p
            FROM rq
        ), rs AS (
            SELECT rid, unnest(from_json(j->'$.response.responses',
                       '[{"topicId":"VARCHAR","topic":"VARCHAR","partitions":[{"partitionIndex":"INTEGER",
                          "errorCode":"INTEGER","highWatermark":"BIGINT"}]}]')) AS t
            FROM req
        ), rsp AS (
            SELECT rid, COALESCE(t.topicId, t.topic) AS tkey, unnest(t.partitions) AS p FROM rs
        )
        SELECT rqp.source_file, 'request_fetch' AS event_type, rqp.event_time, rqp.api_version, rqp.replica_id,
               rqp.broker_epoch, rqp.tkey AS topic_id, rqp.p.partition AS partition,
               rqp.p.currentLeaderEpoch AS current_leader_epoch, rqp.p.fetchOffset AS "offset",
               rsp.p.errorCode AS error_code, rsp.p.highWatermark AS high_watermark
        FROM rqp LEFT JOIN rsp
          ON rsp.rid = rqp.rid AND rsp.tkey = rqp.tkey AND rsp.p.partitionIndex = rqp.p.partition
        """,
    ),
    "segment_dump_batches": (
        "segment-dump",
        r"""
        WITH hdr AS (
            SELECT filename, regexp_extract(line, '^Dumping \S*/([^/]+)-(\d+)/\d+\.log$', ['topic', 'part']) AS m
            FROM {lines} WHERE starts_with(line, 'Dumping ')
        ), b AS (
            SELECT filename, regexp_extract(line,
                '^baseOffset: (\d+) lastOffset: (\d+) count: \d+ .*?producerId: (-?\d+) producerEpoch: (-?\d+) '
                || 'partitionLeaderEpoch: (-?\d+) isTransactional: (\w+) isControl: (\w+) .*?CreateTime: (-?\d+)',
                ['base', 'last', 'pid', 'pep', 'le', 'txn', 'ctl', 'ct']) AS m
            FROM {lines} WHERE starts_with(line, 'baseOffset: ')
        )
        SELECT b.filename AS source_file, 'data_batch' AS event_type, hdr.m.topic AS topic,
               TRY_CAST(hdr.m.part AS INTEGER) AS partition, TRY_CAST(b.m.base AS BIGINT) AS "offset",
               TRY_CAST(b.m.last AS BIGINT) AS last_offset, TRY_CAST(b.m.pid AS BIGINT) AS producer_id,
               TRY_CAST(b.m.pep AS INTEGER) AS producer_epoch, TRY_CAST(b.m.le AS INTEGER) AS leader_epoch,
               b.m.txn = 'true' AS is_transactional, b.m.ctl = 'true' AS is_control,
               TRY_CAST(b.m.ct AS BIGINT) AS create_time_ms
        FROM b LEFT JOIN hdr USING (filename)
        WHERE b.m.base <> ''
        """,
    ),
}

# Which raw files each line table reads (same files as our ingest, minus retry/ duplicate shipments).
FILE_GLOBS: dict[str, str] = {
    "state-change": "**/broker-*/state-change.log*",
    "request": "**/broker-*/kafka-request.log*",
    "segment-dump": "**/broker-*/kafka-dump-log/*.txt",
}


def _read_lines_sql(root: Path, glob: str) -> str:
    pattern = str(root / glob).replace("'", "''")
    return (
        f"SELECT filename, line FROM read_csv('{pattern}', columns={{'line': 'VARCHAR'}}, delim='\x1f', "
        "quote='', escape='', header=false, filename=true, auto_detect=false, compression='auto') "
        "WHERE filename NOT LIKE '%/retry/%'"
    )


# DuckDB runs inside the bench's Python process: left to its defaults it takes every core and 80 %
# of RAM (the 10^7 run peaked at 13.1 GB in that process). Both are set explicitly instead: the
# bench passes the cores Spark gets, and this memory limit, so both engines get the same machine.
DEFAULT_MEMORY_LIMIT = "4GB"


def connect(threads: int | None = None, memory_limit: str | None = DEFAULT_MEMORY_LIMIT,
            temp_directory: Path | str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with ``threads`` (default: every core) and ``memory_limit`` set.

    ``temp_directory`` is where DuckDB spills above its memory limit (default: DuckDB's own,
    ``.tmp`` in the working directory for an in-memory database).
    """
    con = duckdb.connect()
    con.execute(f"SET threads = {int(threads or os.cpu_count() or 1)}")
    if memory_limit:
        con.execute(f"SET memory_limit = '{memory_limit}'")
    if temp_directory is not None:
        con.execute("SET temp_directory = '" + str(temp_directory).replace("'", "''") + "'")
    return con


def settings(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """The connection's settings in effect (as DuckDB reports them), for the bench JSON."""
    names = ("threads", "memory_limit", "temp_directory", "max_temp_directory_size")
    row = con.execute("SELECT " + ", ".join(f"current_setting('{n}')" for n in names)).fetchone()
    return {"version": duckdb.__version__, **{n: v for n, v in zip(names, row, strict=True)}}


def parse(con: duckdb.DuckDBPyConnection, corpus: Path, out_dir: Path) -> dict[str, Any]:
    """Parse the main families of ``corpus`` into Parquet under ``out_dir``; returns counts and timings.

    Lines of each file kind are read once into a table (the counterpart of our staged ``lines``);
    each family's typed rows are written with ``COPY ... TO`` (our parsers' staged outputs).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"lines": 0, "lines_by_kind": {}, "rows": {}, "seconds_by_family": {}}
    for kind, glob in FILE_GLOBS.items():
        started = time.perf_counter()
        table = f"lines_{kind.replace('-', '_')}"
        if any(corpus.glob(glob)):
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {_read_lines_sql(corpus, glob)}")
        else:  # e.g. Redpanda clusters write no state-change log: the family is simply empty
            con.execute(f"CREATE OR REPLACE TEMP TABLE {table} (filename VARCHAR, line VARCHAR)")
        n = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        result["lines_by_kind"][kind] = int(n)
        result["lines"] += int(n)
        result["seconds_by_family"][f"read:{kind}"] = round(time.perf_counter() - started, 3)
    for family, (kind, sql) in PARSE_SQL.items():
        started = time.perf_counter()
        table = f"lines_{kind.replace('-', '_')}"
        target = str(out_dir / f"{family}.parquet").replace("'", "''")
        con.execute(f"COPY ({sql.replace('{lines}', table)}) TO '{target}' (FORMAT parquet)")
        rows = con.execute(
            f"SELECT event_type, count(*) FROM read_parquet('{target}') GROUP BY ALL ORDER BY ALL"
        ).fetchall()
        for event_type, count in rows:
            result["rows"][event_type] = result["rows"].get(event_type, 0) + int(count)
        result["seconds_by_family"][family] = round(time.perf_counter() - started, 3)
    for kind in FILE_GLOBS:
        con.execute(f"DROP TABLE IF EXISTS lines_{kind.replace('-', '_')}")
    return result


# --- 2. checks over our exported bronze / silver ----------------------------------------------

NO_ERROR = "('NONE', '0')"
STOP_EVIDENCE = "('fetcher_removed', 'log_deletion_scheduled', 'log_deleted')"
PARTITION_EVENTS = (
    "('stop_replica_received', 'leader_and_isr_received', 'become_leader', 'become_follower', "
    "'fetcher_removed', 'log_deletion_scheduled', 'log_deleted', 'fetcher_added')"
)
NEXT_REQUEST = "('stop_replica_received', 'leader_and_isr_received', 'become_leader', 'become_follower')"
STOP_REFUSALS = "('stop_replica_fenced', 'stop_replica_equal_epoch_refused', 'stop_replica_storage_error')"
UNIT = "cluster_id, broker_id, topic, partition, controller_id, controller_epoch, correlation_id"
PART = "cluster_id, topic, partition"

PREPARE_SQL: list[tuple[str, str]] = [
    # Own log order (spec "Ordering and time" rule 2): running max of event_time down each file,
    # over the whole bronze table (as epoch_audit.silver.timelines.with_own_order), then one position per
    # (broker, partition) in that order.
    (
        "own_order",
        """
        CREATE OR REPLACE TABLE ev AS
        SELECT event_id, event_type, cluster_id, broker_id, topic, partition, topic_id, event_time,
               file_id, file_order, line_number, sub_index, leader_epoch, delete_partition, error,
               controller_id, controller_epoch, correlation_id, "offset",
               max(event_time) OVER (PARTITION BY file_id ORDER BY line_number, sub_index
                                     ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS own_time
        FROM read_parquet('{events}')
        """,
    ),
    (
        "positions",
        """
        CREATE OR REPLACE TABLE pev AS
        SELECT *, row_number() OVER (
                   PARTITION BY cluster_id, broker_id, topic, partition
                   ORDER BY own_time NULLS FIRST, file_order NULLS FIRST, file_id NULLS FIRST,
                            line_number NULLS FIRST, sub_index NULLS FIRST, event_id) AS pos
        FROM ev
        WHERE event_type IN """ + PARTITION_EVENTS[:-1] + """, 'request_stop_replica', 'request_leader_and_isr')
        """,
    ),
    # Accepted StopReplica units: the TRACE chain (received, then the replica stopped before the
    # partition's next request, no refusal) and request-log STOP_REPLICA with error NONE.
    (
        "stop_units",
        """
        CREATE OR REPLACE TABLE stops AS
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
               arg_min(leader_epoch, pos) AS leader_epoch, arg_min(delete_partition, pos) AS delete_partition,
               arg_min(event_time, pos) AS event_time, min(pos) AS pos
        FROM units WHERE topic IS NOT NULL
        GROUP BY ALL
        """,
    ),
    # The broker's current LE: accepted LeaderAndIsr states (start lines, request log NONE), and a
    # reset after every accepted StopReplica with delete=true. p orders states < stop < reset.
    (
        "le_states",
        """
        CREATE OR REPLACE TABLE le_states AS
        SELECT cluster_id, broker_id, topic, partition, pos * 3 AS p, leader_epoch AS cur_le
        FROM pev
        WHERE leader_epoch IS NOT NULL
          AND (event_type IN ('become_leader', 'become_follower')
               OR (event_type = 'request_leader_and_isr' AND coalesce(error IN """ + NO_ERROR + """, false)))
        UNION ALL
        SELECT cluster_id, broker_id, topic, partition, pos * 3 + 2 AS p, NULL::INTEGER AS cur_le
        FROM stops WHERE delete_partition
        """,
    ),
    # Leader of each epoch: the timeline's first decision at that LE, else the earliest broker claim.
    (
        "epoch_leaders",
        """
        CREATE OR REPLACE TABLE epoch_leaders AS
        WITH tl AS (
            SELECT """ + PART + """, leader_epoch, arg_min(leader, decision_seq) AS tl_leader
            FROM read_parquet('{partition_timeline}')
            WHERE leader >= 0 AND leader_epoch >= 0 GROUP BY ALL
        ), bk AS (
            SELECT """ + PART + """, leader_epoch,
                   first(broker_id ORDER BY event_time IS NULL, event_time, event_id) AS bk_leader
            FROM read_parquet('{broker_leader_epochs}') WHERE is_claim GROUP BY ALL
        )
        SELECT COALESCE(tl.cluster_id, bk.cluster_id) AS cluster_id, COALESCE(tl.topic, bk.topic) AS topic,
               COALESCE(tl.partition, bk.partition) AS partition,
               COALESCE(tl.leader_epoch, bk.leader_epoch) AS leader_epoch,
               COALESCE(tl_leader, bk_leader) AS epoch_leader
        FROM tl FULL JOIN bk USING (cluster_id, topic, partition, leader_epoch)
        """,
    ),
    # Start offset of each epoch per its own leader (start line, else its newest checkpoint copy),
    # as intervals: at offset o the highest epoch that has started at or before o.
    (
        "epoch_intervals",
        """
        CREATE OR REPLACE TABLE epoch_intervals AS
        WITH ro AS (SELECT * FROM read_parquet('{replica_offsets}')),
        line AS (
            SELECT """ + PART + """, broker_id, leader_epoch, first(value ORDER BY series_seq) AS v
            FROM ro WHERE series = 'epoch_start_line' GROUP BY ALL
        ), ckpt AS (
            SELECT """ + PART + """, broker_id, leader_epoch, min(value) AS v
            FROM ro WHERE series = 'epoch_start_checkpoint' AND is_latest_copy GROUP BY ALL
        ), starts AS (
            SELECT e.cluster_id, e.topic, e.partition, e.leader_epoch, COALESCE(l.v, c.v) AS start
            FROM epoch_leaders e
            LEFT JOIN line l ON l.cluster_id = e.cluster_id AND l.topic = e.topic AND l.partition = e.partition
                 AND l.leader_epoch = e.leader_epoch AND l.broker_id = e.epoch_leader
            LEFT JOIN ckpt c ON c.cluster_id = e.cluster_id AND c.topic = e.topic AND c.partition = e.partition
                 AND c.leader_epoch = e.leader_epoch AND c.broker_id = e.epoch_leader
            WHERE e.epoch_leader IS NOT NULL AND COALESCE(l.v, c.v) IS NOT NULL
        ), per_start AS (
            SELECT """ + PART + """, start, max(leader_epoch) AS le FROM starts GROUP BY ALL
        )
        SELECT """ + PART + """, start,
               max(le) OVER (PARTITION BY """ + PART + """ ORDER BY start
                             ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS max_started_epoch
        FROM per_start
        """,
    ),
    (
        "batches",
        """
        CREATE OR REPLACE TABLE batches AS
        SELECT cluster_id, topic, partition, leader_epoch, "offset", event_id
        FROM read_parquet('{events}')
        WHERE event_type = 'data_batch' AND "offset" IS NOT NULL AND leader_epoch IS NOT NULL
        """,
    ),
    # KRaft ISR joins: replicas a committed decision adds to the previous state's ISR.
    (
        "isr_joins",
        """
        CREATE OR REPLACE TABLE isr_joins AS
        WITH tl AS (
            SELECT *, lag(isr) OVER (PARTITION BY cluster_id, topic_id, partition ORDER BY decision_seq) AS prev_isr
            FROM read_parquet('{partition_timeline}') WHERE source = 'kraft'
        )
        SELECT cluster_id, topic, topic_id, partition, leader_epoch, partition_epoch, commit_offset, event_id,
               unnest(list_distinct(list_filter(isr, lambda x: NOT list_contains(prev_isr, x)))) AS replica
        FROM tl WHERE prev_isr IS NOT NULL AND isr IS NOT NULL
        """,
    ),
    (
        "registrations",
        """
        CREATE OR REPLACE TABLE registrations AS
        SELECT cluster_id, broker_id, broker_epoch, commit_offset,
               COALESCE(next_commit_offset, 9223372036854775807) AS next_commit_offset
        FROM read_parquet('{broker_registrations}')
        WHERE next_commit_offset IS NULL OR next_commit_offset > commit_offset
        """,
    ),
    (
        "alter_partitions",
        """
        CREATE OR REPLACE TABLE alter_partitions AS
        SELECT cluster_id, topic_id, partition, partition_epoch, isr, isr_broker_epochs, event_id
        FROM read_parquet('{events}')
        WHERE event_type = 'request_alter_partition' AND coalesce(error IN """ + NO_ERROR + """, false)
          AND api_version >= 3 AND isr_broker_epochs IS NOT NULL
        """,
    ),
]

CHECK_SQL: dict[str, str] = {
    # Offset rule: a batch of epoch e at an offset where a later epoch had already started.
    "write_accepted_by_fenced_leader": """
        SELECT 'write_accepted_by_fenced_leader' AS invariant, b.cluster_id, b.topic, b.partition,
               el.epoch_leader AS broker_id, b.leader_epoch
        FROM batches b
        ASOF JOIN epoch_intervals iv
          ON iv.cluster_id = b.cluster_id AND iv.topic = b.topic AND iv.partition = b.partition
         AND b."offset" >= iv.start
        LEFT JOIN epoch_leaders el
          ON el.cluster_id = b.cluster_id AND el.topic = b.topic AND el.partition = b.partition
         AND el.leader_epoch = b.leader_epoch
        WHERE iv.max_started_epoch > b.leader_epoch
        GROUP BY ALL
    """,
    # KIP-570: the current LE just before the accepted StopReplica is above its request LE.
    "stale_stop_replica_accepted": """
        SELECT 'stale_stop_replica_accepted' AS invariant, s.cluster_id, s.topic, s.partition, s.broker_id,
               s.leader_epoch
        FROM stops s
        ASOF JOIN le_states st
          ON st.cluster_id = s.cluster_id AND st.broker_id = s.broker_id AND st.topic = s.topic
         AND st.partition = s.partition AND s.pos * 3 + 1 > st.p
        WHERE s.leader_epoch >= 0 AND st.cur_le IS NOT NULL AND st.cur_le > s.leader_epoch
        GROUP BY ALL
    """,
    # KIP-903 rule 1: the accepted AlterPartition's broker epoch for R differs from R's registered
    # broker epoch at the commit point (the last registration state at or before the commit).
    "stale_broker_epoch_isr_join": """
        WITH j AS (
            SELECT j.*, r.broker_epoch AS registered_be
            FROM isr_joins j
            ASOF LEFT JOIN registrations r
              ON r.cluster_id = j.cluster_id AND r.broker_id = j.replica AND j.commit_offset >= r.commit_offset
            WHERE r.next_commit_offset IS NULL OR j.commit_offset < r.next_commit_offset
        )
        SELECT 'stale_broker_epoch_isr_join' AS invariant, j.cluster_id, j.topic, j.partition,
               j.replica AS broker_id, j.leader_epoch
        FROM j JOIN alter_partitions a
          ON a.cluster_id = j.cluster_id AND a.topic_id = j.topic_id AND a.partition = j.partition
         AND a.partition_epoch = j.partition_epoch
        WHERE list_contains(a.isr, j.replica)
          AND a.isr_broker_epochs[list_position(a.isr, j.replica)] <> -1
          AND j.registered_be IS NOT NULL
          AND a.isr_broker_epochs[list_position(a.isr, j.replica)] <> j.registered_be
        GROUP BY ALL
    """,
}

EXPORTED_TABLES = ("events", "partition_timeline", "broker_registrations", "broker_leader_epochs", "replica_offsets")


def _paths(export_dir: Path) -> dict[str, str]:
    return {t: str(export_dir / t / "*.parquet").replace("'", "''") for t in EXPORTED_TABLES}


def prepare(con: duckdb.DuckDBPyConnection, export_dir: Path) -> dict[str, float]:
    """Build the join inputs from the exported Parquet (our ``timelines`` counterpart); seconds per step."""
    paths = _paths(export_dir)
    seconds: dict[str, float] = {}
    for name, sql in PREPARE_SQL:
        started = time.perf_counter()
        for table, path in paths.items():
            sql = sql.replace("{" + table + "}", path)
        con.execute(sql)
        seconds[name] = round(time.perf_counter() - started, 3)
    return seconds


def checks(con: duckdb.DuckDBPyConnection) -> tuple[set[tuple], dict[str, float]]:
    """Run the ASOF-join checks; returns the violation keys and seconds per check.

    A key is (invariant, cluster_id, topic, partition, broker_id, leader_epoch).
    """
    found: set[tuple] = set()
    seconds: dict[str, float] = {}
    for name, sql in CHECK_SQL.items():
        started = time.perf_counter()
        rows = con.execute(sql).fetchall()  # violations: a handful of rows
        seconds[name] = round(time.perf_counter() - started, 3)
        found.update(tuple(r) for r in rows)
    return found, seconds
