"""PySpark's worker daemon, importing PySpark from its installed package instead of ``pyspark.zip``.

A local session's Python workers get ``$SPARK_HOME/python/lib/pyspark.zip`` first on their path
(``PythonUtils.sparkPythonPath``); for a pip-installed PySpark that zip holds the same sources as
the package beside it. Python caches no bytecode for modules imported from a zip, so every daemon
and every worker it forks compiled PySpark's modules from source: importing what a worker needs
took 2.0 s from the zip and 0.7 s from the package (2-core host), paid by each worker a session
starts. Run as ``spark.python.daemon.module`` (:func:`epoch_audit.spark.get_spark`, local sessions):
the zip leaves the path only when an installed PySpark of the same package is on it, so the same
files run, only compiled once.
"""

from __future__ import annotations

import importlib.machinery
import os
import sys


def without_pyspark_zips(path: list[str]) -> list[str]:
    """``path`` without the zips of PySpark's own ``python/lib`` (``pyspark.zip``, ``py4j-*-src.zip``)
    when they lie in the PySpark package that ``path`` imports without them; else ``path`` unchanged."""
    zips = [p for p in path if _is_pyspark_lib_zip(p)]
    if not zips:
        return path
    rest = [p for p in path if p not in zips]
    spec = importlib.machinery.PathFinder.find_spec("pyspark", rest)
    if spec is None or not spec.submodule_search_locations:
        return path  # PySpark only in the zip (a Spark distribution without pip's package)
    package = os.path.realpath(next(iter(spec.submodule_search_locations)))
    if not all(os.path.realpath(z).startswith(package + os.sep) for z in zips):
        return path  # another Spark's zips: keep what Spark chose
    if importlib.machinery.PathFinder.find_spec("py4j", rest) is None:
        return path
    return rest


def _is_pyspark_lib_zip(entry: str) -> bool:
    name = os.path.basename(entry)
    lib = os.path.basename(os.path.dirname(entry))
    return lib == "lib" and (name == "pyspark.zip" or (name.startswith("py4j-") and name.endswith("-src.zip")))


def main() -> None:
    sys.path[:] = without_pyspark_zips(sys.path)  # the workers it forks inherit it
    from pyspark import daemon

    daemon.manager()


if __name__ == "__main__":
    main()
