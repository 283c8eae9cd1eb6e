"""Which local runs start their JVM as a short run (no C2, no generated code): pure Python, no Spark."""

from __future__ import annotations

from pathlib import Path

from epoch_audit.spark import is_below, local_bytes, run_weight


def is_short_run(inputs: list, lake: str, max_bytes: int) -> bool:
    return is_below(run_weight(inputs, lake), max_bytes)


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


def _bronze(lake: Path, parts: list[tuple[str, str, int]]) -> Path:
    """A real Delta bronze/events table: appends of (event_class, event_date, rows)."""
    import pyarrow as pa
    from deltalake import write_deltalake

    events = lake / "bronze" / "events"
    for event_class, day, rows in parts:
        table = pa.table({"cluster_id": ["c1"] * rows, "event_class": [event_class] * rows,
                          "event_date": [day] * rows, "raw": ["x" * 300] * rows})
        write_deltalake(str(events), table, mode="append", partition_by=["cluster_id", "event_class", "event_date"])
    return events


def test_bronze_weighs_the_rows_a_night_reads(tmp_path):
    from deltalake import DeltaTable

    from epoch_audit.spark import BRONZE_ROW_BYTES, bronze_as_input_bytes

    events = _bronze(tmp_path / "lake", [("state", "2024-03-01", 10), ("traffic", "2024-03-01", 500),
                                         ("traffic", "2024-03-09", 20), ("traffic", "2024-03-10", 30)])
    # no carry: every row; a horizon up to a day back: state + the traffic of the last two event days
    assert bronze_as_input_bytes(events, None) == 560 * BRONZE_ROW_BYTES
    assert bronze_as_input_bytes(events, 1440) == bronze_as_input_bytes(events, 60) == 60 * BRONZE_ROW_BYTES
    assert bronze_as_input_bytes(events, 0) == 40 * BRONZE_ROW_BYTES
    # files a compaction replaced stay on disk until vacuum: not read, not counted
    _bronze(tmp_path / "lake", [("state", "2024-03-01", 10)])
    assert DeltaTable(str(events)).optimize.compact()["numFilesRemoved"] == 2
    assert bronze_as_input_bytes(events, None) == 570 * BRONZE_ROW_BYTES


def test_bronze_weighs_the_traffic_from_the_horizons_day(tmp_path):
    """With ``event_time`` statistics in the log, the traffic of the horizon's own day on: a one-hour
    lag at 05:00 reads that day's partition only, a day's lag the day before too."""
    import datetime as dt

    import pyarrow as pa
    from deltalake import write_deltalake

    from epoch_audit.spark import BRONZE_ROW_BYTES, bronze_as_input_bytes

    events = tmp_path / "lake" / "bronze" / "events"
    for event_class, day, rows, hour in [("state", "2024-03-01", 10, 1), ("traffic", "2024-03-09", 500, 23),
                                         ("traffic", "2024-03-10", 30, 5)]:
        at = dt.datetime.fromisoformat(day).replace(hour=hour, tzinfo=dt.UTC)
        table = pa.table({"cluster_id": ["c1"] * rows, "event_class": [event_class] * rows,
                          "event_date": [day] * rows, "event_time": pa.array([at] * rows, pa.timestamp("us", "UTC"))})
        write_deltalake(str(events), table, mode="append", partition_by=["cluster_id", "event_class", "event_date"])
    assert bronze_as_input_bytes(events, 60) == 40 * BRONZE_ROW_BYTES
    assert bronze_as_input_bytes(events, 1440) == 540 * BRONZE_ROW_BYTES
    assert bronze_as_input_bytes(events, None) == 540 * BRONZE_ROW_BYTES


def test_bronze_without_a_log_is_sized_as_a_directory(tmp_path):
    from epoch_audit.spark import bronze_as_input_bytes

    events = tmp_path / "lake" / "bronze" / "events"
    _write(events / "part-0.parquet", 300)
    assert bronze_as_input_bytes(events, 60) == 300


def test_a_nights_window_sizes_its_own_deliveries(tmp_path, monkeypatch):
    """`--date`: only the files delivered that day count (the tree of earlier nights is not read)."""
    import os

    from epoch_audit import spark as spark_module
    from epoch_audit.cli import main

    tree = tmp_path / "logs" / "cluster=c1" / "broker-1"
    old = _write(tree / "server.log.2024-03-01-10", 5000)
    os.utime(old, (1_709_251_200, 1_709_251_200))  # 2024-03-01
    _write(tree / "server.log", 100)  # delivered now
    seen: list[list] = []

    def sized(inputs, lake, lag=None):
        seen.append([Path(p).name for p in inputs])
        raise SystemExit(0)  # the sizing is all this test asks about: stop before Spark starts

    monkeypatch.setattr(spark_module, "run_weight", sized)
    today = __import__("datetime").date.today().isoformat()
    for extra in (["--date", today], []):
        try:
            main(["run", "--input", str(tmp_path / "logs"), "--lake", str(tmp_path / "lake"), *extra])
        except SystemExit:
            pass
    assert seen == [["server.log"], ["server.log", "server.log.2024-03-01-10"]]


def test_a_mid_size_run_gets_c1_and_a_long_one_c2(tmp_path, monkeypatch):
    """Between ``short_run_max_bytes`` and ``c2_min_bytes`` a run keeps generated code but not C2;
    from ``c2_min_bytes`` on it gets C2; 0 turns the limit off (always C2)."""
    from epoch_audit import spark as spark_module
    from epoch_audit.cli import main

    _write(tmp_path / "logs" / "cluster=c1" / "broker-1" / "server.log", 600)
    started: list[tuple[bool, bool]] = []

    def launch(*args, short_run=False, c2_compiler=True, **kwargs):
        started.append((short_run, c2_compiler))
        raise SystemExit(0)  # which JVM is all this test asks about: stop before Spark starts

    monkeypatch.setattr(spark_module, "get_spark", launch)
    for short_max, c2_min in ((100, 1000), (100, 500), (1000, 2000), (100, 0)):
        conf = tmp_path / f"conf-{short_max}-{c2_min}.yaml"
        conf.write_text(f"spark:\n  short_run_max_bytes: {short_max}\n  c2_min_bytes: {c2_min}\n")
        try:
            main(["run", "--input", str(tmp_path / "logs"), "--lake", str(tmp_path / "lake"), "--conf", str(conf)])
        except SystemExit:
            pass
    assert started == [(False, False), (False, True), (True, False), (False, True)]
