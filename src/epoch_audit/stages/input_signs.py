"""The input problems of the checked clusters, from signs kept per bronze partition.

:func:`epoch_audit.gold.analysis.input_sanity.host_signs` reads every state event's ``details`` map
(a migration shows there): in a long history the check stage's most growing query that finds
nothing new. Its signs are flags some row sets and sets of ids, so a cluster's signs are the merge
of its partitions' signs. ``state/input_signs`` keeps them per (cluster, event class, day) of
bronze/events, with a fingerprint of that partition's live files and of the code that computed
them; a run reads only the state partitions whose files are not the ones fingerprinted (the
night's new days, and the ones ``maintain`` compacted since) and takes the others' signs as stored.

A partition's rows are the rows of its files (bronze is only ever upserted with the same rows under
the same ids), so a stored partition whose file list is unchanged holds the same signs; any rewrite
(an upsert, a compaction, an upgrade) names other files and is read again. A run killed before it
stored its signs leaves the older ones, whose partitions then differ and are read again. On an
engine that does not list files per partition (delta-spark), or a bronze without the class and day
partitions, every state event is read as before and nothing is stored.
"""

from __future__ import annotations

import hashlib
import inspect
import logging
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, IntegerType, StringType, StructField, StructType

from epoch_audit.contracts.events import EVENT_CLASS_COLUMN, EVENT_DATE_COLUMN
from epoch_audit.gold.analysis import input_sanity
from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import BRONZE_EVENTS_PARTITIONS, EVENTS_TABLE, INPUT_SIGNS_TABLE

log = logging.getLogger(__name__)

PARTITION_KEY = ("cluster_id", EVENT_CLASS_COLUMN, EVENT_DATE_COLUMN)
SIGNS_SCHEMA = StructType(
    [
        StructField("cluster_id", StringType(), True),
        StructField(EVENT_CLASS_COLUMN, StringType(), True),
        StructField(EVENT_DATE_COLUMN, StringType(), True),
        StructField("files_fingerprint", StringType(), False),
        StructField("code_fingerprint", StringType(), False),
        StructField("host_id", IntegerType(), True),
        *[StructField(flag, BooleanType(), False) for flag in input_sanity.SIGN_FLAGS],
        StructField("speaks_as", ArrayType(IntegerType()), True),
    ]
)

Partition = tuple[str | None, str | None, str | None]


def code_fingerprint() -> str | None:
    """sha256 of the signs' code (the module that computes them): signs stored by other code are
    computed again. None when the source cannot be read (nothing stored is then trusted)."""
    try:
        return hashlib.sha256(inspect.getsource(input_sanity).encode()).hexdigest()
    except (OSError, TypeError):
        return None


def state_partitions(storage: LakeStorage, clusters: list[str]) -> dict[Partition, str] | None:
    """Each state partition of ``clusters`` in bronze/events and the fingerprint of its live files;
    None where they are not listed (the engine, or a bronze without the class and day partitions)."""
    files = storage.files_by_partition(EVENTS_TABLE)
    if not files or any(tuple(c for c, _ in key) != BRONZE_EVENTS_PARTITIONS for key in files):
        return None
    wanted = set(clusters)
    out: dict[Partition, str] = {}
    for key, paths in files.items():
        cluster, event_class, day = (v for _, v in key)
        if cluster in wanted and event_class != "traffic":
            out[(cluster, event_class, day)] = hashlib.sha256("\n".join(paths).encode()).hexdigest()
    return out


def _in_partitions(partitions: list[Partition]) -> Column:
    """Rows of ``partitions`` (cluster, class, day): a predicate on partition columns only, so the
    scan reads no other partition's files."""
    by_class: dict[tuple[str | None, str | None], list[str | None]] = {}
    for cluster, event_class, day in partitions:
        by_class.setdefault((cluster, event_class), []).append(day)
    terms = []
    for (cluster, event_class), days in sorted(by_class.items(), key=str):
        dated = sorted(d for d in days if d is not None)
        day_terms = ([F.col(EVENT_DATE_COLUMN).isin([F.lit(d).cast("date") for d in dated])] if dated else []) + (
            [F.col(EVENT_DATE_COLUMN).isNull()] if None in days else []
        )
        terms.append(
            F.col("cluster_id").eqNullSafe(F.lit(cluster))
            & F.col(EVENT_CLASS_COLUMN).eqNullSafe(F.lit(event_class))
            & reduce(lambda a, b: a | b, day_terms)
        )
    return reduce(lambda a, b: a | b, terms)


def partition_signs(state: DataFrame, partitions: list[Partition] | None) -> list[dict[str, Any]]:
    """:func:`host_signs` per partition of ``state`` (its rows in ``partitions``; None: all of them)."""
    rows = state if partitions is None else state.where(_in_partitions(partitions))
    by = (F.col(EVENT_CLASS_COLUMN), F.col(EVENT_DATE_COLUMN).cast("string").alias(EVENT_DATE_COLUMN))
    return [r.asDict(recursive=True) for r in input_sanity.host_signs(rows, by).collect()]


def input_problems(
    storage: LakeStorage, clusters: list[str], state: DataFrame
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The input problems of ``clusters`` (``state``: their state events) and the signs rows to store
    for them (None: nothing to store, :func:`state_partitions` lists nothing here)."""
    current = state_partitions(storage, clusters)
    code = code_fingerprint()
    if current is None or code is None:  # nothing stored can be trusted, and nothing is stored
        return [p.to_dict() for p in input_sanity.input_problems(state)], None
    stored = stored_signs(storage, clusters)
    kept = [
        r for r in stored
        if r["code_fingerprint"] == code and current.get(_partition(r)) == r["files_fingerprint"]
    ]
    reused = {_partition(r) for r in kept}
    changed = sorted((p for p in current if p not in reused), key=str)
    fresh = partition_signs(state, None if len(changed) == len(current) else changed) if changed else []
    for row in fresh:
        row.update(files_fingerprint=current[_partition(row)], code_fingerprint=code)
    log.info("input problems: %d of %d state partitions read, %d as stored", len(changed), len(current), len(reused))
    signs = input_sanity.merged_signs(kept + fresh)
    problems = [p.to_dict() for p in input_sanity.problems_of(signs)]
    return problems, kept + fresh


def _partition(row: dict[str, Any]) -> Partition:
    return (row["cluster_id"], row[EVENT_CLASS_COLUMN], row[EVENT_DATE_COLUMN])


def stored_signs(storage: LakeStorage, clusters: list[str] | None = None) -> list[dict[str, Any]]:
    """The stored signs rows of ``clusters`` (None: of every cluster)."""
    rows = storage.rows(INPUT_SIGNS_TABLE) if storage.exists(INPUT_SIGNS_TABLE) else []
    wanted = None if clusters is None else set(clusters)
    return rows if wanted is None else [r for r in rows if r["cluster_id"] in wanted]


def write_signs(storage: LakeStorage, clusters: list[str], rows: list[dict[str, Any]]) -> None:
    """Replace ``clusters``' rows of state/input_signs by ``rows`` (one small commit; other clusters kept)."""
    wanted = set(clusters)
    others = [r for r in stored_signs(storage) if r["cluster_id"] not in wanted]
    names = SIGNS_SCHEMA.fieldNames()
    ordered = sorted(others + rows, key=lambda r: tuple(str(r[n]) for n in (*PARTITION_KEY, "host_id")))
    storage.overwrite_rows(INPUT_SIGNS_TABLE, [tuple(r[n] for n in names) for r in ordered], SIGNS_SCHEMA)
