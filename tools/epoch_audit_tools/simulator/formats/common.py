"""Value printing shared by every Kafka template (reference §0.3) and the log4j prefix (§0.1, §8)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from epoch_audit_tools.simulator.clock import log4j_ts


@dataclass(frozen=True, order=True)
class Version:
    """A Kafka release as (major, minor, patch); ``"3.4"`` means 3.4.0."""

    major: int
    minor: int
    patch: int = 0

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse ``"3.6"`` / ``"3.4.1"``."""
        parts = [int(p) for p in text.split(".")]
        while len(parts) < 3:
            parts.append(0)
        return cls(parts[0], parts[1], parts[2])

    def at_least(self, text: str) -> bool:
        """True when this version is ``text`` or newer."""
        return self >= Version.parse(text)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


def comma(ids: Iterable[int]) -> str:
    """Comma-joined, no spaces: ``1,2,3``."""
    return ",".join(str(i) for i in ids)


def bracket_comma(ids: Iterable[int]) -> str:
    """Bracketed comma-joined: ``[1,2,3]``."""
    return "[" + comma(ids) + "]"


def java_list(items: Iterable[object]) -> str:
    """Java list / generated-message array: ``[1, 2, 3]``."""
    return "[" + ", ".join(str(i) for i in items) + "]"


def scala_list(items: Iterable[object]) -> str:
    """Scala ``List(1, 2)``."""
    return "List(" + ", ".join(str(i) for i in items) + ")"


def scala_immutable_set(items: Sequence[object]) -> str:
    """Scala 2.13 immutable set: ``Set(..)`` up to 4 elements (insertion order), ``HashSet(..)`` from 5.

    From 5 elements the order is the hash order; sorting stands in for it (deterministic, and
    parsers must not rely on order anyway).
    """
    if len(items) <= 4:
        return "Set(" + ", ".join(str(i) for i in items) + ")"
    return "HashSet(" + ", ".join(str(i) for i in sorted(items, key=str)) + ")"


def scala_mutable_set(items: Sequence[object]) -> str:
    """Scala 2.13 mutable set: ``HashSet(..)`` at every size."""
    return "HashSet(" + ", ".join(str(i) for i in sorted(items, key=str)) + ")"


def scala_keyset(items: Sequence[object]) -> str:
    """Keys of a Scala mutable map: ``Set(..)`` at every size."""
    return "Set(" + ", ".join(str(i) for i in sorted(items, key=str)) + ")"


def scala_option(value: object | None) -> str:
    """Scala ``Some(x)`` / ``None``."""
    return "None" if value is None else f"Some({value})"


def jbool(value: bool) -> str:
    """Java/Scala boolean."""
    return "true" if value else "false"


class Log4j:
    """The Kafka line prefix: default ``[%d] %p %m (%c)`` or Strimzi ``%d{ISO8601} %p %m (%c) [%t]``."""

    def __init__(self, strimzi: bool = False) -> None:
        self.strimzi = strimzi

    def record(
        self,
        local_ms: int,
        level: str,
        message: str,
        logger: str,
        thread: str = "main",
        continuation: Sequence[str] = (),
    ) -> str:
        """One log event: first line plus any continuation lines (stack trace), ``\\n``-terminated."""
        ts = log4j_ts(local_ms)
        if self.strimzi:
            first = f"{ts} {level} {message} ({logger}) [{thread}]"
        else:
            first = f"[{ts}] {level} {message} ({logger})"
        if not continuation:
            return first + "\n"
        return first + "\n" + "\n".join(continuation) + "\n"
