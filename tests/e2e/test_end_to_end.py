"""The whole pipeline on simulated clusters finds exactly the injected violations (issue: checks),
on either Delta engine and through Spark Connect (issue: platforms).

One corpus holds clusters of every mode (KRaft, ZooKeeper mode, Strimzi, Redpanda), each with its
truth.jsonl, plus a fault-free twin of each; one `epoch-audit run` over all of it must report exactly
the union of the truths, and nothing on the fault-free clusters.

The same corpus run through a Spark Connect server the test starts, on delta-spark (Delta's package
on the server), must write, table by table and row by row, what the classic delta-rs run wrote; a
second night on each lake with the other engine must give the same tables both ways.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from epoch_audit_tools.evaluate import found_keys, load_truth, score
from epoch_audit_tools.reference_model import check_history
from epoch_audit_tools.reference_model import leadership as reference_leadership
from epoch_audit_tools.reference_model import offsets as reference_offsets
from epoch_audit_tools.simulator import simulate
from pyspark.sql import functions as F

from epoch_audit.cli import main
from epoch_audit.lake.storage import DeltaRsStorage
from tests.helpers import child_env
from tests.lake_compare import lake_differences

CORPUS = [
    # (folder, cluster id, mode, kafka version, seed, strimzi pattern) — as data/regenerate-samples.sh
    ("kraft", "kraft-1", "kafka-kraft", "3.6", 1, False),
    ("zk", "zk-1", "kafka-zk", "3.4.0", 5, False),
    ("zk-strimzi", "zk-2", "kafka-zk", "3.9", 6, True),
    ("redpanda", "rp-1", "redpanda", "3.6", 7, False),
]


# The same clusters without faults, beside them in the same run (one pipeline run less in CI): they
# must stay clean, and their precision counts in the score above.
CLEAN = [(f"{folder}-clean", f"{cluster}-clean", *rest) for folder, cluster, *rest in CORPUS]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("corpus")
    for folder, cluster, mode, version, seed, strimzi in CORPUS:
        simulate(root / folder, seed, mode=mode, kafka_version=version, brokers=3, partitions=4, hours=2,
                 produce_rate=0.05, faults="default", progress=False, cluster_id=cluster, strimzi=strimzi)
    for folder, cluster, mode, version, seed, strimzi in CLEAN:
        simulate(root / folder, seed, mode=mode, kafka_version=version, brokers=3, partitions=4, hours=1,
                 produce_rate=0.05, faults="none", progress=False, cluster_id=cluster, strimzi=strimzi)
    return root


@pytest.fixture(scope="module")
def ran(spark, corpus, tmp_path_factory):
    lake = tmp_path_factory.mktemp("lake")
    code = main(["run", "--input", str(corpus), "--lake", str(lake), "--run-id", "e2e", "--json"])
    return code, lake


def test_finds_exactly_the_injected_violations(spark, corpus, ran):
    code, lake = ran
    truth = load_truth([corpus])
    assert truth, "the simulator injected nothing"
    violations = DeltaRsStorage(spark, str(lake)).read("gold/violations")
    result = score(found_keys(violations), truth)
    assert result.summary() == {
        "precision": 1.0, "recall": 1.0, "true_positives": len(truth),
        "false_positives": [], "false_negatives": [],
    }
    assert code == 3  # violations of severity error were found
    # eight real-format clusters of three modes, each its own id: no input problem, so no table
    assert not (lake / "gold" / "input_problems").exists()
    # the report leads with the same outcome the exit code gives
    page = (lake / "reports" / "e2e" / "index.html").read_text()
    assert "data-exit-code='3'" in page and f"{violations.count()} new violations" in page


def test_every_line_is_accounted_for(spark, ran):
    _, lake = ran
    acc = DeltaRsStorage(spark, str(lake)).read("bronze/ingest_accounting").collect()
    assert acc
    for row in acc:
        assert row["lines_read"] == row["parsed"] + row["irrelevant"] + row["malformed"]
    # the simulator writes real formats only: nothing may be malformed
    assert sum(r["malformed"] for r in acc) == 0


def test_rerun_changes_nothing(spark, corpus, ran, capsys):
    _, lake = ran
    storage = DeltaRsStorage(spark, str(lake))
    before = {t: len(storage.history(t)) for t in ("bronze/events", "gold/violations")}
    code = main(["run", "--input", str(corpus), "--lake", str(lake), "--run-id", "e2e-again", "--json"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["stages"]["ingest"]["files_read"] == 0
    # nothing new: the re-run reports no violation (exit 3 only for failed critical expectations)
    assert summary["stages"]["check"]["violations"] == []
    assert code == (3 if summary["stages"]["validate"].get("critical_failures") else 0)
    page = (lake / "reports" / "e2e-again" / "index.html").read_text()
    assert f"data-exit-code='{code}'" in page and "0 new violations" in page
    assert len(storage.history("bronze/events")) == before["bronze/events"]
    ids = storage.read("gold/violations").select("violation_id", "run_id").collect()
    assert {r["run_id"] for r in ids} == {"e2e"}  # reported once, by the run that first proved it


def test_acknowledged_violations_leave_the_exit_code(spark, ran, tmp_path, capsys):
    """Suppressions (docs/operations.md): a violation an entry covers is kept and marked, but not reported."""
    _, original = ran
    lake = tmp_path / "lake"
    shutil.copytree(original, lake)
    storage = DeltaRsStorage(spark, str(lake))
    # as if run e2e had been killed before it completed: the next run reports what it wrote
    storage.overwrite("gold/run_summary", storage.read("gold/run_summary").where("run_id <> 'e2e'"))
    errors = storage.read("gold/violations").where("severity = 'error'").collect()
    entries = [{"invariant": inv, "reason": "injected by the simulator", "owner": "e2e", "expires": "2099-12-31"}
               for inv in sorted({r["invariant"] for r in errors})]
    entries.append({"invariant": "two_leaders_same_epoch", "topic": "no-such-topic", "reason": "a typo",
                    "owner": "e2e", "expires": "2099-12-31"})
    file = tmp_path / "suppressions.yaml"
    file.write_text(json.dumps({"suppressions": entries}))  # JSON is YAML
    code = main(["check", "--lake", str(lake), "--run-id", "e2e-ack", "--suppressions", str(file), "--json"])
    check = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["stages"]["check"]
    assert code == 0, check
    assert [v for v in check["violations"] if v["severity"] == "error"] == []
    assert sum(c["count"] for c in check["suppressions"]["suppressed_new"]) == len(errors)
    assert [u.split(":")[0] for u in check["suppressions"]["unmatched"]] == [
        f"#{len(entries)} two_leaders_same_epoch topic=no-such-topic (e2e, until 2099-12-31)"]
    covered = storage.read("gold/suppressions").collect()
    assert sorted(r["violation_id"] for r in covered) == sorted(r["violation_id"] for r in errors)
    assert {r["status"] for r in covered} == {"active"}
    # the dashboards' daily counts say how many of each day's violations are acknowledged
    assert main(["report", "--lake", str(lake), "--run-id", "e2e-ack-report"]) == 0
    total, suppressed = storage.read("gold/daily_invariant_counts").agg(F.sum("count"), F.sum("suppressed")).first()
    assert suppressed == len(errors) and total == storage.read("gold/violations").count()


def test_clean_history_has_no_violations(spark, ran):
    _, lake = ran
    clean = [cluster for _, cluster, *_ in CLEAN]
    storage = DeltaRsStorage(spark, str(lake))
    violations = storage.read("gold/violations").where(F.col("cluster_id").isin(clean))
    assert [r.asDict() for r in violations.select("invariant", "topic", "partition", "broker_id").collect()] == []
    # The pure-Python reference model agrees: the parsed history of a fault-free cluster is clean.
    events = [r.asDict() for r in storage.read("bronze/events").where(F.col("cluster_id").isin(clean)).collect()]
    timeline = [r.asDict() for r in
                storage.read("silver/partition_timeline").where(F.col("cluster_id").isin(clean)).collect()]
    assert {e["cluster_id"] for e in events} == set(clean)
    assert check_history(events) == []
    assert reference_leadership.check(events, timeline) == []
    assert reference_offsets.check(events, timeline) == []


# --- both Delta engines, Spark Connect ----------------------------------------------------------
#
# One run through a Spark Connect server with Delta's package on it (delta-spark), compared with the
# classic delta-rs run above: what the Connect session writes and what delta-spark writes are both
# row for row what the classic session wrote on delta-rs. Then a second night on each lake with the
# other engine (delta-rs in this process; delta-spark in a classic session of its own).

EPOCH_AUDIT = Path(sys.executable).parent / "epoch-audit"


def run_child(args: list[str], log: Path) -> int:
    """``epoch-audit`` in a process (and JVM) of its own; its stderr kept in ``log``."""
    with log.open("w") as err:
        return subprocess.run([str(EPOCH_AUDIT), *args], env=child_env(), stdout=subprocess.DEVNULL,
                              stderr=err, timeout=1500).returncode


def _log_tail(log: Path) -> str:
    return log.read_text()[-3000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory):
    """A Spark Connect server in a JVM of its own (what Spark's start-connect-server.sh runs), on a
    free port, with Delta's package (fetched once into the Ivy cache the CLI uses). Set up as a
    short run, as the test session is (no C2, no generated code, one-partition inputs): the data
    is small, and its results are the same either way."""
    import pyspark

    from epoch_audit.config import DELTA_SPARK_PACKAGE
    from epoch_audit.lake.delta_spark import delta_session_conf
    from epoch_audit.spark import SHORT_RUN_CONF, ivy_cache_dir, short_run_java_options

    work = tmp_path_factory.mktemp("connect-server")
    port = _free_port()
    submit = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"
    conf = {
        "spark.connect.grpc.binding.port": str(port),
        "spark.pyspark.python": sys.executable,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.ui.enabled": "false",
        "spark.jars.ivy": ivy_cache_dir(),
        "spark.driver.extraJavaOptions": short_run_java_options("1g"),
        **SHORT_RUN_CONF,
        **delta_session_conf(),
    }
    log = (work / "server.log").open("w")
    server = subprocess.Popen(
        [str(submit), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
         "--name", "Spark Connect server", "--master", "local[2]", "--packages", DELTA_SPARK_PACKAGE,
         *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}"))],
        env=child_env(), stdout=log, stderr=subprocess.STDOUT, cwd=work,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert server.poll() is None, (work / "server.log").read_text()[-3000:]
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(1)
        else:
            raise AssertionError("the Spark Connect server did not listen within 300 s")
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


@pytest.fixture(scope="module")
def connected_lake(corpus, connect_server, tmp_path_factory) -> Path:
    """The corpus run through the Connect server, on delta-spark (the server's Delta)."""
    work = tmp_path_factory.mktemp("connected")
    lake, log = work / "lake", work / "run.log"
    code = run_child(["run", "--input", str(corpus), "--lake", str(lake), "--spark-remote", connect_server,
                      "--run-id", "e2e-connect"], log)
    assert code == 3, _log_tail(log)
    text = log.read_text()
    assert f"session master=spark-connect {connect_server}" in text, _log_tail(log)
    assert f"lake {lake} on engine delta-spark" in text, _log_tail(log)  # auto: the server has Delta
    return lake


@pytest.mark.slow  # a pipeline run through a Connect server in a JVM of its own
def test_connect_and_delta_spark_write_what_classic_delta_rs_writes(spark, ran, connected_lake):
    _, lake = ran
    assert lake_differences(spark, str(lake), str(connected_lake)) == {}


@pytest.fixture(scope="module")
def night_two(tmp_path_factory) -> Path:
    """A second night's delivery: a cluster the corpus does not have, with faults."""
    root = tmp_path_factory.mktemp("night-two")
    simulate(root / "rp-night-2", 11, mode="redpanda", kafka_version="3.6", brokers=3, partitions=4, hours=1,
             produce_rate=0.05, faults="default", progress=False, cluster_id="rp-night-2")
    return root


@pytest.mark.slow  # a second night on each lake, one of them in a JVM of its own
def test_each_engine_continues_the_others_lake(
    spark, corpus, ran, connect_server, connected_lake, night_two, tmp_path
):
    _, rs_lake = ran
    spark_then_rs, rs_then_spark = tmp_path / "spark-then-rs", tmp_path / "rs-then-spark"
    shutil.copytree(connected_lake, spark_then_rs)
    shutil.copytree(rs_lake, rs_then_spark)
    # `epoch-audit maintain` between the nights, by the engine that continues each lake (the
    # nightly job's second task): compaction and vacuum must change nothing the next night reads.
    assert main(["maintain", "--lake", str(spark_then_rs), "--engine", "delta-rs", "--retention-hours", "0"]) == 0
    maintained = tmp_path / "maintain-delta-spark.log"
    maintain = ["maintain", "--lake", str(rs_then_spark), "--spark-remote", connect_server, "--engine", "delta-spark",
                "--retention-hours", "0"]  # through the Connect server's Delta: no JVM to start
    assert run_child(maintain, maintained) == 0, _log_tail(maintained)
    assert re.search(r"maintain \S+: \d+ -> \d+ files \([1-9]\d* compacted", maintained.read_text()), (
        _log_tail(maintained)
    )
    night = ["run", "--input", str(corpus), "--input", str(night_two), "--run-id", "night-2"]
    assert main([*night, "--lake", str(spark_then_rs), "--engine", "delta-rs"]) == 3
    log = tmp_path / "rs-then-spark.log"
    assert run_child([*night, "--lake", str(rs_then_spark), "--engine", "delta-spark"], log) == 3, _log_tail(log)
    assert "on engine delta-spark" in log.read_text()

    assert lake_differences(spark, str(spark_then_rs), str(rs_then_spark)) == {}
    # and both are right: the second night found exactly its cluster's injected violations
    assert load_truth([night_two]), "the second night's cluster has injected violations"
    truth = load_truth([corpus, night_two])
    result = score(found_keys(DeltaRsStorage(spark, str(spark_then_rs)).read("gold/violations")), truth)
    assert result.summary()["precision"] == 1.0 and result.summary()["recall"] == 1.0, result.summary()
