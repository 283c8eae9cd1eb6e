"""The lake path checked before Spark starts: a lake that cannot be written fails in a second with
the path and the reason (exit 2), not half a minute later as a Java stack trace (exit 1 = retry).

Local lakes (a path or ``file://``) are checked here, and S3 lakes (endpoint, bucket, a probe
object); other object stores are checked by their first write. As root, permission bits do not
stop a write, so writability is tried, not asked (``os.access``): a probe file is created and
removed in the lake and in every layer and table directory a run writes into.
"""

from __future__ import annotations

import errno
import os
import re
import uuid
from pathlib import Path

from epoch_audit import objstore
from epoch_audit.errors import LakePathError

PROBE_PREFIX = ".epoch-audit-probe-"
DELTA_LOG = "_delta_log"


_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:/")


def is_local(lake: str) -> bool:
    """A plain path or ``file://`` URI (not ``s3://``, ``abfss://``, ``dbfs:/`` ...)."""
    return lake.startswith("file:") or not _SCHEME.match(lake)


def local_path(lake: str) -> Path:
    """The directory of a local lake (``file:`` prefix removed)."""
    return Path(re.sub(r"^file:(//)?", "", lake))


def _reason(err: OSError) -> str:
    if err.errno == errno.ENOTDIR:
        return "a part of the path is a file, not a directory"
    return (err.strerror or type(err).__name__).lower()


def _probe(directory: Path, lake: str) -> None:
    """Create and remove a file in ``directory``: the one test of writability that holds for root too."""
    probe = directory / f"{PROBE_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.close(fd)
        probe.unlink()
    except OSError as err:
        where = "" if directory == local_path(lake) else f" ({directory})"
        raise LakePathError(lake, f"not writable: {_reason(err)}{where}") from None


def _written_dirs(root: Path) -> list[Path]:
    """The lake, its layer directories, their tables and the tables' ``_delta_log`` that exist now."""
    found = [root]
    for layer in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        found.append(layer)
        for table in sorted(p for p in layer.iterdir() if p.is_dir() and "=" not in p.name):
            found.append(table)
            if (table / DELTA_LOG).is_dir():
                found.append(table / DELTA_LOG)
    return found


def check_lake_path(lake: str) -> None:
    """Create the lake directory if needed and prove a run can write into it; else raise LakePathError."""
    if not lake.strip():
        raise LakePathError(lake, "empty path")
    if not is_local(lake):
        _check_store(lake)
        return
    root = local_path(lake)
    try:
        if root.exists() and not root.is_dir():
            raise LakePathError(lake, "exists and is not a directory")
        for parent in root.parents:
            if parent.exists():
                if not parent.is_dir():
                    raise LakePathError(lake, f"{parent} is a file, not a directory")
                break
    except OSError as err:  # a directory on the way that this user may not enter
        raise LakePathError(lake, f"cannot reach it: {_reason(err)} ({err.filename})") from None
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise LakePathError(lake, f"cannot create the directory: {_reason(err)}") from None
    try:
        directories = _written_dirs(root)
    except OSError as err:
        raise LakePathError(lake, f"cannot list the lake: {_reason(err)}") from None
    for directory in directories:
        _probe(directory, lake)


def _check_store(lake: str) -> None:
    """An S3 lake: the endpoint answers, the bucket exists and a probe object can be written and
    removed (credentials, policy), in seconds and before Spark starts. Other stores are checked by
    their first write (their credentials may be the Spark session's only)."""
    if objstore.scheme(lake) not in objstore.S3_SCHEMES:
        return
    problem = objstore.check_reachable(lake)
    if problem is not None:
        raise LakePathError(lake, problem)
    probe = objstore.join(lake, f"{PROBE_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}")
    try:
        objstore.write_bytes(probe, b"")
        objstore.delete_file(probe)
    except OSError as err:
        raise LakePathError(lake, f"not writable: {objstore.reason(err)}") from None


def require_tables(lake: str) -> None:
    """A command that only works on an existing lake (``maintain``) fails on a local path holding no
    Delta table, before anything is created there: a mistyped path is not an empty lake."""
    if not is_local(lake):
        return
    root = local_path(lake)
    if not root.is_dir() or not any(root.glob(f"*/*/{DELTA_LOG}")):
        raise LakePathError(lake, "holds no Delta table (not a lake, or not yet written by a run)")
