"""Kafka log4j message parsers (state-change, controller, server logs) -> bronze events.

Covers reference §0.2/§0.3 (log idents, value printing), §1.1-1.5 (StopReplica, LeaderAndIsr,
UpdateMetadata, controller sends, KafkaApis stale broker epoch), §2.1-2.4 (ISR shrink/expand/update,
AlterPartition handling, controller rejections), the KRaft controller ``Replayed ...`` / ``Created
...`` / registration lines and raft ``Completed transition to ...`` (§0.2, §3.1), §4.3 (log start
offset), §6 (produce / fetch rejections). The JSON request log (§5) has its own parser.

How it works (one pass, no UDFs):

1. Cheap routing. Rows are kept only for known loggers; the leading log ident (``[Broker id=2] ``,
   ``[Partition t-3 broker=1] `` ...) is cut off with ``instr``/``substring``. A nested ``CASE``
   (logger family, then ``startswith``/``contains`` on the body) assigns each row at most one
   template id (``tid``): no regex has run yet.
2. One regex per row. ``regexp_replace(body, <template regex>, <replacement>)`` on the chosen
   template only. The replacement lists every capture group in one global *slot* order separated by
   ``\\x01`` (and starts with ``\\x02`` so a match is recognisable), so ``split`` yields the same
   array layout for every template and each output column is a single typed cast of its slot.
3. Templates needing more (sub-structures, fan-out to one event per partition / replica) add
   ``derive`` / ``fanout`` expressions, evaluated inside ``CASE tid`` so they only run on their rows.

A row whose template was chosen but whose regex does not match becomes ``__malformed__`` with a
reason; ``catch-all`` templates (``regex=None``) turn unknown variants of a recognised family
(e.g. a ``Leader ... starts at leader epoch`` line in an unseen shape) into malformed rows too.
Templates with ``event_type=None`` are recognised lines that carry no audit event (dropped).

Adding a template: append a :class:`Tpl` to ``TEMPLATES`` (named groups = bronze column names;
``d_<key>`` = ``details[<key>]``; ``tp`` = topic-partition split on the last ``-``; ``_x`` = internal
value used by ``derive``). List variants from the most specific prefilter to the least.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from epoch_audit.bronze.parsers import MALFORMED
from epoch_audit.contracts.events import EVENT_SCHEMA, EVENT_TYPES

# ----------------------------------------------------------------------------------------------
# Logger families (reference §0.2). Strimzi's log4j2 variant prints the simple logger name (%c{1}).
# ----------------------------------------------------------------------------------------------

_FAMILY_LOGGERS: dict[str, tuple[str, ...]] = {
    "sc": ("state.change.logger",),
    "partition": ("kafka.cluster.Partition",),
    "apis": ("kafka.server.KafkaApis",),
    "rfm": ("kafka.server.ReplicaFetcherManager",),
    "rft": ("kafka.server.ReplicaFetcherThread",),
    "log": ("kafka.log.UnifiedLog", "kafka.log.Log"),
    "logmgr": ("kafka.log.LogManager",),
    "zkc": ("kafka.controller.KafkaController",),
    "krc": (
        "org.apache.kafka.controller.ReplicationControlManager",
        "org.apache.kafka.controller.ClusterControlManager",
        "org.apache.kafka.controller.OffsetControlManager",
        "org.apache.kafka.controller.QuorumController",
        "org.apache.kafka.controller.PartitionChangeBuilder",
        "org.apache.kafka.controller.BrokerHeartbeatManager",
    ),
    "raft": ("org.apache.kafka.raft.QuorumState", "org.apache.kafka.raft.KafkaRaftClient"),
    # AlterPartitionManager's exact logger is not recorded (§10): any kafka.server.*Alter* class.
    "apm": (
        "kafka.server.DefaultAlterPartitionManager",
        "kafka.server.AlterPartitionManager",
        "kafka.server.DefaultAlterIsrManager",
        "kafka.server.AlterIsrManager",
    ),
    "sender": ("org.apache.kafka.clients.producer.internals.Sender",),
}
# Prefix families: the KRaft controller/raft managers are many classes sharing one LogContext.
_FAMILY_PREFIX: dict[str, tuple[str, ...]] = {
    "krc": ("org.apache.kafka.controller.",),
    "raft": ("org.apache.kafka.raft.",),
}


def _family_pred(family: str) -> Column:
    names = list(_FAMILY_LOGGERS[family])
    names += [n.rsplit(".", 1)[-1] for n in names if "." in n and n != "state.change.logger"]
    if family == "sc":
        names.append("logger")  # %c{1} of state.change.logger
    pred = F.col("logger").isin(*sorted(set(names)))
    for prefix in _FAMILY_PREFIX.get(family, ()):
        pred = pred | F.col("logger").startswith(prefix)
    if family == "apm":
        pred = pred | (F.col("logger").startswith("kafka.server.") & F.col("logger").contains("Alter"))
    return pred


# ----------------------------------------------------------------------------------------------
# Value fragments (§0.3). Named groups: bronze column, d_<details key>, tp, or _internal.
# ----------------------------------------------------------------------------------------------

N = r"-?\d+"
TP = r"(?P<tp>[\w.-]+-\d+)"
UUID = r"[\w-]+"
TOPIC_ID_OPT = r"(?:Some\((?P<topic_id>" + UUID + r")\)|None)"
BLIST = r"\[[^\]]*\]"  # bracketed list, [1,2] or [1, 2]; captured WITH brackets (empty != absent)

# LeaderAndIsrPartitionState(...) (§0.3): zkVersion= up to 3.2, partitionEpoch= from 3.3;
# leaderRecoveryState from 3.2. controllerEpoch here is the STATE's controller epoch.
LAIPS = (
    r"LeaderAndIsrPartitionState\(topicName='(?P<topic>[^']*)', partitionIndex=(?P<partition>\d+), "
    r"controllerEpoch=(?P<state_controller_epoch>" + N + r"), leader=(?P<leader>" + N + r"), "
    r"leaderEpoch=(?P<leader_epoch>" + N + r"), isr=(?P<isr>" + BLIST + r"), "
    r"(?P<_pe_label>zkVersion|partitionEpoch)=(?P<partition_epoch>" + N + r"), "
    r"replicas=(?P<replicas>" + BLIST + r"), addingReplicas=(?P<adding_replicas>" + BLIST + r"), "
    r"removingReplicas=(?P<removing_replicas>" + BLIST + r"), isNew=(?P<d_is_new>true|false)"
    r"(?:, leaderRecoveryState=(?P<d_leader_recovery_state>" + N + r"))?\)"
)
# UpdateMetadataPartitionState(...) (§1.5): zkVersion in every version.
UMPS = (
    r"UpdateMetadataPartitionState\(topicName='(?P<topic>[^']*)', partitionIndex=(?P<partition>\d+), "
    r"controllerEpoch=(?P<state_controller_epoch>" + N + r"), leader=(?P<leader>" + N + r"), "
    r"leaderEpoch=(?P<leader_epoch>" + N + r"), isr=(?P<isr>" + BLIST + r"), "
    r"zkVersion=(?P<partition_epoch>" + N + r"), replicas=(?P<replicas>" + BLIST + r"), "
    r"offlineReplicas=(?P<d_offline_replicas>" + BLIST + r")\)"
)
SRPS = (
    r"StopReplicaPartitionState\(partitionIndex=(?P<_pidx>\d+), leaderEpoch=(?P<leader_epoch>" + N
    + r"), deletePartition=(?P<delete_partition>true|false)\)"
)
# kafka.api.LeaderAndIsr, 4 variants (§0.3): isr=List(..) | isrWithBrokerEpoch=List(BrokerState(..)),
# optional leaderRecoveryState (3.2+), zkVersion | partitionEpoch.
_BROKER_STATES = r"(?:BrokerState\(brokerId=" + N + r", brokerEpoch=" + N + r"\)(?:, )?)*"
LAI = (
    r"LeaderAndIsr\(leader=(?P<leader>" + N + r"), leaderEpoch=(?P<leader_epoch>" + N + r"), "
    r"(?:isr=List(?P<isr>\([^)]*\))|isrWithBrokerEpoch=List(?P<_isr_be>\(" + _BROKER_STATES + r"\)))"
    r"(?:, leaderRecoveryState=(?P<d_leader_recovery_state>\w+))?, "
    r"(?P<_lai_pe_label>zkVersion|partitionEpoch)=(?P<partition_epoch>" + N + r")\)"
)
# LeaderIsrAndControllerEpoch, 3 variants (§0.3): split on the ",<Label>:" markers.
LICE = (
    r"\(Leader:(?P<leader>" + N + r"),ISR(?P<isr>:[\d,]*),"
    r"(?:LeaderRecoveryState:(?P<d_leader_recovery_state>\w+),)?LeaderEpoch:(?P<leader_epoch>" + N + r"),"
    r"(?:ZkVersion:(?P<partition_epoch>" + N + r"),)?ControllerEpoch:(?P<state_controller_epoch>" + N + r")\)"
)
UNDER_MIN_ISR = r"(?P<_umi>\(under-min-isr\))?"


# ----------------------------------------------------------------------------------------------
# Template spec
# ----------------------------------------------------------------------------------------------

G = Callable[[str], Column]  # group accessor: group name -> string Column (null when absent or empty)

# Template-keyed derivations (``Tpl.uses``): values that do not follow from a group name alone.
LEADER_FROM_IDENT = "leader=ident"  # the logging broker (log ident id) is the leader
CLE_FROM_LE = "current_leader_epoch=leader_epoch"  # "... matches the current leader epoch"
ERROR_FROM_EXCEPTION = "error=exception"  # Errors constant of the d_exception group
ERROR_FROM_REASON = "error=reason"  # Errors constant of a loosely recorded d_reason text


@dataclass(frozen=True)
class Tpl:
    """One log message template (or, with ``regex=None``, a family catch-all -> malformed).

    ``version``: a literal hint, or ``@<kind>`` computed from the groups (``VERSION_KINDS``).
    ``const``: constant column / ``d_<key>`` values; they win over derived values.
    ``uses``: template-keyed derivations (``USE_DERIVES``); everything else is derived from the
    group names alone (``GROUP_DERIVES``). ``fanout``: the group holding the list to fan out
    (``FANOUTS``, keyed by that group name): one event per element (sub_index = position).
    """

    tid: str
    event_type: str | None
    families: tuple[str, ...]
    starts: str
    regex: str | None = None
    contains: tuple[str, ...] = ()
    contains_any: tuple[str, ...] = ()
    version: str | None = None
    const: dict[str, Any] = field(default_factory=dict)
    uses: tuple[str, ...] = ()
    fanout: str | None = None


# ---------- helpers used by derive / fanout ----------

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
FAN_STRUCT = StructType([StructField(n, t) for n, t in FAN_FIELDS])


def fan(**values: Column) -> Column:
    """A fan-out element with every FAN_FIELDS field (missing ones null)."""
    return F.struct(*[
        (values[n].cast(t) if n in values else F.lit(None).cast(t)).alias(n) for n, t in FAN_FIELDS
    ])


def ints(s: Column, dtype: DataType = _INT) -> Column:
    """Every integer in a printed list, any form: 1,2 / [1, 2] / List(1, 2) / Set() -> array."""
    return F.transform(F.regexp_extract_all(s, F.lit(r"-?\d+"), 0), lambda x: x.cast(dtype))


def kv(s: Column, key: str, value: str = N) -> Column:
    """``key=<value>`` inside a generated toString (first occurrence, at a field boundary)."""
    out = F.regexp_extract(s, r"(?:^|[(, ])" + key + "=(" + value + ")", 1)
    return F.when(out != "", out)


def kv_list(s: Column, key: str) -> Column:
    """``key=[..]`` -> array<int>; ``key=null`` -> null."""
    raw = kv(s, key, r"\[[^\]]*\]|null")
    return F.when(raw != "null", ints(raw))


def broker_states(s: Column) -> dict[str, Column]:
    """``List(BrokerState(brokerId=1, brokerEpoch=-1), ...)`` / ``[BrokerState(..)]`` -> isr + epochs."""
    ids = F.transform(F.regexp_extract_all(s, F.lit(r"brokerId=(-?\d+)"), 1), lambda x: x.cast(_INT))
    eps = F.transform(F.regexp_extract_all(s, F.lit(r"brokerEpoch=(-?\d+)"), 1), lambda x: x.cast(_LONG))
    return {"isr": ids, "isr_broker_epochs": eps}


def new_isr(s: Column) -> dict[str, Column]:
    """An AlterPartition new ISR: plain list (3.3-3.4, ZK List(..)) or BrokerState list (3.5+)."""
    has_be = s.contains("BrokerState(")
    bs = broker_states(s)
    return {"isr": F.when(has_be, bs["isr"]).otherwise(ints(s)), "isr_broker_epochs": F.when(has_be, bs["isr_broker_epochs"])}


def lai_version(g: G) -> Column:
    """kafka.api.LeaderAndIsr variant -> version range (§0.3)."""
    return (
        F.when(g("_isr_be").isNotNull(), F.lit("3.5+"))
        .when(g("_lai_pe_label") == "partitionEpoch", F.lit("3.3-3.4"))
        .when(g("d_leader_recovery_state").isNotNull(), F.lit("3.2"))
        .otherwise(F.lit("2.6-3.1"))
    )


def lai_derive(g: G) -> dict[str, Column]:
    """A printed kafka.api.LeaderAndIsr (group ``_isr_be``): the 3.5+ BrokerState ISR; else the plain
    ``_newisr`` alternative of ``ISR for partition .. updated to``."""
    bs = broker_states(g("_isr_be"))
    newisr = g("_newisr")
    return {
        "isr": F.coalesce(
            F.when(g("_isr_be").isNotNull(), bs["isr"]), F.when(newisr.isNotNull(), new_isr(newisr)["isr"])
        ),
        "isr_broker_epochs": F.when(g("_isr_be").isNotNull(), bs["isr_broker_epochs"]),
    }


def laips_version(g: G) -> Column:
    return (
        F.when(g("_pe_label") == "partitionEpoch", F.lit("3.3+"))
        .when(g("d_leader_recovery_state").isNotNull(), F.lit("3.2"))
        .otherwise(F.lit("2.6-3.1"))
    )


def lice_version(g: G) -> Column:
    return (
        F.when(g("d_leader_recovery_state").isNotNull(), F.lit("3.2+"))
        .when(g("partition_epoch").isNotNull(), F.lit("3.1"))
        .otherwise(F.lit("2.6-3.0"))
    )


def under_min_isr(g: G) -> dict[str, Column]:
    return {"d_under_min_isr": F.when(g("_umi").isNotNull(), F.lit("true")).otherwise(F.lit("false"))}


def kraft_generation(g: G) -> Column:
    """KRaft idents changed in 3.5 (§0.2): ``[Controller N]``/``[RaftManager nodeId=N]`` = 2.8-3.4."""
    ident = F.col("_ident")
    return (
        F.when(ident.startswith("QuorumController id=") | ident.startswith("RaftManager id="), F.lit("3.5+"))
        .when(ident.startswith("Controller ") | ident.startswith("RaftManager nodeId="), F.lit("2.8-3.4"))
    )


_EXC_ERRORS = {
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
    mapping = F.create_map(*[F.lit(x) for kv_ in _EXC_ERRORS.items() for x in kv_])
    return F.coalesce(mapping[simple], simple)


def registration_derive(g: G) -> dict[str, Column]:
    """RegisterBrokerRecord / BrokerRegistration / Fence / Unfence / BrokerRegistrationChange fields."""
    rec = g("_rec")
    rtype = F.coalesce(g("record_type"), F.regexp_extract(rec, r"^(\w+)\(", 1))
    fenced_i8 = kv(rec, "fenced")  # BrokerRegistrationChangeRecord: -1 unfenced, 0 no change, 1 fenced
    fenced = (
        F.when(rtype == "FenceBrokerRecord", F.lit(True))
        .when(rtype == "UnfenceBrokerRecord", F.lit(False))
        .when(fenced_i8 == "1", F.lit(True))
        .when(fenced_i8 == "-1", F.lit(False))
        .when(fenced_i8 == "0", F.lit(None))
        .otherwise(kv(rec, "fenced", "true|false").try_cast(_BOOL))
    )
    ics = kv(rec, "inControlledShutdown", r"true|false|-?\d+")
    in_cs = F.when(ics == "1", F.lit(True)).when(ics == "0", F.lit(None)).otherwise(ics.try_cast(_BOOL))
    bid = F.coalesce(kv(rec, "brokerId"), kv(rec, "id"))
    return {
        "record_type": F.when(rtype == "BrokerRegistration", F.lit("RegisterBrokerRecord")).otherwise(rtype),
        "broker_id": bid.try_cast(_INT),
        "broker_epoch": F.coalesce(kv(rec, "brokerEpoch"), kv(rec, "epoch")).try_cast(_LONG),
        "fenced": fenced,
        "in_controlled_shutdown": in_cs,
        "d_incarnation_id": kv(rec, "incarnationId", UUID),
    }


def preg_derive(g: G) -> dict[str, Column]:
    """PartitionRegistration(...) printed form (§3.1), read by key (fields vary by version)."""
    s = g("_preg")
    return {
        "replicas": kv_list(s, "replicas"),
        "isr": kv_list(s, "isr"),
        "removing_replicas": kv_list(s, "removingReplicas"),
        "adding_replicas": kv_list(s, "addingReplicas"),
        "leader": kv(s, "leader").try_cast(_INT),
        "leader_epoch": kv(s, "leaderEpoch").try_cast(_INT),
        "partition_epoch": kv(s, "partitionEpoch").try_cast(_INT),
        "d_leader_recovery_state": kv(s, "leaderRecoveryState", r"\w+"),
    }


def pcr_derive(g: G) -> dict[str, Column]:
    """PartitionChangeRecord(...) toString: only set fields matter (leader -2 / null = unchanged)."""
    s = g("_pcr")
    leader = kv(s, "leader").try_cast(_INT)
    return {
        "partition": kv(s, "partitionId").try_cast(_INT),
        "topic_id": kv(s, "topicId", UUID),
        "isr": kv_list(s, "isr"),
        "leader": F.when(leader != -2, leader),
        "replicas": kv_list(s, "replicas"),
        "removing_replicas": kv_list(s, "removingReplicas"),
        "adding_replicas": kv_list(s, "addingReplicas"),
        "d_leader_recovery_state": F.when(kv(s, "leaderRecoveryState") != "-1", kv(s, "leaderRecoveryState")),
    }


def diff_derive(g: G) -> dict[str, Column]:
    """``key: old -> new`` items of a KRaft partition change summary -> new values (+ old in details)."""
    s = g("_diff")

    def item(key: str, value: str, idx: int) -> Column:
        out = F.regexp_extract(s, r"(?:^|, )" + key + r": (" + value + r") -> (" + value + r")", idx)
        return F.when(out != "", out)

    return {
        "isr": F.when(item("isr", BLIST, 2).isNotNull(), ints(item("isr", BLIST, 2))),
        "replicas": F.when(item("replicas", BLIST, 2).isNotNull(), ints(item("replicas", BLIST, 2))),
        "leader": item("leader", N, 2).try_cast(_INT),
        "leader_epoch": item("leaderEpoch", N, 2).try_cast(_INT),
        "prev_leader_epoch": item("leaderEpoch", N, 1).try_cast(_INT),
        "partition_epoch": item("partitionEpoch", N, 2).try_cast(_INT),
        "d_prev_leader": item("leader", N, 1),
        "d_prev_partition_epoch": item("partitionEpoch", N, 1),
        "d_prev_isr": item("isr", BLIST, 1),
        "d_leader_recovery_state": item("leaderRecoveryState", r"\w+", 2),
        "d_unclean": F.when(g("_unclean").isNotNull(), F.lit("true")).otherwise(F.lit("false")),
    }


def pending_derive(g: G) -> dict[str, Column]:
    """A proposed ISR state (PendingExpandIsr / PendingShrinkIsr, §2.1) with its sentLeaderAndIsr."""
    s = g("_pending")
    lai = F.regexp_extract(s, r"LeaderAndIsr\((.*)", 1)
    isr_list = F.regexp_extract(lai, r"(?:isr|isrWithBrokerEpoch)=List(\((?:BrokerState\([^)]*\)(?:, )?|[^)])*\))", 1)
    isr = new_isr(isr_list)
    has_lai = lai != ""
    return {
        "replica_id": kv(s, "newInSyncReplicaId").try_cast(_INT),
        "leader": F.when(has_lai, kv(lai, "leader").try_cast(_INT)),
        "leader_epoch": F.when(has_lai, kv(lai, "leaderEpoch").try_cast(_INT)),
        "partition_epoch": F.when(
            has_lai, F.coalesce(kv(lai, "partitionEpoch"), kv(lai, "zkVersion")).try_cast(_INT)
        ),
        "isr": F.when(isr_list != "", isr["isr"]),
        "isr_broker_epochs": F.when(isr_list.contains("BrokerState("), isr["isr_broker_epochs"]),
        "d_proposed_state": F.regexp_extract(s, r"^(\w+)\(", 1),
    }


def tp_set_fanout(g: G) -> Column:
    """``Set(a-0, b-1)`` / ``HashSet(..)`` / ``Set()`` -> one element per topic-partition."""
    inner = F.regexp_extract(g("_tps"), r"^\w*\((.*)\)$", 1)
    parts = F.filter(F.split(inner, ", "), lambda x: x != "")
    return F.transform(parts, lambda x: fan(tp=x))


_FETCH_ENTRY = (
    r"([\w.-]+-\d+) -> (?:\(offset=(-?\d+), leaderEpoch=(-?\d+)\)|InitialFetchState\("
    r"(?:(?:Some\([\w-]+\)|None),)?BrokerEndPoint\(id=\d+, host=[^)]*\),(-?\d+),(-?\d+)(?:,[^)]*)?\))"
)


def added_fetcher_fanout(g: G) -> Column:
    """``Map(tp -> (offset=O, leaderEpoch=E), ..)`` or ``..(tp -> InitialFetchState(..,E,O))``."""
    s = g("_fmap")

    def col(i: int) -> Column:
        return F.regexp_extract_all(s, F.lit(_FETCH_ENTRY), i)

    tps, off1, le1, le2, off2 = col(1), col(2), col(3), col(4), col(5)

    def nz(c: Column) -> Column:
        return F.when(c != "", c)

    return F.transform(
        tps,
        lambda x, i: fan(
            tp=x,
            offset=F.coalesce(nz(off1[i]), nz(off2[i])),
            leader_epoch=F.coalesce(nz(le1[i]), nz(le2[i])),
        ),
    )


def broker_set_fanout(g: G) -> Column:
    return F.transform(ints(g("_brokers")), lambda x: fan(replica_id=x))


_OOS = r"\(brokerId: (\d+), endOffset: (-?\d+|unknown)(?:, lastCaughtUpTimeMs: (-?\d+|unknown))?\)"


def oos_fanout(g: G) -> Column:
    """Shrink's out-of-sync replica groups -> one event per removed replica."""
    s = g("_oos")
    ids, ends, lcu = (F.regexp_extract_all(s, F.lit(_OOS), i) for i in (1, 2, 3))
    return F.transform(
        ids,
        lambda x, i: fan(
            replica_id=x,
            offset=ends[i].try_cast(_LONG),
            d_last_caught_up_time_ms=F.when(lcu[i] != "", lcu[i]),
        ),
    )


