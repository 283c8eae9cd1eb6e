"""stale_broker_epoch_isr_join, fenced_replica_in_isr, last_replica_fenced_in_isr: rules and non-cases.

Each scenario is one cluster; the three checks run once over all of them and each scenario's Spark
result must equal the reference model's.
"""

from __future__ import annotations

from epoch_audit_tools.reference_model import isr_membership as model
from epoch_audit_tools.reference_model.model import key_of

from epoch_audit.contracts.violations import CHECK_COLUMNS
from epoch_audit.gold.context import CheckConfig, check_context
from epoch_audit.gold.registry import SPECS, violations_of
from tests.builders.controller_events import History, to_df
from tests.builders.silver import TIMELINE_TABLES as SILVER_BUILDERS

SCENARIOS: dict[str, History] = {}


def scenario(fn):
    h = History(fn.__name__)
    fn(h)
    SCENARIOS[fn.__name__] = h
    return fn


def base(h: History, isr=(1, 2, 3), bes=(10, 20, 30)) -> None:
    """Offsets 0-4: brokers 1-3 registered unfenced, topic orders (T1) partition 0 with ``isr``, leader 1."""
    h.batch(0, 2, t=0)
    for i, be in enumerate(bes):
        h.register(i, broker=i + 1, be=be, t=0)
    h.batch(3, 4, t=1)
    h.topic(3, t=1)
    h.partition(4, leader=1, isr=list(isr), replicas=[1, 2, 3], t=1)


@scenario
def fenced_separate_batch(h):
    base(h)
    h.batch(5, 5, t=2)
    h.reg_change(5, broker=3, be=30, fenced=True, t=2)
    h.batch(6, 6, t=3)
    h.change(6, isr=[1, 2], t=3)


@scenario
def fence_and_remove_same_batch(h):
    base(h)
    h.batch(5, 6, t=2)
    h.reg_change(5, broker=3, be=30, fenced=True, t=2)
    h.change(6, isr=[1, 2], t=2)


@scenario
def controlled_shutdown_in_isr(h):
    base(h)
    h.batch(5, 5, t=2)
    h.reg_change(5, broker=2, be=20, ics=True, t=2)


@scenario
def last_replica(h):
    base(h, isr=(3,))
    h.batch(5, 5, t=2)
    h.reg_change(5, broker=3, be=30, fenced=True, t=2)


@scenario
def episode_spans_isr_changes(h):
    base(h)
    h.batch(5, 5, t=2)
    h.reg_change(5, broker=3, be=30, fenced=True, t=2)
    h.batch(6, 6, t=3)
    h.change(6, isr=[1, 3], t=3)  # 3 stays in: same episode
    h.batch(7, 7, t=4)
    h.change(7, isr=[1], t=4)


@scenario
def fenced_after_topic_removed(h):
    """kraft-1 clicks-0 (data/samples): brokers fenced after RemoveTopicRecord; the partition is gone."""
    base(h)
    h.batch(5, 5, t=2)
    h.remove_topic(5, t=2)
    h.batch(6, 6, t=3)
    h.reg_change(6, broker=3, be=30, fenced=True, t=3)
    h.batch(7, 7, t=4)
    h.reg_change(7, broker=2, be=20, ics=True, t=4)


@scenario
def fenced_then_topic_removed(h):
    base(h)
    h.batch(5, 5, t=2)
    h.reg_change(5, broker=3, be=30, fenced=True, t=2)
    h.batch(6, 6, t=3)
    h.remove_topic(6, t=3)


@scenario
def drop_and_readd_in_one_batch(h):
    """Records inside one batch are not separate moments: 3 leaves and rejoins the ISR inside the
    batch, so the commit point shows no join (an AlterPartition with a wrong BE for 3 is moot)."""
    base(h)
    h.batch(5, 6, t=2)
    h.change(5, isr=[1, 2], t=2)
    h.change(6, isr=[1, 2, 3], t=2)  # partition epoch 2 after the commit
    h.ev("request_alter_partition", 3000, "request", t=2, topic_id="T1", partition=0, partition_epoch=2,
         isr=[1, 2, 3], isr_broker_epochs=[10, 20, 99], error="NONE", api_version=3)


def _join(h: History, t: float = 21, off: int = 6) -> None:
    """Broker 3 re-registers (BE 40) at offset 5, t=20; the ISR [1, 2] -> [1, 2, 3] commits at ``off``."""
    h.batch(5, 5, t=20)
    h.register(5, broker=3, be=40, t=20)
    h.batch(off, off, t=t)
    h.change(off, isr=[1, 2, 3], t=t)  # partition epoch 0 -> 1


def _alter(h: History, be3: int) -> None:
    h.ev("request_alter_partition", 3000, "request", t=21, topic_id="T1", partition=0, partition_epoch=1,
         isr=[1, 2, 3], isr_broker_epochs=[10, 20, be3], error="NONE", api_version=3)


@scenario
def rule1_epoch_mismatch(h):
    base(h, isr=(1, 2))
    _join(h)
    _alter(h, 30)


@scenario
def rule1_unknown_epoch(h):
    base(h, isr=(1, 2))
    _join(h)
    _alter(h, -1)


@scenario
def rule1_matching_epoch(h):
    base(h, isr=(1, 2))
    _join(h)
    _alter(h, 40)


def _fetch(h: History, t: float, offset: int = 100, hw: int = 100, be: int | None = None):
    h.ev("request_fetch", 1, "request", t=t, topic="orders", partition=0, replica_id=3, offset=offset,
         high_watermark=hw, broker_epoch=be, api_version=12 if be is None else 15)


def _leader_keeps_logging(h: History) -> None:
    h.ev("request_produce", 1, "request", t=30, topic="orders", partition=0, error="NONE")


