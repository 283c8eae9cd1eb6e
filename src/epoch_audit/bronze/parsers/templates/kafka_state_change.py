"""Kafka ``state.change.logger`` templates: the broker side of StopReplica / LeaderAndIsr /
UpdateMetadata (reference §1.1, §1.2, §1.5) and the controller side's sends (§1.3).

Order matters within a family: variants go from the most specific prefilter to the least.
"""

from __future__ import annotations

from epoch_audit.bronze.parsers import MALFORMED
from epoch_audit.bronze.parsers.line_template import LineTemplate
from epoch_audit.bronze.parsers.templates.kafka_fragments import (
    BRACKET_LIST,
    CURRENT_LEADER_EPOCH_FROM_LEADER_EPOCH,
    LEADER_AND_ISR,
    LEADER_AND_ISR_PARTITION_STATE,
    LEADER_FROM_IDENT,
    LEADER_ISR_AND_CONTROLLER_EPOCH,
    NUMBER,
    OPTIONAL_TOPIC_ID,
    STATE_CHANGE,
    STOP_REPLICA_PARTITION_STATE,
    TOPIC_PARTITION,
    UNDER_MIN_ISR,
    UPDATE_METADATA_PARTITION_STATE,
    UUID,
    ZK_CONTROLLER,
)

_IGNORED_STOP_REPLICA = r"Ignoring StopReplica request \(delete=(?P<delete_partition>true|false)\) from controller " \
    r"(?P<controller_id>\d+) with correlation id (?P<correlation_id>\d+) epoch (?P<controller_epoch>\d+) " \
    r"for partition " + TOPIC_PARTITION
_IGNORED_LEADER_AND_ISR = r"Ignoring LeaderAndIsr request from controller (?P<controller_id>\d+) with correlation id " \
    r"(?P<correlation_id>\d+) epoch (?P<controller_epoch>\d+) for partition " + TOPIC_PARTITION


