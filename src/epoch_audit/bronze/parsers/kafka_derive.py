"""Kafka log4j derivations: values a template's groups imply beyond their own text.

Sub-structures printed inside a message (a ``PartitionRegistration(..)``, a ``LeaderAndIsr(..)``,
a KRaft change summary ...) are read by key here; fan-outs turn a printed list into one event per
partition / replica; version rules name the Kafka version range a variant was printed by. Keyed
by group name (``GROUP_DERIVES``, ``FANOUTS``), by ``LineTemplate.uses`` (``USE_DERIVES``) or by
``@<kind>`` (``VERSION_KINDS``); :data:`KAFKA_DERIVATIONS` hands them to the template engine.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, IntegerType, LongType, StringType

from epoch_audit.bronze.parsers.line_template import Derivation, Derivations, GroupAccessor, GroupRule, int_list
from epoch_audit.bronze.parsers.templates.kafka_fragments import (
    BRACKET_LIST,
    CURRENT_LEADER_EPOCH_FROM_LEADER_EPOCH,
    ERROR_FROM_EXCEPTION,
    ERROR_FROM_REASON,
    LEADER_FROM_IDENT,
    NUMBER,
    UUID,
)

_INT, _LONG, _STR, _BOOL = IntegerType(), LongType(), StringType(), BooleanType()

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


def fan_element(**values: Column) -> Column:
    """A fan-out element with every FAN_FIELDS field (missing ones null)."""
    return F.struct(*[
        (values[n].try_cast(t) if n in values else F.lit(None).cast(t)).alias(n) for n, t in FAN_FIELDS
    ])


def field_value(s: Column, key: str, value: str = NUMBER) -> Column:
    """``key=<value>`` inside a generated toString (first occurrence, at a field boundary)."""
    out = F.regexp_extract(s, r"(?:^|[(, ])" + key + "=(" + value + ")", 1)
    return F.when(out != "", out)


def field_int_list(s: Column, key: str) -> Column:
    """``key=[..]`` -> array<int>; ``key=null`` -> null."""
    raw = field_value(s, key, r"\[[^\]]*\]|null")
    return F.when(raw != "null", int_list(raw))


def broker_states(s: Column) -> dict[str, Column]:
    """``List(BrokerState(brokerId=1, brokerEpoch=-1), ...)`` / ``[BrokerState(..)]`` -> isr + epochs."""
    ids = F.transform(F.regexp_extract_all(s, F.lit(r"brokerId=(-?\d+)"), 1), lambda x: x.try_cast(_INT))
    epochs = F.transform(F.regexp_extract_all(s, F.lit(r"brokerEpoch=(-?\d+)"), 1), lambda x: x.try_cast(_LONG))
    return {"isr": ids, "isr_broker_epochs": epochs}


def new_isr(s: Column) -> dict[str, Column]:
    """An AlterPartition new ISR: plain list (3.3-3.4, ZK List(..)) or BrokerState list (3.5+)."""
    has_broker_states = s.contains("BrokerState(")
    states = broker_states(s)
    return {"isr": F.when(has_broker_states, states["isr"]).otherwise(int_list(s)), "isr_broker_epochs": F.when(has_broker_states, states["isr_broker_epochs"])}


def leader_and_isr_version(g: GroupAccessor) -> Column:
    """kafka.api.LeaderAndIsr variant -> version range (§0.3)."""
    return (
        F.when(g("_isr_with_broker_epochs").isNotNull(), F.lit("3.5+"))
        .when(g("_leader_and_isr_epoch_label") == "partitionEpoch", F.lit("3.3-3.4"))
        .when(g("d_leader_recovery_state").isNotNull(), F.lit("3.2"))
        .otherwise(F.lit("2.6-3.1"))
    )


def leader_and_isr_values(g: GroupAccessor) -> dict[str, Column]:
    """A printed kafka.api.LeaderAndIsr (group ``_isr_with_broker_epochs``): the 3.5+ BrokerState ISR; else the plain
    ``_new_isr`` alternative of ``ISR for partition .. updated to``."""
    states = broker_states(g("_isr_with_broker_epochs"))
    new_isr_text = g("_new_isr")
    return {
        "isr": F.coalesce(
            F.when(g("_isr_with_broker_epochs").isNotNull(), states["isr"]), F.when(new_isr_text.isNotNull(), new_isr(new_isr_text)["isr"])
        ),
        "isr_broker_epochs": F.when(g("_isr_with_broker_epochs").isNotNull(), states["isr_broker_epochs"]),
    }


def partition_state_version(g: GroupAccessor) -> Column:
    return (
        F.when(g("_state_epoch_label") == "partitionEpoch", F.lit("3.3+"))
        .when(g("d_leader_recovery_state").isNotNull(), F.lit("3.2"))
        .otherwise(F.lit("2.6-3.1"))
    )


def isr_controller_epoch_version(g: GroupAccessor) -> Column:
    return (
        F.when(g("d_leader_recovery_state").isNotNull(), F.lit("3.2+"))
        .when(g("partition_epoch").isNotNull(), F.lit("3.1"))
        .otherwise(F.lit("2.6-3.0"))
    )


def under_min_isr(g: GroupAccessor) -> dict[str, Column]:
    return {"d_under_min_isr": F.when(g("_under_min_isr").isNotNull(), F.lit("true")).otherwise(F.lit("false"))}


def kraft_generation(g: GroupAccessor) -> Column:
    """KRaft idents changed in 3.5 (§0.2): ``[Controller N]``/``[RaftManager nodeId=N]`` = 2.8-3.4."""
    ident = F.col("_ident")
    return (
        F.when(ident.startswith("QuorumController id=") | ident.startswith("RaftManager id="), F.lit("3.5+"))
        .when(ident.startswith("Controller ") | ident.startswith("RaftManager nodeId="), F.lit("2.8-3.4"))
    )


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


def exception_error(exc: Column) -> Column:
    """Fully qualified exception name -> Errors constant (known ones; else the simple class name)."""
    simple = F.substring_index(exc, ".", -1)
    mapping = F.create_map(*[F.lit(x) for kv_ in _EXCEPTION_ERRORS.items() for x in kv_])
    return F.coalesce(mapping[simple], simple)


def broker_registration_values(g: GroupAccessor) -> dict[str, Column]:
    """RegisterBrokerRecord / BrokerRegistration / Fence / Unfence / BrokerRegistrationChange fields."""
    rec = g("_registration_record")
    rtype = F.coalesce(g("record_type"), F.regexp_extract(rec, r"^(\w+)\(", 1))
    fenced_i8 = field_value(rec, "fenced")  # BrokerRegistrationChangeRecord: -1 unfenced, 0 no change, 1 fenced
    fenced = (
        F.when(rtype == "FenceBrokerRecord", F.lit(True))
        .when(rtype == "UnfenceBrokerRecord", F.lit(False))
        .when(fenced_i8 == "1", F.lit(True))
        .when(fenced_i8 == "-1", F.lit(False))
        .when(fenced_i8 == "0", F.lit(None))
        .otherwise(field_value(rec, "fenced", "true|false").try_cast(_BOOL))
    )
    ics = field_value(rec, "inControlledShutdown", r"true|false|-?\d+")
    in_cs = F.when(ics == "1", F.lit(True)).when(ics == "0", F.lit(None)).otherwise(ics.try_cast(_BOOL))
    bid = F.coalesce(field_value(rec, "brokerId"), field_value(rec, "id"))
    return {
        "record_type": F.when(rtype == "BrokerRegistration", F.lit("RegisterBrokerRecord")).otherwise(rtype),
        "broker_id": bid.try_cast(_INT),
        "broker_epoch": F.coalesce(field_value(rec, "brokerEpoch"), field_value(rec, "epoch")).try_cast(_LONG),
        "fenced": fenced,
        "in_controlled_shutdown": in_cs,
        "d_incarnation_id": field_value(rec, "incarnationId", UUID),
    }


def partition_registration_values(g: GroupAccessor) -> dict[str, Column]:
    """PartitionRegistration(...) printed form (§3.1), read by key (fields vary by version)."""
    s = g("_partition_registration")
    return {
        "replicas": field_int_list(s, "replicas"),
        "isr": field_int_list(s, "isr"),
        "removing_replicas": field_int_list(s, "removingReplicas"),
        "adding_replicas": field_int_list(s, "addingReplicas"),
        "leader": field_value(s, "leader").try_cast(_INT),
        "leader_epoch": field_value(s, "leaderEpoch").try_cast(_INT),
        "partition_epoch": field_value(s, "partitionEpoch").try_cast(_INT),
        "d_leader_recovery_state": field_value(s, "leaderRecoveryState", r"\w+"),
    }


def partition_change_record_values(g: GroupAccessor) -> dict[str, Column]:
    """PartitionChangeRecord(...) toString: only set fields matter (leader -2 / null = unchanged)."""
    s = g("_partition_change_record")
    leader = field_value(s, "leader").try_cast(_INT)
    return {
        "partition": field_value(s, "partitionId").try_cast(_INT),
        "topic_id": field_value(s, "topicId", UUID),
        "isr": field_int_list(s, "isr"),
        "leader": F.when(leader != -2, leader),
        "replicas": field_int_list(s, "replicas"),
        "removing_replicas": field_int_list(s, "removingReplicas"),
        "adding_replicas": field_int_list(s, "addingReplicas"),
        "d_leader_recovery_state": F.when(field_value(s, "leaderRecoveryState") != "-1", field_value(s, "leaderRecoveryState")),
    }


def partition_change_summary_values(g: GroupAccessor) -> dict[str, Column]:
    """``key: old -> new`` items of a KRaft partition change summary -> new values (+ old in details)."""
    s = g("_change_summary")

    def item(key: str, value: str, idx: int) -> Column:
        out = F.regexp_extract(s, r"(?:^|, )" + key + r": (" + value + r") -> (" + value + r")", idx)
        return F.when(out != "", out)

    return {
        "isr": F.when(item("isr", BRACKET_LIST, 2).isNotNull(), int_list(item("isr", BRACKET_LIST, 2))),
        "replicas": F.when(item("replicas", BRACKET_LIST, 2).isNotNull(), int_list(item("replicas", BRACKET_LIST, 2))),
        "leader": item("leader", NUMBER, 2).try_cast(_INT),
        "leader_epoch": item("leaderEpoch", NUMBER, 2).try_cast(_INT),
        "prev_leader_epoch": item("leaderEpoch", NUMBER, 1).try_cast(_INT),
        "partition_epoch": item("partitionEpoch", NUMBER, 2).try_cast(_INT),
        "d_prev_leader": item("leader", NUMBER, 1),
        "d_prev_partition_epoch": item("partitionEpoch", NUMBER, 1),
        "d_prev_isr": item("isr", BRACKET_LIST, 1),
        "d_leader_recovery_state": item("leaderRecoveryState", r"\w+", 2),
        "d_unclean": F.when(g("_unclean").isNotNull(), F.lit("true")).otherwise(F.lit("false")),
    }


def pending_isr_state_values(g: GroupAccessor) -> dict[str, Column]:
    """A proposed ISR state (PendingExpandIsr / PendingShrinkIsr, §2.1) with its sentLeaderAndIsr."""
    s = g("_pending")
    lai = F.regexp_extract(s, r"LeaderAndIsr\((.*)", 1)
    isr_list = F.regexp_extract(lai, r"(?:isr|isrWithBrokerEpoch)=List(\((?:BrokerState\([^)]*\)(?:, )?|[^)])*\))", 1)
    isr = new_isr(isr_list)
    has_lai = lai != ""
    return {
        "replica_id": field_value(s, "newInSyncReplicaId").try_cast(_INT),
        "leader": F.when(has_lai, field_value(lai, "leader").try_cast(_INT)),
        "leader_epoch": F.when(has_lai, field_value(lai, "leaderEpoch").try_cast(_INT)),
        "partition_epoch": F.when(
            has_lai, F.coalesce(field_value(lai, "partitionEpoch"), field_value(lai, "zkVersion")).try_cast(_INT)
        ),
        "isr": F.when(isr_list != "", isr["isr"]),
        "isr_broker_epochs": F.when(isr_list.contains("BrokerState("), isr["isr_broker_epochs"]),
        "d_proposed_state": F.regexp_extract(s, r"^(\w+)\(", 1),
    }


def tp_set_fanout(g: GroupAccessor) -> Column:
    """``Set(a-0, b-1)`` / ``HashSet(..)`` / ``Set()`` -> one element per topic-partition."""
    inner = F.regexp_extract(g("_topic_partitions"), r"^\w*\((.*)\)$", 1)
    parts = F.filter(F.split(inner, ", "), lambda x: x != "")
    return F.transform(parts, lambda x: fan_element(tp=x))


_FETCH_MAP_ENTRY = (
    r"([\w.-]+-\d+) -> (?:\(offset=(-?\d+), leaderEpoch=(-?\d+)\)|InitialFetchState\("
    r"(?:(?:Some\([\w-]+\)|None),)?BrokerEndPoint\(id=\d+, host=[^)]*\),(-?\d+),(-?\d+)(?:,[^)]*)?\))"
)


def added_fetcher_fanout(g: GroupAccessor) -> Column:
    """``Map(tp -> (offset=O, leaderEpoch=E), ..)`` or ``..(tp -> InitialFetchState(..,E,O))``."""
    s = g("_fetch_map")

    def col(i: int) -> Column:
        return F.regexp_extract_all(s, F.lit(_FETCH_MAP_ENTRY), i)

    tps, off1, le1, le2, off2 = col(1), col(2), col(3), col(4), col(5)

    def nz(c: Column) -> Column:
        return F.when(c != "", c)

    return F.transform(
        tps,
        lambda x, i: fan_element(
            tp=x,
            offset=F.coalesce(nz(off1[i]), nz(off2[i])),
            leader_epoch=F.coalesce(nz(le1[i]), nz(le2[i])),
        ),
    )


def broker_set_fanout(g: GroupAccessor) -> Column:
    return F.transform(int_list(g("_brokers")), lambda x: fan_element(replica_id=x))


_OUT_OF_SYNC_REPLICA = r"\(brokerId: (\d+), endOffset: (-?\d+|unknown)(?:, lastCaughtUpTimeMs: (-?\d+|unknown))?\)"


def out_of_sync_fanout(g: GroupAccessor) -> Column:
    """Shrink's out-of-sync replica groups -> one event per removed replica."""
    s = g("_out_of_sync")
    ids, ends, lcu = (F.regexp_extract_all(s, F.lit(_OUT_OF_SYNC_REPLICA), i) for i in (1, 2, 3))
    return F.transform(
        ids,
        lambda x, i: fan_element(
            replica_id=x,
            offset=ends[i].try_cast(_LONG),
            d_last_caught_up_time_ms=F.when(lcu[i] != "", lcu[i]),
        ),
    )


