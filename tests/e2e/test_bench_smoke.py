"""``epoch-audit bench`` smoke test: a tiny corpus, every stage, DuckDB baseline, valid JSON.

No time assertions: this only proves the benchmark runs end to end and reports every figure.
"""

from __future__ import annotations

import json

import pytest
from epoch_audit_tools import bench_corpus
from epoch_audit_tools.bench import _stages
from epoch_audit_tools.bench_corpus import corpus_for, plan_parameters

from epoch_audit.cli import main

STAGES = ("ingest", "timelines", "checks", "validate")
DUCKDB_STAGES = ("ingest", "timelines", "checks")


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    pytest.importorskip("duckdb")
    return tmp_path_factory.mktemp("bench")


def test_plan_parameters_hits_the_target():
    cal = {"base_lines_per_hour": 10_000.0, "lines_per_hour_per_rate": 17_000.0}
    p = plan_parameters(1_000_000, cal)
    assert 0.1 <= p["hours"] <= 72
    assert abs(p["predicted_lines"] - 1_000_000) / 1_000_000 < 0.01
    tiny = plan_parameters(3_000, cal)
    assert tiny["hours"] == 0.1 and tiny["produce_rate"] > 0


def test_corpus_off_by_more_than_10_percent_is_generated_again(tmp_path, monkeypatch):
    """Lines per hour fall over a long simulated run: one re-generation with the hours scaled."""
    calls = []

    def fake_simulate(out, seed, mode, hours, rate, cluster):
        calls.append(hours)
        out.mkdir(parents=True)
        lines = int(hours * (300_000 if hours > 1 else 400_000))  # long runs: fewer lines per hour
        manifest = {"file_line_counts": {"a.log": lines},
                    "parameters": {"mode": mode, "brokers": cluster[0], "partitions": cluster[1], "hours": hours,
                                   "produce_rate": rate, "kafka_version": "3.6"}}
        (out / "manifest.json").write_text(json.dumps(manifest))
        return manifest

    monkeypatch.setattr(bench_corpus, "_simulate", fake_simulate)
    (tmp_path / "calibration-kafka-kraft-s1-b5p40.json").write_text(
        json.dumps({"base_lines_per_hour": 0.0, "lines_per_hour_per_rate": 20_000.0}))
    path, manifest, info = corpus_for(tmp_path, "kafka-kraft", 1, 3_000_000)
    assert calls == [7.5, 10.0]  # 7.5 h planned from the pilots, 2.25 M made, 10 h made 3 M
    assert info["actual_lines"] == 3_000_000 and not info["reused"]
    plan = json.loads((path / "bench-plan.json").read_text())
    assert plan["first_attempt"] == {"hours": 7.5, "lines": 2_250_000}
    assert corpus_for(tmp_path, "kafka-kraft", 1, 3_000_000)[2]["reused"] and len(calls) == 2


def test_stages_include_their_prerequisites():
    assert _stages("all") == list(STAGES)
    assert _stages("timelines") == ["ingest", "timelines"]
    assert _stages("validate") == list(STAGES)
    assert _stages("ingest") == ["ingest"]


@pytest.mark.slow
def test_bench_smoke_emits_every_field(spark, bench, capsys):
    out = bench / "results"
    code = main([
        "bench", "--events", "3000", "--mode", "kafka-kraft", "--seed", "3", "--baseline", "duckdb", "--json",
        "--corpus-root", str(bench / "corpus"), "--work", str(bench / "work"), "--out", str(out),
        # The samples run is a child `epoch-audit run`: here on a missing input, so it stops before
        # its Spark starts (exit 2) and the test proves only what is recorded of it.
        "--samples-input", str(bench / "no-such-samples"),
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
        assert result["stages"][stage]["seconds"] > 0 and "memory" in result["stages"][stage]
    for stage in DUCKDB_STAGES:
        s = result["stages"][stage]
        assert s["duckdb_seconds"] is not None and s["duckdb_seconds"] >= 0
        assert "ratio" in s
    validate = result["stages"]["validate"]
    assert validate["expectations"] and validate["critical_failures"] == 0
    samples = result["samples"]
    assert samples["exit_code"] == 2 and samples["wall_seconds"] > 0
    assert "no-such-samples" in samples["error"]
    assert result["stages"]["ingest"]["lines_per_second"] > 0
    # detection quality against the corpus's truth.jsonl is part of every run with checks
    assert set(result["detection"]) >= {"precision", "recall", "true_positives", "false_positives"}
    assert result["stages"]["ingest"]["parse_counts"]
    assert result["stages"]["checks"]["core_seconds"] is not None
    for fact in ("cores", "memory_gb", "spark_version", "duckdb_version"):
        assert result["machine"][fact] is not None
    # DuckDB runs in this process: its threads and memory limit are set, never its defaults
    duck = result["machine"]["duckdb_settings"]
    assert duck["threads"] == result["machine"]["spark_cores"] and duck["memory_limit_requested"]
    assert duck["memory_limit"]
    assert result["corpus"]["actual_lines"] > 0 and result["corpus"]["deviation_pct"] is not None
    written = list(out.glob("bench-*.json"))
    assert len(written) == 1 and json.loads(written[0].read_text())["events"] == 3000
