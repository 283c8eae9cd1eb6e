"""What every stage shares: the record of what it did, and the checks' rule parameters."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from epoch_audit import objstore
from epoch_audit.config import AppConfig
from epoch_audit.gold import evidence
from epoch_audit.gold.context import CheckConfig
from epoch_audit.one_partition import is_one_partition_session
from epoch_audit.spark import default_parallelism


@dataclass
class StageResult:
    """What a stage did, for the console and the --json summary."""

    name: str
    status: str  # ran | skipped
    detail: dict[str, Any] = field(default_factory=dict)


def check_config(config: AppConfig) -> CheckConfig:
    """The rule parameters of the ``checks:`` section (and the source time zone)."""
    return CheckConfig(
        max_clock_skew_ms=config.checks.max_clock_skew_ms, source_time_zone=config.ingest.source_time_zone
    )


@dataclass(frozen=True)
class HeldInput:
    """A short run's cached input: ``cached``, persisted in as many partitions as the session has
    cores (so that every core builds it), and ``view``, the one partition the stage's queries read
    (a coalesce above the cache: no shuffle, and every operator's distribution is met).

    Built by one task, the state events of a long history (241k at night 16 of ``bench-nights``,
    in row groups a scan splits) took 7–9 s while the other core waited; by two, 3.6–5 s. No more
    partitions than cores: each query reads every cached block of its inputs, once per scan."""

    cached: DataFrame
    view: DataFrame

    @classmethod
    def of(cls, df: DataFrame) -> HeldInput:
        cores = max(1, default_parallelism(df.sparkSession))
        cached = df.coalesce(cores).persist(StorageLevel.MEMORY_AND_DISK)
        return cls(cached, cached.coalesce(1))


# A short run's shared input read in files this large on average is not cached: each query reads it
# from Parquet. Night 16 of `bench-nights` (241k state events in two compacted files of 6.8 MB):
# caching every column took 7-9 s, and the timelines stage took 18-20 s with the cache against
# 10-11 s reading the files; the check stage was no slower. data/samples (10k state events in 31
# files of 70 kB) is 2-4 s faster cached: there a scan's cost is each file's setup, paid once.
DIRECT_READ_MIN_FILE_BYTES = 1 << 20


def mean_file_bytes(df: DataFrame) -> float | None:
    """The mean size of the files ``df`` reads, when they are all on the local disk (None: no files,
    a file in an object store, or one gone). A size decides only whether to cache."""
    try:
        files = df.inputFiles()
    except Exception:  # a frame without a file relation under it
        return None
    sizes = []
    for uri in files:
        if objstore.is_remote(uri):
            return None
        try:
            sizes.append(os.path.getsize(unquote(urlparse(uri).path)))
        except OSError:
            return None
    return sum(sizes) / len(sizes) if sizes else None


def is_read_directly(df: DataFrame) -> bool:
    """Whether a short run reads the shared input ``df`` from its files in every query instead of
    caching it: a long history in large files (:data:`DIRECT_READ_MIN_FILE_BYTES`)."""
    mean = mean_file_bytes(df)
    return mean is not None and mean >= DIRECT_READ_MIN_FILE_BYTES


# A short run's state events, cached by the timelines stage and taken by the check stage of the same
# run (both read every state event of the same clusters): {shared_key(...): the held frame}.
_SHARED: dict[tuple, HeldInput] = {}
# Builds a short run's large cached inputs in the background (ShortRunInputs: warm).
_WARMING = ThreadPoolExecutor(max_workers=2, thread_name_prefix="epoch-audit-warm")

log = logging.getLogger(__name__)


def shared_key(lake: str, clusters: list[str], fingerprints: dict[str, str]) -> tuple:
    """The key of ``clusters``' bronze in ``lake`` as their ledger ``fingerprints`` give it: a later
    stage asking with the same key reads the same rows (bronze did not move in between)."""
    return (lake, tuple((c, fingerprints.get(c)) for c in sorted(clusters)))


def release_shared() -> None:
    """Release what a stage shared and no later stage took (a run that stopped before its check stage)."""
    while _SHARED:
        _SHARED.popitem()[1].cached.unpersist()


@contextmanager
def stage_sharing() -> Iterator[None]:
    """The stages of one run: what one shares and no later one takes is released at the end (and
    the cited evidence events validation looks up are the report's, epoch_audit.gold.evidence)."""
    try:
        with evidence.sharing():
            yield
    finally:
        release_shared()


class ShortRunInputs:
    """The stage's inputs read as one cached partition each in a short run
    (``one_partition.ONE_PARTITION_INPUTS``; cached as :class:`HeldInput`), else unchanged; a context
    manager that releases the cached ones on exit.

    A single partition satisfies every distribution an operator asks for, so the windows,
    aggregates and joins over it need no shuffle: each check or silver table runs as one job of
    one task instead of a job per shuffle stage (131 jobs → 74 for the checks over data/samples,
    about a third less JVM CPU). Cached, because every check and silver table scans bronze events
    several times, and on small data a scan's cost is Parquet's per-file setup, not the rows: read
    once into memory, the checks over data/samples ran in about 35 JVM CPU s instead of 47. Only
    where the data is known to be small: one task runs each query, and it all fits in memory.
    """

    def __init__(self) -> None:
        self._held: list[DataFrame] = []
        self._warming: list[Future] = []

    def __call__(self, df: DataFrame, warm: bool = False) -> DataFrame:
        """``df`` cached as one partition in a short run (else unchanged); ``warm``: built now, in
        the background (:meth:`warm`), for a large input the stage's first query would wait on."""
        if not is_one_partition_session(df):
            return df
        held = HeldInput.of(df)
        self._held.append(held.cached)
        if warm:
            self.warm(held.cached)
        return held.view

    def warm(self, held: DataFrame) -> None:
        """Build the cached ``held`` on a background thread while this one plans the stage's queries.

        A cache is built by the first query that reads it, after that query's planning, and every
        other query waits on it: at night 16 of ``bench-nights`` the state events took 7 s to cache
        while the driver had already planned the silver tables, and the check stage's traffic 3 s.
        Built as soon as it is declared, it overlaps the planning (one core plans, the other caches);
        a query that reads it meanwhile waits on its blocks as before. A failure here is left to the
        query that reads it (it fails the same way, where the stage handles it)."""
        self._warming.append(_WARMING.submit(held.count))

    def reused(self, df: DataFrame) -> DataFrame:
        """``df`` cached until this stage ends, in every run (not only a short one): a frame two of the
        stage's queries read, small beside its inputs (``silver.produce_runs``)."""
        held = df.persist(StorageLevel.MEMORY_AND_DISK)
        self._held.append(held)
        return held

    def shared(self, key: tuple, read: Callable[[], DataFrame]) -> DataFrame:
        """``read()`` as :meth:`__call__` gives it, kept cached past this stage for a later stage of the
        run that asks for the same ``key`` (:meth:`take`). One at a time: an older one is released.
        Read in large files (:func:`is_read_directly`), it is one partition read from them, not kept."""
        df = read()
        if not is_one_partition_session(df):
            return df
        release_shared()
        if is_read_directly(df):
            return df.coalesce(1)
        _SHARED[key] = held = HeldInput.of(df)
        self.warm(held.cached)
        return held.view

    def take(self, key: tuple, read: Callable[[], DataFrame]) -> DataFrame:
        """What an earlier stage of the run shared under ``key`` (released with this stage's inputs),
        else ``self(read())`` (or, in large files, one partition read from them, as :meth:`shared`).
        Any other shared frame is released: no later stage asks for it."""
        held = _SHARED.pop(key, None)
        release_shared()
        if held is None:
            df = read()
            if is_one_partition_session(df) and is_read_directly(df):
                return df.coalesce(1)
            return self(df)
        self._held.append(held.cached)
        return held.view

    def __enter__(self) -> ShortRunInputs:
        return self

    def __exit__(self, *exc: object) -> None:
        # Waited for (a stage that failed early may not have read them): never released mid-build.
        for building in self._warming:
            error = building.exception()
            if error is not None:
                log.debug("building a cached input in the background failed: %s", error)
        self._warming.clear()
        for df in self._held:
            df.unpersist()
        self._held.clear()
