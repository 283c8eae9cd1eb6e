"""The invariant registry is the one list of invariants: every id is a spec id, once, with a valid
severity, its own module, test file and docs section; a check reads traffic exactly when it carries.
The partition timeline contract matches what the timeline builder writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from epoch_audit.contracts.violations import SEVERITIES
from epoch_audit.gold.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
GOLD = ROOT / "src" / "epoch_audit" / "gold"
SPEC_PLACES = (ROOT / "shared" / "spec" / "invariants.md", Path("/work/shared/spec/invariants.md"))
# a few bronze columns: what the registry asks of the events about their types and kinds
FRAME = "event_type string, replica_id int, high_watermark bigint"
IDS = [spec.id for spec in REGISTRY]


def spec_ids() -> set[str]:
    """Ids the spec defines: its ``### `id` `` headings and the ids it adds in prose ("Also flag
    `id`", "Related: `id`", "report `id` instead")."""
    spec = next((p for p in SPEC_PLACES if p.is_file()), None)
    if spec is None:
        pytest.skip("the spec (shared/spec/invariants.md) is not on this machine")
    text = spec.read_text()
    pattern = r"^### `([a-z_]+)`|(?:flag|Related:|report)\s+`([a-z_]+)`"
    return {a or b for a, b in re.findall(pattern, text, re.M)}


def test_ids_are_spec_ids_and_unique():
    assert len(IDS) == len(set(IDS))
    assert set(IDS) <= spec_ids()


@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
def test_each_invariant_has_module_test_and_docs(spec):
    assert spec.severity in SEVERITIES
    assert (GOLD / "invariants" / f"{spec.id}.py").is_file()
    assert spec.check.__module__ == f"epoch_audit.gold.invariants.{spec.id}"
    assert (ROOT / "tests" / "unit" / "invariants" / f"test_{spec.id}.py").is_file()
    headings = (ROOT / "docs" / "invariants.md").read_text().splitlines()
    assert f"### `{spec.id}`" in headings


@pytest.mark.parametrize("spec", REGISTRY, ids=IDS)
def test_reads_traffic_exactly_when_it_carries(spec):
    assert spec.reads_traffic == (spec.carry is not None)


def test_timeline_schema_is_what_the_builder_writes(spark):
    from epoch_audit.contracts.events import EVENT_SCHEMA
    from epoch_audit.contracts.silver import TIMELINE_SCHEMA
    from epoch_audit.gold.context import CheckConfig
    from epoch_audit.silver.partition_timeline import partition_timeline

    built = partition_timeline(spark.createDataFrame([], EVENT_SCHEMA), CheckConfig()).schema
    assert [(f.name, f.dataType) for f in built.fields] == [(f.name, f.dataType) for f in TIMELINE_SCHEMA.fields]


GATED = [spec for spec in REGISTRY if spec.needs]


@pytest.mark.parametrize("spec", GATED, ids=[spec.id for spec in GATED])
def test_needs_hold_in_the_reference_model(spec):
    """A check's ``needs`` are necessary in the pure-Python reference model (an independent reading):
    on generated histories every violation of the invariant is in a cluster holding one of those
    event types, and none is left once the cluster's events of those types are removed. Pure Python."""
    from epoch_audit_tools.reference_model import check_history

    from epoch_audit.gold.context import CheckConfig
    from epoch_audit.gold.registry import can_find
    from tests.differential.test_whole_model import _histories

    found = 0
    for history in _histories(list(range(24))):
        mine = [v for v in check_history(history.rows, CheckConfig()) if v["invariant"] == spec.id]
        found += len(mine)
        assert not mine or can_find(spec, {r["event_type"] for r in history.rows}), history.cluster_id
        if mine:
            without = [r for r in history.rows if r["event_type"] not in spec.needs]
            assert not [v for v in check_history(without, CheckConfig()) if v["invariant"] == spec.id]
    assert found, f"the generators yield no {spec.id} violation: the test would prove nothing"


