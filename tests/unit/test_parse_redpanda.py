"""Redpanda raft lines (reference §7) -> rp_* events: every §7.2 version variant, term semantics."""

from __future__ import annotations

from functools import reduce
from pathlib import Path

import pytest

from epoch_audit.bronze.parsers import finish_events
from epoch_audit.bronze.parsers.redpanda import parse_redpanda
from epoch_audit.contracts.events import EVENT_SCHEMA, EVENT_TYPES
from tests.helpers import frame_log_lines, lines_from_text

FIXTURES = Path(__file__).parents[1] / "fixtures" / "redpanda"
FILES = ["v22_1.log", "v22_3.log", "v23_2.log", "v24_1.log", "v25_1.log"]
SENTINEL = "-9223372036854775808"

# (file, line) -> (event_type, expected columns, expected details subset). Host id of every file: 1.
# "le" = leader_epoch, "cle" = current_leader_epoch.
EXPECTED: dict[tuple[str, int], tuple[str, dict, dict]] = {
    # --- v22.1 (ostream shapes, [shard N], prevote_stm, no-space "became the leader term:") ---
    ("v22_1.log", 1): ("rp_recovered_state", {"le": 6, "replica_id": 2}, {"voted_for": "2"}),
    ("v22_1.log", 2): ("rp_recovered_state", {"le": 6, "replica_id": 2}, {"initial_state": "true"}),
    ("v22_1.log", 3): (
        "rp_started_raft",
        {"le": 6},
        {"start_offset": "0", "committed_offset": "5120", "committed_offset_term": "5", "dirty_offset_term": "5"},
    ),
    ("v22_1.log", 4): ("rp_vote_sent", {"replica_id": 2, "broker_id": 1, "le": None}, {"prevote": "true"}),
    ("v22_1.log", 5): ("rp_vote_reply", {"replica_id": 2}, {"prevote": "true", "vote_granted": "true"}),
    ("v22_1.log", 6): ("rp_vote_reply", {"replica_id": 3}, {"vote_granted": "false", "reason": "voter_log_ahead"}),
    ("v22_1.log", 7): ("rp_vote_reply", {"replica_id": 3}, {"error": "timeout"}),
    ("v22_1.log", 8): ("rp_vote_reply", {"replica_id": 3}, {"error": "seastar::timed_out_error (timedout)"}),
    ("v22_1.log", 9): ("rp_vote_reply", {"replica_id": 3}, {"error": "raft::errc::timeout"}),
    ("v22_1.log", 10): ("rp_vote_reply", {"replica_id": 3}, {"error": "rpc::errc::disconnected_endpoint"}),
    ("v22_1.log", 11): ("rp_vote_failed", {}, {"reason": "priority_too_low", "priority": "0"}),
    ("v22_1.log", 12): ("rp_vote_failed", {}, {"reason": "prevote_error", "prevote": "true"}),
    ("v22_1.log", 13): ("rp_vote_sent", {"le": 7}, {"self_vote": "true", "candidate": "1"}),
    ("v22_1.log", 14): ("rp_vote_sent", {"replica_id": 2}, {"prevote": "false"}),
    ("v22_1.log", 15): (
        "rp_vote_reply",
        {"replica_id": 2, "broker_id": 1, "le": None},
        {"term": "7", "vote_granted": "true", "log_ok": "true", "voter": "2", "candidate": "1"},
    ),
    ("v22_1.log", 16): ("rp_vote_reply", {"replica_id": 3}, {"term": "7", "vote_granted": "false"}),
    # line 17 (vote acks) yields two events, checked separately
    ("v22_1.log", 18): ("rp_became_leader", {"le": 7, "leader": 1}, {}),
    ("v22_1.log", 19): (
        "rp_step_down",
        {"le": None},
        {"term": "7", "reason": "append_entries_term_greater", "dirty_offset": "5301"},
    ),
    ("v22_1.log", 20): ("rp_new_term", {"le": 8, "cle": 7}, {"term": "8", "current_term": "7"}),
    # pre-2022 DEBUG truncation form
    ("v22_1.log", 22): (
        "rp_truncate",
        {"le": None, "offset": 5291},
        {"term": "8", "prev_log_index": "5290", "log_end_offset": "5301", "truncate_at": "5291"},
    ),
    # --- v22.3: controller group, sentinel offsets, internal namespace ---
    ("v22_3.log", 1): ("rp_started_raft", {"le": 0, "topic": "redpanda/controller", "partition": 0}, {}),
    ("v22_3.log", 2): ("rp_recovered_state", {"le": 0, "replica_id": None}, {}),
    ("v22_3.log", 3): ("rp_vote_sent", {"le": 1}, {"self_vote": "true"}),
    ("v22_3.log", 4): ("rp_becoming_leader", {"le": 1, "leader": 1}, {"namespace": "redpanda", "group_id": "1"}),
    ("v22_3.log", 5): ("rp_became_leader", {"le": 1}, {}),
    ("v22_3.log", 6): ("rp_becoming_leader", {"le": 4, "topic": "kafka_internal/tx", "partition": 0}, {}),
    ("v22_3.log", 7): ("rp_leader_config_failed", {"le": None}, {"error_code": "5", "error": "raft::errc::timeout"}),
    # --- v23.2 (reference example; [shard N:group]) ---
    ("v23_2.log", 1): ("rp_vote_sent", {"replica_id": 2}, {"timeout": "1500ms", "prevote": "false"}),
    ("v23_2.log", 2): ("rp_vote_reply", {"replica_id": 2, "broker_id": 1}, {"term": "8", "vote_granted": "true"}),
    ("v23_2.log", 3): ("rp_becoming_leader", {"le": 8, "topic": "orders", "partition": 3}, {"shard": "2"}),
    ("v23_2.log", 4): ("rp_became_leader", {"le": 8}, {}),
    ("v23_2.log", 5): ("rp_vote_reply", {}, {"error": "raft::errc::timeout"}),
    ("v23_2.log", 6): ("rp_vote_failed", {"le": 11}, {"reason": "received_larger_term"}),
    ("v23_2.log", 7): ("rp_vote_failed", {"le": None}, {"reason": "no_longer_candidate"}),
    ("v23_2.log", 8): ("rp_vote_failed", {}, {"reason": "not_enough_votes"}),
    ("v23_2.log", 9): ("rp_vote_failed", {}, {"reason": "priority_too_low"}),
    ("v23_2.log", 10): (
        "rp_vote_request",
        {"replica_id": 3, "broker_id": 1, "le": None},
        {"term": "12", "prev_log_index": "5120", "prev_log_term": "7", "leadership_transfer": "false"},
    ),
    ("v23_2.log", 11): ("rp_vote_refused", {"replica_id": 3}, {"reason": "already_heard_from_leader"}),
    ("v23_2.log", 12): ("rp_vote_refused", {"replica_id": 3}, {"priority": "1", "target_priority": "2"}),
    ("v23_2.log", 13): (
        "rp_vote_request",
        {"replica_id": 3, "le": 11, "cle": 11},
        {"received_term": "12", "current_term": "11", "candidate": "3", "voter": "1"},
    ),
    ("v23_2.log", 14): ("rp_step_down", {"le": None}, {"term": "12", "reason": "candidate_term_greater"}),
    ("v23_2.log", 15): ("rp_leadership_notification", {"leader": None, "le": None}, {"term": "12"}),
    ("v23_2.log", 16): ("rp_leadership_notification", {"leader": 3}, {"term": "12"}),
    # --- v24.1 (fmt shapes, [pre-vote: x] tags) ---
    ("v24_1.log", 1): (
        "rp_vote_sent",
        {"replica_id": 2, "topic": "__consumer_offsets", "partition": 12},
        {"prevote": "true", "timeout_ms": "1500"},
    ),
    ("v24_1.log", 2): (
        "rp_vote_reply",
        {"replica_id": 2, "broker_id": 1, "le": None},
        {"prevote": "true", "term": "20", "vote_granted": "false", "log_ok": "true"},
    ),
    ("v24_1.log", 3): ("rp_vote_sent", {"le": 21}, {"prevote": "false", "self_vote": "true"}),
    ("v24_1.log", 4): ("rp_vote_sent", {"replica_id": 2}, {"prevote": "false"}),
    ("v24_1.log", 5): ("rp_vote_reply", {"replica_id": 2}, {"term": "21", "vote_granted": "true"}),
    ("v24_1.log", 6): ("rp_vote_reply", {"replica_id": 3}, {"error": "raft::errc::timeout"}),
    ("v24_1.log", 7): ("rp_vote_reply", {"replica_id": 3}, {"error": "seastar::timed_out_error (timedout)"}),
    # line 8 (vote acks) checked separately
    ("v24_1.log", 9): ("rp_becoming_leader", {"le": 21}, {}),
    ("v24_1.log", 10): ("rp_became_leader", {"le": 21}, {}),
    ("v24_1.log", 11): ("rp_vote_failed", {"le": 23}, {"prevote": "true", "reason": "received_larger_term"}),
    ("v24_1.log", 12): ("rp_vote_failed", {"replica_id": 3}, {"reason": "voter_log_more_up_to_date"}),
    ("v24_1.log", 13): ("rp_vote_failed", {}, {"reason": "not_enough_votes", "prevote": "false"}),
    ("v24_1.log", 14): ("rp_vote_failed", {}, {"reason": "no_longer_candidate", "prevote": "false"}),
    ("v24_1.log", 15): ("rp_vote_failed", {}, {"reason": "priority_too_low", "prevote": "false"}),
    ("v24_1.log", 16): (
        "rp_vote_request",
        {"replica_id": 3, "broker_id": 1, "le": None},
        {"term": "24", "prev_log_index": "9001", "leadership_transfer": "false"},
    ),
    ("v24_1.log", 17): (
        "rp_vote_granted",
        {"replica_id": 3, "broker_id": 1, "le": None},
        {"term": "24", "vote_granted": "true", "side": "voter", "voter": "1", "candidate": "3"},
    ),
    ("v24_1.log", 18): ("rp_leadership_notification", {"leader": 3}, {"term": "24"}),
    # a new replica's vote request: empty log, sentinel prev_log_index / prev_log_term dropped
    ("v24_1.log", 19): ("rp_vote_request", {"replica_id": 4, "broker_id": 1, "le": None}, {"term": "25"}),
    # --- v25.1 dev line ---
    ("v25_1.log", 1): ("rp_election_started", {"le": 8}, {"phase": "pre-vote-start", "leadership_transfer": "false"}),
    ("v25_1.log", 2): ("rp_election_started", {"le": 8}, {"phase": "pre-vote-result", "prevote_success": "true"}),
    ("v25_1.log", 3): ("rp_becoming_leader", {"le": 9}, {}),
    ("v25_1.log", 4): ("rp_became_leader", {"le": 9}, {}),
    ("v25_1.log", 5): ("rp_leadership_transfer", {"broker_id": 1, "replica_id": 2, "le": None}, {"term": "9"}),
    ("v25_1.log", 6): (
        "rp_step_down",
        {"replica_id": 2, "le": None},
        {"term": "9", "reason": "leadership_transfer", "leadership_transfer": "true", "dirty_offset": "7770"},
    ),
    ("v25_1.log", 7): (
        "rp_partition_leader_updated",
        {"topic": "orders", "partition": 3, "leader": 2, "le": None},
        {"term": "10", "previous_leader": "{1}", "revision": "45"},
    ),
    ("v25_1.log", 8): ("rp_partition_leader_updated", {"partition": 4, "leader": None}, {"term": "3"}),
    ("v25_1.log", 9): ("rp_step_down", {"le": None}, {"term": "9", "reason": "heartbeats_majority"}),
    ("v25_1.log", 12): (
        "rp_truncate",
        {"le": None, "offset": 7701, "topic": "orders", "partition": 3},
        {
            "term": "10",
            "prev_log_index": "7700",
            "log_end_offset": "7790",
            "last_visible_index": "7750",
            "leader_last_visible_index": "7760",
            "truncate_at": "7701",
        },
    ),
    ("v25_1.log", 13): ("rp_truncate", {"offset": 7702}, {"truncate_at": "7702", "leader_last_visible_index": "7760"}),
}
# lines that must yield no event (other raft / kafka lines that merely mention a term)
IGNORED = {("v22_1.log", 21), ("v25_1.log", 10), ("v25_1.log", 11)}

