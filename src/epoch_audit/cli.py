"""The epoch-audit command line: argument parsing, the run of a command's stages, exit codes.

Exit codes: 0 = ran, nothing wrong found; 3 = ran, and found violations of severity error or
failed critical expectations; 2 = bad usage, config, input or lake path (one line on stderr);
1 = internal failure.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
import time
import uuid
from typing import Any

from epoch_audit import __version__
from epoch_audit.errors import LakePathError, UsageError, error_object, lake_failure, one_line

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_FOUND = 0, 1, 2, 3

log = logging.getLogger("epoch_audit")

DESCRIPTION = (
    "Audit Kafka and Redpanda broker and controller logs for replication-safety violations:\n"
    "raw logs -> bronze events -> silver epoch timelines -> gold violations -> validation -> HTML report,\n"
    "all in one Delta lake. Runs on PySpark: Java 17 must be installed."
)
EXIT_CODES = """\
exit codes:
  0  ran, nothing wrong found
  3  ran, and found new violations of severity error or failed critical expectations
  2  bad usage, config, input path or lake path (one line on stderr; do not retry)
  1  internal failure (retry; --debug shows the traceback)
"""
EXAMPLES = """\
examples:
  epoch-audit run --input data/samples --lake lake
      the whole pipeline over the committed samples (exits 3: they hold injected violations);
      the report is lake/reports/<run_id>/index.html
  epoch-audit run --input /logs --lake /lake --since 2024-03-05 --json
      a nightly run over what arrived since that day; the run summary as JSON on stdout
  epoch-audit validate --lake /lake --profile cluster
      one stage on an existing lake
  epoch-audit maintain --lake /lake --retention-hours 168
      after the nightly run: compact every table's small files, delete what no week-old version reads
"""
OUTPUT = """\
output:
  progress and logs on stderr (a progress bar on a terminal, plain lines elsewhere), ending with one
  summary line: status, exit code, new violations, failed expectations, wall time, report path.
  --json prints the run summary (or, on failure, {"status": "error", "exit_code": N, "error": {...}})
  as one JSON object on stdout.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _help_format(prog: str) -> argparse.HelpFormatter:
    """Help as written (examples and exit codes keep their lines), options in a wide first column."""
    return argparse.RawDescriptionHelpFormatter(prog, max_help_position=32)


class _VersionAction(argparse.Action):
    """``--version``: this package's version and the Python and PySpark it runs on (asked for in bug reports)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        import platform

        try:
            import pyspark

            spark = f", PySpark {pyspark.__version__}"
        except ImportError:
            spark = ""
        print(f"epoch-audit {__version__} (Python {platform.python_version()}{spark})")
        parser.exit(EXIT_OK)


RUN_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def run_id_argument(value: str) -> str:
    """A run id names folders in the lake: letters, digits, '.', '_', '-' only, never a path step."""
    if not RUN_ID.fullmatch(value) or ".." in value or value.strip(".") == "":
        raise argparse.ArgumentTypeError(
            f"invalid value {value!r}: expected 1 to 64 of [A-Za-z0-9._-], without '..'"
        )
    return value


def _common(p: argparse.ArgumentParser, needs_input: bool = False) -> None:
    p.add_argument("--lake", required=True, metavar="DIR",
                   help="lake directory, created if missing (Delta tables live under it), or an object "
                   "store's URI (s3://bucket/prefix)")
    p.add_argument("--report-dir", default=None, metavar="DIR",
                   help="write the HTML report and GX Data Docs here (default: the profile's "
                   "validation.report_dir, else <lake>/reports)")
    p.add_argument("--conf", default=None, metavar="FILE", help="YAML config file (default: the --profile's)")
    p.add_argument("--profile", default="local", metavar="NAME",
                   help="profile in the package's conf/: local (default), cluster, databricks")
    p.add_argument("--run-id", default=None, type=run_id_argument, metavar="ID",
                   help="run id, [A-Za-z0-9._-]{1,64} without '..' (default: UTC time + random suffix)")
    p.add_argument("--json", action="store_true",
                   help="print the run summary, or the error, as one JSON object on stdout")
    p.add_argument("--debug", action="store_true", help="show tracebacks, third-party and Spark logs")
    p.add_argument("--engine", default=None, choices=("auto", "delta-spark", "delta-rs"),
                   help="Delta engine (default: the profile's storage.engine; a local session loads "
                   "delta-spark's package on first use)")
    p.add_argument("--spark-remote", default=None, metavar="URL",
                   help="run through Spark Connect: sc://host:port, or local[N] for a local Connect server "
                   "(default: the profile's spark.remote; none: a classic session)")
    p.add_argument("--junit-xml", default=None, metavar="FILE",
                   help="also write the run as JUnit XML (a test case per invariant and per expectation)")
    p.add_argument("--suppressions", default=None, metavar="FILE",
                   help="YAML file of acknowledged violations (reason, owner, expires): they leave the exit code "
                   "until they expire (default: the profile's checks.suppressions_file)")
    if needs_input:
        p.add_argument("--input", action="append", required=True, metavar="PATH",
                       help="input file or directory, or an object store's URI (s3://bucket/prefix) (repeatable)")
        p.add_argument("--cluster-id", default=None, metavar="ID",
                       help="cluster id when no cluster=<id> path segment names it")
        window = p.add_mutually_exclusive_group()
        window.add_argument(
            "--since", default=None, metavar="TIME",
            help="read only input files modified at or after this UTC time (YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS])",
        )
        window.add_argument(
            "--date", default=None, metavar="DAY", help="read only input files modified on this UTC day (YYYY-MM-DD)"
        )


def check_output_file(path: str, option: str) -> None:
    """An output file's folder must exist and be writable, checked before Spark starts (exit 2)."""
    target = os.path.abspath(path)
    folder = os.path.dirname(target)
    if os.path.isdir(target):
        raise UsageError(f"{option} {path}: is a directory, expected a file path")
    if not os.path.isdir(folder):
        raise UsageError(f"{option} {path}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{option} {path}: folder {folder} is not writable")


