"""Ingest: raw collected files -> bronze events, quarantine and per-file line accounting.

Driver side (small): walk the inputs, name each file (cluster, host, log stream, rotation order,
format), and decide what is new by comparing with ``bronze/ingest_files`` (one row per file
identity: how many bytes and lines of it were consumed, and the hash of those bytes).

Executor side (big): read the new bytes of each file into lines (``mapInArrow``, one task per
file), frame log records and parse them with the JVM (Spark SQL regex/JSON functions), and count
every line as parsed, irrelevant or malformed.

Identity and idempotence. A file's identity is (cluster, host, log name, its first line): the same
bytes shipped twice, a live file that grew, and that live file after rotation (``state-change.log``
→ ``state-change.log.2024-03-05-09``) all have one identity, so their lines get the same event ids
and only bytes never consumed before are read. Writes are upserts on deterministic ids, and the
file table is written last: a run killed half-way leaves nothing the re-run would duplicate.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import logging
import os
import re
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from epoch_audit.bronze.accounting import file_accounting, line_status_for_files, line_status_for_logs
from epoch_audit.bronze.parsers import MALFORMED
from epoch_audit.bronze.parsers.dispatch import file_parser_outputs, record_parser_outputs
from epoch_audit.bronze.parsers.file_kinds import base_file_name, copy_time, detect_file_kind
from epoch_audit.bronze.records import group_records, mark_lines, record_framing, unmark
from epoch_audit.config import AppConfig
from epoch_audit.contracts.events import (
    EVENT_CLASS_COLUMN,
    EVENT_DATE_COLUMN,
    EVENT_SCHEMA,
    OWN_TIME_COLUMN,
    event_class,
    event_date,
)
from epoch_audit.lake.storage import LakeStorage

log = logging.getLogger(__name__)

EVENTS_TABLE = "bronze/events"
QUARANTINE_TABLE = "quarantine/lines"
FILES_TABLE = "bronze/ingest_files"
ACCOUNTING_TABLE = "bronze/ingest_accounting"

def bronze_layout(storage: LakeStorage, events: DataFrame, seeds: dict[str, int] | None = None) -> DataFrame:
    """Events as bronze stores them: plus ``event_date`` (the day partition, see epoch_audit.lake.storage),
    ``event_class`` (state | traffic partition) and ``own_time`` (see :func:`with_file_own_time`;
    ``seeds``: per file read from a later line on, the max event time of its earlier lines, epoch
    microseconds).

    A lake whose bronze was created before one of these keeps its layout (no column added):
    Delta cannot add a partition column to an existing table. Such a lake is always re-checked
    from its whole history (no carried traffic, see epoch_audit.stages.pipeline).
    """
    if storage.exists(EVENTS_TABLE):
        columns = storage.columns(EVENTS_TABLE)
        if EVENT_DATE_COLUMN not in columns:
            log.warning("bronze/events predates the %s partition: kept as it is", EVENT_DATE_COLUMN)
            return events
        if EVENT_CLASS_COLUMN not in columns:
            log.warning("bronze/events predates the %s partition: kept as it is", EVENT_CLASS_COLUMN)
            return events.withColumn(EVENT_DATE_COLUMN, event_date(F.col("event_time")))
    out = events.withColumn(EVENT_DATE_COLUMN, event_date(F.col("event_time"))).withColumn(
        EVENT_CLASS_COLUMN, event_class(F.col("event_type"))
    )
    return with_file_own_time(out, seeds or {})


def with_file_own_time(events: DataFrame, seeds: dict[str, int]) -> DataFrame:
    """``own_time``: the running max of event_time along the event's file, over all of the file's
    events ingested so far (``seeds``: per file read from a later line on, the max event time of
    its earlier events in epoch microseconds). The same value ``epoch_audit.silver.timelines.
    with_own_order`` computes over a whole bronze table, fixed once at ingest: a run that reads only
    some of bronze (state events, recent traffic) still orders each event as a whole run does."""
    w = (
        Window.partitionBy("file_id")
        .orderBy("line_number", "sub_index")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    own = F.max("event_time").over(w)
    known = [(k, v) for k, v in sorted(seeds.items()) if v is not None]
    if not known:
        return events.withColumn(OWN_TIME_COLUMN, own)
    seed = events.sparkSession.createDataFrame(known, "file_id string, _seed_micros long")
    return (
        events.join(F.broadcast(seed), "file_id", "left")
        .withColumn(OWN_TIME_COLUMN, F.greatest(own, F.timestamp_micros("_seed_micros")))
        .drop("_seed_micros")
    )


def file_max_times(events: DataFrame, seeds: dict[str, int]) -> dict[str, int | None]:
    """Per file read, the max event time (epoch microseconds) of all its events so far."""
    rows = events.groupBy("file_id").agg(F.max(F.unix_micros("event_time")).alias("m")).collect()
    out: dict[str, int | None] = dict(seeds)
    for r in rows:  # one row per file read: small
        values = [v for v in (out.get(r["file_id"]), r["m"]) if v is not None]
        out[r["file_id"]] = max(values) if values else None
    return out


LIVE_ORDER = 99_999_999_999_999  # a live file sorts after every rotated copy of its stream
HEAD_BYTES = 4096
EXCLUDED_NAMES = ("truth.jsonl", "manifest.json", "bench-plan.json", "*.md", ".*", "_SUCCESS", "*.crc")

_ROTATION = re.compile(
    r"^(?P<base>.+?)\.(?P<suffix>\d{4}-\d{2}-\d{2}(?:-\d{2}(?:-\d{2})?)?|\d{1,4})$"
)


class InputError(ValueError):
    """A bad input path: reported as one line, exit code 2."""


@dataclass(frozen=True)
class InputFile:
    """One collected file as the driver sees it (a row of the file plan)."""

    source_file: str
    file_name: str
    cluster_id: str
    host_id: int | None
    stream: str  # log name without rotation / copy suffix and .gz
    log_kind: str
    file_order: int
    compressed: bool
    size_bytes: int  # decompressed
    content_sha256: str
    file_id: str


@dataclass(frozen=True)
class ReadTask:
    """Which bytes of a file to read this run."""

    file_id: str
    source_file: str
    file_name: str
    cluster_id: str
    host_id: int | None
    file_order: int
    log_kind: str
    compressed: bool
    start_byte: int
    start_line: int  # line number of the first line read (1-based)
    end_byte: int  # read up to here: bytes appended after planning wait for the next run


# --- driver side: discovery and naming ----------------------------------------------------------


def discover(inputs: list[str]) -> list[Path]:
    """Every regular file under ``inputs`` (sorted), skipping lake and simulator side files."""
    found: list[Path] = []
    for raw in inputs:
        path = Path(raw)
        if not path.exists():
            raise InputError(f"input path not found: {raw}")
        if not os.access(path, os.R_OK):
            raise InputError(f"input path not readable: {raw}")
        candidates = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for candidate in candidates:
            parts = candidate.relative_to(path).parts if candidate != path else (candidate.name,)
            if any(part == "_delta_log" or part.startswith(".") for part in parts[:-1]):
                continue
            if any(fnmatch.fnmatch(candidate.name, pattern) for pattern in EXCLUDED_NAMES):
                continue
            found.append(candidate)
    return sorted(set(found))


def _open(path: Path, compressed: bool):
    return gzip.open(path, "rb") if compressed else open(path, "rb")


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _hash_and_head(path: Path, compressed: bool) -> tuple[str, int, bytes]:
    digest = hashlib.sha256()
    size = 0
    head = b""
    try:
        with _open(path, compressed) as fh:
            while chunk := fh.read(1 << 20):
                if len(head) < HEAD_BYTES:
                    head += chunk[: HEAD_BYTES - len(head)]
                digest.update(chunk)
                size += len(chunk)
    except (OSError, EOFError) as err:  # truncated gzip: keep what decompressed
        log.warning("%s: read stopped early (%s)", path, err)
    return digest.hexdigest(), size, head


def _prefix_sha(path: Path, compressed: bool, length: int) -> str:
    digest = hashlib.sha256()
    remaining = length
    with _open(path, compressed) as fh:
        while remaining > 0 and (chunk := fh.read(min(1 << 20, remaining))):
            digest.update(chunk)
            remaining -= len(chunk)
    return digest.hexdigest()


def _rotation(name: str) -> tuple[str, int]:
    """(stream name, order) from a rotated/copied file name; live files sort last."""
    copied = copy_time(name)
    if copied is not None:
        return base_file_name(name), int(copied.strftime("%Y%m%d%H%M%S"))
    bare = name[:-3] if name.endswith(".gz") else name
    match = _ROTATION.match(bare)
    if match and not bare.endswith((".log", ".txt")):
        suffix = match["suffix"]
        if "-" in suffix:
            digits = suffix.replace("-", "")
            return match["base"], int(digits.ljust(14, "0"))
        # log4j RollingFileAppender: .1 is the newest rotated file, higher numbers are older.
        return match["base"], -int(suffix)
    return bare, LIVE_ORDER


# Content first (spec "Collected input"): the logger a file's lines are written with names the log.
_LOGGER_KINDS = (
    ("(kafka.request.logger)", "request"),
    ("(state.change.logger)", "state-change"),
    ("(kafka.controller.", "controller"),
    ("(org.apache.kafka.controller.", "controller"),
)
_NAME_KINDS = (
    ("state-change", "state-change"),
    ("controller", "controller"),
    ("request", "request"),
    ("server", "server"),
    ("redpanda", "redpanda"),
)


def _log_kind(stream: str, head: str) -> str:
    """Which log a text file is: by the loggers in its first lines, else by its name."""
    from epoch_audit.bronze.records import SEASTAR_START

    first_lines = head.splitlines()[:50]
    for marker, kind in _LOGGER_KINDS:
        hits = sum(marker in line for line in first_lines)
        if hits and hits * 2 >= sum(bool(line.strip()) and line[:1] in "[0123456789\"" for line in first_lines):
            return kind
    seastar = re.compile(SEASTAR_START.lstrip("^"))
    if any(seastar.search(line) for line in first_lines):
        return "redpanda"
    name = stream.lower()
    for marker, kind in _NAME_KINDS:
        if marker in name:
            return kind
    return "server" if any(line.startswith("[") for line in first_lines) else "log"


def describe(path: Path, config: AppConfig) -> InputFile:
    """Name one file: cluster, host, stream, order, format, content hash and identity."""
    posix = path.as_posix()
    cluster_match = re.search(config.ingest.cluster_pattern, posix)
    cluster_id = cluster_match.group(1) if cluster_match else config.ingest.cluster_id
    if not cluster_id:
        cluster_id = "default"
    # The innermost host segment names the host (a retry folder may sit above it).
    host_matches = list(re.finditer(config.ingest.host_pattern, posix))
    host_id = int(host_matches[-1].group(1)) if host_matches else None
    compressed = _is_gzip(path)
    content_sha, size, head = _hash_and_head(path, compressed)
    head_text = head.decode("utf-8", errors="replace")
    name = path.name
    stream, order = _rotation(name)
    kind = detect_file_kind(name, head_text) or _log_kind(stream, head_text)
    first_line = head.split(b"\n", 1)[0]
    identity = "|".join([cluster_id, str(host_id), stream, hashlib.sha256(first_line).hexdigest()])
    if kind not in ("state-change", "controller", "server", "request", "redpanda", "log"):
        # File-level formats are rewritten wholesale (checkpoints, dumps): every copy is its own
        # evidence, identified by its name and content.
        # Identity includes the path below the host folder: every partition directory has its own
        # (often byte-identical) checkpoint, and a retry copy of the host folder keeps that path.
        below_host = posix[host_matches[-1].end():] if host_matches else posix
        identity = "|".join([cluster_id, str(host_id), below_host.lstrip("/"), content_sha])
    return InputFile(
        source_file=posix,
        file_name=name,
        cluster_id=cluster_id,
        host_id=host_id,
        stream=stream,
        log_kind=kind,
        file_order=order,
        compressed=compressed,
        size_bytes=size,
        content_sha256=content_sha,
        file_id=hashlib.sha256(identity.encode()).hexdigest(),
    )


@dataclass
class FilePlan:
    """What this run reads, and what it skips and why."""

    tasks: list[ReadTask]
    files: list[InputFile]
    skipped: list[tuple[InputFile, str]]  # (file, reason: unchanged | duplicate)


def plan_reads(files: list[InputFile], consumed: dict[str, dict]) -> FilePlan:
    """Decide which bytes of which file to read, given what earlier runs consumed per identity."""
    tasks: list[ReadTask] = []
    skipped: list[tuple[InputFile, str]] = []
    by_identity: dict[str, list[InputFile]] = {}
    for f in files:
        by_identity.setdefault(f.file_id, []).append(f)
    for file_id in sorted(by_identity):
        copies = sorted(by_identity[file_id], key=lambda f: (-f.size_bytes, f.source_file))
        chosen = copies[0]  # the longest copy holds every other copy's bytes
        for dup in copies[1:]:
            skipped.append((dup, "duplicate"))
        before = consumed.get(file_id)
        start_byte, start_line = 0, 1
        if before is not None:
            same_prefix = before["consumed_bytes"] <= chosen.size_bytes and _prefix_sha(
                Path(chosen.source_file), chosen.compressed, before["consumed_bytes"]
            ) == before["prefix_sha256"]
            if same_prefix and before["consumed_bytes"] == chosen.size_bytes:
                skipped.append((chosen, "unchanged"))
                continue
            if same_prefix:
                start_byte, start_line = before["consumed_bytes"], before["consumed_lines"] + 1
            else:
                log.warning("%s: content differs from what was ingested for it before", chosen.source_file)
                skipped.append((chosen, "conflicting"))
                continue
        tasks.append(
            ReadTask(
                file_id=file_id,
                source_file=chosen.source_file,
                file_name=chosen.file_name,
                cluster_id=chosen.cluster_id,
                host_id=chosen.host_id,
                file_order=chosen.file_order,
                log_kind=chosen.log_kind,
                compressed=chosen.compressed,
                start_byte=start_byte,
                start_line=start_line,
                end_byte=chosen.size_bytes,
            )
        )
    return FilePlan(tasks=tasks, files=files, skipped=skipped)


# --- executor side: bytes -> lines ---------------------------------------------------------------

# Where a line comes from: carried on every task and every line row.
_PROVENANCE_FIELDS = [
    StructField("file_id", StringType()),
    StructField("source_file", StringType()),
    StructField("file_name", StringType()),
    StructField("cluster_id", StringType()),
    StructField("host_id", IntegerType()),
    StructField("file_order", LongType()),
    StructField("log_kind", StringType()),
]

TASK_SCHEMA = StructType(
    _PROVENANCE_FIELDS
    + [
        StructField(name, LongType() if name != "compressed" else StringType())
        for name in ("compressed", "start_byte", "start_line", "end_byte", "max_line_chars", "batch_lines")
    ]
)

LINES_SCHEMA = StructType(
    _PROVENANCE_FIELDS
    + [
        StructField("line_number", LongType()),
        StructField("text", StringType()),
        StructField("line_chars", LongType()),
    ]
)


READ_BLOCK_BYTES = 8 << 20  # the reader streams files: memory stays bounded by blocks, not by file size
BATCH_BYTES = 16 << 20  # an Arrow batch is cut at batch_lines lines or this many characters


def _task_lines(task: dict) -> Iterator[tuple[str, int]]:
    """(text, characters) of each line in a task's byte range, read block by block.

    Decoding is UTF-8 with replacement (counted later by the U+FFFD marker); a line longer than
    ``max_line_chars`` is cut there (and later quarantined) and never held whole in memory.
    Splitting bytes at ``\\n`` is safe: 0x0A never occurs inside a multi-byte UTF-8 sequence.
    """
    limit = task["max_line_chars"]
    keep_bytes = 4 * limit  # enough bytes for ``limit`` characters
    remaining = task["end_byte"] - task["start_byte"]
    opener = gzip.open if task["compressed"] == "true" else open
    carry, carry_dropped = b"", 0  # the unfinished last line of the previous block

    def line(raw: bytes, dropped: int) -> tuple[str, int]:
        text = raw.decode("utf-8", errors="replace")
        chars = len(text) + dropped
        return (text if chars <= limit else text[:limit]), chars

    try:
        with opener(task["source_file"], "rb") as fh:
            fh.seek(task["start_byte"])
            while remaining > 0:
                block = fh.read(min(READ_BLOCK_BYTES, remaining))
                if not block:
                    break
                remaining -= len(block)
                parts = block.split(b"\n")
                parts[0] = carry + parts[0]
                carry = parts.pop()
                for k, raw in enumerate(parts):
                    yield line(raw, carry_dropped if k == 0 else 0)
                    if k == 0:
                        carry_dropped = 0
                if len(carry) > keep_bytes:
                    carry_dropped += len(carry) - keep_bytes
                    carry = carry[:keep_bytes]
    except (OSError, EOFError):
        pass  # unreadable or truncated: the lines read so far count, the rest waits for a re-run
    if carry or carry_dropped:
        yield line(carry, carry_dropped)  # a last line without its final newline


def _read_lines(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: stream each task's lines out as Arrow batches."""
    arrow_schema = pa.schema(
        [
            ("file_id", pa.string()), ("source_file", pa.string()), ("file_name", pa.string()),
            ("cluster_id", pa.string()), ("host_id", pa.int32()), ("file_order", pa.int64()),
            ("log_kind", pa.string()), ("line_number", pa.int64()), ("text", pa.large_string()),
            ("line_chars", pa.int64()),
        ]
    )

    def emit(task: dict, first: int, texts: list[str], lengths: list[int]) -> pa.RecordBatch:
        n = len(texts)
        return pa.RecordBatch.from_arrays(
            [
                pa.array([task["file_id"]] * n, pa.string()),
                pa.array([task["source_file"]] * n, pa.string()),
                pa.array([task["file_name"]] * n, pa.string()),
                pa.array([task["cluster_id"]] * n, pa.string()),
                pa.array([task["host_id"]] * n, pa.int32()),
                pa.array([task["file_order"]] * n, pa.int64()),
                pa.array([task["log_kind"]] * n, pa.string()),
                pc.add(pa.array(range(n), pa.int64()), first),
                pa.array(texts, pa.large_string()),
                pa.array(lengths, pa.int64()),
            ],
            schema=arrow_schema,
        )

    for batch in batches:
        for task in batch.to_pylist():
            step = task["batch_lines"]
            first = task["start_line"]
            texts: list[str] = []
            lengths: list[int] = []
            size = 0
            for text, chars in _task_lines(task):
                texts.append(text)
                lengths.append(chars)
                size += len(text)
                if len(texts) >= step or size >= BATCH_BYTES:
                    yield emit(task, first, texts, lengths)
                    first += len(texts)
                    texts, lengths, size = [], [], 0
            if texts:
                yield emit(task, first, texts, lengths)