def expand_fanout(g: G) -> Column:
    """2.6/2.7 ``Expanding ISR from A to B``: the added replicas are B - A."""
    return F.transform(F.array_except(ints(g("isr")), ints(g("d_old_isr"))), lambda x: fan(replica_id=x))


_INELIGIBLE = r"(\d+) \(([^)]*)\)"


def ineligible_fanout(g: G) -> Column:
    """``[3 (fenced), 4 (broker epoch mismatch: requested=X VS expected=Y)]`` (KRaft) or ``Set(3)`` (ZK)."""
    s = g("_inel")
    ids = F.regexp_extract_all(s, F.lit(_INELIGIBLE), 1)
    reasons = F.regexp_extract_all(s, F.lit(_INELIGIBLE), 2)
    kraft = F.transform(
        ids,
        lambda x, i: fan(
            replica_id=x,
            d_reason=reasons[i],
            broker_epoch=F.regexp_extract(reasons[i], r"requested=(-?\d+)", 1).try_cast(_LONG),
            d_expected_broker_epoch=F.when(
                F.regexp_extract(reasons[i], r"expected=(-?\d+)", 1) != "",
                F.regexp_extract(reasons[i], r"expected=(-?\d+)", 1),
            ),
        ),
    )
    zk = F.transform(ints(s), lambda x: fan(replica_id=x, d_reason=F.lit("not in live brokers")))
    return F.when(s.startswith("["), kraft).otherwise(zk)


