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
    probes, fetches = analysis.fetch_probes, analysis.caught_up_fetches
    monkeypatch.setattr(analysis, "fetch_probes", lambda *a: built.append("probes") or probes(*a))
    monkeypatch.setattr(analysis, "caught_up_fetches", lambda *a: built.append("fetches") or fetches(*a))

    ctx = check_context(events, silver)
    found = sorted(map(tuple, check(ctx).collect()))
    kept = {r["event_id"] for r in carry(ctx).collect()}
    assert sorted(built) == ["fetches", "probes"]
    assert found and kept

    fresh = check_context(events, silver)  # a context whose every reader builds its own analysis
    object.__setattr__(fresh, "shared", lambda build: build(fresh))
    assert sorted(map(tuple, check(fresh).collect())) == found
    assert {r["event_id"] for r in carry(fresh).collect()} == kept
    assert built.count("probes") == 3  # the check once, the carry once: the sharing was real