COLS = {"le": "leader_epoch", "cle": "current_leader_epoch"}


@pytest.fixture(scope="module")
def events(spark):
    # all fixture files framed in one pass (one Spark job for the whole module)
    lines = reduce(
        lambda a, b: a.unionByName(b),
        [
            lines_from_text(
                spark, (FIXTURES / name).read_text(), f"cluster=c1/node-1/{name}", 1, "c1", "redpanda"
            )
            for name in FILES
        ],
    )
    records, _ = frame_log_lines(lines)
    # Framing and parsing are separate plans (one plan on top of the other is slow to optimise).
    records = spark.createDataFrame(records.collect(), records.schema)
    finished = finish_events(parse_redpanda(records))
    return finished.collect(), finished.schema


def _by_line(rows):
    out: dict[tuple[str, int], list] = {}
    for r in rows:
        out.setdefault((r.source_file.rsplit("/", 1)[-1], r.line_number), []).append(r)
    return out


def test_schema_and_event_types(events):
    rows, schema = events
    assert [(f.name, f.dataType) for f in schema.fields] == [(f.name, f.dataType) for f in EVENT_SCHEMA.fields]
    assert {r.event_type for r in rows} <= set(EVENT_TYPES)
    assert len({r.event_id for r in rows}) == len(rows)


