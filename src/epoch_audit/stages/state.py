"""Incremental state of the lake: what bronze holds per cluster, what silver and gold were last
built from, and which runs completed.

``bronze/ingest_accounting`` is the ledger of what bronze holds: one row per chunk of a file
ingested (file id, first line), written after that chunk's events. A cluster's fingerprint is the
hash of its ledger keys; silver and gold record the fingerprint they were last built from, per
cluster, and a run rebuilds only the clusters whose fingerprint moved.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DateType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from epoch_audit.lake.storage import LakeStorage
from epoch_audit.lake.tables import EVENTS_TABLE, LEDGER_TABLE, RUN_SUMMARY_TABLE

STATE_SCHEMA = StructType([StructField(name, StringType()) for name in ("cluster_id", "fingerprint", "run_id")])
# gold/run_summary: the columns every lake's table has had (the whole summary as JSON last), then
# typed columns taken out of it for dashboards (a lake written before them gets them:
# epoch_audit.stages.upgrade). Null where the run did not run the stage that counts them, never 0.
RUN_SUMMARY_BASE_SCHEMA = StructType([
    StructField("run_id", StringType()),
    StructField("command", StringType()),
    StructField("started_at", TimestampType()),
    StructField("finished_at", TimestampType()),
    StructField("exit_code", IntegerType()),
    StructField("new_violations", LongType()),
    StructField("summary", StringType()),
])
RUN_SUMMARY_TYPED_SCHEMA = StructType([
    StructField("status", StringType()),
    StructField("run_date", DateType()),
    StructField("wall_seconds", DoubleType()),
    StructField("lines_read", LongType()),
    StructField("parsed", LongType()),
    StructField("irrelevant", LongType()),
    StructField("malformed", LongType()),
    StructField("known_violations", LongType()),
    StructField("suppressed_new", LongType()),
    StructField("failed_expectations", LongType()),
    StructField("critical_failures", LongType()),
    StructField("silent_hosts", LongType()),
    StructField("input_problem_clusters", ArrayType(StringType())),
])
RUN_SUMMARY_SCHEMA = StructType(RUN_SUMMARY_BASE_SCHEMA.fields + RUN_SUMMARY_TYPED_SCHEMA.fields)
# The bronze suite's expectation whose offending rows are the silent hosts (epoch_audit.validate.bronze).
SILENT_HOSTS_EXPECTATION = "hosts_not_silent"


def ledger_fingerprints(storage: LakeStorage) -> dict[str, str]:
    """Per cluster, a fingerprint of every bronze chunk ingested for it so far (small: one row per chunk)."""
    if storage.exists(LEDGER_TABLE):
        return _fingerprints(storage.rows(LEDGER_TABLE, ["cluster_id", "file_id", "start_line"]))
    if storage.exists(EVENTS_TABLE):  # a lake written without the ledger (tests, old lakes)
        keys = storage.read(EVENTS_TABLE).select("cluster_id", F.col("event_id").alias("k"))
    else:
        return {}
    rows = (
        keys.groupBy("cluster_id")
        .agg(F.sha2(F.concat_ws(",", F.array_sort(F.collect_set("k"))), 256).alias("fp"))
        .collect()
    )
    return {r["cluster_id"]: r["fp"] for r in rows if r["cluster_id"] is not None}


def _fingerprints(ledger: list[dict]) -> dict[str, str]:
    """Per cluster, sha256 of its ledger keys (``file_id:start_line``) distinct, sorted and joined
    by commas: the value Spark's ``sha2(concat_ws(",", array_sort(collect_set(k))), 256)`` gives,
    so that fingerprints recorded by either stay comparable (UTF-8 byte order is code point order)."""
    keys: dict[str, set[str]] = {}
    for r in ledger:
        if r["cluster_id"] is not None:
            parts = (r["file_id"], None if r["start_line"] is None else str(r["start_line"]))
            keys.setdefault(r["cluster_id"], set()).add(":".join(p for p in parts if p is not None))
    return {c: hashlib.sha256(",".join(sorted(k)).encode("utf-8")).hexdigest() for c, k in keys.items()}


def built_fingerprints(storage: LakeStorage, state_table: str) -> dict[str, str]:
    """Per cluster, the ledger fingerprint ``state_table`` last recorded it built from."""
    return {r["cluster_id"]: r["fingerprint"] for r in storage.rows(state_table, ["cluster_id", "fingerprint"])}


def stale_clusters(
    storage: LakeStorage, state_table: str, fps: dict[str, str] | None = None
) -> tuple[list[str], dict[str, str]]:
    """Clusters whose bronze moved since ``state_table`` last recorded them, and every fingerprint
    (``fps`` when the caller already has them from :func:`ledger_fingerprints`)."""
    fps = ledger_fingerprints(storage) if fps is None else fps
    done = built_fingerprints(storage, state_table)
    return sorted(c for c, fp in fps.items() if done.get(c) != fp), fps


def mark_built(storage: LakeStorage, state_table: str, clusters: list[str], fps: dict[str, str], run_id: str) -> None:
    """Record in ``state_table`` that ``clusters`` were built from their fingerprints ``fps``."""
    storage.upsert_rows(state_table, [(c, fps[c], run_id) for c in clusters], STATE_SCHEMA, ["cluster_id"])


def _count(value: Any) -> int | None:
    return None if value is None else int(value)


def run_facts(summary: dict[str, Any], started_at: dt.datetime | None, finished_at: dt.datetime | None
              ) -> dict[str, Any]:
    """The typed columns of a run's gold/run_summary row (RUN_SUMMARY_TYPED_SCHEMA), from its summary
    (what ``--json`` prints) and its times. A stage's counts are null when that stage did not run."""
    stages = summary.get("stages", {})
    ingest, check, validate = (stages.get(name, {}) for name in ("ingest", "check", "validate"))
    ingested, checked, validated = (s.get("status") == "ran" for s in (ingest, check, validate))
    expectations = validate.get("expectations", {})
    silent = next((r for r in validate.get("results", []) if r.get("expectation") == SILENT_HOSTS_EXPECTATION
                   and r.get("status") in ("passed", "failed")), None)
    return {
        "status": summary.get("status"),
        "run_date": started_at.date() if started_at is not None else None,
        "wall_seconds": (
            round((finished_at - started_at).total_seconds(), 3) if started_at and finished_at else None
        ),
        **{k: _count(ingest.get(k)) if ingested else None for k in ("lines_read", "parsed", "irrelevant", "malformed")},
        "known_violations": _count(check.get("known")) if checked else None,
        "suppressed_new": (
            sum(c.get("count", 0) for c in check.get("suppressions", {}).get("suppressed_new", [])) if checked else None
        ),
        "failed_expectations": (
            int(expectations.get("failed", 0)) + int(expectations.get("error", 0)) if validated else None
        ),
        "critical_failures": len(validate.get("critical_failures", [])) if validated else None,
        "silent_hosts": (
            (int(silent.get("unexpected_count") or 0) if silent["status"] == "failed" else 0) if silent else None
        ),
        "input_problem_clusters": (
            sorted({p["cluster_id"] for p in check.get("input_problems", [])}) if checked else None
        ),
    }


