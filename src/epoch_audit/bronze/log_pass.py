"""One log file's lines through the ingest pass (:mod:`epoch_audit.bronze.single_pass`): framed
into records (:mod:`epoch_audit.bronze.framing`), each record to its parsers, every line counted;
file-level formats (dumps, checkpoints) line by line through their file parser.

The request log's one-line FETCH and PRODUCE records wait for a batch that
:mod:`~epoch_audit.bronze.parsers.request_log_arrow` reads in Arrow. A chunk of lines with no
secret hint, no NUL, no carriage return and nothing but ASCII skips the framing's regexes for its
lines of the request log's own layout (``[<time>] <LEVEL> Completed request:{...}
(kafka.request.logger)``): what those regexes would find there is fixed by the layout."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import islice

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from epoch_audit.bronze.accounting import orphan_status, outcome_status
from epoch_audit.bronze.families import line_family
from epoch_audit.bronze.file_pass import (
    PASS_ARROW_SCHEMA,
    PROVENANCE,
    REQUEST_LOGGER,
    FilePass,
    Line,
    epoch_micros,
    fanout_raw,
    provenance,
    settle_record,
)
from epoch_audit.bronze.framing import MarkedLine, Record, local_time, mark, record_row
from epoch_audit.bronze.parsers import (
    checkpoints,
    metadata_dump,
    request_log_arrow,
    segment_dump,
    segment_dump_arrow,
)
from epoch_audit.bronze.parsers.arrow_rows import FileConstants, details_map, pass_batch
from epoch_audit.bronze.parsers.rows import Row
from epoch_audit.bronze.records import SECRET_HINTS

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
_JSON_REQUEST = "Completed request:{"
# single-line request records read by Arrow a batch at a time: up to REQUEST_BATCH, from REQUEST_BATCH_MIN
REQUEST_BATCH = 4096
REQUEST_BATCH_MIN = 16
_REQUEST_TAIL = " (" + REQUEST_LOGGER + ")"
# the request log's own layout up to its JSON (records.KAFKA_START's time stamp and levels)
_REQUEST_START = re.compile(
    r"\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) Completed request:\{", re.ASCII
)
_HINTS = "|".join(re.escape(hint) for hint in SECRET_HINTS)
# A secret hint (any case) or what request_log_arrow's guard looks for: a chunk with neither is
# redacted by nothing and holds no message that guard would stop (one RE2 pass for both)
_HINTS_OR_GUARDED = f"(?i:{_HINTS})|{request_log_arrow.GUARDED_RE2}"
_NO_TIME = np.iinfo(np.int64).min  # below every event time: no time yet


def _line_row(task: Row, number: int, text: str, chars: int) -> Row:
    return {
        "file_id": task["file_id"], "source_file": task["source_file"], "file_name": task["file_name"],
        "cluster_id": task["cluster_id"], "host_id": task["host_id"], "file_order": task["file_order"],
        "log_kind": task["log_kind"], "line_number": number, "text": text, "line_chars": chars, "problem": None,
    }


class _RequestLine:
    """A one-line record of the request log's layout, framed without the framing's regexes;
    ``plain``: its chunk holds nothing request_log_arrow's guard looks for."""

    __slots__ = ("level", "number", "plain", "text")

    def __init__(self, number: int, text: str, level: str, plain: bool) -> None:
        self.number, self.text, self.level, self.plain = number, text, level, plain


class _Waiting(list):
    """The request records waiting for their batch (``Pending`` entries); ``guarded``: how many of
    them come from no plain chunk (request_log_arrow's guard reads the batch unless none)."""

    __slots__ = ("guarded",)

    def __init__(self) -> None:
        super().__init__()
        self.guarded = 0


# a request record waiting for its batch: (line number, line text, raw, level, message, event
# time in epoch microseconds, its record row, or None for a _RequestLine's: made only if the
# per-line parser reads it)
Pending = tuple


@lru_cache(maxsize=1 << 16)
def _second_micros(second: str, zone: str) -> int | None:
    """Epoch microseconds of ``yyyy-MM-dd HH:mm:ss`` read in ``zone`` as ``framing.local_time`` reads
    it (None where it does not); a log's lines share their seconds, and a zone's offset changes on a
    whole second, so a line's time is its second's plus its milliseconds."""
    when = local_time(second + ",000", zone)
    return None if when is None else epoch_micros(when)


