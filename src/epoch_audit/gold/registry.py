"""The invariant registry: every check the gold stage runs, one line each.

Adding an invariant: write ``epoch_audit/gold/invariants/<id>.py`` (the protocol rule in its
docstring, a pure ``check(ctx)``), add its line to REGISTRY, its test file
``tests/unit/invariants/test_<id>.py`` and its section ``### `<id>``` in docs/invariants.md
(tests/unit/test_registry.py checks all four). A check that reads request-log FETCH / PRODUCE
events (``epoch_audit.contracts.events.TRAFFIC_TYPES``) also registers ``carry``: the ones it
still needs from before a nightly run's horizon (``epoch_audit.gold.carry``;
tests/differential/test_carry.py proves the windowed answers equal the whole ones).

Severity comes from the registry line: a check leaves ``severity`` null and :func:`violations_of`
puts the line's. A check may put its own on rows where the rule itself says so
(``high_watermark_regression``: ``warning`` under Redpanda's expected acks=0/1 condition).

A check whose every answer stands on events of a few types (a ZooKeeper broker's StopReplica, a
KRaft metadata log's partition records) names them in ``needs``: over events holding none of them it
finds nothing, so the check stage does not run it (:func:`can_find`; a KRaft or Redpanda cluster
never receives a StopReplica, a ZooKeeper one has no metadata log). tests/unit/test_registry.py
holds every ``needs`` to the reference model's answers on generated histories.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from epoch_audit.contracts.violations import CHECK_COLUMNS, CHECK_SCHEMA
from epoch_audit.gold.analysis.controller_requests import (
    LEADER_AND_ISR_ACCEPTANCE_TYPES,
    STOP_REPLICA_ACCEPTANCE_TYPES,
)
from epoch_audit.gold.analysis.isr_joins import UNANSWERED_FETCH, unanswered_fetches
from epoch_audit.gold.context import CheckContext
from epoch_audit.gold.invariants import (
    epoch_start_offset_divergence,
    fenced_replica_in_isr,
    high_watermark_regression,
    last_replica_fenced_in_isr,
    leader_epoch_regression,
    produce_epoch_mismatch_accepted,
    stale_broker_epoch_isr_join,
    stale_controller_epoch_accepted,
    stale_stop_replica_accepted,
    two_leaders_same_epoch,
    write_accepted_by_fenced_leader,
)
from epoch_audit.silver.partition_timeline import KRAFT_PARTITION_TYPES

Check = Callable[[CheckContext], DataFrame]


@dataclass(frozen=True)
class InvariantSpec:
    """One invariant: its id (the ``invariant`` value of its rows), default severity, the rule in
    one line, whether it reads request-log traffic, its check, its carry (traffic it still needs
    from before a nightly run's horizon; None when it reads no traffic), ``needs``: event types
    of which the events must hold one for the check to find anything (empty: it may always), and
    ``asks``: event types whose absence (``CheckContext.absent_types``) lets the check leave out a part
    of its work whose answer it already knows (its rows are the same either way)."""

    id: str
    severity: str
    rule: str
    reads_traffic: bool
    check: Check
    carry: Check | None = None
    needs: tuple[str, ...] = ()
    asks: tuple[str, ...] = ()


REGISTRY: tuple[InvariantSpec, ...] = (
    InvariantSpec(
        "stale_stop_replica_accepted",
        "error",
        "A broker refuses a StopReplica whose leader epoch is below its current one (KIP-570).",
        False,
        stale_stop_replica_accepted.check,
        needs=STOP_REPLICA_ACCEPTANCE_TYPES,
    ),
    InvariantSpec(
        "stale_controller_epoch_accepted",
        "error",
        "A broker refuses LeaderAndIsr / StopReplica from a controller epoch below one it has seen.",
        False,
        stale_controller_epoch_accepted.check,
        needs=(*STOP_REPLICA_ACCEPTANCE_TYPES, *LEADER_AND_ISR_ACCEPTANCE_TYPES),
    ),
    InvariantSpec(
        "stale_broker_epoch_isr_join",
        "error",
        "A replica joins the ISR only on evidence from its current broker incarnation (KIP-903).",
        True,
        stale_broker_epoch_isr_join.check,
        stale_broker_epoch_isr_join.carry,
        needs=KRAFT_PARTITION_TYPES,
        asks=(UNANSWERED_FETCH,),
    ),
    InvariantSpec(
        "fenced_replica_in_isr",
        "error",
        "The ISR at a commit point holds no fenced or shutting-down broker (KIP-903).",
        False,
        fenced_replica_in_isr.check,
    ),
    InvariantSpec(
        "last_replica_fenced_in_isr",
        "warning",
        "The only ISR member at a commit point is fenced or shutting down (data-loss risk).",
        False,
        last_replica_fenced_in_isr.check,
    ),
    InvariantSpec(
        "leader_epoch_regression",
        "error",
        "The leader epoch a broker holds, and the controller's leader changes, never go backwards.",
        False,
        leader_epoch_regression.check,
    ),
    InvariantSpec(
        "two_leaders_same_epoch",
        "error",
        "At most one broker leads a partition in a given leader epoch / term (election safety).",
        False,
        two_leaders_same_epoch.check,
    ),
    InvariantSpec(
        "write_accepted_by_fenced_leader",
        "error",
        "Only the current leader appends produce data (KIP-359 spirit).",
        True,
        write_accepted_by_fenced_leader.check,
        write_accepted_by_fenced_leader.carry,
    ),
    InvariantSpec(
        "produce_epoch_mismatch_accepted",
        "error",
        "An accepted produce carrying CurrentLeaderEpoch matched the leader's epoch (KIP-359).",
        True,
        produce_epoch_mismatch_accepted.check,
        produce_epoch_mismatch_accepted.carry,
    ),
    InvariantSpec(
        "high_watermark_regression",
        "error",
        "The high watermark a broker records never moves backwards in its own order.",
        True,
        high_watermark_regression.check,
        high_watermark_regression.carry,
        asks=high_watermark_regression.MAJORITY_LOSS_TYPES,
    ),
    InvariantSpec(
        "epoch_start_offset_divergence",
        "error",
        "Replicas agree with the epoch's leader on where each epoch starts (log matching).",
        False,
        epoch_start_offset_divergence.check,
    ),
)

# The kinds of traffic event ``asks`` names that are not event types, each with the rows it names.
ASKED_KINDS: dict[str, Callable[[DataFrame], DataFrame]] = {UNANSWERED_FETCH: unanswered_fetches}

SPECS: dict[str, InvariantSpec] = {spec.id: spec for spec in REGISTRY}


def can_find(spec: InvariantSpec, event_types: set[str]) -> bool:
    """Whether ``spec``'s check may find a violation in events of ``event_types``."""
    return not spec.needs or not event_types.isdisjoint(spec.needs)


def violations_of(spec: InvariantSpec, ctx: CheckContext) -> DataFrame:
    """One invariant's rows (CHECK_COLUMNS), with the registry's severity where its check left none."""
    rows = spec.check(ctx)
    return rows.withColumn("severity", F.coalesce(F.col("severity"), F.lit(spec.severity))).select(*CHECK_COLUMNS)


def found_violations(ctx: CheckContext, specs: tuple[InvariantSpec, ...] = REGISTRY) -> DataFrame:
    """Every registered check's rows over ``ctx``, unioned (CHECK_COLUMNS)."""
    empty = ctx.events.sparkSession.createDataFrame([], CHECK_SCHEMA)
    return reduce(DataFrame.unionByName, [violations_of(spec, ctx) for spec in specs], empty)
