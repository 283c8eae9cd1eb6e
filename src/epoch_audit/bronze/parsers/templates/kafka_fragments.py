"""Regex fragments of the Kafka templates (reference §0.3: how Kafka prints values and structures).

Named groups: a bronze column, ``d_<details key>``, ``tp`` (topic-partition, split on its last
``-``), or ``_<name>`` (an internal value read by a derivation, see kafka_derive).
"""

from __future__ import annotations

NUMBER = r"-?\d+"
TOPIC_PARTITION = r"(?P<tp>[\w.-]+-\d+)"
UUID = r"[\w-]+"
OPTIONAL_TOPIC_ID = r"(?:Some\((?P<topic_id>" + UUID + r")\)|None)"
BRACKET_LIST = r"\[[^\]]*\]"  # bracketed list, [1,2] or [1, 2]; captured WITH brackets (empty != absent)

# LeaderAndIsrPartitionState(...) (§0.3): zkVersion= up to 3.2, partitionEpoch= from 3.3;
# leaderRecoveryState from 3.2. controllerEpoch here is the STATE's controller epoch.
LEADER_AND_ISR_PARTITION_STATE = (
    r"LeaderAndIsrPartitionState\(topicName='(?P<topic>[^']*)', partitionIndex=(?P<partition>\d+), "
    r"controllerEpoch=(?P<state_controller_epoch>" + NUMBER + r"), leader=(?P<leader>" + NUMBER + r"), "
    r"leaderEpoch=(?P<leader_epoch>" + NUMBER + r"), isr=(?P<isr>" + BRACKET_LIST + r"), "
    r"(?P<_state_epoch_label>zkVersion|partitionEpoch)=(?P<partition_epoch>" + NUMBER + r"), "
    r"replicas=(?P<replicas>" + BRACKET_LIST + r"), addingReplicas=(?P<adding_replicas>" + BRACKET_LIST + r"), "
    r"removingReplicas=(?P<removing_replicas>" + BRACKET_LIST + r"), isNew=(?P<d_is_new>true|false)"
    r"(?:, leaderRecoveryState=(?P<d_leader_recovery_state>" + NUMBER + r"))?\)"
)
# UpdateMetadataPartitionState(...) (§1.5): zkVersion in every version.
UPDATE_METADATA_PARTITION_STATE = (
    r"UpdateMetadataPartitionState\(topicName='(?P<topic>[^']*)', partitionIndex=(?P<partition>\d+), "
    r"controllerEpoch=(?P<state_controller_epoch>" + NUMBER + r"), leader=(?P<leader>" + NUMBER + r"), "
    r"leaderEpoch=(?P<leader_epoch>" + NUMBER + r"), isr=(?P<isr>" + BRACKET_LIST + r"), "
    r"zkVersion=(?P<partition_epoch>" + NUMBER + r"), replicas=(?P<replicas>" + BRACKET_LIST + r"), "
    r"offlineReplicas=(?P<d_offline_replicas>" + BRACKET_LIST + r")\)"
)
STOP_REPLICA_PARTITION_STATE = (
    r"StopReplicaPartitionState\(partitionIndex=(?P<_partition_index>\d+), leaderEpoch=(?P<leader_epoch>" + NUMBER
    + r"), deletePartition=(?P<delete_partition>true|false)\)"
)
# kafka.api.LeaderAndIsr, 4 variants (§0.3): isr=List(..) | isrWithBrokerEpoch=List(BrokerState(..)),
# optional leaderRecoveryState (3.2+), zkVersion | partitionEpoch.
_BROKER_STATE_LIST = r"(?:BrokerState\(brokerId=" + NUMBER + r", brokerEpoch=" + NUMBER + r"\)(?:, )?)*"
LEADER_AND_ISR = (
    r"LeaderAndIsr\(leader=(?P<leader>" + NUMBER + r"), leaderEpoch=(?P<leader_epoch>" + NUMBER + r"), "
    r"(?:isr=List(?P<isr>\([^)]*\))|isrWithBrokerEpoch=List(?P<_isr_with_broker_epochs>\(" + _BROKER_STATE_LIST + r"\)))"
    r"(?:, leaderRecoveryState=(?P<d_leader_recovery_state>\w+))?, "
    r"(?P<_leader_and_isr_epoch_label>zkVersion|partitionEpoch)=(?P<partition_epoch>" + NUMBER + r")\)"
)
# LeaderIsrAndControllerEpoch, 3 variants (§0.3): split on the ",<Label>:" markers.
LEADER_ISR_AND_CONTROLLER_EPOCH = (
    r"\(Leader:(?P<leader>" + NUMBER + r"),ISR(?P<isr>:[\d,]*),"
    r"(?:LeaderRecoveryState:(?P<d_leader_recovery_state>\w+),)?LeaderEpoch:(?P<leader_epoch>" + NUMBER + r"),"
    r"(?:ZkVersion:(?P<partition_epoch>" + NUMBER + r"),)?ControllerEpoch:(?P<state_controller_epoch>" + NUMBER + r")\)"
)
UNDER_MIN_ISR = r"(?P<_under_min_isr>\(under-min-isr\))?"

# Logger families a template belongs to (see kafka_log4j's family loggers).
STATE_CHANGE = ("state_change",)
PARTITION = ("partition",)
KAFKA_APIS = ("kafka_apis",)
FETCHER_MANAGER = ("fetcher_manager",)
FETCHER_THREAD = ("fetcher_thread",)
LOG = ("log",)
LOG_MANAGER = ("log_manager",)
ZK_CONTROLLER = ("zk_controller",)
KRAFT_CONTROLLER = ("kraft_controller",)
RAFT = ("raft",)
ALTER_PARTITION_MANAGER = ("alter_partition_manager",)
PRODUCER_SENDER = ("producer_sender",)

# Template-keyed derivations (``LineTemplate.uses``): values that do not follow from a group name alone.
LEADER_FROM_IDENT = "leader=ident"  # the logging broker (log ident id) is the leader
CURRENT_LEADER_EPOCH_FROM_LEADER_EPOCH = "current_leader_epoch=leader_epoch"  # "... matches the current leader epoch"
ERROR_FROM_EXCEPTION = "error=exception"  # Errors constant of the d_exception group
ERROR_FROM_REASON = "error=reason"  # Errors constant of a loosely recorded d_reason text
