"""Kafka log4j message parsers (state-change, controller, server logs) -> bronze events.

Covers reference §0.2/§0.3 (log idents, value printing), §1.1-1.5 (StopReplica, LeaderAndIsr,
UpdateMetadata, controller sends, KafkaApis stale broker epoch), §2.1-2.4 (ISR shrink/expand/update,
AlterPartition handling, controller rejections), the KRaft controller ``Replayed ...`` / ``Created
...`` / registration lines and raft ``Completed transition to ...`` (§0.2, §3.1), §4.3 (log start
offset), §6 (produce / fetch rejections). The JSON request log (§5) has its own parser.

How it works (in Python over Arrow, one pass: ``map_rows``):

1. Cheap routing. Rows are kept only for known loggers; the leading log ident (``[Broker id=2] ``,
   ``[Partition t-3 broker=1] `` ...) is cut off. The logger family, then ``startswith`` /
   ``contains`` on the body pick at most one template (the first in table order): no regex yet.
2. One regex per row: the chosen template's (see
   :mod:`epoch_audit.bronze.parsers.line_template`, the template engine); each output column is a
   typed cast of its group, else the template's constant, else a derived value.
3. Templates needing more (sub-structures, fan-out to one event per partition / replica) add
   derivations / fan-outs (:mod:`epoch_audit.bronze.parsers.kafka_derive`), run only for their rows.

A row whose template was chosen but whose regex does not match becomes ``__malformed__`` with a
reason; ``catch-all`` templates (``regex=None``) turn unknown variants of a recognised family
(e.g. a ``Leader ... starts at leader epoch`` line in an unseen shape) into malformed rows too.
Templates with ``event_type=None`` are recognised lines that carry no audit event (dropped).

Adding a template: add a :class:`~epoch_audit.bronze.parsers.line_template.LineTemplate` to its log
family's table in :mod:`epoch_audit.bronze.parsers.templates` (named groups = bronze column names;
``d_<key>`` = ``details[<key>]``; ``tp`` = topic-partition split on the last ``-``; ``_x`` = internal
value used by a derivation). List variants from the most specific prefilter to the least.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import DataType, IntegerType, StringType

from epoch_audit.bronze.parsers import MALFORMED
from epoch_audit.bronze.parsers.kafka_derive import FAN_FIELDS, KAFKA_DERIVATIONS
from epoch_audit.bronze.parsers.line_template import LineMatch, LineTemplate, TemplateTable
from epoch_audit.bronze.parsers.rows import Row, map_rows
from epoch_audit.bronze.parsers.spark_strings import nz, regexp_extract, substring_index_last, to_int
from epoch_audit.bronze.parsers.templates.kafka_apis import KAFKA_APIS_TEMPLATES
from epoch_audit.bronze.parsers.templates.kafka_controller import CONTROLLER_TEMPLATES
from epoch_audit.bronze.parsers.templates.kafka_partition import PARTITION_TEMPLATES
from epoch_audit.bronze.parsers.templates.kafka_server import SERVER_TEMPLATES
from epoch_audit.bronze.parsers.templates.kafka_state_change import (
    BROKER_STATE_CHANGE_TEMPLATES,
    CONTROLLER_STATE_CHANGE_TEMPLATES,
)
from epoch_audit.contracts.events import EVENT_SCHEMA, EVENT_TYPES

_INT, _STR = IntegerType(), StringType()

# ----------------------------------------------------------------------------------------------
# Logger families (reference §0.2). Strimzi's log4j2 variant prints the simple logger name (%c{1}).
# ----------------------------------------------------------------------------------------------

_FAMILY_LOGGERS: dict[str, tuple[str, ...]] = {
    "state_change": ("state.change.logger",),
    "partition": ("kafka.cluster.Partition",),
    "kafka_apis": ("kafka.server.KafkaApis",),
    "fetcher_manager": ("kafka.server.ReplicaFetcherManager",),
    "fetcher_thread": ("kafka.server.ReplicaFetcherThread",),
    "log": ("kafka.log.UnifiedLog", "kafka.log.Log"),
    "log_manager": ("kafka.log.LogManager",),
    "zk_controller": ("kafka.controller.KafkaController",),
    "kraft_controller": (
        "org.apache.kafka.controller.ReplicationControlManager",
        "org.apache.kafka.controller.ClusterControlManager",
        "org.apache.kafka.controller.OffsetControlManager",
        "org.apache.kafka.controller.QuorumController",
        "org.apache.kafka.controller.PartitionChangeBuilder",
        "org.apache.kafka.controller.BrokerHeartbeatManager",
    ),
    "raft": ("org.apache.kafka.raft.QuorumState", "org.apache.kafka.raft.KafkaRaftClient"),
    # AlterPartitionManager's exact logger is not recorded (§10): any kafka.server.*Alter* class.
    "alter_partition_manager": (
        "kafka.server.DefaultAlterPartitionManager",
        "kafka.server.AlterPartitionManager",
        "kafka.server.DefaultAlterIsrManager",
        "kafka.server.AlterIsrManager",
    ),
    "producer_sender": ("org.apache.kafka.clients.producer.internals.Sender",),
}
# Prefix families: the KRaft controller/raft managers are many classes sharing one LogContext.
_FAMILY_PREFIX: dict[str, tuple[str, ...]] = {
    "kraft_controller": ("org.apache.kafka.controller.",),
    "raft": ("org.apache.kafka.raft.",),
}


def _in_family(family: str, logger: str) -> bool:
    names = set(_FAMILY_LOGGERS[family])
    names |= {n.rsplit(".", 1)[-1] for n in _FAMILY_LOGGERS[family] if "." in n and n != "state.change.logger"}
    if family == "state_change":
        names.add("logger")  # %c{1} of state.change.logger
    if logger in names or logger.startswith(_FAMILY_PREFIX.get(family, ())):
        return True
    return family == "alter_partition_manager" and logger.startswith("kafka.server.") and "Alter" in logger


# ----------------------------------------------------------------------------------------------
# The template table
# ----------------------------------------------------------------------------------------------

# Routing tries a family's templates in this order (and families in order of first appearance).
TEMPLATES: list[LineTemplate] = (
    BROKER_STATE_CHANGE_TEMPLATES
    + KAFKA_APIS_TEMPLATES
    + CONTROLLER_STATE_CHANGE_TEMPLATES
    + CONTROLLER_TEMPLATES
    + PARTITION_TEMPLATES
    + SERVER_TEMPLATES
)
_TYPES: dict[str, DataType] = {f.name: f.dataType for f in EVENT_SCHEMA.fields}
# Compiled at import: every regex is validated with Python's engine.
TEMPLATE_TABLE = TemplateTable(TEMPLATES, KAFKA_DERIVATIONS, _TYPES, EVENT_TYPES, MALFORMED)

_IDENT_ID = r"(?:id=|broker=|broker |KafkaApi-|Controller |replicaId=|nodeId=)(-?\d+)"
PROVENANCE = ["file_id", "source_file", "cluster_id", "host_id", "file_order", "log_kind", "line_number"]
_PASSED_ON = [*PROVENANCE, "event_time", "level", "logger", "raw"]
# Columns filled outside the template values (provenance, identity, routing) or not by this parser.
_UNTYPED = (
    "event_id", "event_type", "cluster_id", "host_id", "broker_id", "topic", "partition", "topic_id",
    "event_time", "source_file", "file_id", "file_order", "line_number", "sub_index", "log_kind",
    "level", "logger", "kafka_version_hint", "raw", "details",
)
_TYPED_COLUMNS = [f.name for f in EVENT_SCHEMA.fields if f.name not in _UNTYPED]
_IDENT_FALLBACK = ("controller_id", "controller_epoch", "leader")  # columns a log ident may give
# A fan-out element's typed columns (win over the line's) and details (replace the line's).
_FAN_COLUMNS = [n for n, _ in FAN_FIELDS if not n.startswith("d_") and n != "tp"]
_FAN_DETAILS = [n for n, _ in FAN_FIELDS if n.startswith("d_")]
_FAN_DETAIL_KEYS = frozenset(n[2:] for n in _FAN_DETAILS)


@functools.cache
def _family(logger: str) -> str | None:
    """The logger's family: the first of the table's families (in order of first appearance) it belongs to."""
    if not any(_in_family(family, logger) for family in _FAMILY_LOGGERS):
        return None
    return next((family for family in TEMPLATE_TABLE.families if _in_family(family, logger)), None)


@functools.cache
def _value_columns(index: int) -> list[tuple[str, DataType]]:
    """The typed columns template ``index`` may fill (a group, a constant or a derivation names them)."""
    compiled = TEMPLATE_TABLE.compiled[index]
    named = set(compiled.groups) | set(compiled.template.const) | set(compiled.derived_plan)
    return [(c, _TYPES[c]) for c in _TYPED_COLUMNS if c in named or c in _IDENT_FALLBACK]


def _first(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def _typed_values(line: LineMatch, index: int, ident: str | None, ident_id: int | None) -> dict[str, Any]:
    """The typed columns of a parsed line; the log ident names the controller or the leader when the text does not."""
    out: dict[str, Any] = {}
    is_ctrl_ident = ident is not None and ident.startswith(("Controller ", "QuorumController id="))
    for column, dtype in _value_columns(index):
        value = line.value(column, dtype)
        if value is None:
            if column == "controller_id" and is_ctrl_ident:
                value = ident_id
            elif column == "controller_epoch" and is_ctrl_ident:
                value = to_int(nz(regexp_extract(ident, r" epoch=(\d+)", 1)))
            elif column == "leader":
                value = to_int(nz(regexp_extract(ident, r"leaderId=(\d+)", 1)))
        out[column] = value
    return out


def _topic_partition(line: LineMatch, ident: str | None) -> tuple[str | None, int | None]:
    """The line's topic and partition: its ``tp`` group, else its values, else the log ident's partition."""
    tp = line.groups("tp")
    ident_tp = nz(regexp_extract(ident, r"^(?:Partition |(?:Unified)?Log partition=)([^ ,]+)", 1))
    tp_topic = tp_partition = None
    if tp is not None:
        last = substring_index_last(tp, "-")
        cut = len(tp) - len(last) - 1
        tp_topic, tp_partition = (tp[:cut] if cut > 0 else ""), to_int(last)
    topic = _first(tp_topic, line.value("topic", _STR), nz(regexp_extract(ident_tp, r"^(.*)-\d+$", 1)))
    partition = _first(tp_partition, line.value("partition", _INT), to_int(regexp_extract(ident_tp, r"-(\d+)$", 1)))
    return topic, partition


def _fanned(row: Row, pos: int, el: dict[str, Any]) -> Row:
    """The line's row for fan-out element ``el`` (partition / broker / replica)."""
    out = dict(row)
    out["sub_index"] = pos
    el_tp = el["tp"]
    if el_tp is not None:
        out["topic"] = regexp_extract(el_tp, r"^(.*)-\d+$", 1)
        out["partition"] = _first(to_int(substring_index_last(el_tp, "-")), row["partition"])
    for column in _FAN_COLUMNS:
        if el[column] is not None:
            out[column] = el[column]
    if row["event_type"] != MALFORMED:
        details = {k: v for k, v in row["details"].items() if k not in _FAN_DETAIL_KEYS}
        details.update((n[2:], el[n]) for n in _FAN_DETAILS if el[n] is not None)
        out["details"] = details
    return out


