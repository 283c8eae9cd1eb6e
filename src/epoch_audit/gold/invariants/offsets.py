"""Offset invariants: high watermarks a broker records and the start offset of every epoch.

Ids: ``high_watermark_regression``, ``epoch_start_offset_divergence`` (spec ``invariants.md``).
Inputs: ``replica_offsets`` and ``produce_runs`` (``epoch_audit.silver.broker_views``), the epoch leaders
of ``epoch_audit.gold.invariants.leadership``. Twin: ``epoch_audit_tools.reference_model.offsets``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.gold.base import CheckContext, Invariant
from epoch_audit.gold.invariants.leadership import epoch_leaders, silver, to_check

_PART = ["cluster_id", "topic", "partition"]
HW_SERIES = ("hw_leader_line", "hw_checkpoint")
# acks=0/1 in a request-log PRODUCE (JSON body) or a parser's details map.
_ACKS01 = r'"acks"\s*:\s*[01]\b|\backs=[01]\b'


def rp_acks_majority_loss(events: DataFrame) -> DataFrame:
    """Partitions where the logs show Redpanda's expected HW regression condition: Redpanda logs
    for the partition, produces with acks=0/1, and a leader stepping down because it lost its
    heartbeat majority (``[heartbeats_majority] Stepping down``)."""
    rp = events.filter(F.col("log_kind") == "redpanda").select(*_PART).distinct()
    acks = (
        events.filter(F.col("event_type") == "request_produce")
        .filter(F.col("details")["acks"].isin("0", "1") | F.col("raw").rlike(_ACKS01))
        .select(*_PART)
        .distinct()
    )
    loss = (
        events.filter(F.col("event_type") == "rp_step_down")
        .filter(F.col("raw").contains("heartbeats_majority"))
        .select(*_PART)
        .distinct()
    )
    return rp.join(acks, _PART).join(loss, _PART).withColumn("rp_expected", F.lit(True))


def rp_acks_carry(ctx: CheckContext) -> DataFrame:
    """Traffic (event_id) ``rp_acks_majority_loss`` still needs from before a nightly run's horizon
    (``epoch_audit.gold.carry``): one acks=0/1 produce per partition (it only asks whether one exists)."""
    acks = ctx.events.filter(F.col("event_type") == "request_produce").filter(
        F.col("details")["acks"].isin("0", "1") | F.col("raw").rlike(_ACKS01)
    )
    return acks.groupBy(*_PART).agg(F.min("event_id").alias("event_id")).select("event_id")


def check_high_watermark_regression(ctx: CheckContext) -> DataFrame:
    """``high_watermark_regression``: per (broker, partition) the HW a broker records never moves
    backwards in its own order, checked as two separate series that are never mixed: the "high
    watermark N" of its own leader lines (own log order) and its replication-offset-checkpoint
    copies (by copy suffix; the file lags the logged value). Series of different brokers are never
    compared. A partition absent from a copy has no value there; a series restarts only when the
    topic id changes. Severity ``warning`` when the logs show Redpanda's acks=0/1 majority-loss
    condition, else ``error``.
    """
    ro = silver(ctx, "replica_offsets").filter(F.col("series").isin(*HW_SERIES))
    w = Window.partitionBy("cluster_id", "broker_id", "topic", "partition", "series").orderBy("series_seq")
    r = (
        ro.withColumn("p_value", F.lag("value").over(w))
        .withColumn("p_tid", F.lag("tid").over(w))
        .withColumn("p_id", F.lag("event_id").over(w))
        .withColumn("p_le", F.lag("leader_epoch").over(w))
        .filter(F.col("p_value").isNotNull() & (F.col("value") < F.col("p_value")))
        .filter(~(F.col("p_tid").isNotNull() & F.col("tid").isNotNull() & (F.col("p_tid") != F.col("tid"))))
    )
    r = r.join(F.broadcast(rp_acks_majority_loss(ctx.events)), _PART, "left")
    sev = F.when(F.col("rp_expected"), F.lit("warning")).otherwise(F.lit("error"))
    return to_check(
        r,
        "high_watermark_regression",
        sev,
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
    )


def reference_starts(ctx: CheckContext) -> DataFrame:
    """Reference start offset of each (partition, epoch): the epoch leader's own leader line, else
    its newest leader-epoch-checkpoint entry, else the value most replicas hold (none on a tie).
    Columns: cluster_id, topic, partition, leader_epoch, epoch_leader, ref, ref_event, ref_source."""
    ro = silver(ctx, "replica_offsets")
    el = epoch_leaders(ctx)
    k = [*_PART, "leader_epoch"]
    line = (
        ro.filter(F.col("series") == "epoch_start_line")
        .groupBy(*k, "broker_id")
        .agg(F.min_by(F.struct("value", "event_id"), F.col("series_seq")).alias("s"))
    )
    ckpt = (
        ro.filter((F.col("series") == "epoch_start_checkpoint") & F.col("is_latest_copy"))
        .groupBy(*k, "broker_id")
        .agg(F.min(F.struct("value", "event_id")).alias("s"))
    )
    dump = (
        ro.filter(F.col("series") == "epoch_start_dump")
        .groupBy(*k, "broker_id")
        .agg(F.min(F.struct("value", "event_id")).alias("d"))
    )
    # Per replica one value for the majority vote: its checkpoint, else its dump.
    per_replica = ckpt.join(dump, [*k, "broker_id"], "full").select(*k, "broker_id", F.coalesce("s", "d").alias("v"))
    votes = per_replica.groupBy(*k, F.col("v.value").alias("value")).agg(
        F.count(F.lit(1)).alias("n"), F.min_by(F.col("v.event_id"), F.col("broker_id")).alias("ev")
    )
    wv = Window.partitionBy(*k)
    top = (
        votes.withColumn("mx", F.max("n").over(wv))
        .filter(F.col("n") == F.col("mx"))
        .withColumn("ties", F.count(F.lit(1)).over(wv))
        .filter(F.col("ties") == 1)
        .select(*k, F.struct("value", F.col("ev").alias("event_id")).alias("maj"))
    )
    ep = per_replica.select(*k).union(line.select(*k)).distinct()
    j = (
        ep.join(F.broadcast(el), k, "left")
        .join(
            line.withColumnRenamed("broker_id", "epoch_leader").withColumnRenamed("s", "ln"),
            [*k, "epoch_leader"],
            "left",
        )
        .join(
            ckpt.withColumnRenamed("broker_id", "epoch_leader").withColumnRenamed("s", "cp"),
            [*k, "epoch_leader"],
            "left",
        )
        .join(top, k, "left")
    )
    src = (
        F.when(F.col("ln").isNotNull(), F.lit("leader line"))
        .when(F.col("cp").isNotNull(), F.lit("leader checkpoint"))
        .when(F.col("maj").isNotNull(), F.lit("majority"))
    )
    ref = F.coalesce("ln", "cp", "maj")
    return (
        j.withColumn("r", ref)
        .withColumn("ref_source", src)
        .filter(F.col("r").isNotNull())
        .select(*k, "epoch_leader", F.col("r.value").alias("ref"), F.col("r.event_id").alias("ref_event"), "ref_source")
    )


def _start_rule(ctx: CheckContext, refs: DataFrame) -> DataFrame:
    """Each replica whose leader-epoch-checkpoint (newest copy) or first dumped batch of epoch e
    gives a start other than the reference: one row per (partition, epoch, replica). Retention
    clamping is not divergence: a replica's earliest checkpoint entry that equals one of its own
    log start offsets and lies above the reference is consistent (reference §4.3)."""
    ro = silver(ctx, "replica_offsets")
    k = [*_PART, "leader_epoch"]
    vals = ro.filter(
        ((F.col("series") == "epoch_start_checkpoint") & F.col("is_latest_copy"))
        | (F.col("series") == "epoch_start_dump")
    ).select(*k, "broker_id", "series", "value", "event_id", "event_time", "is_earliest_entry")
    ls = (
        ro.filter(F.col("series") == "log_start")
        .select(*_PART, "broker_id", F.col("value").alias("ls_value"))
        .distinct()
        .withColumn("is_ls", F.lit(True))
    )
    v = vals.join(F.broadcast(refs), k).filter(F.col("value") != F.col("ref")).join(ls, [*_PART, "broker_id"], "left")
    # A replica may have several log-start values: clamped if any equals the entry.
    v = v.withColumn("clamp_hit", F.coalesce(F.col("is_ls") & (F.col("ls_value") == F.col("value")), F.lit(False)))
    v = v.groupBy(
        *k,
        "broker_id",
        "series",
        "value",
        "event_id",
        "event_time",
        "is_earliest_entry",
        "ref",
        "ref_event",
        "ref_source",
        "epoch_leader",
    ).agg(F.max("clamp_hit").alias("has_ls"))
    clamped = F.coalesce(F.col("is_earliest_entry"), F.lit(False)) & (F.col("value") > F.col("ref")) & F.col("has_ls")
    v = v.filter(~clamped)
    g = v.groupBy(*k, "broker_id", "ref", "ref_event", "ref_source").agg(
        F.sort_array(F.collect_list(F.struct("series", "event_id", "value", "event_time"))).alias("d")
    )
    return to_check(
        g,
        "epoch_start_offset_divergence",
        "error",
        "confirmed",
        F.col("broker_id"),
        F.col("leader_epoch"),
        F.lit(None),
        F.col("d")[0]["event_time"],
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


def latest_hw(ctx: CheckContext) -> DataFrame:
    """Each replica's latest recorded high watermark for a partition (both series; host clock,
    missing time last, then leader line before checkpoint, then series order)."""
    ro = silver(ctx, "replica_offsets").filter(F.col("series").isin(*HW_SERIES))
    order = F.struct(
        F.col("event_time").isNull().alias("n"),
        F.col("event_time"),
        (F.col("series") == "hw_checkpoint").alias("s"),
        F.col("series_seq"),
    )
    return ro.groupBy(*_PART, "broker_id").agg(F.max_by("value", order).alias("hw"))


def _same_offset_rule(ctx: CheckContext, refs: DataFrame) -> DataFrame:
    """Two replicas never hold batches of different epochs at the same offset below the lower of
    their latest recorded HWs. broker_id = the replica whose epoch disagrees with the epoch the
    leaders' start offsets put at that offset (else the one holding the lower epoch). One row per
    (partition, replica, its epoch)."""
    runs = silver(ctx, "produce_runs")
    hw = latest_hw(ctx)
    x = runs.alias("x")
    y = runs.alias("y")
    pairs = x.join(
        y,
        [F.col(f"x.{c}") == F.col(f"y.{c}") for c in _PART]
        + [
            F.col("x.broker_id") < F.col("y.broker_id"),
            F.col("x.leader_epoch") != F.col("y.leader_epoch"),
            F.greatest("x.first_offset", "y.first_offset") <= F.least("x.last_offset", "y.last_offset"),
        ],
    ).select(
        *[F.col(f"x.{c}").alias(c) for c in _PART],
        F.struct(
            *[F.col(f"x.{c}").alias(c) for c in ("broker_id", "leader_epoch", "first_event_id", "first_time")]
        ).alias("rx"),
        F.struct(
            *[F.col(f"y.{c}").alias(c) for c in ("broker_id", "leader_epoch", "first_event_id", "first_time")]
        ).alias("ry"),
        F.greatest("x.first_offset", "y.first_offset").alias("off"),
    )
    hx = hw.withColumnRenamed("broker_id", "hx_b").withColumnRenamed("hw", "hw_x")
    hy = hw.withColumnRenamed("broker_id", "hy_b").withColumnRenamed("hw", "hw_y")
    pairs = (
        pairs.join(hx, [*_PART])
        .filter(F.col("hx_b") == F.col("rx.broker_id"))
        .join(hy, [*_PART])
        .filter(F.col("hy_b") == F.col("ry.broker_id"))
        .filter(F.col("off") < F.least("hw_x", "hw_y"))
        # Deterministic pair id (runs are unique by their first batch).
        .withColumn("pid", F.concat_ws("|", "rx.first_event_id", "ry.first_event_id"))
    )
    # Epoch the leaders put at offset o: the highest epoch whose reference start is <= o.
    ce = (
        pairs.select("pid", *_PART, "off")
        .join(F.broadcast(refs.select(*_PART, "leader_epoch", "ref")), _PART)
        .filter(F.col("ref") <= F.col("off"))
        .groupBy("pid")
        .agg(F.max("leader_epoch").alias("ce"))
    )
    pairs = pairs.join(ce, "pid", "left")
    xe, ye = F.col("rx.leader_epoch"), F.col("ry.leader_epoch")
    flag_y = (
        F.when(F.col("ce").isNotNull() & (xe == F.col("ce")) & (ye != F.col("ce")), True)
        .when(F.col("ce").isNotNull() & (ye == F.col("ce")) & (xe != F.col("ce")), False)
        .otherwise(ye < xe)
    )
    pairs = pairs.withColumn("fl", F.when(flag_y, F.col("ry")).otherwise(F.col("rx"))).withColumn(
        "ot", F.when(flag_y, F.col("rx")).otherwise(F.col("ry"))
    )
    g = pairs.groupBy(
        *_PART, F.col("fl.broker_id").alias("broker_id"), F.col("fl.leader_epoch").alias("leader_epoch")
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
        g,
        "epoch_start_offset_divergence",
        "error",
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


def check_epoch_start_offset_divergence(ctx: CheckContext) -> DataFrame:
    """``epoch_start_offset_divergence`` (log matching / OffsetForLeaderEpoch consistency): every
    replica agrees with the epoch leader on where each epoch starts, and no two replicas hold
    batches of different epochs at one offset below both their high watermarks."""
    refs = reference_starts(ctx).cache()  # read by both rules
    return _start_rule(ctx, refs).unionByName(_same_offset_rule(ctx, refs))


INVARIANTS_C2_OFFSETS = [
    Invariant(ids=("high_watermark_regression",), check=check_high_watermark_regression, carry=rp_acks_carry),
    Invariant(ids=("epoch_start_offset_divergence",), check=check_epoch_start_offset_divergence),
]
