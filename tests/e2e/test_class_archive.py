"""A real local session writes the class archive when its JVM exits, and the next session's JVM
takes Spark's classes from it (epoch_audit.class_archive)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from epoch_audit.class_archive import ARCHIVE_ENV

SESSION = """
from epoch_audit.spark import get_spark
spark = get_spark("local[1]", "1g", short_run=True)
assert spark.range(100).selectExpr("id % 3 AS k").groupBy("k").count().count() == 3
"""


def _session(env: dict[str, str]) -> None:
    done = subprocess.run([sys.executable, "-c", SESSION], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_session_writes_the_archive_and_the_next_jvm_maps_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {ARCHIVE_ENV, "PYSPARK_GATEWAY_PORT"}}
    env["EPOCH_AUDIT_CACHE"] = str(tmp_path / "cache")
    archives = tmp_path / "cache" / "class-archive"
    _session(env)
    deadline = time.time() + 240  # the JVM writes it after the Python process ended
    while time.time() < deadline and not list(archives.glob("*.jsa")):
        time.sleep(0.5)
    written = list(archives.glob("*.jsa"))
    assert len(written) == 1 and written[0].stat().st_size > 10 * 2**20, list(archives.iterdir())
    assert not list(archives.glob("*.tmp"))  # the claim became the archive

    logs = tmp_path / "class-load"
    logs.mkdir()
    # read by the java launcher itself: every JVM of the session logs where each class came from
    _session({**env, "JDK_JAVA_OPTIONS": f"-Xlog:class+load=info:file={logs}/%p.log"})
    spark_jvm = [t for t in (p.read_text() for p in logs.glob("*.log")) if "org.apache.spark.SparkContext " in t]
    assert len(spark_jvm) == 1
    line = next(x for x in spark_jvm[0].splitlines() if " org.apache.spark.SparkContext " in x)
    assert "source: shared objects file (top)" in line, line
