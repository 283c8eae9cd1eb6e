"""Executor-side reading: the new bytes of each planned file -> one row per physical line
(``mapInArrow``, a few files per task), streamed block by block so memory stays bounded."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from epoch_audit.bronze.discover import ReadTask
from epoch_audit.bronze.gzip_prefix import GzipPrefix
from epoch_audit.config import AppConfig

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
    + [StructField("read_problem", StringType())]
)

LINES_SCHEMA = StructType(
    _PROVENANCE_FIELDS
    + [
        StructField("line_number", LongType()),
        StructField("text", StringType()),
        StructField("line_chars", LongType()),
        # why the file's data ends on this line (a truncated gzip): the line is quarantined with it
        StructField("problem", StringType()),
    ]
)


READ_BLOCK_BYTES = 8 << 20  # the reader streams files: memory stays bounded by blocks, not by file size
BATCH_BYTES = 16 << 20  # an Arrow batch is cut at batch_lines lines or this many characters


def task_lines(task: dict) -> Iterator[tuple[str, int, str | None]]:
    """(text, characters, problem) of each line in a task's byte range, read block by block.

    Decoding is UTF-8 with replacement (counted later by the U+FFFD marker); a line longer than
    ``max_line_chars`` is cut there (and later quarantined) and never held whole in memory.
    Splitting bytes at ``\\n`` is safe: 0x0A never occurs inside a multi-byte UTF-8 sequence.
    A file whose data ends early (``read_problem``: a truncated gzip) ends with one more line, the
    text after its last newline (possibly empty), carrying that problem: the truncation is
    quarantined and counted as a malformed line.
    """
    limit = task["max_line_chars"]
    keep_bytes = 4 * limit  # enough bytes for ``limit`` characters
    remaining = task["end_byte"] - task["start_byte"]
    problem = task.get("read_problem")
    carry, carry_dropped = b"", 0  # the unfinished last line of the previous block

    def line(raw: bytes, dropped: int, why: str | None = None) -> tuple[str, int, str | None]:
        text = raw.decode("utf-8", errors="replace")
        chars = len(text) + dropped
        return (text if chars <= limit else text[:limit]), chars, why

    try:
        fh = GzipPrefix(task["source_file"]) if task["compressed"] == "true" else open(task["source_file"], "rb")
        with fh:
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
        pass  # unreadable: the lines read so far count, the rest waits for a re-run
    if problem and remaining <= 0:
        yield line(carry, carry_dropped, problem)
    elif carry or carry_dropped:
        yield line(carry, carry_dropped)  # a last line without its final newline


def _read_lines(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body: stream each task's lines out as Arrow batches."""
    arrow_schema = pa.schema(
        [
            ("file_id", pa.string()), ("source_file", pa.string()), ("file_name", pa.string()),
            ("cluster_id", pa.string()), ("host_id", pa.int32()), ("file_order", pa.int64()),
            ("log_kind", pa.string()), ("line_number", pa.int64()), ("text", pa.large_string()),
            ("line_chars", pa.int64()), ("problem", pa.string()),
        ]
    )

    def emit(
        task: dict, first: int, texts: list[str], lengths: list[int], problems: list[str | None]
    ) -> pa.RecordBatch:
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
                pa.array(problems, pa.string()),
            ],
            schema=arrow_schema,
        )

    for batch in batches:
        for task in batch.to_pylist():
            step = task["batch_lines"]
            first = task["start_line"]
            texts: list[str] = []
            lengths: list[int] = []
            problems: list[str | None] = []
            size = 0
            for text, chars, problem in task_lines(task):
                texts.append(text)
                lengths.append(chars)
                problems.append(problem)
                size += len(text)
                if len(texts) >= step or size >= BATCH_BYTES:
                    yield emit(task, first, texts, lengths, problems)
                    first += len(texts)
                    texts, lengths, problems, size = [], [], [], 0
            if texts:
                yield emit(task, first, texts, lengths, problems)


def read_lines(spark: SparkSession, tasks: list[ReadTask], config: AppConfig) -> DataFrame:
    """One row per physical line of every task's new bytes."""
    rows = [
        (
            t.file_id, t.source_file, t.file_name, t.cluster_id, t.host_id, t.file_order, t.log_kind,
            "true" if t.compressed else "false", t.start_byte, t.start_line, t.end_byte,
            config.ingest.max_line_chars, config.ingest.batch_lines, t.read_problem,
        )
        for t in tasks
    ]
    task_df = spark.createDataFrame(rows, TASK_SCHEMA)
    # A few files per task: one Python task per file costs more in scheduling than in reading.
    task_df = task_df.repartition(max(1, min(len(rows) // 4, 32)), "file_id")
    return task_df.mapInArrow(_read_lines, LINES_SCHEMA)
