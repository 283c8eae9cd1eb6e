"""silver.broker_leader_epochs: per (cluster, broker, partition) the LE / Raft-term series the
broker itself holds, with its log deletions (series breaks) and its acknowledgements of others'
leadership.

Own order (spec "Ordering and time", rule 2; :mod:`epoch_audit.contracts.ordering`): ``ots`` is the
running maximum of ``event_time`` along each file's lines, taken over this view's own rows (not over
every line of the file as bronze's ``own_time``: the pure-Python twin in
``epoch_audit_tools.reference_model.broker_views`` computes the same), then file order, file id,
line, sub index.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.ordering import file_running_max_time, own_order
from epoch_audit.silver.event_fields import is_ok, rp_term

# Kafka: the LE a broker holds = the LE of each LeaderAndIsr state it accepted (spec
# leader_epoch_regression): the leader / follower start lines and request-log LEADER_AND_ISR with
# partition error NONE. "Skipped ..." lines are not used: on 3.6-3.9 they print the *requested*
# epoch, which may be lower than the held one (reference §1.2), so they would fake regressions.
KAFKA_HELD_TYPES = ("become_leader", "become_follower", "request_leader_and_isr")
# Redpanda: every term the node logs as its OWN current term (spec leader_epoch_regression). The
# Redpanda parser fills leader_epoch only for such lines (becoming/became the leader, the "current"
# term of a received vote request, "Setting new term", recovered state, started raft, self vote,
# election start, adopted larger term) and keeps other terms (step-down, vote replies, *_offset_term,
# a vote request's "received" term) in details. We still exclude the types whose term is never the
# node's own, and pre-vote lines (a pre-vote does not move the node's term).
RP_NOT_HELD_TYPES = (
    "rp_step_down",
    "rp_vote_reply",
    "rp_vote_granted",
    "rp_vote_refused",
    "rp_leadership_notification",
    "rp_leadership_transfer",
    "rp_truncate",
)
RP_VOTE_REQUEST = "rp_vote_request"
# Lines where a broker logs ANOTHER broker's leadership of an LE / term (causal order for
# two_leaders_same_epoch): Redpanda leadership notifications (term in details["term"]). Kafka
# follower start lines, which name the leader, are already epoch rows.
ACK_TYPES = ("rp_leadership_notification",)
HELD_TYPES = KAFKA_HELD_TYPES
# Lines where a broker claims leadership of an LE / term (spec two_leaders_same_epoch).
CLAIM_TYPES = ("become_leader", "rp_becoming_leader", "rp_became_leader")
# The broker deleted its local log of the partition: a later LE series is a new replica.
SERIES_BREAK_TYPES = ("log_deletion_scheduled", "log_deleted")

BROKER_LE_COLUMNS = [
    "cluster_id",
    "broker_id",
    "host_id",
    "topic",
    "partition",
    "row_kind",
    "leader_epoch",
    "leader",
    "topic_id",
    "tid",
    "gen",
    "is_claim",
    "system",
    "event_type",
    "event_id",
    "event_time",
    "file_id",
    "file_order",
    "line_number",
    "sub_index",
    "ots",
    "seq",
]


def broker_leader_epochs(events: DataFrame, config: object = None) -> DataFrame:
    """Per (cluster, broker, topic, partition) the LE / Raft-term series the broker holds, in its
    own log order (spec ``leader_epoch_regression``: Kafka accepted LeaderAndIsr and leader /
    follower start lines; Redpanda the node's own current-term lines).

    ``row_kind`` is ``epoch`` for a held LE and ``series_break`` for a broker-local log deletion
    (the replica is gone; a later series is a new replica). ``gen`` counts the breaks so far and
    ``tid`` is the last topic id the series named within its ``gen`` (a recreated topic has a new
    id): comparisons never cross a ``gen`` or a topic-id change. ``ack`` rows are Redpanda
    leadership notifications naming another node's leadership (``leader``), kept in the same own
    order for the causal rule of ``two_leaders_same_epoch``; they are not held epochs. ``seq`` numbers all rows of one
    series in own order. ``is_claim`` marks leadership claims (leader start lines, Redpanda
    becoming / became the leader).
    """
    event_type = F.col("event_type")
    held_le = F.when(event_type == RP_VOTE_REQUEST, F.col("current_leader_epoch")).otherwise(F.col("leader_epoch"))
    accepted = F.when(event_type == "request_leader_and_isr", is_ok(F.col("error"))).otherwise(F.lit(True))
    is_rp_held = (
        event_type.startswith("rp_")
        & ~event_type.isin(*RP_NOT_HELD_TYPES)
        & ~F.coalesce(F.lower(F.col("details")["prevote"]) == "true", F.lit(False))
    )
    epochs = (
        events.filter(event_type.isin(*HELD_TYPES) | is_rp_held)
        .filter(accepted)
        .withColumn("leader_epoch", held_le)
        # Sentinels -1 (no epoch) / -2 (being deleted) are not epochs a broker holds.
        .filter(F.col("leader_epoch") >= 0)
        .withColumn("row_kind", F.lit("epoch"))
    )
    acks = (
        events.filter(event_type.isin(*ACK_TYPES))
        .withColumn("leader_epoch", F.coalesce(F.col("leader_epoch"), rp_term()))
        .filter(F.col("leader").isNotNull() & F.col("leader_epoch").isNotNull())
        .withColumn("row_kind", F.lit("ack"))
    )
    breaks = (
        events.filter(event_type.isin(*SERIES_BREAK_TYPES))
        .withColumn("leader_epoch", F.lit(None).cast("int"))
        .withColumn("row_kind", F.lit("series_break"))
    )
    rows = (
        epochs.unionByName(acks)
        .unionByName(breaks)
        .filter(F.col("topic").isNotNull() & F.col("partition").isNotNull())
        .withColumn("broker_id", F.coalesce(F.col("broker_id"), F.col("host_id")))
        .withColumn("is_claim", (F.col("row_kind") == "epoch") & event_type.isin(*CLAIM_TYPES))
        .withColumn("system", F.when(event_type.startswith("rp_"), F.lit("redpanda")).otherwise(F.lit("kafka")))
    )
    rows = rows.withColumn("ots", file_running_max_time())
    key = ["cluster_id", "broker_id", "topic", "partition"]
    w_all = Window.partitionBy(*key).orderBy(*own_order("ots"))
    rows = rows.withColumn("seq", F.row_number().over(w_all)).withColumn(
        "gen",
        F.sum(F.when(F.col("row_kind") == "series_break", 1).otherwise(0)).over(
            w_all.rowsBetween(Window.unboundedPreceding, Window.currentRow)
        ),
    )
    w_gen = Window.partitionBy(*key, "gen").orderBy("seq").rowsBetween(Window.unboundedPreceding, Window.currentRow)
    rows = rows.withColumn("tid", F.last("topic_id", ignorenulls=True).over(w_gen))
    return rows.select(*BROKER_LE_COLUMNS)
