"""first_seen_at / last_seen_at of gold/violations: a gold table an older build wrote (without
them) is continued: the columns are added by a metadata commit and its rows filled from
gold/run_summary; re-checks keep first_seen_at as they keep run_id (delta-rs here; delta-spark:
tests/e2e/test_lake_upgrade_delta_spark.py)."""

from __future__ import annotations

import datetime as dt

from deltalake import DeltaTable
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from epoch_audit.contracts.descriptions import column_comments
from epoch_audit.contracts.violations import CHECK_COLUMNS, CHECK_SCHEMA, SEEN_COLUMNS
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import GOLD_STATE_TABLE, RUN_SUMMARY_TABLE, VIOLATIONS_TABLE
from epoch_audit.stages.check import first_reports
from epoch_audit.stages.seen import ensure_seen_columns
from epoch_audit.stages.state import RUN_SUMMARY_BASE_SCHEMA, STATE_SCHEMA

OLD_SCHEMA = StructType([StructField("run_id", StringType()), StructField("violation_id", StringType()),
                         *CHECK_SCHEMA.fields])
DAY1, DAY2 = dt.datetime(2026, 11, 1, 23, 0), dt.datetime(2026, 11, 2, 23, 0)


def _row(run_id: str, vid: str, cluster: str, evidence: list[str]) -> tuple:
    values = {"run_id": run_id, "violation_id": vid, "invariant": "leader_epoch_regression", "severity": "error",
              "confidence": "confirmed", "cluster_id": cluster, "topic": "t", "partition": 0, "broker_id": 1,
              "leader_epoch": 3, "expected_epoch": 4, "event_time": None, "evidence": evidence, "explanation": "x"}
    return tuple(values[f.name] for f in OLD_SCHEMA.fields)


def _old_lake(spark, lake: str) -> DeltaRsStorage:
    store = DeltaRsStorage(spark, lake)
    store.append(VIOLATIONS_TABLE, spark.createDataFrame(
        [_row("r1", "v-a", "a", ["e1"]), _row("r1", "v-b", "b", ["e2"]), _row("killed", "v-c", "c", ["e3"])],
        OLD_SCHEMA))
    store.append(RUN_SUMMARY_TABLE, spark.createDataFrame(
        [("r1", "run", DAY1, DAY1, 3, 3, "{}"), ("r2", "run", DAY2, DAY2, 0, 0, "{}")], RUN_SUMMARY_BASE_SCHEMA))
    # cluster a last checked by r2, b by r1, c by a run that never completed
    store.append(GOLD_STATE_TABLE, spark.createDataFrame(
        [("a", "fp", "r2"), ("b", "fp", "r1"), ("c", "fp", "killed")], STATE_SCHEMA))
    return store


def test_an_old_gold_table_gets_the_columns_once_filled_from_run_summary(spark, tmp_path):
    store = _old_lake(spark, str(tmp_path / "lake"))
    assert ensure_seen_columns(store)
    assert store.columns(VIOLATIONS_TABLE) == ["run_id", "violation_id", *CHECK_COLUMNS, *SEEN_COLUMNS]
    dt_ = DeltaTable(store.path(VIOLATIONS_TABLE))
    comments = {f.name: f.metadata.get("comment") for f in dt_.schema().fields}
    assert {c: comments[c] for c in SEEN_COLUMNS} == column_comments(VIOLATIONS_TABLE, SEEN_COLUMNS)
    assert dt_.metadata().partition_columns == ["cluster_id"]
    seen = {r["violation_id"]: (r["first_seen_at"], r["last_seen_at"]) for r in store.read(VIOLATIONS_TABLE).collect()}
    assert seen == {"v-a": (DAY1, DAY2), "v-b": (DAY1, DAY1), "v-c": (None, None)}
    version = dt_.version()
    assert not ensure_seen_columns(store), "a table that has them is left alone"
    assert DeltaTable(store.path(VIOLATIONS_TABLE)).version() == version


def test_a_migrated_table_takes_the_check_stages_rows(spark, tmp_path):
    store = _old_lake(spark, str(tmp_path / "lake"))
    ensure_seen_columns(store)
    known = store.read_where(VIOLATIONS_TABLE, "cluster_id", ["a", "c"])
    # tonight: v-a's evidence grew (a new id), v-c re-found, v-new is new
    found = spark.createDataFrame(
        [_row("", "v-a2", "a", ["e1", "e9"]), _row("", "v-c", "c", ["e3"]), _row("", "v-new", "a", ["e7"])],
        OLD_SCHEMA).drop("run_id")
    firsts = {r["violation_id"]: (r["_first_run"], r["_first_seen"])
              for r in first_reports(found, known, ["r1", "r2"]).collect()}
    # v-c's first run was killed: reported again (no _first_run) but first seen stays what it was
    assert firsts == {"v-a2": ("r1", DAY1), "v-c": (None, None)}
    tonight = dt.datetime(2026, 11, 3, 23, 0)
    rows = (
        found.join(first_reports(found, known, ["r1", "r2"]), "violation_id", "left")
        .withColumn("run_id", F.coalesce("_first_run", F.lit("r3")))
        .withColumn("first_seen_at", F.coalesce("_first_seen", F.lit(tonight)))
        .withColumn("last_seen_at", F.lit(tonight))
        .select("run_id", "violation_id", *CHECK_COLUMNS, *SEEN_COLUMNS)
    )
    store.replace_where(VIOLATIONS_TABLE, rows, "cluster_id", ["a", "c"])
    seen = {r["violation_id"]: (r["run_id"], r["first_seen_at"], r["last_seen_at"])
            for r in store.read(VIOLATIONS_TABLE).collect()}
    assert seen == {
        "v-a2": ("r1", DAY1, tonight), "v-c": ("r3", tonight, tonight), "v-new": ("r3", tonight, tonight),
        "v-b": ("r1", DAY1, DAY1),
    }
