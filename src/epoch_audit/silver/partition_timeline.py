"""silver.partition_timeline: per-partition controller decisions (KRaft metadata log, ZK
controller lines or the LeaderAndIsr states brokers received, Redpanda terms).

Causal order: KRaft the metadata-log offset; ZK the controller's own log order (controller epochs
order controllers, a higher CE is later); Redpanda the Raft term.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.contracts.ordering import OWN_ORDER_COLUMNS, asof_last, own_order, with_own_order
from epoch_audit.silver.event_fields import is_no_error
from epoch_audit.silver.kraft_metadata import (
    committed_metadata_records,
    covered_intervals,
    snapshot_records,
    with_hole_after,
    with_snapshot_bases,
)

# Bronze event types the timeline reads (so callers can prune before building).
KRAFT_PARTITION_TYPES = ("md_partition", "md_partition_change")
# RemoveTopicRecord: the topic id's partitions cease to exist at its commit point.
KRAFT_TOPIC_REMOVAL_TYPES = ("md_remove_topic",)
ZK_DECISION_TYPES = ("controller_partition_state_change", "controller_isr_change", "controller_isr_updated")
ZK_CONTROLLER_LOG_TYPES = ZK_DECISION_TYPES + (
    "controller_send_leader_and_isr",
    "controller_send_stop_replica",
    "controller_send_update_metadata",
)
ZK_STAND_IN_TYPES = ("leader_and_isr_received", "request_leader_and_isr")

TIMELINE_COLUMNS = [
    "cluster_id",
    "topic",
    "partition",
    "topic_id",
    "decision_seq",
    "source",
    "leader",
    "leader_epoch",
    "partition_epoch",
    "isr",
    "replicas",
    "event_time",
    "metadata_offset",
    "controller_id",
    "controller_epoch",
    "event_id",
    "commit_offset",
    "next_commit_offset",
    "is_leader_change",
]


def _kraft_decisions(events: DataFrame) -> DataFrame:
    """Replay PartitionRecord / PartitionChangeRecord per (cluster, topic id, partition).

    PartitionRegistration.merge (KRaft): a PartitionChangeRecord carries only the changed fields.
    leader absent (null) or -2 = unchanged; otherwise the leader is set AND the leader epoch goes
    up by one (even when the same leader is re-sent: the forced bump of KAFKA-15021). The
    partition epoch goes up by one on every change record. isr / replicas null = unchanged.
    leaderRecoveryState and ELR never move either epoch. A PartitionRecord (new or existing
    partition) sets the whole state and starts a new replay segment.

    A dump that starts mid-log (the log before a snapshot is deleted) replays from a snapshot
    (:func:`with_snapshot_bases`): a snapshot below the partition's first log record is its starting
    state (a decision row at ``decision_seq`` = the snapshot's last offset, no metadata offset, no
    time); a snapshot the log overlaps gives the epochs of the changes before the first full record
    (the state at the snapshot's offset is known, every change in between is one bump). Without
    either, changes before any PartitionRecord keep leader / ISR but have no epochs (unknown).

    Holes (offsets between two dumped logs that no dump shows, e.g. two hosts dumped at different
    times): the changes in a hole were never counted, so after a hole the replay starts a new
    segment with unknown epochs (null, never a number too low) and only the fields its own records
    set, until the next PartitionRecord, unless a snapshot in the same covered interval (or ending
    exactly where it starts) supplies the state, counted back as above.
    """
    key = ["cluster_id", "topic_id", "partition"]
    full_t = F.col("event_type") == "md_partition"
    log = committed_metadata_records(events, KRAFT_PARTITION_TYPES).withColumn("_pos", F.col("metadata_offset"))
    recs = with_snapshot_bases(
        log, snapshot_records(events, ("md_partition",)), key, full_t,
        ["leader", "leader_epoch", "partition_epoch", "isr", "replicas"], covered_intervals(events),
    )
    # Topic names: a TopicRecord never changes (a recreated topic gets a new id); a snapshot's counts.
    topics = (
        events.where(F.col("event_type") == "md_topic")
        .select("cluster_id", "topic_id", F.col("topic").alias("_topic_name"))
        .where(F.col("topic_id").isNotNull() & F.col("_topic_name").isNotNull())
        .dropDuplicates(["cluster_id", "topic_id"])
    )
    is_full = F.col("event_type") == "md_partition"
    leader_set = ~is_full & F.col("leader").isNotNull() & (F.col("leader") != -2)
    w_seg = (
        Window.partitionBy(*key, "_seg")
        .orderBy("_pos")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    w_seg_all = Window.partitionBy(*key, "_seg")
    recs = recs.withColumns(
        {"_le_bumps": F.sum(leader_set.cast("int")).over(w_seg), "_pe_bumps": F.sum((~is_full).cast("int")).over(w_seg)}
    )
    # A segment without a full record (the log's start, or after a hole) that a snapshot serves
    # (``_snap``, only there): the bumps up to the snapshot's offset are counted back from it.
    at_snap = F.col("_pos") <= F.col("_snap.pos")
    recs = recs.withColumns({
        "_le_at_snap": F.max(F.when(at_snap, F.col("_le_bumps"))).over(w_seg_all),
        "_pe_at_snap": F.max(F.when(at_snap, F.col("_pe_bumps"))).over(w_seg_all),
    })
    base_le = F.coalesce(
        F.first(F.when(is_full, F.col("leader_epoch")), ignorenulls=True).over(w_seg),
        F.col("_snap.leader_epoch") - F.coalesce("_le_at_snap", F.lit(0)),
    )
    base_pe = F.coalesce(
        F.first(F.when(is_full, F.col("partition_epoch")), ignorenulls=True).over(w_seg),
        F.col("_snap.partition_epoch") - F.coalesce("_pe_at_snap", F.lit(0)),
    )
    after_snap = F.col("_pos") > F.col("_snap.pos")
    eff_leader = F.when(is_full | leader_set, F.col("leader"))

    def carried(value: Column, name: str) -> Column:
        # a field no change record of the segment has set yet is the serving snapshot's, after its offset
        return F.coalesce(F.last(value, ignorenulls=True).over(w_seg), F.when(after_snap, F.col(f"_snap.{name}")))

    out = recs.select(
        "cluster_id",
        "topic",
        "partition",
        "topic_id",
        F.col("_pos").alias("decision_seq"),
        F.lit("kraft").alias("source"),
        carried(eff_leader, "leader").alias("leader"),
        (base_le + F.col("_le_bumps")).cast("int").alias("leader_epoch"),
        (base_pe + F.col("_pe_bumps")).cast("int").alias("partition_epoch"),
        carried(F.col("isr"), "isr").alias("isr"),
        carried(F.col("replicas"), "replicas").alias("replicas"),
        "event_time",
        "metadata_offset",
        F.lit(None).cast("int").alias("controller_id"),
        # KRaft has no controller epoch; the metadata batch's quorum epoch plays that role.
        F.col("quorum_epoch").alias("controller_epoch"),
        "event_id",
        "commit_offset",
    )
    named = out.join(F.broadcast(topics), ["cluster_id", "topic_id"], "left")
    return named.select(*[F.coalesce("_topic_name", "topic").alias(c) if c == "topic" else c for c in out.columns])


def with_log_controller_epoch(own: DataFrame, events: DataFrame) -> DataFrame:
    """Fill a controller line's missing controller epoch from its broker's own log.

    "ISR for partition ... updated to" is logged under ``[Controller id=N]`` without the epoch that
    every other controller line carries (``[Controller id=N epoch=E]``): it takes the epoch of the
    last line before it in the same log (same process, same controller term) that names one. The
    log is the broker's stream of that kind across its rotated files (``controller.log.<hour>``
    then ``controller.log``), in its own order: an hourly rotation between the election line and
    the decisions must not leave them without an epoch. Without it the decision would sort before
    every decision of the partition. A file without a host folder is its own stream.
    """
    stream = [F.col("cluster_id"), F.col("log_kind"), _log_stream()]
    need = own.where(F.col("controller_epoch").isNull()).select(
        "event_id", *stream, *OWN_ORDER_COLUMNS
    )
    marks = with_own_order(events, ZK_CONTROLLER_LOG_TYPES + ("controller_failover",)).where(
        # the election line is the one controller.log line naming the epoch (3.x shipped config)
        F.col("controller_epoch").isNotNull()
    ).select(*stream, *OWN_ORDER_COLUMNS, F.col("controller_epoch").alias("_mark_ce"))
    filled = asof_last(need, marks, ["cluster_id", "log_kind", "_log_stream"], own_order(), ["_mark_ce"]).select(
        "event_id", F.col("_mark_ce").alias("_fill_ce")
    )
    return (
        own.join(filled, "event_id", "left")
        .withColumn("controller_epoch", F.coalesce("controller_epoch", "_fill_ce"))
        .drop("_fill_ce")
    )


def _log_stream() -> Column:
    """One broker's log of one kind across its rotated files: the host, else (no host folder) the file."""
    return F.coalesce(F.concat(F.lit("host:"), F.col("host_id").cast("string")), F.col("file_id")).alias("_log_stream")


