"""The whole pipeline on simulated clusters finds exactly the injected violations (issue: checks).

One corpus holds clusters of every mode (KRaft, ZooKeeper mode, Strimzi, Redpanda), each with its
truth.jsonl, plus a fault-free twin of each; one `epoch-audit run` over all of it must report exactly
the union of the truths, and nothing on the fault-free clusters.
"""

from __future__ import annotations

import json
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
    assert len(storage.history("bronze/events")) == before["bronze/events"]
    ids = storage.read("gold/violations").select("violation_id", "run_id").collect()
    assert {r["run_id"] for r in ids} == {"e2e"}  # reported once, by the run that first proved it


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
