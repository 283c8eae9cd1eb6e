"""The pipeline on a real multi-process Spark cluster finds exactly the samples' violations (issue #22).

A standalone master and two workers are started from the pyspark distribution (``bin/spark-class``,
one core and 1 GB each); the block of docs/operations.md "A Spark standalone cluster" is run as
written against them. The driver runs in spark-submit's process, each executor in its own JVM and
working directory (``<worker dir>/<app>/<executor>``) with its own Python workers, so nothing can
rely on sharing a process or a working directory with the driver:

- ``INPUT`` and ``LAKE`` are relative to spark-submit's working directory, which is no executor's
  (inputs and lake are on a path every process sees, as on a shared mount);
- ``PYTHON`` has the third-party dependencies but not ``epoch_audit``: driver and executors can only
  import it from the wheel shipped with ``--py-files``;
- the engine is delta-rs (no ``--packages``): executors write the tables' Parquet files, the driver
  commits them;
- the executors' local time zone is not the driver's.

Its gold violations are scored against the samples' truth.jsonl (what a local run writes, see
tests/e2e/test_spark_submit.py), and every line read is accounted for.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pyspark
import pytest
from deltalake import DeltaTable
from epoch_audit_tools.evaluate import TRUTH_KEY, load_truth, score

from tests.helpers import child_env

REPO = Path(__file__).resolve().parents[2]
OPERATIONS = REPO / "docs" / "operations.md"
SAMPLES = REPO / "data" / "samples"
pytestmark = pytest.mark.slow  # a master, two workers, their executors and a pipeline run

WORKERS = 2
STARTUP_SECONDS = 120


def documented_cluster_submit() -> str:
    """The block of docs/operations.md "A Spark standalone cluster", verbatim (its first line sets the variables)."""
    text = OPERATIONS.read_text()
    found = re.search(r"## A Spark standalone cluster\n.*?```bash\n(MASTER=.*?)```", text, re.S)
    assert found, f"no block starting with MASTER= under 'A Spark standalone cluster' in {OPERATIONS}"
    return found.group(1)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Standalone:
    """A running standalone cluster: its master URL and the workers' directories (one per worker)."""

    url: str
    web_ui: str
    worker_dirs: list[Path]
    logs: list[Path] = field(default_factory=list)

    def log_tails(self) -> str:
        return "\n".join(f"--- {log.name} ---\n{log.read_text(errors='replace')[-1500:]}" for log in self.logs)


