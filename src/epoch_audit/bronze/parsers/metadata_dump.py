"""``kafka-dump-log.sh --cluster-metadata-decoder`` output -> one ``md_*`` event per metadata record.

Reference §3.1 (record schemas) and §3.2 (decoder output). Per batch, one batch line (layout of §4.1)
then one line per record:

    | offset: <o> CreateTime: <ts> keySize: -1 valueSize: <n> sequence: -1 headerKeys: [] payload: <json>

with ``<json>`` = ``{"type":"<RECORD_TYPE>","version":<v>,"data":{...}}`` (camelCase keys in schema
order; tagged fields at their default are left out). ``--skip-record-metadata`` drops everything
before `` payload:``; then the record offset is the batch's baseOffset + the record's index.

Events: ``md_batch`` per batch line (commit points: metadata_offset = offset = baseOffset,
last_offset, quorum_epoch = partitionLeaderEpoch, create_time_ms = batch CreateTime) and one
``md_*`` per record (metadata_offset = the record's offset; offset / last_offset = its batch's range,
so records of one batch share one commit point). Record fields go to typed columns exactly as
written: PartitionChangeRecord's leader is null when the key is absent (-2 = unchanged is the
default), and its leader / partition epochs are NOT derived here (silver replays them).

Snapshot sections (§3.2: a ``<endOffset>-<epoch>.checkpoint`` file, header ``Snapshot end offset:
<o>, epoch: <e>``, or the bootstrap file, header ``KRaft bootstrap snapshot``): the raft snapshot
writer numbers its batches from offset 0, so their offsets are NOT ``__cluster_metadata`` log
offsets and would collide with the log's own records (timelines key records by metadata offset).
Their events keep type and record fields but carry no metadata_offset / offset / last_offset and
no event time (a snapshot is the state as of its end offset, not a change at a moment); the
snapshot-local offset, end offset and epoch go to ``details`` (``snapshot_offset``,
``snapshot_end_offset``, ``snapshot_epoch``, ``snapshot`` = snapshot | bootstrap).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from epoch_audit.bronze.parsers import MALFORMED
from epoch_audit.bronze.parsers.segment_dump import (
    BATCH_V2,
    DUMPING,
    PROVENANCE,
    batch_columns,
    batch_map,
    clean_text,
    control_marker,
    drop_null_values,
)

LOG_KIND = "metadata-dump"

# Record line. keySize/valueSize were spelled keysize/valuesize before 3.0: match case-insensitively.
RECORD = (
    r"(?i)^\| ?offset: (-?\d+) (CreateTime|LogAppendTime|NoTimestampType): (-?\d+) "
    r"keySize: (-?\d+) valueSize: (-?\d+)"
)
PAYLOAD = r"^.*? payload: (.*)$"
# Snapshot sections (§3.2): the header line after ``Dumping``, or the file name itself.
SNAPSHOT_HEADER = r"^Snapshot end offset: (-?\d+), epoch: (-?\d+)$"
BOOTSTRAP_HEADER = "KRaft bootstrap snapshot"
SNAPSHOT_FILE = r"(?:^|[/\\])(\d+)-(\d+)\.checkpoint$"

# Record type (decoder enum constant, §3.2) -> event type; anything else is md_other.
RECORD_EVENT_TYPES: dict[str, str] = {
    "REGISTER_BROKER_RECORD": "md_register_broker",
    "UNREGISTER_BROKER_RECORD": "md_unregister_broker",
    "BROKER_REGISTRATION_CHANGE_RECORD": "md_broker_registration_change",
    "FENCE_BROKER_RECORD": "md_fence_broker",
    "UNFENCE_BROKER_RECORD": "md_unfence_broker",
    "TOPIC_RECORD": "md_topic",
    "REMOVE_TOPIC_RECORD": "md_remove_topic",
    "PARTITION_RECORD": "md_partition",
    "PARTITION_CHANGE_RECORD": "md_partition_change",
    "BEGIN_TRANSACTION_RECORD": "md_begin_transaction",
    "END_TRANSACTION_RECORD": "md_end_transaction",
    "ABORT_TRANSACTION_RECORD": "md_abort_transaction",
}

_INTS = ArrayType(IntegerType())
# Union of the fields the typed columns need (§3.1). ``fenced`` and ``inControlledShutdown`` are
# bool in RegisterBrokerRecord but int8 tri-states in BrokerRegistrationChangeRecord: read as
# strings (Spark keeps a non-string JSON scalar's text) and interpret per record type.
DATA_SCHEMA = StructType(
    [
        StructField("brokerId", IntegerType()),
        StructField("brokerEpoch", LongType()),
        StructField("id", IntegerType()),
        StructField("epoch", LongType()),
        StructField("incarnationId", StringType()),
        StructField("isMigratingZkBroker", BooleanType()),
        StructField("rack", StringType()),
        StructField("fenced", StringType()),
        StructField("inControlledShutdown", StringType()),
        StructField("name", StringType()),
        StructField("topicId", StringType()),
        StructField("partitionId", IntegerType()),
        StructField("replicas", _INTS),
        StructField("isr", _INTS),
        StructField("removingReplicas", _INTS),
        StructField("addingReplicas", _INTS),
        StructField("leader", IntegerType()),
        StructField("leaderRecoveryState", IntegerType()),
        StructField("leaderEpoch", IntegerType()),
        StructField("partitionEpoch", IntegerType()),
        StructField("eligibleLeaderReplicas", _INTS),
        StructField("lastKnownElr", _INTS),
        StructField("reason", StringType()),
    ]
)
PAYLOAD_SCHEMA = StructType(
    [
        StructField("type", StringType()),
        StructField("version", IntegerType()),
        StructField("data", DATA_SCHEMA),
    ]
)


def record_type_name(upper_snake: Column) -> Column:
    """``PARTITION_CHANGE_RECORD`` -> ``PartitionChangeRecord`` (the schema name, §3.2)."""
    return F.regexp_replace(F.initcap(F.regexp_replace(F.lower(upper_snake), "_", " ")), " ", "")


def _ints_text(arr: Column) -> Column:
    return F.when(arr.isNotNull(), F.concat(F.lit("["), F.array_join(arr, ","), F.lit("]")))


def _tri_state(raw: Column) -> Column:
    """BrokerRegistrationChangeRecord int8 flags: 1 -> true, -1 -> false, 0 / absent -> null (no change)."""
    return F.when(raw == "1", F.lit(True)).when(raw == "-1", F.lit(False))


def parse_metadata_dump(lines: DataFrame) -> DataFrame:
    """Metadata-log dump lines (log_kind ``metadata-dump``) -> ``md_batch`` + one ``md_*`` per record.

    Lines that start like a batch or record line but do not parse, undecodable records
    (``Error at <offset>, skipping. ...``) and unreadable payloads are ``__malformed__``.
    """
    t = F.col("text")
    base = lines.filter(F.col("log_kind") == LOG_KIND).withColumn("text", clean_text())
    is_batch = t.startswith("baseOffset: ")
    is_record = t.startswith("|") | t.startswith(" payload: ")
    is_dumping = t.startswith("Dumping ")
    is_snap_header = t.startswith("Snapshot end offset: ") | (t == BOOTSTRAP_HEADER)
    rows = base.filter(is_batch | is_record | is_dumping | is_snap_header)

    order = Window.partitionBy("file_id").orderBy("line_number")
    upto = order.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    # Staged once per line (Spark does not re-inline a non-cheap expression used many times).
    rows = rows.withColumn("_bok", is_batch & t.rlike(BATCH_V2))
    batch_ok = F.col("_bok")
    rows = rows.withColumn("_m", F.when(batch_ok, batch_map(t)))
    b = batch_columns(F.col("_m"))

    def batch_struct(present: Column) -> Column:
        def f(c: Column) -> Column:
            return F.when(present, c)

        return F.struct(
            f(F.col("line_number")).alias("line"),
            f(b["offset"]).alias("base"),
            f(b["last_offset"]).alias("last"),
            f(b["leader_epoch"]).alias("epoch"),
            f(b["create_time_ms"]).alias("create_time_ms"),
            f(b["is_control"]).alias("is_control"),
        )

    # Batch lines carry their batch; a section header carries an all-null one, so that records
    # never attach to a batch of an earlier section.
    batch = F.when(batch_ok, batch_struct(F.lit(True))).when(is_dumping, batch_struct(F.lit(False)))
    rows = (
        rows.withColumn("_dump_path", F.last(F.when(is_dumping, F.regexp_extract(t, DUMPING, 1)), True).over(upto))
        .withColumn(
            "_batch",
            F.last(batch, True).over(upto),
        )
        .withColumn("_snap", F.last(_snapshot_section(t, is_dumping, is_snap_header), True).over(upto))
        .withColumn("_next_marker", F.lead(F.when(is_record, control_marker(t)), 1).over(order))
        .filter(~is_dumping & ~is_snap_header)
    )
    batches = _batch_events(rows.filter(is_batch))
    records = _record_events(rows.filter(~is_batch))
    return batches.unionByName(records, allowMissingColumns=True)


def _snapshot_section(t: Column, is_dumping: Column, is_snap_header: Column) -> Column:
    """struct(is_snapshot, kind, end_offset, epoch) set on ``Dumping`` and snapshot header lines."""
    path = F.regexp_extract(t, DUMPING, 1)
    name = F.regexp_extract(path, r"([^/\\]+)$", 1)
    from_path = F.struct(
        path.endswith(".checkpoint").alias("is_snapshot"),
        F.when(name == "bootstrap.checkpoint", F.lit("bootstrap"))
        .when(path.endswith(".checkpoint"), F.lit("snapshot"))
        .alias("kind"),
        F.nullif(F.regexp_extract(path, SNAPSHOT_FILE, 1), F.lit("")).try_cast("long").alias("end_offset"),
        F.nullif(F.regexp_extract(path, SNAPSHOT_FILE, 2), F.lit("")).try_cast("int").alias("epoch"),
    )
    from_header = F.struct(
        F.lit(True).alias("is_snapshot"),
        F.when(t == BOOTSTRAP_HEADER, F.lit("bootstrap")).otherwise(F.lit("snapshot")).alias("kind"),
        F.nullif(F.regexp_extract(t, SNAPSHOT_HEADER, 1), F.lit("")).try_cast("long").alias("end_offset"),
        F.nullif(F.regexp_extract(t, SNAPSHOT_HEADER, 2), F.lit("")).try_cast("int").alias("epoch"),
    )
    return F.when(is_dumping, from_path).when(is_snap_header, from_header)


def _snapshot_details(snap: Column, local_offset: Column) -> Column:
    """details entries of an event inside a snapshot section (all null outside one)."""
    inside = F.coalesce(snap["is_snapshot"], F.lit(False))
    return F.create_map(
        F.lit("snapshot"), F.when(inside, snap["kind"]),
        F.lit("snapshot_end_offset"), F.when(inside, snap["end_offset"].cast("string")),
        F.lit("snapshot_epoch"), F.when(inside, snap["epoch"].cast("string")),
        F.lit("snapshot_offset"), F.when(inside, local_offset.cast("string")),
    )


def _batch_events(rows: DataFrame) -> DataFrame:
    t = F.col("text")
    b = batch_columns(F.col("_m"))
    snap = F.col("_snap")
    # Snapshot batches are numbered from 0 by the snapshot writer: not log offsets (no commit point).
    in_log = ~F.coalesce(snap["is_snapshot"], F.lit(False))
    ok = F.col("_bok")
    log_ok = ok & in_log
    details = F.map_concat(
        b["_details"],
        F.create_map(F.lit("dump_path"), F.col("_dump_path")),
        _snapshot_details(snap, b["offset"]),
        F.create_map(F.lit("snapshot_last_offset"), F.when(~in_log, b["last_offset"].cast("string"))),
    )
    is_control = F.when(ok, b["is_control"])
    return rows.select(
        *PROVENANCE,
        F.lit(0).alias("sub_index"),
        F.when(ok, F.lit("md_batch")).otherwise(F.lit(MALFORMED)).alias("event_type"),
        F.col("host_id").alias("broker_id"),
        F.when(log_ok, b["offset"]).alias("metadata_offset"),
        F.when(log_ok, b["offset"]).alias("offset"),
        F.when(log_ok, b["last_offset"]).alias("last_offset"),
        F.when(ok, b["leader_epoch"]).alias("quorum_epoch"),
        F.when(log_ok, b["create_time_ms"]).alias("create_time_ms"),
        F.timestamp_millis(F.when(log_ok, b["_ts"])).alias("event_time"),
        F.when(ok, b["producer_id"]).alias("producer_id"),
        F.when(ok, b["producer_epoch"]).alias("producer_epoch"),
        F.when(ok, b["is_transactional"]).alias("is_transactional"),
        is_control.alias("is_control"),
        # Control batches (raft LEADER_CHANGE, snapshot header/footer...) hold no metadata record.
        F.when(is_control, F.col("_next_marker")).alias("record_type"),
        F.when(ok, drop_null_values(details))
        .otherwise(F.create_map(F.lit("reason"), F.lit("unparseable kafka-dump-log batch line")))
        .alias("details"),
        t.alias("raw"),
    )


def _record_events(rows: DataFrame) -> DataFrame:
    t = F.col("text")
    # Staged once per line: the record-metadata prefix (one regex split), then the payload JSON.
    rows = (
        rows.withColumn("_head", F.when(t.rlike(RECORD), F.split(t, " ", 7)))
        .withColumn("_payload", F.when(t.contains(" payload: "), F.regexp_extract(t, PAYLOAD, 1)))
    )
    has_meta = F.col("_head").isNotNull()
    head = F.col("_head")
    # ``| offset: <o> <tsType>: <ts> keySize: ..`` split on spaces: [|, offset:, o, tsType:, ts, ...]
    # (``|offset:`` without the space shifts by one; the reference prints the space).
    shift = F.when(head[0] == "|", F.lit(0)).otherwise(F.lit(-1))
    rec_offset = F.when(has_meta, F.element_at(head, shift + 3).try_cast("long"))
    rec_ts_type = F.element_at(head, shift + 4)
    rec_ts = F.when(has_meta & (rec_ts_type == "CreateTime:"), F.element_at(head, shift + 5).try_cast("long"))
    payload = F.col("_payload")
    has_payload = payload.isNotNull()
    parsed = F.from_json(payload, PAYLOAD_SCHEMA)

    bt = F.col("_batch")
    # Index of the record inside its batch: records print one line each, right after the batch line.
    index_offset = bt["base"] + (F.col("line_number") - bt["line"] - 1)
    offset_guess = F.coalesce(rec_offset, index_offset)
    # A record belongs to the batch above it only if its offset lies in that batch's range (a
    # snippet with batch lines cut out must not borrow a wrong quorum epoch).
    in_batch = bt["line"].isNotNull() & offset_guess.between(bt["base"], bt["last"])
    local_offset = F.when(in_batch, offset_guess).otherwise(rec_offset)
    create_time_any = F.when(in_batch, bt["create_time_ms"]).otherwise(rec_ts)
    # Inside a snapshot section offsets are snapshot-local (numbered from 0): no log position.
    snap = F.col("_snap")
    in_log = ~F.coalesce(snap["is_snapshot"], F.lit(False))
    metadata_offset = F.when(in_log, local_offset)
    create_time = F.when(in_log, create_time_any)
    in_control = in_batch & bt["is_control"]

    rtype = F.col("_p.type")
    d = F.col("_p.data")
    undecodable = payload.startswith("Error at ")
    unparsed = has_payload & ~undecodable & rtype.isNull()
    no_offset = has_payload & local_offset.isNull() & in_log
    bad_line = ~has_meta & ~has_payload & ~in_control
    malformed_reason = (
        F.when(undecodable, F.concat(F.lit("undecodable metadata record: "), payload))
        .when(unparsed, F.lit("unparseable metadata record payload"))
        .when(no_offset, F.lit("metadata record without offset or batch"))
        .when(bad_line & t.startswith("|"), F.lit("unparseable kafka-dump-log record line"))
    )
    event_type = F.when(malformed_reason.isNotNull(), F.lit(MALFORMED)).when(
        has_payload,
        F.coalesce(
            F.element_at(F.create_map(*[F.lit(x) for kv in RECORD_EVENT_TYPES.items() for x in kv]), rtype),
            F.lit("md_other"),
        ),
    )
    et = F.col("event_type")
    is_broker_rec = et.isin(
        "md_register_broker", "md_unregister_broker", "md_broker_registration_change",
        "md_fence_broker", "md_unfence_broker",
    )
    is_partition_rec = et.isin("md_partition", "md_partition_change")
    is_brc = et == "md_broker_registration_change"
    is_reg = et == "md_register_broker"
    fenced = (
        # RegisterBrokerRecord: Fenced bool (0+, default true; absent in 2.8 where a new
        # registration was fenced), InControlledShutdown bool (1+, default false).
        F.when(is_reg, F.coalesce(d["fenced"], F.lit("true")) == "true")
        .when(is_brc, _tri_state(d["fenced"]))
        .when(et == "md_fence_broker", F.lit(True))
        .when(et == "md_unfence_broker", F.lit(False))
    )
    in_cs = F.when(is_reg, F.coalesce(d["inControlledShutdown"], F.lit("false")) == "true").when(
        is_brc, F.when(d["inControlledShutdown"] == "1", F.lit(True))
    )
    fence_rec = et.isin("md_fence_broker", "md_unfence_broker")
    details = F.create_map(
        F.lit("record_version"), F.col("_p.version").cast("string"),
        # The record's own timestamp only where it says more than the batch's.
        F.lit("record_create_time_ms"),
        F.when(~in_log | ~in_batch | ~rec_ts.eqNullSafe(bt["create_time_ms"]), rec_ts.cast("string")),
        F.lit("fenced_raw"), F.when(is_brc | is_reg, d["fenced"]),
        F.lit("in_controlled_shutdown_raw"), F.when(is_brc | is_reg, d["inControlledShutdown"]),
        F.lit("incarnation_id"), d["incarnationId"],
        F.lit("rack"), F.when(is_reg, d["rack"]),
        F.lit("is_migrating_zk_broker"), F.when(is_reg, d["isMigratingZkBroker"].cast("string")),
        F.lit("leader_recovery_state"), F.when(is_partition_rec, d["leaderRecoveryState"].cast("string")),
        F.lit("elr"), F.when(is_partition_rec, _ints_text(d["eligibleLeaderReplicas"])),
        F.lit("last_known_elr"), F.when(is_partition_rec, _ints_text(d["lastKnownElr"])),
        F.lit("name"), F.when(et.isin("md_begin_transaction", "md_other"), d["name"]),
        F.lit("reason"), F.when(et == "md_abort_transaction", d["reason"]),
        # Other records (Config, FeatureLevel, ProducerIds, NoOp, ...) keep their data JSON.
        F.lit("data"), F.when(et == "md_other", F.regexp_extract(payload, r'"data":(\{.*\})\}$', 1)),
    )
    out = (
        rows.withColumn("_p", parsed)
        .withColumn("event_type", event_type)
        .filter(F.col("event_type").isNotNull())
        .select(
            *PROVENANCE,
            F.lit(0).alias("sub_index"),
            "event_type",
            F.when(et == MALFORMED, F.create_map(F.lit("reason"), malformed_reason))
            .otherwise(drop_null_values(F.map_concat(details, _snapshot_details(snap, local_offset))))
            .alias("details"),
            F.when(et == MALFORMED, F.lit(None)).otherwise(record_type_name(rtype)).alias("record_type"),
            F.when(is_broker_rec, F.coalesce(d["brokerId"], d["id"])).otherwise(F.col("host_id")).alias(
                "broker_id"
            ),
            F.when(is_broker_rec, F.coalesce(d["brokerEpoch"], d["epoch"])).alias("broker_epoch"),
            F.when(is_reg | is_brc | fence_rec, fenced).alias("fenced"),
            in_cs.alias("in_controlled_shutdown"),
            F.when(et == "md_topic", d["name"]).alias("_topic_name"),
            d["topicId"].alias("topic_id"),
            F.when(is_partition_rec, d["partitionId"]).alias("partition"),
            F.when(is_partition_rec, d["leader"]).alias("leader"),
            F.when(et == "md_partition", d["leaderEpoch"]).alias("leader_epoch"),
            F.when(et == "md_partition", d["partitionEpoch"]).alias("partition_epoch"),
            F.when(is_partition_rec, d["isr"]).alias("isr"),
            F.when(is_partition_rec, d["replicas"]).alias("replicas"),
            F.when(is_partition_rec, d["addingReplicas"]).alias("adding_replicas"),
            F.when(is_partition_rec, d["removingReplicas"]).alias("removing_replicas"),
            F.when(et != MALFORMED, metadata_offset).alias("metadata_offset"),
            F.when((et != MALFORMED) & in_batch & in_log, bt["base"]).alias("offset"),
            F.when((et != MALFORMED) & in_batch & in_log, bt["last"]).alias("last_offset"),
            F.when((et != MALFORMED) & in_batch, bt["epoch"]).alias("quorum_epoch"),
            F.when(et != MALFORMED, create_time).alias("create_time_ms"),
            F.when(et != MALFORMED, F.timestamp_millis(create_time)).alias("event_time"),
            t.alias("raw"),
        )
    )
    # Topic name for records that carry only the topic id: from the same file's TopicRecord.
    by_topic = Window.partitionBy("file_id", "topic_id")
    named = F.first("_topic_name", ignorenulls=True).over(by_topic)
    return out.withColumn("topic", F.when(F.col("topic_id").isNotNull(), named)).drop("_topic_name")

