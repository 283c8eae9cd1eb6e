"""Silver suite: the timelines are ordered and consistent.

``silver/partition_timeline`` (one row per controller decision; order = ``decision_seq`` within
(cluster, topic, partition, topic_id, source family))
- keys non-null (topic, partition, decision_seq, event_id);
- LE never decreases from one decision to the next, and strictly increases across a leader change;
- PE strictly increases from one decision to the next (where both are known);
- at most one leader per (partition, LE).

``silver/broker_registrations``
- keys non-null (broker_id, commit_offset, event_id; a row from a KRaft snapshot has no
  metadata offset: the snapshot states the broker as of its last offset, ``commit_offset``);
- a broker's epoch strictly increases from one registration (incarnation) to the next;
- a broker's state intervals ``[commit_offset, next_commit_offset)`` — hence its fenced intervals —
  never overlap and never run backwards.

The LE and one-leader rules are also protocol invariants (``leader_epoch_regression``,
``two_leaders_same_epoch``): a real cluster may break them, and then the checker must say so. So
when ``gold/violations`` exists, an offending decision that a violation of those invariants already
reports (same cluster, topic, partition and one of the two LEs) is explained, not unexpected. The
PE rule too: two controllers that decide from the same state (a split brain) write the same LE and
the same PE, which gold reports as ``two_leaders_same_epoch``.
What stays unexpected is a broken timeline or a violation the checker missed.
"""

from __future__ import annotations

import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation

from epoch_audit.validate.base import TableSuite, ValidationSettings, offending_rows, view
from epoch_audit.validate.scope import silver_clusters_of_run

GOLD = "gold/violations"
EPOCH_INVARIANTS = ("leader_epoch_regression", "two_leaders_same_epoch")

_DECISIONS = (
    "WITH t AS (SELECT cluster_id, topic, `partition`, topic_id, decision_seq, leader, leader_epoch, "
    "partition_epoch, ARRAY_SORT(isr) AS isr, event_id, "
    "CASE WHEN source LIKE 'zk%' THEN 'zk' ELSE source END AS family "
    "FROM {{batch}} WHERE {cond}), "
    "o AS (SELECT *, LAG(leader) OVER w AS prev_leader, LAG({col}) OVER w AS prev_value, "
    "LAG(isr) OVER w AS prev_isr, "
    "LAG(leader_epoch) OVER w AS prev_leader_epoch, LAG(event_id) OVER w AS prev_event_id FROM t "
    "WINDOW w AS (PARTITION BY cluster_id, topic, `partition`, topic_id, family ORDER BY decision_seq, event_id)) "
)


def _explained(settings: ValidationSettings, alias: str, epochs: tuple[str, ...]) -> str:
    """``AND NOT EXISTS (gold violation of an epoch invariant on that partition and epoch)``, or ''."""
    if GOLD not in settings.views:
        return ""
    ids = ", ".join(f"'{i}'" for i in EPOCH_INVARIANTS)
    return (
        f" AND NOT EXISTS (SELECT 1 FROM {view(GOLD)} g WHERE g.invariant IN ({ids}) "
        f"AND g.cluster_id <=> {alias}.cluster_id AND g.topic <=> {alias}.topic "
        f"AND g.`partition` <=> {alias}.`partition` AND g.leader_epoch IN ({', '.join(epochs)}))"
    )


def _keys(alias: str) -> str:
    return ", ".join(
        f"CAST({alias}.{c} AS STRING) AS `{c.strip('`')}`"
        for c in ("cluster_id", "topic", "`partition`", "topic_id", "decision_seq", "event_id")
    )


