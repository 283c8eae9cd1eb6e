"""The dashboard queries (``dashboards/*.sql``) on a small hand-made lake, in DuckDB and Spark SQL.

The lake is written through ``DeltaRsStorage`` with the real table schemas (gold/violations,
gold/daily_invariant_counts built by the report stage's transform, gold/validation_results,
bronze/ingest_accounting, gold/run_summary). Every query runs unchanged in DuckDB over ``deltalake`` datasets and in
Spark SQL with ANSI mode on (the Databricks SQL dialect); both must give the expected rows. The
Lakeview dashboard must embed exactly these queries and chart only columns they return.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from deltalake import DeltaTable

from epoch_audit.contracts.violations import CHECK_COLUMNS, CHECK_SCHEMA
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.report.gather import daily_invariant_counts
from epoch_audit.stages.ingest import ACCOUNTING_SCHEMA
from epoch_audit.stages.state import RUN_SUMMARY_SCHEMA, run_summary_row
from epoch_audit.validate.runner import RESULTS_SCHEMA

REPO = Path(__file__).resolve().parents[2]
SQL_DIR = REPO / "dashboards"
LAKEVIEW = SQL_DIR / "epoch_audit.lvdash.json"
QUERIES = sorted(SQL_DIR.glob("*.sql"))

# view name -> lake table
VIEWS = {
    "violations": "gold/violations",
    "daily_invariant_counts": "gold/daily_invariant_counts",
    "validation_results": "gold/validation_results",
    "ingest_accounting": "bronze/ingest_accounting",
    "run_summary": "gold/run_summary",
}

R1, R2 = "20261120T030000Z-aaaaaa", "20261121T030000Z-bbbbbb"


def ts(day: int, hour: int) -> datetime:
    return datetime(2026, 11, day, hour, 0, 0)


# (run, id, invariant, severity, confidence, cluster, topic, partition, broker, epoch, expected, event_time)
VIOLATIONS = [
    (R1, "v1", "stale_stop_replica_accepted", "error", "confirmed", "c1", "clicks", 0, 3, 7, 8, ts(20, 10)),
    (R1, "v2", "two_leaders_same_epoch", "error", "confirmed", "c1", "clicks", 0, 2, 1, None, ts(20, 11)),
    (R1, "v7", "two_leaders_same_epoch", "error", "suspected", "c1", "clicks", 1, 1, 3, None, ts(20, 12)),
    (R2, "v3", "high_watermark_regression", "warning", "suspected", "c1", "clicks", 1, 1, None, None, ts(21, 9)),
    (R2, "v4", "fenced_replica_in_isr", "error", "confirmed", "c2", "orders", 0, 1, 5, None, ts(21, 12)),
    (R2, "v5", "leader_epoch_regression", "error", "confirmed", "c1", "clicks", 0, 3, 2, 3, None),
    (R2, "v6", "stale_broker_epoch_isr_join", "error", "confirmed", "c1", None, None, 2, None, None, ts(21, 8)),
]

# gold/suppressions rows (violation id, status): only an active entry's count as suppressed
SUPPRESSED = [("v7", "active"), ("v5", "active"), ("v1", "expired")]

# (run, validated_at, suite, table, expectation, critical, status)
RESULTS = [
    (R1, ts(20, 3), "bronze", "bronze/events", "e1", True, "passed"),
    (R1, ts(20, 3), "bronze", "bronze/events", "e2", True, "passed"),
    (R1, ts(20, 3), "bronze", "bronze/events", "e3", True, "passed"),
    (R1, ts(20, 3), "bronze", "bronze/events", "e4", True, "skipped"),
    (R1, ts(20, 3), "silver", "silver/partition_timeline", "s1", True, "passed"),
    (R1, ts(20, 3), "silver", "silver/partition_timeline", "s2", True, "passed"),
    (R1, ts(20, 3), "silver", "silver/partition_timeline", "s3", True, "failed"),
    (R1, ts(20, 3), "gold", "gold/violations", "g1", False, "error"),
    (R1, ts(20, 3), "gold", "gold/violations", "g2", False, "passed"),
    (R2, ts(21, 3), "bronze", "bronze/events", "e1", True, "skipped"),
]

# (run, file, cluster, start_line, lines_read, parsed, irrelevant, malformed)
ACCOUNTING = [
    (R1, "f1", "c1", 1, 100, 90, 8, 2),
    (R1, "f2", "c1", 1, 50, 50, 0, 0),
    (R1, "f3", "c2", 1, 0, 0, 0, 0),
    (R2, "f1", "c1", 101, 10, 0, 9, 1),
]

EXPECTED: dict[str, list[tuple]] = {
    "violations_over_time": [
        # day, cluster, invariant, severity, violations, confirmed, suppressed (v7 and v5: SUPPRESSED)
        (date(2026, 11, 20), "c1", "stale_stop_replica_accepted", "error", 1, 1, 0),
        (date(2026, 11, 20), "c1", "two_leaders_same_epoch", "error", 2, 1, 1),
        (date(2026, 11, 21), "c1", "high_watermark_regression", "warning", 1, 0, 0),
        (date(2026, 11, 21), "c1", "stale_broker_epoch_isr_join", "error", 1, 1, 0),
        (date(2026, 11, 21), "c2", "fenced_replica_in_isr", "error", 1, 1, 0),
        (None, "c1", "leader_epoch_regression", "error", 1, 1, 1),
    ],
    "top_partitions": [
        # cluster, topic, partition, violations, errors, invariants, last event
        ("c1", "clicks", 0, 3, 3, 3, ts(20, 11)),
        ("c1", "clicks", 1, 2, 1, 2, ts(21, 9)),
        ("c2", "orders", 0, 1, 1, 1, ts(21, 12)),
    ],
    "top_brokers": [
        # cluster, broker, violations, errors, invariants, partitions, last event
        ("c1", 2, 2, 2, 2, 2, ts(21, 8)),
        ("c1", 3, 2, 2, 2, 1, ts(20, 10)),
        ("c1", 1, 2, 1, 2, 1, ts(21, 9)),
        ("c2", 1, 1, 1, 1, 1, ts(21, 12)),
    ],
    "expectation_pass_rate": [
        # run, validated_at, suite, evaluated, passed, failed, skipped, critical_failed, pass_rate
        (R1, ts(20, 3), "bronze", 3, 3, 0, 1, 0, 1.0),
        (R1, ts(20, 3), "gold", 2, 1, 1, 0, 0, 0.5),
        (R1, ts(20, 3), "silver", 3, 2, 1, 0, 1, 0.6667),
        (R2, ts(21, 3), "bronze", 0, 0, 0, 1, 0, None),
    ],
    "ingest_volume": [
        # run, run_day, cluster, files, lines_read, parsed, irrelevant, malformed, quarantine_rate
        (R1, date(2026, 11, 20), "c1", 2, 150, 140, 8, 2, 0.013333),
        (R1, date(2026, 11, 20), "c2", 1, 0, 0, 0, 0, None),
        (R2, date(2026, 11, 21), "c1", 1, 10, 0, 9, 1, 0.1),
    ],
}


def _violations_df(spark):
    rows = []
    for run, vid, inv, sev, conf, cluster, topic, part, broker, epoch, expected, when in VIOLATIONS:
        check = dict(zip(CHECK_COLUMNS, (inv, sev, conf, cluster, topic, part, broker, epoch, expected, when,
                                         [f"ev-{vid}"], f"explanation of {vid}"), strict=True))
        rows.append((run, vid, *[check[c] for c in CHECK_COLUMNS]))
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField("run_id", StringType()), StructField("violation_id", StringType()),
                         *CHECK_SCHEMA.fields])
    return spark.createDataFrame(rows, schema)


def _results_df(spark):
    names = [f.name for f in RESULTS_SCHEMA.fields]
    rows = []
    for run, when, suite, table, expectation, critical, status in RESULTS:
        row: dict[str, Any] = dict.fromkeys(names)
        row.update(run_id=run, validated_at=when, suite=suite, table=table, expectation=expectation,
                   expectation_type="expect_x", critical=critical, status=status,
                   success=None if status == "skipped" else status == "passed", unexpected_sample=[])
        rows.append(tuple(row[n] for n in names))
    return spark.createDataFrame(rows, RESULTS_SCHEMA)


def _accounting_df(spark):
    rows = [
        (run, fid, f"/logs/{fid}.log", cluster, 1, "kafka_log4j", start, start + n - 1, 0, n, p, i, m, 0)
        for run, fid, cluster, start, n, p, i, m in ACCOUNTING
    ]
    return spark.createDataFrame(rows, ACCOUNTING_SCHEMA)


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("dashboard-lake")
    storage = DeltaRsStorage(spark, str(root))
    violations = _violations_df(spark)
    storage.append("gold/violations", violations)
    # a daily table as an older release wrote it (no suppressed column): the report's overwrite replaces it
    old = daily_invariant_counts(storage.read("gold/violations")).drop("suppressed")
    storage.overwrite("gold/daily_invariant_counts", old)
    suppressions = spark.createDataFrame(SUPPRESSED, "violation_id string, status string")
    active = suppressions.where("status = 'active'")
    storage.overwrite("gold/daily_invariant_counts", daily_invariant_counts(storage.read("gold/violations"), active))
    storage.append("gold/validation_results", _results_df(spark))
    storage.append("bronze/ingest_accounting", _accounting_df(spark))
    runs = [run_summary_row({"run_id": run, "status": "ok", "stages": {}}, "run", start, start)
            for run, start in ((R1, ts(20, 3)), (R2, ts(21, 3)))]
    storage.append("gold/run_summary", spark.createDataFrame(runs, RUN_SUMMARY_SCHEMA))
    return root


def _norm(value: Any) -> Any:
    """Engine-neutral cell: naive UTC datetimes, floats rounded, Decimals as numbers."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value
    if isinstance(value, Decimal):
        value = float(value) if value != value.to_integral_value() else int(value)
    if isinstance(value, float):
        return round(value, 6)
    return value