def _clean_chunk(texts: list[str]) -> bool:
    """Whether no line of ``texts`` holds a secret hint, a NUL, a carriage return or a non-ASCII
    character: redaction then changes nothing and Java's ``.`` matches every character."""
    joined = _ascii_text(texts)
    return joined is not None and not _matches(joined, _HINTS, ignore_case=True)


def _request_chunk(texts: list[str]) -> tuple[bool, bool]:
    """(clean: :func:`_clean_chunk`, plain: clean and no line holds what request_log_arrow's guard
    looks for) of a chunk of a request log's lines."""
    joined = _ascii_text(texts)
    if joined is None:
        return False, False
    if not _matches(joined, _HINTS_OR_GUARDED):
        return True, True
    return not _matches(joined, _HINTS, ignore_case=True), False


def _ascii_text(texts: list[str]) -> str | None:
    """``texts`` joined by newlines when ASCII without a NUL or a carriage return, else None."""
    joined = "\n".join(texts)
    return joined if joined.isascii() and "\r" not in joined and "\x00" not in joined else None


def _matches(text: str, pattern: str, ignore_case: bool = False) -> bool:
    return pc.match_substring_regex(pa.array([text]), pattern, ignore_case=ignore_case)[0].as_py()


def log_file(state: FilePass, lines: Iterable[Line], zone: str, vectorised: bool = True) -> Iterator[Row]:
    """A log file's lines (``vectorised``: the request log's records in Arrow batches, see the module)."""
    task = state.task
    prov = provenance(task)
    texts: dict[int, str] = {}  # text of the lines of the record being framed (quarantine needs them)
    file = FileConstants(*(task[k] for k in PROVENANCE)) if vectorised else None
    pending = _Waiting()
    current: Record | _RequestLine | None = None

    def materialised(line: _RequestLine) -> Record:
        texts[line.number] = line.text
        return Record(MarkedLine(line.number, *mark(line.text)))

    def wait(entry: Pending, plain: bool = False) -> None:
        pending.append(entry)
        if not plain:
            pending.guarded += 1
        if len(pending) >= REQUEST_BATCH:
            _read_requests(state, pending, file, prov, zone)

    def finish(record: Record | _RequestLine) -> None:
        """A complete record: to the waiting batch, or through its parsers now."""
        if isinstance(record, _RequestLine):
            text, level = record.text, record.level
            second = _second_micros(text[1:20], zone)
            message = text[27 + len(level):-len(_REQUEST_TAIL)]
            if second is not None and message.endswith("}"):
                wait((record.number, text, text, level, message, second + int(text[21:24]) * 1000, None),
                     record.plain)
                return
            record = materialised(record)
        row = record_row(record, prov, zone)
        number = record.start.line_number
        if file is not None and not record.continuation and _batchable_request(row):
            wait((number, texts.pop(number), row["raw"], row["level"], row["message"], epoch_micros(row["event_time"]),
                  row))
            return
        _read_requests(state, pending, file, prov, zone)
        numbers = (number, *record.continuation_lines)
        settle_record(state, row, [(n, texts.pop(n)) for n in numbers])

    source = iter(lines)
    while chunk := list(islice(source, REQUEST_BATCH)):
        # (other logs' chunks hold no request line: not scanned)
        clean, plain = ((file is not None and any(line[1].endswith(_REQUEST_TAIL) for line in chunk)
                         and _request_chunk([line[1] for line in chunk])) or (False, False))
        whole = _whole_request_lines(chunk, zone) if clean else None
        if whole is not None:
            # every line a record of its own: all but the last complete (the last may yet have continuation lines)
            if current is not None:
                finish(current)
            state.counts["lines_read"] += len(chunk)
            last = chunk[-1]
            current = _RequestLine(last[0], last[1], whole[-1][3], plain)
            pending.extend(whole[:-1])
            if not plain:
                pending.guarded += len(whole) - 1
            if len(pending) >= REQUEST_BATCH:
                _read_requests(state, pending, file, prov, zone)
            yield from state.take()
            continue
        for number, raw_text, chars, read_problem in chunk:
            if clean and read_problem is None and chars == len(raw_text) and raw_text.endswith(_REQUEST_TAIL):
                found = _REQUEST_START.match(raw_text)
                if found is not None:
                    state.counts["lines_read"] += 1
                    if current is not None:
                        finish(current)
                    current = _RequestLine(number, raw_text, found.group(1), plain)
                    yield from state.take()
                    continue
            text, problem = state.line_facts(raw_text, chars, read_problem)
            if problem is not None:
                _read_requests(state, pending, file, prov, zone)  # the statuses in line order
                state.status(number, text, "malformed", problem)
                yield from state.take()
                continue
            inner, fmt, found = mark(text)
            if fmt is not None:  # a record start
                if current is not None:
                    finish(current)
                current = Record(MarkedLine(number, inner, fmt, found))
                texts[number] = text
            elif current is None:  # an orphan: before any record start
                _read_requests(state, pending, file, prov, zone)
                state.status(number, text, *orphan_status(text))
            else:
                if isinstance(current, _RequestLine):
                    current = materialised(current)
                current.continuation.append(inner)
                current.continuation_lines.append(number)
                texts[number] = text
            yield from state.take()
    if current is not None:
        finish(current)
    _read_requests(state, pending, file, prov, zone)
    yield from state.take()


