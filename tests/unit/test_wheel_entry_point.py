"""The installed entry point fails a Databricks wheel task exactly when the exit code is not 0.

A Python wheel task imports the function the wheel's entry point names, puts its parameters in
``sys.argv`` and calls it; what the function returns is ignored. So the entry point must raise
``SystemExit`` for every non-zero exit code, and return normally for 0.
"""

from __future__ import annotations

import sys
from importlib.metadata import entry_points

import pytest
import yaml

from epoch_audit import cli
from tests.unit.test_bundle import REPO


def call_like_a_wheel_task(monkeypatch, parameters: list[str]) -> None:
    """What the task runner does: find the entry point of the wheel by package and name, call it."""
    job = yaml.safe_load((REPO / "resources" / "epoch_audit_job.yml").read_text())["resources"]["jobs"]
    task = job["epoch_audit_nightly"]["tasks"][0]["python_wheel_task"]
    (entry,) = [ep for ep in entry_points(group="console_scripts") if ep.name == task["entry_point"]
                and ep.dist is not None and ep.dist.name.replace("-", "_") == task["package_name"]]
    monkeypatch.setattr(sys, "argv", [task["package_name"], *parameters])
    entry.load()()


def test_a_bad_lake_fails_the_task_with_exit_2(monkeypatch, tmp_path):
    lake_file = tmp_path / "lake"
    lake_file.write_text("a file, not a lake directory")
    with pytest.raises(SystemExit) as failed:
        call_like_a_wheel_task(monkeypatch, ["run", "--input", str(tmp_path), "--lake", str(lake_file)])
    assert failed.value.code == 2


def test_help_returns_normally(monkeypatch, capsys):
    call_like_a_wheel_task(monkeypatch, ["--version"])
    assert capsys.readouterr().out.startswith("epoch-audit ")


@pytest.mark.parametrize("code", [1, 3])
def test_violations_and_internal_errors_fail_the_task(monkeypatch, code):
    monkeypatch.setattr(cli, "main", lambda argv=None: code)
    with pytest.raises(SystemExit) as failed:
        call_like_a_wheel_task(monkeypatch, ["run"])
    assert failed.value.code == code
