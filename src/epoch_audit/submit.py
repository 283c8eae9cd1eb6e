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


def main(argv: list[str] | None = None) -> int:
    """Run the ``epoch-audit`` command line under spark-submit; return its exit code."""
    from epoch_audit.cli import main as cli_main

    return cli_main(list(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
