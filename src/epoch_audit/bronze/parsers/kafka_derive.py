"""Kafka log4j derivations: values a template's groups imply beyond their own text.

Sub-structures printed inside a message (a ``PartitionRegistration(..)``, a ``LeaderAndIsr(..)``,
a KRaft change summary ...) are read by key here; fan-outs turn a printed list into one event per
partition / replica; version rules name the Kafka version range a variant was printed by. Keyed
by group name (``GROUP_DERIVES``, ``FANOUTS``), by ``LineTemplate.uses`` (``USE_DERIVES``) or by
``@<kind>`` (``VERSION_KINDS``); :data:`KAFKA_DERIVATIONS` hands them to the template engine.

Every function reads a :class:`~epoch_audit.bronze.parsers.line_template.Groups` (``g(name)`` is
None for an absent or empty group) and gives what the JVM expressions gave: null in, null out, the
safe casts of :mod:`epoch_audit.bronze.parsers.spark_strings`. A derivation returns the same keys
whatever its input (the engine plans columns from them).
"""

from __future__ import annotations

from typing import Any

from pyspark.sql.types import DataType, IntegerType, LongType, StringType

from epoch_audit.bronze.parsers.line_template import Derivation, Derivations, GroupRule, Groups
from epoch_audit.bronze.parsers.spark_strings import (
    array_except,
    cast,
    int_list,
    nz,
    regexp_extract,
    regexp_groups_all,
    substring_index_last,
    to_bool,
    to_int,
    to_long,
)
from epoch_audit.bronze.parsers.templates.kafka_fragments import (
    BRACKET_LIST,
    CURRENT_LEADER_EPOCH_FROM_LEADER_EPOCH,
    ERROR_FROM_EXCEPTION,
    ERROR_FROM_REASON,
    LEADER_FROM_IDENT,
    NUMBER,
    UUID,
)

_INT, _LONG, _STR = IntegerType(), LongType(), StringType()

# The fields of a fan-out element (missing ones null): typed columns, ``tp`` and d_<key> details.
FAN_FIELDS: list[tuple[str, DataType]] = [
    ("tp", _STR),
    ("replica_id", _INT),
    ("leader", _INT),
    ("leader_epoch", _INT),
    ("offset", _LONG),
    ("broker_epoch", _LONG),
    ("error", _STR),
    ("d_reason", _STR),
    ("d_expected_broker_epoch", _STR),
    ("d_last_caught_up_time_ms", _STR),
    ("d_exception", _STR),
]

Element = dict[str, Any]


def fan_element(**values: Any) -> Element:
    """A fan-out element with every FAN_FIELDS field, each safely cast to its type (missing ones null)."""
    return {n: cast(values.get(n), t) for n, t in FAN_FIELDS}


def field_value(s: str | None, key: str, value: str = NUMBER) -> str | None:
    """``key=<value>`` inside a generated toString (first occurrence, at a field boundary)."""
    return nz(regexp_extract(s, r"(?:^|[(, ])" + key + "=(" + value + ")", 1))


def field_int_list(s: str | None, key: str) -> list[int | None] | None:
    """``key=[..]`` -> list of int; ``key=null`` -> null."""
    raw = field_value(s, key, r"\[[^\]]*\]|null")
    return None if raw is None or raw == "null" else int_list(raw)


def broker_states(s: str | None) -> dict[str, Any]:
    """``List(BrokerState(brokerId=1, brokerEpoch=-1), ...)`` / ``[BrokerState(..)]`` -> isr + epochs."""
    if s is None:
        return {"isr": None, "isr_broker_epochs": None}
    ids = [to_int(m[0]) for m in regexp_groups_all(s, r"brokerId=(-?\d+)") or []]
    epochs = [to_long(m[0]) for m in regexp_groups_all(s, r"brokerEpoch=(-?\d+)") or []]
    return {"isr": ids, "isr_broker_epochs": epochs}


