"""Delta table descriptions and column comments from the contracts, on the delta-rs engine (the
delta-spark engine's: tests/e2e/test_table_descriptions_delta_spark.py), and docs/tables.md in sync."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from epoch_audit_tools.table_docs import tables_markdown
from pyspark.sql.types import StructType

from epoch_audit.contracts.descriptions import SHARED_COLUMNS, TABLES, column_comments, table_description
from epoch_audit.contracts.events import EVENT_SCHEMA
from epoch_audit.contracts.silver import TIMELINE_SCHEMA
from epoch_audit.contracts.violations import CHECK_SCHEMA, SEEN_COLUMNS
from epoch_audit.gold.analysis.input_sanity import INPUT_PROBLEMS_SCHEMA
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import GOLD_STATE_TABLE, RUN_SUMMARY_TABLE, VIOLATIONS_TABLE
from epoch_audit.stages.ingest import ACCOUNTING_SCHEMA, FILES_SCHEMA
from epoch_audit.stages.input_signs import SIGNS_SCHEMA
from epoch_audit.stages.maintain import lake_tables
from epoch_audit.stages.state import RUN_SUMMARY_SCHEMA, RUN_SUMMARY_TYPED_SCHEMA, STATE_SCHEMA
from epoch_audit.stages.suppress import SUPPRESSIONS_SCHEMA
from epoch_audit.validate.runner import RESULTS_SCHEMA

REPO = Path(__file__).resolve().parents[2]


def _comments(dt: DeltaTable) -> dict[str, str | None]:
    return {f.name: f.metadata.get("comment") for f in dt.schema().fields}


def _ddl_columns(ddl: str | StructType) -> list[str]:
    if isinstance(ddl, StructType):
        return ddl.fieldNames()
    return [part.strip().split()[0] for part in ddl.split(",")]


def test_every_table_and_every_column_is_described(spark):
    """Each table a lake can hold has a description; every column of the schemas the stages write
    has a comment (the silver tables' columns from their builders over an empty events frame)."""
    from epoch_audit.config import load_config
    from epoch_audit.silver.tables import SILVER_TABLES

    assert sorted(lake_tables()) == sorted(TABLES)
    written = {
        "bronze/events": EVENT_SCHEMA.fieldNames() + ["event_date", "event_class", "own_time"],
        "bronze/ingest_accounting": ACCOUNTING_SCHEMA.fieldNames(),
        "bronze/ingest_files": FILES_SCHEMA.fieldNames(),
        "quarantine/lines": ["file_id", "source_file", "line_number", "reason", "raw", "run_id"],
        "silver/partition_timeline": TIMELINE_SCHEMA.fieldNames(),
        "gold/violations": ["run_id", "violation_id", *CHECK_SCHEMA.fieldNames(), *SEEN_COLUMNS],
        "gold/run_summary": RUN_SUMMARY_SCHEMA.fieldNames(),
        "gold/validation_results": RESULTS_SCHEMA.fieldNames(),
        "gold/daily_invariant_counts": ["date", "cluster_id", "invariant", "severity", "confidence", "count",
                                        "suppressed"],
        "gold/suppressions": _ddl_columns(SUPPRESSIONS_SCHEMA),
        "gold/input_problems": _ddl_columns(INPUT_PROBLEMS_SCHEMA),
        "state/silver_built": _ddl_columns(STATE_SCHEMA),
        "state/gold_checked": _ddl_columns(STATE_SCHEMA),
        "state/traffic_carry": EVENT_SCHEMA.fieldNames() + ["event_date", "event_class", "own_time",
                                                            "carry_horizon_micros", "carry_fingerprint"],
        "state/input_signs": SIGNS_SCHEMA.fieldNames(),
    }
    events = spark.createDataFrame([], EVENT_SCHEMA)
    config = load_config(None, "local")
    for name, build in SILVER_TABLES.items():
        written[f"silver/{name}"] = build(events, config).columns
    assert sorted(written) == sorted(TABLES)
    for table, columns in written.items():
        entry = table_description(table)
        assert entry is not None and len(entry.description) > 20, table
        assert set(column_comments(table, columns)) == set(columns), (table, set(columns) - set(column_comments(
            table, columns)))
    assert all(text.strip() for text in SHARED_COLUMNS.values())


def test_a_new_table_carries_its_description_and_comments(spark, tmp_path):
    store = DeltaRsStorage(spark, str(tmp_path / "lake"))
    untyped = (None,) * len(RUN_SUMMARY_TYPED_SCHEMA.fields)
    store.overwrite(RUN_SUMMARY_TABLE, spark.createDataFrame([("r1", "run", None, None, 0, 0, "{}", *untyped)],
                                                             RUN_SUMMARY_SCHEMA))
    dt = DeltaTable(store.path(RUN_SUMMARY_TABLE))
    assert dt.metadata().description == TABLES[RUN_SUMMARY_TABLE].description
    assert _comments(dt) == column_comments(RUN_SUMMARY_TABLE, RUN_SUMMARY_SCHEMA.fieldNames())
    assert dt.version() == 0  # created with them: no metadata commit after
    store.append(RUN_SUMMARY_TABLE, spark.createDataFrame([("r2", "run", None, None, 3, 2, "{}", *untyped)],
                                                          RUN_SUMMARY_SCHEMA))
    assert DeltaTable(store.path(RUN_SUMMARY_TABLE)).version() == 1
    # an overwrite (state tables, daily counts: every run) keeps the comments, so the next process
    # (a fresh storage object) has nothing to re-describe: one commit each, no metadata commits
    store.overwrite(RUN_SUMMARY_TABLE, spark.createDataFrame([("r3", "run", None, None, 0, 0, "{}", *untyped)],
                                                             RUN_SUMMARY_SCHEMA))
    assert _comments(DeltaTable(store.path(RUN_SUMMARY_TABLE))) == column_comments(
        RUN_SUMMARY_TABLE, RUN_SUMMARY_SCHEMA.fieldNames())
    DeltaRsStorage(spark, store.lake).overwrite(RUN_SUMMARY_TABLE, spark.createDataFrame(
        [("r4", "run", None, None, 0, 0, "{}", *untyped)], RUN_SUMMARY_SCHEMA))
    assert DeltaTable(store.path(RUN_SUMMARY_TABLE)).version() == 3


def test_a_lake_written_before_gets_them_without_a_data_rewrite(spark, tmp_path):
    """A table without descriptions (written by an older build) gets them at its next write, or from
    ``epoch-audit maintain``, by metadata commits only: the data files stay as they were."""
    from epoch_audit.cli import main

    lake = tmp_path / "lake"
    old = pa.table({"cluster_id": ["a"], "fingerprint": ["fp"], "run_id": ["old"]})
    write_deltalake(str(lake / GOLD_STATE_TABLE), old)
    write_deltalake(str(lake / VIOLATIONS_TABLE), pa.table({"run_id": ["old"], "violation_id": ["v1"],
                                                            "cluster_id": ["a"]}))
    before = DeltaTable(str(lake / GOLD_STATE_TABLE))
    assert before.metadata().description is None and set(_comments(before).values()) == {None}
    files = set(before.file_uris())

    store = DeltaRsStorage(spark, str(lake))
    store.append(GOLD_STATE_TABLE, spark.createDataFrame([("b", "fp2", "new")], STATE_SCHEMA))
    after = DeltaTable(str(lake / GOLD_STATE_TABLE))
    assert after.metadata().description == TABLES[GOLD_STATE_TABLE].description
    assert _comments(after) == column_comments(GOLD_STATE_TABLE, ["cluster_id", "fingerprint", "run_id"])
    assert files < set(after.file_uris())  # the old file kept, the new rows added beside it
    assert sorted(tuple(r) for r in store.read(GOLD_STATE_TABLE).collect()) == [("a", "fp", "old"),
                                                                              ("b", "fp2", "new")]
    assert store.describe(GOLD_STATE_TABLE) == 0  # up to date: nothing more to commit

    # maintain describes the tables no run has written since (its summary counts the commits)
    assert main(["maintain", "--lake", str(lake), "--retention-hours", "168"]) == 0
    violations = DeltaTable(str(lake / VIOLATIONS_TABLE))
    assert violations.metadata().description == TABLES[VIOLATIONS_TABLE].description
    # ... and, as every command does first, gives the old gold table this build's columns (null here:
    # no gold/run_summary to fill them from), by a metadata commit as well
    columns = ["run_id", "violation_id", "cluster_id", *SEEN_COLUMNS]
    assert _comments(violations) == column_comments(VIOLATIONS_TABLE, columns)
    assert [tuple(r) for r in store.read(VIOLATIONS_TABLE).collect()] == [("old", "v1", "a", None, None)]


def test_docs_tables_page_is_generated_from_the_contracts():
    page = REPO / "docs" / "tables.md"
    assert page.read_text(encoding="utf-8") == tables_markdown(), (
        "docs/tables.md is out of date: python -m epoch_audit_tools.table_docs > docs/tables.md"
    )
