"""Every real-format fixture, ingested as a collected tree: lines reconcile, nothing unexpected is quarantined."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.stages.ingest import ACCOUNTING_TABLE, EVENTS_TABLE, QUARANTINE_TABLE, ingest

FIXTURES = Path(__file__).parents[1] / "fixtures"

# Fixture files that hold deliberately malformed lines (each parser's own tests pin the reasons).
EXPECTED_MALFORMED = (
    "dumps/segment-legacy-and-malformed.txt",
    "dumps/metadata-3.7-transactions.txt",
    "request/variants.log",
    "kafka/zk-2.6-broker-state-change.log",  # "starts at leader epoch five"
    "kafka/zk-3.6-state-change.log",  # a cut "Skipped the become-..." line
    "kafka/kraft-3.9-controller.log",  # a cut "Rejecting AlterPartition" line
    "broker-3/data/orders-3/leader-epoch-checkpoint",
    "broker-3/data/replication-offset-checkpoint",
    "broker-3/data/log-start-offset-checkpoint",
    "broker-3/data/orders-3/partition.metadata",
)


def _lines(path: Path) -> int:
    """Physical lines as the reader counts them: split on newline, a final newline ends the last line."""
    parts = path.read_bytes().split(b"\n")
    return len(parts) - (1 if parts[-1] == b"" else 0)


def test_fixture_tree_accounts_for_every_line(spark, tmp_path):
    tree = tmp_path / "in" / "cluster=fx"
    # One host folder per fixture family keeps the host identity the parsers expect.
    for family in ("kafka", "redpanda", "request", "dumps"):
        shutil.copytree(FIXTURES / family, tree / "broker-1" / family)
    shutil.copytree(FIXTURES / "checkpoints", tree, dirs_exist_ok=True)
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    result = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "fx")

    physical = sum(_lines(p) for p in tree.rglob("*") if p.is_file())
    assert result.lines_read == physical
    assert result.parsed + result.irrelevant + result.malformed == result.lines_read
    for row in storage.read(ACCOUNTING_TABLE).collect():
        assert row["lines_read"] == row["parsed"] + row["irrelevant"] + row["malformed"], row["source_file"]

    quarantined = Counter(r["source_file"] for r in storage.read(QUARANTINE_TABLE).collect())
    unexpected = {f: n for f, n in quarantined.items() if not f.endswith(EXPECTED_MALFORMED)}
    assert unexpected == {}
    kafka_quarantined = {f.split("/kafka/")[1]: n for f, n in quarantined.items() if "/kafka/" in f}
    assert kafka_quarantined == {  # exactly the one deliberately broken line in each
        "zk-2.6-broker-state-change.log": 1, "zk-3.6-state-change.log": 1, "kraft-3.9-controller.log": 1,
    }
    kinds = {r["log_kind"] for r in storage.read(EVENTS_TABLE).select("log_kind").distinct().collect()}
    assert {"state-change", "controller", "server", "request", "redpanda", "metadata-dump", "segment-dump",
            "leader-epoch-checkpoint", "replication-offset-checkpoint", "partition-metadata"} <= kinds

    again = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), "fx-2")
    assert again.files_read == 0 and again.lines_read == 0
