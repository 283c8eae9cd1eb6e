"""Suppressions: acknowledged violations leave the exit code until their entry expires, then come back;
an entry matching nothing is reported; a bad file is one line and exit 2 before Spark starts."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql.types import StringType, StructField, StructType

from epoch_audit.cli import main
from epoch_audit.config import ConfigError
from epoch_audit.contracts.violations import CHECK_SCHEMA
from epoch_audit.lake.storage import DeltaRsStorage
from epoch_audit.lake.tables import SUPPRESSIONS_TABLE
from epoch_audit.stages.suppress import adjust_counts, plan_suppressions, write_suppressions
from epoch_audit.suppressions import load_suppressions

INVARIANTS = {"write_accepted_by_fenced_leader", "high_watermark_regression"}
ZOMBIE = "a" * 64
HW = "b" * 64
OTHER_HW = "c" * 64


def _write(tmp_path, text: str) -> str:
    path = tmp_path / "suppressions.yaml"
    path.write_text(text)
    return str(path)


FILE = """\
suppressions:
  - violation_id: aaaaaaaaaaaa
    reason: acks=1 zombie window, accepted by the topic owner
    owner: team-streaming
    expires: 2026-12-31
  - invariant: high_watermark_regression
    cluster_id: prod
    topic: clicks
    partition: 7
    reason: KAFKA-12345, fixed by the next upgrade
    owner: alice@example.com
    expires: 2026-11-30
  - invariant: write_accepted_by_fenced_leader
    topic: orders
    reason: matches nothing
    owner: bob
    expires: '2027-01-15'
