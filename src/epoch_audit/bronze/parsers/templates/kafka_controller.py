"""Kafka controller templates: the ZK controller (reference §2.4), KRaft AlterPartition rejections
(§2.4), KRaft replay / registration lines (§3.1) and the raft layer's state transitions.

Order matters within a family: variants go from the most specific prefilter to the least.
"""

from __future__ import annotations

from epoch_audit.bronze.parsers import MALFORMED
from epoch_audit.bronze.parsers.line_template import LineTemplate
from epoch_audit.bronze.parsers.templates.kafka_fragments import (
    KRAFT_CONTROLLER,
    LEADER_AND_ISR,
    NUMBER,
    RAFT,
    TOPIC_PARTITION,
    UUID,
    ZK_CONTROLLER,
)

_ALTER_PARTITION_REJECTED = r"Rejecting AlterPartition request from node (?P<d_from_node>\d+) for " + TOPIC_PARTITION + " because "


CONTROLLER_TEMPLATES: list[LineTemplate] = [
    # ---------------- §2.4 ZK controller (kafka.controller.KafkaController) ----------------
    LineTemplate("Z_UNKNOWN_BROKER", "controller_alter_partition_rejected", ZK_CONTROLLER, "Ignoring Alter",
        r"Ignoring Alter(?P<d_api>Partition|Isr) due to unknown broker (?P<replica_id>\d+)",
        contains=(" due to unknown broker ",), const={"error": "STALE_BROKER_EPOCH", "d_reason": "unknown broker"}),
    LineTemplate("Z_STALE_BE", "controller_alter_partition_rejected", ZK_CONTROLLER, "Ignoring Alter",
        r"Ignoring Alter(?P<d_api>Partition|Isr) due to stale broker epoch (?P<broker_epoch>" + NUMBER + r") and "
        r"local broker epoch (?:Some\((?P<d_local_broker_epoch>" + NUMBER + r")\)|None) for broker "
        r"(?P<replica_id>\d+)",
        contains=(" due to stale broker epoch ",),
        const={"error": "STALE_BROKER_EPOCH", "d_reason": "stale broker epoch"}),
    LineTemplate("Z_RECOVERING", "controller_alter_partition_rejected", ZK_CONTROLLER, "Rejecting AlterPartition from node ",
        r"Rejecting AlterPartition from node (?P<d_from_node>\d+) for " + TOPIC_PARTITION + r" because leader is recovering "
        r"and ISR is greater than 1: " + LEADER_AND_ISR, version="@leader_and_isr",
        const={"error": "INVALID_REQUEST", "d_reason": "leader recovering"}),
    LineTemplate("Z_BAD_ZK", "controller_alter_partition_rejected", ZK_CONTROLLER, "Failed to update ISR to ",
        r"Failed to update ISR to (?:" + LEADER_AND_ISR + r"|(?P<_new_isr>.*?)) for partition " + TOPIC_PARTITION + r", bad ZK version\.",
        version="@leader_and_isr_if_printed",
        const={"error": "INVALID_UPDATE_VERSION", "d_reason": "bad ZK version"}),
    # Seen in real 3.9 ZK controller.log (epoch-audit lab): the only controller.log line that names the controller
    # epoch; the "ISR for partition" decisions below it in the same file take their epoch from it.
    # The message starts with the broker id; templates route on their first character, hence one per digit.
    *(LineTemplate(f"Z_ELECTED_{digit}", "controller_failover", ZK_CONTROLLER, digit,
        r"(?P<controller_id>\d+) successfully elected as the controller\. Epoch incremented to "
        r"(?P<controller_epoch>\d+) and epoch zk version is now (?P<d_epoch_zk_version>\d+)",
        contains=(" successfully elected as the controller. Epoch incremented to ",)) for digit in "0123456789"),
    LineTemplate("Z_ISR_UPDATED", "controller_isr_updated", ZK_CONTROLLER, "ISR for partition ",
        r"ISR for partition " + TOPIC_PARTITION + r" updated to (?:" + LEADER_AND_ISR + r"|(?P<_new_isr>.*))\.",
        version="@leader_and_isr_if_printed"),
    # ---------------- §2.4 AlterPartition rejections: KRaft (and the ZK ineligible line) ----------------
    LineTemplate("REJ_INELIGIBLE", "controller_alter_partition_rejected", KRAFT_CONTROLLER + ZK_CONTROLLER, "Rejecting AlterPartition request from node ",
        _ALTER_PARTITION_REJECTED + r"it specified ineligible replicas (?P<_ineligible>\[.*?\]|\w*\([^)]*\)) in the new ISR "
        r"(?P<_new_isr>\[.*\]|List\([^)]*\))\.",
        contains=(" because it specified ineligible replicas ",), version="3.3+",
        const={"error": "INELIGIBLE_REPLICA"},
        fanout="_ineligible"),
    LineTemplate("REJ_LE_GT", "controller_alter_partition_rejected", KRAFT_CONTROLLER, "Rejecting AlterPartition request from node ",
        _ALTER_PARTITION_REJECTED + r"the current leader epoch is (?P<current_leader_epoch>" + NUMBER + r"), which is greater than the "
        r"local value (?P<leader_epoch>" + NUMBER + r")\.",
        contains=(" because the current leader epoch is ", ", which is greater than the local value "),
        const={"error": "NOT_CONTROLLER"}),
    LineTemplate("REJ_PE_GT", "controller_alter_partition_rejected", KRAFT_CONTROLLER, "Rejecting AlterPartition request from node ",
        _ALTER_PARTITION_REJECTED + r"the current partition epoch is (?P<d_controller_partition_epoch>" + NUMBER + r"), which is greater "
        r"than the local value (?P<partition_epoch>" + NUMBER + r")\.",
        contains=(" because the current partition epoch is ", ", which is greater than the local value "),
        const={"error": "NOT_CONTROLLER"}),
    LineTemplate("REJ_LE", "controller_alter_partition_rejected", KRAFT_CONTROLLER, "Rejecting AlterPartition request from node ",
        _ALTER_PARTITION_REJECTED + r"the current leader epoch is (?P<current_leader_epoch>" + NUMBER + r"), not (?P<leader_epoch>" + NUMBER
        + r")\.", contains=(" because the current leader epoch is ",), const={"error": "FENCED_LEADER_EPOCH"}),
    LineTemplate("REJ_PE", "controller_alter_partition_rejected", KRAFT_CONTROLLER, "Rejecting AlterPartition request from node ",
        _ALTER_PARTITION_REJECTED + r"the current partition epoch is (?P<d_controller_partition_epoch>" + NUMBER + r"), not "
        r"(?P<partition_epoch>" + NUMBER + r")\.",
        contains=(" because the current partition epoch is ",), const={"error": "INVALID_UPDATE_VERSION"}),
    LineTemplate("REJ_LEADER", "controller_alter_partition_rejected", KRAFT_CONTROLLER, "Rejecting AlterPartition request from node ",
        _ALTER_PARTITION_REJECTED + r"the current leader is (?P<leader>" + NUMBER + r")\.",
        contains=(" because the current leader is ",), const={"error": "INVALID_REQUEST"}),
    LineTemplate("REJ_INVALID_ISR", "controller_alter_partition_rejected", KRAFT_CONTROLLER, "Rejecting AlterPartition request from node ",
        _ALTER_PARTITION_REJECTED + r"it specified an invalid ISR (?P<_new_isr>\[.*?\])(?P<_no_leader> that doesn't "
        r"include itself)?\.",
        contains=(" because it specified an invalid ISR ",),
        const={"error": "INVALID_REQUEST", "d_reason": "invalid ISR"}),
    LineTemplate("REJ_RECOVERING", "controller_alter_partition_rejected", KRAFT_CONTROLLER, "Rejecting AlterPartition request from node ",
        _ALTER_PARTITION_REJECTED + r"(?:the ISR (?P<_new_isr>\[.*?\]) had more than one replica while the leader was still "
        r"recovering from an unclean leader election (?P<d_leader_recovery_state>\w+)|the leader recovery "
        r"state cannot change from RECOVERED to RECOVERING)\.",
        contains_any=(" unclean leader election ", " cannot change from RECOVERED to RECOVERING"),
        const={"error": "INVALID_REQUEST", "d_reason": "leader recovery state"}),
    LineTemplate("REJ*", MALFORMED, KRAFT_CONTROLLER, "Rejecting AlterPartition request from node "),
    LineTemplate("REJ_UNKNOWN_TOPIC", "controller_alter_partition_rejected", KRAFT_CONTROLLER,
        "Rejecting AlterPartition request for unknown topic ID ",
        r"Rejecting AlterPartition request for unknown topic ID (?P<topic_id>" + UUID + r") or name "
        r"(?P<d_topic_name>\S+)\.", const={"d_reason": "unknown topic"}),
    LineTemplate("REJ_UNKNOWN_PARTITION", "controller_alter_partition_rejected", KRAFT_CONTROLLER,
        "Rejecting AlterPartition request for unknown partition ",
        r"Rejecting AlterPartition request for unknown partition " + TOPIC_PARTITION + r"\.",
        const={"error": "UNKNOWN_TOPIC_OR_PARTITION", "d_reason": "unknown partition"}),
    LineTemplate("K_ISR_ALTERED", "controller_isr_updated", KRAFT_CONTROLLER, "Node ",
        r"Node (?P<d_from_node>\d+) has altered ISR for " + TOPIC_PARTITION + r" to (?P<_new_isr>\[.*\])\.",
        contains=(" has altered ISR for ",)),
    # ---------------- KRaft controller replay lines (§3.1), 3.6-3.9 and 2.8-3.5 texts ----------------
    LineTemplate("R_TOPIC", "controller_replayed", KRAFT_CONTROLLER, "Replayed TopicRecord for topic ",
        r"Replayed TopicRecord for topic (?P<topic>\S+) with topic ID (?P<topic_id>" + UUID + r")\.",
        version="3.6+", const={"record_type": "TopicRecord"}),
    LineTemplate("R_TOPIC_OLD", "controller_replayed", KRAFT_CONTROLLER, "Created topic ",
        r"Created topic (?P<topic>\S+) with topic ID (?P<topic_id>" + UUID + r")\.",
        version="2.8-3.5", const={"record_type": "TopicRecord"}),
    LineTemplate("R_REMOVE_TOPIC", "controller_replayed", KRAFT_CONTROLLER, "Replayed RemoveTopicRecord for topic ",
        r"Replayed RemoveTopicRecord for topic (?P<topic>\S+) with ID (?P<topic_id>" + UUID + r")\.",
        version="3.6+", const={"record_type": "RemoveTopicRecord"}),
    LineTemplate("R_REMOVE_TOPIC_OLD", "controller_replayed", KRAFT_CONTROLLER, "Removed topic ",
        r"Removed topic (?P<topic>\S+) with ID (?P<topic_id>" + UUID + r")\.",
        version="2.8-3.5", const={"record_type": "RemoveTopicRecord"}),
    LineTemplate("R_PARTITION", "controller_replayed", KRAFT_CONTROLLER, "Replayed PartitionRecord for ",
        r"Replayed PartitionRecord for (?P<d_partition_status>new|existing) partition " + TOPIC_PARTITION + r" with topic ID "
        r"(?P<topic_id>" + UUID + r") and (?P<_partition_registration>PartitionRegistration\(.*\))\.",
        version="3.6+", const={"record_type": "PartitionRecord"}),
    LineTemplate("R_PARTITION_OLD", "controller_replayed", KRAFT_CONTROLLER, "Created partition ",
        r"Created partition " + TOPIC_PARTITION + r" with topic ID (?P<topic_id>" + UUID + r") and "
        r"(?P<_partition_registration>\w+\(.*\))\.",
        version="2.8-3.5", const={"record_type": "PartitionRecord", "d_partition_status": "new"}),
    LineTemplate("R_PARTITION_CHANGE", "controller_replayed", KRAFT_CONTROLLER, "Replayed partition ",
        r"Replayed partition (?P<d_assignment_change>assignment )?change (?P<_partition_change_record>PartitionChangeRecord\(.*\)) "
        r"for topic (?P<topic>\S+)",
        contains=(" change PartitionChangeRecord(",), version="3.6+",
        const={"record_type": "PartitionChangeRecord"}),
    LineTemplate("R_DIFF_UNCLEAN", "controller_partition_diff", KRAFT_CONTROLLER, "UNCLEAN partition change for ",
        r"(?P<_unclean>UNCLEAN )partition change for " + TOPIC_PARTITION + r"(?: with topic ID (?P<topic_id>" + UUID
        + r"))?: (?P<_change_summary>.*)"),
    LineTemplate("R_DIFF", "controller_partition_diff", KRAFT_CONTROLLER, "partition change for ",
        r"(?P<_unclean>UNCLEAN )?partition change for " + TOPIC_PARTITION + r"(?: with topic ID (?P<topic_id>" + UUID
        + r"))?: (?P<_change_summary>.*)"),
    LineTemplate("R_FENCING", "controller_fencing_broker", KRAFT_CONTROLLER, "Fencing broker ",
        # " at epoch <broker epoch>": seen in real 4.1 controller.log (epoch-audit lab); 3.9 logs none
        r"Fencing broker (?P<broker_id>\d+)(?: at epoch (?P<broker_epoch>\d+))? because its session has timed out\.",
        const={"fenced": True, "d_reason": "session timed out"}),
    LineTemplate("R_REG_INITIAL", "controller_replayed", KRAFT_CONTROLLER, "Replayed initial RegisterBrokerRecord for broker ",
        r"Replayed initial RegisterBrokerRecord for broker (?P<broker_id>\d+): (?P<_registration_record>RegisterBrokerRecord\(.*\))",
        version="3.6+", const={"d_registration": "initial"}),
    LineTemplate("R_REG_MODIFY", "controller_replayed", KRAFT_CONTROLLER, "Replayed RegisterBrokerRecord modifying the registration for broker ",
        r"Replayed RegisterBrokerRecord modifying the registration for broker (?P<broker_id>\d+): "
        r"(?P<_registration_record>RegisterBrokerRecord\(.*\))",
        version="3.6+", const={"d_registration": "modify"}),
    LineTemplate("R_REG_INCARNATION", "controller_replayed", KRAFT_CONTROLLER, "Replayed RegisterBrokerRecord establishing a new incarnation of broker ",
        r"Replayed RegisterBrokerRecord establishing a new incarnation of broker (?P<broker_id>\d+): "
        r"(?P<_registration_record>RegisterBrokerRecord\(.*\))",
        version="3.6+", const={"d_registration": "new incarnation"}),
    LineTemplate("R_UNREGISTER", "controller_replayed", KRAFT_CONTROLLER, "Replayed UnregisterBrokerRecord(",
        r"Replayed (?P<_registration_record>UnregisterBrokerRecord\(.*\))", version="3.6+"),
    LineTemplate("R_REG_CHANGE", "controller_replayed", KRAFT_CONTROLLER, "Replayed ",
        r"Replayed (?P<record_type>FenceBrokerRecord|UnfenceBrokerRecord|BrokerRegistrationChangeRecord) "
        r"modifying the registration for broker (?P<broker_id>\d+): (?P<_registration_record>\w+\(.*\))",
        contains=(" modifying the registration for broker ",), version="3.6+"),
    LineTemplate("R_TXN", "controller_replayed", KRAFT_CONTROLLER, "Replayed ",
        r"Replayed (?P<record_type>BeginTransactionRecord|EndTransactionRecord|AbortTransactionRecord)"
        r"\((?:name='(?P<d_name>.*)'|reason='(?P<d_reason>.*)'|name=null|reason=null)?\) at offset "
        r"(?P<metadata_offset>\d+)\.(?: Reverted to offset (?P<d_reverted_to_offset>\d+)\.)?",
        contains=("TransactionRecord(",), version="3.6+"),
    LineTemplate("R_REG_CONTROLLER", "controller_replayed", KRAFT_CONTROLLER, "Replayed RegisterControllerRecord contaning ",
        r"Replayed RegisterControllerRecord contaning ControllerRegistration\(id=(?P<broker_id>\d+), "
        r"incarnationId=(?P<d_incarnation_id>" + UUID + r")(?:, .*)?\)\.(?: Previous incarnation was "
        r"(?P<d_previous_incarnation_id>" + UUID + r"))?",
        version="3.7+", const={"record_type": "RegisterControllerRecord"}),
    LineTemplate("R_NOOP_REG", None, KRAFT_CONTROLLER, "Ignoring no-op registration change for "),
    # 3.3-3.5 registration texts
    LineTemplate("R_REGISTERED", "controller_replayed", KRAFT_CONTROLLER, "Registered new broker: ",
        r"Registered new broker: (?P<_registration_record>\w+\(.*\))", version="3.3-3.5",
        const={"d_registration": "initial"}),
    LineTemplate("R_REREG_INCARNATION", "controller_replayed", KRAFT_CONTROLLER, "Re-registered broker incarnation: ",
        r"Re-registered broker incarnation: (?P<_registration_record>\w+\(.*\))", version="3.3-3.5",
        const={"d_registration": "new incarnation"}),
    LineTemplate("R_REREG_ID", "controller_replayed", KRAFT_CONTROLLER, "Re-registered broker id ",
        r"Re-registered broker id (?P<broker_id>\d+): (?P<_registration_record>\w+\(.*\))", version="3.3-3.5",
        const={"d_registration": "modify"}),
    LineTemplate("R_UNREGISTERED", "controller_replayed", KRAFT_CONTROLLER, "Unregistered broker: ",
        r"Unregistered broker: (?P<_registration_record>\w+\(.*\))", version="3.3-3.5"),
    LineTemplate("R_FENCED_OLD", "controller_replayed", KRAFT_CONTROLLER, "Fenced broker: ",
        r"Fenced broker: (?P<_registration_record>\w+\(.*\))", version="3.3", const={"fenced": True}),
    LineTemplate("R_UNFENCED_OLD", "controller_replayed", KRAFT_CONTROLLER, "Unfenced broker: ",
        r"Unfenced broker: (?P<_registration_record>\w+\(.*\))", version="3.3", const={"fenced": False}),
    # ---------------- KRaft raft layer ----------------
    LineTemplate("RAFT_TRANSITION", "raft_state_transition", RAFT, "Completed transition to ",
        r"Completed transition to (?P<d_state>\w+)\((?P<_state>.*)",
        version="@kraft"),
]
