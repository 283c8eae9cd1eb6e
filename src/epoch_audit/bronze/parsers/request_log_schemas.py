"""The Kafka request log's JSON (reference §5): the APIs read, error names, and one explicit
``from_json`` schema per API (every version's fields), plus the per-partition event struct the
request log parser builds for every API."""

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

_HEADER = (
    "requestHeader struct<requestApiKey:int,requestApiVersion:int,correlationId:int,clientId:string,"
    "requestApiKeyName:string>"
)
_CORRUPT = "_corrupt_record string"
_LEADER = "currentLeader struct<leaderId:int,leaderEpoch:int>"
_LAI_STATE = (
    "struct<topicName:string,partitionIndex:int,controllerEpoch:int,leader:int,leaderEpoch:int,isr:array<int>,"
    "zkVersion:int,partitionEpoch:int,replicas:array<int>,addingReplicas:array<int>,"
    "removingReplicas:array<int>,isNew:boolean,leaderRecoveryState:int>"
)
_UM_STATE = (
    "struct<topicName:string,partitionIndex:int,controllerEpoch:int,leader:int,leaderEpoch:int,isr:array<int>,"
    "zkVersion:int,replicas:array<int>,offlineReplicas:array<int>>"
)
_AP_PART = (
    "struct<partitionIndex:int,errorCode:int,leaderId:int,leaderEpoch:int,newIsr:array<int>,"
    "newIsrWithEpochs:array<struct<brokerId:int,brokerEpoch:bigint>>,isr:array<int>,leaderRecoveryState:int,"
    "partitionEpoch:int,currentIsrVersion:int>"
)
_CONTROLLER_FIELDS = "controllerId:int,isKRaftController:boolean,controllerEpoch:int,brokerEpoch:bigint"

# One explicit schema per API (fields of every version; JSON keys absent in a version -> null).
SCHEMAS: dict[str, str] = {
    "PRODUCE": ", ".join(
        [
            _HEADER,
            "request struct<transactionalId:string,acks:int,timeoutMs:int,topicData:array<struct<name:string,"
            "topicId:string,partitionData:array<struct<index:int,recordsSizeInBytes:int>>>>>",
            "response struct<responses:array<struct<name:string,topicId:string,partitionResponses:array<"
            "struct<index:int,errorCode:int,baseOffset:bigint,logAppendTimeMs:bigint,logStartOffset:bigint,"
            f"errorMessage:string,{_LEADER.replace(' ', ':', 1)}>>>>,throttleTimeMs:int>",
            _CORRUPT,
        ]
    ),
    "FETCH": ", ".join(
        [
            _HEADER,
            "request struct<replicaId:int,replicaState:struct<replicaId:int,replicaEpoch:bigint>,maxWaitMs:int,"
            "sessionId:int,sessionEpoch:int,topics:array<struct<topic:string,topicId:string,partitions:array<"
            "struct<partition:int,currentLeaderEpoch:int,fetchOffset:bigint,lastFetchedEpoch:int,"
            "logStartOffset:bigint,partitionMaxBytes:int>>>>>",
            "response struct<errorCode:int,sessionId:int,responses:array<struct<topic:string,topicId:string,"
            "partitions:array<struct<partitionIndex:int,errorCode:int,highWatermark:bigint,lastStableOffset:bigint,"
            "logStartOffset:bigint,divergingEpoch:struct<epoch:int,endOffset:bigint>,"
            f"{_LEADER.replace(' ', ':', 1)},preferredReadReplica:int,recordsSizeInBytes:int>>>>>",
            _CORRUPT,
        ]
    ),
    "STOP_REPLICA": ", ".join(
        [
            _HEADER,
            f"request struct<{_CONTROLLER_FIELDS},deletePartitions:boolean,"
            "ungroupedPartitions:array<struct<topicName:string,partitionIndex:int>>,"
            "topics:array<struct<name:string,partitionIndexes:array<int>>>,"
            "topicStates:array<struct<topicName:string,partitionStates:array<struct<partitionIndex:int,"
            "leaderEpoch:int,deletePartition:boolean>>>>>",
            "response struct<errorCode:int,partitionErrors:array<struct<topicName:string,partitionIndex:int,"
            "errorCode:int>>>",
            _CORRUPT,
        ]
    ),
    "LEADER_AND_ISR": ", ".join(
        [
            _HEADER,
            f"request struct<{_CONTROLLER_FIELDS},type:int,ungroupedPartitionStates:array<{_LAI_STATE}>,"
            f"topicStates:array<struct<topicName:string,topicId:string,partitionStates:array<{_LAI_STATE}>>>>",
            "response struct<errorCode:int,partitionErrors:array<struct<topicName:string,partitionIndex:int,"
            "errorCode:int>>,topics:array<struct<topicId:string,partitionErrors:array<struct<partitionIndex:int,"
            "errorCode:int>>>>>",
            _CORRUPT,
        ]
    ),
    "UPDATE_METADATA": ", ".join(
        [
            _HEADER,
            f"request struct<{_CONTROLLER_FIELDS},ungroupedPartitionStates:array<{_UM_STATE}>,"
            f"topicStates:array<struct<topicName:string,topicId:string,partitionStates:array<{_UM_STATE}>>>>",
            "response struct<errorCode:int>",
            _CORRUPT,
        ]
    ),
    "ALTER_PARTITION": ", ".join(
        [
            _HEADER,
            "request struct<brokerId:int,brokerEpoch:bigint,topics:array<struct<topicName:string,name:string,"
            f"topicId:string,partitions:array<{_AP_PART}>>>>",
            "response struct<errorCode:int,topics:array<struct<topicName:string,name:string,topicId:string,"
            f"partitions:array<{_AP_PART}>>>>",
            _CORRUPT,
        ]
    ),
}
SCHEMAS["ALTER_ISR"] = SCHEMAS["ALTER_PARTITION"]

# The per-partition event struct every API branch builds (same field order and types).
EVENT_FIELDS: list[tuple[str, str]] = [
    ("topic", "string"),
    ("topic_id", "string"),
    ("partition", "int"),
    ("error_code", "int"),
    ("controller_id", "int"),
    ("controller_epoch", "int"),
    ("state_controller_epoch", "int"),
    ("leader", "int"),
    ("leader_epoch", "int"),
    ("current_leader_epoch", "int"),
    ("partition_epoch", "int"),
    ("isr", "array<int>"),
    ("replicas", "array<int>"),
    ("adding_replicas", "array<int>"),
    ("removing_replicas", "array<int>"),
    ("isr_broker_epochs", "array<bigint>"),
    ("replica_id", "int"),
    ("broker_id", "int"),
    ("broker_epoch", "bigint"),
    ("offset", "bigint"),
    ("high_watermark", "bigint"),
    ("log_start_offset", "bigint"),
    ("delete_partition", "boolean"),
    ("details", "map<string,string>"),
]
EVENT_STRUCT_TYPE = "struct<" + ",".join(f"{n}:{t}" for n, t in EVENT_FIELDS) + ">"
