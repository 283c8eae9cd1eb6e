"""Ingest stage: raw collected files -> bronze events, quarantine and per-file line accounting.

This module is the I/O orchestration; the work is in :mod:`epoch_audit.bronze`.

Driver side (small, ``bronze.discover``): walk the inputs, name each file (cluster, host, log
stream, rotation order, format), and decide what is new by comparing with ``bronze/ingest_files``
(one row per file identity: how many bytes and lines of it were consumed, and the hash of those bytes).

Executor side (big): ONE ``mapInArrow`` pass over the read tasks (``bronze.single_pass``) reads each
file's new bytes, frames log records, runs the parsers' Python functions and counts every line as
parsed, irrelevant or malformed; its events and quarantined lines are written once, in one Spark
job, as Parquet staged by row kind in bronze's partition layout, by the Python workers themselves on
a local lake (the JVM then only receives the per-file counts), by Spark's write on an object store.
The event files become bronze's own files (``upsert_staged``: moved and committed, not read or
written again on delta-rs); the quarantine is read from the staged rest. No plan grows with the
number of templates.

Identity and idempotence. A file's identity is (cluster, host, log name, its first line): the same
bytes shipped twice, a live file that grew, and that live file after rotation (``state-change.log``
→ ``state-change.log.2024-03-05-09``) all have one identity, so their lines get the same event ids
and only bytes never consumed before are read. Writes are upserts on deterministic ids, and the
file table is written last: a run killed half-way leaves nothing the re-run would duplicate.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from epoch_audit import objstore
from epoch_audit.bronze.discover import InputFile, describe, discover_inputs, in_window, plan_reads
from epoch_audit.bronze.own_time import layout_columns, with_bronze_layout
from epoch_audit.bronze.single_pass import PASS_SCHEMA, STAGED_PARTITIONS, pass_rows, side_facts, write_pass
from epoch_audit.config import AppConfig
from epoch_audit.lake.staging import read_staged, remove_staging, staging_dir, write_delta_ready
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import BRONZE_EVENTS_PARTITIONS

log = logging.getLogger(__name__)

EVENTS_TABLE = "bronze/events"
QUARANTINE_TABLE = "quarantine/lines"
FILES_TABLE = "bronze/ingest_files"
ACCOUNTING_TABLE = "bronze/ingest_accounting"
# The staged event rows, as bronze stores them (the pass's columns less ``row_kind``, in its order)
STAGED_EVENT_SCHEMA = StructType([f for f in PASS_SCHEMA.fields if f.name != "row_kind"])
SKIPPED_PATHS_SHOWN = 50  # the run summary lists this many skipped input paths (all are counted)
IRRELEVANT_FAMILIES_LISTED = 40  # the run summary lists this many families of irrelevant lines, biggest first


def bronze_columns(storage: LakeStorage) -> list[str]:
    """The columns the pass's event rows are stored with, given the lake's bronze events table."""
    return layout_columns(storage.columns(EVENTS_TABLE) if storage.exists(EVENTS_TABLE) else None)


def bronze_layout(storage: LakeStorage, events: DataFrame, seeds: dict[str, int] | None = None) -> DataFrame:
    """Events as bronze stores them (see :func:`epoch_audit.bronze.own_time.with_bronze_layout`),
    given the layout of the lake's bronze events table."""
    existing = storage.columns(EVENTS_TABLE) if storage.exists(EVENTS_TABLE) else None
    return with_bronze_layout(events, existing, seeds)


class StepTimer:
    """Wall seconds per ingest step (logged as it goes: a long run shows where it is)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, step: str) -> None:
        now = time.perf_counter()
        self.seconds[step] = round(now - self._last, 3)
        self._last = now
        log.info("ingest: %s done in %.1f s", step, self.seconds[step])


@dataclass
class IngestResult:
    files_seen: int
    files_read: int
    files_skipped: dict[str, int]
    lines_read: int
    parsed: int
    irrelevant: int
    malformed: int
    step_seconds: dict[str, float] = field(default_factory=dict)
    # inputs that are not readable regular files (FIFOs, symlink loops, unreadable entries,
    # directories named like logs): {reason: count}, and the first paths with their reason
    skipped_inputs: dict[str, int] = field(default_factory=dict)
    # secret values replaced by [redacted] in the lines read (before anything was stored)
    redacted_secrets: int = 0
    skipped_input_paths: list[dict[str, str]] = field(default_factory=list)
    # the biggest families of irrelevant lines ("<logger> | <message prefix>"): format gaps show here
    irrelevant_families: list[dict[str, object]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def workers_write(staged_dir: str) -> bool:
    """Whether the pass's Python workers write its staged files (a local lake), or Spark does: an
    object store's credentials may be the Spark session's only (abfss, dbfs), not the workers'."""
    return not objstore.is_remote(staged_dir)