"""


def test_the_file_is_read_with_every_field(tmp_path):
    entries = load_suppressions(_write(tmp_path, FILE), INVARIANTS)
    assert [(s.entry, s.violation_id, s.invariant, s.topic, s.partition, s.expires) for s in entries] == [
        (1, "aaaaaaaaaaaa", None, None, None, dt.date(2026, 12, 31)),
        (2, None, "high_watermark_regression", "clicks", 7, dt.date(2026, 11, 30)),
        (3, None, "write_accepted_by_fenced_leader", "orders", None, dt.date(2027, 1, 15)),
    ]
    assert entries[1].active_on(dt.date(2026, 11, 30)) and not entries[1].active_on(dt.date(2026, 12, 1))
    assert load_suppressions(None, INVARIANTS) == []


@pytest.mark.parametrize(("text", "message"), [
    ("- {violation_id: aaaaaaaaaaaa, owner: x, expires: 2026-12-31}", "entry 1: 'reason' is required"),
    ("- {violation_id: aaaa, reason: r, owner: x, expires: 2026-12-31}", "12 to 64 hex characters"),
    ("- {invariant: nope, reason: r, owner: x, expires: 2026-12-31}", "unknown invariant 'nope'"),
    ("- {reason: r, owner: x, expires: 2026-12-31}", "either violation_id or invariant"),
    ("- {violation_id: aaaaaaaaaaaa, topic: t, reason: r, owner: x, expires: 2026-12-31}", "narrows an invariant"),
    ("- {invariant: high_watermark_regression, reason: r, owner: x, expires: soon}", "expires must be a date"),
    ("- {invariant: high_watermark_regression, partition: -1, reason: r, owner: x, expires: 2026-12-31}",
     "partition must be a non-negative integer"),
    ("- {invariant: high_watermark_regression, why: r, reason: r, owner: x, expires: 2026-12-31}", "unknown key 'why'"),
    ("suppressions: {a: 1}", "expected a list of suppressions"),
    ("- [unclosed", "not valid YAML"),
])
def test_a_bad_entry_names_the_file_and_the_reason(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_suppressions(path, INVARIANTS)
    assert str(err.value).startswith(path) and message in str(err.value), str(err.value)


def test_a_missing_file_exits_2_in_one_line_before_spark(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    code = main(["run", "--input", "data/samples", "--lake", str(tmp_path / "lake"), "--suppressions", str(missing)])
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"{missing}: suppressions file not found" in lines[0], lines
    assert not (tmp_path / "lake" / "bronze").exists()


def _violation(vid: str, run_id: str, invariant: str, topic: str, partition: int, severity: str = "error") -> dict:
    row = {f.name: None for f in CHECK_SCHEMA.fields}
    row.update(invariant=invariant, severity=severity, confidence="confirmed", cluster_id="prod", topic=topic,
               partition=partition, broker_id=1, evidence=["e"], explanation="x")
    return {"run_id": run_id, "violation_id": vid, **row}


def test_suppressed_leave_the_counts_expired_come_back_and_unmatched_are_listed(spark, tmp_path):
    storage = DeltaRsStorage(spark, str(tmp_path / "lake"))
    entries = load_suppressions(_write(tmp_path, FILE), INVARIANTS)
    rows = [
        _violation(ZOMBIE, "night-2", "write_accepted_by_fenced_leader", "clicks", 1),  # new tonight, entry 1
        _violation(HW, "night-1", "high_watermark_regression", "clicks", 7),  # older, entry 2
        _violation(OTHER_HW, "night-1", "high_watermark_regression", "clicks", 8),  # no entry
    ]
    schema = StructType([StructField("run_id", StringType()), StructField("violation_id", StringType()),
                         *CHECK_SCHEMA.fields])
    gold = spark.createDataFrame([tuple(r[f.name] for f in schema.fields) for r in rows], schema)

    def night(run_id: str, day: dt.date, active: list = entries) -> dict:
        detail, table = plan_suppressions(storage, active, gold, {run_id}, today=day)
        write_suppressions(spark, storage, table)
        return detail

    # entry 2's last day: the new zombie is suppressed, nothing comes back
    out = night("night-2", dt.date(2026, 11, 30))
    zombie = [{"invariant": "write_accepted_by_fenced_leader", "severity": "error", "confidence": "confirmed",
               "count": 1}]
    assert out["suppressed_new"] == zombie and out["resurfaced"] == [] and out["suppressed"] == 2
    assert len(out["unmatched"]) == 1 and out["unmatched"][0].startswith("#3 write_accepted_by_fenced_leader topic=orders")
    table = {r["violation_id"]: (r["entry"], r["status"]) for r in storage.read(SUPPRESSIONS_TABLE).collect()}
    assert table == {ZOMBIE: (1, "active"), HW: (2, "active")}
    versions = len(storage.history(SUPPRESSIONS_TABLE))
    night("night-2", dt.date(2026, 11, 30))
    assert len(storage.history(SUPPRESSIONS_TABLE)) == versions, "a re-run must not rewrite the table"

    # the day after: entry 2 has expired, its violation comes back, once
    out = night("night-3", dt.date(2026, 12, 1))
    assert out["resurfaced_ids"] == [HW] and out["resurfaced"][0]["invariant"] == "high_watermark_regression"
    table = {r["violation_id"]: r["status"] for r in storage.read(SUPPRESSIONS_TABLE).collect()}
    assert table == {ZOMBIE: "active", HW: "expired"}
    out = night("night-4", dt.date(2026, 12, 2))
    assert out["resurfaced"] == [] and out["suppressed_new"] == []

    # an entry taken out of the file brings its violations back too
    out = night("night-5", dt.date(2026, 12, 3), active=[])
    assert out["resurfaced_ids"] == [ZOMBIE] and out["suppressed"] == 0
    assert storage.read(SUPPRESSIONS_TABLE).count() == 0


def test_adjusted_counts_drop_empty_keys():
    counts = [{"invariant": "a", "severity": "error", "confidence": "confirmed", "count": 2}]
    minus = [{"invariant": "a", "severity": "error", "confidence": "confirmed", "count": 2}]
    plus = [{"invariant": "b", "severity": "warning", "confidence": "suspected", "count": 1}]
    assert adjust_counts(counts, minus, plus) == plus
