"""``stale_broker_epoch_isr_join``: rules and must-NOT-flag cases (scenarios: ``cases_isr.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from epoch_audit.gold.analysis.isr_joins import rejected_isr_joins
from tests.unit.invariants.cases_isr import _id, _of


@pytest.fixture
def results(isr_results):
    return isr_results


def test_rule1_epoch_mismatch(results):
    (v,) = _of(results, "rule1_epoch_mismatch")
    assert (v["invariant"], v["confidence"], v["broker_id"]) == ("stale_broker_epoch_isr_join", "confirmed", 3)
    assert _id("rule1_epoch_mismatch", "request_alter_partition") in v["evidence"]
    assert "broker epoch 30" in v["explanation"] and "was 40" in v["explanation"]


@pytest.mark.parametrize("cluster", [
    "rule1_unknown_epoch", "rule1_matching_epoch", "rule2_new_incarnation_caught_up",
    "rule2_untagged_fetch_after_skew", "rule2_leader_log_stops", "rule2_never_caught_up",
    "drop_and_readd_in_one_batch", "rule2_vouched_by_alter_partition", "rule2_caught_up_in_incremental_session",
])
def test_isr_join_must_not_flag(results, cluster):
    assert _of(results, cluster) == []


@pytest.mark.parametrize(("cluster", "confidence"), [
    ("rule2_confirmed", "confirmed"), ("rule2_suspected", "suspected"), ("rule2_old_epoch_fetch", "confirmed"),
    ("rule2_new_fetch_within_skew_after_commit", "suspected"), ("rule2_unchecked_epoch_alter_partition", "confirmed"),
    ("rule2_omitted_but_never_caught_up", "confirmed"),
])
def test_rule2_stale_catch_up(results, cluster, confidence):
    (v,) = _of(results, cluster)
    assert (v["invariant"], v["confidence"], v["broker_id"]) == ("stale_broker_epoch_isr_join", confidence, 3)
    assert _id(cluster, "request_fetch") in v["evidence"]
    assert _id(cluster, "md_register_broker", broker_epoch=40) in v["evidence"]


def test_rejected_isr_joins_are_counted_not_reported(spark):
    """Spec: rejected joins (INELIGIBLE_REPLICA) are the system working, counted in the run summary."""
    rejected = "controller_alter_partition_rejected"
    rows = [
        ("c1", rejected, "INELIGIBLE_REPLICA", {"reason": "broker epoch mismatch: requested=450 VS expected=470"}),
        ("c1", rejected, "INELIGIBLE_REPLICA", {"reason": "broker epoch mismatch: requested=479 VS expected=488"}),
        ("c1", rejected, "INELIGIBLE_REPLICA", {"reason": "fenced"}),
        ("c1", rejected, "FENCED_LEADER_EPOCH", {}),  # another rejection, not an ineligible join
        ("c2", rejected, "INELIGIBLE_REPLICA", {"reason": "not in live brokers"}),
        ("c2", "request_alter_partition", "INELIGIBLE_REPLICA", {}),  # the leader's side of one of them
    ]
    events = spark.createDataFrame(rows, "cluster_id string, event_type string, error string, details map<string,string>")
    counts = {(r["cluster_id"], r["reason"]): r["count"] for r in rejected_isr_joins(events).collect()}
    assert counts == {("c1", "broker_epoch_mismatch"): 2, ("c1", "fenced"): 1, ("c2", "not in live brokers"): 1}


def test_carry_without_partition_records_skips_only_the_probes(spark):
    """Over events without KRaft partition records (no join), the carry told so (``absent_types``)
    keeps exactly what the whole carry keeps: the last fetch per key, the leaders' last lines."""
    from epoch_audit.gold.context import CheckConfig, check_context
    from epoch_audit.gold.invariants.stale_broker_epoch_isr_join import carry
    from epoch_audit.silver.partition_timeline import KRAFT_PARTITION_TYPES
    from tests.builders.controller_events import to_df
    from tests.builders.silver import TIMELINE_TABLES
    from tests.unit.invariants.cases_isr import SCENARIOS

    rows = [r for h in SCENARIOS.values() for r in h.rows if r["event_type"] not in KRAFT_PARTITION_TYPES]
    events = to_df(spark, rows)
    silver = {name: TIMELINE_TABLES[name](events, CheckConfig()).localCheckpoint()
              for name in ("partition_timeline", "broker_registrations")}  # what the carry reads
    whole = {r["event_id"] for r in carry(check_context(events, silver)).collect()}
    told = {r["event_id"] for r in carry(check_context(events, silver, absent_types=frozenset(KRAFT_PARTITION_TYPES)))
            .collect()}
    assert told == whole
    assert {r["event_type"] for r in rows if r["event_id"] in whole} >= {"request_fetch"}


