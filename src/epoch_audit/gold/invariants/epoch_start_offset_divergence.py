"""``epoch_start_offset_divergence`` (log matching / OffsetForLeaderEpoch consistency): every
replica agrees with the epoch leader on where each epoch starts, and no two replicas hold
batches of different epochs at one offset below both their high watermarks.

Reference start of an epoch: its leader's own leader line, else its newest leader-epoch-checkpoint
entry, else the value most replicas hold (none on a tie). Retention clamping is not divergence.
Inputs: silver.replica_offsets and silver.produce_runs, the epoch leaders of
:mod:`epoch_audit.gold.analysis.leadership`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.gold.analysis.high_watermarks import latest_hw
from epoch_audit.gold.analysis.leadership import epoch_leaders
from epoch_audit.gold.analysis.violation_rows import PARTITION_KEY, to_check
from epoch_audit.gold.context import CheckContext
from epoch_audit.one_partition import read_once

INVARIANT = "epoch_start_offset_divergence"


def reference_starts(ctx: CheckContext) -> DataFrame:
    """Reference start offset of each (partition, epoch): the epoch leader's own leader line, else
    its newest leader-epoch-checkpoint entry, else the value most replicas hold (none on a tie).
    Columns: cluster_id, topic, partition, leader_epoch, epoch_leader, ref, ref_event, ref_time, ref_source."""
    offsets = ctx.silver["replica_offsets"]
    leaders = epoch_leaders(ctx)
    epoch_key = [*PARTITION_KEY, "leader_epoch"]
    line = (
        offsets.filter(F.col("series") == "epoch_start_line")
        .groupBy(*epoch_key, "broker_id")
        .agg(F.min_by(F.struct("value", "event_id", "event_time"), F.col("series_seq")).alias("s"))
    )
    checkpoints = (
        offsets.filter((F.col("series") == "epoch_start_checkpoint") & F.col("is_latest_copy"))
        .groupBy(*epoch_key, "broker_id")
        .agg(F.min(F.struct("value", "event_id", "event_time")).alias("s"))
    )
    dump = (
        offsets.filter(F.col("series") == "epoch_start_dump")
        .groupBy(*epoch_key, "broker_id")
        .agg(F.min(F.struct("value", "event_id", "event_time")).alias("d"))
    )
    # Per replica one value for the majority vote: its checkpoint, else its dump.
    per_replica = checkpoints.join(dump, [*epoch_key, "broker_id"], "full").select(
        *epoch_key, "broker_id", F.coalesce("s", "d").alias("v")
    )
    votes = per_replica.groupBy(*epoch_key, F.col("v.value").alias("value")).agg(
        F.count(F.lit(1)).alias("n"),
        F.min_by(F.struct(F.col("v.event_id"), F.col("v.event_time")), F.col("broker_id")).alias("ev"),
    )
    per_epoch = Window.partitionBy(*epoch_key)
    majority = (
        votes.withColumn("mx", F.max("n").over(per_epoch))
        .filter(F.col("n") == F.col("mx"))
        .withColumn("ties", F.count(F.lit(1)).over(per_epoch))
        .filter(F.col("ties") == 1)
        .select(
            *epoch_key,
            F.struct("value", F.col("ev.event_id").alias("event_id"), F.col("ev.event_time").alias("event_time")).alias(
                "maj"
            ),
        )
    )
    epochs = per_replica.select(*epoch_key).union(line.select(*epoch_key)).distinct()
    candidates = (
        epochs.join(F.broadcast(leaders), epoch_key, "left")
        .join(
            line.withColumnRenamed("broker_id", "epoch_leader").withColumnRenamed("s", "ln"),
            [*epoch_key, "epoch_leader"],
            "left",
        )
        .join(
            checkpoints.withColumnRenamed("broker_id", "epoch_leader").withColumnRenamed("s", "cp"),
            [*epoch_key, "epoch_leader"],
            "left",
        )
        .join(majority, epoch_key, "left")
    )
    source = (
        F.when(F.col("ln").isNotNull(), F.lit("leader line"))
        .when(F.col("cp").isNotNull(), F.lit("leader checkpoint"))
        .when(F.col("maj").isNotNull(), F.lit("majority"))
    )
    ref = F.coalesce("ln", "cp", "maj")
    return (
        candidates.withColumns({"r": ref, "ref_source": source})
        .filter(F.col("r").isNotNull())
        .select(
            *epoch_key,
            "epoch_leader",
            F.col("r.value").alias("ref"),
            F.col("r.event_id").alias("ref_event"),
            F.col("r.event_time").alias("ref_time"),
            "ref_source",
        )
    )


def _start_rule(ctx: CheckContext, refs: DataFrame) -> DataFrame:
    """Each replica whose leader-epoch-checkpoint (newest copy) or first dumped batch of epoch e
    gives a start other than the reference: one row per (partition, epoch, replica). Retention
    clamping is not divergence: a replica's earliest checkpoint entry that equals one of its own
    log start offsets and lies above the reference is consistent (reference §4.3)."""
    offsets = ctx.silver["replica_offsets"]
    epoch_key = [*PARTITION_KEY, "leader_epoch"]
    recorded = offsets.filter(
        ((F.col("series") == "epoch_start_checkpoint") & F.col("is_latest_copy"))
        | (F.col("series") == "epoch_start_dump")
    ).select(*epoch_key, "broker_id", "series", "value", "event_id", "event_time", "is_earliest_entry")
    log_starts = (
        offsets.filter(F.col("series") == "log_start")
        .select(*PARTITION_KEY, "broker_id", F.col("value").alias("ls_value"))
        .distinct()
        .withColumn("is_ls", F.lit(True))
    )
    diverging = (
        recorded.join(F.broadcast(refs), epoch_key)
        .filter(F.col("value") != F.col("ref"))
        .join(log_starts, [*PARTITION_KEY, "broker_id"], "left")
    )
    # A replica may have several log-start values: clamped if any equals the entry.
    diverging = diverging.withColumn(
        "clamp_hit", F.coalesce(F.col("is_ls") & (F.col("ls_value") == F.col("value")), F.lit(False))
    )
    diverging = diverging.groupBy(
        *epoch_key,
        "broker_id",
        "series",
        "value",
        "event_id",
        "event_time",
        "is_earliest_entry",
        "ref",
        "ref_event",
        "ref_time",
        "ref_source",
        "epoch_leader",
    ).agg(F.max("clamp_hit").alias("has_ls"))
    clamped = F.coalesce(F.col("is_earliest_entry"), F.lit(False)) & (F.col("value") > F.col("ref")) & F.col("has_ls")
    diverging = diverging.filter(~clamped)
    per_replica = diverging.groupBy(*epoch_key, "broker_id", "ref", "ref_event", "ref_time", "ref_source").agg(
        F.sort_array(F.collect_list(F.struct("series", "event_id", "value", "event_time"))).alias("d")
    )
    return to_check(
        per_replica,
        INVARIANT,
        "confirmed",
        F.col("broker_id"),
        F.col("leader_epoch"),
        F.lit(None),
        # a checkpoint read at collection time has no time of its own: the reference's then
        F.coalesce(F.col("d")[0]["event_time"], F.col("ref_time")),
        F.concat(F.transform("d", lambda x: x["event_id"]), F.array(F.col("ref_event"))),
        F.format_string(
            "Replica %d records epoch %d of %s-%d starting at offset %d (%s %s) but the epoch starts at %d per "
            "the %s (%s).",
            F.col("broker_id"),
            F.col("leader_epoch"),
            F.col("topic"),
            F.col("partition"),
            F.col("d")[0]["value"],
            F.col("d")[0]["series"],
            F.col("d")[0]["event_id"],
            F.col("ref"),
            F.col("ref_source"),
            F.col("ref_event"),
        ),
    )


def _same_offset_rule(ctx: CheckContext, refs: DataFrame) -> DataFrame:
    """Two replicas never hold batches of different epochs at the same offset below the lower of
    their latest recorded HWs. broker_id = the replica whose epoch disagrees with the epoch the
    leaders' start offsets put at that offset (else the one holding the lower epoch). One row per
    (partition, replica, its epoch)."""
    runs = ctx.silver["produce_runs"]
    latest = read_once(latest_hw(ctx))  # one side of each pair, then the other
    left_runs = runs.alias("x")
    right_runs = runs.alias("y")
    pairs = left_runs.join(
        right_runs,
        [F.col(f"x.{c}") == F.col(f"y.{c}") for c in PARTITION_KEY]
        + [
            F.col("x.broker_id") < F.col("y.broker_id"),
            F.col("x.leader_epoch") != F.col("y.leader_epoch"),
            F.greatest("x.first_offset", "y.first_offset") <= F.least("x.last_offset", "y.last_offset"),
        ],
    ).select(
        *[F.col(f"x.{c}").alias(c) for c in PARTITION_KEY],
        F.struct(
            *[F.col(f"x.{c}").alias(c) for c in ("broker_id", "leader_epoch", "first_event_id", "first_time")]
        ).alias("rx"),
        F.struct(
            *[F.col(f"y.{c}").alias(c) for c in ("broker_id", "leader_epoch", "first_event_id", "first_time")]
        ).alias("ry"),
        F.greatest("x.first_offset", "y.first_offset").alias("off"),
    )
    left_hw = latest.withColumnRenamed("broker_id", "hx_b").withColumnRenamed("hw", "hw_x")
    right_hw = latest.withColumnRenamed("broker_id", "hy_b").withColumnRenamed("hw", "hw_y")
    pairs = (
        pairs.join(left_hw, [*PARTITION_KEY])
        .filter(F.col("hx_b") == F.col("rx.broker_id"))
        .join(right_hw, [*PARTITION_KEY])
        .filter(F.col("hy_b") == F.col("ry.broker_id"))
        .filter(F.col("off") < F.least("hw_x", "hw_y"))
        # Deterministic pair id (runs are unique by their first batch).
        .withColumn("pid", F.concat_ws("|", "rx.first_event_id", "ry.first_event_id"))
    )
    # Epoch the leaders put at offset o: the highest epoch whose reference start is <= o.
    epoch_at_offset = (
        pairs.select("pid", *PARTITION_KEY, "off")
        .join(F.broadcast(refs.select(*PARTITION_KEY, "leader_epoch", "ref")), PARTITION_KEY)
        .filter(F.col("ref") <= F.col("off"))
        .groupBy("pid")
        .agg(F.max("leader_epoch").alias("ce"))
    )
    pairs = pairs.join(epoch_at_offset, "pid", "left")
    left_epoch, right_epoch = F.col("rx.leader_epoch"), F.col("ry.leader_epoch")
    flag_y = (
        F.when(F.col("ce").isNotNull() & (left_epoch == F.col("ce")) & (right_epoch != F.col("ce")), True)
        .when(F.col("ce").isNotNull() & (right_epoch == F.col("ce")) & (left_epoch != F.col("ce")), False)
        .otherwise(right_epoch < left_epoch)
    )
    pairs = pairs.withColumns({
        "fl": F.when(flag_y, F.col("ry")).otherwise(F.col("rx")),
        "ot": F.when(flag_y, F.col("rx")).otherwise(F.col("ry")),
    })
    per_replica = pairs.groupBy(
        *PARTITION_KEY, F.col("fl.broker_id").alias("broker_id"), F.col("fl.leader_epoch").alias("leader_epoch")
    ).agg(
        F.min(
            F.struct(
                "off",
                F.col("ot.broker_id").alias("ob"),
                F.col("ot.leader_epoch").alias("oe"),
                F.col("fl.first_event_id").alias("fe"),
                F.col("ot.first_event_id").alias("oev"),
                F.col("fl.first_time").alias("ft"),
            )
        ).alias("m")
    )
    return to_check(
        per_replica,
        INVARIANT,
        "confirmed",
        F.col("broker_id"),
        F.col("leader_epoch"),
        F.col("m.oe"),
        F.col("m.ft"),
        F.array(F.col("m.fe"), F.col("m.oev")),
        F.format_string(
            "Replicas %d and %d of %s-%d hold batches of epochs %d and %d at offset %d, below both replicas' "
            "high watermarks (runs %s, %s).",
            F.col("broker_id"),
            F.col("m.ob"),
            F.col("topic"),
            F.col("partition"),
            F.col("leader_epoch"),
            F.col("m.oe"),
            F.col("m.off"),
            F.col("m.fe"),
            F.col("m.oev"),
        ),
    )


def check(ctx: CheckContext) -> DataFrame:
    """Replicas that disagree with the reference start of an epoch, then replicas holding batches
    of different epochs at one offset below both their high watermarks."""
    # read by both rules: kept once by the context, released with it when the stage ends
    refs = ctx.shared(reference_starts, checks=2)
    return _start_rule(ctx, refs).unionByName(_same_offset_rule(ctx, refs))