def _whole_request_lines(chunk: list[Line], zone: str) -> list[Pending] | None:
    """The waiting-batch entries of a clean chunk (:func:`_request_chunk`) when each of its lines is
    a whole one-line record of the request log's layout that ``finish`` would send there; else None
    (the chunk is read line by line)."""
    if not all(problem is None and chars == len(text) and text.endswith(_REQUEST_TAIL)
               for _, text, chars, problem in chunk):
        return None
    starts = [_REQUEST_START.match(text) for _, text, _, _ in chunk]
    if None in starts:
        return None
    tail = len(_REQUEST_TAIL)
    entries = []
    for (number, text, _, _), start in zip(chunk, starts, strict=True):
        level = start[1]
        second = _second_micros(text[1:20], zone)
        message = text[27 + len(level):-tail]
        if second is None or not message.endswith("}"):
            return None
        entries.append((number, text, text, level, message, second + int(text[21:24]) * 1000, None))
    return entries


def _batchable_request(row: Row) -> bool:
    """A one-line request-log record :mod:`~epoch_audit.bronze.parsers.request_log_arrow` may read."""
    message = row["message"]
    return (row["logger"] == REQUEST_LOGGER and row["problem"] is None and row["line_format"] != "redpanda"
            and message.startswith(_JSON_REQUEST) and message.endswith("}"))


def _read_requests(state: FilePass, pending: _Waiting, file: FileConstants | None,
                   prov: Row, zone: str) -> None:
    """The waiting request records, in line order: those Arrow reads as one event each (their
    rows one Arrow batch), the others through the per-line parsers; ``pending`` is emptied.

    The events Arrow reads are vouched for by how they are made (one line each, distinct
    ``sub_index`` within a line), not kept in ``FilePass``'s id set."""
    if not pending:
        return
    parsed = []
    if len(pending) >= REQUEST_BATCH_MIN:  # below, the per-line parser is cheaper than Arrow's calls
        messages = [entry[4] for entry in pending]
        parsed = request_log_arrow.parse_batch(messages, request_log_arrow.eligible_apis(messages, not pending.guarded))
    count = len(pending)
    read = np.zeros(count, dtype=bool)
    for batch in parsed:
        read[batch.positions] = True
    # what each record adds to the file's running max event time, in line order: a read record its
    # time; one the per-line parsers read, the max they left where it raised it (its events' time)
    raised = np.where(read, np.fromiter((entry[5] for entry in pending), np.int64, count), _NO_TIME)
    seed = _NO_TIME if state.max_micros is None else state.max_micros
    statuses = state.line_statuses
    first_status = 0 if statuses is None else len(statuses)
    unread = np.flatnonzero(~read).tolist()
    if unread:
        before_each = np.maximum.accumulate(raised)  # the read records' running max (none unread yet)
        for i in unread:
            number, text, _, _, _, _, row = pending[i]
            if i > 0 and before_each[i - 1] != _NO_TIME and (
                    state.max_micros is None or before_each[i - 1] > state.max_micros):
                state.max_micros = int(before_each[i - 1])  # as the records before it in line order left it
            before = state.max_micros
            if row is None:
                row = record_row(Record(MarkedLine(number, *mark(text))), prov, zone)
            settle_record(state, row, [(number, text)])
            if state.max_micros != before:
                raised[i] = state.max_micros
    running = np.maximum.accumulate(np.concatenate([[seed], raised]))[1:]
    if count and running[-1] != _NO_TIME:
        state.max_micros = int(running[-1])
    read_at = np.flatnonzero(read)
    state.counts["parsed"] += len(read_at)
    if statuses is not None:  # the audit trail in line order, the per-line parsers' statuses among them
        read_statuses = [(pending[i][0], "parsed", None) for i in read_at.tolist()]
        statuses[first_status:] = sorted(statuses[first_status:] + read_statuses, key=lambda status: status[0])
    for batch in parsed:
        at = np.asarray(batch.positions, dtype=np.int64)
        chosen = [pending[p] for p in batch.positions]
        state.out.append(request_log_arrow.event_batch(
            batch, file, [entry[0] for entry in chosen], raised[at], running[at], [entry[3] for entry in chosen],
            [fanout_raw(entry[2], sub) for entry, sub in zip(chosen, batch.subs, strict=True)], PASS_ARROW_SCHEMA))
    pending.clear()
    pending.guarded = 0


