"""Silver timelines: KRaft replay, commit points, transactions, ZK stand-ins, registrations, CE views.

All scenarios go into one bronze DataFrame (one cluster each) and each silver table is collected
once, to keep the suite to a few Spark jobs.
"""

from __future__ import annotations

import pytest
from epoch_audit_tools.reference_model.timeline import partition_timeline as model_timeline

from epoch_audit.gold.context import CheckConfig
from epoch_audit.silver.broker_controller_views import broker_controller_views
from epoch_audit.silver.broker_registrations import broker_registrations
from epoch_audit.silver.partition_timeline import partition_timeline
from tests.builders.controller_events import History, to_df

SILVER_BUILDERS = {
    "partition_timeline": partition_timeline,
    "broker_registrations": broker_registrations,
    "broker_controller_views": broker_controller_views,
}


def _kraft_replay() -> History:
    h = History("replay")
    h.batch(0, 1)
    h.topic(0)
    h.partition(1, leader=1, le=5, pe=9, isr=[1, 2, 3])
    h.batch(2, 2)
    h.change(2, isr=[1, 2])  # ISR only: LE unchanged, PE + 1
    h.batch(3, 3)
    h.change(3, leader=2)  # leader set: LE + 1
    h.batch(4, 4)
    h.change(4, leader=2, isr=[2])  # same leader re-sent (forced bump): LE + 1 again
    h.batch(5, 5)
    h.change(5, leader=-2, isr=[2, 3])  # -2 = no leader change
    # the same record shipped by a second controller host: one decision
    h.md("md_partition_change", 5, host=3001, topic_id="T1", partition=0, leader=-2, isr=[2, 3])
    return h


def _kraft_txn() -> History:
    h = History("txn")
    h.topic(0)
    h.batch(1, 3)
    h.partition(1, isr=[1, 2, 3])
    h.change(2, isr=[1, 2])
    h.change(3, isr=[1])  # same batch: commit offset 3 for all three
    h.md("md_begin_transaction", 4)
    h.change(5, leader=2)  # aborted below
    h.md("md_abort_transaction", 6)
    h.md("md_begin_transaction", 7)
    h.change(8, leader=3)
    h.batch(9, 10)
    h.md("md_end_transaction", 10)  # commits offset 8 at the end batch's last offset
    h.change(11, isr=[3, 1])  # no batch header: commits at its own offset
    h.md("md_begin_transaction", 12)
    h.change(13, leader=1)  # never ended: not committed
    return h


def _kraft_removed() -> History:
    h = History("removed")
    h.batch(0, 1)
    h.topic(0)
    h.partition(1, isr=[1, 2, 3])
    h.batch(2, 2)
    h.change(2, isr=[1, 2])
    h.batch(3, 3)
    h.remove_topic(3)  # the partition ceases to exist at commit point 3
    h.batch(4, 5)
    h.topic(4, topic_id="T2")  # recreated under a new id: its own, open-ended states
    h.partition(5, isr=[2, 3], topic_id="T2")
    return h