def new_isr(s: str | None) -> dict[str, Any]:
    """An AlterPartition new ISR: plain list (3.3-3.4, ZK List(..)) or BrokerState list (3.5+)."""
    if s is not None and "BrokerState(" in s:
        return broker_states(s)
    return {"isr": int_list(s), "isr_broker_epochs": None}


def leader_and_isr_version(g: Groups) -> str:
    """kafka.api.LeaderAndIsr variant -> version range (§0.3)."""
    if g("_isr_with_broker_epochs") is not None:
        return "3.5+"
    if g("_leader_and_isr_epoch_label") == "partitionEpoch":
        return "3.3-3.4"
    return "3.2" if g("d_leader_recovery_state") is not None else "2.6-3.1"


def leader_and_isr_values(g: Groups) -> dict[str, Any]:
    """A printed kafka.api.LeaderAndIsr (group ``_isr_with_broker_epochs``): the 3.5+ BrokerState ISR; else the plain
    ``_new_isr`` alternative of ``ISR for partition .. updated to``."""
    with_epochs = g("_isr_with_broker_epochs")
    new_isr_text = g("_new_isr")
    if with_epochs is not None:
        states = broker_states(with_epochs)
        return {"isr": states["isr"], "isr_broker_epochs": states["isr_broker_epochs"]}
    isr = new_isr(new_isr_text)["isr"] if new_isr_text is not None else None
    return {"isr": isr, "isr_broker_epochs": None}


def partition_state_version(g: Groups) -> str:
    if g("_state_epoch_label") == "partitionEpoch":
        return "3.3+"
    return "3.2" if g("d_leader_recovery_state") is not None else "2.6-3.1"


def isr_controller_epoch_version(g: Groups) -> str:
    if g("d_leader_recovery_state") is not None:
        return "3.2+"
    return "3.1" if g("partition_epoch") is not None else "2.6-3.0"


def under_min_isr(g: Groups) -> dict[str, Any]:
    return {"d_under_min_isr": "true" if g("_under_min_isr") is not None else "false"}


def kraft_generation(g: Groups) -> str | None:
    """KRaft idents changed in 3.5 (§0.2): ``[Controller N]``/``[RaftManager nodeId=N]`` = 2.8-3.4."""
    ident = g.ident
    if ident is None:
        return None
    if ident.startswith(("QuorumController id=", "RaftManager id=")):
        return "3.5+"
    if ident.startswith(("Controller ", "RaftManager nodeId=")):
        return "2.8-3.4"
    return None


_EXCEPTION_ERRORS = {
    "NotLeaderOrFollowerException": "NOT_LEADER_OR_FOLLOWER",
    "NotLeaderForPartitionException": "NOT_LEADER_OR_FOLLOWER",
    "FencedLeaderEpochException": "FENCED_LEADER_EPOCH",
    "UnknownLeaderEpochException": "UNKNOWN_LEADER_EPOCH",
    "UnknownTopicOrPartitionException": "UNKNOWN_TOPIC_OR_PARTITION",
    "KafkaStorageException": "KAFKA_STORAGE_ERROR",
    "ReplicaNotAvailableException": "REPLICA_NOT_AVAILABLE",
    "InconsistentTopicIdException": "INCONSISTENT_TOPIC_ID",
    "NotEnoughReplicasException": "NOT_ENOUGH_REPLICAS",
    "NotEnoughReplicasAfterAppendException": "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    "RecordTooLargeException": "RECORD_TOO_LARGE",
    "InvalidProducerEpochException": "INVALID_PRODUCER_EPOCH",
}


def exception_error(exc: str | None) -> str | None:
    """Fully qualified exception name -> Errors constant (known ones; else the simple class name)."""
    simple = substring_index_last(exc, ".")
    return None if simple is None else _EXCEPTION_ERRORS.get(simple, simple)


