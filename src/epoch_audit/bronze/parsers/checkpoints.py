"""Checkpoint files and ``partition.metadata`` -> one event per entry (reference §4.2).

``CheckpointFile`` layout (2.x-3.9): line 1 the format version (``0``), line 2 the entry count N,
then N entries:
- ``leader-epoch-checkpoint`` (in a partition directory): ``<leaderEpoch> <startOffset>``; the
  topic-partition is the parent directory ``<topic>-<partition>`` -> ``checkpoint_leader_epoch``
  (leader_epoch, offset = start offset).
- ``replication-offset-checkpoint`` / ``recovery-point-offset-checkpoint`` /
  ``log-start-offset-checkpoint`` (log-dir root): ``<topic> <partition> <offset>`` ->
  ``checkpoint_replication_offset`` (high_watermark) / ``checkpoint_recovery_offset`` (offset) /
  ``checkpoint_log_start_offset`` (log_start_offset).
- ``partition.metadata`` (2.8+, KIP-516): ``version: 0`` / ``topic_id: <uuid>`` ->
  ``partition_metadata`` (topic_id; topic-partition from the parent directory).

Which kind a file is comes from ``log_kind`` (set by the framing with
:func:`epoch_audit.bronze.parsers.file_kinds.detect_file_kind`): the three offset checkpoints share one layout.

Periodic copies ``<file>.<yyyy-MM-ddTHH-mm-ss>`` carry the copying host's local time: it becomes
``event_time`` (read in ``source_time_zone``) and ``details.copy_time``; a file with its plain name
is the state at collection time (no event_time). ``details.entry_index`` (0-based) marks the first
leader-epoch entry, which retention may have clamped to the log start offset (§4.3).

Quarantined (``__malformed__`` with a reason, as the broker's reader would reject them): a version
other than 0, a non-numeric count, an entry that does not parse, and a count line that disagrees
with the number of entries (the entries themselves are still emitted).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from epoch_audit.bronze.parsers import MALFORMED
from epoch_audit.bronze.parsers.file_kinds import (
    COPY_SUFFIX_PATTERN,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    PARTITION_METADATA,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
)
from epoch_audit.bronze.parsers.segment_dump import (
    PROVENANCE,
    clean_text,
    drop_null_values,
    parent_dir,
    topic_partition_from_dir,
)

OFFSET_KINDS: dict[str, str] = {
    REPLICATION_OFFSET_CHECKPOINT: "checkpoint_replication_offset",
    RECOVERY_POINT_OFFSET_CHECKPOINT: "checkpoint_recovery_offset",
    LOG_START_OFFSET_CHECKPOINT: "checkpoint_log_start_offset",
}
CHECKPOINT_KINDS = (LEADER_EPOCH_CHECKPOINT, *OFFSET_KINDS)

INT_LINE = r"^\s*(-?\d+)\s*$"
# Readers split entries on runs of whitespace (CheckpointFile / OffsetCheckpointFile formatters).
EPOCH_ENTRY = r"^\s*(-?\d+)\s+(-?\d+)\s*$"
OFFSET_ENTRY = r"^\s*(\S+)\s+(-?\d+)\s+(-?\d+)\s*$"
# PartitionMetadataFile splits each line on a colon followed by whitespace.
PM_VERSION = r"^version:\s+(\S+)\s*$"
PM_TOPIC_ID = r"^topic_id:\s+([A-Za-z0-9_-]{22})\s*$"


def copy_time_col(file_name: Column, source_time_zone: str = "UTC") -> Column:
    """The periodic-copy suffix of ``file_name`` as a timestamp read in ``source_time_zone``."""
    name = F.regexp_replace(file_name, r"\.gz$", "")
    s = F.regexp_extract(name, COPY_SUFFIX_PATTERN, 1)

    def part(start: int, length: int) -> Column:
        return F.substring(s, start, length).try_cast("int")

    # make_timestamp with an explicit zone: the result does not depend on the session time zone.
    # try_: a suffix like 2024-13-45 gives null (the line is quarantined), make_timestamp would raise.
    return F.when(
        s != "",
        F.try_make_timestamp(part(1, 4), part(6, 2), part(9, 2), part(12, 2), part(15, 2), part(18, 2),
                         F.lit(source_time_zone)),
    )


def parse_checkpoints(lines: DataFrame, source_time_zone: str = "UTC") -> DataFrame:
    """Checkpoint / partition.metadata lines -> ``checkpoint_*`` / ``partition_metadata`` events (§4.2)."""
    kind = F.col("log_kind")
    t = F.col("text")
    base = lines.filter(kind.isin(*CHECKPOINT_KINDS, PARTITION_METADATA)).withColumn("text", clean_text())
    # Blank lines (a trailing newline turned into a line by a collector) carry nothing.
    base = base.filter(F.trim(t) != "")
    checkpoints = _checkpoint_events(base.filter(kind.isin(*CHECKPOINT_KINDS)), source_time_zone)
    pm = _partition_metadata_events(base.filter(kind == PARTITION_METADATA), source_time_zone)
    return checkpoints.unionByName(pm, allowMissingColumns=True)


def _common(source_time_zone: str) -> dict[str, Column]:
    """Columns every checkpoint event shares: copy time, the partition directory, provenance."""
    topic, partition, state = topic_partition_from_dir(parent_dir(F.col("source_file")))
    copy_suffix = F.regexp_extract(F.regexp_replace(F.col("file_name"), r"\.gz$", ""), COPY_SUFFIX_PATTERN, 1)
    return {
        "event_time": copy_time_col(F.col("file_name"), source_time_zone),
        "copy_time": F.nullif(copy_suffix, F.lit("")),
        "dir_topic": topic,
        "dir_partition": partition,
        "dir_state": state,
    }


def _entry_misfit(t: Column, is_epoch: Column) -> Column:
    """Why an entry line's numbers do not fit their columns (an epoch beyond int32, an offset beyond
    int64), naming the column; null when they fit or the line is no entry."""
    epoch, start = F.regexp_extract(t, EPOCH_ENTRY, 1), F.regexp_extract(t, EPOCH_ENTRY, 2)
    partition, offset = F.regexp_extract(t, OFFSET_ENTRY, 2), F.regexp_extract(t, OFFSET_ENTRY, 3)

    def misfit(name: str, text: Column, dtype: str) -> Column:
        return F.when((text != "") & text.try_cast(dtype).isNull(),
                      F.concat(F.lit(f"{name}: value out of range in checkpoint line: "), t))

    return F.when(is_epoch, F.coalesce(misfit("leader_epoch", epoch, "int"), misfit("offset", start, "long"))).otherwise(
        F.coalesce(misfit("partition", partition, "int"), misfit("offset", offset, "long"))
    )


def _checkpoint_events(rows: DataFrame, source_time_zone: str) -> DataFrame:
    t = F.col("text")
    ln = F.col("line_number")
    # Per-file header facts: version line, count line, number of entry lines. Checkpoint files are
    # small (one line per partition), but there may be very many of them (one leader-epoch file per
    # partition and copy): no broadcast hint, the planner picks the join.
    header = rows.groupBy("file_id").agg(
        F.max(F.when(ln == 1, t)).alias("_version_text"),
        F.max(F.when(ln == 2, t)).alias("_count_text"),
        F.count(F.when(ln > 2, F.lit(1))).alias("_entries"),
    )
    rows = rows.join(header, "file_id")
    version_ok = F.col("_version_text").rlike(r"^\s*0\s*$")
    count_ok = F.col("_count_text").rlike(INT_LINE)
    declared = F.regexp_extract(F.col("_count_text"), INT_LINE, 1).try_cast("long")
    kind = F.col("log_kind")
    is_epoch = kind == LEADER_EPOCH_CHECKPOINT
    entry_ok = t.rlike(EPOCH_ENTRY) & is_epoch | t.rlike(OFFSET_ENTRY) & ~is_epoch
    c = _common(source_time_zone)

    reason = (
        F.when(
            (ln == 1) & ~version_ok,
            F.concat(F.lit("Unrecognised checkpoint version: "), t, F.lit(", expected version: 0")),
        )
        .when((ln == 2) & ~count_ok, F.concat(F.lit("Malformed checkpoint count line: "), t))
        .when((ln == 2) & declared.isNull(), F.concat(F.lit("declared_entries: value out of range: "), t))
        .when(
            (ln == 2) & version_ok & (declared != F.col("_entries")),
            # The broker reader's own text (CheckpointFile.CheckpointReadBuffer.read).
            F.format_string("Expected [%s] entries in checkpoint file [%s], but found only [%s]",
                            declared.cast("string"), F.col("source_file"), F.col("_entries").cast("string")),
        )
        .when((ln > 2) & version_ok & ~entry_ok, F.concat(F.lit("Malformed line in checkpoint file: "), t))
        .when((ln > 2) & version_ok & (misfit := _entry_misfit(t, is_epoch)).isNotNull(), misfit)
        .when(c["copy_time"].isNotNull() & c["event_time"].isNull(),
              F.concat(F.lit("event_time: invalid copy time suffix "), c["copy_time"]))
        .when(
            (ln > 2) & version_ok & entry_ok & is_epoch & c["dir_topic"].isNull(),
            F.lit("leader-epoch-checkpoint outside a <topic>-<partition> directory"),
        )
    )
    # Entries of a file with an unknown version are not read (the broker would reject the file).
    emit_entry = (ln > 2) & version_ok & reason.isNull()

    def g(i: int) -> Column:
        # Group i of the entry pattern of this file's kind.
        return F.when(is_epoch, F.regexp_extract(t, EPOCH_ENTRY, i)).otherwise(F.regexp_extract(t, OFFSET_ENTRY, i))

    event_type = F.when(reason.isNotNull(), F.lit(MALFORMED)).when(
        emit_entry,
        F.when(is_epoch, F.lit("checkpoint_leader_epoch"))
        .otherwise(F.element_at(F.create_map(*[F.lit(x) for kv in OFFSET_KINDS.items() for x in kv]), kind)),
    )
    entry_offset = F.when(is_epoch, g(2)).otherwise(g(3)).try_cast("long")
    details = F.create_map(
        F.lit("copy_time"), c["copy_time"],
        F.lit("entry_index"), (ln - 3).cast("string"),
        F.lit("declared_entries"), declared.cast("string"),
        F.lit("dir_state"), F.when(is_epoch, c["dir_state"]),
        F.lit("file_name"), F.col("file_name"),
    )
    et = F.col("event_type")
    return (
        rows.withColumn("event_type", event_type)
        .filter(et.isNotNull())
        .select(
            *PROVENANCE,
            F.lit(0).alias("sub_index"),
            "event_type",
            F.col("host_id").alias("broker_id"),
            F.when(et != MALFORMED, F.when(is_epoch, c["dir_topic"]).otherwise(g(1))).alias("topic"),
            F.when(et != MALFORMED, F.when(is_epoch, c["dir_partition"]).otherwise(g(2).try_cast("int")))
            .alias("partition"),
            c["event_time"].alias("event_time"),
            F.when(et == "checkpoint_leader_epoch", g(1).try_cast("int")).alias("leader_epoch"),
            F.when(et.isin("checkpoint_leader_epoch", "checkpoint_recovery_offset"), entry_offset).alias("offset"),
            F.when(et == "checkpoint_replication_offset", entry_offset).alias("high_watermark"),
            F.when(et == "checkpoint_log_start_offset", entry_offset).alias("log_start_offset"),
            F.when(et == MALFORMED, F.create_map(F.lit("reason"), reason))
            .otherwise(drop_null_values(details))
            .alias("details"),
            t.alias("raw"),
        )
    )


def _partition_metadata_events(rows: DataFrame, source_time_zone: str) -> DataFrame:
    t = F.col("text")
    ln = F.col("line_number")
    c = _common(source_time_zone)
    version = F.regexp_extract(t, PM_VERSION, 1)
    reason = (
        F.when((ln == 1) & ~t.rlike(PM_VERSION), F.concat(F.lit("Malformed partition.metadata version line: "), t))
        .when((ln == 1) & (version != "0"), F.concat(F.lit("Unrecognised partition.metadata version: "), version))
        .when((ln == 2) & ~t.rlike(PM_TOPIC_ID), F.concat(F.lit("Malformed partition.metadata topic_id line: "), t))
        .when(ln > 2, F.concat(F.lit("Unexpected line in partition.metadata: "), t))
        .when((ln == 2) & c["dir_topic"].isNull(), F.lit("partition.metadata outside a <topic>-<partition> directory"))
    )
    event_type = F.when(reason.isNotNull(), F.lit(MALFORMED)).when(ln == 2, F.lit("partition_metadata"))
    et = F.col("event_type")
    details = F.create_map(
        F.lit("copy_time"), c["copy_time"],
        F.lit("dir_state"), c["dir_state"],
        F.lit("file_name"), F.col("file_name"),
    )
    return (
        rows.withColumn("event_type", event_type)
        .filter(et.isNotNull())
        .select(
            *PROVENANCE,
            F.lit(0).alias("sub_index"),
            "event_type",
            F.col("host_id").alias("broker_id"),
            F.when(et != MALFORMED, c["dir_topic"]).alias("topic"),
            F.when(et != MALFORMED, c["dir_partition"]).alias("partition"),
            F.when(et != MALFORMED, F.regexp_extract(t, PM_TOPIC_ID, 1)).alias("topic_id"),
            c["event_time"].alias("event_time"),
            F.when(et == MALFORMED, F.create_map(F.lit("reason"), reason))
            .otherwise(drop_null_values(details))
            .alias("details"),
            t.alias("raw"),
        )
    )
