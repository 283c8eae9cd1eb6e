"""Kafka ``kafka.server.KafkaApis`` templates: stale broker epochs (reference §1.1/§1.2/§1.5) and
produce / fetch failures (§6.1).
"""

from __future__ import annotations

from epoch_audit.bronze.parsers.line_template import LineTemplate
from epoch_audit.bronze.parsers.templates.kafka_fragments import (
    ERROR_FROM_EXCEPTION,
    KAFKA_APIS,
    NUMBER,
    TOPIC_PARTITION,
)

_STALE_BROKER_EPOCH_TAIL = (
    r" request with broker epoch (?P<broker_epoch>" + NUMBER + r") smaller than the current broker epoch "
    r"(?P<d_current_broker_epoch>" + NUMBER + r")(?: from controller (?P<controller_id>\d+) with epoch "
    r"(?P<controller_epoch>\d+)\.)?"
)


KAFKA_APIS_TEMPLATES: list[LineTemplate] = [
    # ---------------- §1.1/§1.2/§1.5 KafkaApis stale broker epoch ----------------
    LineTemplate("API_SR_BE", "stop_replica_stale_broker_epoch", KAFKA_APIS, "Received StopReplica request with broker epoch ",
        r"Received StopReplica" + _STALE_BROKER_EPOCH_TAIL, version="@stale_broker_epoch", const={"error": "STALE_BROKER_EPOCH"}),
    LineTemplate("API_LAI_BE", "leader_and_isr_stale_broker_epoch", KAFKA_APIS,
        "Received LeaderAndIsr request with broker epoch ",
        r"Received LeaderAndIsr" + _STALE_BROKER_EPOCH_TAIL, version="@stale_broker_epoch", const={"error": "STALE_BROKER_EPOCH"}),
    LineTemplate("API_UM_BE_26", "update_metadata_stale_broker_epoch", KAFKA_APIS,
        "Received update metadata request with broker epoch ",
        r"Received update metadata" + _STALE_BROKER_EPOCH_TAIL, version="2.6-3.3", const={"error": "STALE_BROKER_EPOCH"}),
    LineTemplate("API_UM_BE_34", "update_metadata_stale_broker_epoch", KAFKA_APIS,
        "Received UpdateMetadata request with broker epoch ",
        r"Received UpdateMetadata" + _STALE_BROKER_EPOCH_TAIL, version="3.4+", const={"error": "STALE_BROKER_EPOCH"}),
    # ---------------- §6.1 KafkaApis produce / fetch failures ----------------
    LineTemplate("API_PRODUCE", "produce_error", KAFKA_APIS, "Produce request with correlation id ",
        r"Produce request with correlation id (?P<correlation_id>\d+) from client (?P<d_client_id>.*?) on "
        r"partition " + TOPIC_PARTITION + r" failed due to (?P<d_exception>[\w.$]+)",
        uses=(ERROR_FROM_EXCEPTION,)),
    LineTemplate("API_FETCH", "fetch_epoch_error", KAFKA_APIS, "Fetch request with correlation id ",
        r"Fetch request with correlation id (?P<correlation_id>\d+) from client (?P<d_client_id>.*?) on "
        r"partition " + TOPIC_PARTITION + r" failed due to (?P<d_exception>[\w.$]+)",
        uses=(ERROR_FROM_EXCEPTION,)),
    # acks=0: the message spans two lines; the partitions are on the second (matched on ``text``).
    LineTemplate("API_PRODUCE_ACK0", "produce_error", KAFKA_APIS, "Closing connection due to error during produce request ",
        r"(?s)Closing connection due to error during produce request with correlation id "
        r"(?P<correlation_id>\d+) from client id (?P<d_client_id>.*?) with ack=0\s*\n?"
        r"Topic and partition to exceptions: (?P<_partition_exceptions>.*)",
        fanout="_partition_exceptions"),
]
