"""Issue #19 item 1 / 8: a bad value never aborts the run; its line is quarantined with a reason
naming the field, never parsed with a null field."""

from __future__ import annotations

from epoch_audit.bronze.parsers import MALFORMED
from tests.unit.hostile_lines import line_rows, run_chain

LEADER = (
    "[2024-03-05 09:12:44,201] INFO [Broker id=1] Leader orders-3 with topic id Some(m8C_0vTdQnKnfRBdE_b5Kg) "
    "starts at leader epoch {le} from offset 120 with partition epoch 12, high watermark 120, ISR [{isr}], "
    "adding replicas [] and removing replicas [] . Previous leader Some(2) and previous leader epoch was 6. "
    "(state.change.logger)"
)
SHRINK = (
    "[2024-03-05 09:12:44,300] INFO [Partition orders-3 broker=1] Shrinking ISR from 1,2,3 to {isr}. "
    "Leader: (highWatermark: 120, endOffset: 130). Out of sync replicas: (brokerId: 3, endOffset: 100). "
    "(kafka.cluster.Partition)"
)
RP = (
    "INFO  2024-04-02 11:00:00,100 [shard {shard}:main] raft - [group_id:5, {{kafka/orders/3}}] "
    "vote_stm.cc:421 - becoming the leader term:{term}"
)
TRUNCATED_REQUEST = (
    '[2024-03-05 09:12:44,201] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":4,'
    '"requestApiVersion":7,"correlationId":58,"clie'
)
HUGE = "9" * 25


def _statuses(spark, files):
    _, parsed, status = run_chain(spark, line_rows(spark, files))
    rows = {(r["source_file"], r["line_number"]): (r["status"], r["reason"]) for r in status.collect()}
    return parsed, rows


def test_bad_values_quarantine_their_line_with_the_field_named(spark):
    kafka = "cluster=c1/broker-1/state-change.log"
    redpanda = "cluster=c1/broker-1/redpanda.log"
    request = "cluster=c1/broker-1/kafka-request.log"
    files = {
        (kafka, "state-change"): [
            LEADER.format(le=7, isr="1, 2"),  # valid
            LEADER.replace("2024-03-05", "2024-13-45").format(le=7, isr="1, 2"),  # month 13
            LEADER.replace("2024-03-05", "2024-02-30").format(le=7, isr="1, 2"),  # Feb 30
            LEADER.format(le=HUGE, isr="1, 2"),  # epoch beyond int64
            LEADER.format(le=3_000_000_000, isr="1, 2"),  # epoch beyond int32
            LEADER.format(le=7, isr="1, " + HUGE),  # ISR element beyond int64
        ],
        ("cluster=c1/broker-1/server.log", "server"): [SHRINK.format(isr="1," + HUGE)],
        (redpanda, "redpanda"): [
            RP.format(shard=0, term=8),  # valid
            RP.format(shard=99999999999, term=8),
            RP.format(shard=0, term=HUGE),
            RP.format(shard=0, term=3_000_000_000),
        ],
        (request, "request"): [TRUNCATED_REQUEST],
        ("cluster=c1/broker-1/orders-3/leader-epoch-checkpoint", "leader-epoch-checkpoint"): [
            "0", "2", "5 100", HUGE + " 200",
        ],
        ("cluster=c1/broker-1/replication-offset-checkpoint", "replication-offset-checkpoint"): [
            "0", "1", "orders 3 " + HUGE,
        ],
    }
    parsed, rows = _statuses(spark, files)
    assert rows[(kafka, 1)][0] == "parsed"
    assert rows[(redpanda, 1)][0] == "parsed"
    expected_field = {
        (kafka, 2): "event_time", (kafka, 3): "event_time", (kafka, 4): "leader_epoch", (kafka, 5): "leader_epoch",
        (kafka, 6): "isr", ("cluster=c1/broker-1/server.log", 1): "isr",
        (redpanda, 2): "shard", (redpanda, 3): "leader_epoch", (redpanda, 4): "leader_epoch",
        (request, 1): "truncated",
        ("cluster=c1/broker-1/orders-3/leader-epoch-checkpoint", 4): "leader_epoch",
        ("cluster=c1/broker-1/replication-offset-checkpoint", 3): "offset",
    }
    for key, field in expected_field.items():
        status, reason = rows[key]
        assert status == "malformed", (key, status, reason)
        assert field in reason, (key, reason)
    # no parsed event carries a null where its line held a value
    good = parsed.where(parsed.event_type != MALFORMED)
    assert good.where(good.event_time.isNull() & good.log_kind.isin("state-change", "redpanda")).count() == 0
