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