def _zk_decisions(events: DataFrame) -> DataFrame:
    """ZK timeline: the controller's own decisions, else (log absent) brokers' received states.

    Own decisions: "Changed partition ... with state LeaderAndIsr(...)", "Partition ... state
    changed to (Leader:..)" and the ZK "ISR for partition ... updated to" lines, in the
    controller's own log order, controllers ordered by their epoch (a higher CE is later).

    Stand-ins (spec, opening paragraph): LeaderAndIsr states a broker received (TRACE "Received
    LeaderAndIsr request" or request-log LEADER_AND_ISR) stand in only when the issuing
    controller (controller id, request CE) left no state-change line of its own in the input.
    Even then a state is a re-send, never a decision, when its partition-state controllerEpoch is
    below the request's controller epoch, or its LE is not above the latest decided LE of the
    partition. Re-sends of one state to every replica collapse the same way (equal LE).
    """
    ev = with_own_order(events, ZK_DECISION_TYPES + ZK_STAND_IN_TYPES)
    present = (
        events.where(F.col("event_type").isin(*ZK_CONTROLLER_LOG_TYPES))
        .select(
            F.col("cluster_id").alias("_pc_cluster"),
            F.col("controller_id").alias("_pc_id"),
            F.col("controller_epoch").alias("_pc_epoch"),
        )
        .where(F.col("_pc_id").isNotNull() & F.col("_pc_epoch").isNotNull())
        .dropDuplicates()
    )
    own = ev.where(
        F.col("event_type").isin(*ZK_DECISION_TYPES) & F.col("topic").isNotNull() & F.col("leader_epoch").isNotNull()
    ).withColumn("_own", F.lit(True))
    own = with_log_controller_epoch(own, events)
    cand = (
        ev.where(F.col("event_type").isin(*ZK_STAND_IN_TYPES))
        .where(F.col("topic").isNotNull() & (F.col("leader_epoch") >= 0))
        # a request-log state counts only when the broker applied it (partition error NONE)
        .where((F.col("event_type") != "request_leader_and_isr") | is_no_error(F.col("error")))
        .join(
            F.broadcast(present),
            (F.col("cluster_id") == F.col("_pc_cluster"))
            & (F.col("controller_id") == F.col("_pc_id"))
            & (F.col("controller_epoch") == F.col("_pc_epoch")),
            "left_anti",
        )
        .withColumn("_own", F.lit(False))
    )
    rows = own.unionByName(cand)
    # Causal order: controller epoch first; inside one controller epoch its own log order, or,
    # for stand-ins (no controller log), the states' own epochs (LE, then partition epoch).
    key = ["cluster_id", "topic", "partition"]
    order = [
        F.col("controller_epoch").asc_nulls_first(),
        F.when(~F.col("_own"), F.col("leader_epoch")).asc_nulls_first(),
        F.when(~F.col("_own"), F.col("partition_epoch")).asc_nulls_first(),
        *own_order(),
        F.col("event_id"),
    ]
    w = Window.partitionBy(*key).orderBy(*order)
    w_prev = w.rowsBetween(Window.unboundedPreceding, -1)
    resend_ce = ~F.col("_own") & F.coalesce(F.col("state_controller_epoch") < F.col("controller_epoch"), F.lit(False))
    rows = rows.withColumn("_resend_ce", resend_ce).withColumn(
        "_max_le_before",
        F.max(F.when(~F.col("_resend_ce"), F.col("leader_epoch"))).over(w_prev),
    )
    keep = F.col("_own") | (
        ~F.col("_resend_ce") & (F.col("_max_le_before").isNull() | (F.col("leader_epoch") > F.col("_max_le_before")))
    )
    rows = rows.where(keep)
    return rows.select(
        "cluster_id",
        "topic",
        "partition",
        "topic_id",
        F.row_number().over(Window.partitionBy(*key).orderBy(*order)).cast("long").alias("decision_seq"),
        F.when(F.col("_own"), F.lit("zk-controller")).otherwise(F.lit("zk-leader-and-isr")).alias("source"),
        "leader",
        "leader_epoch",
        "partition_epoch",
        "isr",
        "replicas",
        "event_time",
        "metadata_offset",
        "controller_id",
        "controller_epoch",
        "event_id",
        F.lit(None).cast("long").alias("commit_offset"),
    )


