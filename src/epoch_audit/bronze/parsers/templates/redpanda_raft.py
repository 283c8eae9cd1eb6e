"""Redpanda raft election / term templates (reference §7.2), as data; compiled by
:mod:`epoch_audit.bronze.parsers.redpanda` (see its docstring for what each event's columns mean).

Unlike the Kafka :class:`~epoch_audit.bronze.parsers.line_template.LineTemplate` (named groups,
routed by literal prefixes), a raft template is chosen by its own anchored regex (the first that
matches wins) and names its capture groups by number, each with a value kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# --- value shapes (§7.1): named types print bare (v24.1+) or wrapped in braces (<= v23.3) ---
NAMED_NUMBER = r"\{?(-?\d+)\}?"  # a named-type number, bare or braced
VNODE = r"\{id: \{?-?\d+\}?, revision: \{?-?\d+\}?\}"  # a raft vnode, both forms (not capturing)
# pre-vote tag of v24.1+: "[pre-vote: true] ", and the colon-less "[pre-vote true] " /
# misspelt "[prev-vote true] " variants of some lines. Optional: v22.1-v23.3 have no tag.
PREVOTE_TAG = r"^(?:\[(?:pre-vote|prev-vote):? (true|false)\] )?"

RP_HINT_V24_1 = "redpanda v24.1+"
RP_HINT_LE_V23_3 = "redpanda v22.1-v23.3"


@dataclass(frozen=True)
class RaftTemplate:
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



# Ordered: the first matching template wins. All regexes are anchored and mutually exclusive.
RAFT_TEMPLATES: list[RaftTemplate] = [
    # --- leadership (vote_stm.cc) ---
    RaftTemplate(
        "rp_becoming_leader",
        r"^becoming the leader term: ?(\d+)$",
        cols={"leader_epoch": (1, "int")},
        hint="redpanda v22.1.4+",
    ),
    RaftTemplate(
        "rp_became_leader",
        r"^became the leader term: (\d+)$",
        cols={"leader_epoch": (1, "int")},
        hint="redpanda v22.2.4+",
    ),
    RaftTemplate(
        "rp_became_leader",
        r"^became the leader term:(\d+)$",
        cols={"leader_epoch": (1, "int")},
        hint="redpanda v22.1-v22.2.3",
    ),
    RaftTemplate(
        "rp_leader_config_failed",
        r"^unable to replicate configuration as a leader - error code: (-?\d+) - (.*?) ?$",
        details={"error_code": (1, "str"), "error": (2, "str")},
    ),
    # --- step down / transfer (consensus.cc do_step_down, transfer_leadership) ---
    RaftTemplate(
        "rp_step_down",
        r"^(?:\[([\w-]+)\] )?Stepping down as leader in term (\d+), dirty offset (-?\d+)$",
        details={"reason": (1, "str"), "term": (2, "str"), "dirty_offset": (3, "offset")},
    ),
    RaftTemplate(
        "rp_step_down",
        r"^(?:\[([\w-]+)\] )?stepping down as leader in term (\d+), dirty offset (-?\d+), "
        r"with leadership transfer to (.+)$",
        cols={"replica_id": (4, "node")},
        details={"reason": (1, "str"), "term": (2, "str"), "dirty_offset": (3, "offset")},
        consts={"leadership_transfer": "true"},
    ),
    RaftTemplate(
        "rp_leadership_transfer",
        r"^Starting leadership transfer from (.+) to (.+) in term (\d+)$",
        cols={"broker_id": (1, "node"), "replica_id": (2, "node")},
        details={"term": (3, "str")},
    ),
    RaftTemplate(
        "rp_leadership_notification",
        r"^triggering leadership notification with term: ?(\d+), new leader: (.*)$",
        cols={"leader": (2, "node")},
        details={"term": (1, "str"), "new_leader": (2, "str")},
    ),
    # --- voter side (consensus.cc do_vote) ---
    RaftTemplate(
        "rp_vote_request",
        r"^Received vote request with larger term from node (.+), received (\d+), current (\d+)$",
        cols={"replica_id": (1, "node"), "leader_epoch": (3, "int"), "current_leader_epoch": (3, "int")},
        details={"received_term": (2, "str"), "current_term": (3, "str")},
        candidate_is="replica",
    ),
    RaftTemplate(
        "rp_vote_request",
        r"^Received vote request: \{node_id: (" + VNODE + r"), target_node_id:? ?(" + VNODE + r"), "
        r"group: " + NAMED_NUMBER + r", term: ?" + NAMED_NUMBER + r", prev_log_index: ?" + NAMED_NUMBER + r", "
        r"prev_log_term: ?" + NAMED_NUMBER + r", leadership_xfer: (\w+)\}$",
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
    RaftTemplate(
        "rp_vote_refused",
        r"^not granting vote to node (.+), it has priority (\d+) which is lower than current "
        r"target priority (\d+)$",
        cols={"replica_id": (1, "node")},
        details={"priority": (2, "str"), "target_priority": (3, "str")},
        consts={"vote_granted": "false", "reason": "priority"},
        candidate_is="replica",
    ),
    RaftTemplate(
        "rp_vote_refused",
        r"^Already heard from the leader, not granting vote to node (.+)$",
        cols={"replica_id": (1, "node")},
        consts={"vote_granted": "false", "reason": "already_heard_from_leader"},
        candidate_is="replica",
    ),
    # voter-side TRACE "vote reply: <reply>" (consensus.cc consensus::vote; from the source, not
    # in the reference tables): the vote this node sends back to the candidate (target_node).
    RaftTemplate(
        "rp_vote_granted",
        r"^vote reply: \{term: ?" + NAMED_NUMBER + r", target_node(?:_id)?:? ?(" + VNODE + r"), "
        r"vote_granted: ?(\w+), log_ok: ?(\w+)\}$",
        cols={"replica_id": (2, "node")},
        details={"term": (1, "str"), "vote_granted": (3, "bool"), "log_ok": (4, "bool")},
        consts={"side": "voter"},
        candidate_is="replica",
    ),
    # --- follower term adoption / start-up (consensus.cc) ---
    RaftTemplate(
        "rp_new_term",
        r"^Append entries request term: ?(\d+) is greater than current: ?(\d+)\. Setting new term$",
        cols={"leader_epoch": (1, "int"), "current_leader_epoch": (2, "int")},
        details={"term": (1, "str"), "current_term": (2, "str")},
    ),
    RaftTemplate(
        "rp_recovered_state",
        r"^Recovered persistent state from kvstore: voted for: (.+), term: (\d+)$",
        cols={"replica_id": (1, "node"), "leader_epoch": (2, "int")},
        details={"voted_for": (1, "node")},
    ),
    RaftTemplate(
        "rp_recovered_state",
        r"^Starting with voted_for (.+) term (\d+) initial_state (.*)$",
        cols={"replica_id": (1, "node"), "leader_epoch": (2, "int")},
        details={"voted_for": (1, "node"), "initial_state": (3, "str")},
    ),
    RaftTemplate(
        "rp_started_raft",
        r"^started raft, log offsets: (\{.*?\}), term: (\d+), configuration: (.*)$",
        cols={"leader_epoch": (2, "int")},
    ),
    # --- candidate side, v24.1+ (pre-vote folded into vote_stm) ---
    RaftTemplate(
        "rp_election_started",
        r"^starting pre-vote leader election, current term: (\d+), leadership transfer: (\w+)$",
        cols={"leader_epoch": (1, "int")},
        details={"leadership_transfer": (2, "bool")},
        consts={"phase": "pre-vote-start", "prevote": "true"},
        hint="redpanda v24.2+",
    ),
    RaftTemplate(
        "rp_election_started",
        r"^pre-vote phase success: (\w+), current term: (\d+), leadership transfer: (\w+)$",
        cols={"leader_epoch": (2, "int")},
        details={"prevote_success": (1, "bool"), "leadership_transfer": (3, "bool")},
        consts={"phase": "pre-vote-result", "prevote": "true"},
        hint="redpanda v24.2+",
    ),
    RaftTemplate(
        "rp_vote_sent",
        PREVOTE_TAG + r"sending vote request to (.+) with timeout of (\d+) ms$",
        cols={"replica_id": (2, "node")},
        details={"prevote": (1, "bool"), "timeout_ms": (3, "str")},
        hint=RP_HINT_V24_1,
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_sent",
        r"^Sending vote request to (.+) with timeout (\S+)$",
        cols={"replica_id": (1, "node")},
        details={"timeout": (2, "str")},
        consts={"prevote": "false"},
        hint="redpanda v22.3.17-v23.3",
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_sent",
        r"^Sending vote request to (" + VNODE + r")$",
        cols={"replica_id": (1, "node")},
        consts={"prevote": "false"},
        hint="redpanda v22.1-v22.3.16",
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_sent",
        r"^Sending prevote request to (.+) from (.+) with tout: (-?\d+)$",
        cols={"replica_id": (1, "node"), "broker_id": (2, "node")},
        details={"deadline_ms": (3, "str")},
        consts={"prevote": "true"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    # self vote: the candidate's own (new) term
    RaftTemplate(
        "rp_vote_sent",
        PREVOTE_TAG + r"(?:V|v)oting for self in term (\d+)$",
        cols={"leader_epoch": (2, "int")},
        details={"prevote": (1, "bool"), "term": (2, "str")},
        consts={"self_vote": "true", "vote_granted": "true"},
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_reply",
        PREVOTE_TAG + r"vote reply from (.+?) - \{term: ?" + NAMED_NUMBER + r", target_node(?:_id)?:? ?(" + VNODE + r"), "
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
    RaftTemplate(
        "rp_vote_reply",
        PREVOTE_TAG + r"vote error from (.+?) - (.*)$",
        cols={"replica_id": (2, "node")},
        details={"prevote": (1, "bool"), "error": (3, "str")},
        hint=RP_HINT_V24_1,
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_reply",
        PREVOTE_TAG + r"vote dispatch to node (.+?) error - (.*)$",
        cols={"replica_id": (2, "node")},
        details={"prevote": (1, "bool"), "error": (3, "str")},
        hint=RP_HINT_V24_1,
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_reply",
        r"^error voting: (.*)$",
        details={"error": (1, "str")},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    # prevote_stm.cc (<= v23.3): "caught up" = pre-vote granted, "is ahead" = refused
    RaftTemplate(
        "rp_vote_reply",
        r"^prevote ack: node (.+) caught up with a candidate$",
        cols={"replica_id": (1, "node")},
        consts={"prevote": "true", "vote_granted": "true"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_reply",
        r"^prevote ack: node (.+) is ahead of a candidate$",
        cols={"replica_id": (1, "node")},
        consts={"prevote": "true", "vote_granted": "false", "reason": "voter_log_ahead"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_reply",
        r"^prevote ack from (.+) timed out$",
        cols={"replica_id": (1, "node")},
        consts={"prevote": "true", "error": "timeout"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_reply",
        r"^prevote ack: node (.+) threw exception (.*)$",
        cols={"replica_id": (1, "node")},
        details={"error": (2, "str")},
        consts={"prevote": "true"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    RaftTemplate(
        "rp_vote_reply",
        r"^prevote ack from (.+) doesn't have value, error: (.*)$",
        cols={"replica_id": (1, "node")},
        details={"error": (2, "str")},
        consts={"prevote": "true"},
        hint=RP_HINT_LE_V23_3,
        candidate_is="broker",
    ),
    RaftTemplate(
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
    RaftTemplate(
        "rp_vote_reply",
        r"^vote acks in term (\d+) from: (.*)$",
        details={"term": (1, "str")},
        consts={"side": "candidate", "vote_granted": "true"},
        candidate_is="broker",
    ),
    # --- election failures ---
    RaftTemplate(
        "rp_vote_failed",
        PREVOTE_TAG + r"(?:V|v)ote failed - received larger term: (\d+)$",
        cols={"leader_epoch": (2, "int")},
        details={"prevote": (1, "bool"), "term": (2, "str")},
        consts={"reason": "received_larger_term"},
    ),
    RaftTemplate(
        "rp_vote_failed",
        PREVOTE_TAG + r"vote failed - node (.+) has log which is more up to date than the current candidate$",
        cols={"replica_id": (2, "node")},
        details={"prevote": (1, "bool")},
        consts={"reason": "voter_log_more_up_to_date"},
        hint=RP_HINT_V24_1,
    ),
    RaftTemplate(
        "rp_vote_failed",
        PREVOTE_TAG + r"(?:V|v)ote failed$",
        details={"prevote": (1, "bool")},
        consts={"reason": "not_enough_votes"},
    ),
    RaftTemplate(
        "rp_vote_failed",
        PREVOTE_TAG + r"(?:N|n)o longer a candidate, ignoring vote replies$",
        details={"prevote": (1, "bool")},
        consts={"reason": "no_longer_candidate"},
    ),
    RaftTemplate(
        "rp_vote_failed",
        PREVOTE_TAG + r"Ignoring successful (pre-)?vote\. Node priority too low: (-?\d+)$",
        details={"prevote": (1, "bool"), "priority": (3, "str"), "prevote_phase": (2, "str")},
        consts={"reason": "priority_too_low"},
    ),
    RaftTemplate(
        "rp_vote_failed",
        r"^Error returned from prevoting process (.*)$",
        details={"error": (1, "str")},
        consts={"prevote": "true", "reason": "prevote_error"},
        hint=RP_HINT_LE_V23_3,
    ),
]

RAFT_TEMPLATES += [
    # --- follower log truncation (consensus.cc do_append_entries; from the source, not in the
    # reference tables). The term is the append-entries request's: details only.
    RaftTemplate(
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
    RaftTemplate(
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
LEADERS_TABLE_TEMPLATE = RaftTemplate(
    "rp_partition_leader_updated",
    r"^updated partition: \{?([^/\s{}]+)/([^\s{}]+)/(\d+)\}? leader: \{term: (\d+), "
    r"current leader: (.+?), previous leader: (.+?), revision: (-?\d+)\}$",
    cols={"leader": (5, "node")},
    details={"term": (4, "str"), "current_leader": (5, "str"), "previous_leader": (6, "str"), "revision": (7, "str")},
)