def dump_file(state: FilePass, lines: Iterable[Line], zone: str, vectorised: bool = True) -> Iterator[Row]:
    """A file-level format: lines to its parser in order; each line's status from the events at
    that line (parsers yield in line order, so a line is settled once a later line's rows come)."""
    task = state.task
    if vectorised and task["log_kind"] == segment_dump.LOG_KIND:
        yield from _segment_file(state, lines)
        return
    parse_file = FILE_PARSERS.get(task["log_kind"])
    pending: deque[tuple[int, str]] = deque()  # lines handed to the parser, not yet settled
    settled_events: dict[int, tuple[bool, str | None]] = {}

    def readable() -> Iterator[Row]:
        return _readable_rows(state, lines, pending)

    def settle(before: int | None) -> None:
        _settle_waiting(state, pending, settled_events, before)

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


def _readable_rows(state: FilePass, lines: Iterable[Line], waiting: deque[tuple[int, str]]) -> Iterator[Row]:
    """A file-level format's readable lines as its parser reads them, each also put in ``waiting``
    (settled once its events are known); a line that cannot be read is malformed at once."""
    for number, raw_text, chars, read_problem in lines:
        text, problem = state.line_facts(raw_text, chars, read_problem)
        if problem is not None:
            state.status(number, text, "malformed", problem)
            continue
        waiting.append((number, text))
        yield _line_row(state.task, number, text, len(text))


def _settle_waiting(state: FilePass, waiting: deque[tuple[int, str]],
                    outcomes: dict[int, tuple[bool, str | None]], before: int | None) -> None:
    """The status of every waiting line before line ``before`` (all when None), from its events."""
    while waiting and (before is None or waiting[0][0] < before):
        number, text = waiting.popleft()
        has_event, reason = outcomes.pop(number, (False, None))
        status = outcome_status(has_event, reason)
        if status == "irrelevant":
            state.irrelevant_families[line_family(state.task["log_kind"], text)] += 1
        state.status(number, text, status, reason)


def _settle_line(state: FilePass, rows: list[Row], outcomes: dict[int, tuple[bool, str | None]]) -> None:
    number = rows[0]["line_number"]
    has_event, reason = state.emit_events(rows)
    before = outcomes.get(number, (False, None))
    outcomes[number] = (before[0] or has_event, before[1] if before[1] is not None else reason)