def test_every_template_line(events):
    rows, _ = events
    by_line = _by_line(rows)
    failures = []
    for key, (etype, cols, details) in EXPECTED.items():
        got = by_line.get(key)
        if not got or len(got) != 1:
            failures.append(f"{key}: expected one {etype}, got {got}")
            continue
        r = got[0]
        if r.event_type != etype:
            failures.append(f"{key}: {r.event_type} != {etype}")
        for name, want in cols.items():
            if getattr(r, COLS.get(name, name)) != want:
                failures.append(f"{key}: {name}={getattr(r, COLS.get(name, name))!r} != {want!r}")
        for k, want in details.items():
            if (r.details or {}).get(k) != want:
                failures.append(f"{key}: details[{k}]={(r.details or {}).get(k)!r} != {want!r}")
    assert not failures, "\n".join(failures)


def test_no_unexpected_events(events):
    rows, _ = events
    by_line = _by_line(rows)
    acks = {("v22_1.log", 17), ("v24_1.log", 8)}
    assert set(by_line) == set(EXPECTED) | acks
    assert not IGNORED & set(by_line)


@pytest.mark.parametrize("key,term", [(("v22_1.log", 17), 7), (("v24_1.log", 8), 21)])
def test_vote_acks_one_event_per_voter(events, key, term):
    """Candidate-side acks are oriented like "vote reply from" (rp_vote_reply: broker_id =
    candidate, replica_id = voter); rp_vote_granted is reserved for the voter's own line."""
    rows, _ = events
    got = sorted(_by_line(rows)[key], key=lambda r: r.sub_index)
    assert [r.sub_index for r in got] == [0, 1]
    assert [r.replica_id for r in got] == [1, 2]
    for r in got:
        assert r.event_type == "rp_vote_reply"
        assert r.leader_epoch is None and r.details["term"] == str(term) and r.broker_id == 1
        assert r.details["vote_granted"] == "true" and r.details["side"] == "candidate"
        assert r.details["candidate"] == "1" and r.details["voter"] == str(r.replica_id)


