"""Acknowledged violations: a checked-in YAML file of suppressions (``--suppressions FILE`` or
``checks.suppressions_file``), read and checked before Spark starts (one error line, exit 2).

Each entry names what it silences and why, who owns it and until when::

    - violation_id: 3f9a1c2b7d4e          # a violation's id, or a prefix of it (12+ hex characters)
      reason: acks=1 zombie window on clicks, accepted by the topic owner
      owner: team-streaming
      expires: 2026-12-31                 # active through that day (UTC); then the violations come back
    - invariant: high_watermark_regression  # or by invariant, narrowed by any of the fields below
      cluster_id: prod-eu-1
      topic: clicks
      partition: 7
      broker_id: 3
      reason: KAFKA-12345, fixed in the next upgrade
      owner: alice@example.com
      expires: 2027-01-15

A suppressed violation stays in gold and in the report, marked, but no longer counts in the exit
code, the alert or the JUnit file; an expired entry brings its violations back (the first run after
the expiry reports them as new); an entry that matches no violation is listed in the run summary.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from epoch_audit.config import ConfigError

_HEX_ID = re.compile(r"[0-9a-f]{12,64}")
_REQUIRED = ("reason", "owner", "expires")
_MATCH_TEXT = ("cluster_id", "topic")
_MATCH_INT = ("partition", "broker_id")
_KNOWN = {"violation_id", "invariant", *_REQUIRED, *_MATCH_TEXT, *_MATCH_INT}


@dataclass(frozen=True)
class Suppression:
    """One entry of the file: what it matches (``violation_id`` prefix, or ``invariant`` narrowed by
    the other match fields; None = any) and its reason, owner and last active day."""

    entry: int  # position in the file, from 1
    reason: str
    owner: str
    expires: dt.date
    violation_id: str | None = None
    invariant: str | None = None
    cluster_id: str | None = None
    topic: str | None = None
    partition: int | None = None
    broker_id: int | None = None

    def active_on(self, day: dt.date) -> bool:
        return day <= self.expires

    def describe(self) -> str:
        what = (
            f"violation {self.violation_id}" if self.violation_id else
            " ".join([str(self.invariant)] + [f"{k}={getattr(self, k)}" for k in (*_MATCH_TEXT, *_MATCH_INT)
                                              if getattr(self, k) is not None])
        )
        return f"#{self.entry} {what} ({self.owner}, until {self.expires.isoformat()}): {self.reason}"


def _entry(raw: Any, position: int, invariants: set[str], where: str) -> Suppression:
    at = f"{where}: entry {position}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{at}: expected a mapping, got {type(raw).__name__}")
    unknown = sorted(set(map(str, raw)) - _KNOWN)
    if unknown:
        raise ConfigError(f"{at}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KNOWN))})")
    for key in _REQUIRED:
        if raw.get(key) in (None, ""):
            raise ConfigError(f"{at}: {key!r} is required (every suppression says why, whose and until when)")
    for key in ("reason", "owner"):
        if not isinstance(raw[key], str):
            raise ConfigError(f"{at}: {key} must be text, got {raw[key]!r}")
    expires = raw["expires"]
    if isinstance(expires, str):
        try:
            expires = dt.date.fromisoformat(expires)
        except ValueError:
            raise ConfigError(f"{at}: expires must be a date YYYY-MM-DD, got {raw['expires']!r}") from None
    if isinstance(expires, dt.datetime) or not isinstance(expires, dt.date):
        raise ConfigError(f"{at}: expires must be a date YYYY-MM-DD, got {raw['expires']!r}")
    violation_id, invariant = raw.get("violation_id"), raw.get("invariant")
    if (violation_id is None) == (invariant is None):
        raise ConfigError(f"{at}: give either violation_id or invariant (with optional narrowing fields)")
    if violation_id is not None:
        violation_id = str(violation_id).lower()
        if not _HEX_ID.fullmatch(violation_id):
            raise ConfigError(f"{at}: violation_id must be 12 to 64 hex characters, got {raw['violation_id']!r}")
        narrowing = sorted(k for k in (*_MATCH_TEXT, *_MATCH_INT) if raw.get(k) is not None)
        if narrowing:
            raise ConfigError(f"{at}: {narrowing[0]!r} narrows an invariant, not a violation_id")
    elif invariant not in invariants:
        raise ConfigError(f"{at}: unknown invariant {invariant!r} (known: {', '.join(sorted(invariants))})")
    for key in _MATCH_TEXT:
        if raw.get(key) is not None and not isinstance(raw[key], str | int):
            raise ConfigError(f"{at}: {key} must be text, got {raw[key]!r}")
    for key in _MATCH_INT:
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 31):
            raise ConfigError(f"{at}: {key} must be a non-negative integer, got {value!r}")
    return Suppression(
        entry=position, reason=raw["reason"].strip(), owner=raw["owner"].strip(), expires=expires,
        violation_id=violation_id, invariant=invariant,
        **{k: (None if raw.get(k) is None else str(raw[k])) for k in _MATCH_TEXT},
        **{k: raw.get(k) for k in _MATCH_INT},
    )


def load_suppressions(path: str | None, invariants: set[str]) -> list[Suppression]:
    """The entries of the suppressions file at ``path`` (none when ``path`` is None); ConfigError naming
    the path and the reason when it cannot be read or an entry is wrong. The file is a list of entries,
    or a mapping whose only key ``suppressions`` holds that list."""
    if path is None:
        return []
    if not isinstance(path, str) or not path:
        raise ConfigError(f"checks.suppressions_file: expected a file path, got {path!r}")
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: suppressions file not found") from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: cannot read the suppressions file: {err}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {str(err).splitlines()[0]}") from None
    if isinstance(data, dict) and set(data) == {"suppressions"}:
        data = data["suppressions"]
    if data is None:
        return []
    if not isinstance(data, list):
        raise ConfigError(f"{path}: expected a list of suppressions (or suppressions: [...])")
    return [_entry(raw, i, invariants, path) for i, raw in enumerate(data, start=1)]
