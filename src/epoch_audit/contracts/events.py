"""The bronze event contract shared by every parser, the timelines and the checks.

One row of ``bronze/events`` is one audit event. A log line may yield several events (a
"Removed fetcher for partitions Set(a-0, b-1)" line yields one per partition: ``sub_index``
tells them apart). Every parser returns rows with the *key columns* below plus whichever
*typed columns* its template fills; :func:`epoch_audit.bronze.parsers.finish_events` adds the rest as
nulls, in this order, so every parser's output unions by position.

Column meanings (``None`` when the template does not carry the value):

Key / provenance
  event_id            deterministic sha256 of (file identity, line_number, sub_index)
  event_type          one of EVENT_TYPES
  cluster_id          from a ``cluster=<id>`` path segment, ``--cluster-id`` or config
  host_id             the host the file came from (``broker-<id>``/``broker=<id>``/``node-<id>`` path segment)
  broker_id           the broker whose action or log this is: the line's own id (``[Broker id=N]``,
                      ``[Partition t-p broker=N]``, ``[QuorumController id=N]``...) else host_id;
                      for KRaft broker records (RegisterBrokerRecord, fence...) the broker the record is about
  topic, partition    topic-partition (split on the LAST ``-``)
  topic_id            22-char Uuid where the event carries one
  event_time          timestamp as written, read in ``source_time_zone`` (epoch-ms fields are UTC)
  source_file         path of the input file
  file_id             sha256 identity of the file's content stream (see epoch_audit.stages.ingest)
  file_order          sortable rank of the file among its host's files of one log: rotation or copy
                      suffix as a number (yyyyMMddHH[mmss]), live file last (99999999999999)
  line_number         1-based line in the file of the event's first line
  sub_index           0.. when one line yields several events
  log_kind            state-change | controller | server | request | segment-dump | metadata-dump |
                      leader-epoch-checkpoint | replication-offset-checkpoint | log-start-offset-checkpoint |
                      partition-metadata | redpanda | other
  level, logger       log4j / seastar level and logger
  kafka_version_hint  e.g. "2.6-3.2", "3.5+" where the template pins a version range
  raw                 the event's text (first line + continuation lines), wrapper stripped

Typed epochs / ids / offsets
  controller_id          controller that sent / logged the request (``from controller <id>``)
  controller_epoch       the REQUEST's controller epoch (``epoch <n>`` after the correlation id,
                         ``[Controller id=N epoch=E]``, request-log top-level ``controllerEpoch``)
  state_controller_epoch ``controllerEpoch`` inside a partition state (epoch of the controller that
                         last elected the leader) — never mix with controller_epoch
  known_controller_epoch ``Latest known controller epoch is <n>``
  correlation_id
  leader                 leader broker id in a state / decision
  leader_epoch           the LE at issue: request LE, new LE of a leader/follower start, batch
                         partitionLeaderEpoch, Redpanda term
  current_leader_epoch   the broker's current LE when the line states it (``current leader epoch <n>``)
  prev_leader_epoch      ``previous leader epoch was <n>``
  partition_epoch        partition epoch / zkVersion
  isr, replicas          array<int>
  isr_broker_epochs      array<long> aligned with isr (``newIsrWithEpochs``/``BrokerState``), -1 = unknown
  adding_replicas, removing_replicas  array<int>
  replica_id             the OTHER broker the event is about: fetching replica, replica joining/leaving
                         the ISR, target broker of a controller send, ineligible replica
  broker_epoch           a broker epoch: registered BE (records), request brokerEpoch, fetch replicaEpoch
  offset                 start offset / base offset / fetch offset / checkpoint offset
  last_offset            last offset of a batch
  high_watermark         HW (leader lines, checkpoint, fetch response)
  log_start_offset
  error                  error name (NONE, FENCED_LEADER_EPOCH, INELIGIBLE_REPLICA...) where known
  delete_partition       StopReplica delete flag
  fenced, in_controlled_shutdown   broker registration state flags (KRaft records)
  metadata_offset        KRaft metadata-log offset of the record
  quorum_epoch           metadata batch partitionLeaderEpoch (Raft quorum epoch)
  create_time_ms         batch/record CreateTime (epoch ms, UTC)
  producer_id, producer_epoch, is_transactional, is_control   data batch fields
  record_type            KRaft record type name (``PartitionChangeRecord``...) or control type
  api_key                request-log ``requestApiKeyName``
  api_version            request-log ``requestApiVersion``
  details                map<string,string> for anything else worth keeping (reason texts...)
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

_INT = IntegerType()
_LONG = LongType()
_STR = StringType()
_BOOL = BooleanType()

KEY_FIELDS: list[StructField] = [
    StructField("event_id", _STR, False),
    StructField("event_type", _STR, False),
    StructField("cluster_id", _STR, True),
    StructField("host_id", _INT, True),
    StructField("broker_id", _INT, True),
    StructField("topic", _STR, True),
    StructField("partition", _INT, True),
    StructField("topic_id", _STR, True),
    StructField("event_time", TimestampType(), True),
    StructField("source_file", _STR, True),
    StructField("file_id", _STR, True),
    StructField("file_order", _LONG, True),
    StructField("line_number", _LONG, True),
    StructField("sub_index", _INT, True),
    StructField("log_kind", _STR, True),
    StructField("level", _STR, True),
    StructField("logger", _STR, True),
    StructField("kafka_version_hint", _STR, True),
    StructField("raw", _STR, True),
]

TYPED_FIELDS: list[StructField] = [
    StructField("controller_id", _INT, True),
    StructField("controller_epoch", _INT, True),
    StructField("state_controller_epoch", _INT, True),
    StructField("known_controller_epoch", _INT, True),
    StructField("correlation_id", _LONG, True),
    StructField("leader", _INT, True),
    StructField("leader_epoch", _INT, True),
    StructField("current_leader_epoch", _INT, True),
    StructField("prev_leader_epoch", _INT, True),
    StructField("partition_epoch", _INT, True),
    StructField("isr", ArrayType(_INT), True),
    StructField("replicas", ArrayType(_INT), True),
    StructField("isr_broker_epochs", ArrayType(_LONG), True),
    StructField("adding_replicas", ArrayType(_INT), True),
    StructField("removing_replicas", ArrayType(_INT), True),
    StructField("replica_id", _INT, True),
    StructField("broker_epoch", _LONG, True),
    StructField("offset", _LONG, True),
    StructField("last_offset", _LONG, True),
    StructField("high_watermark", _LONG, True),
    StructField("log_start_offset", _LONG, True),
    StructField("error", _STR, True),
    StructField("delete_partition", _BOOL, True),
    StructField("fenced", _BOOL, True),
    StructField("in_controlled_shutdown", _BOOL, True),
    StructField("metadata_offset", _LONG, True),
    StructField("quorum_epoch", _INT, True),
    StructField("create_time_ms", _LONG, True),
    StructField("producer_id", _LONG, True),
    StructField("producer_epoch", _INT, True),
    StructField("is_transactional", _BOOL, True),
    StructField("is_control", _BOOL, True),
    StructField("record_type", _STR, True),
    StructField("api_key", _STR, True),
    StructField("api_version", _INT, True),
    StructField("details", MapType(_STR, _STR), True),
]

EVENT_SCHEMA = StructType(KEY_FIELDS + TYPED_FIELDS)
EVENT_COLUMNS: list[str] = [f.name for f in EVENT_SCHEMA.fields]

# What each column holds, in one line: the Delta column comment of bronze/events (and of the carried
# events of state/traffic_carry) and docs/tables.md (epoch_audit.contracts.descriptions).
EVENT_COLUMN_DESCRIPTIONS: dict[str, str] = {
    "event_id": "Deterministic sha256 of (file identity, line number, sub index): the event's id.",
    "event_type": "What the event is: a key of EVENT_TYPES (epoch_audit.contracts.events).",
    "cluster_id": "Cluster the file belongs to: a cluster=<id> path segment, --cluster-id or the config.",
    "host_id": "Host the file came from (broker-<id>, broker=<id> or node-<id> path segment).",
    "broker_id": "Broker whose action or log this is: the line's own id, else host_id; for KRaft broker "
                 "records the broker the record is about.",
    "topic": "Topic of the topic-partition (split on the last '-').",
    "partition": "Partition number of the topic-partition.",
    "topic_id": "Kafka topic id (22-character Uuid) where the event carries one.",
    "event_time": "Time the line states, read in ingest.source_time_zone (epoch-ms fields are UTC).",
    "source_file": "Path of the input file, as found under --input.",
    "file_id": "sha256 identity of the file's content stream (cluster, host, log name, first line).",
    "file_order": "Sortable rank of the file among its host's files of one log: rotation suffix as a number, "
                  "the live file last (99999999999999).",
    "line_number": "1-based line of the event's first line in the file.",
    "sub_index": "0.. when one line yields several events.",
    "log_kind": "Kind of log: state-change, controller, server, request, segment-dump, metadata-dump, "
                "a checkpoint kind, partition-metadata, redpanda or other.",
    "level": "log4j / Seastar level of the line.",
    "logger": "log4j logger (or Seastar logger) of the line.",
    "kafka_version_hint": "Kafka version range the line's template pins, e.g. '3.5+'.",
    "raw": "The event's text (first line and continuation lines), wrapper stripped, secrets redacted.",
    "controller_id": "Controller that sent or logged the request.",
    "controller_epoch": "The request's controller epoch (never a partition state's).",
    "state_controller_epoch": "controllerEpoch inside a partition state: the epoch of the controller that "
                              "last elected the leader.",
    "known_controller_epoch": "The broker's latest known controller epoch, where a refusal states it.",
    "correlation_id": "Request correlation id.",
    "leader": "Leader broker id in a partition state or decision.",
    "leader_epoch": "The leader epoch at issue: request LE, new LE of a leader/follower start, batch "
                    "partitionLeaderEpoch, Redpanda term.",
    "current_leader_epoch": "The broker's current leader epoch, where the line states it.",
    "prev_leader_epoch": "The previous leader epoch, where the line states it.",
    "partition_epoch": "Partition epoch (KRaft) or zkVersion (ZooKeeper).",
    "isr": "In-sync replicas of the state.",
    "replicas": "Assigned replicas of the state.",
    "isr_broker_epochs": "Broker epochs aligned with isr (newIsrWithEpochs / BrokerState); -1 unknown.",
    "adding_replicas": "Replicas being added by a reassignment.",
    "removing_replicas": "Replicas being removed by a reassignment.",
    "replica_id": "The other broker the event is about: fetching replica, replica joining or leaving the ISR, "
                  "target of a controller send, ineligible replica.",
    "broker_epoch": "A broker epoch: registered epoch (records), request brokerEpoch, fetch replicaEpoch.",
    "offset": "Start, base, fetch or checkpoint offset.",
    "last_offset": "Last offset of a batch.",
    "high_watermark": "High watermark (leader lines, checkpoint, fetch response).",
    "log_start_offset": "Log start offset.",
    "error": "Error name (NONE, FENCED_LEADER_EPOCH, INELIGIBLE_REPLICA...) where known.",
    "delete_partition": "StopReplica delete flag.",
    "fenced": "Broker registration fenced flag (KRaft records).",
    "in_controlled_shutdown": "Broker registration in-controlled-shutdown flag (KRaft records).",
    "metadata_offset": "KRaft metadata-log offset of the record.",
    "quorum_epoch": "Metadata batch partitionLeaderEpoch (the Raft quorum epoch).",
    "create_time_ms": "Batch or record CreateTime, epoch milliseconds (UTC).",
    "producer_id": "Producer id of a data batch.",
    "producer_epoch": "Producer epoch of a data batch.",
    "is_transactional": "Whether a data batch is transactional.",
    "is_control": "Whether a batch is a control batch.",
    "record_type": "KRaft record type name (PartitionChangeRecord...) or control record type.",
    "api_key": "Request-log requestApiKeyName.",
    "api_version": "Request-log requestApiVersion.",
    "details": "Anything else worth keeping (reason texts...), by name.",
    "event_date": "UTC day of event_time (null without one): a partition column.",
    "event_class": "state (controller decisions, leader lines, records, dumps, checkpoints) or traffic "
                   "(request-log FETCH and PRODUCE per partition): a partition column.",
    "own_time": "Running maximum of event_time along the file's lines: the event's time in its own log order.",
}

# Storage layout column of bronze/events (not a parser output): the UTC day of the event time.
EVENT_DATE_COLUMN = "event_date"
_MICROS_PER_DAY = 86_400_000_000


def event_date(event_time: Column) -> Column:
    """UTC calendar day of ``event_time`` (null without a time), whatever the session time zone.

    Plain arithmetic on epoch microseconds: ``to_date`` would use the session time zone, and a
    cluster session need not run in UTC.
    """
    return F.date_from_unix_date(F.floor(F.unix_micros(event_time) / _MICROS_PER_DAY).cast("int"))


# Storage layout columns of bronze/events for nightly runs (see epoch_audit.stages.pipeline, "Carried traffic"):
# ``event_class`` separates the request log's per-partition FETCH / PRODUCE lines (``traffic``:
# nearly all of a busy cluster's lines, read by a nightly run only from its horizon on, plus the
# few older ones a check still needs) from everything else (``state``: epochs, registrations,
# decisions, dumps, checkpoints; always read whole). ``own_time`` is the running maximum of
# event_time along the event's file (``epoch_audit.silver.timelines.with_own_order``), computed at ingest
# over every line of the file, so that reading only some classes keeps every event's own order.
EVENT_CLASS_COLUMN = "event_class"
OWN_TIME_COLUMN = "own_time"
TRAFFIC_TYPES = ("request_fetch", "request_produce")


def event_class(event_type: Column) -> Column:
    """``traffic`` for the high-volume request-log types (:data:`TRAFFIC_TYPES`), else ``state``."""
    return F.when(event_type.isin(*TRAFFIC_TYPES), F.lit("traffic")).otherwise(F.lit("state"))

# Every event_type a parser may emit, grouped by source. Adding one: add it here and a row in
# docs/formats.md. Names are stable (checks filter on them).
EVENT_TYPES: dict[str, str] = {
    # --- ZK broker, StopReplica (§1.1) ---
    "stop_replica_request": "S1 Handling StopReplica request (whole request)",
    "stop_replica_received": "S2 TRACE Received StopReplica ... partition state (request LE, delete flag, CE)",
    "stop_replica_stale_controller": "S3 Ignoring StopReplica ... controller epoch is old",
    "stop_replica_storage_error": "S4/S7/S8/S9 offline log dir or delete failure",
    "stop_replica_fenced": "S5 Ignoring StopReplica ... leader epoch X is smaller than current Y",
    "stop_replica_equal_epoch_refused": "S6 Ignoring StopReplica ... matches the current leader epoch (2.6.0-3.4.0)",
    "stop_replica_stale_broker_epoch": "KafkaApis: StopReplica with stale broker epoch",
    "fetcher_removed": "Removed fetcher for partitions ... (one event per partition)",
    "fetcher_added": "Added fetcher ... (one event per partition)",
    "log_deletion_scheduled": "Log for partition ... is renamed ... scheduled for deletion",
    "log_deleted": "Deleted log for partition ...",
    # --- ZK broker, LeaderAndIsr (§1.2) ---
    "leader_and_isr_request": "L1 Handling LeaderAndIsr request (whole request)",
    "leader_and_isr_received": "L2 TRACE Received LeaderAndIsr request <partitionState>",
    "leader_and_isr_stale_controller": "L3 Ignoring LeaderAndIsr ... controller epoch is old",
    "leader_and_isr_stale_epoch": "L6 Ignoring LeaderAndIsr ... leader epoch smaller",
    "leader_and_isr_equal_epoch": "L7 Ignoring LeaderAndIsr ... matches the current leader epoch",
    "leader_and_isr_other_refusal": "L4/L5/L10/L15 other refusals",
    "leader_and_isr_fetchers_stopped": "L11/L12 Stopped fetchers as part of LeaderAndIsr (request CE)",
    "leader_and_isr_stale_broker_epoch": "KafkaApis: LeaderAndIsr with stale broker epoch",
    "become_leader": "Leader <tp> ... starts at leader epoch N from offset O ... high watermark H",
    "become_follower": "Follower <tp> starts at leader epoch N from offset O ...",
    "become_leader_skipped": "Skipped the become-leader state change ...",
    "become_follower_skipped": "Skipped the become-follower state change ...",
    # --- ZK broker, UpdateMetadata (§1.5) ---
    "update_metadata_applied": "U3/U4 UpdateMetadata applied (raises known CE)",
    "update_metadata_partition_deleted": "U2 Deleted partition ... from metadata cache",
    "update_metadata_stale_controller": "U1 update metadata from an old controller",
    "update_metadata_stale_broker_epoch": "KafkaApis: UpdateMetadata with stale broker epoch",
    # --- ZK controller (§1.3) ---
    "controller_send_leader_and_isr": "Sending become-leader/follower LeaderAndIsr request <state> to broker",
    "controller_send_stop_replica": "Sending StopReplica request <state> to broker",
    "controller_send_update_metadata": "Sending UpdateMetadata request to brokers",
    "controller_partition_state_change": "Changed partition <tp> from A to B with state LeaderAndIsr(...)",
    "controller_isr_change": "Partition <tp> state changed to (Leader:..,ISR:..) after removing replica",
    "controller_reassignment_send": "Sent LeaderAndIsr request (Leader:..) with new replica assignment",
    "controller_alter_partition_rejected": "ZK/KRaft controller rejecting an AlterPartition (reason in details)",
    "controller_isr_updated": "ZK: ISR for partition <tp> updated to ...; KRaft: Node N has altered ISR",
    "controller_failover": "controller elected / resigned / epoch change lines",
    "controller_partition_diff": "KRaft '[UNCLEAN ]partition change for <tp>: <key>: old -> new, ...' "
    "(new leader/LE/PE/ISR; prev_leader_epoch = old LE; details.unclean)",
    "controller_fencing_broker": "KRaft 'Fencing broker N because its session has timed out.' (decision, fenced=true)",
    # --- ISR, leader side (§2) ---
    "isr_shrink": "Shrinking ISR from A to B",
    "isr_expand": "Expanding ISR from A to B (2.6/2.7) or Submitting/Enqueued pending expand",
    "isr_updated": "ISR updated to ... and version updated to ...",
    "alter_partition_failed": "Failed to alter partition ... rejected with <error> (INELIGIBLE_REPLICA...)",
    "alter_partition_stale_broker_epoch": "Broker had a stale broker epoch (N), retrying.",
    # --- fetch / produce rejections (§6) ---
    "fetch_epoch_error": "fetcher / leader side FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH lines",
    "produce_error": "produce rejected (NOT_LEADER_OR_FOLLOWER ...)",
    "log_start_offset_incremented": "Incremented log start offset to N (§4.3)",
    "log_truncated": "Truncating / truncated to offset (§4.3, fetcher)",
    # --- KRaft metadata log (§3), one per record; record_type names the record ---
    "md_register_broker": "RegisterBrokerRecord (broker_id, broker_epoch, fenced, in_controlled_shutdown)",
    "md_unregister_broker": "UnregisterBrokerRecord",
    "md_broker_registration_change": "BrokerRegistrationChangeRecord (fenced / in_controlled_shutdown changes)",
    "md_fence_broker": "FenceBrokerRecord",
    "md_unfence_broker": "UnfenceBrokerRecord",
    "md_topic": "TopicRecord (topic, topic_id)",
    "md_remove_topic": "RemoveTopicRecord",
    "md_partition": "PartitionRecord (full state: leader, LE, PE, isr, replicas)",
    "md_partition_change": "PartitionChangeRecord (only the fields present; LE/PE derived by replay)",
    "md_begin_transaction": "BeginTransactionRecord",
    "md_end_transaction": "EndTransactionRecord",
    "md_abort_transaction": "AbortTransactionRecord",
    "md_other": "any other metadata record (Config, FeatureLevel, ProducerIds, NoOp, ...)",
    "md_batch": "a metadata-log batch header (quorum epoch, base/last offset, CreateTime)",
    "controller_replayed": "controller.log 'Replayed <Record> ...' lines (registration, partition changes)",
    "raft_state_transition": "KRaft raft 'Completed transition to ...' (quorum epoch, leader)",
    # --- data segments (§4.1) and checkpoints (§4.2) ---
    "data_batch": "kafka-dump-log batch (offset..last_offset, leader_epoch, producer, CreateTime)",
    "checkpoint_leader_epoch": "leader-epoch-checkpoint entry (leader_epoch, offset = start offset)",
    "checkpoint_replication_offset": "replication-offset-checkpoint entry (high_watermark)",
    "checkpoint_recovery_offset": "recovery-point-offset-checkpoint entry (offset)",
    "checkpoint_log_start_offset": "log-start-offset-checkpoint entry (log_start_offset)",
    "partition_metadata": "partition.metadata (topic_id)",
    # --- request log (§5): one event per partition of the request ---
    "request_produce": "PRODUCE completed request, per partition (error, offset=baseOffset)",
    "request_fetch": (
        "FETCH completed request, per partition "
        "(replica_id, broker_epoch=replicaEpoch, offset=fetchOffset, high_watermark)"
    ),
    "request_stop_replica": "STOP_REPLICA completed request, per partition (leader_epoch, error)",
    "request_leader_and_isr": "LEADER_AND_ISR completed request, per partition",
    "request_update_metadata": "UPDATE_METADATA completed request (controller_epoch)",
    "request_alter_partition": (
        "ALTER_PARTITION completed request, per partition "
        "(isr, isr_broker_epochs, error, partition_epoch from response)"
    ),
    # --- Redpanda (§7) ---
    "rp_becoming_leader": "becoming the leader term:N",
    "rp_became_leader": "became the leader term: N",
    "rp_step_down": "Stepping down as leader in term N",
    "rp_vote_request": "Received vote request with larger term ... received R, current C",
    "rp_vote_sent": "Sending vote request / Voting for self in term",
    "rp_vote_reply": "vote reply from <node> - {term:..., vote_granted...}",
    "rp_vote_granted": "vote granted / already voted lines",
    "rp_new_term": "append entries 'Setting new term' / term adoption",
    "rp_recovered_state": "recovered persistent state (term)",
    "rp_started_raft": "Started raft ... term: N",
    "rp_leadership_notification": "leadership change notification (node, term)",
    "rp_truncate": "truncation / log suffix removal",
    "rp_vote_refused": "voter: not granting vote to node N (priority / already heard from the leader)",
    "rp_vote_failed": "candidate: vote failed (larger term received, longer log elsewhere, no majority...)",
    "rp_election_started": "v24.2+ starting pre-vote leader election / pre-vote phase success (current term)",
    "rp_leadership_transfer": "Starting leadership transfer from A to B in term N",
    "rp_leader_config_failed": "unable to replicate configuration as a leader (after becoming the leader)",
    "rp_partition_leader_updated": "cluster partition_leaders_table: updated partition ntp leader: {term, leader}",
}