def broker_registration_values(g: Groups) -> dict[str, Any]:
    """RegisterBrokerRecord / BrokerRegistration / Fence / Unfence / BrokerRegistrationChange fields."""
    rec = g("_registration_record")
    rtype = g("record_type")
    if rtype is None:
        rtype = regexp_extract(rec, r"^(\w+)\(", 1)
    fenced_i8 = field_value(rec, "fenced")  # BrokerRegistrationChangeRecord: -1 unfenced, 0 no change, 1 fenced
    fenced: bool | None
    if rtype == "FenceBrokerRecord":
        fenced = True
    elif rtype == "UnfenceBrokerRecord":
        fenced = False
    elif fenced_i8 in ("1", "-1", "0"):
        fenced = {"1": True, "-1": False, "0": None}[fenced_i8]
    else:
        fenced = to_bool(field_value(rec, "fenced", "true|false"))
    ics = field_value(rec, "inControlledShutdown", r"true|false|-?\d+")
    in_cs = True if ics == "1" else None if ics == "0" else to_bool(ics)
    bid = field_value(rec, "brokerId")
    if bid is None:
        bid = field_value(rec, "id")
    epoch = field_value(rec, "brokerEpoch")
    if epoch is None:
        epoch = field_value(rec, "epoch")
    return {
        "record_type": "RegisterBrokerRecord" if rtype == "BrokerRegistration" else rtype,
        "broker_id": to_int(bid),
        "broker_epoch": to_long(epoch),
        "fenced": fenced,
        "in_controlled_shutdown": in_cs,
        "d_incarnation_id": field_value(rec, "incarnationId", UUID),
    }


def partition_registration_values(g: Groups) -> dict[str, Any]:
    """PartitionRegistration(...) printed form (§3.1), read by key (fields vary by version)."""
    s = g("_partition_registration")
    return {
        "replicas": field_int_list(s, "replicas"),
        "isr": field_int_list(s, "isr"),
        "removing_replicas": field_int_list(s, "removingReplicas"),
        "adding_replicas": field_int_list(s, "addingReplicas"),
        "leader": to_int(field_value(s, "leader")),
        "leader_epoch": to_int(field_value(s, "leaderEpoch")),
        "partition_epoch": to_int(field_value(s, "partitionEpoch")),
        "d_leader_recovery_state": field_value(s, "leaderRecoveryState", r"\w+"),
    }


def partition_change_record_values(g: Groups) -> dict[str, Any]:
    """PartitionChangeRecord(...) toString: only set fields matter (leader -2 / null = unchanged)."""
    s = g("_partition_change_record")
    leader = to_int(field_value(s, "leader"))
    recovery = field_value(s, "leaderRecoveryState")
    return {
        "partition": to_int(field_value(s, "partitionId")),
        "topic_id": field_value(s, "topicId", UUID),
        "isr": field_int_list(s, "isr"),
        "leader": leader if leader != -2 else None,
        "replicas": field_int_list(s, "replicas"),
        "removing_replicas": field_int_list(s, "removingReplicas"),
        "adding_replicas": field_int_list(s, "addingReplicas"),
        "d_leader_recovery_state": recovery if recovery != "-1" else None,
    }


def partition_change_summary_values(g: Groups) -> dict[str, Any]:
    """``key: old -> new`` items of a KRaft partition change summary -> new values (+ old in details)."""
    s = g("_change_summary")

    def item(key: str, value: str, idx: int) -> str | None:
        return nz(regexp_extract(s, r"(?:^|, )" + key + r": (" + value + r") -> (" + value + r")", idx))

    return {
        "isr": int_list(item("isr", BRACKET_LIST, 2)),
        "replicas": int_list(item("replicas", BRACKET_LIST, 2)),
        "leader": to_int(item("leader", NUMBER, 2)),
        "leader_epoch": to_int(item("leaderEpoch", NUMBER, 2)),
        "prev_leader_epoch": to_int(item("leaderEpoch", NUMBER, 1)),
        "partition_epoch": to_int(item("partitionEpoch", NUMBER, 2)),
        "d_prev_leader": item("leader", NUMBER, 1),
        "d_prev_partition_epoch": item("partitionEpoch", NUMBER, 1),
        "d_prev_isr": item("isr", BRACKET_LIST, 1),
        "d_leader_recovery_state": item("leaderRecoveryState", r"\w+", 2),
        "d_unclean": "true" if g("_unclean") is not None else "false",
    }