def _dev_commands(sub: argparse._SubParsersAction) -> dict[str, Any]:
    """``simulate`` and ``bench`` when the development tools (tools/, not in the wheel) are installed."""
    try:
        from epoch_audit_tools.commands import add_commands
    except ModuleNotFoundError as err:
        if err.name != "epoch_audit_tools":  # a broken tools install must not pass for a missing one
            raise
        return {}
    return add_commands(sub)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="epoch-audit", description=DESCRIPTION, epilog=EXAMPLES + "\n" + EXIT_CODES + "\n" + OUTPUT,
        formatter_class=_help_format,
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for name, text, needs_input in (
        ("run", "the whole pipeline: ingest, timelines, check, validate, report", True),
        ("ingest", "raw log files -> bronze tables", True),
        ("timelines", "bronze -> silver epoch timelines", False),
        ("check", "silver -> gold violations", False),
        ("validate", "expectation suites on every layer", False),
        ("report", "the HTML run report", False),
        ("maintain", "compact and vacuum every table of the lake (after the nightly run)", False),
    ):
        epilog = (EXAMPLES + "\n" if name == "run" else "") + EXIT_CODES
        command = sub.add_parser(
            name, help=text, description=text, epilog=epilog, formatter_class=_help_format
        )
        _common(command, needs_input=needs_input)
        if name == "maintain":
            command.add_argument(
                "--retention-hours", type=int, default=None, metavar="N",
                help="delete files no table version younger than N hours reads (default: the profile's "
                "maintenance.retention_hours, 168)",
            )
    from epoch_audit.lab.command import add_lab_command

    parser.set_defaults(dev_commands={**add_lab_command(sub), **_dev_commands(sub)})
    return parser


def input_window(since: str | None, date: str | None) -> tuple[float | None, float | None]:
    """(start, end) in epoch seconds, UTC, of the file modification times ``--since``/``--date`` admit."""
    import datetime as dt

    def parse(value: str, option: str, date_only: bool) -> dt.datetime:
        formats = ("%Y-%m-%d",) if date_only else ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S")
        for fmt in formats:
            try:
                return dt.datetime.strptime(value, fmt).replace(tzinfo=dt.UTC)
            except ValueError:
                continue
        shape = "YYYY-MM-DD" if date_only else "YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS]"
        raise UsageError(f"argument {option}: invalid value {value!r}: expected {shape} (UTC)")

    if date is not None:
        day = parse(date, "--date", True)
        return day.timestamp(), (day + dt.timedelta(days=1)).timestamp()
    if since is not None:
        return parse(since, "--since", False).timestamp(), None
    return None, None


def _import_in_background(stages: list[str]) -> None:
    """Import the later stages' modules while the JVM starts: Great Expectations alone takes
    seconds to import (4–5 s), and a Spark session takes seconds to start; they need not add up.
    The pipeline imports validation and the report lazily, so they are imported here by name."""
    import threading

    def load() -> None:
        try:
            import epoch_audit.stages.pipeline  # noqa: F401
            if "validate" in stages:
                import epoch_audit.stages.validate  # noqa: F401  (Great Expectations)
            if "report" in stages:
                import epoch_audit.report.html  # noqa: F401
        except Exception:  # the stage imports it again and reports the error itself
            return

    threading.Thread(target=load, name="import-stages", daemon=True).start()


