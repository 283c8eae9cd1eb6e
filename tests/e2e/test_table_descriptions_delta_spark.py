"""Table descriptions and column comments on the delta-spark engine, read back the SQL way
(``DESCRIBE DETAIL`` for the description, ``DESCRIBE TABLE`` for the comments), in a classic local
session with Delta's package in a process of its own (the test session has no Delta classes).

A new table is written with them; a table an older build wrote without them gets them at its next
write and through ``describe`` (what ``epoch-audit maintain`` calls) by metadata commits only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from epoch_audit.contracts.descriptions import TABLES, column_comments
from tests.helpers import child_env

SCRIPT = textwrap.dedent(
    """
    import json, sys
    from epoch_audit.config import DELTA_SPARK_PACKAGE
    from epoch_audit.lake.delta_spark import DeltaSparkStorage, delta_session_conf
    from epoch_audit.spark import get_spark
    from epoch_audit.stages.state import RUN_SUMMARY_SCHEMA, RUN_SUMMARY_TYPED_SCHEMA, STATE_SCHEMA

    lake = sys.argv[1]
    spark = get_spark("local[1]", "1g", delta_session_conf(), short_run=True, packages=[DELTA_SPARK_PACKAGE])
    store = DeltaSparkStorage(spark, lake)
    # a new table, through the engine
    store.overwrite("gold/run_summary", spark.createDataFrame(
        [("r1", "run", None, None, 0, 0, "{}", *(None,) * len(RUN_SUMMARY_TYPED_SCHEMA.fields))], RUN_SUMMARY_SCHEMA))
    # two tables as an older build left them: plain Delta writes, no description, no comment
    old = spark.createDataFrame([("a", "fp", "old")], STATE_SCHEMA)
    old.write.format("delta").save(store.path("state/gold_checked"))
    old.write.format("delta").save(store.path("state/silver_built"))
    store.append("state/gold_checked", spark.createDataFrame([("b", "fp2", "new")], STATE_SCHEMA))
    commits = store.describe("state/silver_built")  # what maintain runs on a table no run has written
    out = {"describe_commits": commits, "again": store.describe("state/silver_built"), "tables": {}}
    for table in ("gold/run_summary", "state/gold_checked", "state/silver_built"):
        name = "delta.`" + store.path(table) + "`"
        detail = spark.sql("DESCRIBE DETAIL " + name).first()
        columns = {r["col_name"]: r["comment"] for r in spark.sql("DESCRIBE TABLE " + name).collect()
                   if r["col_name"] and not r["col_name"].startswith("#")}
        history = [r["operation"] for r in spark.sql("DESCRIBE HISTORY " + name).orderBy("version").collect()]
        rows = sorted(tuple(r) for r in store.read(table).collect())
        out["tables"][table] = {"description": detail["description"], "columns": columns,
                                "history": history, "rows": [list(r[:1]) for r in rows]}
    print("RESULT " + json.dumps(out))
    """
)


@pytest.mark.slow  # a JVM of its own with Delta's package
def test_delta_spark_writes_descriptions_and_gives_them_to_older_tables(tmp_path):
    res = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "lake")], env=child_env(),
                         capture_output=True, text=True, timeout=900, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
    (line,) = [x for x in res.stdout.splitlines() if x.startswith("RESULT ")]
    out = json.loads(line.removeprefix("RESULT "))
    for table, seen in out["tables"].items():
        assert seen["description"] == TABLES[table].description, table
        assert seen["columns"] == column_comments(table, list(seen["columns"])), table
        assert set(seen["columns"]) == set(column_comments(table, list(seen["columns"]))), table
    # no data rewritten: after the first write, only the append and metadata commits
    assert out["tables"]["state/silver_built"]["history"][0] == "WRITE"
    assert all(op in ("SET TBLPROPERTIES", "CHANGE COLUMN") for op in out["tables"]["state/silver_built"]["history"][1:])
    assert out["describe_commits"] == 1 + 3 and out["again"] == 0  # the description, three columns; then nothing
    assert out["tables"]["state/gold_checked"]["rows"] == [["a"], ["b"]]
    # the new table was created with its comments: one table-comment commit after the write
    assert out["tables"]["gold/run_summary"]["history"] == ["WRITE", "SET TBLPROPERTIES"]
