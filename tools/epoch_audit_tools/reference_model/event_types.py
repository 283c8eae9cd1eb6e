"""The bronze event types the reference model reads, and what each group means for the protocol.

The model shares only the input / output contracts with the Spark code (``epoch_audit.contracts``):
every list below is written here from the protocol rules, not imported from the Spark builders, so
that a wrong list on one side shows up as a difference in the differential tests. Each list cites
the rule it comes from: the spec (``docs/invariants.md``, the sections named) or the log-format
reference (``§`` numbers; the line ids S1..S9, L1..L16, U1..U4 are that reference's). The event
type names are the contract's (``epoch_audit.contracts.events.EVENT_TYPES``).
"""

from __future__ import annotations

from typing import Any

# One bronze event: a dict with the columns of ``epoch_audit.contracts.events.EVENT_COLUMNS``.
Event = dict[str, Any]

# Partition error NONE, by name or by code (request log, §5).
NO_ERROR = ("NONE", "0")


def is_no_error(error: Any) -> bool:
    """Request-log partition error NONE."""
    return error in NO_ERROR


# --- KRaft metadata log (§3.1; spec "Timeline", "Ordering and time": commit point) -----------
# The partition timeline: a PartitionRecord states the whole partition, a PartitionChangeRecord
# what changed.
KRAFT_PARTITION_TYPES = ("md_partition", "md_partition_change")
KRAFT_FULL_PARTITION_TYPE = "md_partition"
# RemoveTopicRecord: the topic id's partitions cease to exist at its commit point.
KRAFT_TOPIC_REMOVAL_TYPES = ("md_remove_topic",)
# TopicRecord: names a topic id (a name never changes; a recreated topic gets a new id).
KRAFT_TOPIC_TYPE = "md_topic"
# KIP-868 metadata transactions: Begin .. End is one commit point; an Abort commits nothing.
KRAFT_BEGIN_TRANSACTION = "md_begin_transaction"
KRAFT_END_TRANSACTION = "md_end_transaction"
KRAFT_ABORT_TRANSACTION = "md_abort_transaction"
KRAFT_TRANSACTION_TYPES = (KRAFT_BEGIN_TRANSACTION, KRAFT_END_TRANSACTION, KRAFT_ABORT_TRANSACTION)
# A batch header: the controller commits a batch atomically at its last offset.
KRAFT_BATCH_TYPE = "md_batch"
# A broker's registration over time (spec stale_broker_epoch_isr_join: "R's registered BE over
# time comes from RegisterBrokerRecord / BrokerRegistrationChangeRecord / Fence / Unfence
# records"), plus UnregisterBrokerRecord, which ends the registration (§3.1).
KRAFT_REGISTER_BROKER = "md_register_broker"
KRAFT_UNREGISTER_BROKER = "md_unregister_broker"
KRAFT_BROKER_REGISTRATION_CHANGE = "md_broker_registration_change"
KRAFT_FENCE_BROKER = "md_fence_broker"
KRAFT_UNFENCE_BROKER = "md_unfence_broker"
KRAFT_BROKER_TYPES = (
    KRAFT_REGISTER_BROKER,
    KRAFT_UNREGISTER_BROKER,
    KRAFT_BROKER_REGISTRATION_CHANGE,
    KRAFT_FENCE_BROKER,
    KRAFT_UNFENCE_BROKER,
)

# --- ZooKeeper controller (spec "Timeline"; §1.3) --------------------------------------------
# The controller's own decisions: its elections ("Changed partition ... with state ...") and ISR
# changes ("Partition ... state changed to ... after removing replica", "ISR for partition ...
# updated to ...").
ZK_DECISION_TYPES = ("controller_partition_state_change", "controller_isr_change", "controller_isr_updated")
# Lines proving that a controller's own state-change log is in the input (its decisions and its
# sends, all written under the "[Controller id=N epoch=E]" prefix): then brokers' received states
# from that controller are never stand-ins. The spec-derived list would also hold
# controller_reassignment_send ("Sent LeaderAndIsr request ... for partition being reassigned", on
# the same logger, §1.3); the Spark timeline leaves it out and so does the model (see the report of
# issue #18).
ZK_CONTROLLER_LOG_TYPES = ZK_DECISION_TYPES + (
    "controller_send_leader_and_isr",
    "controller_send_stop_replica",
    "controller_send_update_metadata",
)
# Brokers' received LeaderAndIsr states (L2 TRACE, request-log LEADER_AND_ISR): stand-ins for the
# decisions of a controller whose own log is absent.
ZK_STAND_IN_TYPES = ("leader_and_isr_received", "request_leader_and_isr")

# --- Redpanda (spec "Timeline"; §7.2) --------------------------------------------------------
# A node's "became the leader term: N" line is the decision of its term (leader = the node).
REDPANDA_DECISION_TYPE = "rp_became_leader"

