"""Simulated time: one global (true) clock and a bounded, constant skew per host.

All simulation times are integer milliseconds since the Unix epoch (UTC). A host writes its
log lines with ``true_time + skew(host)``; epoch-millisecond fields a host writes (metadata-log
batch ``CreateTime``) use the same skewed clock. The ground truth is computed from the times as
*logged* (what a checker sees), never from the true times, so a violation whose proof depends on a
cross-host comparison inside the skew tolerance is labelled ``suspected``.
"""

from __future__ import annotations

import datetime as _dt
import random
from dataclasses import dataclass, field

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def to_datetime(ms: int) -> _dt.datetime:
    """UTC datetime of an epoch-millisecond value (no local zone involved: deterministic)."""
    return _EPOCH + _dt.timedelta(milliseconds=ms)


def parse_start(text: str) -> int:
    """Epoch ms of an ISO-8601 UTC start time such as ``2024-03-05T00:00:00``."""
    dt = _dt.datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.UTC)
    return int((dt - _EPOCH).total_seconds() * 1000)


def log4j_ts(ms: int) -> str:
    """``yyyy-MM-dd HH:mm:ss,SSS`` (log4j ISO8601 ``%d``; also Seastar's timestamp)."""
    d = to_datetime(ms)
    return f"{d:%Y-%m-%d %H:%M:%S},{ms % 1000:03d}"


def hour_suffix(ms: int) -> str:
    """DailyRollingFileAppender ``'.'yyyy-MM-dd-HH`` rotation suffix (without the dot)."""
    return f"{to_datetime(ms):%Y-%m-%d-%H}"


def copy_suffix(ms: int) -> str:
    """Checkpoint copy suffix ``yyyy-MM-ddTHH-mm-ss`` (copying host's local time)."""
    return f"{to_datetime(ms):%Y-%m-%dT%H-%M-%S}"


def syslog_ts(ms: int) -> str:
    """journald / syslog ``Mon DD HH:MM:SS``."""
    return f"{to_datetime(ms):%b %d %H:%M:%S}"


def cri_ts(ms: int, nanos: int) -> str:
    """Kubernetes CRI RFC 3339 timestamp with nanoseconds and ``Z``."""
    d = to_datetime(ms)
    return f"{d:%Y-%m-%dT%H:%M:%S}.{(ms % 1000) * 1_000_000 + nanos:09d}Z"


@dataclass
class Clocks:
    """Per-host constant clock skew, drawn once from the seed."""

    max_skew_ms: int
    rng: random.Random
    skews: dict[int, int] = field(default_factory=dict)

    def skew(self, host: int) -> int:
        """The host's skew in ms (drawn on first use, in a deterministic host order)."""
        if host not in self.skews:
            self.skews[host] = self.rng.randint(-self.max_skew_ms, self.max_skew_ms)
        return self.skews[host]

    def local(self, host: int, true_ms: int) -> int:
        """What ``host``'s clock reads at true time ``true_ms``."""
        return true_ms + self.skew(host)
