"""``kafka-request.log`` JSON ``Completed request:`` lines (reference §5, 2.8+ / KIP-673).

Bodies hold only the fields of the API version in use, in schema order; tagged fields at their
default are left out. The line is written at DEBUG by ``kafka.request.logger``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from epoch_audit_tools.simulator.formats.common import Version

LOGGER = "kafka.request.logger"
API_KEYS = {"PRODUCE": 0, "FETCH": 1, "LEADER_AND_ISR": 4, "STOP_REPLICA": 5, "ALTER_PARTITION": 56}


def api_version(v: Version, api: str) -> int:
    """Highest version of ``api`` a release of Kafka uses between its own brokers (§5 table)."""
    if api == "FETCH":
        return 17 if v.at_least("3.9") else 16 if v.at_least("3.7") else 15 if v.at_least("3.5") else (
            13 if v.at_least("3.1") else 12)
    if api == "PRODUCE":
        return 11 if v.at_least("3.8") else 10 if v.at_least("3.7") else 9
    if api == "LEADER_AND_ISR":
        return 7 if v.at_least("3.4") else 6 if v.at_least("3.2") else 5
    if api == "STOP_REPLICA":
        return 4 if v.at_least("3.4") else 3
    if api == "ALTER_PARTITION":
        return 3 if v.at_least("3.5") else 2 if v.at_least("3.3") else 1
    raise ValueError(api)


def has_request_log(v: Version) -> bool:
    """JSON request lines exist from 2.8 (KIP-673); older releases are left with an empty log."""
    return v.at_least("2.8")


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def completed(
    v: Version,
    api: str,
    corr: int,
    client_id: str,
    request: dict[str, Any],
    response: dict[str, Any],
    connection: str,
    total_ms: float,
    listener: str = "PLAINTEXT",
    software: tuple[str, str] = ("apache-kafka-java", "3.6.1"),
) -> str:
    """The message text ``Completed request:{...}``."""
    header: dict[str, Any] = {
        "requestApiKey": API_KEYS[api],
        "requestApiVersion": api_version(v, api),
        "correlationId": corr,
        "clientId": client_id,
        "requestApiKeyName": "ALTER_ISR" if api == "ALTER_PARTITION" and not v.at_least("3.2") else api,
    }
    local = round(total_ms * 0.7, 3)
    body: dict[str, Any] = {
        "isForwarded": False,
        "requestHeader": header,
        "request": request,
        "response": response,
        "connection": connection,
        "totalTimeMs": round(total_ms, 3),
        "requestQueueTimeMs": round(total_ms * 0.1, 3),
        "localTimeMs": local,
        "remoteTimeMs": 0.0,
        "throttleTimeMs": 0,
        "responseQueueTimeMs": round(total_ms * 0.05, 3),
        "sendTimeMs": round(total_ms * 0.15, 3),
        "securityProtocol": "PLAINTEXT",
        "principal": "User:ANONYMOUS",
        "listener": listener,
        "clientInformation": {"softwareName": software[0], "softwareVersion": software[1]},
    }
    return "Completed request:" + _dumps(body)


def produce(
    v: Version, topic: str, partition: int, size: int, error: int, base_offset: int, acks: int = -1
) -> tuple[dict[str, Any], dict[str, Any]]:
    """PRODUCE v9+ request / response bodies (records replaced by ``recordsSizeInBytes``)."""
    req = {
        "transactionalId": None,
        "acks": acks,
        "timeoutMs": 30000,
        "topicData": [{"name": topic, "partitionData": [{"index": partition, "recordsSizeInBytes": size}]}],
    }
    presp: dict[str, Any] = {
        "index": partition,
        "errorCode": error,
        "baseOffset": base_offset if error == 0 else -1,
        "logAppendTimeMs": -1,
        "logStartOffset": 0 if error == 0 else -1,
        "recordErrors": [],
        "errorMessage": None,
    }
    resp = {"responses": [{"name": topic, "partitionResponses": [presp]}], "throttleTimeMs": 0}
    return req, resp


def fetch(
    v: Version,
    replica: int,
    replica_epoch: int,
    topic: str,
    topic_id: str,
    partition: int,
    current_leader_epoch: int,
    fetch_offset: int,
    last_fetched_epoch: int,
    hw: int,
    records_size: int,
    session: int,
    session_epoch: int,
    error: int = 0,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Follower FETCH request / response (``replicaState`` from v15, ``topicId`` from v13)."""
    ver = api_version(v, "FETCH")
    req: dict[str, Any] = {}
    if ver >= 15:
        req["replicaState"] = {"replicaId": replica, "replicaEpoch": replica_epoch}
    else:
        req["replicaId"] = replica
    req.update({"maxWaitMs": 500, "minBytes": 1, "maxBytes": 10485760, "isolationLevel": 0,
                "sessionId": session, "sessionEpoch": session_epoch})
    part: dict[str, Any] = {"partition": partition, "currentLeaderEpoch": current_leader_epoch,
                            "fetchOffset": fetch_offset}
    if ver >= 12:
        part["lastFetchedEpoch"] = last_fetched_epoch
    part["logStartOffset"] = 0
    part["partitionMaxBytes"] = 1048576
    tkey: dict[str, Any] = {"topicId": topic_id} if ver >= 13 else {"topic": topic}
    req["topics"] = [{**tkey, "partitions": [part]}]
    req["forgottenTopicsData"] = []
    req["rackId"] = ""
    presp = {
        "partitionIndex": partition,
        "errorCode": error,
        "highWatermark": hw if error == 0 else -1,
        "lastStableOffset": hw if error == 0 else -1,
        "logStartOffset": 0 if error == 0 else -1,
        "abortedTransactions": None,
        "preferredReadReplica": -1,
        "recordsSizeInBytes": records_size,
    }
    resp = {"throttleTimeMs": 0, "errorCode": 0, "sessionId": session,
            "responses": [{**tkey, "partitions": [presp]}]}
    return req, resp


