"""The Kafka request log's JSON (reference §5): the APIs read, error names, and one explicit schema
per API (every version's fields), read as Spark's ``from_json`` would read it (see
:mod:`epoch_audit.bronze.parsers.request_log_json`).

Schema notation: a struct is a dict of field -> type, an array a one-element list of its element
type, a leaf one of ``int`` (int32), ``bigint``, ``string``, ``boolean``. JSON keys outside the
schema are skipped; a field of the schema absent from a version's JSON reads as null."""

from __future__ import annotations

PREFIX = "Completed request:"
API_EVENT_TYPES: dict[str, str] = {
    "PRODUCE": "request_produce",
    "FETCH": "request_fetch",
    "STOP_REPLICA": "request_stop_replica",
    "LEADER_AND_ISR": "request_leader_and_isr",
    "UPDATE_METADATA": "request_update_metadata",
    "ALTER_PARTITION": "request_alter_partition",
    "ALTER_ISR": "request_alter_partition",  # AlterIsr (2.7-3.1), renamed AlterPartition in 3.2
}

# Errors.java codes -> names (the ones the checks and the run summary need, and their neighbours).
ERROR_NAMES: dict[int, str] = {
    -1: "UNKNOWN_SERVER_ERROR",
    0: "NONE",
    1: "OFFSET_OUT_OF_RANGE",
    2: "CORRUPT_MESSAGE",
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    5: "LEADER_NOT_AVAILABLE",
    6: "NOT_LEADER_OR_FOLLOWER",
    7: "REQUEST_TIMED_OUT",
    8: "BROKER_NOT_AVAILABLE",
    9: "REPLICA_NOT_AVAILABLE",
    10: "MESSAGE_TOO_LARGE",
    11: "STALE_CONTROLLER_EPOCH",
    19: "NOT_ENOUGH_REPLICAS",
    20: "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    29: "TOPIC_AUTHORIZATION_FAILED",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    35: "UNSUPPORTED_VERSION",
    41: "NOT_CONTROLLER",
    42: "INVALID_REQUEST",
    45: "OUT_OF_ORDER_SEQUENCE_NUMBER",
    47: "INVALID_PRODUCER_EPOCH",
    55: "OPERATION_NOT_ATTEMPTED",
    56: "KAFKA_STORAGE_ERROR",
    57: "LOG_DIR_NOT_FOUND",
    70: "FETCH_SESSION_ID_NOT_FOUND",
    71: "INVALID_FETCH_SESSION_EPOCH",
    74: "FENCED_LEADER_EPOCH",
    75: "UNKNOWN_LEADER_EPOCH",
    77: "STALE_BROKER_EPOCH",
    78: "OFFSET_NOT_AVAILABLE",
    87: "INVALID_RECORD",
    95: "INVALID_UPDATE_VERSION",
    100: "UNKNOWN_TOPIC_ID",
    102: "BROKER_ID_NOT_REGISTERED",
    103: "INCONSISTENT_TOPIC_ID",
    106: "FETCH_SESSION_TOPIC_ID_ERROR",
    107: "INELIGIBLE_REPLICA",
    108: "NEW_LEADER_ELECTED",
    120: "TRANSACTION_ABORTABLE",
}

_I, _L, _S, _B = "int", "bigint", "string", "boolean"
_HEADER = {"requestApiKey": _I, "requestApiVersion": _I, "correlationId": _I, "clientId": _S, "requestApiKeyName": _S}
_LEADER = {"leaderId": _I, "leaderEpoch": _I}
_LAI_STATE = {
    "topicName": _S, "partitionIndex": _I, "controllerEpoch": _I, "leader": _I, "leaderEpoch": _I, "isr": [_I],
    "zkVersion": _I, "partitionEpoch": _I, "replicas": [_I], "addingReplicas": [_I], "removingReplicas": [_I],
    "isNew": _B, "leaderRecoveryState": _I,
}
_UM_STATE = {
    "topicName": _S, "partitionIndex": _I, "controllerEpoch": _I, "leader": _I, "leaderEpoch": _I, "isr": [_I],
    "zkVersion": _I, "replicas": [_I], "offlineReplicas": [_I],
}
_AP_PART = {
    "partitionIndex": _I, "errorCode": _I, "leaderId": _I, "leaderEpoch": _I, "newIsr": [_I],
    "newIsrWithEpochs": [{"brokerId": _I, "brokerEpoch": _L}], "isr": [_I], "leaderRecoveryState": _I,
    "partitionEpoch": _I, "currentIsrVersion": _I,
}
_CONTROLLER_FIELDS = {"controllerId": _I, "isKRaftController": _B, "controllerEpoch": _I, "brokerEpoch": _L}
_AP_TOPICS = [{"topicName": _S, "name": _S, "topicId": _S, "partitions": [_AP_PART]}]

