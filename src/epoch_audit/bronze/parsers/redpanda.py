"""Redpanda raft election / term lines (reference §7) -> ``rp_*`` bronze events.

Input: ``records`` (see :mod:`epoch_audit.bronze.parsers`) of Redpanda Seastar logs. A raft line's message is
``[group_id:<g>, {<ns>/<topic>/<partition>}] <text>``; the ``<file>:<line> - `` part may or may not
have been cut out of the message by the framing stage, both are accepted.

Conventions of every ``rp_*`` event:

* ``topic``/``partition`` from the NTP. Namespace ``kafka`` (user topics, ``__consumer_offsets``)
  gives the bare topic name; any other namespace keeps it as a prefix (``redpanda/controller``,
  ``kafka_internal/tx``) so that internal raft groups never collide with a Kafka topic of the same
  name (Kafka topic names cannot contain ``/``). ``details["namespace"]`` holds the namespace.
* ``details["group_id"]`` is the raft group, ``details["shard"]`` the Seastar shard.
* ``leader_epoch`` is filled ONLY where the line states the term the node itself holds (the
  spec's ``leader_epoch_regression`` series): becoming/became the leader, the ``current`` term of a
  received vote request, the new term of "Setting new term", recovered persistent state /
  "Starting with voted_for", ``started raft ... term:``, the candidate's own election term
  (voting for self, pre-vote "current term:") and a term adopted from a vote reply
  ("vote failed - received larger term"). Never from ``*_offset_term`` fields, step-down lines
  (which may already print the new term of a ``candidate_term_greater`` step-down), a vote
  request's "received" term, vote replies / vote acks, truncation or leadership notifications:
  those terms go to ``details["term"]`` (or a more specific details key).
* ``broker_id`` is the logging node (``host_id``) unless the line names the node itself (the
  ``target_node_id`` of a vote reply / request, the ``from`` of a prevote or leadership transfer).
  ``replica_id`` is the other node: vote target, voter, candidate, voted-for node, transfer target.
* Vote events name both sides in ``details["candidate"]`` / ``details["voter"]`` and carry
  ``details["vote_granted"]`` (``true``/``false``) where the line states the outcome. Orientation
  (read so by the invariants): ``rp_vote_reply`` is the candidate's line (broker_id = candidate,
  replica_id = voter; "vote reply from", "vote acks", one event per acking voter),
  ``rp_vote_granted`` the voter's own "vote reply:" line (broker_id = voter, replica_id = candidate).
* ``rp_truncate`` (follower log truncation) carries the truncation point in ``offset``.
* The offset sentinel ``-9223372036854775808`` (and node id sentinel ``-2147483648``) means "none"
  and is never kept as a value.
"""


from __future__ import annotations

import re

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, StringType

from epoch_audit.bronze.parsers.line_template import per_template_arrays, per_template_literal
from epoch_audit.bronze.parsers.templates.redpanda_raft import (
    LEADERS_TABLE_TEMPLATE,
    NAMED_NUMBER,
    PREVOTE_TAG,
    RAFT_TEMPLATES,
    RP_HINT_LE_V23_3,
    RP_HINT_V24_1,
)

_GROUP_PREFIX = r"^\[group_id:(-?\d+), \{([^{}]*)\}\] "
# the vlog "<file>:<line> - " part, in case the framing stage left it in the message
_SRC_LOC = r"(?:[\w.+-]+\.(?:cc|h|hh|cpp):\d+ - )?"
_NTP = r"^([^/]+)/(.+)/(\d+)$"

_OFFSET_SENTINEL = "-9223372036854775808"
_INT, _STR, _BOOL = IntegerType(), StringType(), BooleanType()

TEMPLATES = RAFT_TEMPLATES
ALL_TEMPLATES = TEMPLATES + [LEADERS_TABLE_TEMPLATE]
_TABLE_IDX = len(TEMPLATES)
_VOTE_ACKS = next(i for i, t in enumerate(TEMPLATES) if t.regex.startswith("^vote acks"))
_STARTED_RAFT = next(i for i, t in enumerate(TEMPLATES) if t.event_type == "rp_started_raft")
_MAX_GROUPS = max(re.compile(t.regex).groups for t in ALL_TEMPLATES)
# the columns a template may fill from a capture group, each with one value kind
_COL_KINDS = {
    "broker_id": "node",
    "replica_id": "node",
    "leader": "node",
    "leader_epoch": "int",
    "current_leader_epoch": "int",
    "offset": "offset",
}
assert all(t.regex.endswith("$") for t in ALL_TEMPLATES)
assert all(_COL_KINDS[c] == k for t in ALL_TEMPLATES for c, (_, k) in t.cols.items())


def _padded(regex: str) -> str:
    """The regex with empty groups appended so that every template has _MAX_GROUPS groups: one
    regexp_extract per group index then works whichever template matched."""
    return regex[:-1] + "()" * (_MAX_GROUPS - re.compile(regex).groups) + "$"


