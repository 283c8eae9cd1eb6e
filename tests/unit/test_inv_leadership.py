"""Named rule / must-NOT-flag tests for the leadership invariants (Spark check and reference model).

All scenarios are built as separate clusters and checked in one Spark run (module fixture); each
test asserts on its own cluster's rows and that the reference model agrees.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from epoch_audit_tools.reference_model import leadership as model

from epoch_audit.gold.invariants.leadership import (
    check_leader_epoch_regression,
    check_produce_epoch_mismatch,
    check_two_leaders_same_epoch,
    check_write_accepted_by_fenced_leader,
)
from tests.builders.epoch_events import H, comparable, model_all, run_all, ts

SCENARIOS: dict[str, Callable[[H], None]] = {}


def scenario(fn: Callable[[H], None]) -> Callable[[H], None]:
    SCENARIOS[fn.__name__] = fn
    return fn


# --- leader_epoch_regression ------------------------------------------------------------------
@scenario
def le_follower_regression(h: H) -> None:
    h.ev("become_leader", 1, 0, leader_epoch=5, offset=100, high_watermark=90)
    h.ev("become_follower", 1, 10, leader_epoch=6, leader=2)
    h.ev("become_follower", 1, 20, leader_epoch=4, leader=2)


@scenario
def le_equal_is_fine(h: H) -> None:
    h.ev("become_follower", 1, 0, leader_epoch=5, leader=2)
    h.ev("become_follower", 1, 10, leader_epoch=5, leader=2)


@scenario
def le_refused_request_not_held(h: H) -> None:
    h.ev("become_leader", 1, 0, leader_epoch=5, offset=100)
    h.ev("request_leader_and_isr", 1, 10, leader_epoch=3, error="STALE_CONTROLLER_EPOCH")
    h.ev("request_leader_and_isr", 1, 20, leader_epoch=2, error="NONE")


@scenario
def le_topic_recreated(h: H) -> None:
    h.ev("become_leader", 1, 0, leader_epoch=7, offset=100, topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    h.ev("log_deleted", 1, 10)
    h.ev("become_follower", 1, 20, leader_epoch=0, leader=2)
    # Another broker: a new topic id without a deletion line also restarts the series.
    h.ev("become_leader", 2, 0, partition=1, leader_epoch=7, offset=100, topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    h.ev("become_leader", 2, 30, partition=1, leader_epoch=0, offset=0, topic_id="BBBBBBBBBBBBBBBBBBBBBB")


@scenario
def le_redpanda_terms(h: H) -> None:
    # Own terms only: a vote request's current term; step-down and pre-vote lines never count.
    h.ev("rp_became_leader", 1, 0, leader_epoch=5)
    h.ev("rp_step_down", 1, 10, details={"term": "3"})
    h.ev("rp_vote_sent", 1, 20, leader_epoch=9, details={"prevote": "true"})
    h.ev("rp_vote_request", 1, 30, leader_epoch=6, current_leader_epoch=6, details={"received_term": "2"})
    # node 2 regresses: "current 3" after it held 4
    h.ev("rp_new_term", 2, 0, leader_epoch=4, current_leader_epoch=3)
    h.ev("rp_vote_request", 2, 50, leader_epoch=3, current_leader_epoch=3)


@scenario
def le_redpanda_shards_file_order(h: H) -> None:
    # One multi-shard file: the later line carries an earlier timestamp; line order wins.
    h.ev("rp_became_leader", 1, 10_000, leader_epoch=5)
    h.ev("rp_new_term", 1, 9_000, leader_epoch=6, current_leader_epoch=5)


@scenario
def le_timeline_regression(h: H) -> None:
    h.decision(1, 5, 0)
    h.decision(2, 4, 100)


# --- two_leaders_same_epoch -------------------------------------------------------------------
@scenario
def two_timeline_equal_le(h: H) -> None:
    h.decision(1, 5, 0)
    h.decision(2, 5, 100)


@scenario
def two_by_time_confirmed(h: H) -> None:
    h.decision(1, 5, 0)
    h.ev("become_leader", 1, 10, leader_epoch=5, offset=100)
    h.ev("become_leader", 2, 5_000, leader_epoch=5, offset=100)


@scenario
def two_by_time_suspected(h: H) -> None:
    h.ev("rp_becoming_leader", 1, 1_000, leader_epoch=8)
    h.ev("rp_becoming_leader", 2, 1_400, leader_epoch=8)


@scenario
def two_causal_notification(h: H) -> None:
    # Node 2 logged node 1's leadership of term 8 before its own claim: node 2 is second, although
    # its clock puts its claim first.
    h.ev("rp_becoming_leader", 1, 1_000, leader_epoch=8)
    h.ev("rp_leadership_notification", 2, 100, leader=1, details={"term": "8"})
    h.ev("rp_becoming_leader", 2, 200, leader_epoch=8)


@scenario
def two_causal_vote_grant(h: H) -> None:
    h.ev("rp_vote_reply", 1, 990, replica_id=2, details={"term": "8", "vote_granted": "true"})
    h.ev("rp_becoming_leader", 1, 1_000, leader_epoch=8)
    h.ev("rp_becoming_leader", 2, 900, leader_epoch=8)


@scenario
def two_same_claimant_twice(h: H) -> None:
    h.ev("rp_becoming_leader", 1, 0, leader_epoch=8)
    h.ev("rp_became_leader", 1, 10, leader_epoch=8)
    h.ev("rp_new_term", 2, 20, leader_epoch=8, current_leader_epoch=7)
    h.decision(3, 6, 0)
    h.ev("become_leader", 3, 5, leader_epoch=6, offset=0)
    h.ev("become_follower", 2, 6, leader_epoch=6, leader=3)


@scenario
def two_redpanda_became_lines_are_claims(h: H) -> None:
    # Redpanda's timeline rows are the nodes' own "became the leader" lines (no controller decides
    # them): two of them in one term are ordered by time like any claims, here within the skew.
    for node, t in ((1, 500), (2, 300)):
        h.decision(node, 8, t, source="redpanda")
        h.ev("rp_became_leader", node, t, leader_epoch=8)


@scenario
def two_topic_recreated(h: H) -> None:
    # LE 0 of a deleted topic and LE 0 of its recreation (a new topic id) are different epochs.
    h.decision(1, 0, 0, topic_id="AAAAAAAAAAAAAAAAAAAAAA")
    h.decision(2, 0, 1_000, topic_id="BBBBBBBBBBBBBBBBBBBBBB")
    # a claim without a topic id pairs with the partition's only topic id
    h.decision(1, 3, 0, partition=1, topic_id="CCCCCCCCCCCCCCCCCCCCCC")
    h.ev("become_leader", 2, 5_000, partition=1, leader_epoch=3, offset=0)


# --- write_accepted_by_fenced_leader: offset rule ---------------------------------------------
@scenario
def write_offset_rule(h: H) -> None:
    h.decision(1, 5, 0)
    h.decision(2, 6, 1_000)
    h.ev("become_leader", 2, 1_000, leader_epoch=6, offset=150)
    h.ev("data_batch", 3, 0, offset=100, last_offset=149, leader_epoch=5)
    h.ev("data_batch", 3, 0, offset=150, last_offset=160, leader_epoch=5)
    h.ev("data_batch", 3, 0, offset=161, last_offset=170, leader_epoch=5)


@scenario
def write_copies_are_replication(h: H) -> None:
    h.decision(1, 5, 0)
    h.decision(2, 6, 1_000)
    h.ev("checkpoint_leader_epoch", 2, None, leader_epoch=6, offset=150)
    for host in (1, 2, 3):
        h.ev("data_batch", host, 0, offset=100, last_offset=149, leader_epoch=5)
        h.ev("data_batch", host, 0, offset=150, last_offset=160, leader_epoch=6)
    # CreateTime far after the move is the producer's clock: never used.
    h.ev("data_batch", 3, 90_000, offset=120, last_offset=120, leader_epoch=5)


# --- write_accepted_by_fenced_leader: time rule -----------------------------------------------
def _moved(h: H) -> None:
    h.decision(1, 5, 0)
    h.decision(2, 6, 1_000)


@scenario
def write_time_confirmed(h: H) -> None:
    _moved(h)
    h.ev("request_produce", 1, 3_000, error="NONE", offset=170)
    h.ev("request_produce", 1, 4_000, error="NONE", offset=171)


@scenario
def write_time_suspected(h: H) -> None:
    _moved(h)
    h.ev("request_produce", 1, 1_500, error="NONE", offset=170)


@scenario
def write_time_before_move(h: H) -> None:
    _moved(h)
    h.ev("request_produce", 1, 999, error="NONE", offset=170)
    h.ev("request_produce", 1, 1_000, error="NONE", offset=171)
    # refused produces are the system working
    h.ev("request_produce", 1, 5_000, error="NOT_LEADER_OR_FOLLOWER")


@scenario
def write_time_regained(h: H) -> None:
    _moved(h)
    h.decision(1, 7, 5_000)
    h.ev("request_produce", 1, 6_000, error="NONE")
    h.ev("request_produce", 1, 4_500, error="NONE")  # within skew before regaining: suspected


@scenario
def write_time_regained_per_own_log(h: H) -> None:
    # A normal handover back to broker 1 (leader 2 at LE 6 -> broker 1 at LE 7): the controller's
    # clock runs ahead, so its LE 7 decision is timed after broker 1's first produce of LE 7; broker
    # 1's own leader line (same host clock) proves it was leader again before it answered.
    _moved(h)
    h.decision(1, 7, 5_400)
    h.ev("become_leader", 1, 4_870, leader_epoch=7, offset=97, high_watermark=97,
         raw="[Broker id=1] Leader orders-0 with topic id Some(32rx2DA-Yc3Eu4bD0cQnEA) starts at leader epoch 7 "
             "from offset 97 with partition epoch 39, high watermark 97, ISR [1,3], adding replicas [] and "
             "removing replicas [] . Previous leader Some(2) and previous leader epoch was 6.")
    h.ev("request_produce", 1, 5_000, error="NONE", offset=97,
         raw='{"requestApiKeyName":"PRODUCE","acks":-1,"errorCode":0,"baseOffset":97}')


@scenario
def write_time_old_claim_is_no_excuse(h: H) -> None:
    # Broker 1's leader line of the epoch it was moved out of (LE 5), or one logged after the
    # produce, never excuses a produce after the move.
    h.decision(1, 5, 0)
    h.ev("become_leader", 1, 10, leader_epoch=5, offset=100)
    h.decision(2, 6, 1_000)
    h.ev("request_produce", 1, 3_000, error="NONE", offset=170)
    h.decision(1, 7, 8_000)
    h.ev("become_leader", 1, 8_020, leader_epoch=7, offset=171)


@scenario
def write_time_fenced(h: H) -> None:
    h.ev("md_fence_broker", 3000, 1_000, topic=None, partition=None, broker_id=1, metadata_offset=10)
    h.ev("request_produce", 1, 3_000, error="NONE", topic="payments")
    h.ev("md_fence_broker", 3000, 1_000, topic=None, partition=None, broker_id=4, metadata_offset=11)
    h.ev("md_unfence_broker", 3000, 2_000, topic=None, partition=None, broker_id=4, metadata_offset=12)
    h.ev("request_produce", 4, 3_000, error="NONE", topic="payments")


# --- produce_epoch_mismatch_accepted ----------------------------------------------------------
@scenario
def produce_epoch_mismatch(h: H) -> None:
    h.ev("become_leader", 1, 0, leader_epoch=5, offset=0)
    h.ev("request_produce", 1, 100, error="NONE", leader_epoch=4)
    h.ev("request_produce", 1, 200, error="NONE", leader_epoch=5)
    h.ev("request_produce", 1, 300, error="NONE")
    h.ev("request_produce", 2, 300, error="NONE", leader_epoch=9)  # no held LE known: nothing


CHECKS = [
    check_leader_epoch_regression,
    check_two_leaders_same_epoch,
    check_write_accepted_by_fenced_leader,
    check_produce_epoch_mismatch,
]


@pytest.fixture(scope="module")
def results(spark):
    hs = []
    for name, build in SCENARIOS.items():
        h = H(name)
        build(h)
        hs.append(h)
    return run_all(spark, hs, CHECKS), model_all(hs, [model.check])


def rows(results, name: str, invariant: str | None = None) -> list[dict]:
    spark_rows, model_rows = results
    assert comparable(spark_rows[name]) == comparable(model_rows[name]), name
    out = spark_rows[name]
    return [r for r in out if invariant is None or r["invariant"] == invariant]


def one(results, name: str, invariant: str) -> dict:
    rs = rows(results, name, invariant)
    assert len(rs) == 1, rs
    assert rs[0]["explanation"]
    return rs[0]


def test_le_regression_in_own_log_order(results):
    r = one(results, "le_follower_regression", "leader_epoch_regression")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"]) == (1, 4, 6)
    assert r["confidence"] == "confirmed"
    assert r["evidence"] == [
        "le_follower_regression:1:state-change.log:3",
        "le_follower_regression:1:state-change.log:2",
    ]


def test_le_equal_epoch_is_not_a_regression(results):
    assert rows(results, "le_equal_is_fine") == []


def test_le_refused_leader_and_isr_is_not_held(results):
    r = one(results, "le_refused_request_not_held", "leader_epoch_regression")
    assert (r["leader_epoch"], r["expected_epoch"]) == (2, 5)  # only the accepted LE 2 counts


def test_le_series_restarts_on_deletion_or_new_topic_id(results):
    assert rows(results, "le_topic_recreated") == []


def test_le_redpanda_own_terms_only(results):
    r = one(results, "le_redpanda_terms", "leader_epoch_regression")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"]) == (2, 3, 4)


def test_le_redpanda_multishard_file_uses_line_order(results):
    assert rows(results, "le_redpanda_shards_file_order") == []


def test_le_timeline_leader_changes_strictly_increase(results):
    r = one(results, "le_timeline_regression", "leader_epoch_regression")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"]) == (2, 4, 5)


def test_equal_le_leader_change_is_only_two_leaders(results):
    assert rows(results, "two_timeline_equal_le", "leader_epoch_regression") == []
    r = one(results, "two_timeline_equal_le", "two_leaders_same_epoch")
    assert (r["broker_id"], r["leader_epoch"], r["confidence"]) == (2, 5, "confirmed")


def test_two_leaders_by_time_beyond_skew_confirmed(results):
    r = one(results, "two_by_time_confirmed", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (2, "confirmed")
    assert r["event_time"] == ts(5_000)


def test_two_leaders_within_skew_suspected_later_one(results):
    r = one(results, "two_by_time_suspected", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (2, "suspected")


def test_two_leaders_causal_order_beats_clock(results):
    r = one(results, "two_causal_notification", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (2, "confirmed")
    assert "two_causal_notification:2:redpanda.log:1" in r["evidence"]


def test_two_leaders_vote_granted_to_other(results):
    r = one(results, "two_causal_vote_grant", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (2, "confirmed")
    assert r["evidence"][-1] == "two_causal_vote_grant:1:redpanda.log:1"


def test_two_leaders_same_claimant_and_followers_are_not_claims(results):
    assert rows(results, "two_same_claimant_twice") == []


def test_two_leaders_redpanda_became_lines_are_ordered_by_time(results):
    r = one(results, "two_redpanda_became_lines_are_claims", "two_leaders_same_epoch")
    assert (r["broker_id"], r["confidence"]) == (1, "suspected")


def test_two_leaders_never_pairs_topic_incarnations(results):
    rs = rows(results, "two_topic_recreated", "two_leaders_same_epoch")
    assert [(r["partition"], r["broker_id"], r["leader_epoch"], r["confidence"]) for r in rs] == [(1, 2, 3, "confirmed")]


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


def test_produce_epoch_mismatch(results):
    r = one(results, "produce_epoch_mismatch", "produce_epoch_mismatch_accepted")
    assert (r["broker_id"], r["leader_epoch"], r["expected_epoch"]) == (1, 4, 5)