def _stop(process: subprocess.Popen) -> None:
    """The process and everything it started (a worker's executors and their Python workers), which
    share its process group: SIGTERM (a worker stops its executors), then SIGKILL to what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)  # the group outlives a leader that exited before its children
        except ProcessLookupError:
            return  # nothing left of the group
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            continue


def _alive_workers(web_ui: str) -> int:
    try:
        with urllib.request.urlopen(f"{web_ui}/json", timeout=5) as response:
            state = json.load(response)
    except OSError:
        return -1  # not up yet
    return sum(w.get("state") == "ALIVE" for w in state.get("workers", []))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Standalone]:
    """A master and two workers (one core, 1 GB each) on loopback; stopped, with their executors, at the end."""
    root = tmp_path_factory.mktemp("standalone")
    env = child_env()
    env.update({
        "SPARK_HOME": str(Path(pyspark.__file__).parent),
        "SPARK_CONF_DIR": str(root / "conf"),  # empty: no spark-defaults of this machine
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_DAEMON_MEMORY": "256m",  # the master's and workers' own heaps, not the executors'
    })
    (root / "conf").mkdir()
    spark_class = str(Path(pyspark.__file__).parent / "bin" / "spark-class")
    master_port, master_ui = _free_port(), _free_port()
    running = Standalone(f"spark://127.0.0.1:{master_port}", f"http://127.0.0.1:{master_ui}",
                         [root / f"worker-{k}" for k in range(1, WORKERS + 1)])
    processes: list[subprocess.Popen] = []

    def start(name: str, *args: str) -> None:
        log = root / f"{name}.log"
        running.logs.append(log)
        with open(log, "wb") as out:
            processes.append(subprocess.Popen(
                [spark_class, *args], env=env, cwd=root, stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,  # its own process group, stopped whole
            ))

    try:
        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", str(master_port), "--webui-port", str(master_ui))
        for k, work_dir in enumerate(running.worker_dirs, 1):
            work_dir.mkdir()
            start(f"worker-{k}", "org.apache.spark.deploy.worker.Worker", running.url, "--host", "127.0.0.1",
                  "--cores", "1", "--memory", "1g", "--work-dir", str(work_dir), "--webui-port", "0")
        deadline = time.monotonic() + STARTUP_SECONDS
        while _alive_workers(running.web_ui) < WORKERS:
            exited = [p.args[1] for p in processes if p.poll() is not None]
            assert not exited, f"{exited} exited while the cluster started:\n{running.log_tails()}"
            assert time.monotonic() < deadline, f"no {WORKERS} ALIVE workers in {STARTUP_SECONDS} s:\n{running.log_tails()}"
            time.sleep(1)
        yield running
    finally:
        for process in reversed(processes):  # workers (and their executors) first, then the master
            _stop(process)


@pytest.fixture(scope="module")
def executor_python(tmp_path_factory) -> Path:
    """An interpreter with this environment's third-party packages but without ``epoch_audit`` (and the dev
    tools): a virtualenv whose .pth file adds the site-packages folder as a plain path, so the editable
    installs there (themselves .pth files) are not processed."""
    env_dir = tmp_path_factory.mktemp("executor-python") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


@pytest.fixture(scope="module")
def submitted(cluster, executor_python, tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path, float]:
    """The documented block run from a copy of the project (it builds the wheel in ``dist/``), the samples
    copied beside it: ``INPUT=samples LAKE=lake``, relative to spark-submit's working directory."""
    project = tmp_path_factory.mktemp("cluster-submit") / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, project / name)
    shutil.copytree(REPO / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    shutil.copytree(SAMPLES, project / "samples")
    block = documented_cluster_submit()
    first, rest = block.split("\n", 1)
    assert first.startswith("MASTER=") and "INPUT=" in first and "LAKE=" in first and "PYTHON=" in first, first
    conf_dir = project.parent / "spark-conf"
    conf_dir.mkdir()
    # This machine's cluster setup (2 cores shared with everything else): one 1 GB executor per
    # worker, a 1 GB driver, JVMs without C2 and Spark without generated code (a short run: the
    # samples are 9 MB), few shuffle partitions. The driver binds to loopback like the workers.
    # The executors' hosts keep another local time zone than the driver's: nothing may depend on it.
    short_jvm = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
    (conf_dir / "spark-defaults.conf").write_text("\n".join([
        "spark.driver.memory 1g", "spark.executor.memory 1g", "spark.executor.cores 1", f"spark.cores.max {WORKERS}",
        "spark.driver.host 127.0.0.1", "spark.driver.bindAddress 127.0.0.1", "spark.ui.enabled false",
        "spark.sql.shuffle.partitions 4", f"spark.driver.extraJavaOptions {short_jvm}",
        f"spark.executor.extraJavaOptions {short_jvm}", "spark.sql.codegen.wholeStage false",
        "spark.sql.codegen.factoryMode NO_CODEGEN", "spark.executorEnv.TZ America/Los_Angeles", "",
    ]))
    script = f"set -euo pipefail\nMASTER={cluster.url} INPUT=samples LAKE=lake PYTHON={executor_python}\n{rest}"
    env = child_env()
    env["SPARK_CONF_DIR"] = str(conf_dir)
    started = time.monotonic()
    proc = subprocess.run(["bash", "-c", script], cwd=project, env=env, capture_output=True, text=True, timeout=900)
    seconds = time.monotonic() - started
    (project.parent / "spark-submit.out").write_text(proc.stdout + proc.stderr)
    return proc, project / "lake", seconds


def _tail(proc: subprocess.CompletedProcess, cluster: Standalone) -> str:
    output = proc.stdout + proc.stderr
    ours = "\n".join(line for line in output.splitlines() if "epoch-audit" in line or "Error" in line)
    executors = "\n".join(f"--- {p} ---\n{p.read_text(errors='replace')[-1500:]}"
                          for d in cluster.worker_dirs for p in sorted(d.glob("app-*/*/stderr")))
    return f"{ours[-3000:]}\n--- output tail ---\n{output[-1500:]}\n{executors}"


def test_executor_python_cannot_import_the_project(executor_python):
    """What makes the run below prove that the executors use the shipped wheel."""
    missing = subprocess.run([executor_python, "-c", "import epoch_audit"], capture_output=True, text=True)
    assert missing.returncode != 0 and "No module named 'epoch_audit'" in missing.stderr, missing
    subprocess.run([executor_python, "-c", "import deltalake, great_expectations, pyarrow, yaml"], check=True)


def test_documented_block_runs_on_a_standalone_cluster(cluster, submitted):
    proc, lake, seconds = submitted
    output = proc.stdout + proc.stderr
    assert proc.returncode == 3, f"spark-submit exited {proc.returncode} (3: violations found):\n{_tail(proc, cluster)}"
    assert f"session master={cluster.url} spark.sql.shuffle.partitions=4" in output, _tail(proc, cluster)
    assert "lake lake on engine delta-rs" in output, _tail(proc, cluster)
    # Each worker ran an executor of the application, in its own working directory.
    for work_dir in cluster.worker_dirs:
        assert list(work_dir.glob("app-*/*/stderr")), f"no executor ran in {work_dir}:\n{_tail(proc, cluster)}"
    truth = load_truth([SAMPLES])
    assert truth, "the samples have injected violations"
    found = {tuple(row[k] for k in TRUTH_KEY)
             for row in DeltaTable(str(lake / "gold" / "violations")).to_pyarrow_table(columns=list(TRUTH_KEY)).to_pylist()}
    assert score(found, truth).summary() == {
        "precision": 1.0, "recall": 1.0, "true_positives": len(truth),
        "false_positives": [], "false_negatives": [],
    }
    ledger = DeltaTable(str(lake / "bronze" / "ingest_accounting")).to_pyarrow_table().to_pylist()
    assert sum(row["lines_read"] for row in ledger) > 0
    for row in ledger:
        assert row["lines_read"] == row["parsed"] + row["irrelevant"] + row["malformed"], row
    print(f"spark-submit on the standalone cluster: {seconds:.1f} s")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q", "-n", "0", "-s"]))
