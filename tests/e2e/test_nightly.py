"""Nightly operation (issue #9): incremental runs over daily drops, and runs killed at any point.

- Week split: the committed KRaft sample is cut by line timestamps into nightly drops the way a log
  shipper delivers them (a live file grows from night to night, a segment appears under its rotated
  name once it has rotated, checkpoint copies appear once taken, dumps and the late and retry
  folders arrive with the last drop). One ``epoch-audit run --date <night>`` per night on one lake
  must leave exactly the gold violations (ids and contents) of one run over the whole tree, each
  reported once (the nights' new-violation counts add up to the total, the last night re-run
  reports nothing).
- Crash safety: ``epoch-audit run`` subprocesses are SIGKILLed at deterministic points
  (``EPOCH_AUDIT_CRASH_AT``: between two table commits of ingest, inside a Delta commit of a silver
  table — Parquet written, log not — after the silver stage before gold, inside the gold commit),
  each one re-running on the lake the previous one left; the final complete run must leave every
  table with the contents of the uninterrupted run.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from deltalake import DeltaTable
from epoch_audit_tools.night_drops import deliver, drop_tree

from epoch_audit.cli import input_window, main

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "data" / "samples" / "kafka-kraft"  # 23:xx..01:59 on 2024-03-04/05, cluster kraft-1
CUTS = [dt.datetime(2024, 3, 5, 0, 40), dt.datetime(2024, 3, 5, 1, 20), None]  # None: the rest
NIGHTS = ["2024-03-11", "2024-03-12", "2024-03-13"]  # delivery days (file modification times)
# Compared between lakes: every table a run writes, without the columns naming a run.
COMPARED = [
    "bronze/events", "bronze/ingest_files", "bronze/ingest_accounting", "quarantine/lines",
    "silver/partition_timeline", "silver/broker_registrations", "silver/broker_controller_views",
    "silver/broker_leader_epochs", "silver/replica_offsets", "silver/produce_runs",
    "gold/violations", "gold/daily_invariant_counts",
]
# naming a run, or its time (a violation's first/last seen: when the runs that saw it started)
RUN_COLUMNS = {"run_id", "last_run_id", "last_delivered_at", "first_seen_at", "last_seen_at"}
# Which file a line was read from: a line read from the live file before it rotated keeps the live
# file's name and order (a whole run reads it from the rotated file). Nothing else may differ.
READ_FROM_COLUMNS = {"source_file", "file_name", "file_order"}


@pytest.fixture(scope="module")
def week(tmp_path_factory) -> tuple[Path, list[dict[str, bytes]]]:
    root = tmp_path_factory.mktemp("week")
    drops = [drop_tree(SAMPLE, cut) for cut in CUTS]
    return root, drops


@pytest.fixture(scope="module")
def whole_run(spark, week) -> tuple[Path, Path]:
    """(tree, lake): every drop delivered night by night, then one run over the whole tree.

    The reference of both the week split and the kill-and-rerun test (one run less in CI).
    """
    root, drops = week
    tree, lake = root / "tree-whole", root / "lake-whole"
    for night, drop in zip(NIGHTS, drops, strict=True):
        deliver(tree, drop, night)
    assert main(["run", "--input", str(tree), "--lake", str(lake), "--run-id", "whole", "--json"]) in (0, 3)
    return tree, lake


def tree_files(tree: Path) -> dict[str, tuple[bytes, float]]:
    return {p.relative_to(tree).as_posix(): (p.read_bytes(), p.stat().st_mtime) for p in tree.rglob("*") if p.is_file()}


# --- comparing lakes ----------------------------------------------------------------------------


def table_rows(lake: Path, table: str, ignore: set[str] = RUN_COLUMNS) -> list[str]:
    """The table's rows as sorted JSON strings, without run-naming (or other ``ignore``) columns."""
    path = lake / table
    if not (path / "_delta_log").is_dir():
        return []
    t = DeltaTable(str(path)).to_pyarrow_table()
    t = t.select(sorted(c for c in t.column_names if c not in ignore))
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


