"""Executor-side reading: the new bytes of each planned file -> its physical lines, streamed
block by block so memory stays bounded (the ingest pass, ``bronze.single_pass``, reads with it)."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from epoch_audit.bronze.gzip_prefix import GzipPrefix

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

READ_BLOCK_BYTES = 8 << 20  # the reader streams files: memory stays bounded by blocks, not by file size


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