def test_check_and_carry_share_one_probe_computation(spark, monkeypatch):
    """The check and its carry read the joins' fetch probes and the caught-up fetches: one context
    builds each once (``CheckContext.shared``), and the answers are those of a context that builds
    them anew for every reader."""
    from epoch_audit.gold.analysis import isr_joins as analysis
    from epoch_audit.gold.context import CheckConfig, check_context
    from epoch_audit.gold.invariants.stale_broker_epoch_isr_join import carry, check
    from tests.builders.controller_events import to_df
    from tests.builders.silver import TIMELINE_TABLES
    from tests.unit.invariants.cases_isr import SCENARIOS

    events = to_df(spark, [r for h in SCENARIOS.values() for r in h.rows])
    silver = {name: TIMELINE_TABLES[name](events, CheckConfig()).localCheckpoint()
              for name in ("partition_timeline", "broker_registrations")}
    built = []
    probes, fetches = analysis.probe_times, analysis.caught_up_fetches
    monkeypatch.setattr(analysis, "probe_times", lambda *a: built.append("probes") or probes(*a))
    monkeypatch.setattr(analysis, "caught_up_fetches", lambda *a: built.append("fetches") or fetches(*a))

    ctx = check_context(events, silver)
    found = sorted(map(tuple, check(ctx).collect()))
    kept = {r["event_id"] for r in carry(ctx).collect()}
    assert sorted(built) == ["fetches", "probes"]
    assert found and kept

    fresh = check_context(events, silver)  # a context whose every reader builds its own analysis
    object.__setattr__(fresh, "shared", lambda build, checks=1: build(fresh))
    assert sorted(map(tuple, check(fresh).collect())) == found
    assert {r["event_id"] for r in carry(fresh).collect()} == kept
    assert built.count("probes") == 3  # the check once, the carry once: the sharing was real


def test_probes_of_compacted_fetches_are_the_as_of_over_every_fetch(spark):
    """The probes read the caught-up fetches compacted by minute and by the stretches between probe
    times (``probe_times``): each answer must still be the largest (time, event id, replica epoch) of
    every fetch of its place and topic key at or before the probe, as a scan of every fetch finds it.
    Random fetches over three minutes with tied times, probes at fetch times and between them, in
    minutes of their own and in busy ones, topics by id, by name or both."""
    import datetime as dt
    import random

    from epoch_audit.gold.analysis.isr_joins import fetch_probes

    rng = random.Random(7)
    start = dt.datetime(2024, 3, 5, 10, 0, 0)

    def at(ms: int) -> dt.datetime:
        return start + dt.timedelta(milliseconds=ms)

    topics = [("t", "id-t"), ("t", None), (None, "id-t")]
    fetches = []
    for n in range(600):
        ms = rng.randrange(0, 180_000) if n % 7 else fetches[-1][7] if fetches else 0
        topic, topic_id = rng.choice(topics)
        fetches.append(("c", rng.choice([1, 2]), rng.choice([2, 3]), topic, topic_id, rng.choice([0, 1]),
                        rng.choice([None, 10, 11]), ms, f"f{n:04d}"))
    joins = []
    for n in range(40):
        # every third join at a fetch's own time and place (that fetch counts, the next one of its
        # kind 250 ms later does not), the others anywhere
        fetch = rng.choice(fetches)
        _, leader, replica, topic, topic_id, partition, _, ms, _ = fetch
        if n % 3 == 0:
            fetches.append((*fetch[:7], ms + 250, f"g{n:03d}"))
        else:
            ms, leader, replica, partition = rng.randrange(-5_000, 200_000), *rng.choices([1, 2, 3], k=3)
            partition, (topic, topic_id) = partition % 2, rng.choice(topics)
        joins.append((f"j{n:03d}", replica, "c", leader, partition, topic_id, topic, ms, rng.choice([None, 10, 11]),
                      at(ms - 3_000)))
    fetch_df = spark.createDataFrame(
        [(*f[:7], at(f[7]), f[8]) for f in fetches],
        "f_cluster string, f_leader int, f_replica int, f_topic string, f_topic_id string, f_partition int, "
        "f_be int, f_time timestamp, f_event_id string",
    )
    join_df = spark.createDataFrame(
        [(*j[:7], at(j[7]), *j[8:]) for j in joins],
        "_join_id string, replica int, cluster_id string, leader int, partition int, topic_id string, topic string, "
        "event_time timestamp, registered_be int, registered_at_time timestamp",
    )
    got = sorted(
        (r["_join_id"], r["replica"], r["_kind"], *(None if r[w] is None else r[w]["f_event_id"] for w in "_F _S _N".split()))
        for r in fetch_probes(join_df, fetch_df, 1.0).collect()
    )

    def keys(topic, topic_id):
        return {k for k in (topic_id and f"i:{topic_id}", topic and f"n:{topic}") if k}

    def last(rows):  # a struct orders a null epoch first
        return max(rows, key=lambda f: (f[7], f[8], -1 if f[6] is None else f[6]))[8] if rows else None

    expected = []
    for join_id, replica, _, leader, partition, topic_id, topic, ms, be, _ in joins:
        for kind, upto in ((1, ms), (2, ms + 1_000)):
            for key in keys(topic, topic_id):
                seen = [f for f in fetches if (f[1], f[2], f[5]) == (leader, replica, partition)
                        and key in keys(f[3], f[4]) and f[7] <= upto]
                if seen:
                    expected.append((join_id, replica, kind, last(seen),
                                      last([f for f in seen if be is not None and f[6] == be]),
                                      last([f for f in seen if f[6] is None])))
    assert len(expected) > 40 and any(e[4] for e in expected) and any(e[5] for e in expected)
    assert got == sorted(expected)
