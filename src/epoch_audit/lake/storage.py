"""Lakehouse storage: one small interface, two Delta engines.

Tables are named by their place in the lake (``bronze/events``, ``gold/violations``...: see
:mod:`epoch_audit.lake.tables`) and live at ``<lake>/<name>``. Both engines write genuine Delta
tables (a real ``_delta_log``): ``delta-spark`` (:mod:`epoch_audit.lake.delta_spark`) when the Delta
JVM classes are loadable in the session, else the embedded ``delta-rs``
(:mod:`epoch_audit.lake.delta_rs`). :func:`open_storage` picks one.
"""

from __future__ import annotations

import logging
import uuid

from pyspark.sql import SparkSession

from epoch_audit.lake.delta_rs import DeltaRsStorage
from epoch_audit.lake.delta_spark import DeltaSparkStorage
from epoch_audit.lake.engine_base import CRASH_ENV, LakeStorage, StorageError, crash_point

__all__ = [
    "CRASH_ENV",
    "DeltaRsStorage",
    "DeltaSparkStorage",
    "LakeStorage",
    "StorageError",
    "crash_point",
    "delta_jvm_available",
    "open_storage",
    "select_engine",
]

log = logging.getLogger(__name__)

DELTA_EXTENSION_CLASS = "io.delta.sql.DeltaSparkSessionExtension"


def delta_jvm_available(spark: SparkSession) -> bool:
    """True when the session can read and write Delta through Spark (Delta's classes are loaded)."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        # Spark Connect: no py4j. Ask the server to resolve the delta source for a path that does
        # not exist: without Delta the source itself is unknown (DATA_SOURCE_NOT_FOUND).
        probe = f"/nonexistent/epoch-audit-delta-probe-{uuid.uuid4().hex}"
        try:
            _ = spark.read.format("delta").load(probe).columns  # analysis only, no job
        except Exception as err:
            return "DATA_SOURCE_NOT_FOUND" not in str(err) and "Failed to find the data source" not in str(err)
        return True
    try:
        # Spark's class loader, not py4j's: jars of spark.jars.packages are visible only to it.
        jvm.org.apache.spark.util.Utils.classForName(DELTA_EXTENSION_CLASS, True, False)
        return True
    except Exception:  # py4j raises Py4JJavaError for ClassNotFoundException
        return False


def select_engine(requested: str, delta_available: bool) -> str:
    """Pick the engine for a requested setting (auto | delta-spark | delta-rs)."""
    if requested == "auto":
        return "delta-spark" if delta_available else "delta-rs"
    if requested == "delta-spark" and not delta_available:
        raise StorageError(
            "storage.engine is delta-spark but the Delta JVM classes are not on the classpath "
            "(a local session loads it with --engine delta-spark; spark-submit needs --packages "
            "io.delta:delta-spark_4.1_2.13:4.4.0; or use engine delta-rs)"
        )
    if requested not in ("delta-spark", "delta-rs"):
        raise StorageError(f"unknown storage.engine {requested!r}: use auto, delta-spark or delta-rs")
    return requested


def open_storage(spark: SparkSession, lake: str, engine: str = "auto") -> LakeStorage:
    """The storage for ``lake`` on the engine ``engine`` resolves to."""
    chosen = select_engine(engine, delta_jvm_available(spark) if engine != "delta-rs" else False)
    log.info("lake %s on engine %s", lake, chosen)
    if chosen == "delta-spark":
        return DeltaSparkStorage(spark, lake)
    return DeltaRsStorage(spark, lake)