# One explicit schema per API (fields of every version; JSON keys absent in a version -> null).
SCHEMAS: dict[str, dict] = {
    "PRODUCE": {
        "requestHeader": _HEADER,
        "request": {
            "transactionalId": _S, "acks": _I, "timeoutMs": _I,
            "topicData": [{"name": _S, "topicId": _S, "partitionData": [{"index": _I, "recordsSizeInBytes": _I}]}],
        },
        "response": {
            "responses": [{
                "name": _S, "topicId": _S,
                "partitionResponses": [{
                    "index": _I, "errorCode": _I, "baseOffset": _L, "logAppendTimeMs": _L, "logStartOffset": _L,
                    "errorMessage": _S, "currentLeader": _LEADER,
                }],
            }],
            "throttleTimeMs": _I,
        },
    },
    "FETCH": {
        "requestHeader": _HEADER,
        "request": {
            "replicaId": _I, "replicaState": {"replicaId": _I, "replicaEpoch": _L}, "maxWaitMs": _I,
            "sessionId": _I, "sessionEpoch": _I,
            "topics": [{
                "topic": _S, "topicId": _S,
                "partitions": [{
                    "partition": _I, "currentLeaderEpoch": _I, "fetchOffset": _L, "lastFetchedEpoch": _I,
                    "logStartOffset": _L, "partitionMaxBytes": _I,
                }],
            }],
        },
        "response": {
            "errorCode": _I, "sessionId": _I,
            "responses": [{
                "topic": _S, "topicId": _S,
                "partitions": [{
                    "partitionIndex": _I, "errorCode": _I, "highWatermark": _L, "lastStableOffset": _L,
                    "logStartOffset": _L, "divergingEpoch": {"epoch": _I, "endOffset": _L}, "currentLeader": _LEADER,
                    "preferredReadReplica": _I, "recordsSizeInBytes": _I,
                }],
            }],
        },
    },
    "STOP_REPLICA": {
        "requestHeader": _HEADER,
        "request": {
            **_CONTROLLER_FIELDS, "deletePartitions": _B,
            "ungroupedPartitions": [{"topicName": _S, "partitionIndex": _I}],
            "topics": [{"name": _S, "partitionIndexes": [_I]}],
            "topicStates": [{
                "topicName": _S,
                "partitionStates": [{"partitionIndex": _I, "leaderEpoch": _I, "deletePartition": _B}],
            }],
        },
        "response": {"errorCode": _I, "partitionErrors": [{"topicName": _S, "partitionIndex": _I, "errorCode": _I}]},
    },
    "LEADER_AND_ISR": {
        "requestHeader": _HEADER,
        "request": {
            **_CONTROLLER_FIELDS, "type": _I, "ungroupedPartitionStates": [_LAI_STATE],
            "topicStates": [{"topicName": _S, "topicId": _S, "partitionStates": [_LAI_STATE]}],
        },
        "response": {
            "errorCode": _I,
            "partitionErrors": [{"topicName": _S, "partitionIndex": _I, "errorCode": _I}],
            "topics": [{"topicId": _S, "partitionErrors": [{"partitionIndex": _I, "errorCode": _I}]}],
        },
    },
    "UPDATE_METADATA": {
        "requestHeader": _HEADER,
        "request": {
            **_CONTROLLER_FIELDS, "ungroupedPartitionStates": [_UM_STATE],
            "topicStates": [{"topicName": _S, "topicId": _S, "partitionStates": [_UM_STATE]}],
        },
        "response": {"errorCode": _I},
    },
    "ALTER_PARTITION": {
        "requestHeader": _HEADER,
        "request": {"brokerId": _I, "brokerEpoch": _L, "topics": _AP_TOPICS},
        "response": {"errorCode": _I, "topics": _AP_TOPICS},
    },
}
SCHEMAS["ALTER_ISR"] = SCHEMAS["ALTER_PARTITION"]