def expand_fanout(g: GroupAccessor) -> Column:
    """2.6/2.7 ``Expanding ISR from A to B``: the added replicas are B - A."""
    return F.transform(F.array_except(int_list(g("isr")), int_list(g("d_old_isr"))), lambda x: fan_element(replica_id=x))


_INELIGIBLE_REPLICA = r"(\d+) \(([^)]*)\)"


def ineligible_fanout(g: GroupAccessor) -> Column:
    """``[3 (fenced), 4 (broker epoch mismatch: requested=X VS expected=Y)]`` (KRaft) or ``Set(3)`` (ZK)."""
    s = g("_ineligible")
    ids = F.regexp_extract_all(s, F.lit(_INELIGIBLE_REPLICA), 1)
    reasons = F.regexp_extract_all(s, F.lit(_INELIGIBLE_REPLICA), 2)
    kraft = F.transform(
        ids,
        lambda x, i: fan_element(
            replica_id=x,
            d_reason=reasons[i],
            broker_epoch=F.regexp_extract(reasons[i], r"requested=(-?\d+)", 1).try_cast(_LONG),
            d_expected_broker_epoch=F.when(
                F.regexp_extract(reasons[i], r"expected=(-?\d+)", 1) != "",
                F.regexp_extract(reasons[i], r"expected=(-?\d+)", 1),
            ),
        ),
    )
    zk = F.transform(int_list(s), lambda x: fan_element(replica_id=x, d_reason=F.lit("not in live brokers")))
    return F.when(s.startswith("["), kraft).otherwise(zk)


