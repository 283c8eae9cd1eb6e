"""``src/epoch_audit/submit.py`` under a real spark-submit finds exactly the Redpanda sample's violations.

The spark-submit run uses the ``cluster`` profile (``spark.master: null``): the session must be the
one spark-submit built, so a shuffle-partition setting given to spark-submit must survive (the
local profile would force 4). Its gold violations are scored against the sample's truth.jsonl, as
the end-to-end test scores ``epoch-audit run`` (no second, in-process run: one pipeline run less in CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest
from epoch_audit_tools.evaluate import found_keys, load_truth, score

from epoch_audit.lake.storage import DeltaRsStorage

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "samples" / "redpanda"
SPARK_SUBMIT = Path(pyspark.__file__).resolve().parent / "bin" / "spark-submit"


@pytest.mark.slow  # a full pipeline run under spark-submit (its own JVM)
def test_spark_submit_finds_exactly_the_samples_violations(spark, tmp_path):
    assert SPARK_SUBMIT.is_file(), f"pyspark ships no spark-submit at {SPARK_SUBMIT}"
    submitted_lake = tmp_path / "submitted"
    sample = tmp_path / "input"  # a private copy: both runs must read the same bytes
    shutil.copytree(SAMPLE, sample)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_DRIVER_PYTHON", "SPARK_HOME")}
    env["PYSPARK_PYTHON"] = sys.executable
    cmd = [
        str(SPARK_SUBMIT),
        "--master", "local[2]",
        "--conf", f"spark.pyspark.python={sys.executable}",
        "--conf", f"spark.pyspark.driver.python={sys.executable}",
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.sql.shuffle.partitions=3",
        # as in the README: without it Spark writes INT96 timestamps and the delta-rs engine commits
        # tables with the timestampNanos reader feature, which deltalake itself cannot read
        "--conf", "spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS",
        "--driver-java-options", f"-Dlog4j2.configurationFile={(REPO / 'src' / 'epoch_audit' / 'conf' / 'log4j2.properties').as_uri()}",
        str(REPO / "src" / "epoch_audit" / "submit.py"),
        "run", "--profile", "cluster", "--input", str(sample), "--lake", str(submitted_lake), "--run-id", "submitted",
    ]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    # spark-submit relays the Python driver's stdout and stderr on its own stdout.
    output = proc.stdout + proc.stderr
    (tmp_path / "spark-submit.out").write_text(output)
    ours = "\n".join(line for line in output.splitlines() if "epoch-audit" in line or "Error" in line)
    tail = f"{ours[-3000:]}\n--- output tail ---\n{output[-1500:]}"
    assert proc.returncode in (0, 3), f"spark-submit exited {proc.returncode}:\n{tail}"
    # The session is spark-submit's: its master and its shuffle partitions, not the local profile's.
    assert "session master=local[2] spark.sql.shuffle.partitions=3" in output, tail

    truth = load_truth([sample])
    assert truth, "the Redpanda sample has injected violations"
    result = score(found_keys(DeltaRsStorage(spark, str(submitted_lake)).read("gold/violations")), truth)
    assert result.summary() == {
        "precision": 1.0, "recall": 1.0, "true_positives": len(truth),
        "false_positives": [], "false_negatives": [],
    }, tail
    assert proc.returncode == 3  # violations of severity error were found


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
