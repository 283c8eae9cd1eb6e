"""One read task's running state in the ingest pass (:mod:`epoch_audit.bronze.single_pass`): its
counts, the running max event time that ``own_time`` carries, the vouched event ids, and the rows
to emit; and what every record goes through (its parsers, its lines' status)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache

import pyarrow as pa
from pyspark.sql.types import DateType, StringType, StructField, StructType, TimestampType

from epoch_audit.bronze.accounting import QUARANTINE_TEXT_CHARS, line_problem, outcome_status
from epoch_audit.bronze.families import record_family
from epoch_audit.bronze.framing import redact
from epoch_audit.bronze.parsers import kafka_log4j, redpanda, request_log
from epoch_audit.bronze.parsers.request_log_arrow import REQUEST_LOGGER
from epoch_audit.bronze.parsers.rows import MALFORMED, Row, arrow_type, finish_row
from epoch_audit.contracts.events import EVENT_SCHEMA, TRAFFIC_TYPES

# A line yielding several events stores its text once: the first event keeps the whole ``raw``,
# the others of a line longer than FANOUT_RAW_LIMIT keep a prefix and point to the first.
FANOUT_RAW_LIMIT = 1000
FANOUT_RAW_PREFIX = 24  # the line's time stamp: the pointer names where the rest is
_MICROS_PER_DAY = 86_400_000_000
_EPOCH = datetime(1970, 1, 1)
_EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
VOUCHED_IDS_KEPT = 250_000  # per task: about 25 MB of a Python worker's memory at most

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
        yield {**provenance(record), "line_number": record["line_number"], "event_type": MALFORMED,
               "details": {"reason": record["problem"]}}
        return
    request = is_request_log_record(record)
    if record["line_format"] in ("kafka", "strimzi", "csv") and not request:
        yield from kafka_log4j.parse_record(record)
    if request:
        yield from request_log.parse_record(record)
    if record["line_format"] == "redpanda":
        yield from redpanda.parse_record(record)


PROVENANCE = ("file_id", "source_file", "cluster_id", "host_id", "file_order", "log_kind")


def provenance(row: Row) -> Row:
    return {k: row[k] for k in PROVENANCE}


def epoch_micros(value: datetime) -> int:
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
                micros = epoch_micros(when)
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
            row["raw"] = fanout_raw(row["raw"], row["sub_index"] or 0)
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

    def take(self) -> list[Row] | tuple[()]:
        """The rows accumulated so far (handed on while the file is still being read)."""
        if not self.out:  # asked after every line: no new list when there is nothing to hand on
            return ()
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


def fanout_raw(raw: str | None, sub_index: int) -> str | None:
    """The ``raw`` an event keeps: a later event of a long line points to the first's text."""
    if sub_index > 0 and raw is not None and len(raw) > FANOUT_RAW_LIMIT:
        return raw[:FANOUT_RAW_PREFIX] + f"…[+{len(raw) - FANOUT_RAW_PREFIX} chars: see sub_index 0]"
    return raw


def settle_record(state: FilePass, row: Row, lines: list[tuple[int, str]]) -> None:
    """A record through every parser that reads it, and its lines' status."""
    has_event, reason = state.emit_events(list(parse_record(row)))
    status = outcome_status(has_event, reason)
    if status == "irrelevant":
        state.irrelevant_families[record_family(row["logger"], row["message"])] += len(lines)
    for number, text in lines:
        state.status(number, text, status, reason)

Line = tuple[int, str, int, str | None]  # (line number, text, characters as read, reader's problem)
