"""Inputs and lake on an S3 endpoint (issue #22 part 4): ``epoch-audit run --input s3://... --lake
s3://...`` as a user runs it, against moto's S3 server started here on a free loopback port.

The Redpanda sample (ten objects) is uploaded to a bucket; the run lists, sizes and reads the
objects through ``pyarrow.fs`` (executors read their byte ranges the same way), Spark writes the
tables' files through Hadoop's s3a, delta-rs commits them, the lake lock and staging live on the
store, and the report and Data Docs are written there. Its gold is the sample's truth. A second
night's ingest, after lines were appended to one object, reads only those lines (the ledger resumes
at the byte the first night stopped at): only ingest, because a full second night re-checks the
grown cluster, which costs a first night's time again on a busy 2-core box.
Paths that cannot work (a missing bucket, an input prefix with no object) fail in one line with
exit 2 before Spark starts. Credentials are moto's dummies, in the environment only.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest
from deltalake import DeltaTable
from epoch_audit_tools.evaluate import TRUTH_KEY, load_truth, score

from tests.helpers import child_env

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "samples" / "redpanda"
pytestmark = pytest.mark.slow  # an S3 server and two pipeline runs

INPUT = "s3://logs/redpanda"
LAKE = "s3://audit/lake"
GROWN = "cluster=rp-1/broker-1/redpanda.log"  # a live log: the second night finds it grown
APPENDED = [
    "redpanda-1  | INFO  2024-03-05 01:40:00,000 [shard 0:main] admin_api_server - GET /v1/status/ready 200",
    "redpanda-1  | INFO  2024-03-05 01:40:05,000 [shard 0:main] admin_api_server - GET /v1/status/ready 200",
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory) -> Iterator[str]:
    """moto's S3 server on a free loopback port, for this module."""
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def env(endpoint) -> dict[str, str]:
    """A user's environment for an S3-compatible endpoint: where it is and (dummy) credentials."""
    out = {k: v for k, v in child_env().items() if not k.startswith("AWS_")}
    out.update(AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_REGION="us-east-1",
               AWS_ENDPOINT_URL=endpoint)
    return out


@pytest.fixture(scope="module")
def s3(endpoint, env, monkeypatch_module) -> pafs.S3FileSystem:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL"):
        monkeypatch_module.setenv(key, env[key])
    fs = pafs.S3FileSystem(endpoint_override=endpoint.removeprefix("http://"), scheme="http", region="us-east-1",
                           allow_bucket_creation=True)
    fs.create_dir("logs")
    fs.create_dir("audit")
    for path in sorted(SAMPLE.rglob("*")):
        if path.is_file():
            # compression=None: pyarrow would gzip a *.gz file's bytes again
            with fs.open_output_stream(f"logs/redpanda/{path.relative_to(SAMPLE).as_posix()}", compression=None) as out:
                out.write(path.read_bytes())
    return fs


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _run(env: dict[str, str], *args: str, command: str = "run", lake: str = LAKE
         ) -> tuple[subprocess.CompletedProcess, dict]:
    try:
        proc = subprocess.run(["epoch-audit", command, "--input", INPUT, "--lake", lake, "--json", *args],
                              env=env, capture_output=True, text=True, timeout=1500)
    except subprocess.TimeoutExpired as err:
        raise AssertionError(f"epoch-audit {command} timed out:\n{(err.stderr or b'')[-4000:]!r}") from None
    summary = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}
    return proc, summary


def _table(env: dict[str, str], name: str, lake: str = LAKE) -> list[dict]:
    options = {"AWS_ENDPOINT_URL": env["AWS_ENDPOINT_URL"], "AWS_ALLOW_HTTP": "true", "AWS_REGION": "us-east-1"}
    return DeltaTable(f"{lake}/{name}", storage_options=options).to_pyarrow_table().to_pylist()


@pytest.fixture(scope="module")
def first_night(s3, env) -> tuple[subprocess.CompletedProcess, dict, float]:
    started = time.monotonic()
    proc, summary = _run(env)
    return proc, summary, time.monotonic() - started