def _node(text: Column) -> Column:
    """Node id from a vnode ``{id: {2}, revision: {45}}`` / ``{id: 2, ...}``, an optional vnode
    ``{{id: 2, ...}}``, a bare or braced id; null for ``{nullopt}`` and negative (sentinel) ids."""
    raw = F.regexp_extract(text, r"^\{*(?:id: \{?)?(-?\d+)\}?", 1).try_cast("int")
    return F.when(raw >= 0, raw)


def _convert(text: Column, kind: str) -> Column:
    """A captured string as the typed value ``kind`` names (see :class:`RaftTemplate`)."""
    if kind == "int":
        return text.try_cast("int")
    if kind == "long":
        return text.try_cast("long")
    if kind == "node":
        return _node(text)
    if kind == "offset":
        return F.when(text != F.lit(_OFFSET_SENTINEL), text.try_cast("long"))
    if kind == "bool":
        low = F.lower(text)
        return F.when(low.isin("1", "true"), True).when(low.isin("0", "false"), False)
    return F.when(text != "", text)


def _group(k: Column | int) -> Column:
    """Capture group ``k`` (1-based) of the matched template, from the ``_g`` array."""
    idx = F.lit(k) if isinstance(k, int) else k
    return F.get(F.col("_g"), idx - 1)


# start-up offsets of "started raft, log offsets: {...}": kept in details (sentinel dropped); the
# *_offset_term values are the terms of log entries, never the node's own term
_STARTUP_OFFSETS = (
    "start_offset",
    "committed_offset",
    "committed_offset_term",
    "dirty_offset",
    "dirty_offset_term",
    "last_term_start_offset",
)


