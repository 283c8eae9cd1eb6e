"""KRaft metadata records (reference §3.1): decoder JSON payloads, generated toString forms and the
controller's replay lines.

A record is a ``(type_name, version, data)`` triple where ``data`` is an ordered dict of the
camelCase fields in schema order, with tagged fields already left out when at their default
(the ``--cluster-metadata-decoder`` rule). Records are built by the ``*_record`` helpers only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from epoch_audit_tools.simulator.formats.common import Version, java_list, jbool

Record = tuple[str, int, dict[str, Any]]

QC = "org.apache.kafka.controller"

# metadata.version feature level written at bootstrap per release (7 = 3.3-IV3, 14 = 3.6-IV2 per §3.1)
MV_LEVEL = {(3, 3): 7, (3, 4): 8, (3, 5): 11, (3, 6): 14, (3, 7): 19, (3, 8): 20, (3, 9): 21, (4, 0): 25}


def _json(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def payload(rec: Record) -> str:
    """``{"type":"<RECORD_TYPE>","version":N,"data":{...}}`` (§3.2)."""
    name, version, data = rec
    return _json({"type": type_constant(name), "version": version, "data": data})


def type_constant(name: str) -> str:
    """``PartitionChangeRecord`` -> ``PARTITION_CHANGE_RECORD``."""
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i > 0:
            out.append("_")
        out.append(ch.upper())
    return "".join(out)


def register_broker_record(
    v: Version, broker: int, incarnation: str, epoch: int, host: str, fenced: bool = True
) -> Record:
    """RegisterBrokerRecord: v1 from 3.3, v2 from 3.4, v3 from 3.7."""
    version = 3 if v.at_least("3.7") else 2 if v.at_least("3.4") else 1
    data: dict[str, Any] = {"brokerId": broker}
    if version >= 2:
        data["isMigratingZkBroker"] = False
    data["incarnationId"] = incarnation
    data["brokerEpoch"] = epoch
    data["endPoints"] = [{"name": "PLAINTEXT", "host": host, "port": 9092, "securityProtocol": 0}]
    mv = MV_LEVEL[(v.major, v.minor)]
    data["features"] = [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": mv}]
    data["rack"] = None
    data["fenced"] = fenced
    data["inControlledShutdown"] = False
    return "RegisterBrokerRecord", version, data


def registration_change_record(
    broker: int, epoch: int, fenced: int = 0, controlled_shutdown: int = 0
) -> Record:
    """BrokerRegistrationChangeRecord: ``fenced`` -1 unfence / 1 fence, tagged (omitted at 0)."""
    data: dict[str, Any] = {"brokerId": broker, "brokerEpoch": epoch}
    if fenced:
        data["fenced"] = fenced
    if controlled_shutdown:
        data["inControlledShutdown"] = controlled_shutdown
    return "BrokerRegistrationChangeRecord", 1 if controlled_shutdown else 0, data


def topic_record(name: str, topic_id: str) -> Record:
    """TopicRecord."""
    return "TopicRecord", 0, {"name": name, "topicId": topic_id}


def remove_topic_record(topic_id: str) -> Record:
    """RemoveTopicRecord."""
    return "RemoveTopicRecord", 0, {"topicId": topic_id}


def partition_record(
    partition: int, topic_id: str, replicas: Sequence[int], isr: Sequence[int], leader: int, le: int, pe: int
) -> Record:
    """PartitionRecord (v0: no directories / ELR)."""
    return "PartitionRecord", 0, {
        "partitionId": partition,
        "topicId": topic_id,
        "replicas": list(replicas),
        "isr": list(isr),
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": leader,
        "leaderEpoch": le,
        "partitionEpoch": pe,
    }


def partition_change_record(
    partition: int, topic_id: str, isr: Sequence[int] | None = None, leader: int | None = None
) -> Record:
    """PartitionChangeRecord: only the changed tagged fields (``isr`` before ``leader``)."""
    data: dict[str, Any] = {"partitionId": partition, "topicId": topic_id}
    if isr is not None:
        data["isr"] = list(isr)
    if leader is not None:
        data["leader"] = leader
    return "PartitionChangeRecord", 0, data


def feature_level_record(v: Version) -> Record:
    """FeatureLevelRecord for metadata.version."""
    return "FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": MV_LEVEL[(v.major, v.minor)]}


def noop_record() -> Record:
    """NoOpRecord (3.3+)."""
    return "NoOpRecord", 0, {}


def begin_txn_record(name: str) -> Record:
    """BeginTransactionRecord (3.6+)."""
    return "BeginTransactionRecord", 0, {"name": name}


def end_txn_record() -> Record:
    """EndTransactionRecord (3.6+)."""
    return "EndTransactionRecord", 0, {}


def abort_txn_record(reason: str) -> Record:
    """AbortTransactionRecord (3.6+)."""
    return "AbortTransactionRecord", 0, {"reason": reason}


# -- generated toString (§0.3 MessageDataGenerator rules) ------------------------------------
def _tostr_value(value: Any, struct_names: dict[str, str], key: str) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return jbool(value)
    if isinstance(value, str):
        # uuids print bare, strings in single quotes
        return value if key in ("incarnationId", "topicId") else f"'{value}'"
    if isinstance(value, list):
        if value and isinstance(value[0], dict):
            cls = struct_names[key]
            return "[" + ", ".join(
                f"{cls}(" + ", ".join(f"{k}={_tostr_value(v, struct_names, k)}" for k, v in item.items()) + ")"
                for item in value
            ) + "]"
        return java_list(value)
    return str(value)


def record_tostring(rec: Record, all_fields: dict[str, Any] | None = None) -> str:
    """``RegisterBrokerRecord(brokerId=1, ...)``: every schema field, tagged ones at their values."""
    name, _, data = rec
    fields = all_fields if all_fields is not None else data
    structs = {"endPoints": "BrokerEndpoint", "features": "BrokerFeature"}
    body = ", ".join(f"{k}={_tostr_value(v, structs, k)}" for k, v in fields.items())
    return f"{name}({body})"


def change_record_fields(v: Version, rec: Record) -> dict[str, Any]:
    """All fields of a BrokerRegistrationChangeRecord (toString prints tagged defaults too)."""
    _, _, data = rec
    fields: dict[str, Any] = {
        "brokerId": data["brokerId"],
        "brokerEpoch": data["brokerEpoch"],
        "fenced": data.get("fenced", 0),
        "inControlledShutdown": data.get("inControlledShutdown", 0),
    }
    if v.at_least("3.7"):
        fields["logDirs"] = []
    return fields


def register_record_fields(v: Version, rec: Record) -> dict[str, Any]:
    """All fields of a RegisterBrokerRecord for its toString."""
    fields = dict(rec[2])
    if v.at_least("3.7"):
        fields["logDirs"] = []
    return fields


def partition_registration(
    v: Version, replicas: Sequence[int], isr: Sequence[int], leader: int, le: int, pe: int
) -> str:
    """``PartitionRegistration(...)`` (3.9 form; 3.5/3.6 without directories/elr/lastKnownElr)."""
    if v.at_least("3.7"):
        dirs = java_list(["AAAAAAAAAAAAAAAAAAAAAA"] * len(replicas))
        return (
            f"PartitionRegistration(replicas={java_list(replicas)}, directories={dirs}, isr={java_list(isr)}, "
            f"removingReplicas=[], addingReplicas=[], elr=[], lastKnownElr=[], leader={leader}, "
            f"leaderRecoveryState=RECOVERED, leaderEpoch={le}, partitionEpoch={pe})"
        )
    return (
        f"PartitionRegistration(replicas={java_list(replicas)}, isr={java_list(isr)}, removingReplicas=[], "
        f"addingReplicas=[], leader={leader}, leaderRecoveryState=RECOVERED, leaderEpoch={le}, "
        f"partitionEpoch={pe})"
    )


# -- controller.log replay lines -------------------------------------------------------------
def qc_prefix(v: Version, node: int) -> str:
    """``[QuorumController id=N] `` from 3.5, ``[Controller N] `` before."""
    return f"[QuorumController id={node}] " if v.at_least("3.5") else f"[Controller {node}] "


def replay_lines(
    v: Version, node: int, rec: Record, offset: int, ctx: dict[str, Any]
) -> list[tuple[str, str, str]]:
    """INFO lines the controller writes when it replays ``rec`` (empty for DEBUG-only records).

    ``ctx`` carries what the line needs beyond the record: topic name, partition registration,
    whether a broker registration is initial or a new incarnation.
    """
    p = qc_prefix(v, node)
    name, _, data = rec
    new = v.at_least("3.6")
    rcm = f"{QC}.ReplicationControlManager"
    ccm = f"{QC}.ClusterControlManager"
    if name == "TopicRecord":
        if new:
            return [("INFO", p + f"Replayed TopicRecord for topic {data['name']} with topic ID {data['topicId']}.", rcm)]
        return [("INFO", p + f"Created topic {data['name']} with topic ID {data['topicId']}.", rcm)]
    if name == "PartitionRecord":
        desc = f"{ctx['topic']}-{data['partitionId']} with topic ID {data['topicId']}"
        reg = ctx["registration"]
        if new:
            return [("INFO", p + f"Replayed PartitionRecord for new partition {desc} and {reg}.", rcm)]
        return [("INFO", p + f"Created partition {desc} and {reg}.", rcm)]
    if name == "RemoveTopicRecord":
        if new:
            return [("INFO", p + f"Replayed RemoveTopicRecord for topic {ctx['topic']} with ID {data['topicId']}.", rcm)]
        return [("INFO", p + f"Removed topic {ctx['topic']} with ID {data['topicId']}.", rcm)]
    if name == "RegisterBrokerRecord" and new:
        text = record_tostring(rec, register_record_fields(v, rec))
        kind = "initial RegisterBrokerRecord for" if ctx.get("initial") else (
            "RegisterBrokerRecord establishing a new incarnation of")
        return [("INFO", p + f"Replayed {kind} broker {data['brokerId']}: {text}", ccm)]
    if name == "BrokerRegistrationChangeRecord" and new:
        text = record_tostring(rec, change_record_fields(v, rec))
        return [("INFO", p + f"Replayed BrokerRegistrationChangeRecord modifying the registration for broker "
                 f"{data['brokerId']}: {text}", ccm)]
    if name in ("BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord") and new:
        ocm = f"{QC}.OffsetControlManager"
        if name == "BeginTransactionRecord":
            return [("INFO", p + f"Replayed BeginTransactionRecord(name='{data['name']}') at offset {offset}.", ocm)]
        if name == "EndTransactionRecord":
            return [("INFO", p + f"Replayed EndTransactionRecord() at offset {offset}.", ocm)]
        return [("INFO", p + f"Replayed AbortTransactionRecord(reason='{data['reason']}') at offset {offset}. "
                 f"Reverted to offset {ctx['reverted_to']}.", ocm)]
    return []


def fencing_line(v: Version, node: int, broker: int) -> tuple[str, str, str]:
    """``Fencing broker N because its session has timed out.``"""
    return ("INFO", qc_prefix(v, node) + f"Fencing broker {broker} because its session has timed out.",
            f"{QC}.ReplicationControlManager")


def rejecting_ineligible(
    v: Version, node: int, broker: int, tp: str, replica: int, requested: int, expected: int,
    isr_epochs: Sequence[tuple[int, int]],
) -> tuple[str, str, str]:
    """INFO ``Rejecting AlterPartition ... ineligible replicas [R (broker epoch mismatch: ...)] ...`` (3.5+)."""
    new_isr = "[" + ", ".join(f"BrokerState(brokerId={r}, brokerEpoch={e})" for r, e in isr_epochs) + "]"
    reason = f"broker epoch mismatch: requested={requested} VS expected={expected}"
    return (
        "INFO",
        qc_prefix(v, node) + f"Rejecting AlterPartition request from node {broker} for {tp} because it specified "
        f"ineligible replicas [{replica} ({reason})] in the new ISR {new_isr}.",
        f"{QC}.ReplicationControlManager",
    )


def raft_transition(v: Version, node: int, epoch: int, leader: int, voters: Sequence[int], local_leader: bool) -> tuple[str, str, str]:
    """``Completed transition to Leader|FollowerState(...)`` (QuorumState, server.log)."""
    prefix = f"[RaftManager id={node}] " if v.at_least("3.5") else f"[RaftManager nodeId={node}] "
    if local_leader:
        state = (f"Leader(localId={node}, epoch={epoch}, epochStartOffset=0, highWatermark=Optional.empty, "
                 f"voterStates={{}})")
    else:
        state = (f"FollowerState(fetchTimeoutMs=2000, epoch={epoch}, leaderId={leader}, voters={java_list(voters)}, "
                 "highWatermark=Optional.empty, fetchingSnapshot=Optional.empty)")
    return "INFO", prefix + f"Completed transition to {state}", "org.apache.kafka.raft.QuorumState"
