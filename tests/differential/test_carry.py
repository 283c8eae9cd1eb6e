"""Carried traffic (epoch_audit.gold.carry): every check over a nightly run's input (state events, traffic
from the horizon on, the carried traffic) answers exactly as over the whole history.

Histories: the differential generators (ZK requests, KRaft metadata logs with registrations, ISR
joins and caught-up fetches, ZK controller decisions with produces after moves, Redpanda terms,
snapshot-cut and holed metadata logs). Two successive horizons: the first carry is taken from the
whole history (a night that read everything), the second from the first windowed input (a night
that read the carry), as the pipeline chains them.
"""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from epoch_audit.bronze.own_time import with_file_own_time
from epoch_audit.contracts.events import TRAFFIC_TYPES
from epoch_audit.contracts.violations import CHECK_COLUMNS
from epoch_audit.gold.analysis.isr_joins import caught_up_fetches
from epoch_audit.gold.carry import anchor_fingerprints, carried_events, windowed
from epoch_audit.gold.context import CheckConfig, CheckContext, check_context
from epoch_audit.gold.registry import REGISTRY, found_violations
from tests.builders.controller_events import BASE, History, to_df
from tests.builders.silver import BROKER_VIEW_TABLES, TIMELINE_TABLES
from tests.differential.test_whole_model import _histories
from tests.helpers import release_spark_memory

SEEDS = [11, 23, 37, 41]
# in seconds after BASE (the histories' traffic lies between 0 and ~30 s): nights deliver what is
# timed before T1, T2, then everything; their carries are taken for horizons H1, H2
T1, H1, T2, H2 = 6.0, 4.0, 11.0, 9.0


def _three_brokers(h: History, leader: int) -> None:
    """Brokers 1-3 registered (broker epochs 10, 20, 30) at metadata offsets 0-2, topic ``orders``
    (id T1) at 3, and its partition 0 at 4 (t = 0.5 s) with ``leader`` and every broker in the ISR."""
    h.batch(0, 3, t=0)
    for i, be in {1: 10, 2: 20, 3: 30}.items():
        h.register(i - 1, broker=i, be=be, t=0)
    h.topic(3, t=0)
    h.batch(4, 4, t=0.5)
    h.partition(4, leader=leader, isr=[1, 2, 3], t=0.5)


def straddling_history(seed: int) -> History:
    """A KRaft cluster whose violations stand on traffic on both sides of the horizons.

    Leadership moves from broker 1 to 3 early, and broker 1 keeps answering PRODUCE OK before and
    after both horizons (write_accepted_by_fenced_leader: one row citing the first produce and
    counting them all). Broker 2's only caught-up fetch to leader 3 (old incarnation) comes early;
    it leaves the ISR, registers again and rejoins later without a fetch of the new incarnation
    (stale_broker_epoch_isr_join, rule 2, citing the early fetch). Broker 1's fetches keep the
    leader's request log going. The seed moves each event around the horizons.
    """
    rnd = random.Random(seed)
    h = History(f"straddle-{seed}")
    jitter = [rnd.uniform(-1.5, 1.5) for _ in range(8)]
    _three_brokers(h, leader=1)
    h.batch(5, 5, t=1)
    h.change(5, leader=3, isr=[1, 2, 3], t=1)  # broker 1 moved away
    h.ev("request_fetch", 3, "request", t=2.5 + jitter[0], topic="orders", partition=0, replica_id=2, offset=100,
         high_watermark=100, broker_epoch=rnd.choice([20, None]))
    h.batch(6, 6, t=5 + jitter[1])
    h.change(6, isr=[1, 3], t=5 + jitter[1])
    h.batch(7, 7, t=7 + jitter[2])
    h.register(7, broker=2, be=120, fenced=False, t=7 + jitter[2])
    h.batch(8, 8, t=12 + jitter[3])
    h.change(8, isr=[1, 2, 3], t=12 + jitter[3])  # broker 2 rejoins on its old fetch
    for k, t in enumerate((3.5, 6.0, 10.0, 15.0)):
        h.ev("request_produce", 1, "request", t=t + jitter[4 + k] / 3, topic="orders", partition=0, error="NONE")
    for t in range(1, 20, 3):
        h.ev("request_fetch", 3, "request", t=t + 0.4, topic="orders", partition=0, replica_id=1, offset=90,
             high_watermark=100, broker_epoch=10)
    return h


