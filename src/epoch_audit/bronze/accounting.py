"""Line accounting: every physical line is parsed, irrelevant or malformed — exactly one.

- parsed: the line belongs to a record (or is a file-level line) that produced at least one event;
- malformed: a line of a recognised format that could not be parsed (the parser's reason), a
  line before any log record start that is not blank, binary content (NUL), a line cut at
  ``max_line_chars``, or the truncation line of a cut gzip (the reader's reason);
- irrelevant: everything else (lines of recognised formats that carry nothing we audit, blanks).
Continuation lines share their record's status.

The ingest pass (:mod:`epoch_audit.bronze.single_pass`) applies these rules to every line as it
reads it; ``bronze/ingest_accounting`` holds the per-file sums and ``quarantine/lines`` the
malformed lines with their reason.
"""

from __future__ import annotations

ORPHAN_REASON = "unrecognised line: no log record starts before it"
QUARANTINE_TEXT_CHARS = 10_000  # a quarantined line keeps this much of its text


def line_problem(text: str, chars: int, read_problem: str | None) -> str | None:
    """Why a physical line cannot be parsed at all (it reaches no parser), or None. ``chars``: its
    length as read (more than ``text`` holds when it was cut); the reader's reason comes first."""
    if read_problem is not None:
        return read_problem
    if chars > len(text):
        return f"line longer than {len(text)} characters"
    if "\x00" in text:
        return "binary content (NUL bytes)"
    return None


def outcome_status(has_event: bool, reason: str | None) -> str:
    """The status of the lines of a record (or of a file-level line) from its parse outcome."""
    return "malformed" if reason is not None else "parsed" if has_event else "irrelevant"


def orphan_status(text: str) -> tuple[str, str | None]:
    """A log line before any record start: malformed unless blank (spaces only)."""
    return ("malformed", ORPHAN_REASON) if text.strip(" ") else ("irrelevant", None)
