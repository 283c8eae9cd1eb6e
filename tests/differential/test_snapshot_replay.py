"""KRaft replay from metadata snapshots (§3.2): a dump of ``__cluster_metadata`` whose log starts after
a snapshot (the log before it was deleted) must still give partitions their epochs and brokers their
registrations.

- The real-format fixture (a ``.checkpoint`` snapshot, the bootstrap snapshot and the log after it)
  through the real parser and the silver builders; and the same with a hole in the dumped log (an
  older segment from another host, with and without the snapshot bridging the hole; a lost batch).
- Generated: a KRaft history is replayed whole (the oracle); the same history with its log cut at a
  batch boundary plus a snapshot of the state at an end offset at or after the cut (the kept log
  starting at the snapshot's end or overlapping it, as Kafka's log cleaner leaves it) must give the
  same states from the snapshot on (the model, many cuts). With a hole (whole batches missing in the
  middle), the states after it must equal the whole replay when the snapshot ending where the log
  resumes is there, else have unknown epochs, never wrong ones. Spark is compared with the model on
  such cut and holed histories, timeline and every check, in test_differential_full.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from epoch_audit_tools.reference_model.isr_membership import _joins
from epoch_audit_tools.reference_model.model import broker_states, partition_states
from epoch_audit_tools.reference_model.timeline import partition_timeline as model_timeline

from epoch_audit.bronze.parsers import finish_events
from epoch_audit.bronze.parsers.metadata_dump import parse_metadata_dump
from epoch_audit.gold.context import CheckConfig
from epoch_audit.silver.broker_registrations import broker_registrations
from epoch_audit.silver.partition_timeline import partition_timeline
from tests.builders.controller_events import History
from tests.differential.test_controller_and_isr import kraft_history
from tests.helpers import lines_from_text

DUMP = Path(__file__).parents[1] / "fixtures" / "dumps" / "metadata-3.9-snapshot-and-log.txt"
STATE = ("leader", "leader_epoch", "partition_epoch", "isr", "commit_offset")


# An older segment of the same log, dumped on another controller before its cleaner deleted it: the
# partition's PartitionRecord (LE 5, PE 9) and a leader change (LE 6, PE 10). Offsets 102-119 are in
# no dump: a hole (the snapshot ending at 120 says what it held: LE 7, PE 12).
OLDER_SEGMENT = """\
Dumping /var/lib/kafka/meta/__cluster_metadata-0/00000000000000000100.log
Log starting offset: 100
baseOffset: 100 lastOffset: 101 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 \
partitionLeaderEpoch: 4 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 \
CreateTime: 1709629900000 size: 200 magic: 2 compresscodec: none crc: 1008 isvalid: true
| offset: 100 CreateTime: 1709629900000 keySize: -1 valueSize: 88 sequence: -1 headerKeys: [] payload: \
{"type":"PARTITION_RECORD","version":0,"data":{"partitionId":3,"topicId":"m8C_0vTdQnKnfRBdE_b5Kg",\
"replicas":[1,2,3],"isr":[1,2,3],"removingReplicas":[],"addingReplicas":[],"leader":1,"leaderEpoch":5,\
"partitionEpoch":9}}
| offset: 101 CreateTime: 1709629900000 keySize: -1 valueSize: 44 sequence: -1 headerKeys: [] payload: \
{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":3,"topicId":"m8C_0vTdQnKnfRBdE_b5Kg",\
"isr":[2,3],"leader":2}}
"""


def _without(text: str, first: str, upto: str) -> str:
    """``text`` without its lines from the one starting with ``first`` to the one before ``upto``."""
    lines = text.split("\n")
    i = next(n for n, line in enumerate(lines) if line.startswith(first))
    j = next(n for n, line in enumerate(lines) if n > i and line.startswith(upto))
    return "\n".join(lines[:i] + lines[j:])


@pytest.fixture(scope="module")
def real_dumps(spark) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """The fixture's dump as it is (cluster c1) and with a hole, three ways, through the real parser
    in one Spark pass: per cluster, the partition timeline and the broker registrations.
    ``covered``: the older segment (another host) + the snapshot ending at 120 + the log from 120:
    the hole 102-119 is bridged by the snapshot; ``uncovered``: the same without the snapshot;
    ``batch-120-lost``: the fixture without its batch at 120 (the snapshot ends at 120, the log
    resumes at 121)."""
    dump = DUMP.read_text()
    texts = {
        "c1": [("controller-3000", dump)],
        "covered": [("controller-3001", OLDER_SEGMENT), ("controller-3000", dump)],
        "uncovered": [("controller-3001", OLDER_SEGMENT),
                      ("controller-3000", _without(dump, "Dumping /var/lib/kafka/meta/__cluster_metadata-0/"
                                                         "00000000000000000120-", "Dumping bootstrap"))],
        "batch-120-lost": [("controller-3000", _without(dump, "baseOffset: 120 ", "baseOffset: 121 "))],
    }
    lines = None
    for cluster, files in texts.items():
        for host, text in files:
            df = lines_from_text(spark, text, f"cluster={cluster}/{host}/{DUMP.name}", host_id=int(host[-4:]),
                                 cluster_id=cluster, log_kind="metadata-dump")
            lines = df if lines is None else lines.unionByName(df)
    events = finish_events(parse_metadata_dump(lines)).cache()
    tl: dict[str, list[dict]] = {c: [] for c in texts}
    for r in partition_timeline(events, CheckConfig()).orderBy("decision_seq").collect():
        tl[r["cluster_id"]].append(r.asDict())
    regs: dict[str, list[dict]] = {c: [] for c in texts}
    for r in broker_registrations(events, CheckConfig()).orderBy("commit_offset").collect():
        regs[r["cluster_id"]].append(r.asDict())
    events.unpersist()
    return tl, regs


def test_real_dump_replays_the_log_from_its_snapshot(real_dumps):
    tl, regs = real_dumps[0]["c1"], real_dumps[1]["c1"]
    # the snapshot (end offset 120) is the starting state at offset 119; the change at 121 is one bump
    assert [(r["decision_seq"], r["metadata_offset"], r["leader"], r["leader_epoch"], r["partition_epoch"],
             r["isr"], r["commit_offset"], r["next_commit_offset"], r["topic"]) for r in tl] == [
        (119, None, 1, 7, 12, [1, 2, 3], 119, 122, "orders"),
        (121, 121, 1, 7, 13, [1, 2], 122, None, "orders"),
    ]
    assert [(r["broker_id"], r["broker_epoch"], r["fenced"], r["registered"], r["commit_offset"],
             r["registered_at_offset"]) for r in regs] == [
        (3, 4294967412, False, True, 119, None),
        (3, 4294967412, True, True, 122, None),
    ]


def test_real_dumps_with_a_hole_replay_from_the_snapshot_or_leave_epochs_unknown(real_dumps):
    """A hole in the dumped log (offsets no dump shows): bridged by a snapshot that ends where the log
    resumes, the change at 121 has its true epochs; without one, it has unknown epochs (not the LE 6
    / PE 11 a replay blind to the hole would count), and the registration is not carried over it."""
    tl = {c: [(r["decision_seq"], r["metadata_offset"], r["leader"], r["leader_epoch"], r["partition_epoch"],
               r["isr"], r["commit_offset"], r["next_commit_offset"]) for r in rows]
          for c, rows in real_dumps[0].items()}
    regs = {c: [(r["broker_id"], r["fenced"], r["commit_offset"], r["registration_event_id"] is not None)
                for r in rows] for c, rows in real_dumps[1].items()}
    # the state before the hole holds at most up to it (102), not up to the next record (122)
    assert tl["covered"] == [
        (100, 100, 1, 5, 9, [1, 2, 3], 101, 101),
        (101, 101, 2, 6, 10, [2, 3], 101, 102),
        # the snapshot at 119 states LE 7 / PE 12 (and leader 1): the ISR change is one bump on it
        (121, 121, 1, 7, 13, [1, 2], 122, None),
    ]
    assert tl["uncovered"] == [
        (100, 100, 1, 5, 9, [1, 2, 3], 101, 101),
        (101, 101, 2, 6, 10, [2, 3], 101, 102),
        (121, 121, None, None, None, [1, 2], 122, None),  # not LE 6 / PE 11: the hole's changes are unknown
    ]
    assert tl["batch-120-lost"] == [
        (119, None, 1, 7, 12, [1, 2, 3], 119, 120),  # the snapshot's state, up to the lost batch
        (121, 121, None, None, None, [1, 2], 122, None),
    ]
    assert regs["covered"] == [(3, False, 119, True), (3, True, 122, True)]
    assert regs["uncovered"] == [(3, True, 122, False)]
    assert regs["batch-120-lost"] == [(3, False, 119, True), (3, True, 122, False)]


# --- generated: cut the log, add a snapshot, compare with the whole replay ------------------------


def snapshot_of(full: History, end: int) -> list[dict]:
    """Rows of a ``<end>-4.checkpoint`` snapshot of the history: the state below offset ``end`` (the
    topic, the partition's last state, each registered broker's last state), from the whole replay."""
    parts = [r for r in model_timeline(full.rows) if r["metadata_offset"] is not None and r["metadata_offset"] < end]
    regs = [r for r in broker_states(full.rows) if r["metadata_offset"] < end]
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
    return snap.rows


def _log_pos(r: dict) -> int:
    return r["offset"] if r["event_type"] == "md_batch" else r["metadata_offset"]


def cut_with_snapshot(full: History, rnd: random.Random) -> tuple[list[dict], int, int]:
    """The history's rows with the metadata log cut at a batch boundary ``cut`` and a snapshot whose
    end offset ``end`` (a batch end + 1) lies before or after the cut. Returns (rows, cut, end)."""
    md = [r for r in full.rows if r["log_kind"] == "metadata-dump"]
    batches = sorted((r["offset"], r["last_offset"]) for r in md if r["event_type"] == "md_batch")
    end = rnd.choice([last + 1 for _, last in batches[:-1]])  # the snapshot holds offsets < end
    # Kafka deletes only log segments a snapshot covers: the kept log starts at or before the end
    # offset; exactly at it half of the time (the usual state after a cleaner pass).
    cut = end if rnd.random() < 0.5 else rnd.choice([b for b, _ in batches[1:] if b <= end])
    rows = [r for r in full.rows if r["log_kind"] != "metadata-dump" or _log_pos(r) >= cut]
    # the topic name lives only in the snapshot once the log's TopicRecord is cut
    return [r for r in rows if r["event_type"] != "md_topic"] + snapshot_of(full, end), cut, end


def cut_hole(full: History, rnd: random.Random, covered: bool) -> tuple[list[dict], int, int] | None:
    """The history's rows with a HOLE in the metadata log: a run of whole batches after the
    PartitionRecord and before the last batch dropped, as when two hosts' logs were dumped at
    different times. ``covered``: plus the snapshot the host that resumed the log kept, whose end
    offset is the first offset after the hole. Returns (rows, first, last offset of the hole), or
    None when the log is too short to have a middle."""
    md = [r for r in full.rows if r["log_kind"] == "metadata-dump"]
    batches = sorted((r["offset"], r["last_offset"]) for r in md if r["event_type"] == "md_batch")
    middle = batches[2:-1]  # batch 0: registrations and topic, batch 1: the PartitionRecord
    # a hole with a partition change after it when there is one (else nothing would be compared)
    changes = [r["metadata_offset"] for r in md if r["event_type"] == "md_partition_change"]
    middle = [b for b in middle if changes and b[1] < max(changes)] or middle
    if not middle:
        return None
    i = rnd.randrange(len(middle))
    j = rnd.randrange(i, min(len(middle), i + 3))
    lo, hi = middle[i][0], middle[j][1]
    rows = [r for r in full.rows if r["log_kind"] != "metadata-dump" or not lo <= _log_pos(r) <= hi]
    return (rows + snapshot_of(full, hi + 1) if covered else rows), lo, hi


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


def test_model_hole_in_the_log_gives_unknown_epochs_or_the_snapshot_state():
    """Pure Python, many holes: a run of whole batches missing from the dumped log. With the snapshot
    that ends where the log resumes, every state after the hole equals the whole-log replay; without
    one, the epochs after the hole (until a PartitionRecord) are unknown, never a count that missed
    the hole's changes, and every field still shown is the true one. States before the hole are
    untouched either way, but hold at most up to the hole (a change inside it may have replaced
    them)."""
    compared = {"hole, snapshot": 0, "hole, no snapshot": 0, "hole held changes": 0, "state ends at the hole": 0,
                "joins compared": 0}
    for seed in range(60):
        full = kraft_history(seed)
        whole = {r["decision_seq"]: r for r in model_timeline(full.rows)}
        whole_b = {(r["broker_id"], r["metadata_offset"]): r for r in broker_states(full.rows)}
        whole_joins = {(p["topic_id"], p["partition"], p["commit_offset"], r) for p, r in _joins(partition_states(full.rows))}
        for covered in (True, False):
            cut = cut_hole(full, random.Random(seed), covered)
            if cut is None:
                continue
            rows, lo, hi = cut
            compared["hole held changes"] += covered and any(
                r["event_type"] == "md_partition_change" and lo <= r["metadata_offset"] <= hi for r in full.rows)
            for r in model_timeline(rows):
                w = whole[r["decision_seq"]]
                if r["decision_seq"] < lo or covered:
                    assert tuple(map(_t, (r[k] for k in STATE))) == tuple(map(_t, (w[k] for k in STATE))), (
                        seed, covered, lo, hi, r)
                    assert r["leader_epoch"] is not None
                    if r["decision_seq"] < lo:  # a state before the hole holds at most up to it
                        assert r["next_commit_offset"] is not None and r["next_commit_offset"] <= lo, (seed, lo, r)
                        compared["state ends at the hole"] += r["next_commit_offset"] == lo
                    if r["decision_seq"] > hi:
                        compared["hole, snapshot"] += 1
                else:  # after the hole, no snapshot: kraft_history's only PartitionRecord is before it
                    assert (r["leader_epoch"], r["partition_epoch"]) == (None, None), (seed, lo, hi, r)
                    assert all(r[k] is None or _t(r[k]) == _t(w[k]) for k in ("leader", "isr")), (seed, lo, hi, r)
                    compared["hole, no snapshot"] += 1
            # an ISR join is seen only between two states that follow each other in the log: never
            # one "across" the hole (the replica may have left and rejoined inside it, unseen)
            joins = {(p["topic_id"], p["partition"], p["commit_offset"], r) for p, r in _joins(partition_states(rows))}
            assert joins <= whole_joins, (seed, covered, lo, hi, joins - whole_joins)
            compared["joins compared"] += len(joins)
            for r in broker_states(rows):
                if r["metadata_offset"] is None:
                    continue
                w = whole_b[(r["broker_id"], r["metadata_offset"])]
                if r["metadata_offset"] < lo or covered:
                    assert (r["broker_epoch"], r["fenced"], r["in_controlled_shutdown"]) == (
                        w["broker_epoch"], w["fenced"], w["in_controlled_shutdown"]), (seed, covered, lo, hi, r)
                    if r["metadata_offset"] < lo:
                        assert r["next_commit_offset"] is not None and r["next_commit_offset"] <= lo, (seed, lo, r)
                else:  # a fence / unfence / controlled shutdown may lie in the hole: unknown or true
                    assert r["broker_epoch"] == w["broker_epoch"], (seed, lo, hi, r)
                    assert r["fenced"] in (None, w["fenced"]), (seed, lo, hi, r)
                    assert not r["in_controlled_shutdown"] or w["in_controlled_shutdown"], (seed, lo, hi, r)
    assert min(compared.values()) >= 10, compared