def _first_run(lake: str) -> bool:
    """Whether ``lake`` (a local path) holds no bronze events yet. A remote lake is not known
    before Spark starts: never a first run here."""
    if "://" in lake and not lake.startswith("file://"):
        return False
    return not os.path.isdir(os.path.join(lake.removeprefix("file://"), "bronze", "events", "_delta_log"))


def _previous_stage_seconds(spark: Any, storage: Any, command: str) -> dict[str, float]:
    """Per stage, how long the last completed run of ``command`` took (the progress display's ETA)."""
    from pyspark.sql import functions as F

    from epoch_audit.console import stage_seconds
    from epoch_audit.lake.tables import RUN_SUMMARY_TABLE

    try:
        if not storage.exists(RUN_SUMMARY_TABLE):
            return {}
        rows = (
            storage.read(RUN_SUMMARY_TABLE).where(F.col("command") == command)
            .orderBy(F.col("finished_at").desc()).select("summary").limit(1).collect()
        )
        return stage_seconds(json.loads(rows[0]["summary"])) if rows else {}
    except Exception as err:  # an estimate only: never fail a run over it
        log.debug("no stage times of an earlier run: %s", err)
        return {}


def _run_pipeline(args: argparse.Namespace, stages: list[str], console: Any = None) -> tuple[int, dict[str, Any]]:
    import datetime as dt

    from epoch_audit import objstore
    from epoch_audit.config import load_config, validate_config
    from epoch_audit.console import RunProgress
    from epoch_audit.lake.storage import crash_point, open_storage
    from epoch_audit.spark import get_spark, is_below, is_connect, run_weight

    started_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    window = input_window(getattr(args, "since", None), getattr(args, "date", None))

    config = load_config(args.conf, args.profile)
    if getattr(args, "engine", None):
        config.storage.engine = args.engine
    if getattr(args, "spark_remote", None):
        config.spark.remote = args.spark_remote
        validate_config(config)
    if getattr(args, "cluster_id", None):
        config.ingest.cluster_id = args.cluster_id
    if getattr(args, "retention_hours", None) is not None:
        if args.retention_hours < 0:
            raise UsageError(f"argument --retention-hours: must be >= 0, got {args.retention_hours}")
        config.maintenance.retention_hours = args.retention_hours
    if getattr(args, "suppressions", None):
        config.checks.suppressions_file = args.suppressions
    if getattr(args, "report_dir", None):
        config.validation.report_dir = args.report_dir
    if "check" in stages:  # a bad suppressions file fails here, before Spark starts
        from epoch_audit.gold.registry import REGISTRY
        from epoch_audit.suppressions import load_suppressions

        load_suppressions(config.checks.suppressions_file, {spec.id for spec in REGISTRY})
    run_id = args.run_id or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
    inputs: list = []
    if getattr(args, "input", None):
        from epoch_audit.bronze.discover import discover

        inputs = discover(args.input)  # bad paths fail here, before Spark starts
        if not inputs and _first_run(args.lake):
            from epoch_audit.bronze.discover import InputError

            raise InputError(
                f"no log file under {', '.join(args.input)}: a first run has nothing to audit "
                "(a later night without files fails as silent hosts instead)"
            )
    remote = config.spark.remote
    embedded = bool(config.spark.master) if not remote else remote.startswith("local")  # we start its JVM
    # What the run reads: local files in the --date / --since window (a night's deliveries, not the
    # whole tree); an object-store input is sized by listing its root, not asked per object.
    from epoch_audit.bronze.discover import in_window

    unbounded = window == (None, None)
    sized = [p for p in inputs if not objstore.is_remote(str(p)) and (unbounded or in_window(p, window))] + [
        u for u in getattr(args, "input", None) or [] if objstore.is_remote(u)]
    lag = config.incremental.traffic_lag_minutes if config.incremental.carry_traffic else None
    sizing = embedded and (config.spark.short_run_max_bytes > 0 or config.spark.c2_min_bytes > 0)
    weight = run_weight(sized, args.lake, lag) if sizing else None
    short = is_below(weight, config.spark.short_run_max_bytes)
    c2_compiler = not short and not is_below(weight, config.spark.c2_min_bytes)
    if short:
        log.debug("short run: JVM without C2, Spark without generated code (under spark.short_run_max_bytes)")
    elif not c2_compiler:
        log.debug("mid-size run: JVM without C2 (under spark.c2_min_bytes)")
    extra_conf, packages = dict(config.spark.conf), []
    if embedded and config.storage.engine == "delta-spark":  # an embedded session loads Delta
        from epoch_audit.lake.delta_spark import delta_session_conf

        extra_conf = {**delta_session_conf(), **extra_conf}
        packages = [config.storage.delta_spark_package]
    if embedded and objstore.scheme(args.lake) in objstore.S3_SCHEMES:
        # Spark reads and writes an S3 lake's files through Hadoop's s3a (either engine)
        extra_conf = {**objstore.spark_s3a_conf(), "spark.jars.excludes": objstore.HADOOP_AWS_EXCLUDES, **extra_conf}
        packages += list(objstore.HADOOP_AWS_PACKAGES)
    # Last before the session: the imports hold the GIL for seconds, and everything before the
    # JVM's launch would wait for them (the JVM then starts seconds later).
    _import_in_background(stages)
    spark = get_spark(
        config.spark.master, config.spark.driver_memory, extra_conf, short_run=short, packages=packages,
        remote=remote, c2_compiler=c2_compiler,
    )
    # first thing, so a scheduler's log shows which session the run got (spark-submit's, or a local one)
    master = f"spark-connect {remote}" if is_connect(spark) else spark.sparkContext.master
    partitions = spark.conf.get("spark.sql.shuffle.partitions")
    log.info("session master=%s spark.sql.shuffle.partitions=%s", master, partitions)
    storage = open_storage(spark, args.lake, config.storage.engine)
    from epoch_audit.stages.pipeline import INGEST
    from epoch_audit.stages.state import record_run
    from epoch_audit.stages.upgrade import upgrade_lake

    upgrade_lake(spark, storage)  # an older build's tables get this build's columns first

    summary: dict[str, Any] = {
        "run_id": run_id, "lake": args.lake, "engine": storage.engine, "short_run": short,
        "c2_compiler": c2_compiler, "stages": {}
    }
    exit_code = EXIT_OK
    expected = _previous_stage_seconds(spark, storage, args.command) if console is not None else {}
    from epoch_audit.stages.base import stage_sharing

    with RunProgress(stages, expected, console) as progress, stage_sharing():
        for stage in stages:
            with progress.stage(stage):
                detail = _run_stage(stage, spark, storage, config, run_id, args, window, ingested=INGEST in stages,
                                    started_at=started_at)
            if stage == "check":
                errors = sum(v["count"] for v in detail.get("violations", []) if v["severity"] == "error")
                if errors:
                    exit_code = EXIT_FOUND
                for v in detail.get("violations", []):
                    log.info("violation %s (%s, %s): %d", v["invariant"], v["severity"], v["confidence"], v["count"])
                for r in detail.get("rejected_isr_joins", []):
                    log.info("ISR join rejected by the controller (system working) in %s, %s: %d",
                             r["cluster_id"], r["reason"], r["count"])
            elif stage == "validate" and detail.get("critical_failures"):
                exit_code = EXIT_FOUND
            if detail["status"] == "skipped":
                log.warning("stage %s skipped: %s", stage, detail.get("reason"))
            detail["seconds"] = round(progress.done[stage], 3)
            log.info("%s: done in %.1f s", stage, detail["seconds"])
            summary["stages"][stage] = detail
            crash_point(f"stage:{stage}")
    summary["exit_code"] = exit_code
    summary["status"] = "found" if exit_code == EXIT_FOUND else "ok"
    if config.alerts.webhook_url_env and os.environ.get(config.alerts.webhook_url_env):
        from epoch_audit.report.webhook import send_alert

        summary["alert"] = send_alert(
            summary, os.environ[config.alerts.webhook_url_env], config.alerts.webhook_timeout_seconds
        )
    # Last: from now on the violations this run wrote count as reported (a killed run has no row,
    # so the next run reports them).
    record_run(storage, summary, args.command, started_at, dt.datetime.now(dt.UTC).replace(tzinfo=None))
    return exit_code, summary


