"""What every invariant check receives: bronze events, the silver tables, the rule parameters.

A check is a pure ``check(ctx: CheckContext) -> DataFrame``: it reads ``ctx`` and builds nothing
into it. The check stage (or a test) makes the context once with :func:`check_context`, which
builds every silver table it was not given from the events, so all checks share the same frames.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

from epoch_audit.one_partition import read_once
from epoch_audit.silver.tables import SILVER_TABLES

# Timelines are read once per check; the broker views several times each (cached when built here).
TIMELINE_TABLES = ("partition_timeline", "broker_registrations", "broker_controller_views")


@dataclass(frozen=True)
class CheckConfig:
    """Rule parameters from conf/ (``checks:`` section)."""

    max_clock_skew_ms: int = 1000
    source_time_zone: str = "UTC"


@dataclass(frozen=True)
class CheckContext:
    """Bronze events plus the silver tables built from them, and the rule parameters (read-only).
    ``absent_types``: event types known to be missing from ``events`` (the check stage asks for the
    ones the registry's ``needs`` name); empty when not asked. ``carry_horizons``: {cluster: the
    next carry's horizon, epoch microseconds} when the stage will keep a carry (a check's ``carry``
    may then leave out what no answer after the horizon can ask for); empty: keep everything."""

    events: DataFrame
    silver: Mapping[str, DataFrame] = field(default_factory=dict)
    config: CheckConfig = field(default_factory=CheckConfig)
    absent_types: frozenset[str] = frozenset()
    carry_horizons: Mapping[str, int] = field(default_factory=dict)
    _analyses: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    _locks: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    _persisted: list = field(default_factory=list, init=False, compare=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # A read-only view: a check that filled the map would change what the next check reads.
        object.__setattr__(self, "silver", MappingProxyType(dict(self.silver)))

    def table(self, name: str) -> DataFrame:
        return self.silver[name]

    def shared(self, build: Callable[[CheckContext], DataFrame], checks: int = 1) -> DataFrame:
        """``build(self)``, built and kept once for every check and carry that asks this context for it:
        an analysis (Jepsen's "built once") that a check and its carry, or two checks, both read — so a
        nightly run computes the ISR joins' fetch probes once, not once for the check and again for its
        carry. The same rows as ``build(self)``, kept by :func:`kept_once`: a short run's local
        checkpoint; in a long run a persisted frame (:meth:`release` drops it) when more than one query
        reads it — ``checks`` checks, or a check and the carry this run keeps (``carry_horizons``) —
        else the plain frame (persisting what one query reads only adds the cache's write). Checks
        run two at a time, so the first asker builds the frame (a persisted one is computed by the
        first query that reads it; a query reading it meanwhile waits for its blocks)."""
        with self._lock:  # one lock per analysis: a short run's checkpoint of one holds no other
            lock = self._locks.setdefault(build, threading.Lock())
        with lock:
            if build not in self._analyses:
                built = build(self)
                cached_before = isinstance(built, ClassicDataFrame) and built.is_cached
                kept = kept_once(built, checks > 1 or bool(self.carry_horizons))
                # persisted here (persist returns the frame itself): released with the context
                if isinstance(kept, ClassicDataFrame) and kept.is_cached and not cached_before:
                    self._persisted.append(kept)
                self._analyses[build] = kept
            return self._analyses[build]

    def release(self) -> None:
        """Drop what :meth:`shared` kept (a long run's persisted analyses) and the broker views
        :func:`check_context` built and cached: call when the stage ends."""
        with self._lock:
            for df in self._persisted:
                df.unpersist()
            self._persisted.clear()
            self._analyses.clear()


def kept_once(df: DataFrame, queries: bool) -> DataFrame:
    """``df`` computed once for every query that reads it: a short run's local checkpoint
    (:func:`epoch_audit.one_partition.read_once`); in a long run of a classic session, when several
    ``queries`` read it, a persisted frame, else ``df``. A check and its carry are two queries, and
    in a long run each recomputed the analysis they share: at 10^7 lines the carries of the ISR-join
    and the fenced-leader checks re-ran those checks' fetch and produce windows (about 60 s of task
    time each, as long as the checks themselves). Not over Spark Connect: a persisted analysis there
    lost a check's staged rows in the end-to-end run (the cause not found yet), so Connect keeps the
    plain frame it always had."""
    once = read_once(df)
    if once is not df or not queries or not isinstance(df, ClassicDataFrame):
        return once
    return df.persist(StorageLevel.MEMORY_AND_DISK)


def check_context(
    events: DataFrame,
    silver: Mapping[str, DataFrame] | None = None,
    config: CheckConfig | None = None,
    absent_types: frozenset[str] = frozenset(),
    carry_horizons: Mapping[str, int] | None = None,
) -> CheckContext:
    """A context holding every silver table: the ones given, the others built from ``events``.

    Built broker views are cached: several checks read each of them several times. Built
    timelines are not (each check reads them once; the stage reads them from silver/ anyway).
    """
    config = config or CheckConfig()
    tables = dict(silver or {})
    cached = []
    for name, build in SILVER_TABLES.items():
        if name not in tables:
            built = build(events, config)
            if name not in TIMELINE_TABLES:
                built = built.cache()
                cached.append(built)
            tables[name] = built
    ctx = CheckContext(
        events=events, silver=tables, config=config, absent_types=absent_types,
        carry_horizons=dict(carry_horizons or {}),
    )
    ctx._persisted.extend(cached)  # released with the context's analyses
    return ctx