def run_duckdb(lake: Path, sql: str) -> tuple[list[str], list[tuple]]:
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for view, table in VIEWS.items():
        con.register(view, DeltaTable(str(lake / table)).to_pyarrow_dataset())
    cur = con.execute(sql)
    columns = [d[0] for d in cur.description]
    return columns, [tuple(_norm(v) for v in row) for row in cur.fetchall()]


def run_spark(spark, lake: Path, sql: str) -> tuple[list[str], list[tuple]]:
    storage = DeltaRsStorage(spark, str(lake))
    for view, table in VIEWS.items():
        storage.read(table).createOrReplaceTempView(view)
    previous = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "true")  # Databricks SQL warehouses run ANSI mode
    try:
        df = spark.sql(sql)
        rows = df.collect()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", previous)
    # Spark returns session-time-zone (UTC) wall clock as naive datetimes converted to local time:
    # rebuild them from the UTC session values.
    out = []
    for row in rows:
        cells = []
        for value in row:
            if isinstance(value, datetime) and value.tzinfo is None:
                value = value.astimezone(UTC).replace(tzinfo=None)
            cells.append(_norm(value))
        out.append(tuple(cells))
    return df.columns, out


def test_there_is_one_query_per_panel():
    assert {q.stem for q in QUERIES} == set(EXPECTED)


