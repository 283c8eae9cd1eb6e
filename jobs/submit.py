"""spark-submit application file: ``spark-submit [options] jobs/submit.py run --profile cluster ...``.

A thin wrapper around :func:`jobs.cli.main` (same arguments, same exit codes 0/3/2/1, which
spark-submit passes on). It never builds a Spark session itself: ``jobs.spark.get_spark`` is called
by the pipeline with ``spark.master`` from the profile, and the ``cluster`` / ``databricks``
profiles set it to null, so the session is the one spark-submit configured (``--master``,
``--conf``, memory) and no local master or local defaults are applied.

Two things differ from ``epoch-audit`` on a laptop:

- Python puts this file's directory (``jobs/``) first on ``sys.path``; its modules (``config``,
  ``spark``, ``storage``...) would shadow top-level imports of the same name, so it is removed.
  ``jobs`` itself comes from ``--py-files dist/epoch_audit-*.whl`` (or an installed package); a
  plain checkout is used as the last resort.
- The wheel does not carry ``conf/*.yaml``: when ``--profile NAME`` cannot be found next to the
  imported ``jobs`` package, it is read from the ``conf/`` of the checkout this file lives in.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent


def _fix_sys_path() -> None:
    """Drop ``jobs/`` from the import path; append the checkout root if ``jobs`` is not importable."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
    try:
        import jobs  # noqa: F401
    except ImportError:
        sys.path.append(str(CHECKOUT))


def resolve_profile(argv: list[str], conf_dir: Path, fallback_dir: Path) -> list[str]:
    """Turn ``--profile NAME`` into ``--conf <fallback_dir>/NAME.yaml`` when ``conf_dir`` lacks it.

    Nothing changes when ``--conf`` is given, when the profile exists in ``conf_dir`` or when the
    fallback does not have it either (the CLI then reports the missing file, exit code 2).
    """
    if any(a == "--conf" or a.startswith("--conf=") for a in argv):
        return list(argv)
    profile, index = "local", None
    for i, arg in enumerate(argv):
        if arg == "--profile" and i + 1 < len(argv):
            profile, index = argv[i + 1], i
        elif arg.startswith("--profile="):
            profile, index = arg.split("=", 1)[1], i
    if (conf_dir / f"{profile}.yaml").is_file() or not (fallback_dir / f"{profile}.yaml").is_file():
        return list(argv)
    out = list(argv)
    replacement = ["--conf", str(fallback_dir / f"{profile}.yaml")]
    if index is None:
        return out + replacement
    width = 2 if out[index] == "--profile" else 1
    out[index : index + width] = replacement
    return out


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
    _fix_sys_path()
    from jobs import config
    from jobs.cli import main as cli_main

    args = resolve_profile(list(sys.argv[1:] if argv is None else argv), config.CONF_DIR, CHECKOUT / "conf")
    code = cli_main(args)
    _describe_session()
    return code


if __name__ == "__main__":
    sys.exit(main())