def reincarnating_history(seed: int) -> History:
    """A KRaft cluster whose broker 2 registers twice before the second horizon and fetches under
    each epoch (and the first incarnation once more after the newest): the ISR check's carry for H2
    keeps the last fetch and the newest epoch's last, and drops the middle epoch's.
    After H2 broker 2 leaves the ISR and rejoins on a fetch of its registered epoch (no violation),
    leaves again, registers once more and rejoins without fetching (rule 2, citing the carried fetch).
    Broker 1's fetches keep the leader's request log going. The seed moves the events around H1."""
    rnd = random.Random(seed)
    h = History(f"reincarnate-{seed}")
    jitter = [rnd.uniform(-0.8, 0.8) for _ in range(4)]

    def fetch(replica: int, be: int, t: float, offset: int = 100) -> None:
        h.ev("request_fetch", 3, "request", t=t, topic="orders", partition=0, replica_id=replica, offset=offset,
             high_watermark=100, broker_epoch=be)

    _three_brokers(h, leader=3)
    fetch(2, 20, 1.0)
    h.batch(5, 5, t=1.5)
    h.register(5, broker=2, be=35, fenced=False, t=1.5)
    fetch(2, 35, 2.2 + jitter[0] / 2)
    h.batch(6, 6, t=3 + jitter[1])
    h.register(6, broker=2, be=50, fenced=False, t=3 + jitter[1])
    for t in (4.2 + jitter[2], 5.5 + jitter[3]):
        fetch(2, 50, t)
    fetch(2, 20, 6.8)  # the first incarnation still fetching: the last fetch is not the newest epoch's
    # leaves, rejoins on its epoch-50 fetch (no violation), leaves again
    for offset, t, isr in ((7, 12, [1, 3]), (8, 14, [1, 2, 3]), (9, 16, [1, 3])):
        h.batch(offset, offset, t=t)
        h.change(offset, isr=isr, t=t)
    h.batch(10, 10, t=17)
    h.register(10, broker=2, be=90, fenced=False, t=17)
    h.batch(11, 11, t=19)
    h.change(11, isr=[1, 2, 3], t=19)  # rejoins registered under epoch 90, never fetched with it
    for t in range(1, 26, 3):
        fetch(1, 10, t + 0.3, offset=90)
    return h


def _ctx(events: DataFrame, carry_horizons: dict[str, int] | None = None) -> CheckContext:
    config = CheckConfig()
    builders = {**TIMELINE_TABLES, **BROKER_VIEW_TABLES}
    silver = {name: fn(events, config).localCheckpoint() for name, fn in builders.items()}
    return check_context(events, silver, carry_horizons=carry_horizons)


def _answers(ctx: CheckContext) -> list[tuple]:
    rows = found_violations(ctx).select(*CHECK_COLUMNS).collect()
    return sorted((tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in rows), key=str)


def _horizons(spark, events: DataFrame, seconds: float) -> DataFrame:
    clusters = [r["cluster_id"] for r in events.select("cluster_id").distinct().collect()]
    at = BASE + timedelta(seconds=seconds)
    return spark.createDataFrame([(c, at) for c in clusters], "cluster_id string, horizon timestamp")


def _horizon_micros(events: DataFrame, seconds: float) -> dict[str, int]:
    """{cluster: horizon} as :func:`_horizons`, in epoch microseconds (what ``carried_events`` takes)."""
    clusters = [r["cluster_id"] for r in events.select("cluster_id").distinct().collect()]
    at = BASE + timedelta(seconds=seconds)
    return {c: TimestampType().toInternal(at) for c in clusters}  # as createDataFrame reads ``at``


@pytest.fixture(scope="module")
def whole(spark):
    histories = (_histories(SEEDS) + [straddling_history(s) for s in range(6)]
                 + [reincarnating_history(s) for s in range(3)])
    rows = [r for h in histories for r in h.rows]
    events = with_file_own_time(to_df(spark, rows), {}).localCheckpoint()
    ctx = _ctx(events)
    yield events, ctx, _answers(ctx)
    release_spark_memory(spark)


