"""Named rule / must-NOT-flag tests for the leadership invariants (Spark check and reference model).

All scenarios are built as separate clusters and checked in one Spark run (module fixture); each
test asserts on its own cluster's rows and that the reference model agrees.
"""

from __future__ import annotations

from collections.abc import Callable

from epoch_audit_tools.reference_model import leadership as model

from tests.builders.epoch_events import H, comparable, model_all, registered, run_all

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


# All four leadership checks over every scenario: a scenario of one invariant must not flag the others.
CHECKS = [
    registered("leader_epoch_regression"),
    registered("two_leaders_same_epoch"),
    registered("write_accepted_by_fenced_leader"),
    registered("produce_epoch_mismatch_accepted"),
]


def family_results(spark):
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