_PARTITION_EXCEPTION = r"([\w.-]+-\d+) -> ([\w.$]+)"


def acks0_produce_fanout(g: GroupAccessor) -> Column:
    """acks=0 produce failure: second line ``Topic and partition to exceptions: tp -> Exc, ...``."""
    s = g("_partition_exceptions")
    tps = F.regexp_extract_all(s, F.lit(_PARTITION_EXCEPTION), 1)
    excs = F.regexp_extract_all(s, F.lit(_PARTITION_EXCEPTION), 2)
    return F.transform(tps, lambda x, i: fan_element(tp=x, d_exception=excs[i], error=exception_error(excs[i])))


def stale_broker_epoch_version(g: GroupAccessor) -> Column:
    return F.when(g("controller_id").isNotNull(), F.lit("3.4+")).otherwise(F.lit("2.6-3.3"))



def raft_state_values(g: GroupAccessor) -> dict[str, Column]:
    """``Completed transition to <State>(..) [from <State>(..)]``: the new state's epoch and leader."""
    state = g("d_state")
    rest = g("_state")
    new_part = F.substring_index(rest, " from ", 1)  # 3.5+ appends " from <oldState>"
    epoch = F.regexp_extract(new_part, r"\bepoch=(\d+)", 1)
    leader_id = F.regexp_extract(new_part, r"\bleader(?:Id)?=(\d+)", 1)
    is_leader = state.isin("Leader", "LeaderState")
    from_state = F.regexp_extract(rest, r" from (\w+)\(", 1)
    return {
        "quorum_epoch": F.when(epoch != "", epoch).try_cast(_INT),
        "leader": F.when(is_leader, F.col("_iid")).otherwise(F.when(leader_id != "", leader_id).try_cast(_INT)),
        "offset": F.when(is_leader, field_value(new_part, "epochStartOffset").try_cast(_LONG)),
        "d_from_state": F.when(from_state != "", from_state),
        "d_voted_id": F.coalesce(field_value(new_part, "votedId"), field_value(new_part, r"votedKey=ReplicaKey\(id")),
    }


