"""``high_watermark_regression``: per (broker, partition) the HW a broker records never moves
backwards in its own order.

Checked as two separate series that are never mixed: the "high watermark N" of its own leader
lines (own log order) and its replication-offset-checkpoint copies (by copy suffix; the file lags
the logged value). Series of different brokers are never compared. A partition absent from a copy
has no value there; a series restarts only when the topic id changes. Severity ``warning`` (not
the registry's ``error``) when the logs show Redpanda's expected acks=0/1 majority-loss
condition. Reads request-log PRODUCE traffic (the acks): :func:`carry` is what a nightly run keeps
of it.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.gold.analysis.high_watermarks import HW_SERIES
from epoch_audit.gold.analysis.horizons import before_carry_horizons
from epoch_audit.gold.analysis.violation_rows import PARTITION_KEY, backward_steps, to_check
from epoch_audit.gold.context import CheckContext

INVARIANT = "high_watermark_regression"
# A Redpanda leader stepping down: without one the majority-loss condition cannot hold (registry ``asks``).
MAJORITY_LOSS_TYPES = ("rp_step_down",)
# acks=0/1 in a request-log PRODUCE (JSON body) or a parser's details map: `"acks"\s*:\s*[01]\b` or
# `\backs=[01]\b` (ACKS01_PLAIN), written to begin with the literal "acks", the lookbehinds restoring
# what comes before it. Java's regex then skips through a text by Boyer-Moore instead of trying both
# branches at every character: the carry searches every produce's raw text (at 10^7 lines a quarter
# of the check stage's CPU went to this search; three times faster in this form).
ACKS01_PLAIN = r'"acks"\s*:\s*[01]\b|\backs=[01]\b'
_ACKS01 = r'acks(?:(?<="acks)"\s*:\s*[01]\b|(?<=\backs)=[01]\b)'


def rp_acks_majority_loss(events: DataFrame) -> DataFrame:
    """Partitions where the logs show Redpanda's expected HW regression condition: Redpanda logs
    for the partition, produces with acks=0/1, and a leader stepping down because it lost its
    heartbeat majority (``[heartbeats_majority] Stepping down``)."""
    redpanda = events.filter(F.col("log_kind") == "redpanda").select(*PARTITION_KEY).distinct()
    acks01 = (
        events.filter(F.col("event_type") == "request_produce")
        .filter(F.col("details")["acks"].isin("0", "1") | F.col("raw").rlike(_ACKS01))
        .select(*PARTITION_KEY)
        .distinct()
    )
    majority_loss = (
        events.filter(F.col("event_type").isin(*MAJORITY_LOSS_TYPES))
        .filter(F.col("raw").contains("heartbeats_majority"))
        .select(*PARTITION_KEY)
        .distinct()
    )
    return (
        redpanda.join(acks01, PARTITION_KEY).join(majority_loss, PARTITION_KEY).withColumn("rp_expected", F.lit(True))
    )


def carry(ctx: CheckContext) -> DataFrame:
    """Traffic (event_id) ``rp_acks_majority_loss`` still needs from before a nightly run's horizon
    (``epoch_audit.gold.carry``): one acks=0/1 produce per partition among those before the horizon
    (it only asks whether one exists)."""
    # only before the next horizon: a produce after it is read from bronze again (and the search
    # through every produce's raw text was most of this carry's time)
    produces = before_carry_horizons(ctx, ctx.events.filter(F.col("event_type") == "request_produce"))
    acks01 = produces.filter(F.col("details")["acks"].isin("0", "1") | F.col("raw").rlike(_ACKS01))
    return acks01.groupBy(*PARTITION_KEY).agg(F.min("event_id").alias("event_id")).select("event_id")


def check(ctx: CheckContext) -> DataFrame:
    """One row per backward step of a broker's HW series."""
    recorded = ctx.silver["replica_offsets"].filter(F.col("series").isin(*HW_SERIES))
    in_series = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series").orderBy("series_seq")
    regressions = backward_steps(
        recorded, in_series, "value", {"value": "value", "tid": "tid", "id": "event_id", "le": "leader_epoch"}
    )
    if set(MAJORITY_LOSS_TYPES) <= ctx.absent_types:
        # No step-down, no expected regression: the acks=0/1 search through every produce's raw
        # text (most of this check's time over a Kafka cluster) would find none to join.
        regressions = regressions.withColumn("rp_expected", F.lit(None).cast("boolean"))
    else:
        regressions = regressions.join(F.broadcast(rp_acks_majority_loss(ctx.events)), PARTITION_KEY, "left")
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
            "Broker %d recorded high watermark %d for %s-%d (%s, %s) after %d (%s) in the same series.",
            F.col("broker_id"),
            F.col("value"),
            F.col("topic"),
            F.col("partition"),
            F.col("series"),
            F.col("event_id"),
            F.col("p_value"),
            F.col("p_id"),
        ),
        severity=F.when(F.col("rp_expected"), F.lit("warning")),
    )