def _delivered(events: DataFrame, seconds: float) -> DataFrame:
    """What the collector delivered by BASE + seconds (untimed events: from the first night)."""
    return events.where(F.col("event_time").isNull() | (F.col("event_time") < F.lit(BASE + timedelta(seconds=seconds))))


def test_windowed_checks_answer_as_the_whole_history(spark, whole):
    """Three nights: T1, T2 delivered, then everything. Night 1 reads all it has and carries for
    H1 < T1; night 2 reads its traffic from H1 on plus that carry and carries for H2 < T2; night 3
    reads from H2 on plus the second carry. Each night answers as one run over what it has. Joins
    and produces that arrive after a carry was taken need its "last per key" part, not only the
    events the answers of its night stood on."""
    events, full_ctx, want = whole
    assert want, "the histories hold violations"
    traffic = events.where(F.col("event_type").isin(*TRAFFIC_TYPES))

    night1 = _delivered(events, T1).localCheckpoint()
    ctx1 = _ctx(night1, _horizon_micros(events, H1))
    carry1 = carried_events(ctx1, REGISTRY, _horizon_micros(events, H1)).localCheckpoint()

    upto2 = _delivered(events, T2).localCheckpoint()
    whole2 = _ctx(upto2)  # silver as the pipeline builds it: from every state event delivered
    night2 = windowed(upto2, _horizons(spark, events, H1)).unionByName(carry1)
    ctx2 = CheckContext(events=night2, silver=dict(whole2.silver), carry_horizons=_horizon_micros(events, H2))
    assert _answers(ctx2) == _answers(whole2)

    carry2 = carried_events(ctx2, REGISTRY, _horizon_micros(events, H2)).localCheckpoint()
    carried_ids = {r["event_id"] for r in carry2.select("event_id").collect()}
    # the ISR check's carry left out some of the last caught-up fetches of an epoch before the
    # horizon: those of epochs no later join can be registered under
    before_h2 = caught_up_fetches(night2).where(F.col("f_time") < F.lit(BASE + timedelta(seconds=H2)))
    per_epoch = Window.partitionBy(
        "f_cluster", "f_leader", "f_replica", "f_partition", "f_topic", "f_topic_id", "f_be"
    ).orderBy(F.desc("f_time"), F.desc("f_event_id"))
    last_of_epoch = {
        r["f_event_id"]
        for r in before_h2.withColumn("_rn", F.row_number().over(per_epoch)).where("_rn = 1").collect()
    }
    assert last_of_epoch - carried_ids, "no epoch's fetches left out"
    night3 = windowed(events, _horizons(spark, events, H2)).unionByName(carry2)
    assert _answers(CheckContext(events=night3, silver=dict(full_ctx.silver))) == want

    # not trivial: the windowed inputs leave old traffic out, and answers cite carried events
    before2 = traffic.where(F.col("event_time") < F.lit(BASE + timedelta(seconds=H2))).count()
    assert 0 < carry2.count() < before2, (carry2.count(), before2)
    ev = CHECK_COLUMNS.index("evidence")
    for invariant in ("stale_broker_epoch_isr_join", "write_accepted_by_fenced_leader"):
        rows = [r for r in want if r[0] == invariant]
        assert any(set(r[ev]) & carried_ids for r in rows), f"no {invariant} stands on carried traffic"
    # the rejoin after a registration without a fetch stands on a fetch of the epoch carried for H2
    cluster = CHECK_COLUMNS.index("cluster_id")
    rejoins = [r for r in want if r[0] == "stale_broker_epoch_isr_join" and r[cluster].startswith("reincarnate-")]
    assert len(rejoins) == 3 and all(set(r[ev]) & carried_ids for r in rejoins), rejoins