def _redpanda_decisions(events: DataFrame) -> DataFrame:
    """Redpanda: each "became the leader term: N" is a decision (leader = node, LE = term).

    Raft terms order the decisions (a higher term is later); equal terms (two claimants, which
    two_leaders_same_epoch reports) by time, then event id.
    """
    rp = events.where(F.col("event_type") == "rp_became_leader").where(
        F.col("topic").isNotNull() & F.col("leader_epoch").isNotNull()
    )
    key = ["cluster_id", "topic", "partition"]
    order = [F.col("leader_epoch"), F.col("event_time").asc_nulls_first(), F.col("event_id")]
    return rp.select(
        "cluster_id",
        "topic",
        "partition",
        "topic_id",
        F.row_number().over(Window.partitionBy(*key).orderBy(*order)).cast("long").alias("decision_seq"),
        F.lit("redpanda").alias("source"),
        F.col("broker_id").alias("leader"),
        "leader_epoch",
        F.lit(None).cast("int").alias("partition_epoch"),
        F.lit(None).cast("array<int>").alias("isr"),
        F.lit(None).cast("array<int>").alias("replicas"),
        "event_time",
        "metadata_offset",
        F.lit(None).cast("int").alias("controller_id"),
        F.lit(None).cast("int").alias("controller_epoch"),
        "event_id",
        F.lit(None).cast("long").alias("commit_offset"),
    )


