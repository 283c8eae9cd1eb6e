"""``epoch-audit`` command line.

Exit codes: 0 = ran, nothing wrong found; 3 = ran, and found violations of severity error or
failed critical expectations; 2 = bad usage, config or input path (one line on stderr);
1 = internal failure.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
import time
import uuid
from typing import Any

from epoch_audit.errors import UsageError

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_FOUND = 0, 1, 2, 3

log = logging.getLogger("epoch_audit")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2
        raise UsageError(message)


RUN_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


def run_id_argument(value: str) -> str:
    """A run id names folders in the lake: letters, digits, '.', '_', '-' only, never a path step."""
    if not RUN_ID.fullmatch(value) or ".." in value or value.strip(".") == "":
        raise argparse.ArgumentTypeError(
            f"invalid value {value!r}: expected 1 to 64 of [A-Za-z0-9._-], without '..'"
        )
    return value


def _common(p: argparse.ArgumentParser, needs_input: bool = False) -> None:
    p.add_argument("--lake", required=True, help="lake directory (Delta tables live under it)")
    p.add_argument("--conf", default=None, help="YAML config file (default: conf/local.yaml)")
    p.add_argument("--profile", default="local", help="profile in conf/ when --conf is not given")
    p.add_argument("--run-id", default=None, type=run_id_argument,
                   help="run id, [A-Za-z0-9._-]{1,64} without '..' (default: generated)")
    p.add_argument("--json", action="store_true", help="print a one-object JSON summary on stdout")
    p.add_argument("--debug", action="store_true", help="show tracebacks and Spark logs")
    if needs_input:
        p.add_argument("--input", action="append", required=True, help="input file or directory (repeatable)")
        p.add_argument("--cluster-id", default=None, help="cluster id when no cluster=<id> path segment names it")
        window = p.add_mutually_exclusive_group()
        window.add_argument(
            "--since", default=None,
            help="read only input files modified at or after this UTC time (YYYY-MM-DD or YYYY-MM-DDTHH:MM[:SS])",
        )
        window.add_argument(
            "--date", default=None, help="read only input files modified on this UTC day (YYYY-MM-DD)"
        )


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
    parser = _Parser(prog="epoch-audit", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = sub.add_parser("run", help="the whole pipeline: ingest, timelines, check, validate, report")
    _common(run, needs_input=True)
    ingest = sub.add_parser("ingest", help="raw files → bronze tables")
    _common(ingest, needs_input=True)
    for name, text in (
        ("timelines", "bronze → silver timelines"),
        ("check", "silver → gold violations"),
        ("validate", "expectation suites on every layer"),
        ("report", "HTML run report"),
    ):
        _common(sub.add_parser(name, help=text))
    parser.set_defaults(dev_commands=_dev_commands(sub))
    return parser


def _setup_logging(debug: bool) -> None:
    from rich.console import Console
    from rich.logging import RichHandler

    # Logs and progress go to stderr: stdout carries only the --json summary.
    handler = RichHandler(console=Console(stderr=True), show_path=False, markup=False, rich_tracebacks=debug)
    logging.basicConfig(level=logging.DEBUG if debug else logging.INFO, handlers=[handler], format="%(message)s")
    for noisy in ("py4j", "pyspark", "great_expectations", "urllib3", "deltalake"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


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
    seconds to import, and a Spark session takes seconds to start; they need not add up."""
    import threading

    def load() -> None:
        import epoch_audit.stages.pipeline  # noqa: F401  (every stage, validation's GX included)

    threading.Thread(target=load, name="import-stages", daemon=True).start()