def _consumed(storage: LakeStorage) -> dict[str, dict]:
    if not storage.exists(FILES_TABLE):
        return {}
    wanted = ["file_id", "consumed_bytes", "consumed_lines", "prefix_sha256"]
    # max_event_micros: since the own_time column (older lakes: unknown, null)
    has_micros = "max_event_micros" in storage.columns(FILES_TABLE)
    rows = storage.rows(FILES_TABLE, wanted + (["max_event_micros"] if has_micros else []))  # a row per file
    return {r["file_id"]: {"max_event_micros": None, **r} for r in rows}


def _describe_all(paths: list, config: AppConfig) -> list[tuple[InputFile | None, OSError | None]]:
    """Every path described (its content hashed, in order), or the error that made it unreadable.
    On threads: hashing and gzip release the GIL, and a night's files are read in a fraction of one
    thread's time (12.5 s of a 10^7-line ingest on one)."""

    def one(path: object) -> tuple[InputFile | None, OSError | None]:
        try:
            return describe(path, config), None
        except OSError as err:
            return None, err

    with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
        return list(pool.map(one, paths))


def ingest(
    spark: SparkSession,
    storage: LakeStorage,
    inputs: list[str],
    config: AppConfig,
    run_id: str,
    window: tuple[float | None, float | None] = (None, None),
) -> IngestResult:
    """Read what is new under ``inputs`` into bronze; return the line accounting.

    ``window`` (``--since`` / ``--date``) bounds the files looked at by modification time (when the
    collector delivered them), never the events: files outside it are not even hashed.
    """
    timer = StepTimer()
    # Scratch space of runs that were killed: never read again (each run stages under its own id).
    remove_staging(staging_dir(storage.lake))
    found = discover_inputs(inputs)
    paths, skipped_inputs = found.files, list(found.skipped)
    outside = 0
    if window != (None, None):
        kept = [p for p in paths if in_window(p, window, found.mtimes.get(str(p)))]
        outside, paths = len(paths) - len(kept), kept
    files = []
    for path, (described, err) in zip(paths, _describe_all(paths, config), strict=True):
        if described is not None:
            files.append(described)
        else:  # vanished or became unreadable since discovery
            log.warning("input skipped: %s (unreadable: %s)", path, err.strerror or err)
            skipped_inputs.append((str(path), f"unreadable ({err.strerror or err})"))
    skipped_summary = {
        "skipped_inputs": _reason_counts(reason for _, reason in skipped_inputs),
        "skipped_input_paths": [
            {"path": where, "reason": reason} for where, reason in skipped_inputs[:SKIPPED_PATHS_SHOWN]
        ],
    }
    consumed = _consumed(storage)
    plan = plan_reads(files, consumed)
    skipped_counts: dict[str, int] = {"outside_window": outside} if outside else {}
    for _, reason in plan.skipped:
        skipped_counts[reason] = skipped_counts.get(reason, 0) + 1
    log.info("ingest: %d files, %d to read, skipped %s", len(files), len(plan.tasks), skipped_counts)
    timer.lap("plan")
    if not plan.tasks:
        return IngestResult(len(files), 0, skipped_counts, 0, 0, 0, 0, timer.seconds, **skipped_summary)

    # One pass, one Spark job, staged by row kind in bronze's layout: the event files become
    # bronze's own (not read or written again); the counts and quarantined lines are read from it.
    staging = staging_dir(storage.lake, run_id)
    seeds = {t.file_id: consumed[t.file_id]["max_event_micros"] for t in plan.tasks if t.file_id in consumed}
    staged_dir = f"{staging}/pass"
    if not workers_write(staged_dir):
        write_delta_ready(pass_rows(spark, plan.tasks, config, seeds), staged_dir, STAGED_PARTITIONS)
        side = read_staged(spark, staged_dir, PASS_SCHEMA).where(F.col("row_kind").isin("file", "irrelevant_family"))
        side_rows = [r.asDict() for r in side.select("row_kind", "file_id", "details").collect()]
    else:  # the Python workers write the staged files themselves (bronze.single_pass.write_pass)
        side_rows = write_pass(spark, plan.tasks, config, seeds, staged_dir)
    timer.lap("read_parse_and_count")
    counts: dict[str, dict] = {}
    families: Counter[str] = Counter()
    # one row per file read, and one per family of its irrelevant lines: small
    for r in side_rows:
        facts = side_facts(r["details"])
        if r["row_kind"] == "file":
            counts[r["file_id"]] = facts
        else:
            families[facts["reason"]] += facts["lines_read"]
    file_max = {fid: c["max_event_micros"] for fid, c in counts.items()}
    events_dir = f"{staged_dir}/row_kind=event"
    staged_events = read_staged(spark, events_dir, STAGED_EVENT_SCHEMA)
    from epoch_audit.stages.carry import drop_outdated_carries

    # Traffic older than a cluster's carried horizon makes its carried traffic incomplete: dropped
    # before the events land (a run killed in between then re-checks the whole history).
    drop_outdated_carries(storage, staged_events)
    # Every task vouched for its ids (one file per task, no line repeating a sub_index): no key check.
    vouched = not any(c.get("unvouched_ids") for c in counts.values())
    columns = bronze_columns(storage)
    if columns == STAGED_EVENT_SCHEMA.fieldNames():
        storage.upsert_staged(EVENTS_TABLE, events_dir, STAGED_EVENT_SCHEMA, list(BRONZE_EVENTS_PARTITIONS),
                              ["event_id"], unique=vouched)
    else:  # a lake whose bronze predates a layout column
        storage.upsert(EVENTS_TABLE, staged_events.select(*columns), ["event_id"], unique=vouched)
    timer.lap("bronze_events")
    if any(c["malformed"] for c in counts.values()):
        staged = read_staged(spark, staged_dir, PASS_SCHEMA)
        quarantine = staged.where(F.col("row_kind") == "quarantine").select(
            "file_id", "source_file", "line_number", F.col("details")["reason"].alias("reason"), "raw",
            F.lit(run_id).alias("run_id"),
        )
        storage.upsert(QUARANTINE_TABLE, quarantine, ["file_id", "line_number"])
    elif not storage.exists(QUARANTINE_TABLE):  # the table exists from the first run on, empty or not
        storage.overwrite_rows(QUARANTINE_TABLE, [], QUARANTINE_SCHEMA)
    timer.lap("quarantine")

    accounting_rows = []
    file_rows = []
    delivered_at = datetime.now(UTC)
    by_path = {f.source_file: f for f in plan.files}
    for task in plan.tasks:
        c = counts.get(task.file_id, {})
        read_n = int(c.get("lines_read") or 0)
        accounting_rows.append(
            (
                run_id, task.file_id, task.source_file, task.cluster_id, task.host_id, task.log_kind,
                task.start_line, task.start_line + read_n - 1, task.start_byte, read_n,
                int(c.get("parsed") or 0), int(c.get("irrelevant") or 0), int(c.get("malformed") or 0),
                int(c.get("bad_utf8") or 0),
            )
        )
        f = by_path[task.source_file]
        # a compressed log read to its end (not decompressed by the plan): its bytes and hash the pass's
        consumed_bytes, prefix_sha = (
            (c.get("read_bytes"), c.get("read_sha256")) if f.deferred else (task.end_byte, f.readable_sha256)
        )
        file_rows.append(
            (
                task.file_id, task.source_file, f.cluster_id, f.host_id, f.stream, f.log_kind, f.file_order,
                consumed_bytes, task.start_line - 1 + read_n, prefix_sha, run_id, file_max.get(task.file_id),
                delivered_at,
            )
        )
    storage.upsert_rows(ACCOUNTING_TABLE, accounting_rows, ACCOUNTING_SCHEMA, ["file_id", "start_line"])
    # Written last: it is what the next run trusts as "already consumed".
    _upgrade_files_table(storage)
    storage.upsert_rows(FILES_TABLE, file_rows, FILES_SCHEMA, ["file_id"])
    remove_staging(staging)
    timer.lap("accounting")

    totals = {
        k: sum(row[k] for row in accounting_rows_dicts(accounting_rows))
        for k in ("lines_read", "parsed", "irrelevant", "malformed")
    }
    return IngestResult(
        files_seen=len(files),
        files_read=len(plan.tasks),
        files_skipped=skipped_counts,
        lines_read=totals["lines_read"],
        parsed=totals["parsed"],
        irrelevant=totals["irrelevant"],
        malformed=totals["malformed"],
        step_seconds=timer.seconds,
        # biggest first, ties by name: the same summary whichever task finished first
        irrelevant_families=[{"family": family, "lines": lines} for family, lines in
                             sorted(families.items(), key=lambda kv: (-kv[1], kv[0]))[:IRRELEVANT_FAMILIES_LISTED]],
        redacted_secrets=sum(int(counts.get(task.file_id, {}).get("redacted") or 0) for task in plan.tasks),
        **skipped_summary,
    )


