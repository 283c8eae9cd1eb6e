"""Kafka ``kafka.cluster.Partition`` and AlterPartitionManager templates: leader-side ISR changes
(reference §2.1) and AlterPartition response handling (§2.2).

Order matters within a family: variants go from the most specific prefilter to the least.
"""

from __future__ import annotations

from epoch_audit.bronze.parsers.line_template import LineTemplate
from epoch_audit.bronze.parsers.templates.kafka_fragments import (
    ALTER_PARTITION_MANAGER,
    ERROR_FROM_REASON,
    NUMBER,
    PARTITION,
    UNDER_MIN_ISR,
)

_FAILED_ALTER = r"Failed to alter partition to (?P<_pending>.*?) "
_AWAITING_METADATA = r" Partition state may be out of sync, awaiting new the latest metadata\."
# 2.7-3.0 expand lines print the sent LeaderAndIsr before the PendingExpandIsr: captured (first, lazy)
# by a lookahead into ``_sent`` while the main pattern stays greedy.
_SENT_LEADER_AND_ISR = r"(?=(?P<_sent>LeaderAndIsr\(.*?\)) after transition)"


PARTITION_TEMPLATES: list[LineTemplate] = [
    # ---------------- §2.1 leader-side ISR changes (kafka.cluster.Partition) ----------------
    LineTemplate("SHRINK", "isr_shrink", PARTITION, "Shrinking ISR from ",
        r"Shrinking ISR from (?P<d_old_isr>[\d,]*) to (?P<isr>[\d,]+)\. Leader: \(highWatermark: "
        r"(?P<high_watermark>" + NUMBER + r"|unknown), endOffset: (?P<d_leader_end_offset>" + NUMBER + r"|unknown)\)\. "
        r"Out of sync replicas: (?P<_out_of_sync>.*)\.",
        version="@shrink",
        fanout="_out_of_sync"),
    LineTemplate("EXPAND_26", "isr_expand", PARTITION, "Expanding ISR from ",
        r"Expanding ISR from (?P<d_old_isr>[\d,]*) to (?P<isr>[\d,]+)", version="2.6-2.7",
        fanout="isr"),
    LineTemplate("EXPAND_31", "isr_expand", PARTITION, "Submitting ISR state change PendingExpandIsr(",
        r"Submitting ISR state change (?P<_pending>PendingExpandIsr\(.*\))", version="3.1+"),
    LineTemplate("EXPAND_28", "isr_expand", PARTITION, "Enqueued ISR change to state ",
        r"Enqueued ISR change to state " + _SENT_LEADER_AND_ISR + r"LeaderAndIsr\(.*\) after transition to "
        r"(?P<_pending>PendingExpandIsr\(.*\))",
        contains=("PendingExpandIsr(",), version="2.8-3.0"),
    LineTemplate("EXPAND_27", "isr_expand", PARTITION, "Sent `AlterIsr` request to change state to ",
        r"Sent `AlterIsr` request to change state to " + _SENT_LEADER_AND_ISR + r"LeaderAndIsr\(.*\) after transition to "
        r"(?P<_pending>PendingExpandIsr\(.*\))",
        contains=("PendingExpandIsr(",), version="2.7"),
    LineTemplate("ISR_UPDATED_26", "isr_updated", PARTITION, "ISR updated to [",
        r"ISR updated to (?P<isr>\[[\d,]*\]) and zkVersion updated to \[(?P<partition_epoch>\d+)\]",
        version="2.6-2.7"),
    # 2.6 (and 2.7 direct-ZK path): the ISR write lost a ZK version race, nothing was updated.
    LineTemplate("ISR_ZK_CONFLICT", "alter_partition_failed", PARTITION, "Cached zkVersion ",
        r"Cached zkVersion (?P<partition_epoch>\d+) not equal to that in zookeeper, skip updating ISR",
        version="2.6-2.7", const={"error": "INVALID_UPDATE_VERSION", "d_reason": "cached zkVersion mismatch"}),
    LineTemplate("ISR_UPDATED_27", "isr_updated", PARTITION, "ISR updated from AlterIsr to ",
        r"ISR updated from AlterIsr to (?P<isr>[\d,]+) and version updated to \[(?P<partition_epoch>\d+)\]",
        version="2.7"),
    LineTemplate("ISR_UPDATED_28", "isr_updated", PARTITION, "ISR updated to ",
        r"ISR updated to (?P<isr>[\d,]+) and version updated to \[(?P<partition_epoch>\d+)\]",
        contains=(" and version updated to [",), version="2.8-3.0"),
    LineTemplate("ISR_UPDATED_35", "isr_updated", PARTITION, "ISR updated to ",
        r"ISR updated to (?P<isr>[\d,]+) " + UNDER_MIN_ISR + r" and version updated to (?P<partition_epoch>\d+)",
        contains_any=(" (under-min-isr) and version updated to ", "  and version updated to "), version="3.5+"),
    LineTemplate("ISR_UPDATED_31", "isr_updated", PARTITION, "ISR updated to ",
        r"ISR updated to (?P<isr>[\d,]+) and version updated to (?P<partition_epoch>\d+)", version="3.1-3.4"),
    # ---------------- §2.2 AlterPartition response handling (leader side) ----------------
    LineTemplate("AP_REJECTED", "alter_partition_failed", PARTITION, "Failed to alter partition to ",
        _FAILED_ALTER + r"since the controller rejected the request with (?P<error>[A-Z_]+)\. Partition state "
        r"has been reset to the latest committed state (?P<d_committed_state>.*)\.",
        contains=(" since the controller rejected the request with ",), version="3.3+"),
    LineTemplate("AP_UNKNOWN_TP", "alter_partition_failed", PARTITION, "Failed to alter partition to ",
        _FAILED_ALTER + r"since the controller doesn't know about this topic or partition\." + _AWAITING_METADATA,
        contains=(" doesn't know about this topic or partition.",), version="3.3+",
        const={"error": "UNKNOWN_TOPIC_OR_PARTITION"}),
    LineTemplate("AP_UNKNOWN_TOPIC_ID", "alter_partition_failed", PARTITION, "Failed to alter partition to ",
        _FAILED_ALTER + r"since the controller doesn't know about this topic\." + _AWAITING_METADATA,
        contains=(" doesn't know about this topic.",), version="3.3+",
        const={"error": "UNKNOWN_TOPIC_ID"}),
    LineTemplate("AP_FENCED", "alter_partition_failed", PARTITION, "Failed to alter partition to ",
        _FAILED_ALTER + r"since the leader epoch is old\." + _AWAITING_METADATA,
        contains=(" since the leader epoch is old.",), version="3.3+",
        const={"error": "FENCED_LEADER_EPOCH"}),
    LineTemplate("AP_BAD_VERSION", "alter_partition_failed", PARTITION, "Failed to alter partition to ",
        _FAILED_ALTER + r"because the partition epoch is invalid\." + _AWAITING_METADATA,
        contains=(" because the partition epoch is invalid.",), version="3.3+",
        const={"error": "INVALID_UPDATE_VERSION"}),
    LineTemplate("AP_INVALID", "alter_partition_failed", PARTITION, "Failed to alter partition to ",
        _FAILED_ALTER + r"because the request is invalid\." + _AWAITING_METADATA,
        contains=(" because the request is invalid.",), version="3.3+",
        const={"error": "INVALID_REQUEST"}),
    # 3.2 texts end with "Giving up." and the OPERATION_NOT_ATTEMPTED one differs (§2.2, partly recorded).
    LineTemplate("AP_32", "alter_partition_failed", PARTITION, "Failed to alter partition to ",
        _FAILED_ALTER + r"(?P<d_reason>(?:since|because|due to) .*)",
        version="3.2", uses=(ERROR_FROM_REASON,)),
    LineTemplate("AP_UNEXPECTED", "alter_partition_failed", PARTITION, "Failed to update ISR to ",
        r"Failed to update ISR to (?P<_pending>.*) due to unexpected (?P<error>[A-Z_]+)\. Retrying\.",
        contains=(" due to unexpected ",)),
    # 2.8-3.1 DEBUG texts and 2.7 "Controller failed to update ISR", only partly recorded: loose.
    LineTemplate("AP_28", "alter_partition_failed", PARTITION, "Failed to update ISR to ",
        r"Failed to update ISR to (?P<_pending>Pending\w+\(.*?\)) (?P<d_reason>(?:since|due to) .*)",
        version="2.8-3.1", uses=(ERROR_FROM_REASON,)),
    LineTemplate("AP_27", "alter_partition_failed", PARTITION, "Controller failed to update ISR to ",
        r"Controller failed to update ISR to (?P<_pending>Pending\w+\(.*?\)) (?P<d_reason>.*)",
        version="2.7", uses=(ERROR_FROM_REASON,)),
    LineTemplate("AP_STALE_BE", "alter_partition_stale_broker_epoch", ALTER_PARTITION_MANAGER, "Broker had a stale broker epoch (",
        r"Broker had a stale broker epoch \((?P<broker_epoch>" + NUMBER + r")\), retrying\.",
        const={"error": "STALE_BROKER_EPOCH"}),
]