def parse_redpanda(records: DataFrame) -> DataFrame:
    """Parse Redpanda raft election / term lines (§7.2) and partition-leader updates into ``rp_*`` events.

    Rules: Raft election safety (one leader per term) and per-node monotonic terms; see the module
    docstring for which term lands in ``leader_epoch``. A CASE of literal regexes picks the
    template; its (padded) regex then extracts every capture group once into ``_g``, and the
    per-template meaning of each group is looked up from literal arrays (small plans, no UDF).
    """
    msg = F.col("message")
    is_raft = msg.startswith("[group_id:")
    is_table = msg.startswith("updated partition: ")
    body = F.col("_body")

    cand = records.where(is_raft | is_table).select(
        "*",
        F.when(is_raft, F.regexp_extract(msg, _GROUP_PREFIX, 1)).alias("_group_id"),
        F.when(is_raft, F.regexp_extract(msg, _GROUP_PREFIX, 2)).alias("_rp_ntp"),
        F.when(is_raft, F.regexp_replace(msg, _GROUP_PREFIX + _SRC_LOC, "")).otherwise(msg).alias("_body"),
    )
    pick: Column | None = None
    for i, tpl in enumerate(TEMPLATES):
        pick = (F.when if pick is None else pick.when)(body.rlike(tpl.regex), F.lit(i))
    assert pick is not None
    tpl_idx = F.when(F.col("_group_id").isNotNull(), pick).when(
        body.rlike(LEADERS_TABLE_TEMPLATE.regex), F.lit(_TABLE_IDX)
    )
    # cheap pre-filter first: every template names a vote/voting, a term or a leader
    matched = (
        cand.where(body.rlike("(?i)vot|term|leader"))
        .withColumn("_tpl", tpl_idx)
        .where(F.col("_tpl").isNotNull())
    )
    regex = per_template_literal([_padded(t.regex) for t in ALL_TEMPLATES], _STR)
    staged = matched.withColumn(
        "_g",
        # the pattern is a column: the Python wrapper only takes literal patterns, the SQL function both
        F.array(*[F.call_function("regexp_extract", body, regex, F.lit(k)) for k in range(1, _MAX_GROUPS + 1)]),
    )

    def col_value(column: str) -> Column:
        idx = per_template_literal([t.cols.get(column, (0, ""))[0] for t in ALL_TEMPLATES], _INT)
        kind = _COL_KINDS[column]
        if kind in ("int", "long", "offset"):
            # kept as text: finish_events converts it and quarantines a term beyond int32 (never a null term)
            text = F.nullif(_group(idx), F.lit(""))
            return F.when(idx > 0, text if kind != "offset" else F.when(text != F.lit(_OFFSET_SENTINEL), text))
        return F.when(idx > 0, _convert(_group(idx), kind))

    tagged = per_template_literal([t.hint is None and t.regex.startswith(PREVOTE_TAG) for t in ALL_TEMPLATES], _BOOL)
    # the "[pre-vote: ...]" tag exists from v24.1.1; the untagged forms are v22.1-v23.3
    hint = F.coalesce(
        per_template_literal([t.hint for t in ALL_TEMPLATES], _STR),
        F.when(tagged, F.when(_group(1) != "", F.lit(RP_HINT_V24_1)).otherwise(F.lit(RP_HINT_LE_V23_3))),
    )

    def detail_value(i: Column, kind: Column) -> Column:
        text = _group(i)
        return (
            F.when(kind == "node", _node(text).cast("string"))
            .when(kind == "bool", _convert(text, "bool").cast("string"))
            .when(kind == "offset", _convert(text, "offset").cast("string"))
            .otherwise(_convert(text, "str"))
        )

    keys = per_template_arrays([list(t.details) for t in ALL_TEMPLATES], "string")
    groups = per_template_arrays([[g for g, _ in t.details.values()] for t in ALL_TEMPLATES], "int")
    kinds = per_template_arrays([[k for _, k in t.details.values()] for t in ALL_TEMPLATES], "string")
    captured = F.map_from_arrays(keys, F.transform(groups, lambda g, pos: detail_value(g, F.get(kinds, pos))))
    consts = F.get(
        F.array(
            *[
                F.create_map(*[F.lit(x) for kv in t.consts.items() for x in kv]).cast("map<string,string>")
                for t in ALL_TEMPLATES
            ]
        ),
        F.col("_tpl"),
    )
    startup = F.when(
        F.col("_tpl") == _STARTED_RAFT,
        F.create_map(
            *[
                x
                for key in _STARTUP_OFFSETS
                for x in (
                    F.lit(key),
                    _convert(F.regexp_extract(_group(1), r"(?:^|[{ ])" + key + r":" + NAMED_NUMBER, 1), "offset").cast(
                        "string"
                    ),
                )
            ]
        ),
    ).otherwise(F.create_map().cast("map<string,string>"))

    # vote acks: one row per granting voter (each `id: N` of the printed vnode list)
    voters = F.when(
        F.col("_tpl") == _VOTE_ACKS, F.regexp_extract_all(_group(2), F.lit(r"id: \{?(-?\d+)"), 1)
    ).otherwise(F.array(F.lit(None).cast("string")))

    typed = staged.select(
        "*",
        per_template_literal([t.event_type for t in ALL_TEMPLATES], _STR).alias("event_type"),
        hint.alias("kafka_version_hint"),
        per_template_literal([t.candidate_is for t in ALL_TEMPLATES], _STR).alias("_cand_side"),
        col_value("broker_id").alias("_line_broker"),
        col_value("replica_id").alias("_line_replica"),
        col_value("leader_epoch").alias("leader_epoch"),
        col_value("current_leader_epoch").alias("current_leader_epoch"),
        col_value("leader").alias("_line_leader"),
        col_value("offset").alias("_line_offset"),
        F.when(F.col("_tpl") == _TABLE_IDX, F.concat_ws("/", _group(1), _group(2), _group(3)))
        .otherwise(F.col("_rp_ntp"))
        .alias("_ntp"),
        F.map_concat(captured, consts, startup).alias("_tpl_details"),
        voters.alias("_voters"),
    )
    exploded = typed.select("*", F.posexplode("_voters").alias("sub_index", "_voter"))

    broker_id = F.coalesce(F.col("_line_broker"), F.col("host_id"))
    replica_id = F.when(F.col("_tpl") == _VOTE_ACKS, _node(F.col("_voter"))).otherwise(F.col("_line_replica"))
    leader = F.when(
        F.col("event_type").isin("rp_becoming_leader", "rp_became_leader"), broker_id
    ).otherwise(F.col("_line_leader"))

    ns = F.regexp_extract(F.col("_ntp"), _NTP, 1)
    topic_name = F.regexp_extract(F.col("_ntp"), _NTP, 2)
    topic = F.when(ns == "", None).when(ns == "kafka", topic_name).otherwise(F.concat_ws("/", ns, topic_name))
    partition = F.regexp_extract(F.col("_ntp"), _NTP, 3).try_cast("int")

    side = F.col("_cand_side")
    candidate = F.when(side == "broker", broker_id).when(side == "replica", replica_id)
    voter = F.when(side == "broker", replica_id).when(side == "replica", broker_id)
    base_details = F.create_map(
        F.lit("group_id"), F.col("_group_id"),
        F.lit("namespace"), F.when(ns != "", ns),
        F.lit("shard"), F.col("shard").cast("string"),
        F.lit("candidate"), candidate.cast("string"),
        F.lit("voter"), voter.cast("string"),
    )
    details = F.map_filter(
        F.map_concat(base_details, F.col("_tpl_details")), lambda k, v: v.isNotNull() & (v != "")
    )

    return exploded.select(
        "file_id",
        "source_file",
        "cluster_id",
        "host_id",
        "file_order",
        "log_kind",
        "line_number",
        F.col("sub_index").cast("int").alias("sub_index"),
        "event_type",
        "event_time",
        "level",
        "logger",
        "raw",
        "kafka_version_hint",
        broker_id.cast("int").alias("broker_id"),
        topic.alias("topic"),
        partition.alias("partition"),
        "leader_epoch",
        "current_leader_epoch",
        leader.cast("int").alias("leader"),
        replica_id.cast("int").alias("replica_id"),
        F.col("_line_offset").alias("offset"),
        details.alias("details"),
    )