_PRODUCE_EXC = r"([\w.-]+-\d+) -> ([\w.$]+)"


def ack0_fanout(g: G) -> Column:
    """acks=0 produce failure: second line ``Topic and partition to exceptions: tp -> Exc, ...``."""
    s = g("_summary")
    tps = F.regexp_extract_all(s, F.lit(_PRODUCE_EXC), 1)
    excs = F.regexp_extract_all(s, F.lit(_PRODUCE_EXC), 2)
    return F.transform(tps, lambda x, i: fan(tp=x, d_exception=excs[i], error=exception_error(excs[i])))


# ----------------------------------------------------------------------------------------------
# The templates
# ----------------------------------------------------------------------------------------------

SC = ("sc",)
_IGN_SR = r"Ignoring StopReplica request \(delete=(?P<delete_partition>true|false)\) from controller " \
    r"(?P<controller_id>\d+) with correlation id (?P<correlation_id>\d+) epoch (?P<controller_epoch>\d+) " \
    r"for partition " + TP
_IGN_LAI = r"Ignoring LeaderAndIsr request from controller (?P<controller_id>\d+) with correlation id " \
    r"(?P<correlation_id>\d+) epoch (?P<controller_epoch>\d+) for partition " + TP
_STALE_BE_TAIL = (
    r" request with broker epoch (?P<broker_epoch>" + N + r") smaller than the current broker epoch "
    r"(?P<d_current_broker_epoch>" + N + r")(?: from controller (?P<controller_id>\d+) with epoch "
    r"(?P<controller_epoch>\d+)\.)?"
)


def _stale_be_version(g: G) -> Column:
    return F.when(g("controller_id").isNotNull(), F.lit("3.4+")).otherwise(F.lit("2.6-3.3"))


_REJ = r"Rejecting AlterPartition request from node (?P<d_from_node>\d+) for " + TP + " because "
_FAILED_ALTER = r"Failed to alter partition to (?P<_pending>.*?) "
_AWAIT = r" Partition state may be out of sync, awaiting new the latest metadata\."
# 2.7-3.0 expand lines print the sent LeaderAndIsr before the PendingExpandIsr: captured (first, lazy)
# by a lookahead into ``_sent`` while the main pattern stays greedy.
_SENT_LAI = r"(?=(?P<_sent>LeaderAndIsr\(.*?\)) after transition)"