def _zk() -> History:
    h = History("zk")
    # controller 3 (epoch 9) log present: its own decisions
    h.ev("controller_partition_state_change", 3, t=1, topic="orders", partition=0, controller_id=3,
         controller_epoch=9, leader=1, leader_epoch=7, isr=[1, 2, 3], partition_epoch=12)
    h.ev("controller_isr_change", 3, t=2, topic="orders", partition=0, controller_id=3, controller_epoch=9,
         leader=1, leader_epoch=7, isr=[1, 2], partition_epoch=13, state_controller_epoch=9)
    # a broker's received state from the present controller 3: never a decision
    h.ev("leader_and_isr_received", 1, t=2.5, topic="orders", partition=0, controller_id=3,
         controller_epoch=9, state_controller_epoch=9, leader=1, leader_epoch=8, isr=[1, 2])
    # controller 2 (epoch 10) log absent: first a re-send of the state controller 3 elected
    h.ev("leader_and_isr_received", 1, t=5, topic="orders", partition=0, controller_id=2,
         controller_epoch=10, state_controller_epoch=9, leader=1, leader_epoch=7, isr=[1, 2])
    # then a real decision of controller 2, received by two brokers (one decision)
    h.ev("leader_and_isr_received", 1, t=6, topic="orders", partition=0, controller_id=2,
         controller_epoch=10, state_controller_epoch=10, leader=2, leader_epoch=8, isr=[2])
    h.ev("request_leader_and_isr", 2, "request", t=6.1, topic="orders", partition=0, controller_id=2,
         controller_epoch=10, state_controller_epoch=10, leader=2, leader_epoch=8, isr=[2], error="NONE")
    # a state whose LE is not above the latest decided LE: a re-send
    h.ev("leader_and_isr_received", 1, t=7, topic="orders", partition=0, controller_id=2,
         controller_epoch=10, state_controller_epoch=10, leader=2, leader_epoch=6, isr=[2])
    # Redpanda terms
    h.ev("rp_became_leader", 5, "redpanda", t=1, topic="rp", partition=1, leader_epoch=3)
    h.ev("rp_became_leader", 6, "redpanda", t=2, topic="rp", partition=1, leader_epoch=4)
    return h


def _zk_isr_updated() -> History:
    """Controller 3's own log at DEBUG: the "ISR for partition ... updated to" line has no epoch in its
    prefix ([Controller id=3]); it takes epoch 9 from the line before it in the same file."""
    h = History("zkisr")
    h.ev("controller_partition_state_change", 3, t=1, topic="orders", partition=0, controller_id=3,
         controller_epoch=9, leader=1, leader_epoch=7, isr=[1, 2, 3], partition_epoch=12)
    h.ev("controller_isr_updated", 3, t=2, topic="orders", partition=0, controller_id=3, controller_epoch=None,
         leader=1, leader_epoch=7, isr=[1, 2], partition_epoch=13)
    h.ev("controller_partition_state_change", 3, t=3, topic="orders", partition=0, controller_id=3,
         controller_epoch=9, leader=2, leader_epoch=8, isr=[2], partition_epoch=14)
    return h


def _zk_rotated() -> History:
    """Controller 2's controller.log rolled on the hour (Kafka's shipped DailyRollingFileAppender) between its
    election line and its "ISR for partition ... updated to" decisions: they take epoch 5 from the rotated file
    (the CI's lab run of 2026-11-29 03:59-04:01 sorted them before the topic's creation without it)."""
    h = History("zkrot")
    rotated = {"file_id": "zkrot/2/controller.log.2026-11-29-03", "file_order": 2026112903,
               "source_file": "cluster=zkrot/broker-2/controller.log.2026-11-29-03"}
    h.ev("controller_failover", 2, "controller", t=1, controller_id=2, controller_epoch=5, line_number=1, **rotated)
    h.ev("controller_partition_state_change", 2, t=2, topic="orders", partition=0, controller_id=2,
         controller_epoch=5, leader=1, leader_epoch=0, isr=[1, 2], partition_epoch=0)
    live = {"file_order": 99_999_999_999_999}
    h.ev("controller_isr_updated", 2, "controller", t=10, topic="orders", partition=0, controller_id=2,
         controller_epoch=None, leader=2, leader_epoch=1, isr=[2], partition_epoch=1, **live)
    h.ev("controller_isr_updated", 2, "controller", t=11, topic="orders", partition=0, controller_id=2,
         controller_epoch=None, leader=2, leader_epoch=1, isr=[2, 1], partition_epoch=2, **live)
    # another broker's controller.log names no epoch before its line: nothing to take it from
    h.ev("controller_isr_updated", 3, "controller", t=12, topic="other", partition=0, controller_id=3,
         controller_epoch=None, leader=3, leader_epoch=4, isr=[3], partition_epoch=6, **live)
    return h