def leader_epoch_query(settings: ValidationSettings) -> str:
    """Decisions whose LE drops, or does not rise across a leader change."""
    return (
        _DECISIONS.format(cond="leader_epoch IS NOT NULL", col="leader_epoch")
        + f"SELECT {_keys('o')}, CAST(o.prev_event_id AS STRING) AS prev_event_id, "
        "CAST(o.prev_value AS STRING) AS prev_leader_epoch, CAST(o.leader_epoch AS STRING) AS leader_epoch, "
        "CAST(o.prev_leader AS STRING) AS prev_leader, CAST(o.leader AS STRING) AS leader FROM o "
        "WHERE o.prev_value IS NOT NULL AND (o.leader_epoch < o.prev_value "
        "OR (NOT (o.leader <=> o.prev_leader) AND o.leader_epoch <= o.prev_value))"
        + _explained(settings, "o", ("o.leader_epoch", "o.prev_value"))
    )


def partition_epoch_query(settings: ValidationSettings) -> str:
    """Decisions whose PE does not rise above the previous decision's.

    Two controllers deciding from the same state (a split brain: ZK's old and new controller) both
    bump LE and PE once, so their decisions share both epochs: gold reports the pair as
    two_leaders_same_epoch, and the PE that did not rise is that fault, explained the same way.

    A decision that repeats the previous one exactly (leader, LE, PE and ISR) is the same state
    logged twice, not a new one: a real ZooKeeper-mode controller logs the state it has just elected
    again, "after removing replica N from the ISR as part of transition to OfflineReplica", when that
    removal changed nothing (no ZooKeeper write, so the same ZkVersion; seen in the Kafka lab, 3.9).
    """
    return (
        _DECISIONS.format(cond="partition_epoch IS NOT NULL", col="partition_epoch")
        + f"SELECT {_keys('o')}, CAST(o.prev_event_id AS STRING) AS prev_event_id, "
        "CAST(o.prev_value AS STRING) AS prev_partition_epoch, "
        "CAST(o.partition_epoch AS STRING) AS partition_epoch, "
        "CAST(o.prev_leader_epoch AS STRING) AS prev_leader_epoch, CAST(o.leader_epoch AS STRING) AS leader_epoch "
        "FROM o WHERE o.prev_value IS NOT NULL AND o.partition_epoch <= o.prev_value "
        "AND NOT (o.partition_epoch = o.prev_value AND o.leader <=> o.prev_leader "
        "AND o.leader_epoch <=> o.prev_leader_epoch AND o.isr <=> o.prev_isr)"
        + _explained(settings, "o", ("o.leader_epoch", "o.prev_leader_epoch"))
    )


def one_leader_query(settings: ValidationSettings) -> str:
    """(partition, LE) pairs with more than one leader."""
    return (
        "WITH o AS (SELECT cluster_id, topic, `partition`, topic_id, leader_epoch, "
        "CASE WHEN source LIKE 'zk%' THEN 'zk' ELSE source END AS family, "
        "COUNT(DISTINCT leader) AS n_leaders, "
        "CONCAT_WS(',', SORT_ARRAY(COLLECT_SET(CAST(leader AS STRING)))) AS leaders, "
        "CONCAT_WS(',', SLICE(SORT_ARRAY(COLLECT_SET(event_id)), 1, 5)) AS event_ids "
        "FROM {batch} WHERE leader_epoch IS NOT NULL AND leader IS NOT NULL AND leader >= 0 "
        "GROUP BY cluster_id, topic, `partition`, topic_id, leader_epoch, "
        "CASE WHEN source LIKE 'zk%' THEN 'zk' ELSE source END) "
        "SELECT CAST(o.cluster_id AS STRING) AS cluster_id, CAST(o.topic AS STRING) AS topic, "
        "CAST(o.`partition` AS STRING) AS `partition`, CAST(o.topic_id AS STRING) AS topic_id, "
        "CAST(o.leader_epoch AS STRING) AS leader_epoch, o.leaders, o.event_ids FROM o WHERE o.n_leaders > 1"
        + _explained(settings, "o", ("o.leader_epoch",))
    )


