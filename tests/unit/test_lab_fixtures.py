"""Fixtures cut from real ``epoch-audit lab`` runs (genuine Kafka output, tests/fixtures/lab/<mode>-<version>/):
every line is accounted for, none is quarantined, and every file yields events.

Cut with whole records and a cap per message family from the lab runs described in docs/lab.md.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from epoch_audit.config import AppConfig
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.stages.ingest import ACCOUNTING_TABLE, EVENTS_TABLE, ingest

LAB_FIXTURES = Path(__file__).parents[1] / "fixtures" / "lab"
RUNS = sorted(p.name for p in LAB_FIXTURES.iterdir() if p.is_dir())


@pytest.mark.parametrize("run", RUNS)
def test_real_lab_lines_parse_without_quarantine(spark, tmp_path: Path, run: str) -> None:
    tree = tmp_path / "in" / f"cluster={run}" / "broker-1"
    shutil.copytree(LAB_FIXTURES / run, tree)
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    result = ingest(spark, storage, [str(tmp_path / "in")], AppConfig(), run)
    assert result.lines_read == sum(len(p.read_bytes().splitlines()) for p in tree.iterdir())
    assert result.malformed == 0, "a genuine Kafka line was quarantined"
    per_file = {Path(r["source_file"]).name: r for r in storage.read(ACCOUNTING_TABLE).collect()}
    assert set(per_file) == {p.name for p in tree.iterdir()}
    assert all(r["parsed"] > 0 for r in per_file.values()), {n: r["parsed"] for n, r in per_file.items()}
    kinds = Counter(r["log_kind"] for r in storage.read(EVENTS_TABLE).select("log_kind").collect())
    expected = {"state-change", "server", "request", "segment-dump"}
    expected |= {"metadata-dump"} if run.startswith("kraft") else set()
    assert expected <= set(kinds), kinds


def test_a_lab_cluster_id_never_starts_with_a_dash(monkeypatch):
    import uuid

    from epoch_audit.lab import cluster

    drawn = iter([uuid.UUID(bytes=b"\xf8" + bytes(15)), uuid.UUID(bytes=b"\x01" * 16)])
    monkeypatch.setattr(cluster.uuid, "uuid4", lambda: next(drawn))
    assert cluster.kafka_uuid() == "AQEBAQEBAQEBAQEBAQEBAQ"  # the first draw, "-AAAA...", is drawn again