TEMPLATES: list[Tpl] = [
    # ---------------- §1.1 StopReplica, broker side ----------------
    Tpl("S1", "stop_replica_request", SC, "Handling StopReplica request correlationId ",
        r"Handling StopReplica request correlationId (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) for (?P<d_partition_count>\d+) partitions"),
    Tpl("S2", "stop_replica_received", SC, "Received StopReplica request ",
        r"Received StopReplica request " + SRPS + r" correlation id (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) for partition " + TP),
    Tpl("S3", "stop_replica_stale_controller", SC, "Ignoring StopReplica request from controller ",
        r"Ignoring StopReplica request from controller (?P<controller_id>\d+) with correlation id "
        r"(?P<correlation_id>\d+) since its controller epoch (?P<controller_epoch>\d+) is old\. "
        r"Latest known controller epoch is (?P<known_controller_epoch>\d+)",
        const={"error": "STALE_CONTROLLER_EPOCH"}),
    Tpl("S5", "stop_replica_fenced", SC, "Ignoring StopReplica request (delete=",
        _IGN_SR + r" since its associated leader epoch (?P<leader_epoch>" + N + r") is smaller than the "
        r"current leader epoch (?P<current_leader_epoch>" + N + r")",
        contains=(" is smaller than the current leader epoch ",), const={"error": "FENCED_LEADER_EPOCH"}),
    Tpl("S6", "stop_replica_equal_epoch_refused", SC, "Ignoring StopReplica request (delete=",
        _IGN_SR + r" since its associated leader epoch (?P<leader_epoch>" + N + r") matches the current "
        r"leader epoch",
        contains=(" matches the current leader epoch",), version="2.6.0-3.4.0",
        const={"error": "FENCED_LEADER_EPOCH"},
        uses=(CLE_FROM_LE,)),
    Tpl("S4", "stop_replica_storage_error", SC, "Ignoring StopReplica request (delete=",
        _IGN_SR + r" as the local replica for the partition is in an offline log directory",
        contains=(" offline log directory",),
        const={"error": "KAFKA_STORAGE_ERROR", "d_reason": "offline log directory"}),
    Tpl("S9", "stop_replica_storage_error", SC, "Ignoring StopReplica request (delete=",
        _IGN_SR + r" due to an unexpected (?P<d_exception>\S+) exception: (?P<d_exception_message>[\s\S]*)",
        contains=(" due to an unexpected ",), version="2.7+", const={"d_reason": "delete failed"}),
    Tpl("S*", MALFORMED, SC, "Ignoring StopReplica request"),
    # ---------------- §1.2 LeaderAndIsr, broker side ----------------
    Tpl("L13", None, SC, "Handling LeaderAndIsr request correlationId ", contains=(" transition for partition ",)),
    Tpl("L1", "leader_and_isr_request", SC, "Handling LeaderAndIsr request correlationId ",
        r"Handling LeaderAndIsr request correlationId (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) for (?P<d_partition_count>\d+) partitions"),
    Tpl("L2", "leader_and_isr_received", SC, "Received LeaderAndIsr request ",
        r"Received LeaderAndIsr request " + LAIPS + r" correlation id (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) epoch (?P<controller_epoch>\d+)", version="@laips"),
    Tpl("L3", "leader_and_isr_stale_controller", SC, "Ignoring LeaderAndIsr request from controller ",
        r"Ignoring LeaderAndIsr request from controller (?P<controller_id>\d+) with correlation id "
        r"(?P<correlation_id>\d+) since its controller epoch (?P<controller_epoch>\d+) is old\. "
        r"Latest known controller epoch is (?P<known_controller_epoch>\d+)",
        contains=(" is old. Latest known controller epoch is ",), const={"error": "STALE_CONTROLLER_EPOCH"}),
    Tpl("L6", "leader_and_isr_stale_epoch", SC, "Ignoring LeaderAndIsr request from controller ",
        _IGN_LAI + r" since its associated leader epoch (?P<leader_epoch>" + N + r") is smaller than the "
        r"current leader epoch (?P<current_leader_epoch>" + N + r")",
        contains=(" is smaller than the current leader epoch ",), const={"error": "STALE_CONTROLLER_EPOCH"}),
    Tpl("L7", "leader_and_isr_equal_epoch", SC, "Ignoring LeaderAndIsr request from controller ",
        _IGN_LAI + r" since its associated leader epoch (?P<leader_epoch>" + N + r") matches the current "
        r"leader epoch",
        contains=(" matches the current leader epoch",), const={"error": "STALE_CONTROLLER_EPOCH"},
        uses=(CLE_FROM_LE,)),
    Tpl("L4", "leader_and_isr_other_refusal", SC, "Ignoring LeaderAndIsr request from controller ",
        _IGN_LAI + r" as the local replica for the partition is in an offline log directory",
        contains=(" offline log directory",),
        const={"error": "KAFKA_STORAGE_ERROR", "d_reason": "offline log directory"}),
    Tpl("L5", "leader_and_isr_other_refusal", SC, "Ignoring LeaderAndIsr request from controller ",
        _IGN_LAI + r" as itself is not in assigned replica list(?P<replicas> [\d,]*)",
        contains=(" as itself is not in assigned replica list",),
        const={"error": "UNKNOWN_TOPIC_OR_PARTITION", "d_reason": "not in assigned replicas"}),
    Tpl("L*", MALFORMED, SC, "Ignoring LeaderAndIsr request"),
    # L11 / L12 (INFO): the broker processed the request (its known controller epoch is now E).
    Tpl("L11", "leader_and_isr_fetchers_stopped", SC, "Stopped fetchers as part of LeaderAndIsr request ",
        r"Stopped fetchers as part of LeaderAndIsr request correlationId (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) as part of the become-leader transition for "
        r"(?P<d_partition_count>\d+) partitions", const={"d_transition": "become-leader"}),
    Tpl("L12", "leader_and_isr_fetchers_stopped", SC, "Stopped fetchers as part of become-follower request ",
        r"Stopped fetchers as part of become-follower request from controller (?P<controller_id>\d+) epoch "
        r"(?P<controller_epoch>\d+) with correlation id (?P<correlation_id>\d+) for (?P<d_partition_count>\d+) "
        r"partitions", const={"d_transition": "become-follower"}),
    Tpl("L10", "leader_and_isr_other_refusal", SC, "Topic ID in memory: ",
        r"Topic ID in memory: (?P<d_log_topic_id>\S+) does not match the topic ID for partition " + TP
        + r" received: (?P<topic_id>" + UUID + r")\.",
        version="3.0+", const={"error": "INCONSISTENT_TOPIC_ID", "d_reason": "topic id mismatch"}),
    Tpl("L15", "leader_and_isr_other_refusal", SC, "Received LeaderAndIsrRequest with correlation id ",
        r"Received LeaderAndIsrRequest with correlation id (?P<correlation_id>\d+) from controller "
        r"(?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) for partition " + TP + r" \(last update "
        r"controller epoch (?P<state_controller_epoch>" + N + r")\) but cannot become follower since the new "
        r"leader (?P<leader>" + N + r") is unavailable\.",
        const={"d_reason": "new leader unavailable"}),
    # Leader lines (§1.2): 4 variants, most specific first.
    Tpl("LEADER_36", "become_leader", SC, "Leader ",
        r"Leader " + TP + r" with topic id " + TOPIC_ID_OPT + r" starts at leader epoch (?P<leader_epoch>" + N
        + r") from offset (?P<offset>" + N + r") with partition epoch (?P<partition_epoch>" + N + r"), high "
        r"watermark (?P<high_watermark>" + N + r"), ISR (?P<isr>" + BLIST + r"), adding replicas "
        r"(?P<adding_replicas>" + BLIST + r") and removing replicas (?P<removing_replicas>" + BLIST + r") "
        + UNDER_MIN_ISR + r"\. Previous leader (?:Some\((?P<d_prev_leader>" + N + r")\)|None) and previous "
        r"leader epoch was (?P<prev_leader_epoch>" + N + r")\.",
        contains=(" starts at leader epoch ", " and previous leader epoch was "), version="3.6+",
        uses=(LEADER_FROM_IDENT,)),
    Tpl("LEADER_35", "become_leader", SC, "Leader ",
        r"Leader " + TP + r" with topic id " + TOPIC_ID_OPT + r" starts at leader epoch (?P<leader_epoch>" + N
        + r") from offset (?P<offset>" + N + r") with partition epoch (?P<partition_epoch>" + N + r"), high "
        r"watermark (?P<high_watermark>" + N + r"), ISR (?P<isr>" + BLIST + r"), adding replicas "
        r"(?P<adding_replicas>" + BLIST + r") and removing replicas (?P<removing_replicas>" + BLIST + r") "
        + UNDER_MIN_ISR + r"\. Previous leader epoch was (?P<prev_leader_epoch>" + N + r")\.",
        contains=(" starts at leader epoch ",),
        contains_any=("] . Previous leader epoch was ", "(under-min-isr). Previous leader epoch was "),
        version="3.5", uses=(LEADER_FROM_IDENT,)),
    Tpl("LEADER_33", "become_leader", SC, "Leader ",
        r"Leader " + TP + r" with topic id " + TOPIC_ID_OPT + r" starts at leader epoch (?P<leader_epoch>" + N
        + r") from offset (?P<offset>" + N + r") with partition epoch (?P<partition_epoch>" + N + r"), high "
        r"watermark (?P<high_watermark>" + N + r"), ISR (?P<isr>" + BLIST + r"), adding replicas "
        r"(?P<adding_replicas>" + BLIST + r") and removing replicas (?P<removing_replicas>" + BLIST + r")\. "
        r"Previous leader epoch was (?P<prev_leader_epoch>" + N + r")\.",
        contains=(" starts at leader epoch ", " with topic id "), version="3.3-3.4",
        uses=(LEADER_FROM_IDENT,)),
    Tpl("LEADER_26", "become_leader", SC, "Leader ",
        r"Leader " + TP + r" starts at leader epoch (?P<leader_epoch>" + N + r") from offset (?P<offset>" + N
        + r") with high watermark (?P<high_watermark>" + N + r") ISR (?P<isr>" + BLIST + r") addingReplicas "
        r"(?P<adding_replicas>" + BLIST + r") removingReplicas (?P<removing_replicas>" + BLIST + r")\. "
        r"Previous leader epoch was (?P<prev_leader_epoch>" + N + r")\.",
        contains=(" starts at leader epoch ", " addingReplicas "), version="2.6-3.2",
        uses=(LEADER_FROM_IDENT,)),
    Tpl("LEADER*", MALFORMED, SC, "Leader ", contains=(" starts at leader epoch ",)),
    # Follower lines (§1.2): 3 variants. 3.6+ quirk: its "previous" values are the NEW ones
    # (KAFKA-19776), so they go to details, never to prev_leader_epoch.
    Tpl("FOLLOWER_36", "become_follower", SC, "Follower ",
        r"Follower " + TP + r" starts at leader epoch (?P<leader_epoch>" + N + r") from offset (?P<offset>" + N
        + r") with partition epoch (?P<partition_epoch>" + N + r") and high watermark (?P<high_watermark>" + N
        + r")\. Current leader is (?P<leader>" + N + r")\. Previous leader (?:Some\((?P<d_reported_prev_leader>"
        + N + r")\)|None) and previous leader epoch was (?P<d_reported_prev_leader_epoch>" + N + r")\.",
        contains=(" starts at leader epoch ", " and previous leader epoch was "), version="3.6+",
        const={"d_prev_values_are_new": "true"}),
    Tpl("FOLLOWER_33", "become_follower", SC, "Follower ",
        r"Follower " + TP + r" starts at leader epoch (?P<leader_epoch>" + N + r") from offset (?P<offset>" + N
        + r") with partition epoch (?P<partition_epoch>" + N + r") and high watermark (?P<high_watermark>" + N
        + r")\. Current leader is (?P<leader>" + N + r")\. Previous leader epoch was (?P<prev_leader_epoch>"
        + N + r")\.",
        contains=(" starts at leader epoch ", " with partition epoch "), version="3.3-3.5"),
    Tpl("FOLLOWER_26", "become_follower", SC, "Follower ",
        r"Follower " + TP + r" starts at leader epoch (?P<leader_epoch>" + N + r") from offset (?P<offset>" + N
        + r") with high watermark (?P<high_watermark>" + N + r")\. Previous leader epoch was "
        r"(?P<prev_leader_epoch>" + N + r")\.",
        contains=(" starts at leader epoch ",), version="2.6-3.2"),
    Tpl("FOLLOWER*", MALFORMED, SC, "Follower ", contains=(" starts at leader epoch ",)),
    # Skipped transitions (3.3-3.9). Requested values come from the partition state; the broker's
    # current ones from the tail. "already a follower with leader epoch N" shows the REQUESTED epoch
    # on 3.6-3.9 (same quirk as the Follower line) and the text cannot tell versions apart: details.
    Tpl("SKIP_LEADER_EPOCH", "become_leader_skipped", SC, "Skipped the become-leader state change for ",
        r"Skipped the become-leader state change for " + TP + r" with topic id " + TOPIC_ID_OPT
        + r" and partition state " + LAIPS + r" since it is already the leader with leader epoch "
        r"(?P<current_leader_epoch>" + N + r")\. Current high watermark (?P<high_watermark>" + N + r"), ISR "
        r"(?P<d_current_isr>" + BLIST + r"), adding replicas (?P<d_current_adding_replicas>" + BLIST + r") and "
        r"removing replicas (?P<d_current_removing_replicas>" + BLIST + r")\.",
        contains=(" since it is already the leader with leader epoch ",), version="3.3+",
        const={"d_reason": "leader epoch not newer"}),
    Tpl("SKIP_LEADER_PE", "become_leader_skipped", SC, "Skipped the become-leader state change for ",
        r"Skipped the become-leader state change for " + TP + r" with topic id " + TOPIC_ID_OPT
        + r" and partition state " + LAIPS + r" since the leader is already at a newer partition epoch "
        r"(?P<d_current_partition_epoch>" + N + r")\.",
        contains=(" since the leader is already at a newer partition epoch ",), version="3.3+",
        const={"d_reason": "stale partition epoch"}),
    Tpl("SKIP_FOLLOWER_EPOCH", "become_follower_skipped", SC, "Skipped the become-follower state change for ",
        r"Skipped the become-follower state change for " + TP + r" with topic id " + TOPIC_ID_OPT
        + r" and partition state " + LAIPS + r" since it is already a follower with leader epoch "
        r"(?P<d_reported_leader_epoch>" + N + r")\.",
        contains=(" since it is already a follower with leader epoch ",), version="3.3+",
        const={"d_reason": "leader epoch not newer"}),
    Tpl("SKIP_FOLLOWER_PE", "become_follower_skipped", SC, "Skipped the become-follower state change for ",
        r"Skipped the become-follower state change for " + TP + r" with topic id " + TOPIC_ID_OPT
        + r" and partition state " + LAIPS + r" since the follower is already at a newer partition epoch "
        r"(?P<d_current_partition_epoch>" + N + r")\.",
        contains=(" since the follower is already at a newer partition epoch ",), version="3.3+",
        const={"d_reason": "stale partition epoch"}),
    Tpl("SKIP*", MALFORMED, SC, "Skipped the become-"),
    # ---------------- §1.5 UpdateMetadata, broker side ----------------
    Tpl("U1", "update_metadata_stale_controller", SC, "Received update metadata request with correlation id ",
        r"Received update metadata request with correlation id (?P<correlation_id>\d+) from an old controller "
        r"(?P<controller_id>\d+) with epoch (?P<controller_epoch>\d+)\. Latest known controller epoch is "
        r"(?P<known_controller_epoch>\d+)", const={"error": "STALE_CONTROLLER_EPOCH"}),
    Tpl("U2", "update_metadata_partition_deleted", SC, "Deleted partition ",
        r"Deleted partition " + TP + r" from metadata cache in response to UpdateMetadata request sent by "
        r"controller (?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) with correlation id "
        r"(?P<correlation_id>\d+)"),
    Tpl("U3", "update_metadata_applied", SC, "Cached leader info ",
        r"Cached leader info " + UMPS + r" for partition " + TP + r" in response to UpdateMetadata request "
        r"sent by controller (?P<controller_id>\d+) epoch (?P<controller_epoch>\d+) with correlation id "
        r"(?P<correlation_id>\d+)"),
    Tpl("U4", "update_metadata_applied", SC, "Add ",
        r"Add (?P<d_cached_count>\d+) partitions and deleted (?P<d_deleted_count>\d+) partitions from metadata "
        r"cache in response to UpdateMetadata request sent by controller (?P<controller_id>\d+) epoch "
        r"(?P<controller_epoch>\d+) with correlation id (?P<correlation_id>\d+)",
        contains=(" in response to UpdateMetadata request ",)),
    # ---------------- §1.1/§1.2/§1.5 KafkaApis stale broker epoch ----------------
    Tpl("API_SR_BE", "stop_replica_stale_broker_epoch", ("apis",), "Received StopReplica request with broker epoch ",
        r"Received StopReplica" + _STALE_BE_TAIL, version="@stale_be", const={"error": "STALE_BROKER_EPOCH"}),
    Tpl("API_LAI_BE", "leader_and_isr_stale_broker_epoch", ("apis",),
        "Received LeaderAndIsr request with broker epoch ",
        r"Received LeaderAndIsr" + _STALE_BE_TAIL, version="@stale_be", const={"error": "STALE_BROKER_EPOCH"}),
    Tpl("API_UM_BE_26", "update_metadata_stale_broker_epoch", ("apis",),
        "Received update metadata request with broker epoch ",
        r"Received update metadata" + _STALE_BE_TAIL, version="2.6-3.3", const={"error": "STALE_BROKER_EPOCH"}),
    Tpl("API_UM_BE_34", "update_metadata_stale_broker_epoch", ("apis",),
        "Received UpdateMetadata request with broker epoch ",
        r"Received UpdateMetadata" + _STALE_BE_TAIL, version="3.4+", const={"error": "STALE_BROKER_EPOCH"}),
    # ---------------- §6.1 KafkaApis produce / fetch failures ----------------
    Tpl("API_PRODUCE", "produce_error", ("apis",), "Produce request with correlation id ",
        r"Produce request with correlation id (?P<correlation_id>\d+) from client (?P<d_client_id>.*?) on "
        r"partition " + TP + r" failed due to (?P<d_exception>[\w.$]+)",
        uses=(ERROR_FROM_EXCEPTION,)),
    Tpl("API_FETCH", "fetch_epoch_error", ("apis",), "Fetch request with correlation id ",
        r"Fetch request with correlation id (?P<correlation_id>\d+) from client (?P<d_client_id>.*?) on "
        r"partition " + TP + r" failed due to (?P<d_exception>[\w.$]+)",
        uses=(ERROR_FROM_EXCEPTION,)),
    # acks=0: the message spans two lines; the partitions are on the second (matched on ``text``).
    Tpl("API_PRODUCE_ACK0", "produce_error", ("apis",), "Closing connection due to error during produce request ",
        r"(?s)Closing connection due to error during produce request with correlation id "
        r"(?P<correlation_id>\d+) from client id (?P<d_client_id>.*?) with ack=0\s*\n?"
        r"Topic and partition to exceptions: (?P<_summary>.*)",
        fanout="_summary"),
    # ---------------- §1.3 controller side (state-change logger) ----------------
    Tpl("C_SEND_LAI", "controller_send_leader_and_isr", SC, "Sending become-",
        r"Sending (?P<d_transition>become-leader|become-follower) LeaderAndIsr request " + LAIPS
        + r" to broker (?P<replica_id>\d+) for partition " + TP, version="@laips"),
    Tpl("C_SEND_UM", "controller_send_update_metadata", SC, "Sending UpdateMetadata request to brokers ",
        r"Sending UpdateMetadata request to brokers (?P<_brokers>\w*\([^)]*\)) for (?P<d_partition_count>\d+) "
        r"partitions", fanout="_brokers"),
    Tpl("C_SEND_SR", "controller_send_stop_replica", SC, "Sending StopReplica request StopReplicaPartitionState(",
        r"Sending StopReplica request " + SRPS + r" to broker (?P<replica_id>\d+) for partition " + TP),
    Tpl("C_CHANGED", "controller_partition_state_change", SC, "Changed partition ",
        r"Changed partition " + TP + r" from (?P<d_from_state>\w+) to (?P<d_to_state>\w+) with state " + LAI,
        contains=(" with state LeaderAndIsr(",), version="@lai"),
    Tpl("C_ISR_OFFLINE", "controller_isr_change", SC, "Partition ",
        r"Partition " + TP + r" state changed to " + LICE + r" after removing replica (?P<replica_id>\d+) "
        r"from the ISR as part of transition to OfflineReplica",
        contains=(" state changed to (Leader:",), version="@lice"),
    Tpl("C_REASSIGN", "controller_reassignment_send", ("sc", "zkc"), "Sent LeaderAndIsr request (Leader:",
        r"Sent LeaderAndIsr request " + LICE + r" with new replica assignment (?P<d_assignment>.*) to leader "
        r"(?P<replica_id>\d+) for partition being reassigned " + TP, version="@lice"),
    # ---------------- §2.4 ZK controller (kafka.controller.KafkaController) ----------------
    Tpl("Z_UNKNOWN_BROKER", "controller_alter_partition_rejected", ("zkc",), "Ignoring Alter",
        r"Ignoring Alter(?P<d_api>Partition|Isr) due to unknown broker (?P<replica_id>\d+)",
        contains=(" due to unknown broker ",), const={"error": "STALE_BROKER_EPOCH", "d_reason": "unknown broker"}),
    Tpl("Z_STALE_BE", "controller_alter_partition_rejected", ("zkc",), "Ignoring Alter",
        r"Ignoring Alter(?P<d_api>Partition|Isr) due to stale broker epoch (?P<broker_epoch>" + N + r") and "
        r"local broker epoch (?:Some\((?P<d_local_broker_epoch>" + N + r")\)|None) for broker "
        r"(?P<replica_id>\d+)",
        contains=(" due to stale broker epoch ",),
        const={"error": "STALE_BROKER_EPOCH", "d_reason": "stale broker epoch"}),
    Tpl("Z_RECOVERING", "controller_alter_partition_rejected", ("zkc",), "Rejecting AlterPartition from node ",
        r"Rejecting AlterPartition from node (?P<d_from_node>\d+) for " + TP + r" because leader is recovering "
        r"and ISR is greater than 1: " + LAI, version="@lai",
        const={"error": "INVALID_REQUEST", "d_reason": "leader recovering"}),
    Tpl("Z_BAD_ZK", "controller_alter_partition_rejected", ("zkc",), "Failed to update ISR to ",
        r"Failed to update ISR to (?:" + LAI + r"|(?P<_newisr>.*?)) for partition " + TP + r", bad ZK version\.",
        version="@lai_if_printed",
        const={"error": "INVALID_UPDATE_VERSION", "d_reason": "bad ZK version"}),
    Tpl("Z_ISR_UPDATED", "controller_isr_updated", ("zkc",), "ISR for partition ",
        r"ISR for partition " + TP + r" updated to (?:" + LAI + r"|(?P<_newisr>.*))\.",
        version="@lai_if_printed"),
    # ---------------- §2.4 AlterPartition rejections: KRaft (and the ZK ineligible line) ----------------
    Tpl("REJ_INELIGIBLE", "controller_alter_partition_rejected", ("krc", "zkc"), "Rejecting AlterPartition request from node ",
        _REJ + r"it specified ineligible replicas (?P<_inel>\[.*?\]|\w*\([^)]*\)) in the new ISR "
        r"(?P<_newisr>\[.*\]|List\([^)]*\))\.",
        contains=(" because it specified ineligible replicas ",), version="3.3+",
        const={"error": "INELIGIBLE_REPLICA"},
        fanout="_inel"),
    Tpl("REJ_LE_GT", "controller_alter_partition_rejected", ("krc",), "Rejecting AlterPartition request from node ",
        _REJ + r"the current leader epoch is (?P<current_leader_epoch>" + N + r"), which is greater than the "
        r"local value (?P<leader_epoch>" + N + r")\.",
        contains=(" because the current leader epoch is ", ", which is greater than the local value "),
        const={"error": "NOT_CONTROLLER"}),
    Tpl("REJ_PE_GT", "controller_alter_partition_rejected", ("krc",), "Rejecting AlterPartition request from node ",
        _REJ + r"the current partition epoch is (?P<d_controller_partition_epoch>" + N + r"), which is greater "
        r"than the local value (?P<partition_epoch>" + N + r")\.",
        contains=(" because the current partition epoch is ", ", which is greater than the local value "),
        const={"error": "NOT_CONTROLLER"}),
    Tpl("REJ_LE", "controller_alter_partition_rejected", ("krc",), "Rejecting AlterPartition request from node ",
        _REJ + r"the current leader epoch is (?P<current_leader_epoch>" + N + r"), not (?P<leader_epoch>" + N
        + r")\.", contains=(" because the current leader epoch is ",), const={"error": "FENCED_LEADER_EPOCH"}),
    Tpl("REJ_PE", "controller_alter_partition_rejected", ("krc",), "Rejecting AlterPartition request from node ",
        _REJ + r"the current partition epoch is (?P<d_controller_partition_epoch>" + N + r"), not "
        r"(?P<partition_epoch>" + N + r")\.",
        contains=(" because the current partition epoch is ",), const={"error": "INVALID_UPDATE_VERSION"}),
    Tpl("REJ_LEADER", "controller_alter_partition_rejected", ("krc",), "Rejecting AlterPartition request from node ",
        _REJ + r"the current leader is (?P<leader>" + N + r")\.",
        contains=(" because the current leader is ",), const={"error": "INVALID_REQUEST"}),
    Tpl("REJ_INVALID_ISR", "controller_alter_partition_rejected", ("krc",), "Rejecting AlterPartition request from node ",
        _REJ + r"it specified an invalid ISR (?P<_newisr>\[.*?\])(?P<_no_leader> that doesn't "
        r"include itself)?\.",
        contains=(" because it specified an invalid ISR ",),
        const={"error": "INVALID_REQUEST", "d_reason": "invalid ISR"}),
    Tpl("REJ_RECOVERING", "controller_alter_partition_rejected", ("krc",), "Rejecting AlterPartition request from node ",
        _REJ + r"(?:the ISR (?P<_newisr>\[.*?\]) had more than one replica while the leader was still "
        r"recovering from an unclean leader election (?P<d_leader_recovery_state>\w+)|the leader recovery "
        r"state cannot change from RECOVERED to RECOVERING)\.",
        contains_any=(" unclean leader election ", " cannot change from RECOVERED to RECOVERING"),
        const={"error": "INVALID_REQUEST", "d_reason": "leader recovery state"}),
    Tpl("REJ*", MALFORMED, ("krc",), "Rejecting AlterPartition request from node "),
    Tpl("REJ_UNKNOWN_TOPIC", "controller_alter_partition_rejected", ("krc",),
        "Rejecting AlterPartition request for unknown topic ID ",
        r"Rejecting AlterPartition request for unknown topic ID (?P<topic_id>" + UUID + r") or name "
        r"(?P<d_topic_name>\S+)\.", const={"d_reason": "unknown topic"}),
    Tpl("REJ_UNKNOWN_PARTITION", "controller_alter_partition_rejected", ("krc",),
        "Rejecting AlterPartition request for unknown partition ",
        r"Rejecting AlterPartition request for unknown partition " + TP + r"\.",
        const={"error": "UNKNOWN_TOPIC_OR_PARTITION", "d_reason": "unknown partition"}),
    Tpl("K_ISR_ALTERED", "controller_isr_updated", ("krc",), "Node ",
        r"Node (?P<d_from_node>\d+) has altered ISR for " + TP + r" to (?P<_newisr>\[.*\])\.",
        contains=(" has altered ISR for ",)),
    # ---------------- KRaft controller replay lines (§3.1), 3.6-3.9 and 2.8-3.5 texts ----------------
    Tpl("R_TOPIC", "controller_replayed", ("krc",), "Replayed TopicRecord for topic ",
        r"Replayed TopicRecord for topic (?P<topic>\S+) with topic ID (?P<topic_id>" + UUID + r")\.",
        version="3.6+", const={"record_type": "TopicRecord"}),
    Tpl("R_TOPIC_OLD", "controller_replayed", ("krc",), "Created topic ",
        r"Created topic (?P<topic>\S+) with topic ID (?P<topic_id>" + UUID + r")\.",
        version="2.8-3.5", const={"record_type": "TopicRecord"}),
    Tpl("R_REMOVE_TOPIC", "controller_replayed", ("krc",), "Replayed RemoveTopicRecord for topic ",
        r"Replayed RemoveTopicRecord for topic (?P<topic>\S+) with ID (?P<topic_id>" + UUID + r")\.",
        version="3.6+", const={"record_type": "RemoveTopicRecord"}),
    Tpl("R_REMOVE_TOPIC_OLD", "controller_replayed", ("krc",), "Removed topic ",
        r"Removed topic (?P<topic>\S+) with ID (?P<topic_id>" + UUID + r")\.",
        version="2.8-3.5", const={"record_type": "RemoveTopicRecord"}),
    Tpl("R_PARTITION", "controller_replayed", ("krc",), "Replayed PartitionRecord for ",
        r"Replayed PartitionRecord for (?P<d_partition_status>new|existing) partition " + TP + r" with topic ID "
        r"(?P<topic_id>" + UUID + r") and (?P<_preg>PartitionRegistration\(.*\))\.",
        version="3.6+", const={"record_type": "PartitionRecord"}),
    Tpl("R_PARTITION_OLD", "controller_replayed", ("krc",), "Created partition ",
        r"Created partition " + TP + r" with topic ID (?P<topic_id>" + UUID + r") and "
        r"(?P<_preg>\w+\(.*\))\.",
        version="2.8-3.5", const={"record_type": "PartitionRecord", "d_partition_status": "new"}),
    Tpl("R_PARTITION_CHANGE", "controller_replayed", ("krc",), "Replayed partition ",
        r"Replayed partition (?P<d_assignment_change>assignment )?change (?P<_pcr>PartitionChangeRecord\(.*\)) "
        r"for topic (?P<topic>\S+)",
        contains=(" change PartitionChangeRecord(",), version="3.6+",
        const={"record_type": "PartitionChangeRecord"}),
    Tpl("R_DIFF_UNCLEAN", "controller_partition_diff", ("krc",), "UNCLEAN partition change for ",
        r"(?P<_unclean>UNCLEAN )partition change for " + TP + r"(?: with topic ID (?P<topic_id>" + UUID
        + r"))?: (?P<_diff>.*)"),
    Tpl("R_DIFF", "controller_partition_diff", ("krc",), "partition change for ",
        r"(?P<_unclean>UNCLEAN )?partition change for " + TP + r"(?: with topic ID (?P<topic_id>" + UUID
        + r"))?: (?P<_diff>.*)"),
    Tpl("R_FENCING", "controller_fencing_broker", ("krc",), "Fencing broker ",
        r"Fencing broker (?P<broker_id>\d+) because its session has timed out\.",
        const={"fenced": True, "d_reason": "session timed out"}),
    Tpl("R_REG_INITIAL", "controller_replayed", ("krc",), "Replayed initial RegisterBrokerRecord for broker ",
        r"Replayed initial RegisterBrokerRecord for broker (?P<broker_id>\d+): (?P<_rec>RegisterBrokerRecord\(.*\))",
        version="3.6+", const={"d_registration": "initial"}),
    Tpl("R_REG_MODIFY", "controller_replayed", ("krc",), "Replayed RegisterBrokerRecord modifying the registration for broker ",
        r"Replayed RegisterBrokerRecord modifying the registration for broker (?P<broker_id>\d+): "
        r"(?P<_rec>RegisterBrokerRecord\(.*\))",
        version="3.6+", const={"d_registration": "modify"}),
    Tpl("R_REG_INCARNATION", "controller_replayed", ("krc",), "Replayed RegisterBrokerRecord establishing a new incarnation of broker ",
        r"Replayed RegisterBrokerRecord establishing a new incarnation of broker (?P<broker_id>\d+): "
        r"(?P<_rec>RegisterBrokerRecord\(.*\))",
        version="3.6+", const={"d_registration": "new incarnation"}),
    Tpl("R_UNREGISTER", "controller_replayed", ("krc",), "Replayed UnregisterBrokerRecord(",
        r"Replayed (?P<_rec>UnregisterBrokerRecord\(.*\))", version="3.6+"),
    Tpl("R_REG_CHANGE", "controller_replayed", ("krc",), "Replayed ",
        r"Replayed (?P<record_type>FenceBrokerRecord|UnfenceBrokerRecord|BrokerRegistrationChangeRecord) "
        r"modifying the registration for broker (?P<broker_id>\d+): (?P<_rec>\w+\(.*\))",
        contains=(" modifying the registration for broker ",), version="3.6+"),
    Tpl("R_TXN", "controller_replayed", ("krc",), "Replayed ",
        r"Replayed (?P<record_type>BeginTransactionRecord|EndTransactionRecord|AbortTransactionRecord)"
        r"\((?:name='(?P<d_name>.*)'|reason='(?P<d_reason>.*)'|name=null|reason=null)?\) at offset "
        r"(?P<metadata_offset>\d+)\.(?: Reverted to offset (?P<d_reverted_to_offset>\d+)\.)?",
        contains=("TransactionRecord(",), version="3.6+"),
    Tpl("R_REG_CONTROLLER", "controller_replayed", ("krc",), "Replayed RegisterControllerRecord contaning ",
        r"Replayed RegisterControllerRecord contaning ControllerRegistration\(id=(?P<broker_id>\d+), "
        r"incarnationId=(?P<d_incarnation_id>" + UUID + r")(?:, .*)?\)\.(?: Previous incarnation was "
        r"(?P<d_previous_incarnation_id>" + UUID + r"))?",
        version="3.7+", const={"record_type": "RegisterControllerRecord"}),
    Tpl("R_NOOP_REG", None, ("krc",), "Ignoring no-op registration change for "),
    # 3.3-3.5 registration texts
    Tpl("R_REGISTERED", "controller_replayed", ("krc",), "Registered new broker: ",
        r"Registered new broker: (?P<_rec>\w+\(.*\))", version="3.3-3.5",
        const={"d_registration": "initial"}),
    Tpl("R_REREG_INCARNATION", "controller_replayed", ("krc",), "Re-registered broker incarnation: ",
        r"Re-registered broker incarnation: (?P<_rec>\w+\(.*\))", version="3.3-3.5",
        const={"d_registration": "new incarnation"}),
    Tpl("R_REREG_ID", "controller_replayed", ("krc",), "Re-registered broker id ",
        r"Re-registered broker id (?P<broker_id>\d+): (?P<_rec>\w+\(.*\))", version="3.3-3.5",
        const={"d_registration": "modify"}),
    Tpl("R_UNREGISTERED", "controller_replayed", ("krc",), "Unregistered broker: ",
        r"Unregistered broker: (?P<_rec>\w+\(.*\))", version="3.3-3.5"),
    Tpl("R_FENCED_OLD", "controller_replayed", ("krc",), "Fenced broker: ",
        r"Fenced broker: (?P<_rec>\w+\(.*\))", version="3.3", const={"fenced": True}),
    Tpl("R_UNFENCED_OLD", "controller_replayed", ("krc",), "Unfenced broker: ",
        r"Unfenced broker: (?P<_rec>\w+\(.*\))", version="3.3", const={"fenced": False}),
    # ---------------- KRaft raft layer ----------------
    Tpl("RAFT_TRANSITION", "raft_state_transition", ("raft",), "Completed transition to ",
        r"Completed transition to (?P<d_state>\w+)\((?P<_state>.*)",
        version="@kraft"),
    # ---------------- §2.1 leader-side ISR changes (kafka.cluster.Partition) ----------------
    Tpl("SHRINK", "isr_shrink", ("partition",), "Shrinking ISR from ",
        r"Shrinking ISR from (?P<d_old_isr>[\d,]*) to (?P<isr>[\d,]+)\. Leader: \(highWatermark: "
        r"(?P<high_watermark>" + N + r"|unknown), endOffset: (?P<d_leader_end_offset>" + N + r"|unknown)\)\. "
        r"Out of sync replicas: (?P<_oos>.*)\.",
        version="@shrink",
        fanout="_oos"),
    Tpl("EXPAND_26", "isr_expand", ("partition",), "Expanding ISR from ",
        r"Expanding ISR from (?P<d_old_isr>[\d,]*) to (?P<isr>[\d,]+)", version="2.6-2.7",
        fanout="isr"),
    Tpl("EXPAND_31", "isr_expand", ("partition",), "Submitting ISR state change PendingExpandIsr(",
        r"Submitting ISR state change (?P<_pending>PendingExpandIsr\(.*\))", version="3.1+"),
    Tpl("EXPAND_28", "isr_expand", ("partition",), "Enqueued ISR change to state ",
        r"Enqueued ISR change to state " + _SENT_LAI + r"LeaderAndIsr\(.*\) after transition to "
        r"(?P<_pending>PendingExpandIsr\(.*\))",
        contains=("PendingExpandIsr(",), version="2.8-3.0"),
    Tpl("EXPAND_27", "isr_expand", ("partition",), "Sent `AlterIsr` request to change state to ",
        r"Sent `AlterIsr` request to change state to " + _SENT_LAI + r"LeaderAndIsr\(.*\) after transition to "
        r"(?P<_pending>PendingExpandIsr\(.*\))",
        contains=("PendingExpandIsr(",), version="2.7"),
    Tpl("ISR_UPDATED_26", "isr_updated", ("partition",), "ISR updated to [",
        r"ISR updated to (?P<isr>\[[\d,]*\]) and zkVersion updated to \[(?P<partition_epoch>\d+)\]",
        version="2.6-2.7"),
    # 2.6 (and 2.7 direct-ZK path): the ISR write lost a ZK version race, nothing was updated.
    Tpl("ISR_ZK_CONFLICT", "alter_partition_failed", ("partition",), "Cached zkVersion ",
        r"Cached zkVersion (?P<partition_epoch>\d+) not equal to that in zookeeper, skip updating ISR",
        version="2.6-2.7", const={"error": "INVALID_UPDATE_VERSION", "d_reason": "cached zkVersion mismatch"}),
    Tpl("ISR_UPDATED_27", "isr_updated", ("partition",), "ISR updated from AlterIsr to ",
        r"ISR updated from AlterIsr to (?P<isr>[\d,]+) and version updated to \[(?P<partition_epoch>\d+)\]",
        version="2.7"),
    Tpl("ISR_UPDATED_28", "isr_updated", ("partition",), "ISR updated to ",
        r"ISR updated to (?P<isr>[\d,]+) and version updated to \[(?P<partition_epoch>\d+)\]",
        contains=(" and version updated to [",), version="2.8-3.0"),
    Tpl("ISR_UPDATED_35", "isr_updated", ("partition",), "ISR updated to ",
        r"ISR updated to (?P<isr>[\d,]+) " + UNDER_MIN_ISR + r" and version updated to (?P<partition_epoch>\d+)",
        contains_any=(" (under-min-isr) and version updated to ", "  and version updated to "), version="3.5+"),
    Tpl("ISR_UPDATED_31", "isr_updated", ("partition",), "ISR updated to ",
        r"ISR updated to (?P<isr>[\d,]+) and version updated to (?P<partition_epoch>\d+)", version="3.1-3.4"),
    # ---------------- §2.2 AlterPartition response handling (leader side) ----------------
    Tpl("AP_REJECTED", "alter_partition_failed", ("partition",), "Failed to alter partition to ",
        _FAILED_ALTER + r"since the controller rejected the request with (?P<error>[A-Z_]+)\. Partition state "
        r"has been reset to the latest committed state (?P<d_committed_state>.*)\.",
        contains=(" since the controller rejected the request with ",), version="3.3+"),
    Tpl("AP_UNKNOWN_TP", "alter_partition_failed", ("partition",), "Failed to alter partition to ",
        _FAILED_ALTER + r"since the controller doesn't know about this topic or partition\." + _AWAIT,
        contains=(" doesn't know about this topic or partition.",), version="3.3+",
        const={"error": "UNKNOWN_TOPIC_OR_PARTITION"}),
    Tpl("AP_UNKNOWN_TOPIC_ID", "alter_partition_failed", ("partition",), "Failed to alter partition to ",
        _FAILED_ALTER + r"since the controller doesn't know about this topic\." + _AWAIT,
        contains=(" doesn't know about this topic.",), version="3.3+",
        const={"error": "UNKNOWN_TOPIC_ID"}),
    Tpl("AP_FENCED", "alter_partition_failed", ("partition",), "Failed to alter partition to ",
        _FAILED_ALTER + r"since the leader epoch is old\." + _AWAIT,
        contains=(" since the leader epoch is old.",), version="3.3+",
        const={"error": "FENCED_LEADER_EPOCH"}),
    Tpl("AP_BAD_VERSION", "alter_partition_failed", ("partition",), "Failed to alter partition to ",
        _FAILED_ALTER + r"because the partition epoch is invalid\." + _AWAIT,
        contains=(" because the partition epoch is invalid.",), version="3.3+",
        const={"error": "INVALID_UPDATE_VERSION"}),
    Tpl("AP_INVALID", "alter_partition_failed", ("partition",), "Failed to alter partition to ",
        _FAILED_ALTER + r"because the request is invalid\." + _AWAIT,
        contains=(" because the request is invalid.",), version="3.3+",
        const={"error": "INVALID_REQUEST"}),
    # 3.2 texts end with "Giving up." and the OPERATION_NOT_ATTEMPTED one differs (§2.2, partly recorded).
    Tpl("AP_32", "alter_partition_failed", ("partition",), "Failed to alter partition to ",
        _FAILED_ALTER + r"(?P<d_reason>(?:since|because|due to) .*)",
        version="3.2", uses=(ERROR_FROM_REASON,)),
    Tpl("AP_UNEXPECTED", "alter_partition_failed", ("partition",), "Failed to update ISR to ",
        r"Failed to update ISR to (?P<_pending>.*) due to unexpected (?P<error>[A-Z_]+)\. Retrying\.",
        contains=(" due to unexpected ",)),
    # 2.8-3.1 DEBUG texts and 2.7 "Controller failed to update ISR", only partly recorded: loose.
    Tpl("AP_28", "alter_partition_failed", ("partition",), "Failed to update ISR to ",
        r"Failed to update ISR to (?P<_pending>Pending\w+\(.*?\)) (?P<d_reason>(?:since|due to) .*)",
        version="2.8-3.1", uses=(ERROR_FROM_REASON,)),
    Tpl("AP_27", "alter_partition_failed", ("partition",), "Controller failed to update ISR to ",
        r"Controller failed to update ISR to (?P<_pending>Pending\w+\(.*?\)) (?P<d_reason>.*)",
        version="2.7", uses=(ERROR_FROM_REASON,)),
    Tpl("AP_STALE_BE", "alter_partition_stale_broker_epoch", ("apm",), "Broker had a stale broker epoch (",
        r"Broker had a stale broker epoch \((?P<broker_epoch>" + N + r")\), retrying\.",
        const={"error": "STALE_BROKER_EPOCH"}),
    # ---------------- fetcher manager / log manager (§1.1) ----------------
    Tpl("FETCHER_REMOVED", "fetcher_removed", ("rfm",), "Removed fetcher for partitions ",
        r"Removed fetcher for partitions (?P<_tps>\w*\(.*\))", fanout="_tps"),
    Tpl("FETCHER_ADDED", "fetcher_added", ("rfm",), "Added fetcher to broker ",
        r"Added fetcher to broker (?:BrokerEndPoint\(id=(?P<leader>\d+), host=[^)]*\)|(?P<_leader2>\d+)) for "
        r"partitions (?P<_fmap>\w*\(.*\))",
        fanout="_fmap"),
    Tpl("LOG_RENAMED", "log_deletion_scheduled", ("logmgr",), "Log for partition ",
        r"Log for partition " + TP + r" is renamed to (?P<d_dir>.*) and is scheduled for deletion",
        contains=(" and is scheduled for deletion",)),
    Tpl("LOG_DELETED", "log_deleted", ("logmgr",), "Deleted log for partition ",
        r"Deleted log for partition " + TP + r" in (?P<d_dir>.*?)\.?"),
    # ---------------- §4.3 log start offset ----------------
    Tpl("LSO", "log_start_offset_incremented", ("log",), "Incremented log start offset to ",
        r"Incremented log start offset to (?P<log_start_offset>\d+) due to (?P<d_reason>.+)",
        version="@lso"),
    # ---------------- §6.2 replica fetcher (follower side) ----------------
    Tpl("RF_OLDER", "fetch_epoch_error", ("rft",), "Partition ",
        r"Partition " + TP + r" has an older epoch \((?P<current_leader_epoch>" + N + r")\) than the current "
        r"leader\. Will await the new LeaderAndIsr state before resuming fetching\.",
        contains=(" has an older epoch (",), const={"error": "FENCED_LEADER_EPOCH", "d_reason": "older epoch"}),
    Tpl("RF_NEWER", "fetch_epoch_error", ("rft",), "Partition ",
        r"Partition " + TP + r" has a newer epoch \((?P<current_leader_epoch>" + N + r")\) than the current "
        r"leader\. Retry the partition later\.",
        contains=(" has a newer epoch (",), const={"error": "FENCED_LEADER_EPOCH", "d_reason": "newer epoch"}),
    Tpl("RF_UNKNOWN_EPOCH", "fetch_epoch_error", ("rft",), "Remote broker has a smaller leader epoch for partition ",
        r"Remote broker has a smaller leader epoch for partition " + TP + r" than this replica's current "
        r"leader epoch of (?P<current_leader_epoch>" + N + r")\.", const={"error": "UNKNOWN_LEADER_EPOCH"}),
    Tpl("RF_NOT_LEADER", "fetch_epoch_error", ("rft",), "Remote broker is not the leader for partition ",
        r"Remote broker is not the leader for partition " + TP + r", which could indicate that the partition "
        r"is being moved", const={"error": "NOT_LEADER_OR_FOLLOWER"}),
    # ---------------- §6.3 producer client ----------------
    Tpl("CLIENT_PRODUCE_ERROR", "produce_error", ("sender",), "Got error produce response with correlation id ",
        r"Got error produce response with correlation id (?P<correlation_id>\d+) on topic-partition " + TP
        + r", retrying \((?P<d_attempts_left>-?\d+) attempts left\)\. Error: (?P<error>[A-Z_]+)"
        r"(?:\. Error Message: (?P<d_error_message>.*))?", const={"d_side": "client"}),
    Tpl("CLIENT_INVALID_METADATA", "produce_error", ("sender",), "Received invalid metadata error in produce request on partition ",
        r"Received invalid metadata error in produce request on partition " + TP + r" due to "
        r"(?P<d_exception>[\w.$]+)(?:: ?(?P<d_error_message>.*?))? ?Going to request metadata update now",
        const={"d_side": "client"}, uses=(ERROR_FROM_EXCEPTION,)),
    Tpl("CLIENT_UNKNOWN_TP", "produce_error", ("sender",),
        "Received unknown topic or partition error in produce request on partition ",
        r"Received unknown topic or partition error in produce request on partition " + TP + r"\. The "
        r"topic-partition may not exist or the user may not have Describe access to it",
        const={"d_side": "client", "error": "UNKNOWN_TOPIC_OR_PARTITION"}),
]


