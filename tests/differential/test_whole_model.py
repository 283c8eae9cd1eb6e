"""Differential tests over the whole model: Spark's partition timeline vs the pure-Python one
(``epoch_audit_tools.reference_model.timeline``), and every registered Spark invariant vs ``check_history`` (which
builds its own timeline from the events: no Spark in the model).

Histories: the C1 generators (ZK broker-side requests with stand-in states, a KRaft metadata log
with fences, registrations, ISR changes and produces) plus ZK controller decision lines (several
controllers and epochs, re-sends), Redpanda terms with produces and segment batches, KRaft
metadata logs cut by the cleaner with the snapshot that covers the cut, and KRaft metadata logs with
a hole (with and without the snapshot that ends where the log resumes).
"""

from __future__ import annotations

import random

from epoch_audit_tools.reference_model import check_history
from epoch_audit_tools.reference_model.model import key_of
from epoch_audit_tools.reference_model.timeline import partition_timeline
from hypothesis import given

from epoch_audit.gold.context import CheckConfig, check_context
from epoch_audit.gold.registry import found_violations
from epoch_audit.silver.partition_timeline import TIMELINE_COLUMNS
from tests.builders.controller_events import History, to_df
from tests.builders.silver import TIMELINE_TABLES as SILVER_BUILDERS
from tests.differential.test_controller_and_isr import SEEDS, SETTINGS, kraft_history, zk_history
from tests.differential.test_snapshot_replay import cut_hole, cut_with_snapshot
from tests.helpers import release_spark_memory


def zk_controller_history(seed: int) -> History:
    """Controller decision lines of two controllers (CE 5/6), brokers' received states (stand-ins
    and re-sends), leader lines, produces and dump batches."""
    rnd = random.Random(seed)
    h = History(f"zkc-{seed}")
    t = 0.0
    for _ in range(rnd.randint(3, 12)):
        t += rnd.choice([0.2, 0.5, 1.5])
        part = rnd.choice([0, 1])
        le, leader = rnd.randint(0, 5), rnd.choice([1, 2, 3])
        kind = rnd.random()
        if kind < 0.4:
            c = rnd.choice([1, 2])
            h.ev(rnd.choice(["controller_partition_state_change", "controller_isr_change"]), c, t=t, topic="orders",
                 partition=part, controller_id=c, controller_epoch=4 + c, leader=leader, leader_epoch=le,
                 partition_epoch=rnd.randint(0, 9), isr=[leader], broker_id=None)
        elif kind < 0.7:
            ce = rnd.choice([6, 7])
            h.ev("leader_and_isr_received", rnd.choice([1, 2, 3]), t=t, topic="orders", partition=part,
                 controller_id=rnd.choice([2, 3]), controller_epoch=ce,
                 state_controller_epoch=ce - rnd.randint(0, 1), leader=leader, leader_epoch=le,
                 partition_epoch=rnd.randint(0, 9), isr=[leader])
        elif kind < 0.85:
            h.ev(rnd.choice(["become_leader", "become_follower"]), leader, t=t, topic="orders", partition=part,
                 leader_epoch=le, leader=leader, offset=rnd.randint(0, 5) * 10)
        else:
            b = rnd.choice([1, 2, 3])
            h.ev("request_produce", b, "request", t=t, topic="orders", partition=part, error="NONE")
            h.ev("data_batch", b, "segment-dump", t=None, topic="orders", partition=part,
                 offset=rnd.randint(0, 5) * 10, last_offset=None, leader_epoch=le)
    return h


def redpanda_history(seed: int) -> History:
    """Raft terms (became the leader), produces and checkpoints of a Redpanda cluster."""
    rnd = random.Random(seed)
    h = History(f"rp-{seed}")
    t = 0.0
    for _ in range(rnd.randint(2, 8)):
        t += rnd.choice([0.3, 1.0, 2.0])
        n = rnd.choice([1, 2, 3])
        if rnd.random() < 0.6:
            h.ev("rp_became_leader", n, "redpanda", t=t, topic="orders", partition=0, leader_epoch=rnd.randint(1, 4))
        else:
            h.ev("request_produce", n, "request", t=t, topic="orders", partition=0, error="NONE")
    return h


