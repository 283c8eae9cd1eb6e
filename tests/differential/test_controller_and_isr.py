"""Differential tests: the Spark checks and the pure-Python reference model must agree exactly.

Hypothesis draws seeds; each seed drives a random bronze history of one cluster (ZK broker
controller requests, or a KRaft metadata log with fences, re-registrations, ISR joins, AlterPartition
and fetch request-log lines). All histories of one example share one DataFrame (distinct
cluster ids), so an example costs a single Spark job per check group.
"""

from __future__ import annotations

import random

from epoch_audit_tools.reference_model import isr_membership, stop_replica
from epoch_audit_tools.reference_model.model import key_of
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from epoch_audit.gold.context import CheckConfig, check_context
from epoch_audit.gold.registry import SPECS, violations_of
from tests.builders.controller_events import History, to_df
from tests.builders.silver import TIMELINE_TABLES as SILVER_BUILDERS
from tests.helpers import release_spark_memory

SEEDS = st.lists(st.integers(0, 2**31), min_size=10, max_size=10, unique=True)
SETTINGS = settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)


def zk_history(seed: int) -> History:
    rnd = random.Random(seed)
    h = History(f"zk-{seed}")
    b, t, corr = 2, 0.0, 0
    for _ in range(rnd.randint(3, 12)):
        t += rnd.choice([0.001, 0.5, 1.0])
        corr += 1
        tp = ("orders", rnd.choice([0, 1]))
        ce = rnd.randint(5, 9)
        kind = rnd.choice(["become", "lair", "stop", "req_stop", "req_lair", "um"])
        common = dict(topic=tp[0], partition=tp[1], controller_id=rnd.choice([1, 2]), controller_epoch=ce,
                      correlation_id=corr)
        if kind == "become":
            h.ev(rnd.choice(["become_leader", "become_follower"]), b, t=t, topic=tp[0], partition=tp[1],
                 leader_epoch=rnd.randint(0, 6))
        elif kind == "lair":
            le = rnd.randint(0, 6)
            h.ev("leader_and_isr_received", b, t=t, leader_epoch=le, state_controller_epoch=ce - rnd.randint(0, 1),
                 **common)
            r = rnd.random()
            if r < 0.2:
                h.ev("leader_and_isr_stale_controller", b, t=t + 0.0001, known_controller_epoch=9,
                     **{k: v for k, v in common.items() if k not in ("topic", "partition")})
            elif r < 0.8:
                h.ev("become_follower", b, t=t + 0.0002, topic=tp[0], partition=tp[1],
                     leader_epoch=le if r < 0.7 else le + 1)
        elif kind == "stop":
            le = rnd.choice([-2, -1, 0, 1, 2, 3, 4, 5, 6])
            h.ev("stop_replica_received", b, t=t, leader_epoch=le, delete_partition=rnd.random() < 0.3, **common)
            r = rnd.random()
            if r < 0.2:
                h.ev("stop_replica_fenced", b, t=t + 0.0001, leader_epoch=le, **common)
            if r < 0.85:
                h.ev(rnd.choice(["fetcher_removed", "log_deleted"]), b, "server", t=t + 0.0002, topic=tp[0],
                     partition=tp[1])
        elif kind == "req_stop":
            h.ev("request_stop_replica", b, "request", t=t, leader_epoch=rnd.randint(-2, 6),
                 error=rnd.choice(["NONE", "NONE", "FENCED_LEADER_EPOCH"]), **common)
        elif kind == "req_lair":
            h.ev("request_leader_and_isr", b, "request", t=t, leader_epoch=rnd.randint(0, 6),
                 error=rnd.choice(["NONE", "STALE_CONTROLLER_EPOCH"]), **common)
        else:
            h.ev("update_metadata_applied", b, t=t, controller_id=1, controller_epoch=ce, correlation_id=corr)
    return h