def raft_derive(g: G) -> dict[str, Column]:
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
        "offset": F.when(is_leader, kv(new_part, "epochStartOffset").try_cast(_LONG)),
        "d_from_state": F.when(from_state != "", from_state),
        "d_voted_id": F.coalesce(kv(new_part, "votedId"), kv(new_part, r"votedKey=ReplicaKey\(id")),
    }


def sent_derive(g: G) -> dict[str, Column]:
    """The sent LeaderAndIsr of a 2.7-3.0 expand line (``_sent``): wins over the pending state's values."""
    sent = g("_sent")
    isr_list = F.regexp_extract(sent, r"isr=List(\([^)]*\))", 1)
    return {
        "leader": kv(sent, "leader").try_cast(_INT),
        "leader_epoch": kv(sent, "leaderEpoch").try_cast(_INT),
        "partition_epoch": F.coalesce(kv(sent, "zkVersion"), kv(sent, "partitionEpoch")).try_cast(_INT),
        "isr": F.when(isr_list != "", ints(isr_list)),
    }


def _reason_error(reason: Column) -> Column:
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
# Derivations, keyed by group name (or by ``Tpl.uses``), version kinds and fan-outs
# ----------------------------------------------------------------------------------------------

# In priority order: when a template has several of these groups, the first one defining a column
# gives its value (the sent LeaderAndIsr wins over the pending state, a printed LeaderAndIsr over
# the plain new ISR).
GROUP_DERIVES: list[tuple[str, Callable[[G], dict[str, Column]]]] = [
    ("_sent", sent_derive),
    ("_pending", pending_derive),
    ("_isr_be", lai_derive),
    ("_newisr", lambda g: new_isr(g("_newisr"))),
    ("_preg", preg_derive),
    ("_pcr", pcr_derive),
    ("_diff", diff_derive),
    ("_rec", registration_derive),
    ("_state", raft_derive),
    ("_umi", under_min_isr),
    ("_no_leader", lambda g: {"d_isr_without_leader": F.when(g("_no_leader").isNotNull(), F.lit("true"))}),
    ("_leader2", lambda g: {"leader": g("_leader2").try_cast(_INT)}),
]
USE_DERIVES: dict[str, Callable[[G], dict[str, Column]]] = {
    LEADER_FROM_IDENT: lambda g: {"leader": F.col("_iid")},
    CLE_FROM_LE: lambda g: {"current_leader_epoch": g("leader_epoch").try_cast(_INT)},
    ERROR_FROM_EXCEPTION: lambda g: {"error": exception_error(g("d_exception"))},
    ERROR_FROM_REASON: lambda g: {"error": _reason_error(g("d_reason"))},
}
VERSION_KINDS: dict[str, Callable[[G], Column]] = {
    "@laips": laips_version,
    "@lai": lai_version,
    "@lai_if_printed": lambda g: F.when(g("partition_epoch").isNotNull(), lai_version(g)),
    "@lice": lice_version,
    "@stale_be": _stale_be_version,
    "@kraft": kraft_generation,
    "@shrink": lambda g: F.when(g("_oos").contains("lastCaughtUpTimeMs"), F.lit("3.6+")).otherwise(F.lit("2.6-3.5")),
    "@lso": lambda g: F.when(F.col("logger").endswith("UnifiedLog"), F.lit("3.1+")).otherwise(F.lit("2.6-3.0")),
}
FANOUTS: dict[str, Callable[[G], Column]] = {
    "_tps": tp_set_fanout,
    "_fmap": added_fetcher_fanout,
    "_brokers": broker_set_fanout,
    "_oos": oos_fanout,
    "isr": expand_fanout,
    "_inel": ineligible_fanout,
    "_summary": ack0_fanout,
}

