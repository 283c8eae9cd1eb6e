"""The command line without Spark: help, version, errors (one line, exit 2 for lake and config, the
JSON error object), log lines off a terminal, the progress display and the final summary line."""

from __future__ import annotations

import io
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import pytest
from rich.console import Console

import epoch_audit
import epoch_audit.spark
from epoch_audit.cli import main
from epoch_audit.console import RunProgress, setup_logging, summary_line
from epoch_audit.errors import LakePathError, lake_failure
from epoch_audit.lake.preflight import PROBE_PREFIX, check_lake_path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "samples" / "redpanda"
NOBODY = 65534


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), str(REPO / "tools"), str(REPO)])
    return env


def _cli(*argv: str, launcher: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """The CLI as a subprocess (stderr a pipe: not a terminal), through ``launcher`` if any."""
    return subprocess.run([*launcher, sys.executable, "-m", "epoch_audit.cli", *argv], capture_output=True,
                          text=True, env=_env(), cwd=REPO, timeout=120)


@pytest.fixture
def no_spark(monkeypatch):
    """Fail the test if a command starts Spark."""
    def refuse(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(epoch_audit.spark, "get_spark", refuse)


# --- help and version ---------------------------------------------------------------------------


def test_version_is_the_package_version(capsys):
    assert main(["--version"]) == 0
    out = capsys.readouterr().out.strip()
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert epoch_audit.__version__ == declared
    assert out.startswith(f"epoch-audit {declared} (Python ") and "PySpark" in out


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]])
def test_help_shows_examples_and_exit_codes_as_plain_text(capsys, argv):
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "examples:\n  epoch-audit run --input data/samples --lake lake" in out
    for code in ("0", "1", "2", "3"):
        assert f"\n  {code}  " in out, code
    assert "``" not in out and ":func:" not in out and ":mod:" not in out  # no reStructuredText
    if argv == ["--help"]:
        assert "Java 17" in out and "--version" in out


def test_no_arguments_print_the_help_not_only_the_missing_command():
    proc = _cli()
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: epoch-audit") and "examples:" in proc.stderr and "exit codes:" in proc.stderr
    assert "run " in proc.stderr and "validate" in proc.stderr