def _reason_counts(reasons) -> dict[str, int]:
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    return counts


ACCOUNTING_SCHEMA = StructType(
    [
        StructField("run_id", StringType()),
        StructField("file_id", StringType()),
        StructField("source_file", StringType()),
        StructField("cluster_id", StringType()),
        StructField("host_id", IntegerType()),
        StructField("log_kind", StringType()),
        StructField("start_line", LongType()),
        StructField("end_line", LongType()),
        StructField("start_byte", LongType()),
        StructField("lines_read", LongType()),
        StructField("parsed", LongType()),
        StructField("irrelevant", LongType()),
        StructField("malformed", LongType()),
        StructField("bad_utf8", LongType()),
    ]
)

QUARANTINE_SCHEMA = StructType(
    [
        StructField("file_id", StringType()),
        StructField("source_file", StringType()),
        StructField("line_number", LongType()),
        StructField("reason", StringType()),
        StructField("raw", StringType()),
        StructField("run_id", StringType(), False),
    ]
)

FILES_SCHEMA = StructType(
    [
        StructField("file_id", StringType()),
        StructField("source_file", StringType()),
        StructField("cluster_id", StringType()),
        StructField("host_id", IntegerType()),
        StructField("stream", StringType()),
        StructField("log_kind", StringType()),
        StructField("file_order", LongType()),
        StructField("consumed_bytes", LongType()),
        StructField("consumed_lines", LongType()),
        StructField("prefix_sha256", StringType()),
        StructField("last_run_id", StringType()),
        # max event time (epoch microseconds) of the file's events so far: seeds the own_time of
        # the lines it grows by (epoch_audit.bronze.own_time.with_file_own_time)
        StructField("max_event_micros", LongType()),
        # when a run last consumed new lines of the file (UTC): a host whose files all stopped
        # growing is silent (the bronze suite's hosts_not_silent expectation)
        StructField("last_delivered_at", TimestampType()),
    ]
)


def _upgrade_files_table(storage: LakeStorage) -> None:
    """A files table written before ``max_event_micros`` (null: unknown) or ``last_delivered_at``
    (now: a host silent since before the upgrade is found one silence later): the columns added."""
    if not storage.exists(FILES_TABLE):
        return
    present = set(storage.columns(FILES_TABLE))
    added = {
        "max_event_micros": F.lit(None).cast("long"),
        "last_delivered_at": F.lit(datetime.now(UTC)).cast("timestamp"),
    }
    if present >= set(added):
        return
    old = storage.read(FILES_TABLE)
    for name, value in added.items():
        if name not in present:
            old = old.withColumn(name, value)
    storage.overwrite(FILES_TABLE, old.select(*[f.name for f in FILES_SCHEMA.fields]))


def accounting_rows_dicts(rows: list[tuple]) -> list[dict]:
    names = [f.name for f in ACCOUNTING_SCHEMA.fields]
    return [dict(zip(names, r, strict=True)) for r in rows]
