"""KRaft replay from metadata snapshots (§3.2): a dump of ``__cluster_metadata`` whose log starts after
a snapshot (the log before it was deleted) must still give partitions their epochs and brokers their
registrations.

- The real-format fixture (a ``.checkpoint`` snapshot, the bootstrap snapshot and the log after it)
  through the real parser and the silver builders.
- Generated: a KRaft history is replayed whole (the oracle); the same history with its log cut at a
  batch boundary plus a snapshot of the state at an end offset at or after the cut (the kept log
  starting at the snapshot's end or overlapping it, as Kafka's log cleaner leaves it) must give the
  same states from the snapshot on (the model, many cuts); Spark is compared with the model on such
  cut histories, timeline and every check, in test_differential_full.
"""

from __future__ import annotations

import random
from pathlib import Path

from reference_model.model import broker_states
from reference_model.timeline import partition_timeline as model_timeline
from tests.c1_events import History
from tests.helpers import lines_from_text
from tests.test_differential_c1 import kraft_history
from transforms.invariants.base import CheckConfig
from transforms.parse import finish_events
from transforms.parse.metadata_dump import parse_metadata_dump
from transforms.timelines import broker_registrations, partition_timeline

DUMP = Path(__file__).parent / "fixtures" / "dumps" / "metadata-3.9-snapshot-and-log.txt"
STATE = ("leader", "leader_epoch", "partition_epoch", "isr", "commit_offset")


def test_real_dump_replays_the_log_from_its_snapshot(spark):
    lines = lines_from_text(spark, DUMP.read_text(), f"cluster=c1/controller-3000/{DUMP.name}", host_id=3000,
                            log_kind="metadata-dump")
    events = finish_events(parse_metadata_dump(lines))
    tl = [r.asDict() for r in partition_timeline(events, CheckConfig()).orderBy("decision_seq").collect()]
    # the snapshot (end offset 120) is the starting state at offset 119; the change at 121 is one bump
    assert [(r["decision_seq"], r["metadata_offset"], r["leader"], r["leader_epoch"], r["partition_epoch"],
             r["isr"], r["commit_offset"], r["next_commit_offset"], r["topic"]) for r in tl] == [
        (119, None, 1, 7, 12, [1, 2, 3], 119, 122, "orders"),
        (121, 121, 1, 7, 13, [1, 2], 122, None, "orders"),
    ]
    regs = [r.asDict() for r in broker_registrations(events, CheckConfig()).orderBy("commit_offset").collect()]
    assert [(r["broker_id"], r["broker_epoch"], r["fenced"], r["registered"], r["commit_offset"],
             r["registered_at_offset"]) for r in regs] == [
        (3, 4294967412, False, True, 119, None),
        (3, 4294967412, True, True, 122, None),
    ]


# --- generated: cut the log, add a snapshot, compare with the whole replay ------------------------


def cut_with_snapshot(full: History, rnd: random.Random) -> tuple[list[dict], int, int]:
    """The history's rows with the metadata log cut at a batch boundary ``cut`` and a snapshot whose
    end offset ``end`` (a batch end + 1) lies before or after the cut. Returns (rows, cut, end)."""
    md = [r for r in full.rows if r["log_kind"] == "metadata-dump"]
    batches = sorted((r["offset"], r["last_offset"]) for r in md if r["event_type"] == "md_batch")
    end = rnd.choice([last + 1 for _, last in batches[:-1]])  # the snapshot holds offsets < end
    # Kafka deletes only log segments a snapshot covers: the kept log starts at or before the end
    # offset; exactly at it half of the time (the usual state after a cleaner pass).
    cut = end if rnd.random() < 0.5 else rnd.choice([b for b, _ in batches[1:] if b <= end])
    parts = [r for r in model_timeline(full.rows) if r["metadata_offset"] is not None and r["metadata_offset"] < end]
    regs = [r for r in broker_states(full.rows) if r["metadata_offset"] < end]
    rows = [r for r in full.rows if r["log_kind"] != "metadata-dump" or (r["offset"] if r["event_type"] == "md_batch"
                                                                        else r["metadata_offset"]) >= cut]
    snap = History(full.cluster_id)
    details = {"snapshot": "snapshot", "snapshot_end_offset": str(end), "snapshot_epoch": "4"}

    def rec(event_type: str, i: int, **f) -> None:
        f.setdefault("broker_id", None)
        r = snap.ev(event_type, 3000, "metadata-dump", None, **f)
        r["details"] = {**details, "snapshot_offset": str(i)}
        r["file_id"] = r["source_file"] = f"{full.cluster_id}/snapshot-{end}"

    rec("md_topic", 0, topic="orders", topic_id="T1")
    if parts:
        last = parts[-1]
        rec("md_partition", 1, topic_id="T1", partition=0, leader=last["leader"], leader_epoch=last["leader_epoch"],
            partition_epoch=last["partition_epoch"], isr=last["isr"], replicas=last["replicas"])
    latest = {r["broker_id"]: r for r in regs}  # the last state of each broker below the end offset
    for i, (b, r) in enumerate(sorted(latest.items()), start=2):
        if r.get("registered", True):
            rec("md_register_broker", i, broker_id=b, broker_epoch=r["broker_epoch"], fenced=r["fenced"],
                in_controlled_shutdown=r["in_controlled_shutdown"])
    # the topic name lives only in the snapshot once the log's TopicRecord is cut
    return [r for r in rows if r["event_type"] != "md_topic"] + snap.rows, cut, end


def _t(v):
    return tuple(v) if isinstance(v, list) else v


def test_model_cut_log_with_snapshot_matches_the_whole_log():
    """Pure Python, many cuts: the model's replay from a snapshot equals its whole-log replay, for
    snapshots below the kept log (the starting state) and overlapped by it (the missing epochs)."""
    compared = {"snapshot below the log": 0, "log overlaps the snapshot": 0}
    for seed in range(60):
        full = kraft_history(seed)
        rows, cut, end = cut_with_snapshot(full, random.Random(seed))
        whole = {r["decision_seq"]: r for r in model_timeline(full.rows)}
        for r in model_timeline(rows):
            if r["decision_seq"] >= max(cut, end):
                assert tuple(map(_t, (r[k] for k in STATE))) == tuple(
                    map(_t, (whole[r["decision_seq"]][k] for k in STATE))), (seed, cut, end, r)
                assert r["leader_epoch"] is not None
                compared["snapshot below the log" if end <= cut else "log overlaps the snapshot"] += 1
        whole_b = {(r["broker_id"], r["metadata_offset"]): r for r in broker_states(full.rows)}
        for r in broker_states(rows):
            if r["commit_offset"] >= max(cut, end) and r["metadata_offset"] is not None:
                w = whole_b[(r["broker_id"], r["metadata_offset"])]
                assert (r["broker_epoch"], r["fenced"], r["in_controlled_shutdown"]) == (
                    w["broker_epoch"], w["fenced"], w["in_controlled_shutdown"]), (seed, cut, end, r)
    assert min(compared.values()) >= 10, compared