def kraft_history(seed: int) -> History:
    rnd = random.Random(seed)
    h = History(f"kr-{seed}")
    bes = {1: 10, 2: 20, 3: 30}
    h.batch(0, 3, t=0)
    for i, be in bes.items():
        h.register(i - 1, broker=i, be=be, t=0)
    h.topic(3, t=0)
    isr = [1, 2, 3]
    h.batch(4, 4, t=1)
    h.partition(4, leader=1, isr=isr, t=1)
    off, t, pe = 5, 1.0, 0
    for _ in range(rnd.randint(3, 10)):
        t += rnd.choice([0.3, 1.0, 2.5])
        n = rnd.randint(1, 2)
        h.batch(off, off + n - 1, t=t)
        for _ in range(n):
            r = rnd.random()
            broker = rnd.choice([1, 2, 3])
            if r < 0.35:
                new = sorted(set(rnd.sample([1, 2, 3], rnd.randint(1, 3))) | {1})
                h.change(off, isr=new, leader=rnd.choice([None, None, 1]), t=t)
                pe += 1
                if set(new) - set(isr) and rnd.random() < 0.7:
                    h.ev("request_alter_partition", 3000, "request", t=t, topic_id="T1", partition=0,
                         partition_epoch=pe, isr=new, error="NONE", api_version=3,
                         isr_broker_epochs=[rnd.choice([bes[x], bes[x] - 5, -1]) for x in new])
                isr = new
            elif r < 0.55:
                h.reg_change(off, broker=broker, be=bes[broker], fenced=rnd.choice([True, False, None]),
                             ics=rnd.choice([True, None]), t=t)
            elif r < 0.7:
                bes[broker] += 100
                h.register(off, broker=broker, be=bes[broker], fenced=rnd.choice([False, True]), t=t)
            else:
                h.ev("request_fetch", 1, "request", t=t - rnd.choice([0.1, 0.8, 1.5]), topic="orders", partition=0,
                     replica_id=broker, offset=100, high_watermark=rnd.choice([90, 100, 110]),
                     broker_epoch=rnd.choice([None, bes[broker], bes[broker] - 100]))
                h.md("md_other", off, t=t)
            off += 1
    if rnd.random() < 0.8:
        h.ev("request_produce", 1, "request", t=t + 5, topic="orders", partition=0, error="NONE")
    return h


def _compare(spark, histories, spark_checks, model_check):
    rows = [r for h in histories for r in h.rows]
    events = to_df(spark, rows)
    config = CheckConfig()
    # materialised, as the pipeline reads silver from its tables: lazily built silver subtrees
    # repeated inside every check made plans of tens of thousands of nodes
    ctx = check_context(events, {name: fn(events, config).localCheckpoint() for name, fn in SILVER_BUILDERS.items()})
    out = violations_of(SPECS[spark_checks[0]], ctx)
    for invariant in spark_checks[1:]:
        out = out.unionByName(violations_of(SPECS[invariant], ctx))
    got = sorted((key_of(r.asDict()), tuple(r["evidence"])) for r in out.collect())
    release_spark_memory(spark)  # each example's frames, caches and broadcasts go with it
    want = sorted((key_of(v), tuple(v["evidence"])) for v in model_check(rows, ctx.config))
    assert got == want
    return got


@SETTINGS
@given(SEEDS)
def test_stop_replica_checks_match_model(spark, seeds):
    _compare(spark, [zk_history(s) for s in seeds], ["stale_stop_replica_accepted", "stale_controller_epoch_accepted"],
             stop_replica.check)


@SETTINGS
@given(SEEDS)
def test_isr_checks_match_model(spark, seeds):
    _compare(spark, [kraft_history(s) for s in seeds], ["fenced_replica_in_isr", "last_replica_fenced_in_isr", "stale_broker_epoch_isr_join"],
             isr_membership.check)


def test_generators_produce_violations_of_every_kind(spark):
    """Guard: the random histories must exercise every invariant, or the comparison proves little."""
    seeds = list(range(30))
    got = _compare(spark, [zk_history(s) for s in seeds], ["stale_stop_replica_accepted",
                                                            "stale_controller_epoch_accepted"], stop_replica.check)
    got += _compare(spark, [kraft_history(s) for s in seeds], ["fenced_replica_in_isr", "last_replica_fenced_in_isr", "stale_broker_epoch_isr_join"],
                    isr_membership.check)
    kinds = {k[0] for k, _ in got}
    assert kinds >= {"stale_stop_replica_accepted", "stale_controller_epoch_accepted", "fenced_replica_in_isr",
                     "last_replica_fenced_in_isr", "stale_broker_epoch_isr_join"}, kinds
