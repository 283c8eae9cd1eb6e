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
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# --- value shapes (§7.1): named types print bare (v24.1+) or wrapped in braces (<= v23.3) ---
_N = r"\{?(-?\d+)\}?"  # a named-type number, bare or braced
_VNODE = r"\{id: \{?-?\d+\}?, revision: \{?-?\d+\}?\}"  # a raft vnode, both forms (not capturing)
# pre-vote tag of v24.1+: "[pre-vote: true] ", and the colon-less "[pre-vote true] " /
# misspelt "[prev-vote true] " variants of some lines. Optional: v22.1-v23.3 have no tag.
_TAG = r"^(?:\[(?:pre-vote|prev-vote):? (true|false)\] )?"

_GROUP_PREFIX = r"^\[group_id:(-?\d+), \{([^{}]*)\}\] "
# the vlog "<file>:<line> - " part, in case the framing stage left it in the message
_SRC_LOC = r"(?:[\w.+-]+\.(?:cc|h|hh|cpp):\d+ - )?"
_NTP = r"^([^/]+)/(.+)/(\d+)$"

_OFFSET_SENTINEL = "-9223372036854775808"

RP_HINT_V24_1 = "redpanda v24.1+"
RP_HINT_LE_V23_3 = "redpanda v22.1-v23.3"


@dataclass(frozen=True)
class _Template:
    """One message template: its regex over the message body and what each capture group means.

    ``cols`` maps an event column to ``(group, kind)``; ``details`` maps a details key likewise.
    kinds: ``int``/``long`` numbers, ``node`` a node id read from a vnode / bare / optional print,
    ``bool`` a 1/0/true/false flag, ``str`` text, ``offset`` a long with the sentinel dropped.
    ``consts`` are literal details; ``self_node`` names a column whose value identifies the
    logging node itself (then broker_id comes from the line, not host_id).
    """

    event_type: str
    regex: str
    cols: dict[str, tuple[int, str]] = field(default_factory=dict)
    details: dict[str, tuple[int, str]] = field(default_factory=dict)
    consts: dict[str, str] = field(default_factory=dict)
    hint: str | None = None
    # candidate / voter orientation: which of broker/replica is the candidate of a vote event
    candidate_is: str | None = None  # "broker" | "replica"


_T = _Template