def test_can_find():
    from epoch_audit.gold.registry import SPECS, can_find

    stop = SPECS["stale_stop_replica_accepted"]
    assert not can_find(stop, {"become_leader", "md_partition_change"})
    assert can_find(stop, {"become_leader", "request_stop_replica"})
    assert can_find(SPECS["two_leaders_same_epoch"], set())  # no needs: always run


def test_runnable_checks_follow_the_event_types_present(spark):
    from epoch_audit.gold.registry import SPECS
    from epoch_audit.stages.check import absent_event_types, runnable_checks

    def ids(types: list[str]) -> set[str]:
        events = spark.createDataFrame([(t, None, None) for t in types], FRAME)
        return {spec.id for spec in runnable_checks(REGISTRY, absent_event_types(events, REGISTRY))}

    everything = {spec.id for spec in REGISTRY}
    gated = {"stale_stop_replica_accepted", "stale_controller_epoch_accepted", "stale_broker_epoch_isr_join"}
    assert ids(["become_leader", "request_fetch"]) == everything - gated
    assert ids(["become_leader", "leader_and_isr_received"]) == everything - gated | {
        "stale_controller_epoch_accepted"}
    assert ids(["request_stop_replica", "md_partition_change"]) == everything
    no_events = spark.createDataFrame([], FRAME)
    two_leaders = (SPECS["two_leaders_same_epoch"],)
    assert absent_event_types(no_events, two_leaders) == frozenset()  # no needs: nothing asked
    assert runnable_checks(two_leaders, absent_event_types(no_events, REGISTRY)) == two_leaders


def test_absent_event_types_look_for_traffic_types_in_the_traffic_alone(spark):
    from dataclasses import replace

    from epoch_audit.gold.registry import SPECS
    from epoch_audit.stages.check import absent_event_types

    def frame(types: list[str]):
        return spark.createDataFrame([(t, None, None) for t in types], FRAME)

    spec = (replace(SPECS["stale_stop_replica_accepted"], needs=("request_stop_replica",), asks=("request_fetch",)),)
    state, traffic = frame(["request_stop_replica", "become_leader"]), frame(["request_fetch"])
    assert absent_event_types(state, spec, traffic) == frozenset()
    assert absent_event_types(state, spec, frame([])) == {"request_fetch"}
    # state types are looked for in the state events only, traffic types in the traffic only
    assert absent_event_types(frame(["request_fetch"]), spec, frame(["request_stop_replica"])) == {
        "request_stop_replica", "request_fetch"}
    # no traffic apart: the events hold both
    assert absent_event_types(frame(["request_stop_replica", "request_fetch"]), spec) == frozenset()


def test_a_fetch_without_a_high_watermark_is_asked_for_in_the_traffic(spark):
    """The ISR check asks for a follower's fetch whose response named no high watermark (an omitted
    partition may be among them), a kind of event, not a type: asked only when the check will run."""
    from epoch_audit.gold.analysis.isr_joins import UNANSWERED_FETCH
    from epoch_audit.gold.registry import SPECS
    from epoch_audit.stages.check import absent_event_types

    def frame(rows: list[tuple]):
        return spark.createDataFrame(rows, FRAME)

    isr = (SPECS["stale_broker_epoch_isr_join"],)
    state = frame([(t, None, None) for t in isr[0].needs])
    answered = [("request_fetch", 2, 100), ("request_fetch", None, None), ("request_produce", None, None)]
    assert absent_event_types(state, isr, frame(answered)) == {UNANSWERED_FETCH}
    assert absent_event_types(state, isr, frame([*answered, ("request_fetch", 3, None)])) == frozenset()
    # without traffic apart, the events hold it
    assert absent_event_types(frame([*[(t, None, None) for t in isr[0].needs], ("request_fetch", 3, None)]), isr) == set()
    # the check will not run (no partition record): not asked
    assert absent_event_types(frame([]), isr, frame(answered)) == set(isr[0].needs)