def _registrations() -> History:
    h = History("regs")
    h.batch(0, 1)
    h.register(0, broker=1, be=100, fenced=True)
    h.reg_change(1, broker=1, be=100, fenced=False)  # same batch: offset 0 state superseded
    h.batch(2, 2)
    h.reg_change(2, broker=1, be=100, ics=True)
    h.batch(3, 3)
    h.md("md_fence_broker", 3, broker_id=1, broker_epoch=100)  # fencing ends controlled shutdown
    h.batch(4, 4)
    h.register(4, broker=1, be=200, fenced=True)
    h.batch(5, 5)
    h.md("md_unfence_broker", 5, broker_id=1, broker_epoch=200)
    return h


def _ce_views() -> History:
    h = History("views")
    h.ev("update_metadata_applied", 1, t=1, controller_id=3, controller_epoch=9, correlation_id=1)
    h.ev("leader_and_isr_received", 1, t=2, topic="o", partition=0, controller_id=2, controller_epoch=8,
         state_controller_epoch=8, correlation_id=5, leader=1, leader_epoch=3)
    h.ev("stop_replica_stale_controller", 1, t=3, controller_id=2, controller_epoch=7, known_controller_epoch=11)
    h.ev("stop_replica_received", 1, t=4, topic="o", partition=0, controller_id=3, controller_epoch=10)
    return h


@pytest.fixture(scope="module")
def silver(spark):
    hs = [_kraft_replay(), _kraft_txn(), _kraft_removed(), _zk(), _zk_isr_updated(), _zk_rotated(), _registrations(),
          _ce_views()]
    events = to_df(spark, [r for h in hs for r in h.rows])
    cfg = CheckConfig()
    return {name: [r.asDict() for r in fn(events, cfg).collect()] for name, fn in SILVER_BUILDERS.items()}


def _timeline(silver, cluster, topic="orders", partition=0):
    rows = [r for r in silver["partition_timeline"] if r["cluster_id"] == cluster and r["topic"] == topic
            and r["partition"] == partition]
    return sorted(rows, key=lambda r: r["decision_seq"])


def test_kraft_replay_bumps_le_only_when_leader_field_set(silver):
    rows = _timeline(silver, "replay")
    got = [(r["decision_seq"], r["leader"], r["leader_epoch"], r["partition_epoch"], r["isr"]) for r in rows]
    assert got == [
        (1, 1, 5, 9, [1, 2, 3]),
        (2, 1, 5, 10, [1, 2]),
        (3, 2, 6, 11, [1, 2]),
        (4, 2, 7, 12, [2]),
        (5, 2, 7, 13, [2, 3]),
    ]
    assert [r["is_leader_change"] for r in rows] == [True, False, True, False, False]
    assert {r["source"] for r in rows} == {"kraft"} and {r["topic_id"] for r in rows} == {"T1"}
    assert [r["commit_offset"] for r in rows] == [1, 2, 3, 4, 5]


def test_kraft_copies_from_two_hosts_are_one_decision(silver):
    rows = _timeline(silver, "replay")
    assert [r["metadata_offset"] for r in rows].count(5) == 1


def test_kraft_commit_points_and_transactions(silver):
    rows = _timeline(silver, "txn")
    got = [(r["metadata_offset"], r["commit_offset"], r["leader"], r["leader_epoch"], r["isr"]) for r in rows]
    assert got == [
        (1, 3, 1, 0, [1, 2, 3]),
        (2, 3, 1, 0, [1, 2]),
        (3, 3, 1, 0, [1]),
        # offset 5 (aborted) is skipped: the leader change at 8 is the first bump
        (8, 10, 3, 1, [1]),
        (11, 11, 3, 1, [3, 1]),
        # offset 13 sits in a transaction that never ended: not committed
    ]
    assert [r["next_commit_offset"] for r in rows] == [3, 3, 10, 11, None]