BROKER_STATE_CHANGE_TEMPLATES: list[LineTemplate] = [
    # ---------------- §1.1 StopReplica, broker side ----------------
    LineTemplate("S1", "stop_replica_request", STATE_CHANGE, "Handling StopReplica request correlationId ",
        r"Handling StopReplica request correlationId (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) for (?P<d_partition_count>\d+) partitions"),
    LineTemplate("S2", "stop_replica_received", STATE_CHANGE, "Received StopReplica request ",
        r"Received StopReplica request " + STOP_REPLICA_PARTITION_STATE + r" correlation id (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) for partition " + TOPIC_PARTITION),
    LineTemplate("S3", "stop_replica_stale_controller", STATE_CHANGE, "Ignoring StopReplica request from controller ",
        r"Ignoring StopReplica request from controller (?P<controller_id>\d+) with correlation id "
        r"(?P<correlation_id>\d+) since its controller epoch (?P<controller_epoch>\d+) is old\. "
        r"Latest known controller epoch is (?P<known_controller_epoch>\d+)",
        const={"error": "STALE_CONTROLLER_EPOCH"}),
    LineTemplate("S5", "stop_replica_fenced", STATE_CHANGE, "Ignoring StopReplica request (delete=",
        _IGNORED_STOP_REPLICA + r" since its associated leader epoch (?P<leader_epoch>" + NUMBER + r") is smaller than the "
        r"current leader epoch (?P<current_leader_epoch>" + NUMBER + r")",
        contains=(" is smaller than the current leader epoch ",), const={"error": "FENCED_LEADER_EPOCH"}),
    LineTemplate("S6", "stop_replica_equal_epoch_refused", STATE_CHANGE, "Ignoring StopReplica request (delete=",
        _IGNORED_STOP_REPLICA + r" since its associated leader epoch (?P<leader_epoch>" + NUMBER + r") matches the current "
        r"leader epoch",
        contains=(" matches the current leader epoch",), version="2.6.0-3.4.0",
        const={"error": "FENCED_LEADER_EPOCH"},
        uses=(CURRENT_LEADER_EPOCH_FROM_LEADER_EPOCH,)),
    LineTemplate("S4", "stop_replica_storage_error", STATE_CHANGE, "Ignoring StopReplica request (delete=",
        _IGNORED_STOP_REPLICA + r" as the local replica for the partition is in an offline log directory",
        contains=(" offline log directory",),
        const={"error": "KAFKA_STORAGE_ERROR", "d_reason": "offline log directory"}),
    LineTemplate("S9", "stop_replica_storage_error", STATE_CHANGE, "Ignoring StopReplica request (delete=",
        _IGNORED_STOP_REPLICA + r" due to an unexpected (?P<d_exception>\S+) exception: (?P<d_exception_message>[\s\S]*)",
        contains=(" due to an unexpected ",), version="2.7+", const={"d_reason": "delete failed"}),
    LineTemplate("S*", MALFORMED, STATE_CHANGE, "Ignoring StopReplica request"),
    # ---------------- §1.2 LeaderAndIsr, broker side ----------------
    LineTemplate("L13", None, STATE_CHANGE, "Handling LeaderAndIsr request correlationId ", contains=(" transition for partition ",)),
    LineTemplate("L1", "leader_and_isr_request", STATE_CHANGE, "Handling LeaderAndIsr request correlationId ",
        r"Handling LeaderAndIsr request correlationId (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) for (?P<d_partition_count>\d+) partitions"),
    LineTemplate("L2", "leader_and_isr_received", STATE_CHANGE, "Received LeaderAndIsr request ",
        r"Received LeaderAndIsr request " + LEADER_AND_ISR_PARTITION_STATE + r" correlation id (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) epoch (?P<controller_epoch>\d+)", version="@partition_state"),
    LineTemplate("L3", "leader_and_isr_stale_controller", STATE_CHANGE, "Ignoring LeaderAndIsr request from controller ",
        r"Ignoring LeaderAndIsr request from controller (?P<controller_id>\d+) with correlation id "
        r"(?P<correlation_id>\d+) since its controller epoch (?P<controller_epoch>\d+) is old\. "
        r"Latest known controller epoch is (?P<known_controller_epoch>\d+)",
        contains=(" is old. Latest known controller epoch is ",), const={"error": "STALE_CONTROLLER_EPOCH"}),
    LineTemplate("L6", "leader_and_isr_stale_epoch", STATE_CHANGE, "Ignoring LeaderAndIsr request from controller ",
        _IGNORED_LEADER_AND_ISR + r" since its associated leader epoch (?P<leader_epoch>" + NUMBER + r") is smaller than the "
        r"current leader epoch (?P<current_leader_epoch>" + NUMBER + r")",
        contains=(" is smaller than the current leader epoch ",), const={"error": "STALE_CONTROLLER_EPOCH"}),
    LineTemplate("L7", "leader_and_isr_equal_epoch", STATE_CHANGE, "Ignoring LeaderAndIsr request from controller ",
        _IGNORED_LEADER_AND_ISR + r" since its associated leader epoch (?P<leader_epoch>" + NUMBER + r") matches the current "
        r"leader epoch",
        contains=(" matches the current leader epoch",), const={"error": "STALE_CONTROLLER_EPOCH"},
        uses=(CURRENT_LEADER_EPOCH_FROM_LEADER_EPOCH,)),
    LineTemplate("L4", "leader_and_isr_other_refusal", STATE_CHANGE, "Ignoring LeaderAndIsr request from controller ",
        _IGNORED_LEADER_AND_ISR + r" as the local replica for the partition is in an offline log directory",
        contains=(" offline log directory",),
        const={"error": "KAFKA_STORAGE_ERROR", "d_reason": "offline log directory"}),
    LineTemplate("L5", "leader_and_isr_other_refusal", STATE_CHANGE, "Ignoring LeaderAndIsr request from controller ",
        _IGNORED_LEADER_AND_ISR + r" as itself is not in assigned replica list(?P<replicas> [\d,]*)",
        contains=(" as itself is not in assigned replica list",),
        const={"error": "UNKNOWN_TOPIC_OR_PARTITION", "d_reason": "not in assigned replicas"}),
    LineTemplate("L*", MALFORMED, STATE_CHANGE, "Ignoring LeaderAndIsr request"),
    # L11 / L12 (INFO): the broker processed the request (its known controller epoch is now E).
    LineTemplate("L11", "leader_and_isr_fetchers_stopped", STATE_CHANGE, "Stopped fetchers as part of LeaderAndIsr request ",
        r"Stopped fetchers as part of LeaderAndIsr request correlationId (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) as part of the become-leader transition for "
        r"(?P<d_partition_count>\d+) partitions", const={"d_transition": "become-leader"}),
    LineTemplate("L12", "leader_and_isr_fetchers_stopped", STATE_CHANGE, "Stopped fetchers as part of become-follower request ",
        r"Stopped fetchers as part of become-follower request from controller (?P<controller_id>\d+) epoch "
        r"(?P<controller_epoch>\d+) with correlation id (?P<correlation_id>\d+) for (?P<d_partition_count>\d+) "
        r"partitions", const={"d_transition": "become-follower"}),
    LineTemplate("L10", "leader_and_isr_other_refusal", STATE_CHANGE, "Topic ID in memory: ",
        r"Topic ID in memory: (?P<d_log_topic_id>\S+) does not match the topic ID for partition " + TOPIC_PARTITION
        + r" received: (?P<topic_id>" + UUID + r")\.",
        version="3.0+", const={"error": "INCONSISTENT_TOPIC_ID", "d_reason": "topic id mismatch"}),
    LineTemplate("L15", "leader_and_isr_other_refusal", STATE_CHANGE, "Received LeaderAndIsrRequest with correlation id ",
        r"Received LeaderAndIsrRequest with correlation id (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) for partition " + TOPIC_PARTITION + r" \(last update "
        r"controller epoch (?P<state_controller_epoch>" + NUMBER + r")\) but cannot become follower since the new "
        r"leader (?P<leader>" + NUMBER + r") is unavailable\.",
        const={"d_reason": "new leader unavailable"}),
    # Leader lines (§1.2): 4 variants, most specific first.
    LineTemplate("LEADER_36", "become_leader", STATE_CHANGE, "Leader ",
        r"Leader " + TOPIC_PARTITION + r" with topic id " + OPTIONAL_TOPIC_ID + r" starts at leader epoch (?P<leader_epoch>" + NUMBER
        + r") from offset (?P<offset>" + NUMBER + r") with partition epoch (?P<partition_epoch>" + NUMBER + r"), high "
        r"watermark (?P<high_watermark>" + NUMBER + r"), ISR (?P<isr>" + BRACKET_LIST + r"), adding replicas "
        r"(?P<adding_replicas>" + BRACKET_LIST + r") and removing replicas (?P<removing_replicas>" + BRACKET_LIST + r") "
        + UNDER_MIN_ISR + r"\. Previous leader (?:Some\((?P<d_prev_leader>" + NUMBER + r")\)|None) and previous "
        r"leader epoch was (?P<prev_leader_epoch>" + NUMBER + r")\.",
        contains=(" starts at leader epoch ", " and previous leader epoch was "), version="3.6+",
        uses=(LEADER_FROM_IDENT,)),
    LineTemplate("LEADER_35", "become_leader", STATE_CHANGE, "Leader ",
        r"Leader " + TOPIC_PARTITION + r" with topic id " + OPTIONAL_TOPIC_ID + r" starts at leader epoch (?P<leader_epoch>" + NUMBER
        + r") from offset (?P<offset>" + NUMBER + r") with partition epoch (?P<partition_epoch>" + NUMBER + r"), high "
        r"watermark (?P<high_watermark>" + NUMBER + r"), ISR (?P<isr>" + BRACKET_LIST + r"), adding replicas "
        r"(?P<adding_replicas>" + BRACKET_LIST + r") and removing replicas (?P<removing_replicas>" + BRACKET_LIST + r") "
        + UNDER_MIN_ISR + r"\. Previous leader epoch was (?P<prev_leader_epoch>" + NUMBER + r")\.",
        contains=(" starts at leader epoch ",),
        contains_any=("] . Previous leader epoch was ", "(under-min-isr). Previous leader epoch was "),
        version="3.5", uses=(LEADER_FROM_IDENT,)),
    LineTemplate("LEADER_33", "become_leader", STATE_CHANGE, "Leader ",
        r"Leader " + TOPIC_PARTITION + r" with topic id " + OPTIONAL_TOPIC_ID + r" starts at leader epoch (?P<leader_epoch>" + NUMBER
        + r") from offset (?P<offset>" + NUMBER + r") with partition epoch (?P<partition_epoch>" + NUMBER + r"), high "
        r"watermark (?P<high_watermark>" + NUMBER + r"), ISR (?P<isr>" + BRACKET_LIST + r"), adding replicas "
        r"(?P<adding_replicas>" + BRACKET_LIST + r") and removing replicas (?P<removing_replicas>" + BRACKET_LIST + r")\. "
        r"Previous leader epoch was (?P<prev_leader_epoch>" + NUMBER + r")\.",
        contains=(" starts at leader epoch ", " with topic id "), version="3.3-3.4",
        uses=(LEADER_FROM_IDENT,)),
    LineTemplate("LEADER_26", "become_leader", STATE_CHANGE, "Leader ",
        r"Leader " + TOPIC_PARTITION + r" starts at leader epoch (?P<leader_epoch>" + NUMBER + r") from offset (?P<offset>" + NUMBER
        + r") with high watermark (?P<high_watermark>" + NUMBER + r") ISR (?P<isr>" + BRACKET_LIST + r") addingReplicas "
        r"(?P<adding_replicas>" + BRACKET_LIST + r") removingReplicas (?P<removing_replicas>" + BRACKET_LIST + r")\. "
        r"Previous leader epoch was (?P<prev_leader_epoch>" + NUMBER + r")\.",
        contains=(" starts at leader epoch ", " addingReplicas "), version="2.6-3.2",
        uses=(LEADER_FROM_IDENT,)),
    LineTemplate("LEADER*", MALFORMED, STATE_CHANGE, "Leader ", contains=(" starts at leader epoch ",)),
    # Follower lines (§1.2): 3 variants. 3.6+ quirk: its "previous" values are the NEW ones
    # (KAFKA-19776), so they go to details, never to prev_leader_epoch.
    LineTemplate("FOLLOWER_36", "become_follower", STATE_CHANGE, "Follower ",
        r"Follower " + TOPIC_PARTITION + r" starts at leader epoch (?P<leader_epoch>" + NUMBER + r") from offset (?P<offset>" + NUMBER
        + r") with partition epoch (?P<partition_epoch>" + NUMBER + r") and high watermark (?P<high_watermark>" + NUMBER
        + r")\. Current leader is (?P<leader>" + NUMBER + r")\. Previous leader (?:Some\((?P<d_reported_prev_leader>"
        + NUMBER + r")\)|None) and previous leader epoch was (?P<d_reported_prev_leader_epoch>" + NUMBER + r")\.",
        contains=(" starts at leader epoch ", " and previous leader epoch was "), version="3.6+",
        const={"d_prev_values_are_new": "true"}),
    LineTemplate("FOLLOWER_33", "become_follower", STATE_CHANGE, "Follower ",
        r"Follower " + TOPIC_PARTITION + r" starts at leader epoch (?P<leader_epoch>" + NUMBER + r") from offset (?P<offset>" + NUMBER
        + r") with partition epoch (?P<partition_epoch>" + NUMBER + r") and high watermark (?P<high_watermark>" + NUMBER
        + r")\. Current leader is (?P<leader>" + NUMBER + r")\. Previous leader epoch was (?P<prev_leader_epoch>"
        + NUMBER + r")\.",
        contains=(" starts at leader epoch ", " with partition epoch "), version="3.3-3.5"),
    LineTemplate("FOLLOWER_26", "become_follower", STATE_CHANGE, "Follower ",
        r"Follower " + TOPIC_PARTITION + r" starts at leader epoch (?P<leader_epoch>" + NUMBER + r") from offset (?P<offset>" + NUMBER
        + r") with high watermark (?P<high_watermark>" + NUMBER + r")\. Previous leader epoch was "
        r"(?P<prev_leader_epoch>" + NUMBER + r")\.",
        contains=(" starts at leader epoch ",), version="2.6-3.2"),
    LineTemplate("FOLLOWER*", MALFORMED, STATE_CHANGE, "Follower ", contains=(" starts at leader epoch ",)),
    # Skipped transitions (3.3-3.9). Requested values come from the partition state; the broker's
    # current ones from the tail. "already a follower with leader epoch N" shows the REQUESTED epoch
    # on 3.6-3.9 (same quirk as the Follower line) and the text cannot tell versions apart: details.
    LineTemplate("SKIP_LEADER_EPOCH", "become_leader_skipped", STATE_CHANGE, "Skipped the become-leader state change for ",
        r"Skipped the become-leader state change for " + TOPIC_PARTITION + r" with topic id " + OPTIONAL_TOPIC_ID
        + r" and partition state " + LEADER_AND_ISR_PARTITION_STATE + r" since it is already the leader with leader epoch "
        r"(?P<current_leader_epoch>" + NUMBER + r")\. Current high watermark (?P<high_watermark>" + NUMBER + r"), ISR "
        r"(?P<d_current_isr>" + BRACKET_LIST + r"), adding replicas (?P<d_current_adding_replicas>" + BRACKET_LIST + r") and "
        r"removing replicas (?P<d_current_removing_replicas>" + BRACKET_LIST + r")\.",
        contains=(" since it is already the leader with leader epoch ",), version="3.3+",
        const={"d_reason": "leader epoch not newer"}),
    LineTemplate("SKIP_LEADER_PE", "become_leader_skipped", STATE_CHANGE, "Skipped the become-leader state change for ",
        r"Skipped the become-leader state change for " + TOPIC_PARTITION + r" with topic id " + OPTIONAL_TOPIC_ID
        + r" and partition state " + LEADER_AND_ISR_PARTITION_STATE + r" since the leader is already at a newer partition epoch "
        r"(?P<d_current_partition_epoch>" + NUMBER + r")\.",
        contains=(" since the leader is already at a newer partition epoch ",), version="3.3+",
        const={"d_reason": "stale partition epoch"}),
    LineTemplate("SKIP_FOLLOWER_EPOCH", "become_follower_skipped", STATE_CHANGE, "Skipped the become-follower state change for ",
        r"Skipped the become-follower state change for " + TOPIC_PARTITION + r" with topic id " + OPTIONAL_TOPIC_ID
        + r" and partition state " + LEADER_AND_ISR_PARTITION_STATE + r" since it is already a follower with leader epoch "
        r"(?P<d_reported_leader_epoch>" + NUMBER + r")\.",
        contains=(" since it is already a follower with leader epoch ",), version="3.3+",
        const={"d_reason": "leader epoch not newer"}),
    LineTemplate("SKIP_FOLLOWER_PE", "become_follower_skipped", STATE_CHANGE, "Skipped the become-follower state change for ",
        r"Skipped the become-follower state change for " + TOPIC_PARTITION + r" with topic id " + OPTIONAL_TOPIC_ID
        + r" and partition state " + LEADER_AND_ISR_PARTITION_STATE + r" since the follower is already at a newer partition epoch "
        r"(?P<d_current_partition_epoch>" + NUMBER + r")\.",
        contains=(" since the follower is already at a newer partition epoch ",), version="3.3+",
        const={"d_reason": "stale partition epoch"}),
    LineTemplate("SKIP*", MALFORMED, STATE_CHANGE, "Skipped the become-"),
    # ---------------- §1.5 UpdateMetadata, broker side ----------------
    LineTemplate("U1", "update_metadata_stale_controller", STATE_CHANGE, "Received update metadata request with correlation id ",
        r"Received update metadata request with correlation id (?P<correlation_id>\d+) from an old controller "
        r"(?P<controller_id>\d+) with epoch (?P<controller_epoch>\d+)\. Latest known controller epoch is "
        r"(?P<known_controller_epoch>\d+)", const={"error": "STALE_CONTROLLER_EPOCH"}),
    LineTemplate("U2", "update_metadata_partition_deleted", STATE_CHANGE, "Deleted partition ",
        r"Deleted partition " + TOPIC_PARTITION + r" from metadata cache in response to UpdateMetadata request sent by "
        r"controller (?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) with correlation id "
        r"(?P<correlation_id>\d+)"),
    LineTemplate("U3", "update_metadata_applied", STATE_CHANGE, "Cached leader info ",
        r"Cached leader info " + UPDATE_METADATA_PARTITION_STATE + r" for partition " + TOPIC_PARTITION + r" in response to UpdateMetadata request "
        r"sent by controller (?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) with correlation id "
        r"(?P<correlation_id>\d+)"),
    LineTemplate("U4", "update_metadata_applied", STATE_CHANGE, "Add ",
        r"Add (?P<d_cached_count>\d+) partitions and deleted (?P<d_deleted_count>\d+) partitions from metadata "
        r"cache in response to UpdateMetadata request sent by controller (?P<controller_id>\d+) epoch "
        r"(?P<controller_epoch>\d+) with correlation id (?P<correlation_id>\d+)",
        contains=(" in response to UpdateMetadata request ",)),
]