# --- ZooKeeper broker: controller requests (spec stale_stop_replica_accepted; §1.1, §1.2, §1.5) -
# Lines of a LeaderAndIsr / StopReplica / UpdateMetadata the broker processed, carrying the
# REQUEST's controller epoch (a broker raises its known CE on each of them): the received TRACE
# lines (L2, S2), the per-partition refusals written after the controller-epoch check passed (L4-L7,
# L10, L15; S4-S9), the "Stopped fetchers" lines (L11/L12), the UpdateMetadata cache lines (U2-U4)
# and the request-log lines of the three requests.
CONTROLLER_REQUEST_TYPES = (
    "leader_and_isr_received",
    "leader_and_isr_fetchers_stopped",
    "leader_and_isr_stale_epoch",
    "leader_and_isr_equal_epoch",
    "leader_and_isr_other_refusal",
    "stop_replica_fenced",
    "stop_replica_equal_epoch_refused",
    "stop_replica_storage_error",
    "stop_replica_received",
    "update_metadata_applied",
    "update_metadata_partition_deleted",
    "request_leader_and_isr",
    "request_stop_replica",
    "request_update_metadata",
)
# Whole-request refusals that state the broker's known CE ("Latest known controller epoch is N":
# L3, S3, U1).
STALE_CONTROLLER_REFUSAL_TYPES = (
    "leader_and_isr_stale_controller",
    "stop_replica_stale_controller",
    "update_metadata_stale_controller",
)
# The KafkaApis broker-epoch pre-check refuses the whole request before the broker looks at its
# controller epoch (STALE_BROKER_EPOCH, error code 77): the broker never took that CE.
UNPROCESSED_REQUEST_ERRORS = ("STALE_BROKER_EPOCH", "77")
# No INFO line is written for a successful stop: the replica being stopped shows it ("Removed
# fetcher for partitions ...", log renamed for deletion / deleted; §1.1).
STOP_EVIDENCE_TYPES = ("fetcher_removed", "log_deletion_scheduled", "log_deleted")
# The leader / follower start lines: the broker applied a LeaderAndIsr state (§1.2).
BECOME_TYPES = ("become_leader", "become_follower")

# --- broker-held epochs (spec leader_epoch_regression, two_leaders_same_epoch) --------------
# Kafka: the LEs a broker accepted: its leader / follower start lines and request-log
# LEADER_AND_ISR with error NONE ("Skipped ..." lines print the requested epoch: never held, §1.2).
KAFKA_HELD_TYPES = ("become_leader", "become_follower", "request_leader_and_isr")
# Redpanda: every term a node logs as its own current term (§7.2). The spec names becoming/became
# the leader, a received vote request's "current" term, "Setting new term", recovered state and
# started raft; the parser also gives the node's own term to its self vote, its election start
# and an adopted larger term (vote failed), and the Spark view takes every Redpanda type not known
# to name another term (step-down, vote replies/grants/refusals, notifications, transfers,
# truncation) - hence the last five here, kept so both sides agree (see the report of issue #18).
REDPANDA_HELD_TYPES = (
    "rp_becoming_leader",
    "rp_became_leader",
    "rp_vote_request",
    "rp_new_term",
    "rp_recovered_state",
    "rp_started_raft",
    "rp_vote_sent",
    "rp_election_started",
    "rp_vote_failed",
    "rp_leader_config_failed",
    "rp_partition_leader_updated",
)
# A received vote request's held term is the node's "current" one, never the candidate's.
REDPANDA_VOTE_REQUEST = "rp_vote_request"
# Lines where a broker claims leadership of an LE / term (spec two_leaders_same_epoch: Kafka
# "Leader ... starts at leader epoch N"; Redpanda "becoming/became the leader term:N").
CLAIM_TYPES = ("become_leader", "rp_becoming_leader", "rp_became_leader")
# Lines where a broker logs ANOTHER broker's leadership of a term (spec two_leaders_same_epoch:
# "logged the other's leadership"): Redpanda leadership notifications. Kafka follower start lines,
# which name the leader, are epoch rows already.
ACK_TYPES = ("rp_leadership_notification",)
# A granted vote in a term (spec two_leaders_same_epoch: "it had already granted its vote in that
# term to the other"): the candidate's vote reply, the voter's grant.
VOTE_REPLY = "rp_vote_reply"
VOTE_GRANTED = "rp_vote_granted"
# The broker deleted its local log of the partition (§1.1): a later LE series is a new replica.
SERIES_BREAK_TYPES = ("log_deletion_scheduled", "log_deleted")
# Host-local lines naming the topic id of a partition (a recreated topic has a new id; spec
# high_watermark_regression): leader lines 3.3+ and "Skipped ..." lines ("with topic id", §1.2),
# follower lines, partition.metadata (§4.2), the LeaderAndIsr states a broker received.
TOPIC_ID_TYPES = (
    "become_leader",
    "become_follower",
    "become_leader_skipped",
    "become_follower_skipped",
    "partition_metadata",
    "request_leader_and_isr",
    "leader_and_isr_received",
)
