"""spark-submit application file: ``spark-submit [options] src/epoch_audit/submit.py run --profile cluster ...``.

A thin wrapper around :func:`epoch_audit.cli.main` (same arguments, same exit codes 0/3/2/1, which
spark-submit passes on). It never builds a Spark session itself: ``epoch_audit.spark.get_spark`` is
called by the pipeline with ``spark.master`` from the profile, and the ``cluster`` / ``databricks``
profiles set it to null, so the session is the one spark-submit configured (``--master``,
``--conf``, memory) and no local master or local defaults are applied.

``epoch_audit`` comes from ``--py-files dist/epoch_audit-*.whl`` or an installed package; the
profiles (``conf/*.yaml``) travel inside it. Python puts this file's folder on ``sys.path``: every
module there is imported by its package name only, so nothing there shadows another import.
"""

from __future__ import annotations

import sys


def _describe_session() -> None:
    """One stderr line naming the master and shuffle partitions the run actually used."""
    try:
        from pyspark.sql import SparkSession

        # getActiveSession() is per JVM thread; the session the pipeline built is also kept here.
        active = SparkSession.getActiveSession() or SparkSession._instantiatedSession
        if active is not None:
            master = active.sparkContext.master
            partitions = active.conf.get("spark.sql.shuffle.partitions")
            print(f"epoch-audit: session master={master} spark.sql.shuffle.partitions={partitions}", file=sys.stderr)
    except Exception:  # informational only: never turn a finished run into a failure
        pass


def main(argv: list[str] | None = None) -> int:
    """Run the ``epoch-audit`` command line under spark-submit; return its exit code."""
    from epoch_audit.cli import main as cli_main

    code = cli_main(list(sys.argv[1:] if argv is None else argv))
    _describe_session()
    return code


if __name__ == "__main__":
    sys.exit(main())
