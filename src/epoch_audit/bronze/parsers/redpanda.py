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
from collections.abc import Iterable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.types import IntegerType, LongType

from epoch_audit.bronze.parsers.rows import Row, map_rows, try_cast
from epoch_audit.bronze.parsers.spark_strings import java_pattern
from epoch_audit.bronze.parsers.templates.redpanda_raft import (
    LEADERS_TABLE_TEMPLATE,
    NAMED_NUMBER,
    PREVOTE_TAG,
    RAFT_TEMPLATES,
    RP_HINT_LE_V23_3,
    RP_HINT_V24_1,
    RaftTemplate,
)

_GROUP_PREFIX = r"^\[group_id:(-?\d+), \{([^{}]*)\}\] "
# the vlog "<file>:<line> - " part, in case the framing stage left it in the message
_SRC_LOC = r"(?:[\w.+-]+\.(?:cc|h|hh|cpp):\d+ - )?"
_GROUP = java_pattern(_GROUP_PREFIX)
_GROUP_AND_SRC = java_pattern(_GROUP_PREFIX + _SRC_LOC)
_NTP = java_pattern(r"^([^/]+)/(.+)/(\d+)$")
_NODE = java_pattern(r"^\{*(?:id: \{?)?(-?\d+)\}?")
_VOTER = java_pattern(r"id: \{?(-?\d+)")
# cheap pre-filter first: every template names a vote/voting, a term or a leader
_RELEVANT = re.compile("vot|term|leader", re.ASCII | re.IGNORECASE)

_OFFSET_SENTINEL = "-9223372036854775808"
_INT, _LONG = IntegerType(), LongType()

# start-up offsets of "started raft, log offsets: {...}": kept in details (sentinel dropped); the
# *_offset_term values are the terms of log entries, never the node's own term
_STARTUP_OFFSETS = tuple(
    (key, java_pattern(r"(?:^|[{ ])" + key + r":" + NAMED_NUMBER))
    for key in (
        "start_offset", "committed_offset", "committed_offset_term", "dirty_offset", "dirty_offset_term",
        "last_term_start_offset",
    )
)
_OWN_TERM_LEADER = ("rp_becoming_leader", "rp_became_leader")


class _Compiled:
    """One template ready to apply: its regex and what kind of line it is."""

    def __init__(self, template: RaftTemplate) -> None:
        self.t = template
        self.regex = java_pattern(template.regex)
        # the "[pre-vote: ...]" tag exists from v24.1.1; the untagged forms are v22.1-v23.3
        self.tagged = template.hint is None and template.regex.startswith(PREVOTE_TAG)
        self.vote_acks = template.regex.startswith("^vote acks")
        self.started_raft = template.event_type == "rp_started_raft"


_RAFT = [_Compiled(t) for t in RAFT_TEMPLATES]
_TABLE = _Compiled(LEADERS_TABLE_TEMPLATE)


def _significant_digits(text: str) -> int:
    return len(text.lstrip("+-").lstrip("0"))


def _number(text: str, dtype: IntegerType | LongType) -> int | None:
    """``try_cast`` of a captured number; beyond 20 significant digits nothing fits (and Python's
    ``int`` refuses thousands of digits)."""
    return None if _significant_digits(text) > 20 else try_cast(text, dtype)


def _node(text: str | None) -> int | None:
    """Node id from a vnode ``{id: {2}, revision: {45}}`` / ``{id: 2, ...}``, an optional vnode
    ``{{id: 2, ...}}``, a bare or braced id; null for ``{nullopt}`` and negative (sentinel) ids."""
    found = _NODE.search(text or "")
    node = _number(found.group(1), _INT) if found else None
    return node if node is not None and node >= 0 else None


def _offset(text: str) -> int | None:
    return _number(text, _LONG) if text != _OFFSET_SENTINEL else None


def _detail(text: str, kind: str) -> str | None:
    """A captured details value as text (null / "" are dropped from details)."""
    if kind == "node":
        node = _node(text)
        return None if node is None else str(node)
    if kind == "bool":
        low = text.lower()
        return "true" if low in ("1", "true") else "false" if low in ("0", "false") else None
    if kind == "offset":
        value = _offset(text)
        return None if value is None else str(value)
    return text or None


def _column(text: str, kind: str) -> Any:
    """A captured column value: a node id as int; numbers stay text (finish_row converts them and
    quarantines a term beyond int32: never a null term)."""
    if kind == "node":
        return _node(text)
    if kind == "offset" and text == _OFFSET_SENTINEL:
        return None
    if _significant_digits(text) > 20:  # beyond int64 either way: quarantined alike, without int() of it
        return "9" * 21
    return text or None


