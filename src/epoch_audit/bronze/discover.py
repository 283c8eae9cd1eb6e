"""Driver-side discovery: walk the inputs, name each file (cluster, host, log stream, rotation
order, format, content identity) and plan which of its bytes a run reads.

A file's identity is (cluster, host, log name, its first line): the same bytes shipped twice, a
live file that grew, and that live file after rotation (``state-change.log`` ->
``state-change.log.2024-03-05-09``) all have one identity, so only bytes never consumed before are
read (``plan_reads``, given what earlier runs consumed per identity).
"""

from __future__ import annotations

import dataclasses
import errno
import fnmatch
import hashlib
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from epoch_audit import objstore
from epoch_audit.bronze.gzip_prefix import GzipPrefix
from epoch_audit.bronze.parsers.file_kinds import base_file_name, copy_time, detect_file_kind
from epoch_audit.bronze.read import TO_THE_END
from epoch_audit.bronze.records import SEASTAR_START
from epoch_audit.config import AppConfig

log = logging.getLogger(__name__)

# Text logs (framed into records); every other kind is a file-level format (dumps, checkpoints).
LOG_KINDS = ("state-change", "controller", "server", "request", "redpanda", "log")
LIVE_ORDER = 99_999_999_999_999  # a live file sorts after every rotated copy of its stream
HEAD_BYTES = 4096
EXCLUDED_NAMES = ("truth.jsonl", "manifest.json", "bench-plan.json", "*.md", ".*", "_SUCCESS", "*.crc")
INT32_MAX = 2**31 - 1  # host ids are stored as int (bronze host_id)
# A directory with a log file's name is walked, but reported: a collector may have meant the file.
_LOG_LIKE_NAME = re.compile(r"\.(?:log|txt|gz)(?:\.|$)|checkpoint$|^partition\.metadata$")

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
    size_bytes: int  # decompressed (a truncated gzip: its decompressible prefix)
    content_sha256: str
    file_id: str
    # What a run may consume: the whole file, except a live log's unfinished last line (it is read
    # once its newline is written). readable_sha256 hashes those bytes (the next run's prefix check).
    readable_bytes: int = -1
    readable_sha256: str = ""
    read_problem: str | None = None  # e.g. "truncated gzip at compressed byte N": quarantined as a line
    # A compressed log not decompressed here: its sizes and hashes are unknown (-1, "") until the
    # pass, which decompresses it anyway, reports them (:func:`plan_reads` completes it when needed).
    deferred: bool = False
    size_hint: int = -1  # a deferred file's size as its gzip trailer states it: for packing the pass's bins

    @property
    def live(self) -> bool:
        """A log file still being written: not rotated, not copied, not compressed."""
        return self.file_order == LIVE_ORDER and not self.compressed and self.log_kind in LOG_KINDS


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
    read_problem: str | None = None  # why the file's data ends early (the reader quarantines it as a last line)
    size_hint: int = -1  # the bytes a task read TO_THE_END is expected to read (its file's size_hint)

    @property
    def expected_bytes(self) -> int:
        """How many bytes the task reads, or is expected to (to pack the pass's bins)."""
        return self.size_hint if self.end_byte >= TO_THE_END else self.end_byte - self.start_byte


@dataclass
class Discovered:
    """The regular files found under the inputs, and what was passed over and why."""

    files: list[Path | str]  # local paths; object-store files as URIs (``s3://bucket/key``)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    # object-store files' modification times (listed with them: no request per file for --since)
    mtimes: dict[str, float] = field(default_factory=dict)


def _is_excluded(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in EXCLUDED_NAMES)


def _classify(path: Path) -> str | None:
    """None for a readable regular file (or a link to one), else why it is not read."""
    try:
        if path.is_symlink():
            try:
                target = path.stat()
            except OSError as err:
                return "symlink loop" if err.errno == errno.ELOOP else "broken symlink"
            if stat.S_ISDIR(target.st_mode):
                return "symlink to a directory (not followed)"
            mode = target.st_mode
        else:
            mode = path.lstat().st_mode
    except OSError as err:
        return f"unreadable ({err.strerror or err})"
    if stat.S_ISFIFO(mode):
        return "fifo"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    if not stat.S_ISREG(mode):
        return "not a regular file"
    if not os.access(path, os.R_OK):
        return "unreadable (permission denied)"
    return None


