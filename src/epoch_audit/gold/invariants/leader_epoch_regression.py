"""``leader_epoch_regression``: the LE a broker holds for a partition never decreases in its own
log order (Kafka accepted LeaderAndIsr / start lines; Redpanda own current-term lines), and the
controller's successive leader changes have strictly increasing LE.

Broker series: consecutive held epochs in own order, never across a local log deletion or a
topic-id change (a recreated topic restarts at LE 0). broker_id = that broker, leader_epoch =
the lower LE, expected_epoch = the higher one it already held. Timeline: consecutive leader
changes by decision order; broker_id = the leader named by the lower-LE decision. Equal LEs are
not regressions (a leader change at an equal LE is ``two_leaders_same_epoch``'s).
Inputs: silver.broker_leader_epochs and silver.partition_timeline.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.gold.analysis.violation_rows import PARTITION_KEY, backward_steps, to_check
from epoch_audit.gold.context import CheckContext

INVARIANT = "leader_epoch_regression"


def _broker_regressions(ctx: CheckContext) -> DataFrame:
    key = ["cluster_id", "broker_id", "topic", "partition", "gen"]
    held = ctx.silver["broker_leader_epochs"].filter(F.col("row_kind") == "epoch")
    in_own_order = Window.partitionBy(*key).orderBy("seq")
    regressions = backward_steps(
        held, in_own_order, "leader_epoch", {"le": "leader_epoch", "tid": "tid", "id": "event_id", "type": "event_type"}
    )
    return to_check(
        regressions,
        INVARIANT,
        "confirmed",
        F.col("broker_id"),
        F.col("leader_epoch"),
        F.col("p_le"),
        F.col("event_time"),
        F.array(F.col("event_id"), F.col("p_id")),
        F.format_string(
            "Broker %d holds %s-%d at leader epoch %d (%s %s) after already holding epoch %d (%s %s) "
            "in its own log order.",
            F.col("broker_id"),
            F.col("topic"),
            F.col("partition"),
            F.col("leader_epoch"),
            F.col("event_type"),
            F.col("event_id"),
            F.col("p_le"),
            F.col("p_type"),
            F.col("p_id"),
        ),
    )


def _timeline_regressions(ctx: CheckContext) -> DataFrame:
    timeline = ctx.silver["partition_timeline"]
    key = list(PARTITION_KEY) + (["topic_id"] if "topic_id" in timeline.columns else [])
    by_decision = Window.partitionBy(*key).orderBy("decision_seq")
    regressions = (
        timeline.filter(F.col("is_leader_change"))
        .withColumns({
            f"p_{name}": F.lag(column).over(by_decision)
            for name, column in (("le", "leader_epoch"), ("id", "event_id"), ("leader", "leader"))
        })
        .filter(F.col("p_le").isNotNull() & (F.col("leader_epoch") < F.col("p_le")))
    )
    return to_check(
        regressions,
        INVARIANT,
        "confirmed",
        F.when(F.col("leader") >= 0, F.col("leader")),
        F.col("leader_epoch"),
        F.col("p_le"),
        F.col("event_time"),
        F.array(F.col("event_id"), F.col("p_id")),
        F.format_string(
            "Controller decision %s makes broker %d leader of %s-%d at leader epoch %d, below epoch %d "
            "of the previous leader change %s (leader %d).",
            F.col("event_id"),
            F.col("leader"),
            F.col("topic"),
            F.col("partition"),
            F.col("leader_epoch"),
            F.col("p_le"),
            F.col("p_id"),
            F.col("p_leader"),
        ),
    )


def check(ctx: CheckContext) -> DataFrame:
    """Regressions of a broker's held LE series, then of the controller's leader changes."""
    return _broker_regressions(ctx).unionByName(_timeline_regressions(ctx))
