"""``write_accepted_by_fenced_leader``: rules and must-NOT-flag cases (scenarios: ``cases_leadership.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.builders.epoch_events import ts
from tests.unit.invariants.cases_leadership import one, rows


@pytest.fixture
def results(leadership_results):
    return leadership_results


def test_write_offset_rule_reports_epoch_leader_once(results):
    r = one(results, "write_offset_rule", "write_accepted_by_fenced_leader")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"], r["confidence"]) == (1, 5, 6, "confirmed")
    assert r["evidence"] == ["write_offset_rule:3:segment-dump.log:2", "write_offset_rule:2:state-change.log:1"]


def test_write_copies_and_create_time_never_flagged(results):
    assert rows(results, "write_copies_are_replication") == []


def test_write_time_rule_confirmed_beyond_skew(results):
    r = one(results, "write_time_confirmed", "write_accepted_by_fenced_leader")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"], r["confidence"]) == (1, 5, 6, "confirmed")
    assert r["evidence"] == ["write_time_confirmed:1:request.log:1", "write_time_confirmed:ctl:orders-0:2"]


def test_write_time_rule_within_skew_suspected(results):
    r = one(results, "write_time_suspected", "write_accepted_by_fenced_leader")
    assert r["confidence"] == "suspected"


def test_write_produce_before_move_never_reported(results):
    assert rows(results, "write_time_before_move") == []


def test_write_regained_leadership(results):
    r = one(results, "write_time_regained", "write_accepted_by_fenced_leader")
    assert r["confidence"] == "suspected"
    assert r["event_time"] == ts(4_500)


def test_write_regained_leadership_per_own_log_is_not_reported(results):
    assert rows(results, "write_time_regained_per_own_log") == []


def test_write_old_or_later_claim_does_not_excuse(results):
    r = one(results, "write_time_old_claim_is_no_excuse", "write_accepted_by_fenced_leader")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"], r["confidence"]) == (1, 5, 6, "confirmed")


def test_write_fenced_broker(results):
    r = one(results, "write_time_fenced", "write_accepted_by_fenced_leader")
    assert (r["broker_id"], r["topic"], r["confidence"]) == (1, "payments", "confirmed")


def test_spans_read_the_last_marker_before(spark):
    """``_in_span_of``: every produce reads its key's last marker strictly before it (of the asked
    kind), with produces on, next to and between the markers' times, ties between markers, spans of
    several markers' length and each key's open last span."""
    import datetime as dt
    import random

    from epoch_audit.gold.invariants.write_accepted_by_fenced_leader import _in_span_of

    step = 15 * 60 * 10**6  # a grid of times (microseconds), some shared by markers and produces
    epoch = dt.datetime(2024, 3, 4)
    rng = random.Random(7)
    edges = [k * step + d for k in range(1, 9) for d in (-1, 0, 1)]

    def at(micros: int) -> dt.datetime:
        return epoch + dt.timedelta(microseconds=micros)

    markers, produces = [], []
    for broker in (1, 2, 3):
        times = sorted(rng.sample(edges, 10) + [edges[4]] * 2 + [edges[0] + 3 * step // 2])
        for i, t in enumerate(times):
            kind = rng.choice(["fence", "unfence"])
            markers.append(("c", broker, kind, at(t), i, f"m{broker}-{i}"))
        for j, t in enumerate(sorted(rng.sample(edges, 12) + [edges[-1] + 5 * step, edges[0] - 7])):
            produces.append(("c", "t", 0, broker, at(t), f"p{broker}-{j}"))
    # broker 4: a fence span longer than SPAN_MAX_BUCKETS quarter hours (listed under no bucket)
    long_ago = -10 * 24 * 4 * step
    markers += [("c", 4, "fence", at(long_ago), 0, "m4-0"), ("c", 4, "unfence", at(edges[3]), 1, "m4-1"),
                ("c", 4, "fence", at(edges[5]), 2, "m4-2")]
    produces += [("c", "t", 0, 4, at(t), f"p4-{j}") for j, t in enumerate([long_ago, long_ago + 1, 0, edges[3],
                                                                           edges[3] + 1, edges[5] + 1])]
    marker_df = spark.createDataFrame(
        markers, "cluster_id string, broker_id int, kind string, event_time timestamp, metadata_offset long, event_id string"
    )
    produce_df = spark.createDataFrame(
        produces, "cluster_id string, topic string, partition int, broker_id int, event_time timestamp, event_id string"
    )
    found = [
        (r["event_id"], r["last_m"]["event_id"])
        for r in _in_span_of(
            produce_df, marker_df, ["cluster_id", "broker_id"], "metadata_offset", "fence", ("kind", "event_time", "event_id")
        ).collect()
    ]
    got = set(found)
    assert len(found) == len(got)  # a produce reads one span, once
    want = set()
    for _, _, _, broker, t, pid in produces:
        before = sorted((m for m in markers if m[1] == broker and m[3] < t), key=lambda m: (m[3], m[4], m[5]))
        if before and before[-1][2] == "fence":
            want.add((pid, before[-1][5]))
    assert want and got == want
    assert {("p4-1", "m4-0"), ("p4-2", "m4-0"), ("p4-3", "m4-0"), ("p4-5", "m4-2")} <= got


def test_next_starts_are_the_smallest_start_of_a_later_epoch(spark):
    """The offset rule's threshold per epoch (``_next_starts``, a running minimum down the epochs)
    must be what pairing the epoch with every later epoch's start and taking the smallest finds:
    random partitions with starts at, above and below their epochs, several starts per epoch, starts
    smaller at higher epochs, and null keys, which meet nothing."""
    import random

    from epoch_audit.gold.invariants.write_accepted_by_fenced_leader import _next_starts

    rng = random.Random(11)
    keys = [("c", "t", 0), ("c", "t", 1), ("c", "u", 0), ("c", None, 0)]
    epochs = sorted({(*rng.choice(keys), rng.choice([None, *range(12)])) for _ in range(40)}, key=str)
    starts = [(*rng.choice(keys), rng.choice([None, *range(12)]), rng.randrange(0, 500), f"s{n:03d}")
              for n in range(60)]
    got = sorted(map(tuple, _next_starts(
        spark.createDataFrame(epochs, "cluster_id string, topic string, partition int, leader_epoch int"),
        spark.createDataFrame(starts, "cluster_id string, topic string, partition int, leader_epoch int, "
                                      "start long, start_event string"),
    ).select("cluster_id", "topic", "partition", "leader_epoch", "thr", "next_epoch", "thr_event").collect()))
    expected = []
    for c, t, p, e in epochs:
        later = [(s, le, ev) for c2, t2, p2, le, s, ev in starts
                 if None not in (c, t, p, e, le) and (c2, t2, p2) == (c, t, p) and le > e]
        if later:
            expected.append((c, t, p, e, *min(later)))
    assert len(expected) > 10 and got == sorted(expected)