# ----------------------------------------------------------------------------------------------
# Compilation of the template table (import time; validates every regex with Python's engine)
# ----------------------------------------------------------------------------------------------

_SEP = "\u0001"
_MATCH_MARK = "\u0002"
_NAMED = re.compile(r"\(\?P<(\w+)>")
_TYPES: dict[str, DataType] = {f.name: f.dataType for f in EVENT_SCHEMA.fields}


def _java(regex: str) -> str:
    """Python named groups -> plain Java groups (same numbering), anchored to the whole body."""
    return "^" + _NAMED.sub("(", regex) + "$"


def _probe(name: str) -> Column:
    """Stand-in group accessor: records which groups a derivation reads (to list its columns)."""
    return F.lit(None).cast(_STR)


def _unit_columns(fn: Callable[[G], dict[str, Column]]) -> set[str]:
    return set(fn(_probe))


def _compile() -> tuple[list[str], dict[str, re.Pattern[str]]]:
    patterns: dict[str, re.Pattern[str]] = {}
    names: set[str] = set()
    seen: set[str] = set()
    for t in TEMPLATES:
        if t.tid in seen:
            raise ValueError(f"duplicate template id {t.tid}")
        seen.add(t.tid)
        if t.event_type not in (None, MALFORMED) and t.event_type not in EVENT_TYPES:
            raise ValueError(f"{t.tid}: unknown event type {t.event_type}")
        for u in t.uses:
            if u not in USE_DERIVES:
                raise ValueError(f"{t.tid}: unknown derivation {u}")
        if t.version is not None and t.version.startswith("@") and t.version not in VERSION_KINDS:
            raise ValueError(f"{t.tid}: unknown version kind {t.version}")
        if t.regex is None:
            continue
        pat = re.compile(t.regex)
        if not pat.groupindex:
            raise ValueError(f"{t.tid}: a template regex needs at least one named group")
        if t.fanout is not None and (t.fanout not in FANOUTS or t.fanout not in pat.groupindex):
            raise ValueError(f"{t.tid}: fan-out group {t.fanout} unknown or not in the regex")
        patterns[t.tid] = pat
        for name in pat.groupindex:
            if not (name.startswith(("d_", "_")) or name == "tp" or name in _TYPES):
                raise ValueError(f"{t.tid}: group {name} is not a bronze column")
            names.add(name)
    return sorted(names), patterns