def pending_isr_state_values(g: Groups) -> dict[str, Any]:
    """A proposed ISR state (PendingExpandIsr / PendingShrinkIsr, §2.1) with its sentLeaderAndIsr."""
    s = g("_pending")
    lai = regexp_extract(s, r"LeaderAndIsr\((.*)", 1)
    isr_list = regexp_extract(lai, r"(?:isr|isrWithBrokerEpoch)=List(\((?:BrokerState\([^)]*\)(?:, )?|[^)])*\))", 1)
    isr = new_isr(isr_list)
    has_lai = bool(lai)
    partition_epoch = field_value(lai, "partitionEpoch")
    if partition_epoch is None:
        partition_epoch = field_value(lai, "zkVersion")
    return {
        "replica_id": to_int(field_value(s, "newInSyncReplicaId")),
        "leader": to_int(field_value(lai, "leader")) if has_lai else None,
        "leader_epoch": to_int(field_value(lai, "leaderEpoch")) if has_lai else None,
        "partition_epoch": to_int(partition_epoch) if has_lai else None,
        "isr": isr["isr"] if isr_list else None,
        "isr_broker_epochs": isr["isr_broker_epochs"] if isr_list and "BrokerState(" in isr_list else None,
        "d_proposed_state": regexp_extract(s, r"^(\w+)\(", 1),
    }


def tp_set_fanout(g: Groups) -> list[Element] | None:
    """``Set(a-0, b-1)`` / ``HashSet(..)`` / ``Set()`` -> one element per topic-partition."""
    inner = regexp_extract(g("_topic_partitions"), r"^\w*\((.*)\)$", 1)
    if inner is None:
        return None
    return [fan_element(tp=x) for x in inner.split(", ") if x != ""]


_FETCH_MAP_ENTRY = (
    r"([\w.-]+-\d+) -> (?:\(offset=(-?\d+), leaderEpoch=(-?\d+)\)|InitialFetchState\("
    # BrokerEndPoint(id=1, host=h:p) up to 3.9; a Java record, BrokerEndPoint[id=1, host=h, port=p], in 4.x
    r"(?:(?:Some\([\w-]+\)|None),)?BrokerEndPoint(?:\(id=\d+, host=[^)]*\)|\[id=\d+, host=[^\]]*\]),"
    r"(-?\d+),(-?\d+)(?:,[^)]*)?\))"
)


def added_fetcher_fanout(g: Groups) -> list[Element] | None:
    """``Map(tp -> (offset=O, leaderEpoch=E), ..)`` or ``..(tp -> InitialFetchState(..,E,O))``."""
    entries = regexp_groups_all(g("_fetch_map"), _FETCH_MAP_ENTRY)
    if entries is None:
        return None
    return [
        fan_element(tp=tp, offset=nz(off1) or nz(off2), leader_epoch=nz(le1) or nz(le2))
        for tp, off1, le1, le2, off2 in entries
    ]


def broker_set_fanout(g: Groups) -> list[Element] | None:
    brokers = int_list(g("_brokers"))
    return None if brokers is None else [fan_element(replica_id=x) for x in brokers]


_OUT_OF_SYNC_REPLICA = r"\(brokerId: (\d+), endOffset: (-?\d+|unknown)(?:, lastCaughtUpTimeMs: (-?\d+|unknown))?\)"


def out_of_sync_fanout(g: Groups) -> list[Element] | None:
    """Shrink's out-of-sync replica groups -> one event per removed replica."""
    entries = regexp_groups_all(g("_out_of_sync"), _OUT_OF_SYNC_REPLICA)
    if entries is None:
        return None
    return [
        fan_element(replica_id=rid, offset=to_long(end), d_last_caught_up_time_ms=nz(lcu))
        for rid, end, lcu in entries
    ]