def test_anchor_fingerprint_sees_a_changed_past_only(spark, whole):
    events, full_ctx, _ = whole
    h1, h2 = _horizon_micros(events, H1), _horizon_micros(events, H2)

    def at_h1(ctx: CheckContext) -> dict[str, str]:
        return {c: fp for (c, h), fp in anchor_fingerprints(ctx, {c: [h] for c, h in h1.items()}).items()}

    base = at_h1(full_ctx)
    assert any(fp != "empty" for fp in base.values())
    # more history after the horizon: same fingerprints (a nightly run's normal case)
    later = events.where(
        F.col("event_time").isNull() | (F.col("event_time") < F.lit(BASE + timedelta(seconds=H2)))
    ).localCheckpoint()
    assert at_h1(check_context(later)) == base
    # two horizons in one query: each as if asked alone, and a later horizon digests more rows
    both = anchor_fingerprints(full_ctx, {c: [h1[c], h2[c]] for c in h1})
    assert {c: both[(c, h1[c])] for c in h1} == base
    assert any(both[(c, h2[c])] != base[c] for c in h1)
    assert {c: fp for (c, _), fp in anchor_fingerprints(full_ctx, {c: [h2[c]] for c in h1}).items()} == {
        c: both[(c, h2[c])] for c in h1}
    # a held epoch before the horizon changed (a late state-change line): that cluster's changes
    victim = (
        full_ctx.silver["broker_leader_epochs"]
        .where(F.col("event_time") < F.lit(BASE + timedelta(seconds=H1)))
        .select("cluster_id", "event_id")
        .orderBy("event_id")
        .first()
    )
    changed = events.withColumn(
        "leader_epoch",
        F.when(F.col("event_id") == victim["event_id"], F.col("leader_epoch") + 100).otherwise(F.col("leader_epoch")),
    )
    now = at_h1(check_context(changed))
    assert {c for c in base if now[c] != base[c]} == {victim["cluster_id"]}


def test_ingest_drops_the_carry_of_a_cluster_whose_old_traffic_arrives(spark, tmp_path):
    from epoch_audit.lake.storage import DeltaRsStorage
    from epoch_audit.stages.carry import CARRY_TABLE, carried_horizons, drop_outdated_carries

    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    at = BASE + timedelta(hours=1)
    marker = "cluster_id string, event_id string, event_type string, carry_horizon_micros long, carry_fingerprint string"
    # the same conversion as the events' times (PySpark reads naive datetimes in local time)
    micros = spark.createDataFrame([(at,)], "t timestamp").select(F.unix_micros("t")).first()[0]
    storage.append(CARRY_TABLE, spark.createDataFrame(
        [(c, f"carry_horizon|{c}", "carry_horizon", micros, "fp") for c in ("a", "b", "c")], marker
    ))
    h = {c: History(c) for c in ("a", "b", "c")}
    h["a"].ev("request_fetch", 1, "request", t=3600 - 5)  # old traffic: a's carry no longer holds
    h["b"].ev("request_produce", 1, "request", t=3600 + 5)  # new traffic
    h["c"].ev("become_leader", 1, t=0)  # old state: the anchor fingerprint decides, not ingest
    events = to_df(spark, [r for x in h.values() for r in x.rows])
    assert drop_outdated_carries(storage, events) == ["a"]
    assert sorted(carried_horizons(storage)) == ["b", "c"]


def test_a_carry_without_a_bronze_column_counts_as_none(spark, tmp_path):
    from epoch_audit.lake.storage import DeltaRsStorage
    from epoch_audit.stages.carry import CARRY_TABLE, EVENTS_TABLE, carried_horizons

    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    marker = "cluster_id string, event_id string, event_type string, carry_horizon_micros long, carry_fingerprint string"
    storage.append(CARRY_TABLE, spark.createDataFrame([("a", "carry_horizon|a", "carry_horizon", 1, "fp")], marker))
    storage.append(EVENTS_TABLE, spark.createDataFrame([("e1", "a", "x")], "event_id string, cluster_id string, event_type string"))
    assert carried_horizons(storage) == {"a": (1, "fp")}
    # bronze gained a column the carry was written without (a newer build): no carry until rewritten
    storage.overwrite(EVENTS_TABLE, spark.createDataFrame(
        [("e1", "a", "x", 1)], "event_id string, cluster_id string, event_type string, extra int"))
    assert carried_horizons(storage) == {}
