"""The ingest pass: raw bytes of each planned file -> bronze events, quarantined lines and the
file's line counts, in ONE ``mapInArrow`` over the read tasks (issue #20).

Per task (one file's new byte range), in a Python worker: read the lines (``bronze.read``),
redact secrets, frame log records (``bronze.framing``), hand each record or file line to its
parser's pure function, finish the rows (``bronze.parsers.rows``), and count every line as parsed,
irrelevant or malformed with the rules of ``bronze.accounting``. No query plan grows with the
number of templates, nothing is staged between steps, and no text is shuffled.

Out come rows of four kinds (``row_kind``): ``event`` (a bronze row with its stored layout:
``event_date``, ``event_class``, ``own_time``), ``quarantine`` (a malformed line: its text, and its
reason in ``details``), ``file`` (one per task: its counts and the max event time so far) and
``irrelevant_family`` (a family of the file's irrelevant lines and their number). The three kinds
beside events carry their facts in ``details`` (:func:`side_facts` reads them back), so that every
row has the columns of a bronze event: staged by ``row_kind``, the event files are bronze's own.

On a local lake the workers write the staged events and quarantined lines themselves
(:func:`write_pass`, ``lake.staging.HiveParquetWriter``: the files Spark's write would leave, same
directories, types and statistics) and hand the JVM only the small rows; elsewhere Spark writes
what :func:`pass_rows` yields.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter, deque
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache, partial
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, DateType, LongType, StringType, StructField, StructType, TimestampType

from epoch_audit import objstore
from epoch_audit.bronze.accounting import QUARANTINE_TEXT_CHARS, line_problem, orphan_status, outcome_status
from epoch_audit.bronze.discover import ReadTask
from epoch_audit.bronze.families import line_family, record_family
from epoch_audit.bronze.framing import MarkedLine, Record, frame_lines, mark, record_row, redact
from epoch_audit.bronze.parsers import (
    checkpoints,
    kafka_log4j,
    metadata_dump,
    redpanda,
    request_log,
    request_log_arrow,
    segment_dump,
)
from epoch_audit.bronze.parsers.rows import MALFORMED, Row, arrow_type, finish_row
from epoch_audit.bronze.read import TASK_SCHEMA, task_lines
from epoch_audit.config import AppConfig
from epoch_audit.contracts.events import EVENT_SCHEMA, TRAFFIC_TYPES
from epoch_audit.lake.staging import HiveParquetWriter, partition_parts, remove_unlisted
from epoch_audit.lake.tables import BRONZE_EVENTS_PARTITIONS
from epoch_audit.spark import default_parallelism

LOG_KINDS = ("state-change", "controller", "server", "request", "redpanda", "log")  # == bronze.discover.LOG_KINDS
# file kind -> its parser (one file's lines in order, the source time zone)
FILE_PARSERS = {
    "metadata-dump": lambda lines, zone: metadata_dump.parse_file(lines),
    "segment-dump": lambda lines, zone: segment_dump.parse_file(lines),
    # copy suffixes of checkpoint files are host-local times
    **{
        kind: checkpoints.parse_file_in_zone
        for kind in ("leader-epoch-checkpoint", "replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                     "log-start-offset-checkpoint", "partition-metadata")
    },
}
REQUEST_LOGGER = request_log_arrow.REQUEST_LOGGER
_JSON_REQUEST = "Completed request:{"
# single-line request records read by Arrow a batch at a time: up to REQUEST_BATCH, from REQUEST_BATCH_MIN
REQUEST_BATCH = 4096
REQUEST_BATCH_MIN = 16
# A line yielding several events stores its text once: the first event keeps the whole ``raw``,
# the others of a line longer than FANOUT_RAW_LIMIT keep a prefix and point to the first.
FANOUT_RAW_LIMIT = 1000
FANOUT_RAW_PREFIX = 24  # the line's time stamp: the pointer names where the rest is
_MICROS_PER_DAY = 86_400_000_000
_EPOCH = datetime(1970, 1, 1)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
VOUCHED_IDS_KEPT = 250_000  # per task: about 25 MB of a Python worker's memory at most
BATCH_ROWS = 10_000  # an output Arrow batch is cut at this many rows or BATCH_CHARS characters of text
BATCH_CHARS = 16 << 20

# unvouched_ids: events of the task whose id this pass cannot vouch is unique in it (see FilePass)
COUNT_COLUMNS = ("lines_read", "parsed", "irrelevant", "malformed", "bad_utf8", "redacted", "unvouched_ids",
                 "max_event_micros")
PASS_SCHEMA = StructType(
    [StructField("row_kind", StringType())]
    # nullable: a quarantine or file row has no event id
    + [StructField(f.name, f.dataType, True) for f in EVENT_SCHEMA.fields]
    + [
        StructField("event_date", DateType()),
        StructField("event_class", StringType()),
        StructField("own_time", TimestampType()),
    ]
)
PASS_ARROW_SCHEMA = pa.schema([pa.field(f.name, arrow_type(f.dataType)) for f in PASS_SCHEMA.fields])
# The pass's rows staged in bronze's layout, by kind: the event files become bronze's own
STAGED_PARTITIONS = ("row_kind", *BRONZE_EVENTS_PARTITIONS)
STAGED_FILE_KIND = "staged_file"  # a row naming a file the pass wrote (source_file: its relative path)


def is_request_log_record(record: Row) -> bool:
    """Request-logger records: logger ``kafka.request.logger``, or its ``%c{1}`` short name ``logger``
    (the Strimzi log4j2 pattern, §8) on a ``Completed request:`` message — ``state.change.logger``
    shortens to ``logger`` too, so the name alone cannot tell them apart. A line cut inside its JSON
    has lost its ``(logger)`` tail: a ``Completed request:`` message without a logger is one too
    (the request-log parser quarantines it as truncated)."""
    logger = record["logger"] or ""
    return logger == REQUEST_LOGGER or (
        logger in ("logger", "") and (record["message"] or "").startswith("Completed request:")
    )


def parse_record(record: Row) -> Iterator[Row]:
    """Every parser that reads this record, or its problem: a record whose start holds an invalid
    value (a bad timestamp, an out-of-range shard) reaches no parser and is quarantined with it.
    Adding a parser family: its pure function here (records) or in FILE_PARSERS (file kinds)."""
    if record["problem"] is not None:
        yield {**_provenance(record), "line_number": record["line_number"], "event_type": MALFORMED,
               "details": {"reason": record["problem"]}}
        return
    request = is_request_log_record(record)
    if record["line_format"] in ("kafka", "strimzi", "csv") and not request:
        yield from kafka_log4j.parse_record(record)
    if request:
        yield from request_log.parse_record(record)
    if record["line_format"] == "redpanda":
        yield from redpanda.parse_record(record)


_PROVENANCE = ("file_id", "source_file", "cluster_id", "host_id", "file_order", "log_kind")


def _provenance(row: Row) -> Row:
    return {k: row[k] for k in _PROVENANCE}


def _micros(value: datetime) -> int:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class FilePass:
    """One task's running state: counts, the running max event time, and the rows to emit."""

    def __init__(self, task: Row, line_statuses: list[tuple[int, str, str | None]] | None = None) -> None:
        self.task = task
        self.line_statuses = line_statuses
        self.counts = dict.fromkeys(COUNT_COLUMNS[:-1], 0)
        seed = task.get("seed_micros")
        self.max_micros: int | None = seed
        self._own_micros: int | None = None  # the max the cached own_time was made from
        self._own_time: datetime | None = None
        self.out: list[Row] = []
        self.irrelevant_families: Counter[str] = Counter()
        # An event id hashes (file, line_number, sub_index) and a task reads one file: its ids are
        # unique when no (line_number, sub_index) repeats. Kept for up to VOUCHED_IDS_KEPT events
        # (a file-level parser may emit a line's events after later lines'); past that, unvouched.
        self._id_keys: set[tuple[int | None, int | None]] | None = set()

    # -- lines ---------------------------------------------------------------------------------
    def line_facts(self, text: str, chars: int, read_problem: str | None) -> tuple[str, str | None]:
        """Redact, count bad UTF-8 / redactions, and say why the line is unreadable (or None)."""
        redacted, n = redact(text)
        self.counts["lines_read"] += 1
        self.counts["redacted"] += n
        if "\ufffd" in redacted:
            self.counts["bad_utf8"] += 1
        # the length as read moves with the redaction: a cut line still shows as cut, an uncut one not
        return redacted, line_problem(redacted, chars + len(redacted) - len(text), read_problem)

    def status(self, number: int, text: str, status: str, reason: str | None = None) -> None:
        self.counts[status] += 1
        if self.line_statuses is not None:
            self.line_statuses.append((number, status, reason))
        if status == "malformed":
            self.out.append({
                "row_kind": "quarantine", "file_id": self.task["file_id"], "source_file": self.task["source_file"],
                "line_number": number, "reason": reason, "raw": text[:QUARANTINE_TEXT_CHARS],
            })

    # -- events --------------------------------------------------------------------------------
    def emit_events(self, rows: list[Row]) -> tuple[bool, str | None]:
        """Finish and emit one line's / record's rows (sub_index order); return (has_event, reason)."""
        has_event, reason = False, None
        finished = [finish_row(r) for r in rows]
        if len(finished) > 1:
            finished.sort(key=_sub_index)
        for row in finished:
            if row["event_type"] == MALFORMED:
                if reason is None:
                    reason = (row["details"] or {}).get("reason") or "malformed"
                continue
            has_event = True
            when = row["event_time"]
            day = None
            if when is not None:
                micros = _micros(when)
                if self.max_micros is None or micros > self.max_micros:
                    self.max_micros = micros
                day = _day_of(micros // _MICROS_PER_DAY)
            if self.max_micros != self._own_micros:  # the running max moved: its timestamp once
                self._own_micros = self.max_micros
                self._own_time = None if self.max_micros is None else _from_micros(self.max_micros)
            self.vouch(row["line_number"], row["sub_index"])
            row["row_kind"] = "event"
            row["own_time"] = self._own_time
            row["event_date"] = day
            row["event_class"] = "traffic" if row["event_type"] in TRAFFIC_TYPES else "state"
            raw = row["raw"]
            if (row["sub_index"] or 0) > 0 and raw is not None and len(raw) > FANOUT_RAW_LIMIT:
                row["raw"] = raw[:FANOUT_RAW_PREFIX] + f"…[+{len(raw) - FANOUT_RAW_PREFIX} chars: see sub_index 0]"
            self.out.append(row)
        return has_event, reason

    def vouch(self, line: int | None, sub: int | None) -> None:
        """Count an event id this task cannot vouch for (see ``_id_keys``)."""
        keys = self._id_keys
        if keys is not None and (line, sub) not in keys and len(keys) < VOUCHED_IDS_KEPT:
            keys.add((line, sub))
            return
        # a repeated (line, sub_index), or a file with more events than kept: bronze's write checks
        self.counts["unvouched_ids"] += 1
        if keys is not None and len(keys) >= VOUCHED_IDS_KEPT:
            self._id_keys = None  # no more memory spent on a file that will be checked anyway

    def take(self) -> list[Row]:
        """The rows accumulated so far (handed on while the file is still being read)."""
        rows, self.out = self.out, []
        return rows

    def family_rows(self) -> list[Row]:
        """One ``irrelevant_family`` row per family of this file's irrelevant lines (``reason``: the family,
        ``lines_read``: its lines), summed over files by the ingest stage for the run summary."""
        return [{"row_kind": "irrelevant_family", "file_id": self.task["file_id"],
                 "source_file": self.task["source_file"], "reason": family, "lines_read": lines}
                for family, lines in self.irrelevant_families.items()]

    def file_row(self) -> Row:
        return {"row_kind": "file", "file_id": self.task["file_id"], "source_file": self.task["source_file"],
                **self.counts, "max_event_micros": self.max_micros}


def _from_micros(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def _sub_index(row: Row) -> int:
    return row["sub_index"] or 0


@lru_cache(maxsize=4096)
def _day_of(days: int) -> date:
    """The date ``days`` after 1970-01-01 (a file's events fall on a few days: cached)."""
    return date.fromordinal(_EPOCH_ORDINAL + days)


def _line_row(task: Row, number: int, text: str, chars: int) -> Row:
    return {
        "file_id": task["file_id"], "source_file": task["source_file"], "file_name": task["file_name"],
        "cluster_id": task["cluster_id"], "host_id": task["host_id"], "file_order": task["file_order"],
        "log_kind": task["log_kind"], "line_number": number, "text": text, "line_chars": chars, "problem": None,
    }


Line = tuple[int, str, int, str | None]  # (line number, text, characters as read, reader's problem)


def _log_file(state: FilePass, lines: Iterable[Line], zone: str, vectorised: bool = True) -> Iterator[Row]:
    task = state.task
    provenance = _provenance(task)
    texts: dict[int, str] = {}  # text of the lines of the record being framed (quarantine needs them)
    file = request_log_arrow.FileConstants(*(task[k] for k in _PROVENANCE)) if vectorised else None
    pending: list[tuple[Row, str]] = []  # single-line request records waiting for their Arrow batch

    def marked() -> Iterator[MarkedLine]:
        for number, raw_text, chars, read_problem in lines:
            text, problem = state.line_facts(raw_text, chars, read_problem)
            if problem is not None:
                state.status(number, text, "malformed", problem)
                continue
            inner, fmt, found = mark(text)
            texts[number] = text
            yield MarkedLine(number, inner, fmt, found)

    for item in frame_lines(marked()):
        if isinstance(item, MarkedLine):  # an orphan: before any record start
            _read_requests(state, pending, file)
            text = texts.pop(item.line_number)
            state.status(item.line_number, text, *orphan_status(text))
            yield from state.take()
            continue
        record: Record = item
        row = record_row(record, provenance, zone)
        if file is not None and not record.continuation and _batchable_request(row):
            pending.append((row, texts.pop(record.start.line_number)))
            if len(pending) >= REQUEST_BATCH:
                _read_requests(state, pending, file)
                yield from state.take()
            continue
        _read_requests(state, pending, file)
        numbers = (record.start.line_number, *record.continuation_lines)
        _settle_record(state, row, [(number, texts.pop(number)) for number in numbers])
        yield from state.take()
    _read_requests(state, pending, file)
    yield from state.take()


def _settle_record(state: FilePass, row: Row, lines: list[tuple[int, str]]) -> None:
    """A record through every parser that reads it, and its lines' status."""
    has_event, reason = state.emit_events(list(parse_record(row)))
    status = outcome_status(has_event, reason)
    if status == "irrelevant":
        state.irrelevant_families[record_family(row["logger"], row["message"])] += len(lines)
    for number, text in lines:
        state.status(number, text, status, reason)


def _batchable_request(row: Row) -> bool:
    """A one-line request-log record :mod:`~epoch_audit.bronze.parsers.request_log_arrow` may read."""
    message = row["message"]
    return (row["logger"] == REQUEST_LOGGER and row["problem"] is None and row["line_format"] != "redpanda"
            and message.startswith(_JSON_REQUEST) and message.endswith("}"))


def _read_requests(state: FilePass, pending: list[tuple[Row, str]], file: Any) -> None:
    """The waiting request records, in line order: those Arrow reads as one event each (their
    rows one Arrow batch), the others through the per-line parsers; ``pending`` is emptied."""
    if not pending:
        return
    parsed = []
    if len(pending) >= REQUEST_BATCH_MIN:  # below, the per-line parser is cheaper than Arrow's calls
        messages = [row["message"] for row, _ in pending]
        parsed = request_log_arrow.parse_batch(messages, request_log_arrow.eligible_apis(messages))
    read = {p for batch in parsed for p in batch.positions}
    own = [0] * len(pending)
    micros = [0] * len(pending)
    for i, (row, text) in enumerate(pending):
        if i not in read:
            _settle_record(state, row, [(row["line_number"], text)])
            continue
        micros[i] = when = _micros(row["event_time"])
        if state.max_micros is None or when > state.max_micros:
            state.max_micros = when
        own[i] = state.max_micros
        state.vouch(row["line_number"], 0)
        state.status(row["line_number"], text, "parsed")
    for batch in parsed:
        rows = [pending[p][0] for p in batch.positions]
        state.out.append(request_log_arrow.event_batch(
            batch, file, [r["line_number"] for r in rows], [micros[p] for p in batch.positions],
            [own[p] for p in batch.positions], [r["level"] for r in rows], [r["raw"] for r in rows],
            PASS_ARROW_SCHEMA))
    pending.clear()


def _dump_file(state: FilePass, lines: Iterable[Line], zone: str) -> Iterator[Row]:
    """A file-level format: lines to its parser in order; each line's status from the events at
    that line (parsers yield in line order, so a line is settled once a later line's rows come)."""
    task = state.task
    parse_file = FILE_PARSERS.get(task["log_kind"])
    pending: deque[tuple[int, str]] = deque()  # lines handed to the parser, not yet settled
    settled_events: dict[int, tuple[bool, str | None]] = {}

    def readable() -> Iterator[Row]:
        for number, raw_text, chars, read_problem in lines:
            text, problem = state.line_facts(raw_text, chars, read_problem)
            if problem is not None:
                state.status(number, text, "malformed", problem)
                continue
            pending.append((number, text))
            yield _line_row(task, number, text, len(text))

    def settle(before: int | None) -> None:
        while pending and (before is None or pending[0][0] < before):
            number, text = pending.popleft()
            has_event, reason = settled_events.pop(number, (False, None))
            status = outcome_status(has_event, reason)
            if status == "irrelevant":
                state.irrelevant_families[line_family(task["log_kind"], text)] += 1
            state.status(number, text, status, reason)

    if parse_file is None:
        for _ in readable():
            yield from state.take()
        settle(None)
        yield from state.take()
        return
    batch: list[Row] = []
    for row in parse_file(readable(), zone):
        if batch and row["line_number"] != batch[0]["line_number"]:
            _settle_line(state, batch, settled_events)
            settle(row["line_number"])
            batch = []
            yield from state.take()
        batch.append(row)
    if batch:
        _settle_line(state, batch, settled_events)
    settle(None)
    yield from state.take()


def _settle_line(state: FilePass, rows: list[Row], outcomes: dict[int, tuple[bool, str | None]]) -> None:
    number = rows[0]["line_number"]
    has_event, reason = state.emit_events(rows)
    before = outcomes.get(number, (False, None))
    outcomes[number] = (before[0] or has_event, before[1] if before[1] is not None else reason)


def task_items(
    task: Row, zone: str, line_statuses: list[tuple[int, str, str | None]] | None = None, vectorised: bool = True
) -> Iterator[Row | pa.RecordBatch]:
    """Every output row of one read task (events and quarantined lines as the file is read, then
    its file row); ``zone``: the source time zone of log time stamps. ``line_statuses``, when
    given, receives every line's (line number, status, reason): the audit trail the counts sum.
    Events read a batch at a time come as Arrow batches of ``PASS_ARROW_SCHEMA`` (``vectorised``;
    False reads every record by the per-line parsers)."""
    state = FilePass(task, line_statuses)
    numbered = (
        (task["start_line"] + k, text, chars, problem) for k, (text, chars, problem) in enumerate(task_lines(task))
    )
    if task["log_kind"] in LOG_KINDS:
        yield from _log_file(state, numbered, zone, vectorised)
    else:
        yield from _dump_file(state, numbered, zone)
    yield from state.family_rows()
    yield state.file_row()


def task_rows(
    task: Row, zone: str, line_statuses: list[tuple[int, str, str | None]] | None = None, vectorised: bool = True
) -> Iterator[Row]:
    """:func:`task_items` as rows only (an Arrow batch's events as the per-line parsers give them)."""
    for item in task_items(task, zone, line_statuses, vectorised):
        if isinstance(item, pa.RecordBatch):
            yield from batch_rows(item)
        else:
            yield item


def batch_rows(batch: pa.RecordBatch) -> Iterator[Row]:
    """An Arrow batch of pass rows as row dicts: naive UTC times, ``details`` a dict."""
    for row in batch.to_pylist():
        for name in ("event_time", "own_time"):
            if row[name] is not None:
                row[name] = row[name].astimezone(UTC).replace(tzinfo=None)
        if row["details"] is not None:
            row["details"] = dict(row["details"])
        yield row


def _with_facts_in_details(row: Row) -> Row:
    """A quarantine, file or family row with its reason and counts in ``details`` (strings)."""
    facts = {k: row.get(k) for k in ("reason", *COUNT_COLUMNS) if row.get(k) is not None}
    return {**row, "details": {k: v if isinstance(v, str) else str(v) for k, v in facts.items()}}


def side_facts(details: dict[str, str] | None) -> dict[str, object]:
    """The reason (``reason``) and counts (ints, None where absent) of a staged quarantine, file
    or family row, from its ``details``."""
    details = details or {}
    counts = {k: None if details.get(k) is None else int(details[k]) for k in COUNT_COLUMNS}
    return {"reason": details.get("reason"), **counts}


def _to_batch(rows: list[Row]) -> pa.RecordBatch:
    # Arrow's C++ converter walks the dicts (a key a row lacks is null, a details dict is a map, a
    # naive time is UTC), instead of one Python call per value (about 70 a row): 33 -> 19 us a
    # request-log row, 27 -> 6 a segment-dump row.
    return pa.RecordBatch.from_pylist(rows, schema=PASS_ARROW_SCHEMA)


def task_bins(
    tasks: list[ReadTask], config: AppConfig, seeds: dict[str, int | None], cores: int
) -> list[list[tuple]]:
    """The read tasks as ``TASK_SCHEMA`` + ``seed_micros`` tuples, packed by bytes into up to ``cores``
    bins (largest first into the lightest bin)."""
    bins: list[list[tuple]] = [[] for _ in range(min(cores, len(tasks)))]
    loads = [0] * len(bins)
    for t in sorted(tasks, key=lambda t: -(t.end_byte - t.start_byte)):
        lightest = loads.index(min(loads))
        loads[lightest] += t.end_byte - t.start_byte
        bins[lightest].append((
            t.file_id, t.source_file, t.file_name, t.cluster_id, t.host_id, t.file_order, t.log_kind,
            # resolved here: executors run in their own working directories (a URI is absolute)
            t.source_file if objstore.is_remote(t.source_file) else os.path.abspath(t.source_file),
            "true" if t.compressed else "false", t.start_byte, t.start_line, t.end_byte,
            config.ingest.max_line_chars, config.ingest.batch_lines, t.read_problem, seeds.get(t.file_id),
        ))
    return bins


def _bins_frame(
    spark: SparkSession, tasks: list[ReadTask], config: AppConfig, seeds: dict[str, int | None]
) -> DataFrame:
    """The tasks packed by bytes into one bin per core (:func:`task_bins`), each bin one input row:
    a local relation spreads its rows evenly over the cores, so the work is balanced without a
    shuffle and a core never waits for a Python worker per file."""
    bins = task_bins(tasks, config, seeds, default_parallelism(spark))
    task_type = StructType([*TASK_SCHEMA.fields, StructField("seed_micros", LongType())])
    return spark.createDataFrame([(b,) for b in bins], StructType([StructField("tasks", ArrayType(task_type))]))


def pass_rows(spark: SparkSession, tasks: list[ReadTask], config: AppConfig, seeds: dict[str, int | None]) -> DataFrame:
    """The pass over ``tasks`` (PASS_SCHEMA rows); ``seeds``: per file read from a later line on,
    the max event time of its earlier events (epoch microseconds), which ``own_time`` starts from."""
    body = partial(pass_batches, zone=config.ingest.source_time_zone)
    return _bins_frame(spark, tasks, config, seeds).mapInArrow(body, PASS_SCHEMA)


def _bin_items(batches: Iterable[pa.RecordBatch], zone: str) -> Iterator[Row | pa.RecordBatch]:
    for batch in batches:
        for task in (task for packed in batch.column("tasks").to_pylist() for task in packed):
            for item in task_items(task, zone):
                if isinstance(item, pa.RecordBatch) or item["row_kind"] == "event":
                    yield item
                else:
                    yield _with_facts_in_details(item)


def pass_batches(batches: Iterable[pa.RecordBatch], zone: str) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over bins of read tasks (``bronze.read.TASK_SCHEMA`` + ``seed_micros``)."""
    out: list[Row] = []
    chars = 0
    for item in _bin_items(batches, zone):
        if isinstance(item, pa.RecordBatch):
            yield item
            continue
        out.append(item)
        chars += len(item.get("raw") or "")
        if len(out) >= BATCH_ROWS or chars >= BATCH_CHARS:
            yield _to_batch(out)
            out, chars = [], 0
    if out:
        yield _to_batch(out)


def write_pass_batches(batches: Iterable[pa.RecordBatch], zone: str, staged_dir: str) -> Iterator[pa.RecordBatch]:
    """mapInArrow body that writes the pass's events and quarantined lines itself, as Spark's write
    of :func:`pass_batches` would stage them (``STAGED_PARTITIONS``), and returns only the small rows:
    the files' counts and families, and one ``staged_file`` row per Parquet file written. The JVM
    then neither converts, sorts nor encodes the rows (about 40 of 110 CPU seconds at 10^6 lines)."""
    file_schema = pa.schema([f for f in PASS_ARROW_SCHEMA if f.name not in STAGED_PARTITIONS])
    writer = HiveParquetWriter(staged_dir, PASS_ARROW_SCHEMA, STAGED_PARTITIONS, f"part-{uuid.uuid4().hex}")
    groups: dict[tuple, list[Row]] = {}
    chars: dict[tuple, int] = {}
    side: list[Row] = []
    for row in _bin_items(batches, zone):
        if isinstance(row, pa.RecordBatch):
            for key, part in partition_parts(row, STAGED_PARTITIONS):
                writer.write(key, part.select(file_schema.names))
            continue
        if row["row_kind"] not in ("event", "quarantine"):
            side.append(row)
            continue
        key = (row["row_kind"], row.get("cluster_id"), row.get("event_class"), row.get("event_date"))
        rows = groups.setdefault(key, [])
        rows.append(row)
        chars[key] = chars.get(key, 0) + len(row.get("raw") or "")
        if len(rows) >= BATCH_ROWS or chars[key] >= BATCH_CHARS:
            writer.write(key, pa.RecordBatch.from_pylist(rows, schema=file_schema))
            groups[key], chars[key] = [], 0
    for key, rows in groups.items():
        if rows:
            writer.write(key, pa.RecordBatch.from_pylist(rows, schema=file_schema))
    side += [{"row_kind": STAGED_FILE_KIND, "source_file": relative, "details": {"rows": str(n)}}
             for relative, n in writer.close()]
    for start in range(0, len(side), BATCH_ROWS):
        yield _to_batch(side[start:start + BATCH_ROWS])


def write_pass(
    spark: SparkSession, tasks: list[ReadTask], config: AppConfig, seeds: dict[str, int | None], staged_dir: str
) -> list[Row]:
    """The pass over ``tasks`` written under ``staged_dir`` (a local path, or a store the Python
    workers reach with ``objstore``) by its Python workers; returns its ``file`` and
    ``irrelevant_family`` rows. One Spark job; files no finished task names are removed."""
    # absolute: executors' Python workers run in their own working directories
    body = partial(write_pass_batches, zone=config.ingest.source_time_zone, staged_dir=objstore.listed_form(staged_dir))
    written = _bins_frame(spark, tasks, config, seeds).mapInArrow(body, PASS_SCHEMA).select(
        "row_kind", "file_id", "source_file", "details")
    rows = [r.asDict() for r in written.collect()]
    remove_unlisted(staged_dir, {r["source_file"] for r in rows if r["row_kind"] == STAGED_FILE_KIND})
    return [r for r in rows if r["row_kind"] != STAGED_FILE_KIND]
