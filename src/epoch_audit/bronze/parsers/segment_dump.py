"""``kafka-dump-log.sh --files <segment>.log`` output -> one ``data_batch`` event per record batch.

Reference §4.1 (``DumpLogSegments.dumpLog`` / ``printBatchLevel``). A file holds one or more
``Dumping <path>`` sections; the segment's partition directory ``<topic>-<partition>`` (split on the
LAST ``-``) names the topic-partition. Every batch is one line:

    baseOffset: B lastOffset: L count: N baseSequence: .. lastSequence: .. producerId: P
    producerEpoch: E partitionLeaderEpoch: LE isTransactional: T isControl: C [deleteHorizonMs: D]
    position: .. <CreateTime|LogAppendTime|NoTimestampType>: TS size: .. magic: 2 compresscodec: ..
    crc: .. isvalid: ..

``deleteHorizonMs`` exists from 3.2; magic < 2 batches print ``offset: <lastOffset>`` instead of
everything before `` position:``. ``--deep-iteration`` / ``--print-data-log`` add one ``| offset: ..``
line per record: they belong to their batch and yield no event (only a control batch's marker,
``endTxnMarker: COMMIT`` / ``controlType: ..``, is read, into the batch's ``record_type``).

Dumps can hold 10^7 lines, so rows are narrowed with cheap ``startswith`` tests before any regex,
and the one window (section / marker attachment) runs over header and batch lines only.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from epoch_audit.bronze.parsers import MALFORMED

LOG_KIND = "segment-dump"

# The magic >= 2 batch line (3.2+ with deleteHorizonMs, 2.x-3.1 without). compresscodec prints the
# enum constant on 2.x (``NONE``) and the lower-case name on 3.x (``none``).
BATCH_V2 = (
    r"^baseOffset: (-?\d+) lastOffset: (-?\d+) count: (-?\d+|null) baseSequence: (-?\d+) "
    r"lastSequence: (-?\d+) producerId: (-?\d+) producerEpoch: (-?\d+) partitionLeaderEpoch: (-?\d+) "
    r"isTransactional: (true|false) isControl: (true|false)"
    r"(?: deleteHorizonMs: (OptionalLong\.empty|OptionalLong\[-?\d+\]))?"
    r" position: (\d+) (CreateTime|LogAppendTime|NoTimestampType): (-?\d+) size: (\d+) magic: (\d+) "
    r"compresscodec: (\w+) crc: (\d+) isvalid: (true|false)$"
)
# magic 0/1 (message-format v0/v1): only the last offset; no leader epoch, no producer.
BATCH_LEGACY = (
    r"^offset: (-?\d+) position: (\d+) (CreateTime|LogAppendTime|NoTimestampType): (-?\d+) "
    r"size: (\d+) magic: (\d+) compresscodec: (\w+) crc: (\d+) isvalid: (true|false)$"
)
DUMPING = r"^Dumping (.+)$"
# Partition directory ``<topic>-<partition>``, also renamed ``.<32 hex>-delete|-future|-stray``.
PARTITION_DIR = r"^(.+)-(\d+)(?:\.([0-9a-fA-F]{32})-(delete|future|stray))?$"
# Host path segments that look like ``<name>-<n>`` but are not partition directories.
HOST_DIR = r"^(?:broker|node)[-=]\d+$"
# Control-record markers of a deep-iterated control batch (§3.2, §4.1).
CONTROL_MARKER = (
    r" (?:endTxnMarker: (COMMIT|ABORT)|controlType: ([A-Z_]+)\(-?\d+\)"
    r"|(SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters) \{|(LeaderChange): \{)"
)


def clean_text(col: str = "text") -> Column:
    """The line without a trailing carriage return (CRLF files)."""
    return F.regexp_replace(F.col(col), r"\r$", "")


def parent_dir(path: Column) -> Column:
    """Name of the directory holding the file at ``path`` ('' when the path has none)."""
    return F.regexp_extract(path, r"([^/\\]+)[/\\][^/\\]+$", 1)


def topic_partition_from_dir(directory: Column) -> tuple[Column, Column, Column]:
    """(topic, partition, dir state) of a partition directory ``<topic>-<partition>[.<id>-<state>]``.

    Topic names may contain ``-``: the greedy group splits on the last one (reference §0.3).
    Returns nulls when the directory is not a partition directory.
    """
    ok = directory.rlike(PARTITION_DIR) & ~directory.rlike(HOST_DIR)
    topic = F.when(ok, F.regexp_extract(directory, PARTITION_DIR, 1))
    partition = F.when(ok, F.regexp_extract(directory, PARTITION_DIR, 2).try_cast("int"))
    state = F.when(ok & (F.regexp_extract(directory, PARTITION_DIR, 4) != ""),
                   F.regexp_extract(directory, PARTITION_DIR, 4))
    return topic, partition, state


def dir_struct(directory: Column) -> Column:
    """struct(topic, partition, state) of a partition directory (fields null when it is not one)."""
    topic, partition, state = topic_partition_from_dir(directory)
    return F.struct(topic.alias("topic"), partition.alias("partition"), state.alias("state"))


def dump_section(text: Column) -> Column:
    """struct(path, segment, topic, partition, state) of a ``Dumping <path>`` line."""
    path = F.regexp_extract(text, DUMPING, 1)
    tp = dir_struct(parent_dir(path))
    return F.struct(
        path.alias("path"),
        F.regexp_extract(path, r"([^/\\]+)$", 1).alias("segment"),
        tp["topic"].alias("topic"),
        tp["partition"].alias("partition"),
        tp["state"].alias("state"),
    )


def control_marker(text: Column) -> Column:
    """The control type a control-record line names (COMMIT, ABORT, LEADER_CHANGE, SNAPSHOT_HEADER...).

    Cheap ``contains`` tests keep the regexes off ordinary record lines.
    """
    maybe = (
        text.contains("endTxnMarker: ")
        | text.contains("controlType: ")
        | text.contains("Snapshot")
        | text.contains("KRaftV")
        | text.contains("LeaderChange: ")
    )
    return F.when(maybe, _control_marker(text))


def _control_marker(text: Column) -> Column:
    label = F.regexp_extract(text, CONTROL_MARKER, 3)
    printed = (
        F.when(label == "SnapshotHeader", "SNAPSHOT_HEADER")
        .when(label == "SnapshotFooter", "SNAPSHOT_FOOTER")
        .when(label == "KRaftVersion", "KRAFT_VERSION")
        .when(label == "KRaftVoters", "KRAFT_VOTERS")
    )
    return F.coalesce(
        F.nullif(F.regexp_extract(text, CONTROL_MARKER, 1), F.lit("")),
        F.nullif(F.regexp_extract(text, CONTROL_MARKER, 2), F.lit("")),
        printed,
        F.when(F.regexp_extract(text, CONTROL_MARKER, 4) != "", F.lit("LEADER_CHANGE")),
    )


# Batch lines are ``key: value`` pairs with space-free values: one split into a map per line is far
# cheaper than one regex group extraction per field (dumps run to 10^7 lines).
_PAIR_DELIM = r" (?=[A-Za-z]+: )"
_TS_TYPES = ("CreateTime", "LogAppendTime", "NoTimestampType")


def batch_map(text: Column) -> Column:
    """``key -> value`` of a batch line. Only call on lines that matched BATCH_V2 / BATCH_LEGACY
    (their keys are unique; a duplicate key would fail the map)."""
    return F.str_to_map(text, F.lit(_PAIR_DELIM), F.lit(": "))


def batch_columns(m: Column) -> dict[str, Column]:
    """Typed fields of a batch line from its :func:`batch_map` (magic >= 2 or legacy magic 0/1).

    Legacy lines only know their last offset (``offset: <lastOffset>``): no base offset, no leader
    epoch, no producer.
    """
    ts_type = F.coalesce(*[F.when(m[k].isNotNull(), F.lit(k)) for k in _TS_TYPES])
    ts_raw = F.coalesce(*[m[k] for k in _TS_TYPES])
    ts = ts_raw.try_cast("long")
    horizon = m["deleteHorizonMs"]
    is_v2 = m["baseOffset"].isNotNull()
    return {
        "offset": m["baseOffset"].try_cast("long"),
        "last_offset": F.coalesce(m["lastOffset"], m["offset"]).try_cast("long"),
        "leader_epoch": m["partitionLeaderEpoch"].try_cast("int"),
        "producer_id": m["producerId"].try_cast("long"),
        "producer_epoch": m["producerEpoch"].try_cast("int"),
        "is_transactional": F.coalesce(m["isTransactional"] == "true", F.lit(False)),
        "is_control": F.coalesce(m["isControl"] == "true", F.lit(False)),
        "create_time_ms": F.when(ts_type == "CreateTime", ts),
        "_ts": F.when((ts_type != "NoTimestampType") & (ts >= 0), ts),
        "_details": F.create_map(
            F.lit("count"), m["count"],
            F.lit("base_sequence"), m["baseSequence"],
            F.lit("last_sequence"), m["lastSequence"],
            F.lit("timestamp_type"), ts_type,
            F.lit("max_timestamp"), ts_raw,
            F.lit("position"), m["position"],
            F.lit("size"), m["size"],
            F.lit("magic"), m["magic"],
            F.lit("compresscodec"), m["compresscodec"],
            F.lit("crc"), m["crc"],
            F.lit("isvalid"), m["isvalid"],
            F.lit("delete_horizon_ms"),
            F.when(horizon.startswith("OptionalLong["), F.regexp_extract(horizon, r"\[(-?\d+)\]", 1)),
        ),
        # deleteHorizonMs is printed from 3.2.0 on (reference §4.1); legacy lines cannot tell.
        "kafka_version_hint": F.when(is_v2, F.when(horizon.isNotNull(), F.lit("3.2+")).otherwise(F.lit("2.6-3.1"))),
    }


def drop_null_values(m: Column) -> Column:
    """A details map without its null entries."""
    return F.map_filter(m, lambda _k, v: v.isNotNull())


PROVENANCE = ["file_id", "source_file", "cluster_id", "host_id", "file_order", "log_kind", "line_number"]


def parse_segment_dump(lines: DataFrame) -> DataFrame:
    """kafka-dump-log segment dump lines (log_kind ``segment-dump``) -> ``data_batch`` events (§4.1).

    offset = baseOffset, last_offset, leader_epoch = partitionLeaderEpoch, producer_id/epoch,
    is_transactional, is_control, create_time_ms (CreateTime batches), event_time = the batch
    timestamp (UTC epoch ms); count, timestamp type, sizes and crc in ``details``. A line that starts
    like a batch line but does not parse is ``__malformed__``. Record (``|``) lines yield nothing.
    """
    text = clean_text()
    base = lines.filter(F.col("log_kind") == LOG_KIND).withColumn("text", text)
    t = F.col("text")
    is_v2 = t.startswith("baseOffset: ")
    # ``offset: N position: P`` alone is an .index dump entry, not a legacy batch.
    is_legacy = t.startswith("offset: ") & t.contains(" magic: ")
    is_dumping = t.startswith("Dumping ")
    is_marker = t.startswith("|") & (t.contains("endTxnMarker: ") | t.contains("controlType: "))
    rows = base.filter(is_v2 | is_legacy | is_dumping | is_marker)

    order = Window.partitionBy("file_id").orderBy("line_number")
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    rows = (
        rows.withColumn("_kind", F.when(is_dumping, "dumping").when(is_marker, "marker").otherwise("batch"))
        # The section (path, topic-partition) is parsed once on its Dumping line and carried down.
        .withColumn("_section", F.last(F.when(is_dumping, dump_section(t)), True).over(upto))
        # A control batch's single record line follows it directly among the narrowed rows: any
        # later batch would put its own batch line in between.
        .withColumn("_next_marker", F.lead(F.when(is_marker, control_marker(t)), 1).over(order))
        .filter(F.col("_kind") == "batch")
    )
    return _batch_events(rows, event_type="data_batch")


def _batch_events(rows: DataFrame, event_type: str) -> DataFrame:
    """Batch lines (with ``_dump_path`` / ``_next_marker``) -> events, malformed where unparseable."""
    t = F.col("text")
    # Staged columns: Spark keeps a non-cheap expression used many times computed once.
    rows = rows.withColumn("_ok", t.rlike(BATCH_V2) | t.rlike(BATCH_LEGACY))
    ok = F.col("_ok")
    rows = rows.withColumn("_m", F.when(ok, batch_map(t)))
    b = batch_columns(F.col("_m"))

    def pick(name: str) -> Column:
        return F.when(ok, b[name])

    sec = F.col("_section")
    # The dump was run inside the partition directory (``Dumping 0000.log``): fall back to the
    # directory the collected file sits in, when that is a partition directory.
    from_file = dir_struct(parent_dir(F.col("source_file")))
    rows = rows.withColumn(
        "_tp",
        F.when(
            sec["topic"].isNotNull(),
            F.struct(sec["topic"].alias("topic"), sec["partition"].alias("partition"), sec["state"].alias("state"),
                     F.lit("dumping").alias("source")),
        ).otherwise(from_file.withField("source", F.lit("file_path"))),
    )
    tp = F.col("_tp")
    details = F.map_concat(
        b["_details"],
        F.create_map(
            F.lit("segment"), sec["segment"],
            F.lit("dump_path"), sec["path"],
            F.lit("dir_state"), tp["state"],
            F.lit("topic_partition_from"), F.when(tp["topic"].isNotNull(), tp["source"]),
        ),
    )
    is_control = pick("is_control")
    return rows.select(
        *PROVENANCE,
        F.lit(0).alias("sub_index"),
        F.when(ok, F.lit(event_type)).otherwise(F.lit(MALFORMED)).alias("event_type"),
        F.col("host_id").alias("broker_id"),
        F.when(ok, tp["topic"]).alias("topic"),
        F.when(ok, tp["partition"]).alias("partition"),
        F.timestamp_millis(pick("_ts")).alias("event_time"),
        pick("offset").alias("offset"),
        pick("last_offset").alias("last_offset"),
        pick("leader_epoch").alias("leader_epoch"),
        pick("producer_id").alias("producer_id"),
        pick("producer_epoch").alias("producer_epoch"),
        pick("is_transactional").alias("is_transactional"),
        is_control.alias("is_control"),
        pick("create_time_ms").alias("create_time_ms"),
        F.when(is_control, F.col("_next_marker")).alias("record_type"),
        pick("kafka_version_hint").alias("kafka_version_hint"),
        F.when(ok, drop_null_values(details))
        .otherwise(F.create_map(F.lit("reason"), F.lit("unparseable kafka-dump-log batch line")))
        .alias("details"),
        t.alias("raw"),
    )