def test_vote_grants_orientation(spark):
    """The invariants' vote-grant reading of parsed lines: the candidate's acks / vote replies and the
    voter's own "vote reply:" all give (voter, candidate) the right way round."""
    from epoch_audit.gold.analysis.leadership import vote_grants

    lines = reduce(
        lambda a, b: a.unionByName(b),
        [
            lines_from_text(spark, (FIXTURES / n).read_text(), f"cluster=c1/node-1/{n}", 1, "c1", "redpanda")
            for n in ("v22_1.log", "v24_1.log")
        ],
    )
    records, _ = frame_log_lines(lines)
    records = spark.createDataFrame(records.collect(), records.schema)  # see the events fixture
    got = {
        (r.topic, r.leader_epoch, r.voter, r.candidate)
        for r in vote_grants(finish_events(parse_redpanda(records))).collect()
    }
    assert got == {
        ("orders", 7, 2, 1),  # v22.1 "vote reply from" node 2 and its vote ack
        ("orders", 7, 1, 1),  # the candidate's self ack
        ("__consumer_offsets", 21, 2, 1),  # v24.1 vote reply / vote ack
        ("__consumer_offsets", 21, 1, 1),
        ("__consumer_offsets", 24, 1, 3),  # v24.1 voter-side "vote reply:" granting node 3
    }