@scenario
def rule2_confirmed(h):
    base(h, isr=(1, 2))
    _fetch(h, 10)
    _join(h)
    _leader_keeps_logging(h)


@scenario
def rule2_suspected(h):
    base(h, isr=(1, 2))
    _fetch(h, 19.5)  # 0.5 s before the registration's time on another host: within the skew
    _join(h)
    _leader_keeps_logging(h)


@scenario
def rule2_old_epoch_fetch(h):
    base(h, isr=(1, 2))
    _fetch(h, 19.9, be=30)  # replicaEpoch names the old incarnation: ordered by epochs, confirmed
    _join(h)
    _leader_keeps_logging(h)


@scenario
def rule2_new_fetch_within_skew_after_commit(h):
    base(h, isr=(1, 2))
    _fetch(h, 10)
    _join(h)  # commit at t=21 on the controller's clock
    _fetch(h, 21.4, be=40)  # the new incarnation caught up 0.4 s later on the leader's clock
    _leader_keeps_logging(h)


@scenario
def rule2_new_incarnation_caught_up(h):
    base(h, isr=(1, 2))
    _fetch(h, 10)
    _fetch(h, 20.2, be=40)
    _join(h)
    _leader_keeps_logging(h)


@scenario
def rule2_untagged_fetch_after_skew(h):
    base(h, isr=(1, 2))
    _fetch(h, 10)
    _fetch(h, 20.5, offset=90)  # not caught up
    _fetch(h, 21.2)  # caught up, > 1 s after the registration: the new incarnation
    _join(h, t=22)
    _leader_keeps_logging(h)


def _session_fetch(h: History, t: float, offset: int, hw: int | None, session_epoch: int, error: str | None = "0"):
    """A fetch of an incremental session (KIP-227): ``hw`` None = the partition left out of the response."""
    details = {"session_id": "77", "session_epoch": str(session_epoch), "in_request": "true", "fetcher": "replica"}
    if hw is not None:
        details["error_code"] = error
    h.ev("request_fetch", 1, "request", t=t, topic="orders", partition=0, replica_id=3, offset=offset,
         high_watermark=hw, api_version=12, details=details)


@scenario
def rule2_caught_up_in_incremental_session(h):
    """Kafka lab, KRaft 3.4: the restarted broker fetched the rest of the log, then, caught up, fetched again with
    nothing new: the session's response left the partition out (its high watermark unchanged, 100)."""
    base(h, isr=(1, 2))
    _fetch(h, 10)
    _session_fetch(h, 20.1, offset=90, hw=100, session_epoch=0)  # the new incarnation's full fetch
    _session_fetch(h, 21.3, offset=100, hw=None, session_epoch=1)  # > skew after the registration
    _join(h, t=22)
    _leader_keeps_logging(h)


@scenario
def rule2_omitted_but_never_caught_up(h):
    base(h, isr=(1, 2))
    _fetch(h, 10)
    _session_fetch(h, 20.1, offset=90, hw=100, session_epoch=0)
    _session_fetch(h, 21.3, offset=95, hw=None, session_epoch=1)  # left out, but still behind
    _session_fetch(h, 21.5, offset=100, hw=None, session_epoch=0)  # a full fetch without its partition: no answer
    _join(h, t=22)
    _leader_keeps_logging(h)


@scenario
def rule2_vouched_by_alter_partition(h):
    """Kafka lab, KRaft 3.9: the restarted broker's caught-up fetches after its registration ran in an incremental
    fetch session that named no partition; the leader's AlterPartition carried the registered epoch it took from them."""
    base(h, isr=(1, 2))
    _fetch(h, 10)
    _join(h)
    _alter(h, 40)
    _leader_keeps_logging(h)


@scenario
def rule2_unchecked_epoch_alter_partition(h):
    base(h, isr=(1, 2))
    _fetch(h, 10)
    _join(h)
    _alter(h, -1)  # "not checked": rule 2 decides
    _leader_keeps_logging(h)


@scenario
def rule2_leader_log_stops(h):
    base(h, isr=(1, 2))
    _fetch(h, 10)
    _join(h)


@scenario
def rule2_never_caught_up(h):
    base(h, isr=(1, 2))
    _fetch(h, 10, offset=90)
    _join(h)
    _leader_keeps_logging(h)


def family_results(spark):
    rows = [r for h in SCENARIOS.values() for r in h.rows]
    events = to_df(spark, rows)
    config = CheckConfig()
    # materialised, as the pipeline reads silver from its tables: lazily built silver subtrees
    # repeated inside every check made plans of tens of thousands of nodes
    ctx = check_context(events, {name: fn(events, config).localCheckpoint() for name, fn in SILVER_BUILDERS.items()})
    out = (
        violations_of(SPECS["fenced_replica_in_isr"], ctx)
        .unionByName(violations_of(SPECS["last_replica_fenced_in_isr"], ctx))
        .unionByName(violations_of(SPECS["stale_broker_epoch_isr_join"], ctx))
    )
    assert out.columns == CHECK_COLUMNS
    return [r.asDict() for r in out.collect()], model.check(rows, ctx.config)


def _of(results, cluster):
    spark_rows, model_rows = results
    s = [r for r in spark_rows if r["cluster_id"] == cluster]
    m = [r for r in model_rows if r["cluster_id"] == cluster]
    assert sorted(map(key_of, s)) == sorted(map(key_of, m)), "Spark and the reference model disagree"
    assert sorted(tuple(r["evidence"]) for r in s) == sorted(tuple(r["evidence"]) for r in m)
    return s


def _id(cluster, event_type, **match):
    return next(r["event_id"] for r in SCENARIOS[cluster].rows if r["event_type"] == event_type
                and all(r[k] == v for k, v in match.items()))