def run_summary_row(summary: dict[str, Any], command: str, started_at: dt.datetime | None,
                    finished_at: dt.datetime | None) -> tuple:
    """A gold/run_summary row (RUN_SUMMARY_SCHEMA) of a run: its summary as JSON and typed."""
    new = sum(v.get("count", 0) for v in summary.get("stages", {}).get("check", {}).get("violations", []))
    facts = run_facts(summary, started_at, finished_at)
    return (summary["run_id"], command, started_at, finished_at, int(summary.get("exit_code", 0)), int(new),
            json.dumps(summary, sort_keys=True, default=str), *(facts[f.name] for f in RUN_SUMMARY_TYPED_SCHEMA))


def record_run(storage: LakeStorage, summary: dict[str, Any], command: str, started_at: Any, finished_at: Any) -> None:
    """Write this run's row of gold/run_summary: from then on its violations count as reported."""
    row = run_summary_row(summary, command, started_at, finished_at)
    storage.upsert_rows(RUN_SUMMARY_TABLE, [row], RUN_SUMMARY_SCHEMA, ["run_id"])


def previous_task_seconds(runs: list[dict[str, Any]], stage: str) -> dict[str, float]:
    """Per named query of ``stage``, its seconds in the newest of ``runs`` (gold/run_summary rows
    with ``finished_at`` and ``summary``) that recorded them (the stage's ``task_seconds``): the next
    run starts the longest first (epoch_audit.spark.run_longest_first). Empty for a new lake."""
    for row in sorted(runs, key=lambda r: r["finished_at"] or dt.datetime.min, reverse=True):
        seconds = json.loads(row["summary"] or "{}").get("stages", {}).get(stage, {}).get("task_seconds")
        if seconds:
            return {name: float(s) for name, s in seconds.items()}
    return {}
