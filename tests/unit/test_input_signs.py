"""Input problems from signs kept per bronze partition (epoch_audit.stages.input_signs): a run reads
only the state partitions whose files changed, takes the others' signs as stored, and finds what
one reading of every state event finds.

Genuine lab lines (tests/fixtures/lab): a ZooKeeper-mode broker's logs on one day, then a KRaft
node's text logs delivered under the same cluster id with their times a day later.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from epoch_audit.config import AppConfig
from epoch_audit.gold.analysis import input_sanity
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.stages import input_signs
from epoch_audit.stages.carry import read_state_events
from epoch_audit.stages.ingest import ingest

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lab"
KRAFT_TEXT_LOGS = ("controller.log", "server.log", "state-change.log")


def _problems(storage: DeltaRsStorage) -> tuple[list[dict], list[dict] | None]:
    return input_signs.input_problems(storage, ["c"], read_state_events(storage, ["c"]))


def _whole(storage: DeltaRsStorage) -> list[dict]:
    """One reading of every state event (what the check stage did before the signs were kept)."""
    return [p.to_dict() for p in input_sanity.input_problems(read_state_events(storage, ["c"]))]


def _planted(signs: list[dict], day: str | None = None) -> list[dict]:
    """The stored signs with a Redpanda sign planted (in ``day``'s partition only, when given)."""
    return [{**r, "redpanda": True} if day is None or r["event_date"] == day else r for r in signs]


def _day(signs: list[dict], day: str) -> list[dict]:
    return sorted((r for r in signs if r["event_date"] == day), key=str)


def test_a_run_reads_only_the_partitions_whose_files_changed(spark, tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "in"
    shutil.copytree(FIXTURES / "zk-3.9.1", root / "cluster=c" / "broker-2")
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    ingest(spark, storage, [str(root)], AppConfig(), "first")
    problems, signs = _problems(storage)
    assert problems == _whole(storage) == [] and signs
    days = {r["event_date"] for r in signs}
    assert "2026-11-27" in days

    # unchanged partitions: the stored signs are taken as they are (a planted sign shows) ...
    input_signs.write_signs(storage, ["c"], _planted(signs))
    planted, _ = _problems(storage)
    assert [p["problem"] for p in planted] == ["mixed_modes"] and "Redpanda logs" in planted[0]["detail"]
    # ... unless other code stored them: then every partition is read again
    monkeypatch.setattr(input_signs, "code_fingerprint", lambda: "other code")
    assert _problems(storage)[0] == []
    monkeypatch.undo()

    # A KRaft node's logs a day later under the same id: its new day is read, the ZooKeeper day is
    # not (its planted sign stays); with the true signs stored the merge is the whole reading.
    node = root / "cluster=c" / "broker-1"
    node.mkdir(parents=True)
    for name in KRAFT_TEXT_LOGS:
        text = (FIXTURES / "kraft-3.9.1" / name).read_text()
        (node / name).write_text(text.replace("[2026-11-27 ", "[2026-11-28 "))
    input_signs.write_signs(storage, ["c"], _planted(signs, "2026-11-27"))
    ingest(spark, storage, [str(root)], AppConfig(), "second")
    mixed, after = _problems(storage)
    assert after is not None and "2026-11-28" in {r["event_date"] for r in after}
    # the ZooKeeper day's rows are the stored ones, once
    assert _day(after, "2026-11-27") == _day(_planted(signs, "2026-11-27"), "2026-11-27")
    assert [p["problem"] for p in mixed] == ["mixed_modes"]
    assert "Redpanda logs (hosts 2)" in mixed[0]["detail"] and "KRaft metadata logs" in mixed[0]["detail"]
    input_signs.write_signs(storage, ["c"], [r for r in after if r["event_date"] != "2026-11-27"] + [
        r for r in signs if r["event_date"] == "2026-11-27"
    ])
    merged, _ = _problems(storage)
    assert merged == _whole(storage) and "Redpanda" not in merged[0]["detail"]
    assert "ZooKeeper-mode controller logs (hosts 2) and KRaft metadata logs (hosts 1)" in merged[0]["detail"]


def test_a_partition_rewritten_is_read_again(spark, tmp_path: Path) -> None:
    root = tmp_path / "in"
    shutil.copytree(FIXTURES / "zk-3.9.1", root / "cluster=c" / "broker-2")
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    ingest(spark, storage, [str(root)], AppConfig(), "first")
    _, signs = _problems(storage)
    input_signs.write_signs(storage, ["c"], _planted(signs))
    # maintain's compaction names other files for the same rows: the planted signs are not trusted
    storage.maintain("bronze/events", retention_hours=168)
    assert _problems(storage)[0] == _whole(storage) == []


@pytest.mark.parametrize("listed", [None, {}])
def test_without_a_file_listing_every_state_event_is_read_and_nothing_stored(spark, tmp_path: Path, listed,
                                                                               monkeypatch) -> None:
    root = tmp_path / "in"
    shutil.copytree(FIXTURES / "zk-3.9.1", root / "cluster=c" / "broker-2")
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    ingest(spark, storage, [str(root)], AppConfig(), "first")
    monkeypatch.setattr(storage, "files_by_partition", lambda table: listed)
    problems, signs = _problems(storage)
    assert problems == _whole(storage) == [] and signs is None