@pytest.mark.parametrize("query", QUERIES, ids=lambda p: p.stem)
def test_query_gives_the_expected_rows_in_duckdb_and_spark(spark, lake, query):
    sql = query.read_text()
    duck_columns, duck_rows = run_duckdb(lake, sql)
    assert duck_rows == EXPECTED[query.stem]
    spark_columns, spark_rows = run_spark(spark, lake, sql)
    assert spark_columns == duck_columns
    assert spark_rows == duck_rows


def test_queries_are_portable_text():
    """No engine-specific syntax: casts with ::, backtick or double-quoted identifiers, ILIKE, QUALIFY."""
    for query in QUERIES:
        text = "\n".join(line.split("--", 1)[0] for line in query.read_text().splitlines())
        for token in ("::", "`", '"', "${"):
            assert token not in text, (query.name, token)
        for word in ("ILIKE", "QUALIFY", "DATE_TRUNC", "STRFTIME", "DATE_FORMAT"):
            assert not re.search(rf"\b{word}\b", text, re.IGNORECASE), (query.name, word)


def test_lakeview_dashboard_embeds_exactly_the_queries(spark, lake):
    board = json.loads(LAKEVIEW.read_text())
    datasets = {d["name"]: d for d in board["datasets"]}
    assert set(datasets) == {q.stem for q in QUERIES}
    columns: dict[str, list[str]] = {}
    for query in QUERIES:
        assert "".join(datasets[query.stem]["queryLines"]) == query.read_text(), f"{query.name} drifted"
        columns[query.stem] = run_duckdb(lake, query.read_text())[0]
    used = set()
    widgets = [item["widget"] for page in board["pages"] for item in page["layout"]]
    assert widgets
    for widget in widgets:
        for q in widget.get("queries", []):
            name = q["query"]["datasetName"]
            assert name in datasets, (widget["name"], name)
            used.add(name)
            for field in q["query"]["fields"]:
                # fields are plain columns or one aggregate over a column: sum(`col`)
                expression = field["expression"]
                column = expression.split("`")[1] if "`" in expression else expression
                assert column in columns[name], (widget["name"], expression, columns[name])
    assert used == set(datasets), f"datasets not charted: {set(datasets) - used}"