def _segment_file(state: FilePass, lines: Iterable[Line]) -> Iterator[Row]:
    """A segment dump: a clean chunk's batch lines read in Arrow (:func:`_read_segment_chunk`),
    the other chunks line by line through ``segment_dump.DumpReader`` as :func:`dump_file` does."""
    task = state.task
    file = FileConstants(*(task[k] for k in PROVENANCE))
    reader = segment_dump.DumpReader()
    waiting: deque[tuple[int, str]] = deque()  # lines fed to the reader, not yet settled
    outcomes: dict[int, tuple[bool, str | None]] = {}
    line_rows: list[Row] = []  # the events of the last line the reader completed

    def settle(before: int | None) -> None:
        _settle_waiting(state, waiting, outcomes, before)

    def take(rows: list[Row]) -> None:
        nonlocal line_rows
        for row in rows:
            if line_rows and row["line_number"] != line_rows[0]["line_number"]:
                _settle_line(state, line_rows, outcomes)
                settle(row["line_number"])
                line_rows = []
            line_rows.append(row)

    def drain() -> None:
        """Every line fed so far settled (the waiting batch event is not a control batch's)."""
        nonlocal line_rows
        take(reader.close())
        if line_rows:
            _settle_line(state, line_rows, outcomes)
            line_rows = []
        settle(None)

    source = iter(lines)
    while chunk := list(islice(source, REQUEST_BATCH)):
        waiting_control = reader.pending is not None and reader.pending.get("is_control")
        if not waiting_control and _read_segment_chunk(state, reader, file, chunk, drain):
            yield from state.take()
            continue
        for row in _readable_rows(state, chunk, waiting):
            take(reader.feed(row))
        yield from state.take()
    drain()
    yield from state.take()


def _read_segment_chunk(state: FilePass, reader: segment_dump.DumpReader, file: FileConstants, chunk: list[Line],
                        drain: Callable[[], None]) -> bool:
    """A chunk of a segment dump read here when it is clean (:func:`_clean_chunk`, every line whole)
    and holds no legacy batch line: its batch lines' events one Arrow batch, every line's status;
    False (nothing done) when it is not, or Arrow does not read its batch lines alike."""
    texts = [line[1] for line in chunk]
    if any(problem is not None or chars != len(text) for _, text, chars, problem in chunk) or not _clean_chunk(texts):
        return False
    sections = [reader.section]
    batch_at: list[int] = []
    section_of: list[int] = []  # per batch line: its section's index in sections
    for i, text in enumerate(texts):
        if text.startswith("baseOffset: "):
            batch_at.append(i)
            section_of.append(len(sections) - 1)
        elif text.startswith("offset: ") and " magic: " in text:
            return False  # a legacy batch: the per-line reader
        elif text.startswith("Dumping "):
            sections.append(segment_dump.dump_section(text))
    parsed = segment_dump_arrow.parse_batch_lines([texts[i] for i in batch_at]) if batch_at else None
    if batch_at and parsed is None:
        return False
    drain()
    reader.section = sections[-1]
    state.counts["lines_read"] += len(chunk)
    numbers = [chunk[i][0] for i in batch_at]
    if parsed is not None:
        columns, details = parsed
        micros = columns.pop("_event_micros")
        own = []
        running = state.max_micros
        for when in micros.to_pylist():
            if when is not None and (running is None or when > running):
                running = when
            own.append(running)
        state.max_micros = running
        where = [_batch_place(section, reader.directory(file.source_file)) for section in sections]
        placed = [where[k] for k in section_of]
        for position, name in enumerate(("topic", "partition")):
            columns[name] = pa.array([p[position] for p in placed], pa.string() if position == 0 else pa.int32())
        columns["event_type"] = pa.array(["data_batch"] * len(batch_at), pa.string())
        columns["details"] = details_map(details + [
            (name, pa.array([p[position] for p in placed], pa.string()))
            for position, name in enumerate(("segment", "dump_path", "dir_state", "topic_partition_from"), start=2)
        ], len(batch_at))
        state.out.append(pass_batch(columns, file, numbers, micros, own, [texts[i] for i in batch_at], "state",
                                    PASS_ARROW_SCHEMA))
    batch_lines = set(batch_at)
    for i, (number, text, _, _) in enumerate(chunk):
        if i in batch_lines:
            state.vouch(number, 0)
            state.status(number, text, "parsed")
        else:
            state.irrelevant_families[line_family(file.log_kind, text)] += 1
            state.status(number, text, "irrelevant")
    return True


def _batch_place(section: dict | None, file_dir: tuple) -> tuple:
    """(topic, partition, segment, dump path, dir state, where the topic came from) of a batch line
    under ``section`` (``segment_dump._batch_event``'s rule)."""
    if section is not None and section["topic"] is not None:
        topic, partition, state, source = section["topic"], section["partition"], section["state"], "dumping"
    else:
        (topic, partition, state), source = file_dir, "file_path"
    return (topic, partition, section["segment"] if section else None, section["path"] if section else None, state,
            source if topic is not None else None)