def kraft_snapshot_history(seed: int) -> History:
    """A KRaft history whose metadata log the cleaner cut, with the snapshot covering the cut: the
    checks must read the replayed states (snapshot rows have no time and no metadata offset) the
    same way in Spark and in the model."""
    rows, _, _ = cut_with_snapshot(kraft_history(seed), random.Random(seed))
    h = History(f"krs-{seed}")
    h.rows = [{**r, "cluster_id": h.cluster_id} for r in rows]
    return h


def kraft_hole_history(seed: int, covered: bool) -> History:
    """A KRaft history whose dumped metadata log has a hole (a run of whole batches missing), with or
    without the snapshot that ends where the log resumes: after the hole the replay must know the
    epochs from the snapshot or leave them unknown, alike in Spark and in the model."""
    full = kraft_history(seed)
    cut = cut_hole(full, random.Random(seed), covered)
    h = History(f"krh-{seed}-{int(covered)}")
    h.rows = [{**r, "cluster_id": h.cluster_id} for r in (full.rows if cut is None else cut[0])]
    return h


def _histories(seeds: list[int]) -> list[History]:
    out = []
    for i, s in enumerate(seeds):
        out += [zk_history(s), kraft_history(s), zk_controller_history(s), redpanda_history(s),
                kraft_snapshot_history(s)]
        if i < 4:  # a few holed logs, half with a covering snapshot (CI time)
            out.append(kraft_hole_history(s, covered=i % 2 == 0))
    return out


def _ctx(spark, rows):
    events = to_df(spark, rows).cache()
    config = CheckConfig()
    # materialised, as the pipeline reads silver from its tables: lazily built silver subtrees
    # repeated inside every check made plans of tens of thousands of nodes
    ctx = check_context(events, {name: fn(events, config).localCheckpoint() for name, fn in SILVER_BUILDERS.items()})
    return ctx


def _norm(r: dict) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in (r[c] for c in TIMELINE_COLUMNS))


def _compare_timeline(ctx, rows) -> list[tuple]:
    got = sorted((_norm(r.asDict()) for r in ctx.silver["partition_timeline"].collect()), key=str)
    want = sorted((_norm(r) for r in partition_timeline(rows)), key=str)
    assert got == want
    return want


def _compare_all(ctx, rows) -> list[tuple]:
    out = found_violations(ctx)
    got = sorted(((key_of(r.asDict()), tuple(r["evidence"])) for r in out.collect()), key=str)
    want = sorted(((key_of(v), tuple(v["evidence"])) for v in check_history(rows, ctx.config)), key=str)
    assert got == want
    return want


@SETTINGS
@given(SEEDS)
def test_timeline_and_every_invariant_match_model(spark, seeds):
    rows = [r for h in _histories(seeds) for r in h.rows]
    ctx = _ctx(spark, rows)
    try:
        _compare_timeline(ctx, rows)
        _compare_all(ctx, rows)
    finally:
        release_spark_memory(spark)  # each example's frames, caches and broadcasts go with it


def test_generators_exercise_every_timeline_source():
    """Guard: the histories yield decisions from every source and violations of several kinds.

    Pure Python (the model): Spark is compared with the model on these generators above."""
    rows = [r for h in _histories(list(range(12))) for r in h.rows]
    timeline = partition_timeline(rows)
    sources = {r["source"] for r in timeline}
    assert sources == {"kraft", "zk-controller", "zk-leader-and-isr", "redpanda"}, sources
    # holed logs: unknown epochs after an unbridged hole, known ones after a bridged one
    holed = [r for r in timeline if r["cluster_id"].startswith("krh-")]
    assert any(r["leader_epoch"] is None for r in holed if r["cluster_id"].endswith("-0")), holed
    assert all(r["leader_epoch"] is not None for r in holed if r["cluster_id"].endswith("-1")), holed
    kinds = {key_of(v)[0] for v in check_history(rows, CheckConfig())}
    assert len(kinds) >= 6, kinds
