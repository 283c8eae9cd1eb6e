"""Silence is an alarm: a host none of whose files grew within ``validation.silence_hours`` fails the
bronze suite (critical), and a first run over no log file exits 2 before Spark starts."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from epoch_audit.cli import main
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.stages.ingest import FILES_SCHEMA
from epoch_audit.validate.base import ValidationSettings
from epoch_audit.validate.bronze import SUITES
from epoch_audit.validate.runner import run_suites

NOW = datetime(2026, 11, 27, 2, 0, tzinfo=UTC)
FILES_SUITE = [s for s in SUITES if s.table == "bronze/ingest_files"]


def _file(file_id: str, cluster: str, host: int | None, hours_ago: float) -> tuple:
    row = {f.name: None for f in FILES_SCHEMA.fields}
    row.update(file_id=file_id, source_file=f"cluster={cluster}/broker-{host}/{file_id}", cluster_id=cluster,
               host_id=host, last_run_id="r0", last_delivered_at=NOW - timedelta(hours=hours_ago))
    return tuple(row[f.name] for f in FILES_SCHEMA.fields)


def test_a_host_whose_files_all_stopped_growing_is_a_critical_failure(spark, tmp_path):
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    rows = [
        _file("a", "c1", 1, 1), _file("b", "c1", 1, 50),  # host 1 delivered an hour ago: one old file is fine
        _file("c", "c1", 2, 30), _file("d", "c1", 2, 40),  # host 2: nothing for 30 hours
        _file("e", "c2", 3, 25.5),  # inside 26 hours
        _file("f", "c3", None, 27),  # a file no host pattern named still belongs to its cluster
    ]
    storage.append("bronze/ingest_files", spark.createDataFrame(rows, FILES_SCHEMA))
    settings = ValidationSettings(run_id="night-9", silent_before=NOW - timedelta(hours=26))
    outcome = run_suites(spark, storage, settings, layers={"bronze": FILES_SUITE})
    (row,) = outcome.rows
    assert (row["expectation"], row["status"], row["critical"]) == ("hosts_not_silent", "failed", True)
    silent = sorted((k["cluster_id"], k.get("host_id"), k["files"]) for k in map(json.loads, row["unexpected_sample"]))
    assert silent == [("c1", "2", "2"), ("c3", None, "1")], silent
    assert outcome.critical_failures == [row]

    # the night after, host 2 and the unnamed host delivered again: no failure
    storage.upsert("bronze/ingest_files", spark.createDataFrame(
        [_file("c", "c1", 2, 0.5), _file("f", "c3", None, 0.5)], FILES_SCHEMA), ["file_id"])
    (row,) = run_suites(spark, storage, settings, layers={"bronze": FILES_SUITE}).rows
    assert row["status"] == "passed", row


def test_silence_hours_zero_judges_no_host():
    assert FILES_SUITE[0].build(ValidationSettings(run_id="r", silent_before=None)) == []
    settings = ValidationSettings.from_config(type("V", (), {
        "critical_suites": ["bronze"], "max_quarantine_rate": 0.01, "unexpected_sample_size": 5,
        "silence_hours": 26})(), "r", now=NOW)
    assert settings.silent_before == NOW - timedelta(hours=26)


def test_a_first_run_over_no_log_file_exits_2_in_one_line(tmp_path, capsys):
    (tmp_path / "in" / "cluster=c1").mkdir(parents=True)
    code = main(["run", "--input", str(tmp_path / "in"), "--lake", str(tmp_path / "lake"), "--json"])
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "no log file under" in err[0], err
    assert json.loads(captured.out)["error"]["kind"] == "input"
    assert not (tmp_path / "lake" / "bronze").exists()  # stopped before Spark wrote anything