def test_kraft_topic_removal_ends_the_partition_state(silver):
    rows = _timeline(silver, "removed")
    got = [(r["topic_id"], r["commit_offset"], r["next_commit_offset"], r["isr"]) for r in rows]
    assert got == [("T1", 1, 2, [1, 2, 3]), ("T1", 2, 3, [1, 2]), ("T2", 5, None, [2, 3])]


def test_zk_own_decisions_and_stand_ins(silver):
    rows = _timeline(silver, "zk")
    got = [(r["source"], r["controller_epoch"], r["leader"], r["leader_epoch"]) for r in rows]
    assert got == [
        ("zk-controller", 9, 1, 7),
        ("zk-controller", 9, 1, 7),
        # controller 2's log is absent: its decision LE 8 stands in once; the re-sends
        # (state CE 9 < request CE 10, and LE 6 not above 8) and the second copy are dropped
        ("zk-leader-and-isr", 10, 2, 8),
    ]
    assert [r["decision_seq"] for r in rows] == [1, 2, 3]
    assert [r["is_leader_change"] for r in rows] == [True, False, True]


def test_zk_isr_updated_line_takes_its_file_controller_epoch(silver):
    rows = _timeline(silver, "zkisr")
    got = [(r["controller_epoch"], r["leader_epoch"], r["isr"]) for r in rows]
    assert got == [(9, 7, [1, 2, 3]), (9, 7, [1, 2]), (9, 8, [2])]
    model = sorted((r for r in model_timeline(_zk_isr_updated().rows) if r["topic"] == "orders"),
                   key=lambda r: r["decision_seq"])
    assert [(r["controller_epoch"], r["leader_epoch"], r["isr"]) for r in model] == got


def test_zk_isr_updated_line_takes_the_epoch_of_its_rotated_log(silver):
    rows = _timeline(silver, "zkrot")
    got = [(r["controller_epoch"], r["leader"], r["leader_epoch"], r["partition_epoch"]) for r in rows]
    assert got == [(5, 1, 0, 0), (5, 2, 1, 1), (5, 2, 1, 2)]
    assert [r["is_leader_change"] for r in rows] == [True, True, False]
    other = _timeline(silver, "zkrot", topic="other")
    assert [(r["controller_epoch"], r["leader_epoch"]) for r in other] == [(None, 4)]
    model = sorted((r for r in model_timeline(_zk_rotated().rows) if r["topic"] == "orders"),
                   key=lambda r: r["decision_seq"])
    assert [(r["controller_epoch"], r["leader"], r["leader_epoch"], r["partition_epoch"]) for r in model] == got


def test_redpanda_terms(silver):
    rows = _timeline(silver, "zk", topic="rp", partition=1)
    assert [(r["source"], r["leader"], r["leader_epoch"]) for r in rows] == [("redpanda", 5, 3), ("redpanda", 6, 4)]


def test_broker_registrations_state_machine(silver):
    rows = sorted(
        (r for r in silver["broker_registrations"] if r["cluster_id"] == "regs"), key=lambda r: r["metadata_offset"]
    )
    got = [
        (r["metadata_offset"], r["broker_epoch"], r["registered_at_offset"], r["fenced"], r["in_controlled_shutdown"],
         r["commit_offset"], r["next_commit_offset"])
        for r in rows
    ]
    assert got == [
        (0, 100, 0, True, False, 1, 1),
        (1, 100, 0, False, False, 1, 2),
        (2, 100, 0, False, True, 2, 3),
        (3, 100, 0, True, False, 3, 4),
        (4, 200, 4, True, False, 4, 5),
        (5, 200, 4, False, False, 5, None),
    ]


def test_broker_controller_views_running_max(silver):
    rows = [r for r in silver["broker_controller_views"] if r["cluster_id"] == "views"]
    rows.sort(key=lambda r: r["line_number"])
    assert [(r["seen_controller_epoch"], r["prior_max_controller_epoch"], r["max_controller_epoch"]) for r in rows] == [
        (9, None, 9),
        (8, 9, 9),
        (11, 9, 11),
        (10, 11, 11),
    ]
