"""The one Spark session factory every job and test uses."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

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
}

LOG4J2_CONF = Path(__file__).resolve().parent / "conf" / "log4j2.properties"


def get_spark(
    master: str | None = "local[2]",
    driver_memory: str = "2g",
    extra_conf: dict[str, Any] | None = None,
    app_name: str = "epoch-audit",
) -> SparkSession:
    """Return the active session if there is one (cluster, Databricks), else build a local one.

    ``spark.pyspark.python`` is pinned to this interpreter: workers started from another Python
    fail Arrow UDFs with "No module named pyarrow".
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
        if LOG4J2_CONF.is_file():
            conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={LOG4J2_CONF.as_uri()}"
        conf.update({k: str(v) for k, v in (extra_conf or {}).items()})
        for key, value in conf.items():
            builder = builder.config(key, value)
    elif extra_conf:
        for key, value in extra_conf.items():
            builder = builder.config(key, str(value))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