def partition_timeline(events: DataFrame, config: object = None) -> DataFrame:
    """silver.partition_timeline: one row per controller decision per (cluster, topic, partition).

    Columns: cluster_id, topic, partition, topic_id (KRaft; a recreated topic gets a new id and
    restarts its epochs), decision_seq (long, causal order within the partition: the metadata
    offset for KRaft, the rank in controller order for ZK / Redpanda), source (kraft |
    zk-controller | zk-leader-and-isr | redpanda), leader, leader_epoch, partition_epoch, isr,
    replicas (the full state AFTER the decision), event_time, metadata_offset, controller_id,
    controller_epoch (ZK: the logging/sending controller's epoch; KRaft: the batch's quorum
    epoch), event_id, commit_offset (KRaft: the decision becomes visible at this commit point),
    next_commit_offset (KRaft: the next decision's commit offset, or the commit point of the
    RemoveTopicRecord that deletes the topic id, or the first offset of a hole in the dumped
    metadata log, if that comes first: the state holds for commit points in [commit_offset,
    next_commit_offset); equal values mean it was superseded inside its own batch/transaction),
    is_leader_change (first decision, or leader differs from the
    previous decision's leader; order by (topic_id, decision_seq) — ZK/Redpanda rows have no
    topic_id).
    """
    del config  # no rule parameter shapes the timeline
    allrows = _kraft_decisions(events).unionByName(_zk_decisions(events)).unionByName(_redpanda_decisions(events))
    # A partition's decisions of one source family (ZK's two sources are one order), by decision_seq.
    family = F.when(F.col("source").startswith("zk"), F.lit("zk")).otherwise(F.col("source"))
    w = Window.partitionBy("cluster_id", "topic", "partition", "topic_id", family).orderBy("decision_seq")
    prev_leader = F.lag("leader").over(w)
    first = F.lag("decision_seq").over(w).isNull()
    # A removed topic's partitions hold no state after the removal's commit point.
    removed = F.when(F.col("_removed_at") >= F.col("commit_offset"), F.col("_removed_at"))
    # ... and none past a hole in the dumped metadata log (a change there may have replaced it).
    derived = {
        "is_leader_change": first | ~prev_leader.eqNullSafe(F.col("leader")),
        "next_commit_offset": F.least(F.lead("commit_offset").over(w), removed, F.col("_hole")),
    }
    return (
        with_hole_after(allrows, covered_intervals(events), F.col("commit_offset"))
        .join(F.broadcast(topic_removals(events)), ["cluster_id", "topic_id"], "left")
        .select(*[derived.get(c, F.col(c)).alias(c) for c in TIMELINE_COLUMNS])
    )


def topic_removals(events: DataFrame) -> DataFrame:
    """KRaft topic removals: (cluster_id, topic_id, _removed_at = the RemoveTopicRecord's commit point).

    ReplicationControlManager drops every partition of the topic id when it replays the record,
    so no partition state of that id holds at or after that commit point (a recreated topic gets
    a new topic id and its own states).
    """
    return (
        committed_metadata_records(events, KRAFT_TOPIC_REMOVAL_TYPES)
        .where(F.col("topic_id").isNotNull())
        .groupBy("cluster_id", "topic_id")
        .agg(F.min("commit_offset").alias("_removed_at"))
    )