SLOTS, _PATTERNS = _compile()
_BY_TID = {t.tid: t for t in TEMPLATES}
_TIDS = [t.tid for t in TEMPLATES]
# Templates whose rows are parsed: a regex and an event type (event_type None = recognised, dropped).
_ACTIVE = [t.regex is not None and t.event_type is not None for t in TEMPLATES]


def _positional_names(t: Tpl) -> list[str]:
    """The template's named groups in group-number order (unnamed groups are not extracted)."""
    pat = _PATTERNS[t.tid]
    return [name for name, _ in sorted(pat.groupindex.items(), key=lambda kv_: kv_[1])]


def _replacement(t: Tpl) -> str:
    idx = _PATTERNS[t.tid].groupindex
    return _MATCH_MARK + _SEP.join(f"${idx[n]}" for n in _positional_names(t))


_GROUPS: list[list[str]] = [_positional_names(t) if a else [] for t, a in zip(TEMPLATES, _ACTIVE, strict=True)]
# per template, per group name (SLOTS order): 0-based position in ``_g`` (None: no such group)
_GROUP_TABLE: list[list[int | None]] = [[grp.index(n) if n in grp else None for n in SLOTS] for grp in _GROUPS]


@functools.cache
def _unit_plan() -> tuple[dict[str, list[int | None]], list[tuple[str, Callable[[G], dict[str, Column]]]]]:
    """Per column, the derivation unit giving each template's value (first in priority order).

    Built on first use (deriving the column lists needs a Spark context)."""
    units: list[tuple[str, Callable[[G], dict[str, Column]]]] = list(GROUP_DERIVES) + list(USE_DERIVES.items())
    cols_of = [_unit_columns(fn) for _, fn in units]
    plan: dict[str, list[int | None]] = {}
    for ti, (t, grp) in enumerate(zip(TEMPLATES, _GROUPS, strict=True)):
        for ui, (key, _) in enumerate(units):
            applies = key in grp if ui < len(GROUP_DERIVES) else key in t.uses
            if not applies:
                continue
            for c in cols_of[ui]:
                plan.setdefault(c, [None] * len(TEMPLATES))
                if plan[c][ti] is None:
                    plan[c][ti] = ui
                # a constant wins over a derived value: only where that is meant
                if c in t.const and c != "fenced":
                    raise ValueError(f"{t.tid}: {c} is both a constant and derived")
    return plan, units


_CONST_COLS = sorted({c for t in TEMPLATES for c in t.const})


_TABLE_SEP = "\u0003"


def _sql(v: Any) -> str:
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "array(" + ", ".join(_sql(x) for x in v) + ")"
    raise TypeError(v)


@functools.cache
def _table(values: tuple[Any, ...], type_sql: str) -> Column:
    """A literal per-template list (one SQL expression: building it from F.lit calls is slow)."""
    if type_sql == "string":
        assert not any(_TABLE_SEP in (v or "") for v in values)
        # split of one literal (constant-folded); "" stands for null, see _lookup
        return F.split(F.lit(_TABLE_SEP.join(v or "" for v in values)), _TABLE_SEP, -1)
    return F.expr(f"cast({_sql(list(values))} as array<{type_sql}>)")


def _lookup(values: list[Any], dtype: DataType) -> Column:
    """The entry of a per-template literal list for this row's template (``_tpl``)."""
    type_sql = dtype.simpleString()
    out = F.get(_table(tuple(values), type_sql), F.col("_tpl"))
    return F.nullif(out, F.lit("")) if type_sql == "string" else out


# per template, the position in ``_g`` of each group name (SLOTS order); staged per row as ``_pos``
_SLOT_INDEX = {n: i for i, n in enumerate(SLOTS)}


@functools.cache
def _group(name: str) -> Column:
    """The string value of a capture group of the row's template (null when absent or empty)."""
    if name not in _SLOT_INDEX:
        return F.lit(None).cast(_STR)
    return F.nullif(F.get(F.col("_g"), F.get(F.col("_pos"), F.lit(_SLOT_INDEX[name]))), F.lit(""))


@functools.cache
def _unit_values(ui: int) -> dict[str, Column]:
    return _unit_plan()[1][ui][1](_group)


def _cast(s: Column, dtype: DataType) -> Column:
    if isinstance(dtype, ArrayType):
        return F.when(s.isNotNull(), ints(s, dtype.elementType))
    if isinstance(dtype, StringType):
        return s
    return s.try_cast(dtype)


def _derived(col_name: str) -> Column | None:
    """The derived value of a column: one expression per unit that defines it, picked by template."""
    plan = _unit_plan()[0].get(col_name)
    if plan is None:
        return None
    unit = _lookup(plan, _INT)
    expr = None
    for ui in sorted({u for u in plan if u is not None}):
        value = _unit_values(ui)[col_name]
        expr = F.when(unit == ui, value) if expr is None else expr.when(unit == ui, value)
    return expr


def _const(col_name: str, dtype: DataType) -> Column | None:
    if col_name not in _CONST_COLS:
        return None
    return _lookup([t.const.get(col_name) for t in TEMPLATES], dtype)


