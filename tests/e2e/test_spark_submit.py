"""The spark-submit block of docs/operations.md, run as written, finds exactly the violations.

The block is read from the page and run with ``MASTER=local[2]`` on a copy of the Redpanda sample:
it builds the wheel, loads Delta's JVM package with ``--packages`` (so the run is on delta-spark)
and runs ``src/epoch_audit/submit.py`` with the ``cluster`` profile, whose session is
spark-submit's own (a setting from ``spark-defaults.conf`` survives). Its gold violations are
scored against the sample's truth.jsonl. That delta-spark writes what delta-rs writes, and that
each continues the other's lake, is tests/e2e/test_end_to_end.py's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from epoch_audit_tools.evaluate import found_keys, load_truth, score

from epoch_audit.lake.storage import DeltaRsStorage
from tests.helpers import child_env

REPO = Path(__file__).resolve().parents[2]
OPERATIONS = REPO / "docs" / "operations.md"
pytestmark = pytest.mark.slow  # a pipeline run in spark-submit's JVM (Delta's package loaded)


def documented_spark_submit() -> str:
    """The spark-submit block of docs/operations.md, verbatim (its first line sets the variables)."""
    text = OPERATIONS.read_text()
    found = re.search(r"```bash\n(INPUT=.*?)```", text, re.S)
    assert found, f"no spark-submit block starting with INPUT= in {OPERATIONS}"
    return found.group(1)


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> Path:
    """A copy of the Redpanda sample whose files are modified now (the block reads files since yesterday)."""
    root = tmp_path_factory.mktemp("samples") / "redpanda"
    shutil.copytree(REPO / "data" / "samples" / "redpanda", root)
    now = time.time()
    for path in root.rglob("*"):
        os.utime(path, (now, now))
    return root


@pytest.fixture(scope="module")
def submitted(samples, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """The documented block run from a copy of the project (it builds the wheel in ``dist/``)."""
    work = tmp_path_factory.mktemp("submit")
    project = work / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, project / name)
    shutil.copytree(REPO / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    lake = work / "lake"
    block = documented_spark_submit()
    first, rest = block.split("\n", 1)
    assert first.startswith("INPUT=") and "MASTER=" in first, first
    # The session is spark-submit's: a setting from spark-defaults.conf must survive the cluster profile.
    conf_dir = work / "spark-conf"
    conf_dir.mkdir()
    # The rest is this machine's cluster setup, tuned as the local profile tunes a short run (a JVM
    # without C2, no generated code, few Delta snapshot tasks): the sample is 209 lines.
    (conf_dir / "spark-defaults.conf").write_text(
        f"spark.sql.shuffle.partitions 3\nspark.ui.enabled false\nspark.pyspark.python {sys.executable}\n"
        f"spark.pyspark.driver.python {sys.executable}\n"
        "spark.driver.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m\n"
        "spark.sql.codegen.wholeStage false\nspark.sql.codegen.factoryMode NO_CODEGEN\n"
        "spark.databricks.delta.snapshotPartitions 2\n"
    )
    script = f"set -euo pipefail\nINPUT={samples} LAKE={lake} MASTER='local[2]'\n{rest}"
    env = child_env()
    env["SPARK_CONF_DIR"] = str(conf_dir)
    proc = subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True, timeout=1500)
    (work / "spark-submit.out").write_text(proc.stdout + proc.stderr)
    return proc, lake


def _tail(proc: subprocess.CompletedProcess) -> str:
    output = proc.stdout + proc.stderr
    ours = "\n".join(line for line in output.splitlines() if "epoch-audit" in line or "Error" in line)
    return f"{ours[-3000:]}\n--- output tail ---\n{output[-1500:]}"


def test_documented_spark_submit_runs_on_delta_spark(spark, samples, submitted):
    proc, lake = submitted
    output = proc.stdout + proc.stderr
    assert proc.returncode == 3, f"spark-submit exited {proc.returncode} (3: violations found):\n{_tail(proc)}"
    assert "session master=local[2] spark.sql.shuffle.partitions=3" in output, _tail(proc)
    assert f"lake {lake} on engine delta-spark" in output, _tail(proc)
    assert (lake / "gold" / "violations" / "_delta_log").is_dir()
    truth = load_truth([samples])
    assert truth, "the Redpanda sample has injected violations"
    result = score(found_keys(DeltaRsStorage(spark, str(lake)).read("gold/violations")), truth)
    assert result.summary() == {
        "precision": 1.0, "recall": 1.0, "true_positives": len(truth),
        "false_positives": [], "false_negatives": [],
    }


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q", "-n", "0"]))