def expand_fanout(g: Groups) -> list[Element] | None:
    """2.6/2.7 ``Expanding ISR from A to B``: the added replicas are B - A."""
    added = array_except(int_list(g("isr")), int_list(g("d_old_isr")))
    return None if added is None else [fan_element(replica_id=x) for x in added]


_INELIGIBLE_REPLICA = r"(\d+) \(([^)]*)\)"


def ineligible_fanout(g: Groups) -> list[Element] | None:
    """``[3 (fenced), 4 (broker epoch mismatch: requested=X VS expected=Y)]`` (KRaft) or ``Set(3)`` (ZK)."""
    s = g("_ineligible")
    if s is not None and s.startswith("["):
        return [
            fan_element(
                replica_id=rid,
                d_reason=reason,
                broker_epoch=to_long(regexp_extract(reason, r"requested=(-?\d+)", 1)),
                d_expected_broker_epoch=nz(regexp_extract(reason, r"expected=(-?\d+)", 1)),
            )
            for rid, reason in regexp_groups_all(s, _INELIGIBLE_REPLICA) or []
        ]
    replicas = int_list(s)
    return None if replicas is None else [fan_element(replica_id=x, d_reason="not in live brokers") for x in replicas]


_PARTITION_EXCEPTION = r"([\w.-]+-\d+) -> ([\w.$]+)"


def acks0_produce_fanout(g: Groups) -> list[Element] | None:
    """acks=0 produce failure: second line ``Topic and partition to exceptions: tp -> Exc, ...``."""
    entries = regexp_groups_all(g("_partition_exceptions"), _PARTITION_EXCEPTION)
    if entries is None:
        return None
    return [fan_element(tp=tp, d_exception=exc, error=exception_error(exc)) for tp, exc in entries]


def stale_broker_epoch_version(g: Groups) -> str:
    return "3.4+" if g("controller_id") is not None else "2.6-3.3"


def raft_state_values(g: Groups) -> dict[str, Any]:
    """``Completed transition to <State>(..) [from <State>(..)]``: the new state's epoch and leader."""
    state = g("d_state")
    rest = g("_state")
    new_part = None if rest is None else rest.split(" from ", 1)[0]  # 3.5+ appends " from <oldState>"
    epoch = regexp_extract(new_part, r"\bepoch=(\d+)", 1)
    leader_id = regexp_extract(new_part, r"\bleader(?:Id)?=(\d+)", 1)
    is_leader = state in ("Leader", "LeaderState")
    voted = field_value(new_part, "votedId")
    return {
        "quorum_epoch": to_int(nz(epoch)),
        "leader": g.ident_id if is_leader else to_int(nz(leader_id)),
        "offset": to_long(field_value(new_part, "epochStartOffset")) if is_leader else None,
        "d_from_state": nz(regexp_extract(rest, r" from (\w+)\(", 1)),
        "d_voted_id": voted if voted is not None else field_value(new_part, r"votedKey=ReplicaKey\(id"),
    }


def sent_leader_and_isr_values(g: Groups) -> dict[str, Any]:
    """The sent LeaderAndIsr of a 2.7-3.0 expand line (``_sent``): wins over the pending state's values."""
    sent = g("_sent")
    isr_list = regexp_extract(sent, r"isr=List(\([^)]*\))", 1)
    partition_epoch = field_value(sent, "zkVersion")
    if partition_epoch is None:
        partition_epoch = field_value(sent, "partitionEpoch")
    return {
        "leader": to_int(field_value(sent, "leader")),
        "leader_epoch": to_int(field_value(sent, "leaderEpoch")),
        "partition_epoch": to_int(partition_epoch),
        "isr": int_list(isr_list) if isr_list else None,
    }


