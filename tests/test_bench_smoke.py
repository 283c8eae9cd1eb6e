"""``epoch-audit bench`` smoke test: a tiny corpus, every stage, DuckDB baseline, valid JSON.

No time assertions: this only proves the benchmark runs end to end and reports every figure.
"""

from __future__ import annotations

import json

import pytest

from jobs.bench import _stages, plan_parameters
from jobs.cli import main

STAGES = ("ingest", "timelines", "checks")


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    pytest.importorskip("duckdb")
    return tmp_path_factory.mktemp("bench")


def test_plan_parameters_hits_the_target():
    cal = {"base_lines_per_hour": 10_000.0, "lines_per_hour_per_rate": 17_000.0}
    p = plan_parameters(1_000_000, cal)
    assert 0.1 <= p["hours"] <= 24
    assert abs(p["predicted_lines"] - 1_000_000) / 1_000_000 < 0.01
    tiny = plan_parameters(3_000, cal)
    assert tiny["hours"] == 0.1 and tiny["produce_rate"] > 0


def test_stages_include_their_prerequisites():
    assert _stages("all") == list(STAGES)
    assert _stages("timelines") == ["ingest", "timelines"]
    assert _stages("ingest") == ["ingest"]


@pytest.mark.slow
def test_bench_smoke_emits_every_field(spark, bench, capsys):
    out = bench / "results"
    code = main([
        "bench", "--events", "3000", "--mode", "kafka-kraft", "--seed", "3", "--baseline", "duckdb", "--json",
        "--corpus-root", str(bench / "corpus"), "--work", str(bench / "work"), "--out", str(out),
    ])
    captured = capsys.readouterr()
    assert code == 0, captured.err[-2000:]
    result = json.loads(captured.out)
    for key in ("events", "lines", "peak_driver_rss_mb", "violations_agree", "bronze_events", "corpus", "machine",
                "config", "peak_python_workers_rss_mb", "total_seconds"):
        assert key in result, key
    assert result["events"] == 3000
    assert result["lines"] > 0
    assert result["peak_driver_rss_mb"] > 0
    assert isinstance(result["violations_agree"], bool)
    for stage in STAGES:
        s = result["stages"][stage]
        assert s["seconds"] > 0
        assert s["duckdb_seconds"] is not None and s["duckdb_seconds"] >= 0
        assert "ratio" in s and "memory" in s
    assert result["stages"]["ingest"]["lines_per_second"] > 0
    # detection quality against the corpus's truth.jsonl is part of every run with checks
    assert set(result["detection"]) >= {"precision", "recall", "true_positives", "false_positives"}
    assert result["stages"]["ingest"]["parse_counts"]
    assert result["stages"]["checks"]["core_seconds"] is not None
    for fact in ("cores", "memory_gb", "spark_version", "duckdb_version"):
        assert result["machine"][fact] is not None
    assert result["corpus"]["actual_lines"] > 0 and result["corpus"]["deviation_pct"] is not None
    written = list(out.glob("bench-*.json"))
    assert len(written) == 1 and json.loads(written[0].read_text())["events"] == 3000