def timeline_expectations(settings: ValidationSettings) -> list[Expectation]:
    """The silver/partition_timeline epoch_audit.validate."""
    return [
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("topic", "partition", "decision_seq", "event_id")],
        offending_rows(
            "leader_epoch_increases",
            leader_epoch_query(settings),
            "per partition, LE never decreases and strictly increases across leader changes "
            "(unless gold reports it as leader_epoch_regression / two_leaders_same_epoch)",
        ),
        offending_rows(
            "partition_epoch_increases",
            partition_epoch_query(settings),
            "per partition, PE strictly increases "
            "(unless gold reports either decision's LE as leader_epoch_regression / two_leaders_same_epoch)",
        ),
        offending_rows(
            "one_leader_per_epoch",
            one_leader_query(settings),
            "at most one leader per (partition, LE) (unless gold reports it as two_leaders_same_epoch)",
        ),
    ]


BROKER_EPOCH_QUERY = (
    "WITH r AS (SELECT DISTINCT cluster_id, broker_id, registered_at_offset, broker_epoch, registration_event_id "
    "FROM {batch} WHERE registered_at_offset IS NOT NULL AND broker_epoch IS NOT NULL), "
    "o AS (SELECT *, LAG(broker_epoch) OVER w AS prev_epoch, LAG(registration_event_id) OVER w AS prev_event_id "
    "FROM r WINDOW w AS (PARTITION BY cluster_id, broker_id ORDER BY registered_at_offset, broker_epoch)) "
    "SELECT CAST(cluster_id AS STRING) AS cluster_id, CAST(broker_id AS STRING) AS broker_id, "
    "CAST(registration_event_id AS STRING) AS event_id, CAST(prev_event_id AS STRING) AS prev_event_id, "
    "CAST(prev_epoch AS STRING) AS prev_broker_epoch, CAST(broker_epoch AS STRING) AS broker_epoch "
    "FROM o WHERE prev_epoch IS NOT NULL AND broker_epoch <= prev_epoch"
)

INTERVAL_QUERY = (
    "WITH o AS (SELECT cluster_id, broker_id, event_id, fenced, commit_offset, next_commit_offset, "
    "LAG(next_commit_offset) OVER w AS prev_end, LAG(commit_offset) OVER w AS prev_start, "
    "LAG(event_id) OVER w AS prev_event_id, ROW_NUMBER() OVER w AS rn FROM {batch} "
    "WHERE commit_offset IS NOT NULL "
    "WINDOW w AS (PARTITION BY cluster_id, broker_id ORDER BY commit_offset, metadata_offset, event_id)) "
    "SELECT CAST(cluster_id AS STRING) AS cluster_id, CAST(broker_id AS STRING) AS broker_id, "
    "CAST(event_id AS STRING) AS event_id, CAST(prev_event_id AS STRING) AS prev_event_id, "
    "CAST(fenced AS STRING) AS fenced, CAST(commit_offset AS STRING) AS start_offset, "
    "CAST(next_commit_offset AS STRING) AS end_offset, CAST(prev_end AS STRING) AS prev_end_offset FROM o "
    "WHERE next_commit_offset < commit_offset "
    "OR (rn > 1 AND (prev_end IS NULL OR prev_end > commit_offset))"
)


def registration_expectations(settings: ValidationSettings) -> list[Expectation]:
    """The silver/broker_registrations epoch_audit.validate."""
    del settings
    return [
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("broker_id", "commit_offset", "event_id")],
        offending_rows(
            "broker_epoch_increases",
            BROKER_EPOCH_QUERY,
            "a broker's epoch strictly increases from one registration to the next",
        ),
        offending_rows(
            "state_intervals_do_not_overlap",
            INTERVAL_QUERY,
            "a broker's state (and fenced) intervals [commit_offset, next_commit_offset) never overlap",
        ),
    ]


SUITES: list[TableSuite] = [
    TableSuite(
        "silver",
        "silver/partition_timeline",
        timeline_expectations,
        key_columns=("event_id",),
        this_run=silver_clusters_of_run,
    ),
    TableSuite(
        "silver", "silver/broker_registrations", registration_expectations, key_columns=("event_id",),
        this_run=silver_clusters_of_run,
    ),
]
