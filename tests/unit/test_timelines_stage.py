"""The timelines stage rebuilds the clusters whose bronze moved, and a silver table whose stored
columns differ from what this build gives (an older build's lake) for every cluster."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from pyspark.sql import functions as F

from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import SILVER_STATE_TABLE, silver_table
from epoch_audit.silver.tables import SILVER_TABLES
from epoch_audit.stages.ingest import ingest
from epoch_audit.stages.state import mark_built
from epoch_audit.stages.timelines import run_timelines

SAMPLES = Path(__file__).parents[2] / "data" / "samples"


def _rows(storage: DeltaRsStorage, table: str) -> list[tuple]:
    df = storage.read(table)
    return sorted((tuple(r) for r in df.select(*sorted(df.columns)).collect()), key=repr)


def test_a_table_with_other_columns_is_rebuilt_for_every_cluster(spark, tmp_path: Path, caplog) -> None:
    for name in ("kafka-zk", "kafka-kraft"):
        shutil.copytree(SAMPLES / name, tmp_path / "in" / name)
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    config = AppConfig()
    ingest(spark, storage, [str(tmp_path / "in")], config, "r1")
    first = run_timelines(spark, storage, config, "r1")
    clusters = first.detail["clusters"]
    assert len(clusters) == 2
    before = {name: _rows(storage, silver_table(name)) for name in SILVER_TABLES}
    built_columns = set(storage.columns(silver_table("broker_registrations")))

    # an older build's broker_registrations: one more column, and only the first cluster's bronze moved
    table = silver_table("broker_registrations")
    storage.overwrite(table, storage.read(table).withColumn("retired_column", F.lit(1)))
    mark_built(storage, SILVER_STATE_TABLE, clusters[:1], {clusters[0]: "an older fingerprint"}, "r0")
    with caplog.at_level(logging.WARNING, logger="epoch_audit.stages.timelines"):
        second = run_timelines(spark, storage, config, "r2")

    assert "silver schema changed (broker_registrations)" in caplog.text
    assert sorted(second.detail["clusters"]) == sorted(clusters)  # every cluster, not the moved one alone
    assert set(storage.columns(table)) == built_columns
    for name in SILVER_TABLES:  # same bronze, same rows, in every table and for both clusters
        assert _rows(storage, silver_table(name)) == before[name], name


def test_only_the_clusters_whose_bronze_moved_are_rebuilt(spark, tmp_path: Path) -> None:
    for name in ("kafka-zk", "kafka-kraft"):
        shutil.copytree(SAMPLES / name, tmp_path / "in" / name)
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    config = AppConfig()
    ingest(spark, storage, [str(tmp_path / "in")], config, "r1")
    clusters = run_timelines(spark, storage, config, "r1").detail["clusters"]
    before = {name: _rows(storage, silver_table(name)) for name in SILVER_TABLES}

    mark_built(storage, SILVER_STATE_TABLE, clusters[1:], {clusters[1]: "an older fingerprint"}, "r0")
    again = run_timelines(spark, storage, config, "r2")

    assert again.detail["clusters"] == clusters[1:]
    assert set(again.detail["task_seconds"]) == set(SILVER_TABLES)
    for name in SILVER_TABLES:
        assert _rows(storage, silver_table(name)) == before[name], name
