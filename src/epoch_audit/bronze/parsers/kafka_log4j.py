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
   template only; the replacement lists the template's capture groups (see
   :mod:`epoch_audit.bronze.parsers.line_template`, the template engine), split into an array, and
   each output column is a typed cast of its group.
3. Templates needing more (sub-structures, fan-out to one event per partition / replica) add
   derivations / fan-outs (:mod:`epoch_audit.bronze.parsers.kafka_derive`), evaluated inside
   ``CASE`` on the template so they only run on their rows.

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
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, IntegerType, StringType

from epoch_audit.bronze.parsers import MALFORMED
from epoch_audit.bronze.parsers.kafka_derive import FAN_FIELDS, KAFKA_DERIVATIONS
from epoch_audit.bronze.parsers.line_template import GROUP_SEPARATOR, MATCH_MARK, LineTemplate, TemplateTable
from epoch_audit.bronze.parsers.templates.kafka_apis import KAFKA_APIS_TEMPLATES
from epoch_audit.bronze.parsers.templates.kafka_controller import CONTROLLER_TEMPLATES
from epoch_audit.bronze.parsers.templates.kafka_partition import PARTITION_TEMPLATES
from epoch_audit.bronze.parsers.templates.kafka_server import SERVER_TEMPLATES
from epoch_audit.bronze.parsers.templates.kafka_state_change import (
    BROKER_STATE_CHANGE_TEMPLATES,
    CONTROLLER_STATE_CHANGE_TEMPLATES,
)
from epoch_audit.contracts.events import EVENT_SCHEMA, EVENT_TYPES

_INT, _STR, _BOOL = IntegerType(), StringType(), BooleanType()

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


def _family_pred(family: str) -> Column:
    names = list(_FAMILY_LOGGERS[family])
    names += [n.rsplit(".", 1)[-1] for n in names if "." in n and n != "state.change.logger"]
    if family == "state_change":
        names.append("logger")  # %c{1} of state.change.logger
    pred = F.col("logger").isin(*sorted(set(names)))
    for prefix in _FAMILY_PREFIX.get(family, ()):
        pred = pred | F.col("logger").startswith(prefix)
    if family == "alter_partition_manager":
        pred = pred | (F.col("logger").startswith("kafka.server.") & F.col("logger").contains("Alter"))
    return pred


def _all_loggers() -> Column:
    pred = None
    for family in _FAMILY_LOGGERS:
        family_pred = _family_pred(family)
        pred = family_pred if pred is None else pred | family_pred
    return pred


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
# Columns filled outside the template values (provenance, identity, routing) or not by this parser.
_UNTYPED = (
    "event_id", "event_type", "cluster_id", "host_id", "broker_id", "topic", "partition", "topic_id",
    "event_time", "source_file", "file_id", "file_order", "line_number", "sub_index", "log_kind",
    "level", "logger", "kafka_version_hint", "raw", "details",
)


