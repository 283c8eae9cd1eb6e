"""Kafka broker server-log templates: fetcher and log managers (reference §1.1), log start offset
(§4.3), the replica fetcher (§6.2) and the producer client (§6.3).
"""

from __future__ import annotations

from epoch_audit.bronze.parsers.line_template import LineTemplate
from epoch_audit.bronze.parsers.templates.kafka_fragments import (
    ERROR_FROM_EXCEPTION,
    FETCHER_MANAGER,
    FETCHER_THREAD,
    LOG,
    LOG_MANAGER,
    NUMBER,
    PRODUCER_SENDER,
    TOPIC_PARTITION,
)

SERVER_TEMPLATES: list[LineTemplate] = [
    # ---------------- fetcher manager / log manager (§1.1) ----------------
    LineTemplate("FETCHER_REMOVED", "fetcher_removed", FETCHER_MANAGER, "Removed fetcher for partitions ",
        r"Removed fetcher for partitions (?P<_topic_partitions>\w*\(.*\))", fanout="_topic_partitions"),
    LineTemplate("FETCHER_ADDED", "fetcher_added", FETCHER_MANAGER, "Added fetcher to broker ",
        r"Added fetcher to broker (?:BrokerEndPoint\(id=(?P<leader>\d+), host=[^)]*\)|(?P<_fetch_leader_id>\d+)) for "
        r"partitions (?P<_fetch_map>\w*\(.*\))",
        fanout="_fetch_map"),
    LineTemplate("LOG_RENAMED", "log_deletion_scheduled", LOG_MANAGER, "Log for partition ",
        r"Log for partition " + TOPIC_PARTITION + r" is renamed to (?P<d_dir>.*) and is scheduled for deletion",
        contains=(" and is scheduled for deletion",)),
    LineTemplate("LOG_DELETED", "log_deleted", LOG_MANAGER, "Deleted log for partition ",
        r"Deleted log for partition " + TOPIC_PARTITION + r" in (?P<d_dir>.*?)\.?"),
    # ---------------- §4.3 log start offset ----------------
    LineTemplate("LSO", "log_start_offset_incremented", LOG, "Incremented log start offset to ",
        r"Incremented log start offset to (?P<log_start_offset>\d+) due to (?P<d_reason>.+)",
        version="@log_start_offset"),
    # ---------------- §6.2 replica fetcher (follower side) ----------------
    LineTemplate("RF_OLDER", "fetch_epoch_error", FETCHER_THREAD, "Partition ",
        r"Partition " + TOPIC_PARTITION + r" has an older epoch \((?P<current_leader_epoch>" + NUMBER + r")\) than the current "
        r"leader\. Will await the new LeaderAndIsr state before resuming fetching\.",
        contains=(" has an older epoch (",), const={"error": "FENCED_LEADER_EPOCH", "d_reason": "older epoch"}),
    LineTemplate("RF_NEWER", "fetch_epoch_error", FETCHER_THREAD, "Partition ",
        r"Partition " + TOPIC_PARTITION + r" has a newer epoch \((?P<current_leader_epoch>" + NUMBER + r")\) than the current "
        r"leader\. Retry the partition later\.",
        contains=(" has a newer epoch (",), const={"error": "FENCED_LEADER_EPOCH", "d_reason": "newer epoch"}),
    LineTemplate("RF_UNKNOWN_EPOCH", "fetch_epoch_error", FETCHER_THREAD, "Remote broker has a smaller leader epoch for partition ",
        r"Remote broker has a smaller leader epoch for partition " + TOPIC_PARTITION + r" than this replica's current "
        r"leader epoch of (?P<current_leader_epoch>" + NUMBER + r")\.", const={"error": "UNKNOWN_LEADER_EPOCH"}),
    LineTemplate("RF_NOT_LEADER", "fetch_epoch_error", FETCHER_THREAD, "Remote broker is not the leader for partition ",
        r"Remote broker is not the leader for partition " + TOPIC_PARTITION + r", which could indicate that the partition "
        r"is being moved", const={"error": "NOT_LEADER_OR_FOLLOWER"}),
    # ---------------- §6.3 producer client ----------------
    LineTemplate("CLIENT_PRODUCE_ERROR", "produce_error", PRODUCER_SENDER, "Got error produce response with correlation id ",
        r"Got error produce response with correlation id (?P<correlation_id>\d+) on topic-partition " + TOPIC_PARTITION
        + r", retrying \((?P<d_attempts_left>-?\d+) attempts left\)\. Error: (?P<error>[A-Z_]+)"
        r"(?:\. Error Message: (?P<d_error_message>.*))?", const={"d_side": "client"}),
    LineTemplate("CLIENT_INVALID_METADATA", "produce_error", PRODUCER_SENDER, "Received invalid metadata error in produce request on partition ",
        r"Received invalid metadata error in produce request on partition " + TOPIC_PARTITION + r" due to "
        r"(?P<d_exception>[\w.$]+)(?:: ?(?P<d_error_message>.*?))? ?Going to request metadata update now",
        const={"d_side": "client"}, uses=(ERROR_FROM_EXCEPTION,)),
    LineTemplate("CLIENT_UNKNOWN_TP", "produce_error", PRODUCER_SENDER,
        "Received unknown topic or partition error in produce request on partition ",
        r"Received unknown topic or partition error in produce request on partition " + TOPIC_PARTITION + r"\. The "
        r"topic-partition may not exist or the user may not have Describe access to it",
        const={"d_side": "client", "error": "UNKNOWN_TOPIC_OR_PARTITION"}),
]