CONTROLLER_STATE_CHANGE_TEMPLATES: list[LineTemplate] = [
    # ---------------- §1.3 controller side (state-change logger) ----------------
    LineTemplate("C_SEND_LAI", "controller_send_leader_and_isr", STATE_CHANGE, "Sending become-",
        r"Sending (?P<d_transition>become-leader|become-follower) LeaderAndIsr request " + LEADER_AND_ISR_PARTITION_STATE
        + r" to broker (?P<replica_id>\d+) for partition " + TOPIC_PARTITION, version="@partition_state"),
    LineTemplate("C_SEND_UM", "controller_send_update_metadata", STATE_CHANGE, "Sending UpdateMetadata request to brokers ",
        r"Sending UpdateMetadata request to brokers (?P<_brokers>\w*\([^)]*\)) for (?P<d_partition_count>\d+) "
        r"partitions", fanout="_brokers"),
    LineTemplate("C_SEND_SR", "controller_send_stop_replica", STATE_CHANGE, "Sending StopReplica request StopReplicaPartitionState(",
        r"Sending StopReplica request " + STOP_REPLICA_PARTITION_STATE + r" to broker (?P<replica_id>\d+) for partition " + TOPIC_PARTITION),
    LineTemplate("C_CHANGED", "controller_partition_state_change", STATE_CHANGE, "Changed partition ",
        r"Changed partition " + TOPIC_PARTITION + r" from (?P<d_from_state>\w+) to (?P<d_to_state>\w+) with state " + LEADER_AND_ISR,
        contains=(" with state LeaderAndIsr(",), version="@leader_and_isr"),
    LineTemplate("C_ISR_OFFLINE", "controller_isr_change", STATE_CHANGE, "Partition ",
        r"Partition " + TOPIC_PARTITION + r" state changed to " + LEADER_ISR_AND_CONTROLLER_EPOCH + r" after removing replica (?P<replica_id>\d+) "
        r"from the ISR as part of transition to OfflineReplica",
        contains=(" state changed to (Leader:",), version="@isr_controller_epoch"),
    LineTemplate("C_REASSIGN", "controller_reassignment_send", STATE_CHANGE + ZK_CONTROLLER, "Sent LeaderAndIsr request (Leader:",
        r"Sent LeaderAndIsr request " + LEADER_ISR_AND_CONTROLLER_EPOCH + r" with new replica assignment (?P<d_assignment>.*) to leader "
        r"(?P<replica_id>\d+) for partition being reassigned " + TOPIC_PARTITION, version="@isr_controller_epoch"),
]