# Ordered: the first matching template wins. All regexes are anchored and mutually exclusive.
TEMPLATES: list[_Template] = [
    # --- leadership (vote_stm.cc) ---
    _T(
        "rp_becoming_leader",
        r"^becoming the leader term: ?(\d+)$",
        cols={"leader_epoch": (1, "int")},
        hint="redpanda v22.1.4+",
    ),
    _T(
        "rp_became_leader",
        r"^became the leader term: (\d+)$",
        cols={"leader_epoch": (1, "int")},
        hint="redpanda v22.2.4+",
    ),
    _T(
        "rp_became_leader",
        r"^became the leader term:(\d+)$",
        cols={"leader_epoch": (1, "int")},
        hint="redpanda v22.1-v22.2.3",
    ),
    _T(
        "rp_leader_config_failed",
        r"^unable to replicate configuration as a leader - error code: (-?\d+) - (.*?) ?$",
        details={"error_code": (1, "str"), "error": (2, "str")},
    ),
    # --- step down / transfer (consensus.cc do_step_down, transfer_leadership) ---
    _T(
        "rp_step_down",
        r"^(?:\[([\w-]+)\] )?Stepping down as leader in term (\d+), dirty offset (-?\d+)$",
        details={"reason": (1, "str"), "term": (2, "str"), "dirty_offset": (3, "offset")},
    ),
    _T(
        "rp_step_down",
        r"^(?:\[([\w-]+)\] )?stepping down as leader in term (\d+), dirty offset (-?\d+), "
        r"with leadership transfer to (.+)$",
        cols={"replica_id": (4, "node")},
        details={"reason": (1, "str"), "term": (2, "str"), "dirty_offset": (3, "offset")},
        consts={"leadership_transfer": "true"},
    ),
    _T(
        "rp_leadership_transfer",
        r"^Starting leadership transfer from (.+) to (.+) in term (\d+)$",
        cols={"broker_id": (1, "node"), "replica_id": (2, "node")},
        details={"term": (3, "str")},
    ),
    _T(
        "rp_leadership_notification",
        r"^triggering leadership notification with term: ?(\d+), new leader: (.*)$",
        cols={"leader": (2, "node")},
        details={"term": (1, "str"), "new_leader": (2, "str")},
    ),
    # --- voter side (consensus.cc do_vote) ---
    _T(
        "rp_vote_request",
        r"^Received vote request with larger term from node (.+), received (\d+), current (\d+)$",
        cols={"replica_id": (1, "node"), "leader_epoch": (3, "int"), "current_leader_epoch": (3, "int")},
        details={"received_term": (2, "str"), "current_term": (3, "str")},
        candidate_is="replica",
    ),
    _T(
        "rp_vote_request",
        r"^Received vote request: \{node_id: (" + _VNODE + r"), target_node_id:? ?(" + _VNODE + r"), "
        r"group: " + _N + r", term: ?" + _N + r", prev_log_index: ?" + _N + r", "
        r"prev_log_term: ?" + _N + r", leadership_xfer: (\w+)\}$",
        cols={"replica_id": (1, "node"), "broker_id": (2, "node")},
        details={
            "term": (4, "str"),
            "prev_log_index": (5, "offset"),
            "prev_log_term": (6, "offset"),
            "leadership_transfer": (7, "bool"),
        },
        hint="redpanda v23.2+",
        candidate_is="replica",
    ),
    _T(
        "rp_vote_refused",
        r"^not granting vote to node (.+), it has priority (\d+) which is lower than current "
        r"target priority (\d+)$",
        cols={"replica_id": (1, "node")},
        details={"priority": (2, "str"), "target_priority": (3, "str")},
        consts={"vote_granted": "false", "reason": "priority"},
        candidate_is="replica",
    ),
    _T(
        "rp_vote_refused",
        r"^Already heard from the leader, not granting vote to node (.+)$",
        cols={"replica_id": (1, "node")},
        consts={"vote_granted": "false", "reason": "already_heard_from_leader"},
        candidate_is="replica",
    ),
    # voter-side TRACE "vote reply: <reply>" (consensus.cc consensus::vote; from the source, not
    # in the reference tables): the vote this node sends back to the candidate (target_node).
    _T(
        "rp_vote_granted",
        r"^vote reply: \{term: ?" + _N + r", target_node(?:_id)?:? ?(" + _VNODE + r"), "
        r"vote_granted: ?(\w+), log_ok: ?(\w+)\}$",
        cols={"replica_id": (2, "node")},
        details={"term": (1, "str"), "vote_granted": (3, "bool"), "log_ok": (4, "bool")},
        consts={"side": "voter"},
        candidate_is="replica",
    ),
    # --- follower term adoption / start-up (consensus.cc) ---
    _T(
        "rp_new_term",
        r"^Append entries request term: ?(\d+) is greater than current: ?(\d+)\. Setting new term$",
        cols={"leader_epoch": (1, "int"), "current_leader_epoch": (2, "int")},
        details={"term": (1, "str"), "current_term": (2, "str")},
    ),
    _T(
        "rp_recovered_state",
        r"^Recovered persistent state from kvstore: voted for: (.+), term: (\d+)$",
        cols={"replica_id": (1, "node"), "leader_epoch": (2, "int")},
        details={"voted_for": (1, "node")},
    ),
    _T(
        "rp_recovered_state",
        r"^Starting with voted_for (.+) term (\d+) initial_state (.*)$",
        cols={"replica_id": (1, "node"), "leader_epoch": (2, "int")},
        details={"voted_for": (1, "node"), "initial_state": (3, "str")},
    ),
    _T(
        "rp_started_raft",
        r"^started raft, log offsets: (\{.*?\}), term: (\d+), configuration: (.*)$",
        cols={"leader_epoch": (2, "int")},
    ),
    # --- candidate side, v24.1+ (pre-vote folded into vote_stm) ---
    _T(
        "rp_election_started",
        r"^starting pre-vote leader election, current term: (\d+), leadership transfer: (\w+)$",
        cols={"leader_epoch": (1, "int")},
        details={"leadership_transfer": (2, "bool")},
        consts={"phase": "pre-vote-start", "prevote": "true"},
        hint="redpanda v24.2+",
    ),
    _T(
        "rp_election_started",
        r"^pre-vote phase success: (\w+), current term: (\d+), leadership transfer: (\w+)$",
        cols={"leader_epoch": (2, "int")},
        details={"prevote_success": (1, "bool"), "leadership_transfer": (3, "bool")},
        consts={"phase": "pre-vote-result", "prevote": "true"},
        hint="redpanda v24.2+",
    ),
    _T(
        "rp_vote_sent",
        _TAG + r"sending vote request to (.+) with timeout of (\d+) ms$",
        cols={"replica_id": (2, "node")},
        details={"prevote": (1, "bool"), "timeout_ms": (3, "str")},
        hint=RP_HINT_V24_1,
        candidate_is="broker",
    ),
    _T(
        "rp_vote_sent",
        r"^Sending vote request to (.+) with timeout (\S+)$",
        cols={"replica_id": (1, "node")},
        details={"timeout": (2, "str")},
        consts={"prevote": "false"},
        hint="redpanda v22.3.17-v23.3",
        candidate_is="broker",
    ),
    _T(
        "rp_vote_sent",
        r"^Sending vote request to (" + _VNODE + r")$",
        cols={"replica_id": (1, "node")},
        consts={"prevote": "false"},
        hint="redpanda v22.1-v22.3.16",
        candidate_is="broker",
    ),
    _T(
        "rp_vote_sent",
        r"^Sending prevote request to (.+) from (.+) with tout: (-?\d+)$",
        cols={"replica_id": (1, "node"), "broker_id": (2, "node")},
        details={"deadline_ms": (3, "str")},
        consts={"prevote": "true"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    # self vote: the candidate's own (new) term
    _T(
        "rp_vote_sent",
        _TAG + r"(?:V|v)oting for self in term (\d+)$",
        cols={"leader_epoch": (2, "int")},
        details={"prevote": (1, "bool"), "term": (2, "str")},
        consts={"self_vote": "true", "vote_granted": "true"},
        candidate_is="broker",
    ),
    _T(
        "rp_vote_reply",
        _TAG + r"vote reply from (.+?) - \{term: ?" + _N + r", target_node(?:_id)?:? ?(" + _VNODE + r"), "
        r"vote_granted: ?(\w+), log_ok: ?(\w+)\}$",
        cols={"replica_id": (2, "node"), "broker_id": (4, "node")},
        details={
            "prevote": (1, "bool"),
            "term": (3, "str"),
            "vote_granted": (5, "bool"),
            "log_ok": (6, "bool"),
        },
        candidate_is="broker",
    ),
    _T(
        "rp_vote_reply",
        _TAG + r"vote error from (.+?) - (.*)$",
        cols={"replica_id": (2, "node")},
        details={"prevote": (1, "bool"), "error": (3, "str")},
        hint=RP_HINT_V24_1,
        candidate_is="broker",
    ),
    _T(
        "rp_vote_reply",
        _TAG + r"vote dispatch to node (.+?) error - (.*)$",
        cols={"replica_id": (2, "node")},
        details={"prevote": (1, "bool"), "error": (3, "str")},
        hint=RP_HINT_V24_1,
        candidate_is="broker",
    ),
    _T(
        "rp_vote_reply",
        r"^error voting: (.*)$",
        details={"error": (1, "str")},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    # prevote_stm.cc (<= v23.3): "caught up" = pre-vote granted, "is ahead" = refused
    _T(
        "rp_vote_reply",
        r"^prevote ack: node (.+) caught up with a candidate$",
        cols={"replica_id": (1, "node")},
        consts={"prevote": "true", "vote_granted": "true"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    _T(
        "rp_vote_reply",
        r"^prevote ack: node (.+) is ahead of a candidate$",
        cols={"replica_id": (1, "node")},
        consts={"prevote": "true", "vote_granted": "false", "reason": "voter_log_ahead"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    _T(
        "rp_vote_reply",
        r"^prevote ack from (.+) timed out$",
        cols={"replica_id": (1, "node")},
        consts={"prevote": "true", "error": "timeout"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    _T(
        "rp_vote_reply",
        r"^prevote ack: node (.+) threw exception (.*)$",
        cols={"replica_id": (1, "node")},
        details={"error": (2, "str")},
        consts={"prevote": "true"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    _T(
        "rp_vote_reply",
        r"^prevote ack from (.+) doesn't have value, error: (.*)$",
        cols={"replica_id": (1, "node")},
        details={"error": (2, "str")},
        consts={"prevote": "true"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    _T(
        "rp_vote_reply",
        r"^error on sending prevote to (.+) exception: (.*)$",
        cols={"replica_id": (1, "node")},
        details={"error": (2, "str")},
        consts={"prevote": "true"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    # "vote acks in term T from: <nodes>": one event per granting voter. Candidate side, so it is
    # an rp_vote_reply (broker_id = candidate, replica_id = voter) like "vote reply from": the
    # consumers read rp_vote_granted as the VOTER's own line (broker_id = voter).
    _T(
        "rp_vote_reply",
        r"^vote acks in term (\d+) from: (.*)$",
        details={"term": (1, "str")},
        consts={"side": "candidate", "vote_granted": "true"},
        candidate_is="broker",
    ),
    # --- election failures ---
    _T(
        "rp_vote_failed",
        _TAG + r"(?:V|v)ote failed - received larger term: (\d+)$",
        cols={"leader_epoch": (2, "int")},
        details={"prevote": (1, "bool"), "term": (2, "str")},
        consts={"reason": "received_larger_term"},
    ),
    _T(
        "rp_vote_failed",
        _TAG + r"vote failed - node (.+) has log which is more up to date than the current candidate$",
        cols={"replica_id": (2, "node")},
        details={"prevote": (1, "bool")},
        consts={"reason": "voter_log_more_up_to_date"},
        hint=RP_HINT_V24_1,
    ),
    _T(
        "rp_vote_failed",
        _TAG + r"(?:V|v)ote failed$",
        details={"prevote": (1, "bool")},
        consts={"reason": "not_enough_votes"},
    ),
    _T(
        "rp_vote_failed",
        _TAG + r"(?:N|n)o longer a candidate, ignoring vote replies$",
        details={"prevote": (1, "bool")},
        consts={"reason": "no_longer_candidate"},
    ),
    _T(
        "rp_vote_failed",
        _TAG + r"Ignoring successful (pre-)?vote\. Node priority too low: (-?\d+)$",
        details={"prevote": (1, "bool"), "priority": (3, "str"), "prevote_phase": (2, "str")},
        consts={"reason": "priority_too_low"},
    ),
    _T(
        "rp_vote_failed",
        r"^Error returned from prevoting process (.*)$",
        details={"error": (1, "str")},
        consts={"prevote": "true", "reason": "prevote_error"},
        hint=RP_HINT_LE_V23_3,
    ),
]

TEMPLATES += [
    # --- follower log truncation (consensus.cc do_append_entries; from the source, not in the
    # reference tables). The term is the append-entries request's: details only.
    _T(
        "rp_truncate",
        r"^Truncating log in term: ?(\d+), Request previous log index: ?(-?\d+) is earlier than log end "
        r"offset: ?(-?\d+)(?:, last visible index: ?(-?\d+), leader last visible index: ?(-?\d+))?\. "
        r"Truncating to: ?(-?\d+)$",
        cols={"offset": (6, "offset")},
        details={
            "term": (1, "str"),
            "prev_log_index": (2, "offset"),
            "log_end_offset": (3, "offset"),
            "last_visible_index": (4, "offset"),
            "leader_last_visible_index": (5, "offset"),
            "truncate_at": (6, "offset"),
        },
    ),
    # the same before 2022 (DEBUG)
    _T(
        "rp_truncate",
        r"^(?:Truncate log,|truncate log:) request for the same term: ?(\d+)\. Request offset: ?(-?\d+) is "
        r"earlier than what we have: ?(-?\d+)\. Truncating to: ?(-?\d+)$",
        cols={"offset": (4, "offset")},
        details={
            "term": (1, "str"),
            "prev_log_index": (2, "offset"),
            "log_end_offset": (3, "offset"),
            "truncate_at": (4, "offset"),
        },
    ),
]

# logger `cluster`, partition_leaders_table.cc: no raft group prefix, the NTP is in the text
# (groups 1-3); the only template for non-raft lines.
_LEADERS_TABLE = _T(
    "rp_partition_leader_updated",
    r"^updated partition: \{?([^/\s{}]+)/([^\s{}]+)/(\d+)\}? leader: \{term: (\d+), "
    r"current leader: (.+?), previous leader: (.+?), revision: (-?\d+)\}$",
    cols={"leader": (5, "node")},
    details={"term": (4, "str"), "current_leader": (5, "str"), "previous_leader": (6, "str"), "revision": (7, "str")},
)
ALL_TEMPLATES = TEMPLATES + [_LEADERS_TABLE]
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
    """A captured string as the typed value ``kind`` names (see :class:`_Template`)."""
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


def _lookup(values: list, element_type: str) -> Column:
    """The entry of a per-template literal list for this row's template (``_tpl``, 0-based)."""
    arr = F.array(*[F.lit(v) for v in values]).cast(f"array<{element_type}>")
    return F.get(arr, F.col("_tpl"))


def _lookup_arrays(values: list[list], element_type: str) -> Column:
    arr = F.array(*[F.array(*[F.lit(v) for v in vs]).cast(f"array<{element_type}>") for vs in values])
    return F.get(arr, F.col("_tpl"))


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
        body.rlike(_LEADERS_TABLE.regex), F.lit(_TABLE_IDX)
    )
    # cheap pre-filter first: every template names a vote/voting, a term or a leader
    matched = (
        cand.where(body.rlike("(?i)vot|term|leader"))
        .withColumn("_tpl", tpl_idx)
        .where(F.col("_tpl").isNotNull())
    )
    regex = _lookup([_padded(t.regex) for t in ALL_TEMPLATES], "string")
    staged = matched.withColumn(
        "_g",
        # the pattern is a column: the Python wrapper only takes literal patterns, the SQL function both
        F.array(*[F.call_function("regexp_extract", body, regex, F.lit(k)) for k in range(1, _MAX_GROUPS + 1)]),
    )

    def col_value(column: str) -> Column:
        idx = _lookup([t.cols.get(column, (0, ""))[0] for t in ALL_TEMPLATES], "int")
        return F.when(idx > 0, _convert(_group(idx), _COL_KINDS[column]))

    tagged = _lookup([t.hint is None and t.regex.startswith(_TAG) for t in ALL_TEMPLATES], "boolean")
    # the "[pre-vote: ...]" tag exists from v24.1.1; the untagged forms are v22.1-v23.3
    hint = F.coalesce(
        _lookup([t.hint for t in ALL_TEMPLATES], "string"),
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

    keys = _lookup_arrays([list(t.details) for t in ALL_TEMPLATES], "string")
    groups = _lookup_arrays([[g for g, _ in t.details.values()] for t in ALL_TEMPLATES], "int")
    kinds = _lookup_arrays([[k for _, k in t.details.values()] for t in ALL_TEMPLATES], "string")
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
                    _convert(F.regexp_extract(_group(1), r"(?:^|[{ ])" + key + r":" + _N, 1), "offset").cast(
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
        _lookup([t.event_type for t in ALL_TEMPLATES], "string").alias("event_type"),
        hint.alias("kafka_version_hint"),
        _lookup([t.candidate_is for t in ALL_TEMPLATES], "string").alias("_cand_side"),
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
        F.col("leader_epoch").cast("int").alias("leader_epoch"),
        F.col("current_leader_epoch").cast("int").alias("current_leader_epoch"),
        leader.cast("int").alias("leader"),
        replica_id.cast("int").alias("replica_id"),
        F.col("_line_offset").cast("long").alias("offset"),
        details.alias("details"),
    )