def _run_pipeline(args: argparse.Namespace, stages: list[str]) -> tuple[int, dict[str, Any]]:
    import datetime as dt

    from epoch_audit.config import load_config
    from epoch_audit.lake.storage import crash_point, open_storage
    from epoch_audit.spark import get_spark, is_short_run

    started_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    window = input_window(getattr(args, "since", None), getattr(args, "date", None))

    config = load_config(args.conf, args.profile)
    if getattr(args, "cluster_id", None):
        config.ingest.cluster_id = args.cluster_id
    run_id = args.run_id or time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
    inputs: list = []
    if getattr(args, "input", None):
        from epoch_audit.bronze.discover import discover

        inputs = discover(args.input)  # bad paths fail here, before Spark starts
    _import_in_background(stages)
    short = bool(config.spark.master) and is_short_run(inputs, args.lake, config.spark.short_run_max_bytes)
    if short:
        log.info("short run: JVM without C2, Spark without generated code (under spark.short_run_max_bytes)")
    spark = get_spark(config.spark.master, config.spark.driver_memory, config.spark.conf, short_run=short)
    storage = open_storage(spark, args.lake, config.storage.engine)
    from epoch_audit.stages.pipeline import INGEST, STAGES
    from epoch_audit.stages.state import record_run

    summary: dict[str, Any] = {
        "run_id": run_id, "lake": args.lake, "engine": storage.engine, "short_run": short, "stages": {}
    }
    exit_code = EXIT_OK
    for stage in stages:
        started = time.monotonic()
        if stage == INGEST:
            from epoch_audit.stages.ingest import ingest

            result = ingest(spark, storage, args.input, config, run_id, window=window)
            detail: dict[str, Any] = {"status": "ran", **result.to_dict()}
            log.info(
                "ingest: %d files (%d read), %d lines = %d parsed + %d irrelevant + %d malformed",
                result.files_seen, result.files_read, result.lines_read, result.parsed,
                result.irrelevant, result.malformed,
            )
        elif stage in STAGES:
            res = STAGES[stage].run(spark, storage, config, run_id, ingested=INGEST in stages)
            detail = {"status": res.status, **res.detail}
        else:
            detail = {"status": "skipped", "reason": f"stage {stage} is not in this build yet"}
        if stage == "check":
            errors = sum(v["count"] for v in res.detail.get("violations", []) if v["severity"] == "error")
            if errors:
                exit_code = EXIT_FOUND
            for v in res.detail.get("violations", []):
                log.info("violation %s (%s, %s): %d", v["invariant"], v["severity"], v["confidence"], v["count"])
            for r in res.detail.get("rejected_isr_joins", []):
                log.info("ISR join rejected by the controller (system working) in %s, %s: %d",
                         r["cluster_id"], r["reason"], r["count"])
        elif stage == "validate" and res.detail.get("critical_failures"):
            exit_code = EXIT_FOUND
        if detail["status"] == "skipped":
            log.warning("stage %s skipped: %s", stage, detail.get("reason"))
        detail["seconds"] = round(time.monotonic() - started, 3)
        summary["stages"][stage] = detail
        crash_point(f"stage:{stage}")
    summary["exit_code"] = exit_code
    # Last: from now on the violations this run wrote count as reported (a killed run has no row,
    # so the next run reports them).
    record_run(spark, storage, summary, args.command, started_at, dt.datetime.now(dt.UTC).replace(tzinfo=None))
    return exit_code, summary


def main(argv: list[str] | None = None) -> int:
    from epoch_audit.bronze.discover import InputError
    from epoch_audit.config import ConfigError
    from epoch_audit.lake.lock import LakeBusyError, lake_lock
    from epoch_audit.lake.storage import StorageError
    from epoch_audit.stages.pipeline import COMMAND_STAGES

    debug = "--debug" in (argv if argv is not None else sys.argv[1:])
    try:
        args = build_parser().parse_args(argv)
        _setup_logging(getattr(args, "debug", False))
        if args.command in args.dev_commands:
            return args.dev_commands[args.command](args)
        with lake_lock(args.lake, f"epoch-audit {args.command}"):
            code, summary = _run_pipeline(args, COMMAND_STAGES[args.command])
        if args.json:
            print(json.dumps(summary, sort_keys=True, default=str))
        return code
    except (UsageError, ConfigError, InputError, StorageError, LakeBusyError) as err:
        print(f"epoch-audit: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("epoch-audit: interrupted", file=sys.stderr)
        return EXIT_INTERNAL
    except Exception as err:  # one line unless --debug
        if debug:
            raise
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        print(f"epoch-audit: internal error: {type(err).__name__}: {first[:300]}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
