"""Executors open input files at a path that does not depend on their working directory, and a file
they cannot open fails the read instead of counting as read (issue #22: a real Spark cluster).

On a cluster each executor runs in its own working directory (a standalone worker's
``work/<app>/<executor>/``), so a relative ``--input`` resolved there names nothing; before the fix
the reader swallowed the open error and the driver recorded every planned byte as consumed, with
no lines, so no later run would ever read them.
"""

from __future__ import annotations

import pytest

from epoch_audit.bronze.discover import ReadTask
from epoch_audit.bronze.read import TASK_SCHEMA, InputUnreadableError, numbered_lines
from epoch_audit.bronze.single_pass import task_bins, task_rows
from epoch_audit.config import load_config

LINES = [  # a line that yields events and one that does not
    "[2026-11-27 04:42:36,481] INFO [ReplicaFetcherManager on broker 2] Added fetcher to broker 3 for partitions "
    "HashMap(t-0 -> InitialFetchState(Some(iEjI0fpqRXafExAhHxYiww),BrokerEndPoint[id=3, host=127.0.0.1, "
    "port=46513],0,125)) (kafka.server.ReplicaFetcherManager)",
    "[2026-11-27 04:42:37,000] INFO [Broker id=2] Started (kafka.server.KafkaServer)",
]

def _task(source_file: str, read_path: str, size: int) -> dict:
    config = load_config(None)
    return {
        "file_id": "f1", "source_file": source_file, "read_path": read_path, "file_name": "server.log",
        "cluster_id": "c1", "host_id": 1, "file_order": 0, "log_kind": "server", "compressed": "false",
        "start_byte": 0, "start_line": 1, "end_byte": size, "max_line_chars": config.ingest.max_line_chars,
        "batch_lines": config.ingest.batch_lines, "read_problem": None, "seed_micros": None,
    }


def test_bins_carry_the_absolute_path_and_keep_the_named_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the driver's working directory: what a relative --input is relative to
    tasks = [
        ReadTask(file_id=f"f{k}", source_file=f"logs/cluster=c1/broker-{k}/server.log", file_name="server.log",
                 cluster_id="c1", host_id=k, file_order=0, log_kind="server", compressed=False,
                 start_byte=0, start_line=1, end_byte=100 * k)
        for k in (1, 2, 3)
    ]
    bins = task_bins(tasks, load_config(None), {}, cores=2)
    assert len(bins) == 2
    names = TASK_SCHEMA.fieldNames()
    rows = [dict(zip([*names, "seed_micros"], row, strict=True)) for packed in bins for row in packed]
    assert sorted(r["source_file"] for r in rows) == sorted(t.source_file for t in tasks)  # provenance as named
    for row in rows:
        assert row["read_path"] == str(tmp_path / row["source_file"])


def test_the_reader_opens_the_read_path_from_any_working_directory(tmp_path, monkeypatch):
    logs = tmp_path / "driver" / "cluster=c1" / "broker-1"
    logs.mkdir(parents=True)
    path = logs / "server.log"
    path.write_text("\n".join(LINES) + "\n")
    elsewhere = tmp_path / "executor-work-dir"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # where an executor runs: the named (relative) path is not there
    rows = list(task_rows(_task("cluster=c1/broker-1/server.log", str(path), path.stat().st_size), "UTC"))
    file_row = next(r for r in rows if r["row_kind"] == "file")
    assert file_row["lines_read"] == len(LINES)
    assert file_row["source_file"] == "cluster=c1/broker-1/server.log"
    assert {r["source_file"] for r in rows if r["row_kind"] == "event"} == {"cluster=c1/broker-1/server.log"}


@pytest.mark.parametrize("compressed", ["false", "true"])
def test_a_file_the_executor_cannot_open_fails_the_read(tmp_path, compressed):
    missing = tmp_path / "not-mounted-here" / "server.log"
    task = {**_task(str(missing), str(missing), 1000), "compressed": compressed}
    with pytest.raises(InputUnreadableError, match=f"cannot open input file {missing}: .*shared mount"):
        list(numbered_lines(task))



def test_files_are_described_on_threads_in_order_and_a_vanished_one_is_reported(tmp_path):
    from epoch_audit.config import AppConfig
    from epoch_audit.stages.ingest import _describe_all

    paths = []
    for k in range(12):
        path = tmp_path / "cluster=c1" / f"broker-{k}" / "server.log"
        path.parent.mkdir(parents=True)
        path.write_text(f"[2024-03-05 02:03:29,835] INFO line {k} (kafka.server.KafkaServer)\n" * (k + 1))
        paths.append(path)
    paths.insert(5, tmp_path / "gone.log")
    described = _describe_all(paths, AppConfig())
    assert [d is None for d, _ in described] == [p.name == "gone.log" for p in paths]
    assert isinstance(described[5][1], FileNotFoundError)
    assert [d.size_bytes for d, _ in described if d is not None] == [path.stat().st_size for path in paths if path.exists()]
