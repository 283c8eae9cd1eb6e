"""The events gold's violations cite, looked up once in a run (epoch_audit.gold.evidence): the rows
a scan of bronze finds for the same ids, kept only while a run shares them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from pyspark.sql import functions as F

from epoch_audit.config import AppConfig
from epoch_audit.gold import evidence
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import EVENTS_TABLE, VIOLATIONS_TABLE
from epoch_audit.stages.check import run_checks
from epoch_audit.stages.ingest import ingest
from epoch_audit.stages.timelines import run_timelines

SAMPLES = Path(__file__).parents[2] / "data" / "samples"


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


@pytest.fixture(scope="module")
def checked_lake(spark, tmp_path_factory) -> DeltaRsStorage:
    """The ZooKeeper samples ingested, their timelines built and checked (gold cites their events)."""
    root = tmp_path_factory.mktemp("evidence")
    shutil.copytree(SAMPLES / "kafka-zk", root / "in")
    storage = DeltaRsStorage(spark, str(root / "lake"))
    config = AppConfig()
    ingest(spark, storage, [str(root / "in")], config, "r1")
    run_timelines(spark, storage, config, "r1")
    run_checks(spark, storage, config, "r1")
    return storage


def test_no_tables_no_cited_events(spark, tmp_path: Path) -> None:
    assert evidence.cited_events(DeltaRsStorage(spark, str(tmp_path / "lake"))) is None


def test_cited_events_are_the_bronze_rows_of_every_cited_id(checked_lake: DeltaRsStorage) -> None:
    storage = checked_lake
    violations = storage.read(VIOLATIONS_TABLE)
    ids = evidence.cited_ids(violations)
    assert ids and len(ids) == violations.select(F.explode("evidence")).distinct().count()
    cited = evidence.cited_events(storage)
    bronze = storage.read(EVENTS_TABLE)
    scanned = bronze.join(violations.select(F.explode("evidence").alias("event_id")).distinct(), "event_id",
                          "left_semi")
    columns = list(evidence.CITED_COLUMNS)
    assert _rows(cited.select(*columns)) == _rows(scanned.select(*columns))
    assert cited.count() == len(ids)  # every cited id is in bronze, once

    # Outside a run nothing is kept; inside, the first lookup is the next stage's.
    assert evidence.cited_events(storage) is not evidence.cited_events(storage)
    with evidence.sharing():
        first = evidence.cited_events(storage)
        assert evidence.cited_events(storage) is first
    assert evidence.cited_events(storage) is not first


def test_too_many_cited_ids_are_left_to_the_callers(checked_lake: DeltaRsStorage, monkeypatch) -> None:
    monkeypatch.setattr(evidence, "MAX_CITED_IDS", 1)
    assert evidence.cited_events(checked_lake) is None
