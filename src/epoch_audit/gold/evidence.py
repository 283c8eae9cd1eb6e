"""The bronze events gold's violations cite, looked up once in a run.

The gold suite's evidence expectation (every evidence id exists in bronze/events) and the report's
evidence lines both look cited ids up in bronze: each a scan of every bronze ``event_id`` (a
64-character hash: 1.3 and 0.8 s at night 30 of ``bench-nights``, growing with the history). Both
ask for a subset of the ids every violation in gold cites, so one scan finds them all: the events
whose id is among them, each with the columns the report shows. Inside one run
(:func:`sharing`: the command's stages, during which neither table changes after the check) the
rows are kept for the next stage that asks; outside, every call looks them up again.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import EVENTS_TABLE, VIOLATIONS_TABLE

# Above this many cited ids the literal set makes a large plan: callers scan bronze themselves.
MAX_CITED_IDS = 20_000
RAW_CHARS = 4000  # the report shows at most this much of an evidence line
CITED_COLUMNS = (
    "event_id",
    "event_type",
    "cluster_id",
    "host_id",
    "broker_id",
    "topic",
    "partition",
    "event_time",
    "source_file",
    "line_number",
)

_held: dict[str, DataFrame] | None = None  # lake -> cited events, while a run shares them


def cited_ids(violations: DataFrame) -> list[str]:
    """Every distinct non-null evidence id of ``violations`` (one small collect)."""
    ids = violations.select(F.explode("evidence").alias("i")).where(F.col("i").isNotNull()).distinct()
    return sorted(r["i"] for r in ids.collect())


def cited_events(storage: LakeStorage) -> DataFrame | None:
    """The bronze events whose ids gold's violations cite (:data:`CITED_COLUMNS`, ``raw`` cut to
    :data:`RAW_CHARS`); None when either table is absent or the ids are too many to list."""
    if _held is not None and storage.lake in _held:
        return _held[storage.lake]
    if not storage.exists(EVENTS_TABLE) or not storage.exists(VIOLATIONS_TABLE):
        return None
    ids = cited_ids(storage.read(VIOLATIONS_TABLE))
    if len(ids) > MAX_CITED_IDS:
        return None
    events = storage.read(EVENTS_TABLE)
    events = events.where(F.col("event_id").isin(ids)) if ids else events.limit(0)
    found = events.select(*CITED_COLUMNS, F.substring("raw", 1, RAW_CHARS).alias("raw"))
    if _held is None:
        return found
    _held[storage.lake] = found = found.cache()
    return found


@contextmanager
def sharing() -> Iterator[None]:
    """Keep the cited events a stage looks up for the later stages of the same run."""
    global _held
    outer, _held = _held, {}
    try:
        yield
    finally:
        for df in _held.values():
            df.unpersist()
        _held = outer