def read_lines(spark: SparkSession, tasks: list[ReadTask], config: AppConfig) -> DataFrame:
    """One row per physical line of every task's new bytes."""
    rows = [
        (
            t.file_id, t.source_file, t.file_name, t.cluster_id, t.host_id, t.file_order, t.log_kind,
            "true" if t.compressed else "false", t.start_byte, t.start_line, t.end_byte,
            config.ingest.max_line_chars, config.ingest.batch_lines,
        )
        for t in tasks
    ]
    task_df = spark.createDataFrame(rows, TASK_SCHEMA)
    # A few files per task: one Python task per file costs more in scheduling than in reading.
    task_df = task_df.repartition(max(1, min(len(rows) // 4, 32)), "file_id")
    return task_df.mapInArrow(_read_lines, LINES_SCHEMA)


# --- the stage ----------------------------------------------------------------------------------

LOG_KINDS = ("state-change", "controller", "server", "request", "redpanda", "log")


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

    def to_dict(self) -> dict:
        return asdict(self)


def _consumed(storage: LakeStorage) -> dict[str, dict]:
    if not storage.exists(FILES_TABLE):
        return {}
    table = storage.read(FILES_TABLE)
    # max_event_micros: since the own_time column (older lakes: unknown, null)
    micros = F.col("max_event_micros") if "max_event_micros" in table.columns else F.lit(None).cast("long")
    rows = table.select(
        "file_id", "consumed_bytes", "consumed_lines", "prefix_sha256", micros.alias("max_event_micros")
    )
    return {r["file_id"]: r.asDict() for r in rows.collect()}  # one row per file: small


# Continuation lines (stack traces, multi-line messages) up to this count are broadcast to the
# record starts instead of shuffling every record's text to meet them.
BROADCAST_CONTINUATION_LINES = 200_000


def stage_parsed(
    spark: SparkSession, lines: DataFrame, source_time_zone: str, staging: str, timer: StepTimer | None = None
) -> DataFrame:
    """Frame log lines into records and run every parser, staging each step as Parquet; return
    the union of the parsers' outputs. ``lines`` are staged marked lines (``mark_lines``).

    One Spark action per parser keeps each plan small (a union of all parser plans is large
    enough to exhaust a 2 GB driver while it is optimised), and each is planned exactly once.
    The framing (line -> record start) is staged too: ``line_statuses`` reads it.
    """
    is_log = F.col("log_kind").isin(*LOG_KINDS)
    log_lines = unmark(lines.where(is_log & ~_unparseable()))
    timer = timer or StepTimer()
    record_framing(log_lines).write.mode("overwrite").parquet(f"{staging}/framing")
    framing = spark.read.parquet(f"{staging}/framing")
    continuation_lines = framing.where(F.col("line_format").isNull() & F.col("record_line").isNotNull()).count()
    timer.lap("framing")
    records, _ = group_records(
        log_lines, source_time_zone, framing=framing,
        broadcast_continuations=continuation_lines <= BROADCAST_CONTINUATION_LINES,
    )
    records.write.mode("overwrite").parquet(f"{staging}/records")
    records = spark.read.parquet(f"{staging}/records")
    timer.lap("records")
    file_lines = lines.where(~is_log & ~_unparseable())
    outputs = record_parser_outputs(records) + file_parser_outputs(file_lines, source_time_zone)
    for name, parsed in outputs:
        parsed.write.mode("overwrite").parquet(f"{staging}/parsed/{name}")
        timer.lap(f"parser:{name}")
    return spark.read.schema(EVENT_SCHEMA).parquet(*[f"{staging}/parsed/{name}" for name, _ in outputs])


def line_statuses(lines: DataFrame, parsed: DataFrame, framing: DataFrame) -> DataFrame:
    """Every line's status (parsed | irrelevant | malformed) from the parse outcomes and the
    staged framing (no text is shuffled: see ``epoch_audit.bronze.accounting``)."""
    is_log = F.col("log_kind").isin(*LOG_KINDS)
    outcomes = parsed.select("file_id", "line_number", "event_type", "details")
    return line_status_for_logs(lines.where(is_log), framing, outcomes).unionByName(
        line_status_for_files(lines.where(~is_log), outcomes)
    )


def quarantine_lines(status: DataFrame, lines: DataFrame) -> DataFrame:
    """Malformed lines with their text. Usually few: then they are broadcast and the lines are
    not shuffled to meet them."""
    malformed = status.where(F.col("status") == "malformed").select("file_id", "source_file", "line_number", "reason")
    if malformed.count() <= BROADCAST_CONTINUATION_LINES:
        malformed = F.broadcast(malformed)
    text = lines.select("file_id", "line_number", F.substring("text", 1, 10_000).alias("raw"))
    return malformed.join(text, ["file_id", "line_number"])


def _unparseable() -> Column:
    """Lines no parser should see: cut at max_line_chars, or binary."""
    return (F.col("line_chars") > F.length("text")) | (F.instr("text", "\u0000") > 0)


def in_window(path: Path, window: tuple[float | None, float | None]) -> bool:
    """Whether the file's modification time lies in ``window`` ([start, end), epoch seconds)."""
    start, end = window
    mtime = path.stat().st_mtime
    return (start is None or mtime >= start) and (end is None or mtime < end)


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
    _remove_staging(f"{storage.lake.rstrip('/')}/_staging")
    paths = discover(inputs)
    outside = 0
    if window != (None, None):
        kept = [p for p in paths if in_window(p, window)]
        outside, paths = len(paths) - len(kept), kept
    files = [describe(p, config) for p in paths]
    consumed = _consumed(storage)
    plan = plan_reads(files, consumed)
    skipped_counts: dict[str, int] = {"outside_window": outside} if outside else {}
    for _, reason in plan.skipped:
        skipped_counts[reason] = skipped_counts.get(reason, 0) + 1
    log.info("ingest: %d files, %d to read, skipped %s", len(files), len(plan.tasks), skipped_counts)
    timer.lap("plan")
    if not plan.tasks:
        return IngestResult(len(files), 0, skipped_counts, 0, 0, 0, 0, timer.seconds)

    # Stage each step's output once as Parquet: the parser plan is planned and run exactly once,
    # and nothing depends on cache() (unavailable on serverless).
    staging = f"{storage.lake.rstrip('/')}/_staging/{run_id}"
    is_log = F.col("log_kind").isin(*LOG_KINDS)
    marked = mark_lines(read_lines(spark, plan.tasks, config), is_log & ~_unparseable())
    marked.write.mode("overwrite").parquet(f"{staging}/lines")
    lines = spark.read.parquet(f"{staging}/lines")
    timer.lap("read_and_mark_lines")
    parsed = stage_parsed(spark, lines, config.ingest.source_time_zone, staging, timer)
    framing = spark.read.parquet(f"{staging}/framing")
    line_statuses(lines, parsed, framing).write.mode("overwrite").parquet(f"{staging}/status")
    status = spark.read.parquet(f"{staging}/status")
    timer.lap("line_statuses")

    events = parsed.where(F.col("event_type") != MALFORMED)
    seeds = {t.file_id: consumed[t.file_id]["max_event_micros"] for t in plan.tasks if t.file_id in consumed}
    seeds = {k: v for k, v in seeds.items() if v is not None}
    file_max = file_max_times(events, seeds)
    from epoch_audit.stages.carry import drop_outdated_carries

    # Traffic older than a cluster's carried horizon makes its carried traffic incomplete: dropped
    # before the events land (a run killed in between then re-checks the whole history).
    drop_outdated_carries(storage, events)
    storage.upsert(EVENTS_TABLE, bronze_layout(storage, events, seeds), ["event_id"])
    timer.lap("bronze_events")
    quarantine = quarantine_lines(status, lines)
    storage.upsert(
        QUARANTINE_TABLE, quarantine.withColumn("run_id", F.lit(run_id)), ["file_id", "line_number"]
    )
    timer.lap("quarantine")
    per_file = file_accounting(status).collect()  # one row per file read: small
    counts = {r["file_id"]: r.asDict() for r in per_file}

    accounting_rows = []
    file_rows = []
    by_path = {f.source_file: f for f in files}
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
        file_rows.append(
            (
                task.file_id, task.source_file, f.cluster_id, f.host_id, f.stream, f.log_kind, f.file_order,
                task.end_byte, task.start_line - 1 + read_n, f.content_sha256, run_id, file_max.get(task.file_id),
            )
        )
    storage.upsert(
        ACCOUNTING_TABLE,
        spark.createDataFrame(accounting_rows, ACCOUNTING_SCHEMA),
        ["file_id", "start_line"],
    )
    # Written last: it is what the next run trusts as "already consumed".
    _upgrade_files_table(storage)
    storage.upsert(FILES_TABLE, spark.createDataFrame(file_rows, FILES_SCHEMA), ["file_id"])
    _remove_staging(staging)
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
    )


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
        # the lines it grows by (epoch_audit.stages.ingest.with_file_own_time)
        StructField("max_event_micros", LongType()),
    ]
)


def _upgrade_files_table(storage: LakeStorage) -> None:
    """A files table written before ``max_event_micros``: the column added (null: unknown)."""
    if storage.exists(FILES_TABLE) and "max_event_micros" not in storage.columns(FILES_TABLE):
        old = storage.read(FILES_TABLE).withColumn("max_event_micros", F.lit(None).cast("long"))
        storage.overwrite(FILES_TABLE, old.select(*[f.name for f in FILES_SCHEMA.fields]))


def accounting_rows_dicts(rows: list[tuple]) -> list[dict]:
    names = [f.name for f in ACCOUNTING_SCHEMA.fields]
    return [dict(zip(names, r, strict=True)) for r in rows]


def _remove_staging(staging: str) -> None:
    """Staged Parquet is scratch space; local lakes clean it up (object stores: lifecycle rules)."""
    import shutil

    if "://" not in staging or staging.startswith("file:"):
        shutil.rmtree(staging.removeprefix("file:"), ignore_errors=True)
