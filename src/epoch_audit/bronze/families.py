"""The family of an irrelevant line: which logger (or file kind) wrote it and how its message starts.

Lines no parser takes are counted as irrelevant; grouping them by family makes a format gap visible (a new
template among thousands of known-irrelevant lines) instead of hiding it in one count. The run summary lists
the biggest families (``irrelevant_families``).
"""

from __future__ import annotations

import re

_BRACKETS = re.compile(r"^(?:\[[^\]]*\]\s*)+")  # [Broker id=1] [Partition t-0 broker=1] ...: context, not family
_NUMBERS = re.compile(r"\d+")
_PREFIX_WORDS = 4
_PREFIX_CHARS = 60


def message_prefix(message: str) -> str:
    """The first words of a message, bracketed context and numbers left out, so one template is one family."""
    text = _BRACKETS.sub("", message.split("\n", 1)[0]).strip()
    words = _NUMBERS.sub("N", text).split()[:_PREFIX_WORDS]
    return " ".join(words)[:_PREFIX_CHARS]


_API_NAME = re.compile(r'"requestApiKeyName":"([A-Z_]+)"')
_API_KEY = re.compile(r'"requestApiKey":(\d+)')


def record_family(logger: str | None, message: str | None) -> str:
    """``<logger> | <message prefix>`` of a log record; a request-log record's prefix is its request type."""
    text = message or ""
    if text.startswith("Completed request:"):
        name, key = _API_NAME.search(text[:400]), _API_KEY.search(text[:400])
        name = name.group(1) if name else f"api key {key.group(1)}" if key else "?"
        return f"{logger or '-'} | Completed request: {name}"
    return f"{logger or '-'} | {message_prefix(text)}"


def line_family(log_kind: str, text: str) -> str:
    """``<file kind> | <line prefix>`` of a file-level line (dumps, checkpoints); blank lines are one family."""
    head = text.split(":", 1)[0] if ":" in text[:40] else text
    return f"{log_kind} | {message_prefix(head) or '(blank)'}"