def test_usage_error_is_one_line_pointing_at_the_help(capsys):
    assert main(["run", "--lake", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--input" in err[0] and "see 'epoch-audit run --help'" in err[0] and "(exit 2)" in err[0]


@pytest.mark.parametrize(("option", "value", "says"), [
    ("--spark-remote", "http://spark:15002", "spark.remote: 'http://spark:15002' is not sc://host[:port] or local[N]"),
    ("--engine", "delta-lake", "argument --engine: invalid choice: 'delta-lake'"),
])
def test_bad_engine_or_remote_exits_2_before_spark(tmp_path, capsys, no_spark, option, value, says):
    assert main(["run", "--input", str(SAMPLE), "--lake", str(tmp_path / "lake"), option, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and "(exit 2)" in err[0], err


# --- lake path: refused before Spark -----------------------------------------------------------


def _assert_lake_error(capsys, argv: list[str], lake: str, reason: str) -> None:
    assert main([*argv, "--json"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"epoch-audit: error: lake {lake}: ") and reason in err[0], err
    error = json.loads(captured.out)  # one JSON object on stdout, nothing else
    assert error == {"status": "error", "exit_code": 2,
                     "error": {"kind": "lake", "path": lake, "message": error["error"]["message"]}}
    assert reason in error["error"]["message"]


def test_lake_that_is_a_file_exits_2_before_spark(tmp_path, capsys, no_spark):
    lake = tmp_path / "lake"
    lake.write_text("not a lake")
    _assert_lake_error(capsys, ["run", "--input", str(SAMPLE), "--lake", str(lake)], str(lake),
                       "exists and is not a directory")


def test_lake_under_a_file_exits_2_before_spark(tmp_path, capsys, no_spark):
    (tmp_path / "file").write_text("")
    lake = tmp_path / "file" / "lake"
    _assert_lake_error(capsys, ["check", "--lake", str(lake)], str(lake), f"{tmp_path / 'file'} is a file")


def test_lake_on_a_read_only_file_system_exits_2(capsys, no_spark):
    lake = "/proc/epoch-audit-lake"  # /proc accepts no new directory, even from root
    _assert_lake_error(capsys, ["check", "--lake", lake], lake, "cannot create the directory")


def _unwritable(tmp_path: Path, inner: str | None) -> tuple[Path, tuple[str, ...]]:
    """A lake (or one directory inside it) that the CLI cannot write; the launcher that runs the CLI so."""
    if os.geteuid() == 0:  # pytest's tmp_path is under a directory only root may enter
        tmp_path = Path(tempfile.mkdtemp(prefix="epoch-audit-lake-"))
    lake = tmp_path / "lake"
    target = lake / inner if inner else lake
    target.mkdir(parents=True)
    if os.geteuid() != 0:
        target.chmod(0o555)
        return lake, ()
    if shutil.which("setpriv") is None:
        pytest.skip("root writes anywhere, and setpriv is missing to run the CLI as nobody")
    # As nobody, on a lake nobody owns except the target directory.
    for path in [tmp_path, *[p for p in [lake, *lake.rglob("*")] if p != target]]:
        os.chown(path, NOBODY, NOBODY)
    target.chmod(0o755)
    return lake, ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")


@pytest.mark.parametrize("inner", [None, "bronze/events/_delta_log"])
def test_unwritable_lake_exits_2_naming_the_directory(tmp_path, inner):
    lake, launcher = _unwritable(tmp_path, inner)
    try:
        proc = _cli("run", "--input", str(SAMPLE), "--lake", str(lake), "--json", launcher=launcher)
        assert proc.returncode == 2, proc.stderr
        err = proc.stderr.strip().splitlines()
        assert len(err) == 1 and f"lake {lake}: not writable: permission denied" in err[0], err
        if inner:
            assert str(lake / inner) in err[0]
        assert json.loads(proc.stdout)["error"]["kind"] == "lake"
        assert not [p for p in lake.rglob(f"{PROBE_PREFIX}*")]  # probes leave nothing behind
        assert not (lake / "_epoch_audit.lock").exists()
    finally:
        (lake / inner if inner else lake).chmod(0o755)
        if lake.parent != tmp_path:
            shutil.rmtree(lake.parent)


def test_writable_lake_passes_and_keeps_nothing_of_the_probe(tmp_path):
    lake = tmp_path / "new" / "lake"
    check_lake_path(str(lake))
    assert lake.is_dir() and list(lake.iterdir()) == []
    (lake / "gold" / "violations" / "_delta_log").mkdir(parents=True)
    (lake / "gold" / "violations" / "cluster_id=c1").mkdir()
    check_lake_path(f"file://{lake}")
    assert not list(lake.rglob(f"{PROBE_PREFIX}*"))
    check_lake_path("gs://bucket/lake")  # object stores other than S3: left to their first write


def test_s3_lake_behind_an_unreachable_endpoint_fails_in_one_line(monkeypatch):
    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    started = time.monotonic()
    with pytest.raises(LakePathError) as err:
        check_lake_path("s3://bucket/lake")
    assert str(err.value).startswith("lake s3://bucket/lake: ") and "\n" not in str(err.value)
    assert time.monotonic() - started < 60


def test_lake_failure_inside_spark_is_a_lake_problem():
    lake = "/data/lake"
    trace = ("An error occurred while calling o280.parquet.\n: java.nio.file.AccessDeniedException: "
             "/data/lake/_staging/r1/violations/part-0.parquet\n\tat sun.nio.fs.UnixException")
    found = lake_failure(trace, lake)
    assert found is not None and found.path == lake
    assert str(found) == "lake /data/lake: permission denied (/data/lake/_staging/r1/violations/part-0.parquet)"
    assert "no space left" in str(lake_failure(f"java.io.IOException: No space left on device {lake}/x", lake))
    # the same reason on another path (an input file, Spark's scratch) is not the lake's
    assert lake_failure("java.nio.file.AccessDeniedException: /tmp/spark-1/blockmgr", lake) is None
    assert lake_failure("java.nio.file.AccessDeniedException: /data/lakehouse/x", lake) is None


# --- other failures: one line, the JSON error object -----------------------------------------------


def test_config_error_names_the_file_and_the_key(tmp_path, capsys, no_spark):
    conf = tmp_path / "night.yaml"
    conf.write_text("spark:\n  driver_memory: 3\n")
    assert main(["check", "--lake", str(tmp_path / "lake"), "--conf", str(conf), "--json"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and f"{conf}: spark.driver_memory: expected a string" in err[0]
    error = json.loads(captured.out)
    assert error["exit_code"] == 2 and error["error"]["kind"] == "config" and str(conf) in error["error"]["message"]


def test_usage_error_with_json_prints_the_error_object(tmp_path, capsys):
    assert main(["run", "--lake", str(tmp_path / "lake"), "--json", "--date", "2024-02-30", "--input", str(SAMPLE)]) == 2
    error = json.loads(capsys.readouterr().out)
    assert error["status"] == "error" and error["error"]["kind"] == "usage" and "--date" in error["error"]["message"]


def test_internal_failure_with_json_prints_the_error_object(tmp_path, capsys, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("session refused\nsecond line")

    monkeypatch.setattr(epoch_audit.spark, "get_spark", broken)
    assert main(["run", "--input", str(SAMPLE), "--lake", str(tmp_path / "lake"), "--json"]) == 1
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines()[-1] == (
        "epoch-audit: internal error: RuntimeError: session refused (exit 1)"
    )
    assert json.loads(captured.out) == {
        "status": "error", "exit_code": 1, "error": {"kind": "internal", "message": "RuntimeError: session refused"}
    }


def test_lake_failure_during_the_run_exits_2(tmp_path, capsys, monkeypatch):
    lake = tmp_path / "lake"

    def denied(*args, **kwargs):
        raise RuntimeError(f"An error occurred while calling o280.parquet.\n: java.nio.file.AccessDeniedException: "
                           f"{lake}/bronze/events/part-0.parquet")

    monkeypatch.setattr(epoch_audit.spark, "get_spark", denied)
    assert main(["run", "--input", str(SAMPLE), "--lake", str(lake), "--json"]) == 2
    captured = capsys.readouterr()
    assert f"lake {lake}: permission denied ({lake}/bronze/events/part-0.parquet)" in captured.err
    assert json.loads(captured.out)["error"]["kind"] == "lake"


# --- logs ---------------------------------------------------------------------------------------

LOG_PROBE = """
import logging, sys, warnings
import epoch_audit.spark

def start(*args, **kwargs):
    logging.getLogger("epoch_audit.stages.ingest").info("ingest: " + "x" * 200 + " end")
    # Great Expectations names some loggers by file path; their INFO lines are noise
    logging.getLogger("/site-packages/great_expectations/data_context/data_context_variables.py").info(
        "Stashing `FluentDatasource` during FileDataContextVariables.save() - 1 stashed")
    logging.getLogger("py4j.clientserver").info("Closing down clientserver connection")
    warnings.warn("a deprecation nobody asked about", DeprecationWarning)
    raise RuntimeError("stop here")

epoch_audit.spark.get_spark = start
from epoch_audit.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_logs_off_a_terminal_are_plain_unwrapped_lines_without_third_party_noise(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", LOG_PROBE, "run", "--input", str(SAMPLE), "--lake", str(tmp_path / "lake")],
        capture_output=True, text=True, env=_env(), cwd=REPO, timeout=120,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 2, lines
    stamp, level, message = lines[0].split(" ", 2)
    assert stamp.endswith("Z") and "T" in stamp and level == "INFO"
    assert message == "ingest: " + "x" * 200 + " end"  # one line, not wrapped at 80 columns
    assert lines[1] == "epoch-audit: internal error: RuntimeError: stop here (exit 1)"
    assert "Stashing" not in proc.stderr and "clientserver" not in proc.stderr and "deprecation" not in proc.stderr


def test_debug_lets_third_party_logs_through():
    stream = io.StringIO()
    setup_logging(debug=True, terminal=False)
    root = logging.getLogger()
    handler = next(h for h in root.handlers if getattr(h, "epoch_audit", False))
    handler.setStream(stream)
    try:
        logging.getLogger("/x/great_expectations/y.py").info("Stashing `FluentDatasource`")
        assert "Stashing" in stream.getvalue()
    finally:
        setup_logging(debug=False, terminal=False)
        assert len([h for h in root.handlers if getattr(h, "epoch_audit", False)]) == 1


def test_progress_on_a_terminal_shows_stage_and_eta():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with RunProgress(["ingest", "check"], {"ingest": 100.0, "check": 50.0}, console) as progress:
        assert progress.remaining() == pytest.approx(150.0)
        with progress.stage("ingest"):
            progress._refresh(progress.current_started + 10)
            progress._progress.refresh()
            assert progress.remaining(progress.current_started + 10) == pytest.approx(140.0)
        # ingest ran far faster than last time: the check is expected faster too
        progress.done["ingest"] = 50.0
        assert progress.remaining() == pytest.approx(25.0)
        progress.done["ingest"] = 1.0  # nothing new to ingest: the checks still take a share of their time
        assert progress.remaining() == pytest.approx(50.0 * 0.25)
    text = out.getvalue()
    assert "ingest (1/2)" in text and "ETA ~0:02:20" in text


def test_progress_off_a_terminal_logs_each_stage_start(caplog):
    caplog.set_level(logging.INFO, logger="epoch_audit")
    with RunProgress(["check"], {}, None) as progress, progress.stage("check"):
        pass
    assert "check: started" in caplog.messages and "check" in progress.done


def test_summary_line_has_status_exit_code_new_violations_failed_expectations_and_time():
    summary = {
        "run_id": "r1",
        "stages": {
            "check": {"status": "ran", "violations": [
                {"invariant": "a", "severity": "error", "confidence": "high", "count": 30},
                {"invariant": "b", "severity": "warning", "confidence": "high", "count": 2}]},
            "validate": {"status": "ran", "expectations": {"passed": 92, "failed": 1},
                         "critical_failures": [{"table": "t"}]},
            "report": {"status": "ran", "report": "lake/reports/r1/index.html"},
        },
    }
    line = summary_line(summary, "run", 3, 61.25)
    assert line == ("epoch-audit run r1: status found, exit 3, 32 new violations (30 error), "
                    "1 failed expectations (1 critical), 61.2 s, report lake/reports/r1/index.html")
    summary["stages"]["check"]["input_problems"] = [
        {"cluster_id": "c1", "problem": "mixed_modes"}, {"cluster_id": "c1", "problem": "conflicting_identity"}]
    assert "32 new violations (30 error), input problems in c1 (their violations are doubtful), 1 failed" in (
        summary_line(summary, "run", 3, 61.25))
    assert summary_line({"run_id": "r2", "stages": {}}, "timelines", 0, 1.0) == (
        "epoch-audit timelines r2: status ok, exit 0, 1.0 s"
    )
