"""Named rule / must-NOT-flag tests for the offset invariants (Spark check and reference model)."""

from __future__ import annotations

from collections.abc import Callable

from epoch_audit_tools.reference_model import offsets as model

from tests.builders.epoch_events import H, comparable, model_all, registered, run_all

SCENARIOS: dict[str, Callable[[H], None]] = {}


def scenario(fn: Callable[[H], None]) -> Callable[[H], None]:
    SCENARIOS[fn.__name__] = fn
    return fn


def ckpt(h: H, host: int, t: int | None, entries: dict[tuple[str, int], int], copy: str) -> None:
    """One replication-offset-checkpoint copy (suffix time t) with its entries."""
    for (topic, part), hw in entries.items():
        h.ev("checkpoint_replication_offset", host, t, topic=topic, partition=part, high_watermark=hw, file=copy)


# --- high_watermark_regression ----------------------------------------------------------------
@scenario
def hw_leader_lines(h: H) -> None:
    h.ev("become_leader", 1, 0, leader_epoch=5, offset=100, high_watermark=100)
    h.ev("become_leader", 1, 10, leader_epoch=6, offset=120, high_watermark=90)


@scenario
def hw_series_never_mixed(h: H) -> None:
    h.ev("become_leader", 1, 0, leader_epoch=5, offset=100, high_watermark=100)
    ckpt(h, 1, 1_000, {("orders", 0): 80}, "replication-offset-checkpoint.2024-03-05T09-00-01")
    # another broker's lower HW is never compared
    h.ev("become_leader", 2, 5_000, leader_epoch=6, offset=100, high_watermark=50)


@scenario
def hw_checkpoint_copies(h: H) -> None:
    ckpt(h, 1, 1_000, {("orders", 0): 100, ("orders", 1): 10}, "roc.1")
    ckpt(h, 1, 2_000, {("orders", 1): 12}, "roc.2")  # orders-0 absent: no value, not 0
    ckpt(h, 1, 3_000, {("orders", 0): 120, ("orders", 1): 11}, "roc.3")


@scenario
def hw_topic_recreated(h: H) -> None:
    h.ev("partition_metadata", 1, 0, topic_id="AAAAAAAAAAAAAAAAAAAAAA", file="pm.1")
    ckpt(h, 1, 1_000, {("orders", 0): 100}, "roc.1")
    h.ev("partition_metadata", 1, 1_500, topic_id="BBBBBBBBBBBBBBBBBBBBBB", file="pm.2")
    ckpt(h, 1, 2_000, {("orders", 0): 5}, "roc.2")


@scenario
def hw_redpanda_acks1_majority_loss(h: H) -> None:
    h.ev("become_leader", 1, 0, leader_epoch=5, offset=100, high_watermark=100)
    h.ev("rp_step_down", 1, 5, details={"term": "5"}, raw="[heartbeats_majority] Stepping down as leader in term 5")
    h.ev("request_produce", 1, 6, error="NONE", raw='{"acks":1,"timeoutMs":30000}')
    h.ev("become_leader", 1, 10, leader_epoch=6, offset=100, high_watermark=80)


# --- epoch_start_offset_divergence ------------------------------------------------------------
def _leaders(h: H) -> None:
    h.decision(1, 4, 0)
    h.decision(1, 5, 100)
    h.ev("become_leader", 1, 100, leader_epoch=5, offset=100)


@scenario
def div_checkpoint(h: H) -> None:
    _leaders(h)
    h.ev("checkpoint_leader_epoch", 2, None, leader_epoch=4, offset=0)
    h.ev("checkpoint_leader_epoch", 2, None, leader_epoch=5, offset=105)
    h.ev("checkpoint_leader_epoch", 3, None, leader_epoch=4, offset=0)
    h.ev("checkpoint_leader_epoch", 3, None, leader_epoch=5, offset=100)


@scenario
def div_retention_clamp(h: H) -> None:
    _leaders(h)
    # broker 2: earliest entry clamped to its log start offset 120 (consistent)
    h.ev("checkpoint_leader_epoch", 2, None, leader_epoch=5, offset=120)
    h.ev("log_start_offset_incremented", 2, 50, log_start_offset=120)
    # broker 3: same shape but 120 is not its log start offset: divergence
    h.ev("checkpoint_leader_epoch", 3, None, leader_epoch=5, offset=120)
    h.ev("checkpoint_log_start_offset", 3, None, log_start_offset=110)


@scenario
def div_majority_reference(h: H) -> None:
    # no leader evidence for epoch 7: replicas 2, 3 hold 300, replica 4 holds 310
    for host, off in ((2, 300), (3, 300), (4, 310)):
        h.ev("checkpoint_leader_epoch", host, None, leader_epoch=6, offset=200)
        h.ev("checkpoint_leader_epoch", host, None, leader_epoch=7, offset=off)
    # epoch 9 is a tie (1 vs 1): no reference, no report
    h.ev("checkpoint_leader_epoch", 2, None, leader_epoch=9, offset=400)
    h.ev("checkpoint_leader_epoch", 3, None, leader_epoch=9, offset=401)


@scenario
def div_dump_first_batch(h: H) -> None:
    _leaders(h)
    h.ev("data_batch", 2, 0, offset=90, last_offset=99, leader_epoch=4)
    h.ev("data_batch", 2, 0, offset=101, last_offset=110, leader_epoch=5)
    # host 3's dump starts inside epoch 5 (older segments not dumped): boundary not visible
    h.ev("data_batch", 3, 0, offset=130, last_offset=140, leader_epoch=5)


@scenario
def div_same_offset_below_hw(h: H) -> None:
    h.decision(1, 5, 0)
    h.decision(1, 6, 100)
    h.ev("become_leader", 1, 0, leader_epoch=5, offset=100, high_watermark=100)
    h.ev("become_leader", 1, 100, leader_epoch=6, offset=150, high_watermark=180)
    h.ev("data_batch", 1, 0, offset=100, last_offset=149, leader_epoch=5)
    h.ev("data_batch", 1, 0, offset=150, last_offset=200, leader_epoch=6)
    h.ev("data_batch", 2, 0, offset=100, last_offset=160, leader_epoch=5)
    ckpt(h, 2, 1_000, {("orders", 0): 180}, "roc.1")
    # partition 1: the same divergence above host 3's HW is not a violation
    h.ev("data_batch", 1, 0, partition=1, offset=100, last_offset=200, leader_epoch=6)
    h.ev("data_batch", 3, 0, partition=1, offset=150, last_offset=160, leader_epoch=5)
    ckpt(h, 1, 1_000, {("orders", 1): 190}, "roc.1")
    ckpt(h, 3, 1_000, {("orders", 1): 140}, "roc.1")


CHECKS = [registered("high_watermark_regression"), registered("epoch_start_offset_divergence")]


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
    return [r for r in spark_rows[name] if invariant is None or r["invariant"] == invariant]


def one(results, name: str, invariant: str) -> dict:
    rs = rows(results, name, invariant)
    assert len(rs) == 1, rs
    assert rs[0]["explanation"]
    return rs[0]