_REASON_ERRORS: list[tuple[tuple[str, ...], str]] = [
    (("old leader epoch", "leader epoch is old"), "FENCED_LEADER_EPOCH"),
    (("invalid version", "partition epoch is invalid"), "INVALID_UPDATE_VERSION"),
    (("about this topic or partition",), "UNKNOWN_TOPIC_OR_PARTITION"),
    (("about this topic",), "UNKNOWN_TOPIC_ID"),
    (("pending AlterPartition still inflight",), "OPERATION_NOT_ATTEMPTED"),
    (("request is invalid",), "INVALID_REQUEST"),
]


def reason_error(reason: str | None) -> str | None:
    """Error of the loosely recorded 2.7-3.2 AlterIsr/AlterPartition failure texts (§2.2)."""
    if reason is None:
        return None
    for texts, error in _REASON_ERRORS:
        if any(text in reason for text in texts):
            return error
    return None


# ----------------------------------------------------------------------------------------------
# Derivations, keyed by group name (or by ``LineTemplate.uses``), version kinds and fan-outs
# ----------------------------------------------------------------------------------------------

# In priority order: when a template has several of these groups, the first one defining a column
# gives its value (the sent LeaderAndIsr wins over the pending state, a printed LeaderAndIsr over
# the plain new ISR).
GROUP_DERIVES: list[tuple[str, Derivation]] = [
    ("_sent", sent_leader_and_isr_values),
    ("_pending", pending_isr_state_values),
    ("_isr_with_broker_epochs", leader_and_isr_values),
    ("_new_isr", lambda g: new_isr(g("_new_isr"))),
    ("_partition_registration", partition_registration_values),
    ("_partition_change_record", partition_change_record_values),
    ("_change_summary", partition_change_summary_values),
    ("_registration_record", broker_registration_values),
    ("_state", raft_state_values),
    ("_under_min_isr", under_min_isr),
    ("_no_leader", lambda g: {"d_isr_without_leader": "true" if g("_no_leader") is not None else None}),
    ("_fetch_leader_id", lambda g: {"leader": to_int(g("_fetch_leader_id"))}),
]
USE_DERIVES: dict[str, Derivation] = {
    LEADER_FROM_IDENT: lambda g: {"leader": g.ident_id},
    CURRENT_LEADER_EPOCH_FROM_LEADER_EPOCH: lambda g: {"current_leader_epoch": to_int(g("leader_epoch"))},
    ERROR_FROM_EXCEPTION: lambda g: {"error": exception_error(g("d_exception"))},
    ERROR_FROM_REASON: lambda g: {"error": reason_error(g("d_reason"))},
}
VERSION_KINDS: dict[str, GroupRule] = {
    "@partition_state": partition_state_version,
    "@leader_and_isr": leader_and_isr_version,
    "@leader_and_isr_if_printed": lambda g: leader_and_isr_version(g) if g("partition_epoch") is not None else None,
    "@isr_controller_epoch": isr_controller_epoch_version,
    "@stale_broker_epoch": stale_broker_epoch_version,
    "@kraft": kraft_generation,
    "@shrink": lambda g: "3.6+" if "lastCaughtUpTimeMs" in (g("_out_of_sync") or "") else "2.6-3.5",
    "@log_start_offset": lambda g: "3.1+" if (g.logger or "").endswith("UnifiedLog") else "2.6-3.0",
}
FANOUTS: dict[str, GroupRule] = {
    "_topic_partitions": tp_set_fanout,
    "_fetch_map": added_fetcher_fanout,
    "_brokers": broker_set_fanout,
    "_out_of_sync": out_of_sync_fanout,
    "isr": expand_fanout,
    "_ineligible": ineligible_fanout,
    "_partition_exceptions": acks0_produce_fanout,
}
KAFKA_DERIVATIONS = Derivations(by_group=GROUP_DERIVES, by_use=USE_DERIVES, versions=VERSION_KINDS, fanouts=FANOUTS)