def _walk(root: Path, found: list[Path], skipped: list[tuple[str, str]]) -> None:
    """Regular files below ``root``, not entering hidden or ``_delta_log`` folders nor following
    links to folders (as ``Path.rglob``); every other entry is reported in ``skipped``."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError as err:
        skipped.append((root.as_posix(), f"unreadable directory ({err.strerror or err})"))
        return
    for entry in entries:
        path = root / entry.name
        if entry.is_dir(follow_symlinks=False):
            if entry.name == "_delta_log" or entry.name.startswith("."):
                continue
            if _LOG_LIKE_NAME.search(entry.name):
                skipped.append((path.as_posix(), "directory named like a log file"))
            _walk(path, found, skipped)
            continue
        if _is_excluded(entry.name):
            continue
        reason = _classify(path)
        if reason is None:
            found.append(path)
        else:
            skipped.append((path.as_posix(), reason))


def discover_inputs(inputs: list[str], log_skipped: bool = True) -> Discovered:
    """Every regular file under ``inputs`` (sorted), skipping lake and simulator side files; FIFOs,
    sockets, devices, symlink loops, unreadable entries and log-named directories are reported
    (and logged, one line each, unless ``log_skipped`` is false)."""
    found: list[Path | str] = []
    skipped: list[tuple[str, str]] = []
    mtimes: dict[str, float] = {}
    for raw in inputs:
        if objstore.is_remote(raw):
            _walk_store(raw, found, mtimes)
            continue
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise InputError(f"input path not found: {raw}")
        if path.is_dir():
            if not os.access(path, os.R_OK):
                raise InputError(f"input path not readable: {raw}")
            _walk(path, found, skipped)
            continue
        if not os.access(path, os.R_OK) and not path.is_symlink():
            raise InputError(f"input path not readable: {raw}")
        reason = _classify(path)
        if reason is not None:
            skipped.append((path.as_posix(), reason))
        elif not _is_excluded(path.name):
            found.append(path)
    skipped = sorted(set(skipped))
    for where, reason in skipped if log_skipped else []:
        log.warning("input skipped: %s (%s)", where, reason)
    local = sorted({p for p in found if isinstance(p, Path)})  # Path order, as before object stores
    return Discovered(local + sorted({p for p in found if isinstance(p, str)}), skipped, mtimes)


def _walk_store(uri: str, found: list[Path | str], mtimes: dict[str, float]) -> None:
    """The objects under an object-store input (one request per thousand keys), skipping what
    ``_walk`` skips: hidden and ``_delta_log`` prefixes and side files. An object store has no
    FIFOs, links or permission bits per object: only a store that cannot be read is an error."""
    problem = objstore.check_reachable(uri)
    if problem is not None:
        raise InputError(f"input path {uri}: {problem}")
    try:
        entry = objstore.info(uri)
        listed = objstore.list_files(uri) if entry.type != objstore.pafs.FileType.File else [
            (uri, entry.size or 0, entry.mtime.timestamp() if entry.mtime else 0.0)
        ]
    except OSError as err:
        raise InputError(f"input path {uri}: {objstore.reason(err)}") from None
    if not listed:
        raise InputError(f"input path not found: {uri} (no object under it)")
    base = uri.rstrip("/")
    for where, _size, mtime in listed:
        below = where[len(base):].strip("/").split("/") if where != uri else [objstore.name(where)]
        if any(part == "_delta_log" or part.startswith(".") for part in below[:-1]) or _is_excluded(below[-1]):
            continue
        found.append(where)
        mtimes[where] = mtime


def discover(inputs: list[str]) -> list[Path | str]:
    """Every regular file under ``inputs`` (sorted), skipping lake and simulator side files (the
    path check before a run: what it skips is logged by the ingest's own discovery)."""
    return discover_inputs(inputs, log_skipped=False).files


def _open(path: Path | str, compressed: bool):
    """A local path or an object-store URI, opened for reading (decompressed when ``compressed``)."""
    return GzipPrefix(str(path)) if compressed else objstore.open_input(str(path))


def _is_gzip(path: Path | str) -> bool:
    with objstore.open_input(str(path)) as fh:
        return fh.read(2) == b"\x1f\x8b"


@dataclass
class _Scan:
    sha256: str
    size: int
    head: bytes
    lines_end: int  # bytes up to and including the last newline
    lines_end_sha256: str
    problem: str | None


def _scan(path: Path | str, compressed: bool) -> _Scan:
    """Hash a file's (decompressed) bytes, keep its head, and note where its last newline ends."""
    digest = hashlib.sha256()
    size = 0
    head = b""
    lines_end, lines_end_digest = 0, digest.copy()
    problem = None
    with _open(path, compressed) as fh:
        while chunk := fh.read(1 << 20):
            if len(head) < HEAD_BYTES:
                head += chunk[: HEAD_BYTES - len(head)]
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                digest.update(chunk[: newline + 1])
                lines_end, lines_end_digest = size + newline + 1, digest.copy()
                digest.update(chunk[newline + 1:])
            else:
                digest.update(chunk)
            size += len(chunk)
        if compressed:
            problem = fh.problem
    if problem:
        log.warning("%s: %s; its decompressible %d bytes are read", path, problem, size)
    return _Scan(digest.hexdigest(), size, head, lines_end, lines_end_digest.hexdigest(), problem)


def _head(path: Path | str, compressed: bool) -> bytes:
    """The first HEAD_BYTES of a file (decompressed), as :func:`_scan` keeps them."""
    with _open(path, compressed) as fh:
        head = b""
        while len(head) < HEAD_BYTES and (chunk := fh.read(HEAD_BYTES - len(head))):
            head += chunk
        return head


def _gzip_size_hint(path: Path | str) -> int:
    """A gzip file's decompressed size as its trailer states it (ISIZE: the last member's size
    modulo 2^32, exact for one member under 4 GiB), at least its compressed size; 0 when unreadable."""
    try:
        with objstore.open_input(str(path)) as fh:
            fh.seek(-4, os.SEEK_END)
            stated = int.from_bytes(fh.read(4), "little")
            compressed_size = fh.tell()
    except (OSError, ValueError):
        return 0
    return max(stated, compressed_size)


def completed(file: InputFile) -> InputFile:
    """A deferred file (:attr:`InputFile.deferred`) with its sizes and hashes, read here."""
    if not file.deferred:
        return file
    scan = _scan(file.source_file, file.compressed)
    return dataclasses.replace(file, size_bytes=scan.size, content_sha256=scan.sha256, readable_bytes=scan.size,
                               readable_sha256=scan.sha256, read_problem=scan.problem, deferred=False)


def _prefix_sha(path: Path | str, compressed: bool, length: int) -> str:
    digest = hashlib.sha256()
    remaining = length
    with _open(path, compressed) as fh:
        while remaining > 0 and (chunk := fh.read(min(1 << 20, remaining))):
            digest.update(chunk)
            remaining -= len(chunk)
    return digest.hexdigest()


def stream_order(name: str) -> tuple[str, int]:
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


def log_kind(stream: str, head: str) -> str:
    """Which log a text file is: by the loggers in its first lines, else by its name."""
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


def describe(path: Path | str, config: AppConfig) -> InputFile:
    """Name one file (a local path or an object-store URI): cluster, host, stream, order, format,
    content hash and identity."""
    posix = path.as_posix() if isinstance(path, Path) else path
    cluster_match = re.search(config.ingest.cluster_pattern, posix)
    cluster_id = cluster_match.group(1) if cluster_match else config.ingest.cluster_id
    if not cluster_id:
        cluster_id = "default"
    # The innermost host segment names the host (a retry folder may sit above it).
    host_matches = list(re.finditer(config.ingest.host_pattern, posix))
    host_id = int(host_matches[-1].group(1)) if host_matches else None
    if host_id is not None and not 0 <= host_id <= INT32_MAX:
        # e.g. a folder named after a millisecond timestamp: its lines are read without a host id
        log.warning("%s: host id %d is out of range (0..%d): read without a host id", posix, host_id, INT32_MAX)
        host_id = None
    compressed = _is_gzip(path)
    name = path.name if isinstance(path, Path) else objstore.name(path)
    stream, order = stream_order(name)
    if compressed:
        # A compressed log (rotated: never live) is decompressed once, by the pass that reads it;
        # here only its head: at 10^7 lines decompressing the rotated logs was 10 of the plan's 15 CPU s.
        head = _head(path, compressed)
        head_text = head.decode("utf-8", errors="replace")
        kind = detect_file_kind(name, head_text) or log_kind(stream, head_text)
        # (an empty head, nothing decompresses: scanned here as before, so it is skipped unread)
        scan = None if kind in LOG_KINDS and head else _scan(path, compressed)
    else:
        scan = _scan(path, compressed)
        head = scan.head
        head_text = head.decode("utf-8", errors="replace")
        kind = detect_file_kind(name, head_text) or log_kind(stream, head_text)
    content_sha, size = (scan.sha256, scan.size) if scan is not None else ("", -1)
    first_line = head.split(b"\n", 1)[0]
    identity = "|".join([cluster_id, str(host_id), stream, hashlib.sha256(first_line).hexdigest()])
    if kind not in LOG_KINDS:
        # File-level formats are rewritten wholesale (checkpoints, dumps): every copy is its own
        # evidence, identified by its name and content.
        # Identity includes the path below the host folder: every partition directory has its own
        # (often byte-identical) checkpoint, and a retry copy of the host folder keeps that path.
        below_host = posix[host_matches[-1].end():] if host_matches else posix
        identity = "|".join([cluster_id, str(host_id), below_host.lstrip("/"), content_sha])
    described = InputFile(
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
        readable_bytes=size,
        readable_sha256=content_sha,
        read_problem=scan.problem if scan is not None else None,
        deferred=scan is None,
        size_hint=_gzip_size_hint(path) if scan is None else size,
    )
    if scan is not None and described.live and scan.lines_end < size:
        # A live log caught mid-line: its unfinished last line waits for its newline (next run).
        return dataclasses.replace(
            described, readable_bytes=scan.lines_end, readable_sha256=scan.lines_end_sha256
        )
    return described


@dataclass
class FilePlan:
    """What this run reads, and what it skips and why."""

    tasks: list[ReadTask]
    files: list[InputFile]
    skipped: list[tuple[InputFile, str]]  # (file, reason: unchanged | unfinished_line | duplicate | conflicting)


def plan_reads(files: list[InputFile], consumed: dict[str, dict]) -> FilePlan:
    """Decide which bytes of which file to read, given what earlier runs consumed per identity."""
    tasks: list[ReadTask] = []
    skipped: list[tuple[InputFile, str]] = []
    by_identity: dict[str, list[InputFile]] = {}
    for f in files:
        by_identity.setdefault(f.file_id, []).append(f)
    for file_id in sorted(by_identity):
        before = consumed.get(file_id)
        if len(by_identity[file_id]) > 1 or before is not None:
            # which copy is longest, and whether it continues what was consumed: read here
            by_identity[file_id] = [completed(f) for f in by_identity[file_id]]
        # the longest copy holds every other copy's bytes (a finished copy before a live one)
        copies = sorted(by_identity[file_id], key=lambda f: (-f.readable_bytes, -f.size_bytes, f.source_file))
        chosen = copies[0]
        for dup in copies[1:]:
            skipped.append((dup, "duplicate"))
        start_byte, start_line = 0, 1
        if before is not None:
            # (a file unchanged since: the hash of what was consumed is the one just computed)
            consumed_sha = chosen.readable_sha256 if before["consumed_bytes"] == chosen.readable_bytes else None
            same_prefix = before["consumed_bytes"] <= chosen.size_bytes and (consumed_sha or _prefix_sha(
                chosen.source_file, chosen.compressed, before["consumed_bytes"]
            )) == before["prefix_sha256"]
            if not same_prefix:
                log.warning("%s: content differs from what was ingested for it before", chosen.source_file)
                skipped.append((chosen, "conflicting"))
                continue
            start_byte, start_line = before["consumed_bytes"], before["consumed_lines"] + 1
        if not chosen.deferred and start_byte >= chosen.readable_bytes:
            # nothing new, or only a live file's unfinished last line (read once it is finished)
            skipped.append((chosen, "unchanged" if chosen.readable_bytes == chosen.size_bytes else "unfinished_line"))
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
                end_byte=TO_THE_END if chosen.deferred else chosen.readable_bytes,
                read_problem=chosen.read_problem,
                size_hint=chosen.size_hint,
            )
        )
    return FilePlan(tasks=tasks, files=[f for copies in by_identity.values() for f in copies], skipped=skipped)


def in_window(
    path: Path | str, window: tuple[float | None, float | None], mtime: float | None = None
) -> bool:
    """Whether the file's modification time (``mtime``, else asked of the file) lies in ``window``
    ([start, end), epoch seconds)."""
    start, end = window
    if mtime is None:
        mtime = path.stat().st_mtime if isinstance(path, Path) else objstore.info(path).mtime.timestamp()
    return (start is None or mtime >= start) and (end is None or mtime < end)
