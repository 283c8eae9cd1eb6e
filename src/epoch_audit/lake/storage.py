"""Lakehouse storage: one small interface, two Delta engines.

Tables are named by their place in the lake (``bronze/events``, ``gold/violations``...: see
:mod:`epoch_audit.lake.tables`) and live at ``<lake>/<name>``. Both engines write genuine Delta
tables (a real ``_delta_log``): ``delta-spark`` (:mod:`epoch_audit.lake.delta_spark`) when the Delta
JVM classes are loadable in the session, else the embedded ``delta-rs``
(:mod:`epoch_audit.lake.delta_rs`). :func:`open_storage` picks one.
"""

from __future__ import annotations

import logging

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
    """True when the Delta Lake JVM classes can be loaded in this session."""
    jvm = getattr(spark, "_jvm", None)
    if jvm is None:
        # Spark Connect (Databricks serverless, shared clusters): no py4j; Delta is built in there.
        return True
    try:
        jvm.java.lang.Class.forName(DELTA_EXTENSION_CLASS)
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
            "(start Spark with --packages io.delta:delta-spark_2.13:4.0.0 or use engine delta-rs)"
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