def test_bad_store_paths_fail_in_one_line_before_spark(s3, env):
    cases = [
        (["--input", INPUT, "--lake", "s3://no-such-bucket/lake"], "lake s3://no-such-bucket/lake: bucket no-such-bucket does not exist"),
        (["--input", "s3://logs/nothing-here", "--lake", LAKE], "input path not found: s3://logs/nothing-here"),
    ]
    for args, message in cases:
        started = time.monotonic()
        proc = subprocess.run(["epoch-audit", "run", *args], env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2, proc.stderr[-2000:]
        errors = [line for line in proc.stderr.splitlines() if line.startswith("epoch-audit: error:")]
        assert len(errors) == 1 and message in errors[0], proc.stderr[-2000:]
        assert "session master" not in proc.stderr  # Spark never started
        assert time.monotonic() - started < 60


def test_run_on_s3_finds_the_samples_truth(s3, env, first_night):
    proc, summary, seconds = first_night
    assert proc.returncode == 3, proc.stderr[-4000:]
    assert summary["engine"] == "delta-rs" and summary["lake"] == LAKE
    truth = load_truth([SAMPLE])
    found = {tuple(row[k] for k in TRUTH_KEY) for row in _table(env, "gold/violations")}
    assert score(found, truth).summary() == {
        "precision": 1.0, "recall": 1.0, "true_positives": len(truth), "false_positives": [], "false_negatives": [],
    }
    ledger = _table(env, "bronze/ingest_accounting")
    for row in ledger:
        assert row["lines_read"] == row["parsed"] + row["irrelevant"] + row["malformed"], row
    # every line of every log once (retry/ holds copies of broker-0's files: read once)
    lines = sum(len(p.read_bytes().splitlines()) for p in SAMPLE.rglob("*.log*") if "retry" not in p.parts)
    assert sum(row["lines_read"] for row in ledger) == lines
    # the report and the Data Docs are on the lake's store; the lock and the scratch space are gone
    report = summary["stages"]["report"]["report"]
    assert report == f"{LAKE}/reports/{summary['run_id']}/index.html"
    assert b"<html" in s3.open_input_file(report.removeprefix("s3://")).read(4096).lower()
    assert summary["stages"]["validate"]["data_docs"] == f"{LAKE}/reports/data_docs/index.html"
    assert s3.get_file_info("audit/lake/reports/data_docs/index.html").type == pafs.FileType.File
    assert s3.get_file_info("audit/lake/_epoch_audit.lock").type == pafs.FileType.NotFound
    assert not s3.get_file_info(pafs.FileSelector("audit/lake/_staging", recursive=True, allow_not_found=True))
    for line in proc.stderr.splitlines():  # credentials are read from the environment, never printed
        assert "testing" not in line or "AWS" not in line, line
    assert "testing" not in json.dumps(summary)
    print(f"first night on S3: {seconds:.1f} s")


def test_second_night_reads_the_appended_bytes_only(s3, env, first_night):
    grown = f"logs/redpanda/{GROWN}"
    before = s3.open_input_file(grown).read()
    with s3.open_output_stream(grown, compression=None) as out:  # an object is replaced whole: the grown file
        out.write(before + "".join(f"{line}\n" for line in APPENDED).encode())
    violations = _table(env, "gold/violations")
    started = time.monotonic()
    proc, summary = _run(env, command="ingest")
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr[-4000:]
    ingest = summary["stages"]["ingest"]
    assert (ingest["files_read"], ingest["lines_read"], ingest["irrelevant"]) == (1, len(APPENDED), len(APPENDED))
    chunks = [r for r in _table(env, "bronze/ingest_accounting") if r["run_id"] == summary["run_id"]]
    assert len(chunks) == 1 and chunks[0]["start_byte"] == len(before), chunks
    assert chunks[0]["source_file"] == f"s3://{grown}"
    assert sorted(map(str, _table(env, "gold/violations"))) == sorted(map(str, violations))
    files = {r["source_file"]: r for r in _table(env, "bronze/ingest_files")}
    assert files[f"s3://{grown}"]["consumed_bytes"] == len(before) + len("".join(f"{x}\n" for x in APPENDED))
    assert s3.get_file_info("audit/lake/_epoch_audit.lock").type == pafs.FileType.NotFound
    print(f"second night's ingest on S3: {seconds:.1f} s")


def test_delta_spark_on_s3_writes_what_delta_rs_writes(s3, env, first_night):
    """The other engine on the same store: Delta's JVM package writes through s3a (its S3 log store
    commits), with the same violations and per-file line accounting as the delta-rs lake (whose grown
    file the second night read in two chunks)."""
    lake = "s3://audit/lake-delta-spark"
    truth = {tuple(row[k] for k in TRUTH_KEY) for row in _table(env, "gold/violations")}  # the delta-rs night's
    proc, summary = _run(env, "--engine", "delta-spark", lake=lake)
    assert proc.returncode == 3, proc.stderr[-4000:]
    assert summary["engine"] == "delta-spark" and summary["lake"] == lake
    assert {tuple(row[k] for k in TRUTH_KEY) for row in _table(env, "gold/violations", lake)} == truth
    def counts(rows: list[dict]) -> dict[str, list[int]]:  # per file: the delta-rs lake may hold it in two chunks
        out: dict[str, list[int]] = {}
        for r in rows:
            total = out.setdefault(r["source_file"], [0, 0, 0, 0])
            for i, key in enumerate(("lines_read", "parsed", "irrelevant", "malformed")):
                total[i] += r[key]
        return out
    assert counts(_table(env, "bronze/ingest_accounting", lake)) == counts(_table(env, "bronze/ingest_accounting"))
    assert s3.get_file_info("audit/lake-delta-spark/_delta_log").type == pafs.FileType.NotFound  # tables, not the lake
    assert s3.get_file_info("audit/lake-delta-spark/gold/violations/_delta_log").type == pafs.FileType.Directory
    assert s3.get_file_info("audit/lake-delta-spark/_epoch_audit.lock").type == pafs.FileType.NotFound


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q", "-n", "0", "-s"]))
