"""The ingest pass: raw bytes of each planned file -> bronze events, quarantined lines and the
file's line counts, in ONE ``mapInArrow`` over the read tasks (issue #20).

Per task (one file's new byte range), in a Python worker: read the lines (``bronze.read``),
redact secrets, frame log records (``bronze.framing``), hand each record or file line to its
parser's pure function, finish the rows (``bronze.parsers.rows``), and count every line as parsed,
irrelevant or malformed with the rules of ``bronze.accounting`` (a file's lines:
``bronze.log_pass``; a task's counts and state: ``bronze.file_pass``; the request log's and the
segment dumps' commonest lines a batch at a time in Arrow, alike). No query plan grows with the
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

import gc
import os
import uuid
from collections.abc import Iterable, Iterator
from datetime import UTC
from functools import partial

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import ArrayType, LongType, StructField, StructType

from epoch_audit import objstore
from epoch_audit.bronze.discover import ReadTask
from epoch_audit.bronze.file_pass import COUNT_COLUMNS, PASS_ARROW_SCHEMA, PASS_SCHEMA, FilePass
from epoch_audit.bronze.log_pass import LOG_KINDS, dump_file, log_file
from epoch_audit.bronze.parsers.rows import Row
from epoch_audit.bronze.read import TASK_SCHEMA, numbered_lines
from epoch_audit.config import AppConfig
from epoch_audit.lake.staging import HiveParquetWriter, partition_parts, remove_unlisted
from epoch_audit.lake.tables import BRONZE_EVENTS_PARTITIONS
from epoch_audit.spark import default_parallelism

BATCH_ROWS = 10_000  # an output Arrow batch is cut at this many rows or BATCH_CHARS characters of text
BATCH_CHARS = 16 << 20

# The pass's rows staged in bronze's layout, by kind: the event files become bronze's own
STAGED_PARTITIONS = ("row_kind", *BRONZE_EVENTS_PARTITIONS)
STAGED_FILE_KIND = "staged_file"  # a row naming a file the pass wrote (source_file: its relative path)
READ_FACTS = ("read_bytes", "read_sha256")  # a file row's, when its task was read to the end (bronze.read)


def task_items(
    task: Row, zone: str, line_statuses: list[tuple[int, str, str | None]] | None = None, vectorised: bool = True
) -> Iterator[Row | pa.RecordBatch]:
    """Every output row of one read task (events and quarantined lines as the file is read, then
    its file row); ``zone``: the source time zone of log time stamps. ``line_statuses``, when
    given, receives every line's (line number, status, reason): the audit trail the counts sum.
    Events read a batch at a time come as Arrow batches of ``PASS_ARROW_SCHEMA`` (``vectorised``;
    False reads every record by the per-line parsers)."""
    state = FilePass(task, line_statuses)
    read: dict[str, object] = {}  # a file read to its end: its bytes and hash (bronze.read.TO_THE_END)
    numbered = numbered_lines(task, read)
    if task["log_kind"] in LOG_KINDS:
        yield from log_file(state, numbered, zone, vectorised)
    else:
        yield from dump_file(state, numbered, zone, vectorised)
    yield from state.family_rows()
    yield {**state.file_row(), **read}


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
    facts = {k: row.get(k) for k in ("reason", *COUNT_COLUMNS, *READ_FACTS) if row.get(k) is not None}
    return {**row, "details": {k: v if isinstance(v, str) else str(v) for k, v in facts.items()}}


def side_facts(details: dict[str, str] | None) -> dict[str, object]:
    """The reason (``reason``) and counts (ints, None where absent) of a staged quarantine, file
    or family row, from its ``details``."""
    details = details or {}
    counts = {k: None if details.get(k) is None else int(details[k]) for k in (*COUNT_COLUMNS, "read_bytes")}
    return {"reason": details.get("reason"), "read_sha256": details.get("read_sha256"), **counts}


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
    for t in sorted(tasks, key=lambda t: -t.expected_bytes):
        lightest = loads.index(min(loads))
        loads[lightest] += t.expected_bytes
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
    # The worker's modules and caches never become garbage: frozen, the collector's full passes
    # stop walking them (a quarter of the pass's CPU at 10^6 lines).
    gc.freeze()
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
