"""Guards that stop one bad argument or a second writer from damaging a lake (no Spark needed)."""

from __future__ import annotations

import datetime as dt
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from epoch_audit.cli import main
from epoch_audit.lake.lock import LOCK_NAME, LakeBusyError, acquire, lake_lock, release

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "samples" / "redpanda"


@pytest.mark.parametrize("run_id", ["..", "../gold", "a/b", "a..b", ".", "x" * 65, "", "gold/violations", "a b"])
def test_run_id_that_could_name_a_path_is_refused(tmp_path, capsys, run_id):
    lake = tmp_path / "lake"
    assert main(["run", "--input", str(SAMPLE), "--lake", str(lake), "--run-id", run_id]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--run-id" in err[0]
    assert not lake.exists()  # refused before anything touched the lake


@pytest.mark.parametrize("run_id", ["20240305T010000Z-abc123", "nightly.2024-03-05", "A_b-c.9"])
def test_ordinary_run_ids_are_accepted(run_id):
    from epoch_audit.cli import run_id_argument

    assert run_id_argument(run_id) == run_id


def _write_lock(lake: Path, **fields) -> Path:
    lake.mkdir(parents=True, exist_ok=True)
    record = {
        "host": socket.gethostname(), "pid": os.getpid(), "started_at": "2026-11-26T01:00:00+00:00",
        "command": "epoch-audit run", "token": "t0",
        "lease_until": (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=10)).isoformat(),
    }
    record.update(fields)
    path = lake / LOCK_NAME
    path.write_text(json.dumps(record))
    return path


def test_second_run_on_a_held_lake_exits_2_naming_the_holder(tmp_path, capsys):
    lake = tmp_path / "lake"
    path = _write_lock(lake)  # held by this (live) process
    assert main(["run", "--input", str(SAMPLE), "--lake", str(lake)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert f"host {socket.gethostname()}" in err[0] and f"pid {os.getpid()}" in err[0] and str(lake) in err[0]
    assert "2026-11-26T01:00:00" in err[0]
    assert json.loads(path.read_text())["token"] == "t0"  # the holder's lock is untouched
    assert not (lake / "bronze").exists()


def test_lock_of_a_killed_run_on_this_host_is_taken_over(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lake = tmp_path / "lake"
    _write_lock(lake, pid=dead.pid)
    record = acquire(str(lake), "epoch-audit run")
    assert json.loads((lake / LOCK_NAME).read_text())["token"] == record["token"]
    release(str(lake), record)
    assert not (lake / LOCK_NAME).exists()
    assert [p.name for p in lake.iterdir()] == []  # no stale copies left behind


def test_lock_of_another_host_holds_until_its_lease_expires(tmp_path):
    lake = tmp_path / "lake"
    _write_lock(lake, host="other-host", pid=1)
    with pytest.raises(LakeBusyError, match="other-host"):
        acquire(str(lake), "epoch-audit run")
    expired = (dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)).isoformat()
    _write_lock(lake, host="other-host", pid=1, lease_until=expired)
    record = acquire(str(lake), "epoch-audit run")
    assert json.loads((lake / LOCK_NAME).read_text())["token"] == record["token"]


def test_lock_is_released_when_the_run_fails(tmp_path):
    lake = tmp_path / "lake"
    with pytest.raises(RuntimeError), lake_lock(str(lake), "epoch-audit run"):
        assert (lake / LOCK_NAME).exists()
        raise RuntimeError("stage failed")
    assert not (lake / LOCK_NAME).exists()
    with lake_lock(str(lake), "epoch-audit run"), pytest.raises(LakeBusyError):
        acquire(str(lake), "epoch-audit run")