def _run_stage(
    stage: str, spark: Any, storage: Any, config: Any, run_id: str, args: argparse.Namespace,
    window: tuple[float | None, float | None], ingested: bool, started_at: Any = None,
) -> dict[str, Any]:
    """Run one stage; return its part of the run summary."""
    from epoch_audit.stages.pipeline import INGEST, STAGES

    if stage == INGEST:
        from epoch_audit.stages.ingest import ingest

        result = ingest(spark, storage, args.input, config, run_id, window=window)
        log.info(
            "ingest: %d files (%d read), %d lines = %d parsed + %d irrelevant + %d malformed",
            result.files_seen, result.files_read, result.lines_read, result.parsed,
            result.irrelevant, result.malformed,
        )
        return {"status": "ran", **result.to_dict()}
    if stage in STAGES:
        res = STAGES[stage].run(spark, storage, config, run_id, ingested=ingested, started_at=started_at)
        return {"status": res.status, **res.detail}
    return {"status": "skipped", "reason": f"stage {stage} is not in this build yet"}


def _error_kind(err: BaseException) -> str:
    from epoch_audit.bronze.discover import InputError
    from epoch_audit.config import ConfigError

    if isinstance(err, UsageError):
        return "usage"
    if isinstance(err, ConfigError):
        return "config"
    if isinstance(err, InputError):
        return "input"
    return "lake"  # LakePathError, LakeBusyError, StorageError


