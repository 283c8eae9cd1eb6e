"""Errors that end a run with exit code 2 (the user's input, not the data or the code), and the one
line and JSON object every failure is reported as."""

from __future__ import annotations

import os
import re
from typing import Any


class UsageError(ValueError):
    """Bad command-line usage."""


class LakePathError(ValueError):
    """A lake path that cannot hold a lake (not a directory, not writable, ...): exit code 2."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"lake {path or repr(path)}: {reason}")
        self.path = path
        self.reason = reason


# Reasons a failure inside Spark is the lake's fault, not the code's: retrying will not help.
_LAKE_REASONS = (
    (re.compile(r"AccessDeniedException|AccessControlException|Permission denied", re.I), "permission denied"),
    (re.compile(r"Read-only file system", re.I), "read-only file system"),
    (re.compile(r"No space left on device", re.I), "no space left on device"),
    (re.compile(r"Disk quota exceeded", re.I), "disk quota exceeded"),
)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:/")


def lake_failure(text: str, lake: str) -> LakePathError | None:
    """The lake problem a failure's text (a Java stack trace too) reports, when it names a path in ``lake``.

    A lake made unwritable after the run's pre-flight check (or a full disk) fails inside Spark as a
    ``Py4JJavaError``; it is still a lake problem (exit 2, not 1 = retry).
    """
    if lake.startswith("file:") or not _SCHEME.match(lake):
        root = os.path.abspath(re.sub(r"^file:(//)?", "", lake))
    else:
        root = lake.rstrip("/")
    if not root or root == "/":
        return None
    inside = re.search(re.escape(root) + r"(?:/[^\s'\",)]*)?(?=[\s'\",):]|$)", text)
    if inside is None:
        return None
    for pattern, reason in _LAKE_REASONS:
        if pattern.search(text):
            return LakePathError(lake, f"{reason} ({inside.group(0)})")
    return None


def java_cause(err: BaseException) -> str | None:
    """The innermost Java exception of a ``Py4JJavaError`` as ``Class: message`` (its own first line says
    only which JVM method failed), or None when ``err`` is no such error or the JVM is gone."""
    java = getattr(err, "java_exception", None)
    if java is None:
        return None
    try:
        seen = 0
        while java.getCause() is not None and seen < 20:  # a cause chain can loop back on itself
            java = java.getCause()
            seen += 1
        return str(java.toString()).strip().splitlines()[0]
    except Exception:  # a dead gateway: keep the Python-side message
        return None


def one_line(err: BaseException, limit: int = 300) -> str:
    """``Type: first line`` of an unexpected error, its Java root cause when it came from the JVM."""
    cause = java_cause(err)
    first = str(err).strip().splitlines()[0] if str(err).strip() else ""
    text = f"{type(err).__name__}: {first}" if first else type(err).__name__
    if cause:
        text += f" caused by {cause}"
    return text[:limit]


def error_object(kind: str, message: str, exit_code: int, path: str | None = None) -> dict[str, Any]:
    """The one JSON object ``--json`` prints on stdout when a command fails."""
    error: dict[str, Any] = {"kind": kind, "message": message}
    if path is not None:
        error["path"] = path
    return {"status": "error", "exit_code": exit_code, "error": error}