def _routing() -> Column:
    """Nested CASE: logger family, then cheap startswith/contains per template -> template index
    (null for unknown lines and for recognised lines that carry no event)."""
    families: list[str] = []
    for t in TEMPLATES:
        for fam in t.families:
            if fam not in families:
                families.append(fam)
    body = F.col("_body")
    outer = None
    for fam in families:
        inner = None
        for i, t in enumerate(TEMPLATES):
            if fam not in t.families:
                continue
            pred = body.startswith(t.starts)
            for c in t.contains:
                pred = pred & body.contains(c)
            if t.contains_any:
                any_pred = None
                for c in t.contains_any:
                    any_pred = body.contains(c) if any_pred is None else any_pred | body.contains(c)
                pred = pred & any_pred
            value = F.lit(i) if t.event_type is not None else F.lit(None).cast(_INT)
            inner = F.when(pred, value) if inner is None else inner.when(pred, value)
        cond = _family_pred(fam)
        outer = F.when(cond, inner) if outer is None else outer.when(cond, inner)
    return outer


def _all_loggers() -> Column:
    pred = None
    for fam in _FAMILY_LOGGERS:
        p = _family_pred(fam)
        pred = p if pred is None else pred | p
    return pred


_IDENT_ID = r"(?:id=|broker=|broker |KafkaApi-|Controller |replicaId=|nodeId=)(-?\d+)"
PROVENANCE = ["file_id", "source_file", "cluster_id", "host_id", "file_order", "log_kind", "line_number"]


@functools.cache
def _plan_columns() -> dict[str, Any]:
    """Every column expression of ``parse_kafka_log4j``, built once per process: they depend on
    the templates only, and building them costs tens of thousands of py4j calls."""
    msg = F.col("message")
    cut = F.instr(msg, "] ")
    has_ident = msg.startswith("[") & (cut > 0)
    step: dict[str, Any] = {}
    step["filter"] = F.col("logger").isNotNull() & _all_loggers()
    step["ident_body"] = [
        F.when(has_ident, F.expr("substring(message, 2, instr(message, '] ') - 2)")).alias("_ident"),
        F.when(has_ident, F.expr("substring(message, instr(message, '] ') + 2)")).otherwise(msg).alias("_body"),
    ]
    step["tpl"] = _routing().alias("_tpl")
    # One regex per row: the chosen template's pattern (a column), all its groups laid out in its
    # own group order by the replacement, then split into the array ``_g``.
    pattern = _lookup([_java(t.regex) if a else None for t, a in zip(TEMPLATES, _ACTIVE, strict=True)], _STR)
    repl = _lookup([_replacement(t) if a else None for t, a in zip(TEMPLATES, _ACTIVE, strict=True)], _STR)
    m = F.call_function("regexp_replace", F.col("_body"), pattern, repl)
    n_groups = _lookup([len(grp) for grp in _GROUPS], _INT)
    g_arr = F.split(F.substring(F.col("_m"), 2, 1 << 30), _SEP, -1)
    ident = F.col("_ident")
    # ``_pos`` is not a bare lookup (CASE is not "cheap"): computed once, never inlined into the accessors.
    pos_table = F.expr(f"cast({_sql(_GROUP_TABLE)} as array<array<int>>)")
    step["match"] = [
        m.alias("_m"),
        F.when(F.col("_tpl").isNotNull(), F.get(pos_table, F.col("_tpl"))).alias("_pos"),
        _lookup(_TIDS, _STR).alias("_tid"),
        F.when(ident.isNotNull(), F.regexp_extract(ident, _IDENT_ID, 1)).try_cast(_INT).alias("_iid"),
    ]
    step["g"] = F.when(F.col("_m").startswith(_MATCH_MARK) & (F.size(g_arr) == n_groups), g_arr).alias("_g")

    g: G = _group

    def value(col_name: str) -> Column:
        dtype = _TYPES[col_name]
        parts: list[Column] = []
        if col_name in _SLOT_INDEX:
            parts.append(_cast(g(col_name), dtype))
        c = _const(col_name, dtype)
        if c is not None:
            parts.append(c)
        d = _derived(col_name)
        if d is not None:
            parts.append(d.cast(dtype))
        if not parts:
            return F.lit(None).cast(dtype)
        return parts[0] if len(parts) == 1 else F.coalesce(*parts)

    tp = g("tp")
    tp_partition = F.substring_index(tp, "-", -1)
    tp_topic = F.substr(tp, F.lit(1), F.length(tp) - F.length(tp_partition) - 1)
    ident_tp = F.regexp_extract(ident, r"^(?:Partition |(?:Unified)?Log partition=)([^ ,]+)", 1)
    ident_tp = F.when(ident_tp != "", ident_tp)
    ident_topic = F.regexp_extract(ident_tp, r"^(.*)-\d+$", 1)
    is_ctrl_ident = ident.startswith("Controller ") | ident.startswith("QuorumController id=")
    ident_epoch = F.regexp_extract(ident, r" epoch=(\d+)", 1)
    ident_leader = F.regexp_extract(ident, r"leaderId=(\d+)", 1)

    # Fan-out: one generic list per row, keyed by the name of the group holding it.
    fan_kind = _lookup([t.fanout if a else None for t, a in zip(TEMPLATES, _ACTIVE, strict=True)], _STR)
    fan_case = None
    for src, fn in FANOUTS.items():
        fan_case = F.when(fan_kind == src, fn(g)) if fan_case is None else fan_case.when(fan_kind == src, fn(g))
    fan_pos = _lookup([grp.index(t.fanout) if t.fanout and grp else None
                       for t, grp in zip(TEMPLATES, _GROUPS, strict=True)], _INT)
    step["fan"] = [fan_case.alias("_fan"), F.nullif(F.get(F.col("_g"), fan_pos), F.lit("")).alias("_fan_src")]
    has_fan = fan_kind.isNotNull()
    matched = F.col("_g").isNotNull()
    fan_bad = has_fan & (F.size("_fan") == 0) & F.col("_fan_src").rlike(r"\d")
    reason = (
        F.when(~_lookup([t.regex is not None for t in TEMPLATES], _BOOL),
               F.concat(F.lit("no known variant of "), F.col("_tid")))
        .when(~matched, F.concat(F.lit("template "), F.col("_tid"), F.lit(" did not match")))
        .when(fan_bad, F.concat(F.lit("template "), F.col("_tid"), F.lit(": list not parsed")))
    )
    step["reason"] = reason.alias("_reason")

    typed_cols = [f.name for f in EVENT_SCHEMA.fields if f.name in _TYPES and f.name not in (
        "event_id", "event_type", "cluster_id", "host_id", "broker_id", "topic", "partition", "topic_id",
        "event_time", "source_file", "file_id", "file_order", "line_number", "sub_index", "log_kind",
        "level", "logger", "kafka_version_hint", "raw", "details")]

    cols: list[Column] = [F.col(c) for c in PROVENANCE] + [
        "event_time", "level", "logger", "raw", "_tid", "_reason", "_fan", "_iid",
    ]
    cols.append(F.when(F.col("_reason").isNull(), _lookup([t.event_type for t in TEMPLATES], _STR))
                .otherwise(F.lit(MALFORMED)).alias("event_type"))
    cols.append(F.coalesce(value("broker_id"), F.col("_iid"), F.col("host_id")).alias("broker_id"))
    cols.append(F.coalesce(F.when(tp.isNotNull(), tp_topic), value("topic"),
                           F.when(ident_topic != "", ident_topic)).alias("topic"))
    cols.append(F.coalesce(tp_partition.try_cast(_INT), value("partition"),
                           F.regexp_extract(ident_tp, r"-(\d+)$", 1).try_cast(_INT)).alias("partition"))
    cols.append(value("topic_id").alias("topic_id"))
    version_kind = _lookup([t.version if t.version and t.version.startswith("@") else None for t in TEMPLATES], _STR)
    version = None
    for kind, fn in VERSION_KINDS.items():
        version = F.when(version_kind == kind, fn(g)) if version is None else version.when(version_kind == kind, fn(g))
    literal_version = _lookup([t.version if t.version and not t.version.startswith("@") else None
                               for t in TEMPLATES], _STR)
    cols.append(F.coalesce(literal_version, version).alias("kafka_version_hint"))
    for c in typed_cols:
        v = value(c)
        if c == "controller_id":
            v = F.coalesce(v, F.when(is_ctrl_ident, F.col("_iid")))
        elif c == "controller_epoch":
            v = F.coalesce(v, F.when(is_ctrl_ident & (ident_epoch != ""), ident_epoch.try_cast(_INT)))
        elif c == "leader":
            v = F.coalesce(v, F.when(ident_leader != "", ident_leader.try_cast(_INT)))
        # A malformed row keeps its provenance and ident values only.
        cols.append(F.when(F.col("_reason").isNull(), v).alias(c))

    # details: every d_<key> from groups, constants, derivations and fan-out elements, plus the template id.
    detail_keys = sorted(
        {n for n in SLOTS if n.startswith("d_")}
        | {k for k in _unit_plan()[0] if k.startswith("d_")}
        | {k for k in _CONST_COLS if k.startswith("d_")}
        | {n for n, _ in FAN_FIELDS if n.startswith("d_")}
    )
    kv_cols: list[Column] = [F.lit("template"), F.col("_tid")]
    for k in detail_keys:
        parts = [p for p in (g(k) if k in _SLOT_INDEX else None, _const(k, _STR), _derived(k)) if p is not None]
        v = parts[0] if len(parts) == 1 else F.coalesce(*parts) if parts else F.lit(None).cast(_STR)
        kv_cols += [F.lit(k[2:]), v]
    cols.append(F.map_filter(F.create_map(*kv_cols), lambda k, v: v.isNotNull()).alias("_details"))

    step["flat"] = cols
    # Fan-out: one event per element (partition / broker / replica). Only fan-out rows carry an array.
    step["keep"] = F.col("_el").isNotNull() | F.col("_fan").isNull() | (F.col("event_type") == MALFORMED)
    el = F.col("_el")
    el_tp = el["tp"]
    out_cols: list[Column] = [F.col(c) for c in PROVENANCE]
    out_cols += [
        F.coalesce(F.col("_pos"), F.lit(0)).alias("sub_index"),
        "event_type", "event_time", "level", "logger", "raw", "broker_id", "topic_id", "kafka_version_hint",
        F.coalesce(F.when(el_tp.isNotNull(), F.regexp_extract(el_tp, r"^(.*)-\d+$", 1)), F.col("topic"))
        .alias("topic"),
        F.coalesce(F.substring_index(el_tp, "-", -1).try_cast(_INT), F.col("partition")).alias("partition"),
    ]
    fan_cols = {n for n, _ in FAN_FIELDS if not n.startswith("d_") and n != "tp"}
    for c in typed_cols:
        out_cols.append((F.coalesce(el[c], F.col(c)) if c in fan_cols else F.col(c)).alias(c))
    el_details = F.create_map(*[x for n, _ in FAN_FIELDS if n.startswith("d_") for x in (F.lit(n[2:]), el[n])])
    details = F.when(
        F.col("event_type") == MALFORMED,
        F.map_concat(F.create_map(F.lit("reason"), F.col("_reason")),
                     F.map_filter(F.col("_details"), lambda k, v: k == "template")),
    ).when(
        el.isNotNull(),
        F.map_concat(
            F.map_filter(F.col("_details"), lambda k, v: ~k.isin(*[n[2:] for n, _ in FAN_FIELDS if n.startswith("d_")])),
            F.map_filter(el_details, lambda k, v: v.isNotNull()),
        ),
    ).otherwise(F.col("_details"))
    out_cols.append(details.alias("details"))
    step["out"] = out_cols
    # A malformed fan-out row keeps one row (sub_index 0) and no typed values.
    step["one_malformed"] = (F.col("event_type") != MALFORMED) | (F.col("sub_index") == 0)
    return step


def parse_kafka_log4j(records: DataFrame) -> DataFrame:
    """Kafka log4j records (state-change / controller / server logs) -> bronze event rows.

    Returns the provenance columns, ``sub_index``, ``event_type`` and the typed columns of
    :mod:`epoch_audit.contracts.events` that the matched template fills (see the module docstring).
    """
    c = _plan_columns()
    # Few DataFrame steps: each one re-analyses the plan built so far.
    staged = (
        records.where(c["filter"])
        .select("*", *c["ident_body"])
        .select("*", c["tpl"])
        .where(F.col("_tpl").isNotNull())
    )
    staged = staged.select("*", *c["match"])
    staged = staged.select("*", c["g"]).drop("_m")
    staged = staged.select("*", *c["fan"])
    staged = staged.select("*", c["reason"])
    exploded = staged.select(*c["flat"]).select("*", F.posexplode_outer("_fan").alias("_pos", "_el"))
    return exploded.where(c["keep"]).select(*c["out"]).where(c["one_malformed"])

