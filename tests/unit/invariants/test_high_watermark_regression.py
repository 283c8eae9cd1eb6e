"""``high_watermark_regression``: rules and must-NOT-flag cases (scenarios: ``cases_offsets.py``; each result must
equal the reference model's)."""

from __future__ import annotations

import pytest

from tests.unit.invariants.cases_offsets import one, rows


@pytest.fixture
def results(offsets_results):
    return offsets_results


def test_hw_leader_line_regression(results):
    r = one(results, "hw_leader_lines", "high_watermark_regression")
    assert (r["broker_id"], r["severity"], r["leader_epoch"], r["expected_epoch"]) == (1, "error", 6, 5)


def test_hw_series_never_mixed_nor_across_brokers(results):
    assert rows(results, "hw_series_never_mixed") == []


def test_hw_checkpoint_copies_absent_partition_has_no_value(results):
    rs = rows(results, "hw_checkpoint_copies", "high_watermark_regression")
    assert [(r["partition"], r["evidence"][0].rsplit(":", 2)[1]) for r in rs] == [(1, "roc.3")]


def test_hw_topic_id_change_restarts_series(results):
    assert rows(results, "hw_topic_recreated") == []


def test_hw_redpanda_acks1_majority_loss_is_warning(results):
    r = one(results, "hw_redpanda_acks1_majority_loss", "high_watermark_regression")
    assert r["severity"] == "warning"


def test_hw_check_told_no_step_down_skips_the_acks_search_with_the_same_rows(spark):
    """Told that the events hold no Redpanda step-down (``asks``, as the check stage tells it), the
    check leaves out the acks=0/1 search and finds the same rows; with a step-down it is not told."""
    from epoch_audit.gold.context import check_context
    from epoch_audit.gold.registry import REGISTRY, SPECS, violations_of
    from epoch_audit.stages.check import absent_event_types
    from tests.builders.epoch_events import H, to_frames
    from tests.unit.invariants.cases_offsets import hw_leader_lines, hw_redpanda_acks1_majority_loss

    spec = SPECS["high_watermark_regression"]
    for build, told in ((hw_leader_lines, True), (hw_redpanda_acks1_majority_loss, False)):
        h = H(build.__name__)
        build(h)
        events, _ = to_frames(spark, [h])
        absent = absent_event_types(events, REGISTRY)
        assert ("rp_step_down" in absent) is told
        got = violations_of(spec, check_context(events, absent_types=absent)).collect()
        assert sorted(map(tuple, got)) == sorted(map(tuple, violations_of(spec, check_context(events)).collect()))
        assert len(got) == 1 and got[0]["severity"] == ("error" if told else "warning")


def test_acks01_search_matches_as_its_plain_form(spark):
    # the fast form (literal first, lookbehinds) finds exactly what the plain pattern finds, in Java
    from pyspark.sql import functions as F

    from epoch_audit.gold.invariants.high_watermark_regression import _ACKS01, ACKS01_PLAIN

    texts = ['"acks":1', '"acks" : 0}', '"acks":10', '"acks":-1', 'xacks=1', 'acks=1', ' acks=0,', 'acks=01',
             '"acks"\t:\n1', '_acks=1', '"xacks":1', 'acks"=1', '"acks":1.5', '"acks":1a', 'acks=1_',
             '{"acks":"1"}', 'acksacks=1', '"acks""acks":0', 'é acks=1', '"ACKS":1', '', 'acks', '"acks":',
             '{"acks":-1,"x":"acks=1"}', '{"acks":-1,"y":{"acks":0}}', 'Acks=1', '(acks=1)']
    df = spark.createDataFrame([(t,) for t in texts], "raw string")
    rows = df.select("raw", F.col("raw").rlike(ACKS01_PLAIN).alias("plain"), F.col("raw").rlike(_ACKS01).alias("fast"))
    found = {r.raw: (r.plain, r.fast) for r in rows.collect()}
    assert all(plain == fast for plain, fast in found.values()), found
    assert sum(plain for plain, _ in found.values()) == 11