def violations(lake: Path) -> dict[str, dict]:
    t = DeltaTable(str(lake / "gold" / "violations")).to_pyarrow_table()
    rows = {r["violation_id"]: r for r in t.to_pylist()}
    assert len(rows) == t.num_rows, "duplicate violation ids"
    return rows


def _content(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in RUN_COLUMNS}


# --- the week -----------------------------------------------------------------------------------


@pytest.mark.slow  # 3 nightly runs + 1 whole run (about 1 min each on a quiet 2-core box)
def test_nightly_runs_find_exactly_the_violations_of_one_run(spark, week, whole_run, capsys):
    root, drops = week
    capsys.readouterr()  # the whole run's summary
    tree, lake = root / "tree", root / "lake-nightly"
    # The sample's traffic spans two hours: a horizon 20 minutes before the latest traffic lets the
    # second night read its traffic from 00:19 on plus the carried older events (epoch_audit.gold.carry).
    conf = root / "nightly.yaml"
    conf.write_text((REPO / "src" / "epoch_audit" / "conf" / "local.yaml").read_text().replace("traffic_lag_minutes: 1440", "traffic_lag_minutes: 20"))
    new_per_night, read_from = [], []
    for night, drop in zip(NIGHTS, drops, strict=True):
        assert deliver(tree, drop, night)
        code = main(["run", "--input", str(tree), "--lake", str(lake), "--date", night, "--run-id", f"night-{night}",
                     "--conf", str(conf), "--json"])
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert summary["stages"]["ingest"]["files_read"] > 0
        assert code in (0, 3)
        new_per_night.append(sum(v["count"] for v in summary["stages"]["check"]["violations"]))
        read_from.append(summary["stages"]["check"]["carried_traffic"]["read_from"])
    # night 1 read everything; night 2 its traffic from 00:19 on plus the carried; night 3 brings the
    # metadata dumps (the past's anchors changed): everything again
    assert read_from == [{}, {"kraft-1": "2024-03-05T00:19Z"}, {}], read_from

    whole_tree, whole = whole_run
    assert tree_files(tree) == tree_files(whole_tree)  # the same bytes, delivered on the same nights

    nightly, once = violations(lake), violations(whole)
    assert once, "the sample holds violations"
    assert sorted(nightly) == sorted(once)
    assert {k: _content(v) for k, v in nightly.items()} == {k: _content(v) for k, v in once.items()}
    # each violation reported once, by the night that first proved it
    assert sum(new_per_night) == len(once)
    nights_of = {v["run_id"] for v in nightly.values()}
    assert nights_of <= {f"night-{n}" for n in NIGHTS}
    assert len(nights_of) > 1, "every violation was found on one night: the split proves nothing"
    # bronze and silver hold the same history as one run over everything
    for table in ["bronze/events", *[t for t in COMPARED if t.startswith("silver/")]]:
        ignore = RUN_COLUMNS | READ_FROM_COLUMNS
        assert table_rows(lake, table, ignore) == table_rows(whole, table, ignore), table

    # re-running the last night changes nothing and reports nothing
    versions = {t: DeltaTable(str(lake / t)).version() for t in ("bronze/events", "gold/violations")}
    code = main(["run", "--input", str(tree), "--lake", str(lake), "--date", NIGHTS[-1], "--run-id", "again",
                 "--json"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["stages"]["ingest"]["files_read"] == 0
    assert summary["stages"]["check"]["violations"] == [] and summary["stages"]["check"]["clusters"] == []
    assert {t: DeltaTable(str(lake / t)).version() for t in versions} == versions
    assert violations(lake) == nightly


def test_drops_grow_rotate_and_deliver_late(week):
    _, drops = week
    first, second, last = drops
    live = "cluster=kraft-1/broker-3/server.log"
    rotated = "cluster=kraft-1/broker-3/server.log.2024-03-05-00"
    assert live in first and rotated not in first  # the 00:xx segment, still live
    assert rotated in second and second[live] != first[live]  # rotated; a new live segment
    # live files grew: their lines past the second cut arrive with the last night, appended
    grown = [p for p in second if p in last and len(last[p]) > len(second[p]) and last[p].startswith(second[p])]
    assert grown, "no live file grew between the second and the last night"
    assert not any(p.startswith("late/") for p in first) and any(p.startswith("late/") for p in last)
    assert not any("/retry/" in p for p in second) and any("/retry/" in p for p in last)
    assert last == {p.relative_to(SAMPLE).as_posix(): p.read_bytes() for p in SAMPLE.rglob("*") if p.is_file()}


def test_input_window_options(tmp_path, capsys):
    start, end = input_window(None, "2024-03-11")
    assert end - start == 86400 and dt.datetime.fromtimestamp(start, dt.UTC).isoformat() == "2024-03-11T00:00:00+00:00"
    assert input_window("2024-03-11T06:30", None)[1] is None
    assert input_window(None, None) == (None, None)
    for argv in (["--date", "2024-13-01"], ["--since", "yesterday"], ["--date", "2024-03-11", "--since", "2024-03-10"]):
        code = main(["run", "--input", str(tmp_path), "--lake", str(tmp_path / "lake"), *argv])
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1 and err[0].startswith("epoch-audit: error:"), err


# --- crash safety -------------------------------------------------------------------------------

# Each run is killed at its point and the next one re-runs on the lake it left; the last completes.
CRASH_POINTS = [
    "committed:bronze/events",  # ingest: events committed, quarantine / accounting / file table not
    "commit:silver/partition_timeline",  # inside a delta-rs commit: Parquet written, _delta_log not
    "stage:timelines",  # after silver, before gold
    "commit:gold/violations",  # inside the gold commit
]


def _run_subprocess(argv: list[str], crash_at: str | None, log: Path) -> int:
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_DRIVER_PYTHON", "SPARK_HOME")}
    env.pop("EPOCH_AUDIT_CRASH_AT", None)
    if crash_at:
        env["EPOCH_AUDIT_CRASH_AT"] = crash_at
    cmd = [sys.executable, "-c", "import sys; from epoch_audit.cli import main; sys.exit(main())", *argv]
    with open(log, "ab") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            code = proc.wait(timeout=1200)
        finally:
            try:  # the killed driver's JVM and Python workers exit with it; make sure of it
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return code


@pytest.mark.slow  # 4 killed + 1 completing run, as subprocesses; the clean run is the in-process whole run
def test_killed_runs_rerun_to_the_same_tables(whole_run, tmp_path):
    tree, clean = whole_run  # an uninterrupted run over the same tree
    crashed = tmp_path / "crashed"
    log = tmp_path / "runs.log"
    for point in CRASH_POINTS:
        code = _run_subprocess(["run", "--input", str(tree), "--lake", str(crashed)], point, log)
        assert code == -signal.SIGKILL, f"the run was not killed at {point} (exit {code}): {log.read_text()[-2000:]}"
    final = _run_subprocess(["run", "--input", str(tree), "--lake", str(crashed)], None, log)
    assert final in (0, 3)
    for table in COMPARED:
        assert table_rows(crashed, table) == table_rows(clean, table), table
    # the killed runs' scratch space is gone; their uncommitted files are in no table version
    assert not any((crashed / "_staging").glob("*"))
    ids = violations(crashed)
    assert ids.keys() == violations(clean).keys()
    run_ids = {r["run_id"] for r in ids.values()}
    completed = {r["run_id"] for r in DeltaTable(str(crashed / "gold" / "run_summary")).to_pyarrow_table().to_pylist()}
    assert run_ids <= completed  # every violation is attributed to a run that completed (and reported it)
    assert len(completed) == 1  # only the last run completed