def _fail(kind: str, message: str, code: int, as_json: bool, path: str | None = None) -> int:
    """Report a failure: one line on stderr naming the exit code; with --json, one error object on stdout."""
    prefix = "epoch-audit: internal error" if code == EXIT_INTERNAL and kind == "internal" else "epoch-audit: error"
    print(f"{prefix}: {message} (exit {code})", file=sys.stderr)
    if as_json:
        print(json.dumps(error_object(kind, message, code, path), sort_keys=True))
    return code


def main(argv: list[str] | None = None) -> int:
    from epoch_audit.bronze.discover import InputError
    from epoch_audit.config import ConfigError
    from epoch_audit.console import setup_logging, summary_line
    from epoch_audit.lake.lock import LakeBusyError, lake_lock
    from epoch_audit.lake.preflight import check_lake_path, require_tables
    from epoch_audit.lake.storage import StorageError

    argv = list(sys.argv[1:] if argv is None else argv)
    started, wall_started = time.monotonic(), time.time()
    debug, as_json = "--debug" in argv, "--json" in argv
    parser = build_parser()
    if not argv:  # what to type, rather than "required: command"
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    lake: str | None = None
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as done:  # --help, --version: printed, nothing to run
            return int(done.code or 0)
        console = setup_logging(getattr(args, "debug", False))
        if args.command in args.dev_commands:
            return args.dev_commands[args.command](args)
        from epoch_audit.stages.pipeline import COMMAND_STAGES

        lake = args.lake
        if args.command == "maintain":
            require_tables(args.lake)  # before check_lake_path creates the directory
        check_lake_path(args.lake)  # before the lock and Spark: a bad lake fails in a second, naming why
        if args.junit_xml:
            check_output_file(args.junit_xml, "--junit-xml")
        with lake_lock(args.lake, f"epoch-audit {args.command}"):
            code, summary = _run_pipeline(args, COMMAND_STAGES[args.command], console)
        if args.junit_xml:
            from epoch_audit.report.junit import write_junit_xml

            write_junit_xml(args.junit_xml, summary, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(wall_started)))
        if args.json:
            print(json.dumps(summary, sort_keys=True, default=str))
        print(summary_line(summary, args.command, code, time.monotonic() - started), file=sys.stderr)
        return code
    except (UsageError, ConfigError, InputError, StorageError, LakeBusyError, LakePathError) as err:
        kind = _error_kind(err)
        return _fail(kind, str(err), EXIT_USAGE, as_json, getattr(err, "path", lake if kind == "lake" else None))
    except KeyboardInterrupt:
        return _fail("interrupted", "interrupted", EXIT_INTERNAL, as_json)
    except Exception as err:  # one line unless --debug
        text = f"{err}\n{one_line(err)}"
        found = lake_failure(text, lake) if lake else None
        if found is not None:  # the lake broke under the run (permissions, full disk): not worth a retry
            return _fail("lake", str(found), EXIT_USAGE, as_json, found.path)
        if debug:
            if as_json:
                print(json.dumps(error_object("internal", one_line(err), EXIT_INTERNAL), sort_keys=True))
            raise
        return _fail("internal", one_line(err), EXIT_INTERNAL, as_json)


def entry_point() -> None:
    """The installed ``epoch-audit`` command: :func:`main`, its exit code raised as ``SystemExit``.

    A console script exits with whatever its function returns, but a Databricks Python wheel task
    calls the function and ignores what it returns: a night with violations (3), a bad config (2) or
    an internal error (1) would end as a successful task and its failure notifications never fire.
    Raising makes every non-zero code fail the task; 0 returns normally (some runners count even
    ``SystemExit(0)`` as a failure).
    """
    code = main()
    if code != EXIT_OK:
        raise SystemExit(code)


if __name__ == "__main__":
    sys.exit(main())
