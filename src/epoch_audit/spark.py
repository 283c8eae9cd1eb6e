"""The one Spark session factory every job and test uses."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

T = TypeVar("T")

# Local defaults: tuned for a 2-core laptop/CI box. Never applied to an existing (cluster) session.
LOCAL_DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # Parquet row groups of 32 MB (default 128 MB compressed ≈ 480 MB of bronze rows with their raw
    # text): a task holds a whole row group while it reads a file and another while it writes
    # one, so two tasks at 128 MB plus the write's sort exhausted a 1 GB heap at 10^7 lines.
    "spark.hadoop.parquet.block.size": str(32 * 1024 * 1024),
    # The status store keeps every SQL execution's plan graph and metrics even with the UI off (1000
    # executions by default): the checks' plans are large, and a long session (the test suite, a
    # bench) filled a 6 GB heap with them and spent minutes in full GCs.
    "spark.sql.ui.retainedExecutions": "20",
    "spark.ui.retainedJobs": "100",
    "spark.ui.retainedStages": "100",
    "spark.ui.retainedTasks": "10000",
    # PySpark 4 records the Python call site of every Column and DataFrame call for its error
    # messages: four py4j round trips and a stack walk per call, about 5 s of a samples run's
    # check stage. Python tracebacks still name the line.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}

LOG4J2_CONF = Path(__file__).resolve().parent / "conf" / "log4j2.properties"

# A short run (small inputs, small lake) spends most of its JVM's CPU compiling, not running: on the
# samples (15k lines) the JIT's C2 threads took 112 of 240 CPU seconds and Janino, compiling each
# stage's generated Java, 11 % of the rest, for code that then ran for milliseconds. Without C2
# and without generated code the same run took 166 JVM CPU seconds instead of 271 (results
# identical). A long run keeps both: its hot loops need them.
SHORT_RUN_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
SHORT_RUN_CONF: dict[str, str] = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",  # interpreted expressions: no Janino compile per plan
}


def local_bytes(paths: list[Path | str]) -> int:
    """Bytes of the regular files under ``paths`` on the local disk (remote or missing paths: 0)."""
    total = 0
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            total += path.stat().st_size
        elif path.is_dir():
            for root, _dirs, files in os.walk(path):
                for name in files:
                    try:
                        total += (Path(root) / name).stat().st_size
                    except OSError:
                        continue
    return total


def is_short_run(inputs: list[Path | str], lake: str, max_bytes: int) -> bool:
    """Whether a local run over ``inputs`` into ``lake`` is short: its inputs and the lake's bronze
    events (what the stages read) hold fewer than ``max_bytes`` bytes. A remote lake's size is not
    known before Spark starts: never short."""
    if max_bytes <= 0 or "://" in lake:
        return False
    return local_bytes([*inputs, Path(lake) / "bronze" / "events"]) < max_bytes


def get_spark(
    master: str | None = "local[2]",
    driver_memory: str = "2g",
    extra_conf: dict[str, Any] | None = None,
    app_name: str = "epoch-audit",
    short_run: bool = False,
) -> SparkSession:
    """Return the active session if there is one (cluster, Databricks), else build a local one.

    ``spark.pyspark.python`` is pinned to this interpreter: workers started from another Python
    fail Arrow UDFs with "No module named pyarrow". ``short_run``: a local JVM without the C2
    compiler and Spark without generated code (:data:`SHORT_RUN_CONF`); ``extra_conf`` still wins.
    """
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
        conf = dict(LOCAL_DEFAULTS)
        conf["spark.driver.memory"] = driver_memory
        conf["spark.pyspark.python"] = sys.executable
        java_options = [f"-Dlog4j2.configurationFile={LOG4J2_CONF.as_uri()}"] if LOG4J2_CONF.is_file() else []
        if short_run:
            java_options.append(SHORT_RUN_JAVA_OPTIONS)
            conf.update(SHORT_RUN_CONF)
        if java_options:
            conf["spark.driver.extraJavaOptions"] = " ".join(java_options)
        conf.update({k: str(v) for k, v in (extra_conf or {}).items()})
        for key, value in conf.items():
            builder = builder.config(key, value)
    elif extra_conf:
        for key, value in extra_conf.items():
            builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def run_concurrently(tasks: Sequence[Callable[[], T]], workers: int) -> list[T]:
    """Each task's result, in the order of ``tasks``, run on up to ``workers`` threads.

    For independent Spark queries: a query's driver side (building the DataFrame over py4j,
    analysis, planning, scheduling) is one thread, and on small data it is most of the query's
    time, so one query is planned while another runs. Every task runs even if one fails; the
    first failure (in task order) is raised after all of them ended. ``workers`` 1: in order on
    this thread.
    """
    if workers <= 1 or len(tasks) <= 1:
        return [task() for task in tasks]
    with ThreadPoolExecutor(max_workers=min(workers, len(tasks)), thread_name_prefix="epoch-audit-query") as pool:
        futures = [pool.submit(task) for task in tasks]
    errors = [f.exception() for f in futures if f.exception() is not None]
    if errors:
        raise errors[0]
    return [f.result() for f in futures]