def sent_leader_and_isr_values(g: GroupAccessor) -> dict[str, Column]:
    """The sent LeaderAndIsr of a 2.7-3.0 expand line (``_sent``): wins over the pending state's values."""
    sent = g("_sent")
    isr_list = F.regexp_extract(sent, r"isr=List(\([^)]*\))", 1)
    return {
        "leader": field_value(sent, "leader").try_cast(_INT),
        "leader_epoch": field_value(sent, "leaderEpoch").try_cast(_INT),
        "partition_epoch": F.coalesce(field_value(sent, "zkVersion"), field_value(sent, "partitionEpoch")).try_cast(_INT),
        "isr": F.when(isr_list != "", int_list(isr_list)),
    }


def reason_error(reason: Column) -> Column:
    """Error of the loosely recorded 2.7-3.2 AlterIsr/AlterPartition failure texts (§2.2)."""
    return (
        F.when(reason.contains("old leader epoch") | reason.contains("leader epoch is old"),
               F.lit("FENCED_LEADER_EPOCH"))
        .when(reason.contains("invalid version") | reason.contains("partition epoch is invalid"),
              F.lit("INVALID_UPDATE_VERSION"))
        .when(reason.contains("about this topic or partition"), F.lit("UNKNOWN_TOPIC_OR_PARTITION"))
        .when(reason.contains("about this topic"), F.lit("UNKNOWN_TOPIC_ID"))
        .when(reason.contains("pending AlterPartition still inflight"), F.lit("OPERATION_NOT_ATTEMPTED"))
        .when(reason.contains("request is invalid"), F.lit("INVALID_REQUEST"))
    )


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
    ("_no_leader", lambda g: {"d_isr_without_leader": F.when(g("_no_leader").isNotNull(), F.lit("true"))}),
    ("_fetch_leader_id", lambda g: {"leader": g("_fetch_leader_id").try_cast(_INT)}),
]
USE_DERIVES: dict[str, Derivation] = {
    LEADER_FROM_IDENT: lambda g: {"leader": F.col("_iid")},
    CURRENT_LEADER_EPOCH_FROM_LEADER_EPOCH: lambda g: {"current_leader_epoch": g("leader_epoch").try_cast(_INT)},
    ERROR_FROM_EXCEPTION: lambda g: {"error": exception_error(g("d_exception"))},
    ERROR_FROM_REASON: lambda g: {"error": reason_error(g("d_reason"))},
}
VERSION_KINDS: dict[str, GroupRule] = {
    "@partition_state": partition_state_version,
    "@leader_and_isr": leader_and_isr_version,
    "@leader_and_isr_if_printed": lambda g: F.when(g("partition_epoch").isNotNull(), leader_and_isr_version(g)),
    "@isr_controller_epoch": isr_controller_epoch_version,
    "@stale_broker_epoch": stale_broker_epoch_version,
    "@kraft": kraft_generation,
    "@shrink": lambda g: F.when(g("_out_of_sync").contains("lastCaughtUpTimeMs"), F.lit("3.6+")).otherwise(F.lit("2.6-3.5")),
    "@log_start_offset": lambda g: F.when(F.col("logger").endswith("UnifiedLog"), F.lit("3.1+")).otherwise(F.lit("2.6-3.0")),
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