def test_common_columns(events):
    rows, _ = events
    for r in rows:
        assert r.host_id == 1 and r.cluster_id == "c1"
        assert r.event_time is not None and r.raw
        assert r.log_kind == "redpanda"
        # the raw line is the unwrapped Seastar line
        assert r.raw.split(" ", 1)[0] in {"INFO", "DEBUG", "TRACE", "WARN"}
        # sentinel offsets / node ids never leak into values
        assert SENTINEL not in (r.details or {}).values()
        assert "-2147483648" not in (r.details or {}).values()
        if r.event_type != "rp_partition_leader_updated":
            assert r.details["group_id"].isdigit()
    kafka_groups = {r.topic for r in rows if r.details.get("namespace") == "kafka"}
    assert kafka_groups == {"orders", "__consumer_offsets"}


def test_version_hints(events):
    rows, _ = events
    hint = {(r.source_file.rsplit("/", 1)[-1], r.line_number): r.kafka_version_hint for r in rows}
    assert hint[("v22_1.log", 18)] == "redpanda v22.1-v22.2.3"  # "term:7" without space
    assert hint[("v23_2.log", 4)] == "redpanda v22.2.4+"
    assert hint[("v22_1.log", 14)] == "redpanda v22.1-v22.3.16"
    assert hint[("v23_2.log", 1)] == "redpanda v22.3.17-v23.3"
    assert hint[("v24_1.log", 5)] == "redpanda v24.1+"
    assert hint[("v22_1.log", 15)] == "redpanda v22.1-v23.3"
    assert hint[("v25_1.log", 1)] == "redpanda v24.2+"


def test_own_term_rule(events):
    """Only lines stating the node's own current term carry leader_epoch (leader_epoch_regression)."""
    rows, _ = events
    never = {"rp_step_down", "rp_leadership_transfer", "rp_leadership_notification", "rp_vote_reply",
             "rp_vote_refused", "rp_partition_leader_updated", "rp_leader_config_failed", "rp_truncate"}
    for r in rows:
        if r.event_type in never:
            assert r.leader_epoch is None, r
    # started raft: term 6, not the committed/dirty offset term 5
    started = [r for r in rows if r.event_type == "rp_started_raft" and r.topic == "orders"]
    assert [r.leader_epoch for r in started] == [6]
