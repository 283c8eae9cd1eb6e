"""Executor-side reading: the new bytes of each planned file -> its physical lines, streamed
block by block so memory stays bounded (the ingest pass, ``bronze.single_pass``, reads with it)."""

from __future__ import annotations

import hashlib
import socket
from collections.abc import Iterator
from typing import BinaryIO

from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType

from epoch_audit import objstore
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
    # The file as executors open it: ``source_file`` made absolute on the driver. ``source_file``
    # stays as the run named it (the events' provenance); a relative one would be resolved against
    # each executor's own working directory, which on a cluster is not the driver's.
    + [StructField("read_path", StringType())]
    + [
        StructField(name, LongType() if name != "compressed" else StringType())
        for name in ("compressed", "start_byte", "start_line", "end_byte", "max_line_chars", "batch_lines")
    ]
    + [StructField("read_problem", StringType())]
)

READ_BLOCK_BYTES = 8 << 20  # the reader streams files: memory stays bounded by blocks, not by file size
# ``end_byte`` of a compressed log the driver did not decompress (bronze.discover.InputFile.deferred):
# read to its end; the reader reports what the driver's scan would have (:func:`numbered_lines`)
TO_THE_END = 1 << 62


def numbered_lines(task: dict, read: dict | None = None) -> Iterator[tuple[int, str, int, str | None]]:
    """(line number, text, characters, problem) of each line in a task's byte range, numbered from
    its ``start_line`` and read block by block.

    Decoding is UTF-8 with replacement (counted later by the U+FFFD marker); a line longer than
    ``max_line_chars`` is cut there (and later quarantined) and never held whole in memory.
    Splitting bytes at ``\\n`` is safe: 0x0A never occurs inside a multi-byte UTF-8 sequence, so a
    block's whole lines decode as one text (its replacements are each line's own) and split at
    ``\\n`` into the lines, numbered in one comprehension (the pass reads millions). A file whose
    data ends early (``read_problem``: a truncated gzip) ends with one more line, the text after its
    last newline (possibly empty), carrying that problem: the truncation is quarantined and counted
    as a malformed line. A file that does not open raises :class:`InputUnreadableError`.

    A task read :data:`TO_THE_END` finds its read problem itself, and puts in ``read`` (when given)
    ``read_bytes`` and ``read_sha256``: how many (decompressed) bytes it read and their SHA-256, the
    next run's prefix check, as the driver's scan of the file would have given them.
    """
    number = task["start_line"]
    for block in _line_blocks(task, read):
        yield from [(number + k, text, chars, problem) for k, (text, chars, problem) in enumerate(block)]
        number += len(block)


def _line_blocks(task: dict, read: dict | None = None) -> Iterator[list[tuple[str, int, str | None]]]:
    """:func:`numbered_lines`' (text, characters, problem), a list per block read."""
    limit = task["max_line_chars"]
    keep_bytes = 4 * limit  # enough bytes for ``limit`` characters
    remaining = task["end_byte"] - task["start_byte"]
    problem = task.get("read_problem")
    to_the_end = task["end_byte"] >= TO_THE_END
    digest, read_bytes = hashlib.sha256(), 0
    carry, carry_dropped = b"", 0  # the unfinished last line of the previous block

    def line(raw: bytes, dropped: int, why: str | None = None) -> tuple[str, int, str | None]:
        text = raw.decode("utf-8", errors="replace")
        chars = len(text) + dropped
        return (text if chars <= limit else text[:limit]), chars, why

    fh = _open(task["read_path"], task["compressed"] == "true")
    try:
        with fh:
            fh.seek(task["start_byte"])
            while remaining > 0:
                block = fh.read(min(READ_BLOCK_BYTES, remaining))
                if not block:
                    break
                remaining -= len(block)
                if to_the_end:
                    digest.update(block)
                    read_bytes += len(block)
                end = block.rfind(b"\n")
                if end < 0:
                    carry += block
                else:
                    first_end = block.find(b"\n")
                    lines = [line(carry + block[:first_end], carry_dropped)]
                    carry_dropped = 0
                    if first_end < end:
                        texts = block[first_end + 1:end].decode("utf-8", errors="replace").split("\n")
                        lines += [(text, len(text), None) if len(text) <= limit else (text[:limit], len(text), None)
                                  for text in texts]
                    carry = block[end + 1:]
                    yield lines
                if len(carry) > keep_bytes:
                    carry_dropped += len(carry) - keep_bytes
                    carry = carry[:keep_bytes]
    except (OSError, EOFError):
        pass  # cut short while reading (an I/O error mid-file): the lines read so far count
    if to_the_end:
        # the whole file was read: its data ends early where the decompression stopped
        problem = getattr(fh, "problem", None)
        remaining = 0
        if read is not None:
            read.update(read_bytes=read_bytes, read_sha256=digest.hexdigest())
    if problem and remaining <= 0:
        yield [line(carry, carry_dropped, problem)]
    elif carry or carry_dropped:
        yield [line(carry, carry_dropped)]  # a last line without its final newline


class InputUnreadableError(OSError):
    """An executor cannot open a file the driver planned to read."""


def _open(path: str, compressed: bool) -> BinaryIO | GzipPrefix:
    """The task's file, opened on the executor; one that does not open fails the task (and so the
    run) instead of counting as read: the driver would record its bytes as consumed with no lines,
    and no later run would read them. On a cluster that is an input the executors do not see at
    the driver's path (not on a shared filesystem), or a file removed since the run planned it."""
    try:
        # a local path or an object-store URI (pyarrow.fs: a seekable file, read by byte range)
        return GzipPrefix(path) if compressed else objstore.open_input(path)
    except OSError as err:
        raise InputUnreadableError(
            f"executor on host {socket.gethostname()} cannot open input file {path}: {err.strerror or err} "
            "(every executor must see the inputs at the driver's path, e.g. a shared mount)"
        ) from err