def stop_replica(
    v: Version, controller: int, cepoch: int, broker_epoch: int, topic: str, partition: int,
    leader_epoch: int, delete: bool, error: int, top_error: int = 0,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """STOP_REPLICA v3/v4 (per-partition states with leader epoch)."""
    req: dict[str, Any] = {"controllerId": controller}
    if api_version(v, "STOP_REPLICA") >= 4:
        req["isKRaftController"] = False
    req["controllerEpoch"] = cepoch
    req["brokerEpoch"] = broker_epoch
    req["topicStates"] = [{"topicName": topic, "partitionStates": [
        {"partitionIndex": partition, "leaderEpoch": leader_epoch, "deletePartition": delete}]}]
    resp = {"errorCode": top_error,
            "partitionErrors": [{"topicName": topic, "partitionIndex": partition, "errorCode": error}]}
    return req, resp


def leader_and_isr(
    v: Version, controller: int, cepoch: int, broker_epoch: int, topic: str, topic_id: str,
    states: Sequence[dict[str, Any]], errors: Sequence[int], live_leaders: Sequence[int], top_error: int = 0,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """LEADER_AND_ISR v5–7 for one topic; ``states`` hold partitionIndex, controllerEpoch, leader, ... ."""
    ver = api_version(v, "LEADER_AND_ISR")
    pe_key = "partitionEpoch" if v.at_least("3.3") else "zkVersion"
    pstates = []
    for s in states:
        d: dict[str, Any] = {
            "partitionIndex": s["partition"], "controllerEpoch": s["controller_epoch"], "leader": s["leader"],
            "leaderEpoch": s["leader_epoch"], "isr": list(s["isr"]), pe_key: s["partition_epoch"],
            "replicas": list(s["replicas"]), "addingReplicas": [], "removingReplicas": [], "isNew": False,
        }
        if ver >= 6:
            d["leaderRecoveryState"] = 0
        pstates.append(d)
    req: dict[str, Any] = {"controllerId": controller}
    if ver >= 7:
        req["isKRaftController"] = False
    req.update({"controllerEpoch": cepoch, "brokerEpoch": broker_epoch, "type": 0,
                "topicStates": [{"topicName": topic, "topicId": topic_id, "partitionStates": pstates}],
                "liveLeaders": [{"brokerId": b, "hostName": f"kafka-{b}.prod.internal", "port": 9092}
                                for b in live_leaders]})
    resp = {"errorCode": top_error, "topics": [{"topicId": topic_id, "partitionErrors": [
        {"partitionIndex": s["partition"], "errorCode": e} for s, e in zip(states, errors, strict=True)]}]}
    return req, resp


def alter_partition(
    v: Version, broker: int, broker_epoch: int, topic: str, topic_id: str, partition: int, leader_epoch: int,
    isr_epochs: Sequence[tuple[int, int]], partition_epoch: int, error: int,
    new_leader_epoch: int = 0, new_isr: Sequence[int] = (), new_partition_epoch: int = 0,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """ALTER_PARTITION v1–3 (``newIsrWithEpochs`` from v3); on error the response partition is defaults."""
    ver = api_version(v, "ALTER_PARTITION")
    part: dict[str, Any] = {"partitionIndex": partition, "leaderEpoch": leader_epoch}
    if ver >= 3:
        part["newIsrWithEpochs"] = [{"brokerId": r, "brokerEpoch": e} for r, e in isr_epochs]
    else:
        part["newIsr"] = [r for r, _ in isr_epochs]
    part["leaderRecoveryState"] = 0
    part["partitionEpoch"] = partition_epoch
    tkey: dict[str, Any] = {"topicId": topic_id} if ver >= 2 else {"topicName": topic}
    req = {"brokerId": broker, "brokerEpoch": broker_epoch, "topics": [{**tkey, "partitions": [part]}]}
    if error == 0:
        rp = {"partitionIndex": partition, "errorCode": 0, "leaderId": broker, "leaderEpoch": new_leader_epoch,
              "isr": list(new_isr), "leaderRecoveryState": 0, "partitionEpoch": new_partition_epoch}
    else:
        rp = {"partitionIndex": partition, "errorCode": error, "leaderId": 0, "leaderEpoch": 0, "isr": [],
              "leaderRecoveryState": 0, "partitionEpoch": 0}
    resp = {"throttleTimeMs": 0, "errorCode": 0, "topics": [{**tkey, "partitions": [rp]}]}
    return req, resp
