"""An old-schema gold/violations and gold/run_summary continued on the delta-spark engine: ``ALTER TABLE ADD COLUMNS``
adds first_seen_at / last_seen_at (with their comments), the older rows are filled from
gold/run_summary, and the check stage's rows are taken (in a process of its own with Delta's
package: the test session has no Delta classes). delta-rs: tests/unit/test_seen_columns.py."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from epoch_audit.contracts.descriptions import column_comments
from epoch_audit.stages.state import RUN_SUMMARY_SCHEMA
from tests.helpers import child_env

SCRIPT = textwrap.dedent(
    """
    import datetime as dt, json, sys
    from pyspark.sql import functions as F
    from epoch_audit.config import DELTA_SPARK_PACKAGE
    from epoch_audit.contracts.violations import CHECK_COLUMNS, SEEN_COLUMNS
    from epoch_audit.lake.delta_spark import DeltaSparkStorage, delta_session_conf
    from epoch_audit.spark import get_spark
    from epoch_audit.stages.seen import ensure_seen_columns
    from epoch_audit.stages.state import RUN_SUMMARY_BASE_SCHEMA, STATE_SCHEMA
    from tests.unit.test_seen_columns import DAY1, DAY2, OLD_SCHEMA, _row

    lake = sys.argv[1]
    spark = get_spark("local[1]", "1g", delta_session_conf(), short_run=True, packages=[DELTA_SPARK_PACKAGE])
    store = DeltaSparkStorage(spark, lake)
    store.append("gold/violations", spark.createDataFrame(
        [_row("r1", "v-a", "a", ["e1"]), _row("r1", "v-b", "b", ["e2"])], OLD_SCHEMA))
    store.append("gold/run_summary", spark.createDataFrame(
        [("r1", "run", DAY1, DAY1, 3, 2, "{}"), ("r2", "run", DAY2, DAY2, 0, 0, "{}")], RUN_SUMMARY_BASE_SCHEMA))
    store.append("state/gold_checked", spark.createDataFrame([("a", "fp", "r2"), ("b", "fp", "r1")], STATE_SCHEMA))
    out = {"migrated": ensure_seen_columns(store), "again": ensure_seen_columns(store)}
    name = "delta.`" + store.path("gold/violations") + "`"
    out["columns"] = store.columns("gold/violations")
    out["comments"] = {r["col_name"]: r["comment"] for r in spark.sql("DESCRIBE TABLE " + name).collect()
                       if r["col_name"] in SEEN_COLUMNS}
    out["partitions"] = store.partition_columns("gold/violations")
    tonight = dt.datetime(2026, 11, 3, 23, 0)
    new = spark.createDataFrame([_row("r3", "v-new", "a", ["e7"])], OLD_SCHEMA).withColumn(
        "first_seen_at", F.lit(tonight)).withColumn("last_seen_at", F.lit(tonight))
    kept = store.read("gold/violations").where("cluster_id = 'a'").withColumn("last_seen_at", F.lit(tonight))
    store.replace_where("gold/violations", kept.unionByName(new).select(
        "run_id", "violation_id", *CHECK_COLUMNS, *SEEN_COLUMNS), "cluster_id", ["a"])
    out["rows"] = sorted([r["violation_id"], str(r["first_seen_at"]), str(r["last_seen_at"])]
                         for r in store.read("gold/violations").collect())
    # gold/run_summary's typed columns: ALTER TABLE ADD COLUMNS, the rows filled from their JSON
    from epoch_audit.stages.upgrade import ensure_run_summary_columns
    out["summary_migrated"] = ensure_run_summary_columns(spark, store)
    out["summary_columns"] = store.columns("gold/run_summary")
    out["summary_rows"] = sorted([r["run_id"], str(r["run_date"]), r["wall_seconds"]]
                                 for r in store.read("gold/run_summary").collect())
    print("RESULT " + json.dumps(out))
    """
)


@pytest.mark.slow  # a JVM of its own with Delta's package
def test_delta_spark_continues_old_gold_tables_with_the_new_columns(tmp_path):
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "lake")], env=child_env(),
                         capture_output=True, text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(next(line for line in res.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert out["migrated"] is True and out["again"] is False
    assert out["columns"][-2:] == ["first_seen_at", "last_seen_at"]
    assert out["comments"] == column_comments("gold/violations", ["first_seen_at", "last_seen_at"])
    assert out["partitions"] == ["cluster_id"]
    assert out["rows"] == [
        ["v-a", "2026-11-01 23:00:00", "2026-11-03 23:00:00"],
        ["v-b", "2026-11-01 23:00:00", "2026-11-01 23:00:00"],
        ["v-new", "2026-11-03 23:00:00", "2026-11-03 23:00:00"],
    ]
    assert out["summary_migrated"] is True
    assert out["summary_columns"] == RUN_SUMMARY_SCHEMA.fieldNames()
    assert out["summary_rows"] == [["r1", "2026-11-01", 0.0], ["r2", "2026-11-02", 0.0]]
