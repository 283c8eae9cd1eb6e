"""The check stage cleans up after itself when a write fails: no staged rows are left in the lake,
and the next run checks the same clusters and writes gold."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from epoch_audit.config import AppConfig
from epoch_audit.lake.staging import staging_dir
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import VIOLATIONS_TABLE
from epoch_audit.stages.check import run_checks
from epoch_audit.stages.ingest import ingest
from epoch_audit.stages.timelines import run_timelines

SAMPLES = Path(__file__).parents[2] / "data" / "samples"


def test_a_failed_gold_write_leaves_no_staged_rows(spark, tmp_path: Path, monkeypatch) -> None:
    shutil.copytree(SAMPLES / "kafka-zk", tmp_path / "in")
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    config = AppConfig()
    ingest(spark, storage, [str(tmp_path / "in")], config, "r1")
    run_timelines(spark, storage, config, "r1")
    real = storage.replace_where
    staged = Path(staging_dir(storage.lake, "r-failed"))
    seen_staged = []

    def failing(table: str, *args, **kwargs):
        if table == VIOLATIONS_TABLE:
            seen_staged.append(staged.exists() and any(staged.iterdir()))
            raise OSError("disk full")
        return real(table, *args, **kwargs)

    monkeypatch.setattr(storage, "replace_where", failing)
    with pytest.raises(OSError, match="disk full"):
        run_checks(spark, storage, config, "r-failed")
    assert seen_staged == [True]  # the checks had staged their rows when the write failed
    assert not staged.exists()
    monkeypatch.setattr(storage, "replace_where", real)
    result, _ = run_checks(spark, storage, config, "r2")
    assert result.status == "ran" and result.detail["violations"]
    assert storage.exists(VIOLATIONS_TABLE) and not Path(staging_dir(storage.lake, "r2")).exists()