def parse_record(record: Row) -> Iterable[Row]:
    """One Kafka log4j record (see :mod:`epoch_audit.bronze.parsers`) -> its bronze rows (unfinished):
    none for an irrelevant line, one per fan-out element, one malformed row for a line of a known
    template it cannot be read by."""
    logger, message = record.get("logger"), record.get("message")
    if logger is None or message is None:
        return ()
    family = _family(logger)
    if family is None:
        return ()
    cut = message.find("] ")
    if message.startswith("[") and cut >= 0:
        ident: str | None = message[1:cut]
        body = message[cut + 2:]
    else:
        ident, body = None, message
    index = TEMPLATE_TABLE.route(family, body)
    if index is None:
        return ()
    ident_id = to_int(regexp_extract(ident, _IDENT_ID, 1)) if ident is not None else None
    line = TEMPLATE_TABLE.match(index, body, ident, ident_id, logger)
    template = line.compiled.template
    topic, partition = _topic_partition(line, ident)
    row: Row = {name: record.get(name) for name in _PASSED_ON}
    row.update(
        sub_index=0,
        event_type=template.event_type if line.reason is None else MALFORMED,
        broker_id=_first(line.value("broker_id", _INT), ident_id, record.get("host_id")),
        topic=topic,
        partition=partition,
        topic_id=line.value("topic_id", _STR),
        kafka_version_hint=line.version(),
    )
    if line.reason is None:
        row.update(_typed_values(line, index, ident, ident_id))
        row["details"] = line.details()
    else:  # a malformed row keeps its provenance and ident values only
        row["details"] = {"reason": line.reason, "template": template.tid}
    fan = line.fan
    if fan is None:
        return (row,)
    if line.reason is not None:  # one malformed row (it still names the first element's partition / replica)
        return (_fanned(row, 0, fan[0]),) if fan else (row,)
    return [_fanned(row, pos, el) for pos, el in enumerate(fan)]


def parse_kafka_log4j(records: DataFrame) -> DataFrame:
    """Kafka log4j records (state-change / controller / server logs) -> bronze event rows.

    Returns the provenance columns, ``sub_index``, ``event_type`` and the typed columns of
    :mod:`epoch_audit.contracts.events` that the matched template fills (see the module docstring),
    finished (:func:`epoch_audit.bronze.parsers.rows.finish_row`).
    """
    return map_rows(records, parse_record)