def _match(body: str, is_raft: bool) -> tuple[_Compiled, re.Match] | None:
    if is_raft:
        for compiled in _RAFT:  # ordered: the first matching template wins
            found = compiled.regex.search(body)
            if found:
                return compiled, found
        return None
    found = _TABLE.regex.search(body)
    return (_TABLE, found) if found else None


def parse_record(record: Row) -> Iterable[Row]:
    """One Redpanda record -> its rp_* event (one per voter for "vote acks"), or nothing.
    Spark: :func:`parse_redpanda`."""
    msg = record.get("message")
    if msg is None:
        return
    is_raft = msg.startswith("[group_id:")
    if not is_raft and not msg.startswith("updated partition: "):
        return
    group_id = ntp = None
    body = msg
    if is_raft:
        prefix = _GROUP.search(msg)
        group_id, ntp = (prefix.group(1), prefix.group(2)) if prefix else ("", "")
        body = _GROUP_AND_SRC.sub("", msg, count=1)
    if not _RELEVANT.search(body):
        return
    matched = _match(body, is_raft)
    if matched is None:
        return
    compiled, found = matched
    t = compiled.t
    groups = [g if g is not None else "" for g in found.groups()]

    def group(k: int) -> str:
        return groups[k - 1]

    line = {col: _column(group(k), kind) for col, (k, kind) in t.cols.items()}
    hint = t.hint
    if hint is None and compiled.tagged:
        hint = RP_HINT_V24_1 if group(1) != "" else RP_HINT_LE_V23_3
    if not is_raft:
        ntp = "/".join((group(1), group(2), group(3)))
    template_details: dict[str, str | None] = {key: _detail(group(k), kind) for key, (k, kind) in t.details.items()}
    template_details.update(t.consts)
    if compiled.started_raft:
        for key, regex in _STARTUP_OFFSETS:
            found_offset = regex.search(group(1))
            value = _offset(found_offset.group(1)) if found_offset else None
            template_details[key] = None if value is None else str(value)

    ntp_parts = _NTP.search(ntp)
    ns, topic_name, part = ntp_parts.groups() if ntp_parts else ("", "", "")
    topic = None if ns == "" else topic_name if ns == "kafka" else ns + "/" + topic_name
    broker_id = line.get("broker_id")
    if broker_id is None:
        broker_id = record.get("host_id")
    leader = broker_id if t.event_type in _OWN_TERM_LEADER else line.get("leader")
    shard = record.get("shard")
    # vote acks: one row per granting voter (each `id: N` of the printed vnode list)
    voters = _VOTER.findall(group(2)) if compiled.vote_acks else [None]
    for sub_index, voter in enumerate(voters):
        replica_id = _node(voter) if compiled.vote_acks else line.get("replica_id")
        side = t.candidate_is
        candidate = broker_id if side == "broker" else replica_id if side == "replica" else None
        voter_id = replica_id if side == "broker" else broker_id if side == "replica" else None
        details = {
            "group_id": group_id,
            "namespace": ns or None,
            "shard": None if shard is None else str(shard),
            "candidate": None if candidate is None else str(candidate),
            "voter": None if voter_id is None else str(voter_id),
            **template_details,
        }
        yield {
            "file_id": record.get("file_id"), "source_file": record.get("source_file"),
            "cluster_id": record.get("cluster_id"), "host_id": record.get("host_id"),
            "file_order": record.get("file_order"), "log_kind": record.get("log_kind"),
            "line_number": record.get("line_number"), "sub_index": sub_index, "event_type": t.event_type,
            "event_time": record.get("event_time"), "level": record.get("level"), "logger": record.get("logger"),
            "raw": record.get("raw"), "kafka_version_hint": hint, "broker_id": broker_id, "topic": topic,
            "partition": _number(part, _INT), "leader_epoch": line.get("leader_epoch"),
            "current_leader_epoch": line.get("current_leader_epoch"), "leader": leader, "replica_id": replica_id,
            "offset": line.get("offset"),
            "details": {k: v for k, v in details.items() if v is not None and v != ""},
        }


def parse_redpanda(records: DataFrame) -> DataFrame:
    """Parse Redpanda raft election / term lines (§7.2) and partition-leader updates into ``rp_*`` events.

    Rules: Raft election safety (one leader per term) and per-node monotonic terms; see the module
    docstring for which term lands in ``leader_epoch``. The first template whose regex matches the
    message body (the raft group prefix cut off) gives the event; see :func:`parse_record`.
    """
    return map_rows(records, parse_record)
