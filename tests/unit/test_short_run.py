"""Which local runs start their JVM as a short run (no C2, no generated code): pure Python, no Spark."""

from __future__ import annotations

from pathlib import Path

from epoch_audit.spark import is_short_run, local_bytes


def _write(path: Path, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    return path


def test_local_bytes_sums_files_and_directories(tmp_path):
    one = _write(tmp_path / "in" / "a.log", 100)
    _write(tmp_path / "in" / "sub" / "b.log.gz", 50)
    assert local_bytes([tmp_path / "in"]) == 150
    assert local_bytes([one]) == 100
    assert local_bytes([tmp_path / "missing"]) == 0


def test_inputs_and_local_bronze_count_against_the_limit(tmp_path):
    inputs = [_write(tmp_path / "in" / "server.log", 600)]
    lake = tmp_path / "lake"
    assert is_short_run(inputs, str(lake), 1000)  # no lake yet: the inputs alone
    _write(lake / "bronze" / "events" / "part-0.parquet", 300)
    _write(lake / "silver" / "partition_timeline" / "part-0.parquet", 10_000)  # silver is not read as input
    assert is_short_run(inputs, str(lake), 1000)
    _write(lake / "bronze" / "events" / "part-1.parquet", 200)
    assert not is_short_run(inputs, str(lake), 1000)  # 600 + 500 bytes


def test_zero_limit_or_remote_lake(tmp_path):
    inputs = [_write(tmp_path / "in" / "server.log", 10)]
    assert not is_short_run(inputs, str(tmp_path / "lake"), 0)
    assert not is_short_run(inputs, "gs://bucket/lake", 1000)  # a store other than S3: not sized