@functools.cache
def _plan_columns() -> dict[str, Any]:
    """Every column expression of ``parse_kafka_log4j``, built once per process: they depend on
    the templates only, and building them costs tens of thousands of py4j calls."""
    table = TEMPLATE_TABLE
    msg = F.col("message")
    cut = F.instr(msg, "] ")
    has_ident = msg.startswith("[") & (cut > 0)
    step: dict[str, Any] = {}
    step["filter"] = F.col("logger").isNotNull() & _all_loggers()
    step["ident_body"] = [
        F.when(has_ident, F.expr("substring(message, 2, instr(message, '] ') - 2)")).alias("_ident"),
        F.when(has_ident, F.expr("substring(message, instr(message, '] ') + 2)")).otherwise(msg).alias("_body"),
    ]
    step["tpl"] = table.routing(_family_pred, F.col("_body")).alias("_tpl")
    # One regex per row: the chosen template's pattern (a column), all its groups laid out in its
    # own group order by the replacement, then split into the array ``_g``.
    matched_text = F.call_function("regexp_replace", F.col("_body"), table.pattern(), table.replacement())
    groups = F.split(F.substring(F.col("_m"), 2, 1 << 30), GROUP_SEPARATOR, -1)
    ident = F.col("_ident")
    # ``_pos`` is not a bare lookup (CASE is not "cheap"): computed once, never inlined into the accessors.
    step["match"] = [
        matched_text.alias("_m"),
        F.when(F.col("_tpl").isNotNull(), F.get(table.group_position_table(), F.col("_tpl"))).alias("_pos"),
        table.lookup(table.tids, _STR).alias("_tid"),
        F.when(ident.isNotNull(), F.regexp_extract(ident, _IDENT_ID, 1)).try_cast(_INT).alias("_iid"),
    ]
    step["g"] = F.when(
        F.col("_m").startswith(MATCH_MARK) & (F.size(groups) == table.group_count()), groups
    ).alias("_g")

    value = table.value
    tp = table.group("tp")
    tp_partition = F.substring_index(tp, "-", -1)
    tp_topic = F.substr(tp, F.lit(1), F.length(tp) - F.length(tp_partition) - 1)
    ident_tp = F.regexp_extract(ident, r"^(?:Partition |(?:Unified)?Log partition=)([^ ,]+)", 1)
    ident_tp = F.when(ident_tp != "", ident_tp)
    ident_topic = F.regexp_extract(ident_tp, r"^(.*)-\d+$", 1)
    is_ctrl_ident = ident.startswith("Controller ") | ident.startswith("QuorumController id=")
    ident_epoch = F.regexp_extract(ident, r" epoch=(\d+)", 1)
    ident_leader = F.regexp_extract(ident, r"leaderId=(\d+)", 1)

    # Fan-out: one generic list per row, keyed by the name of the group holding it.
    step["fan"] = [
        table.fanout().alias("_fan"),
        F.nullif(F.get(F.col("_g"), table.fanout_position()), F.lit("")).alias("_fan_src"),
    ]
    has_fan = table.fanout_kind().isNotNull()
    matched = F.col("_g").isNotNull()
    fan_bad = has_fan & (F.size("_fan") == 0) & F.col("_fan_src").rlike(r"\d")
    reason = (
        F.when(~table.lookup([t.regex is not None for t in TEMPLATES], _BOOL),
               F.concat(F.lit("no known variant of "), F.col("_tid")))
        .when(~matched, F.concat(F.lit("template "), F.col("_tid"), F.lit(" did not match")))
        .when(fan_bad, F.concat(F.lit("template "), F.col("_tid"), F.lit(": list not parsed")))
        .otherwise(table.misfit_group())
    )
    step["reason"] = reason.alias("_reason")

    typed_cols = [f.name for f in EVENT_SCHEMA.fields if f.name in _TYPES and f.name not in _UNTYPED]

    cols: list[Column] = [F.col(name) for name in PROVENANCE] + [
        "event_time", "level", "logger", "raw", "_tid", "_reason", "_fan", "_iid",
    ]
    cols.append(F.when(F.col("_reason").isNull(), table.lookup([t.event_type for t in TEMPLATES], _STR))
                .otherwise(F.lit(MALFORMED)).alias("event_type"))
    cols.append(F.coalesce(value("broker_id"), F.col("_iid"), F.col("host_id")).alias("broker_id"))
    cols.append(F.coalesce(F.when(tp.isNotNull(), tp_topic), value("topic"),
                           F.when(ident_topic != "", ident_topic)).alias("topic"))
    cols.append(F.coalesce(tp_partition.try_cast(_INT), value("partition"),
                           F.regexp_extract(ident_tp, r"-(\d+)$", 1).try_cast(_INT)).alias("partition"))
    cols.append(value("topic_id").alias("topic_id"))
    cols.append(table.version().alias("kafka_version_hint"))
    for column in typed_cols:
        column_value = value(column)
        if column == "controller_id":
            column_value = F.coalesce(column_value, F.when(is_ctrl_ident, F.col("_iid")))
        elif column == "controller_epoch":
            column_value = F.coalesce(
                column_value, F.when(is_ctrl_ident & (ident_epoch != ""), ident_epoch.try_cast(_INT))
            )
        elif column == "leader":
            column_value = F.coalesce(column_value, F.when(ident_leader != "", ident_leader.try_cast(_INT)))
        # A malformed row keeps its provenance and ident values only.
        cols.append(F.when(F.col("_reason").isNull(), column_value).alias(column))

    # details: every d_<key> from groups, constants, derivations and fan-out elements, plus the template id.
    fan_detail_names = [n for n, _ in FAN_FIELDS if n.startswith("d_")]
    detail_keys = sorted(table.detail_keys() | set(fan_detail_names))
    kv_cols: list[Column] = [F.lit("template"), F.col("_tid")]
    for key in detail_keys:
        kv_cols += [F.lit(key[2:]), table.detail_value(key)]
    cols.append(F.map_filter(F.create_map(*kv_cols), lambda k, v: v.isNotNull()).alias("_details"))

    step["flat"] = cols
    # Fan-out: one event per element (partition / broker / replica). Only fan-out rows carry an array.
    step["keep"] = F.col("_el").isNotNull() | F.col("_fan").isNull() | (F.col("event_type") == MALFORMED)
    el = F.col("_el")
    el_tp = el["tp"]
    out_cols: list[Column] = [F.col(name) for name in PROVENANCE]
    out_cols += [
        F.coalesce(F.col("_pos"), F.lit(0)).alias("sub_index"),
        "event_type", "event_time", "level", "logger", "raw", "broker_id", "topic_id", "kafka_version_hint",
        F.coalesce(F.when(el_tp.isNotNull(), F.regexp_extract(el_tp, r"^(.*)-\d+$", 1)), F.col("topic"))
        .alias("topic"),
        F.coalesce(F.substring_index(el_tp, "-", -1).try_cast(_INT), F.col("partition")).alias("partition"),
    ]
    fan_cols = {n for n, _ in FAN_FIELDS if not n.startswith("d_") and n != "tp"}
    for column in typed_cols:
        out_cols.append((F.coalesce(el[column], F.col(column)) if column in fan_cols else F.col(column)).alias(column))
    el_details = F.create_map(*[x for n in fan_detail_names for x in (F.lit(n[2:]), el[n])])
    details = F.when(
        F.col("event_type") == MALFORMED,
        F.map_concat(F.create_map(F.lit("reason"), F.col("_reason")),
                     F.map_filter(F.col("_details"), lambda k, v: k == "template")),
    ).when(
        el.isNotNull(),
        F.map_concat(
            F.map_filter(F.col("_details"), lambda k, v: ~k.isin(*[n[2:] for n in fan_detail_names])),
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
    plan = _plan_columns()
    # Few DataFrame steps: each one re-analyses the plan built so far.
    staged = (
        records.where(plan["filter"])
        .select("*", *plan["ident_body"])
        .select("*", plan["tpl"])
        .where(F.col("_tpl").isNotNull())
    )
    staged = staged.select("*", *plan["match"])
    staged = staged.select("*", plan["g"]).drop("_m")
    staged = staged.select("*", *plan["fan"])
    staged = staged.select("*", plan["reason"])
    exploded = staged.select(*plan["flat"]).select("*", F.posexplode_outer("_fan").alias("_pos", "_el"))
    return exploded.where(plan["keep"]).select(*plan["out"]).where(plan["one_malformed"])
