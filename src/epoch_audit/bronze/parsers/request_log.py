"""Kafka request log ``Completed request:`` lines (reference §5, §6.4) -> ``request_*`` events.

Input: ``records`` (see :mod:`epoch_audit.bronze.parsers`) whose message starts with ``Completed request:``
(logger ``kafka.request.logger``, DEBUG).

2.8+ (KIP-673): the message is ``Completed request:`` + compact JSON. Lines whose
``requestApiKeyName`` is PRODUCE, FETCH, STOP_REPLICA, LEADER_AND_ISR, UPDATE_METADATA,
ALTER_PARTITION (or its pre-3.2 name ALTER_ISR) are parsed with ``from_json`` and an explicit
schema per API (all versions' fields; a field absent from a version parses as null), and yield one
event per partition of the request, ``sub_index`` = position in request order. The response
partition is matched by (topic name or topic id, partition index). Column mapping:

* every API: ``api_key`` (requestApiKeyName), ``api_version``, ``correlation_id``; ``broker_id`` =
  the logging broker (``host_id``) except ALTER_PARTITION; ``error`` = the response partition's
  error NAME, else (no partition entry, e.g. a whole-request refusal that lists no partitions) the
  top-level error when non-zero; ``details.error_code`` keeps the number.
* STOP_REPLICA / LEADER_AND_ISR / UPDATE_METADATA: ``controller_id``/``controller_epoch`` = the
  request's top-level fields (the sender's CE), ``broker_epoch`` = request brokerEpoch,
  ``state_controller_epoch`` = the partition state's controllerEpoch (LAI/UM only).
  STOP_REPLICA v0-2 carry no leader epoch: ``leader_epoch`` = -1 (the broker's own default, the
  "no epoch" sentinel of KIP-570), ``delete_partition`` = the request-level deletePartitions.
  UPDATE_METADATA without partition states still yields one event (topic null): it raises the
  broker's known controller epoch.
* FETCH: ``replica_id`` = replicaId (v0-14) or replicaState.replicaId (v15+), null for consumers
  (-1 / absent); ``broker_epoch`` = replicaState.replicaEpoch; ``offset`` = fetchOffset;
  ``current_leader_epoch`` = the request's currentLeaderEpoch (-1 -> null); ``high_watermark`` and
  ``log_start_offset`` from the response partition (the leader's values). Partitions present only
  in the response (incremental fetch sessions) yield events too, with ``offset`` null.
* PRODUCE: ``offset`` = baseOffset (null when -1), ``log_start_offset``, ``leader`` /
  ``current_leader_epoch`` from the tagged ``currentLeader`` (v10+), errorMessage in details.
* ALTER_PARTITION: ``broker_id`` = request brokerId (the leader asking), ``broker_epoch`` = its
  brokerEpoch, ``isr``/``isr_broker_epochs`` from newIsrWithEpochs (v3+) or newIsr (-1 epochs);
  ``partition_epoch``, ``leader_epoch``, ``leader`` from the RESPONSE partition when its error is
  NONE (the state the controller committed; on an error those fields are defaults, so null); the
  request's values in details (``request_leader_epoch``, ``request_partition_epoch``), the
  committed ISR in ``details.committed_isr``.
* topic names vs ids: FETCH v13+, ALTER_PARTITION v2+, LAI v5+ responses use ``topicId`` ->
  ``topic_id`` (LAI requests carry both; ``topic`` stays null where only an id is logged).

A line of one of these APIs whose JSON does not parse becomes ``__malformed__``.

<=2.7 (plain text, ``Completed request:RequestHeader(apiKey=..., apiVersion=..., clientId=...,
correlationId=...) ...``): the body is Struct-style and request details exist only at TRACE, so only
the header is read: one event per line for the APIs above, topic null, ``details.format = text``.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from epoch_audit.bronze.parsers import MALFORMED
from epoch_audit.bronze.parsers.request_log_schemas import (
    API_EVENT_TYPES,
    ERROR_NAMES,
    EVENT_FIELDS,
    EVENT_STRUCT_TYPE,
    PREFIX,
    SCHEMAS,
)

_TEXT_HEADER = (
    r"^Completed request:RequestHeader\(apiKey=([A-Z_]+), apiVersion=(\d+), clientId=(.*?), "
    r"correlationId=(-?\d+)\)"
)


def _partition_event(**values: Column) -> Column:
    """One per-partition event struct; fields not given are null."""
    unknown = set(values) - {n for n, _ in EVENT_FIELDS}
    assert not unknown, unknown
    return F.struct(
        *[
            (values[n] if n in values else F.lit(None)).cast(t).alias(n)
            for n, t in EVENT_FIELDS
        ]
    )


def _details(**values: Column) -> Column:
    pairs: list[Column] = []
    for key, value in values.items():
        pairs += [F.lit(key), value.cast("string")]
    return F.create_map(*pairs)


def _nonneg(c: Column) -> Column:
    """-1 (and other negatives) are "none" sentinels in these fields."""
    return F.when(c >= 0, c)


def _first(arr: Column, pred) -> Column:
    """The first element of ``arr`` satisfying ``pred`` (null if none)."""
    return F.get(F.filter(arr, pred), 0)


def _same_topic(name_a: Column, id_a: Column, name_b: Column, id_b: Column) -> Column:
    """Topic match by name where both sides log one, else by topic id."""
    return F.coalesce(
        F.when(name_a.isNotNull() & name_b.isNotNull(), name_a == name_b),
        F.when(id_a.isNotNull() & id_b.isNotNull(), id_a == id_b),
        F.lit(False),
    )


def _flatten(topics: Column, part_field: str, name: str | tuple[str, ...] | None, tid: str | None) -> Column:
    """array<topic{partitions[]}> -> array<struct<t_name, t_id, p>> in request order. ``name`` may list
    several keys: the first non-null is the topic name (topicName / name differ by API version)."""
    names = (name,) if isinstance(name, str) else (name or ())

    def topic_name(t: Column) -> Column:
        return F.coalesce(*[t[n] for n in names]) if names else F.lit(None).cast("string")

    return F.flatten(
        F.transform(
            F.coalesce(topics, F.array()),
            lambda t: F.transform(
                F.coalesce(t[part_field], F.array()),
                lambda p: F.struct(
                    topic_name(t).alias("t_name"),
                    (t[tid] if tid else F.lit(None).cast("string")).alias("t_id"),
                    p.alias("p"),
                ),
            ),
        )
    )


def _produce(j: Column) -> Column:
    req = _flatten(j["request"]["topicData"], "partitionData", "name", "topicId")
    resp = _flatten(j["response"]["responses"], "partitionResponses", "name", "topicId")

    def one(q: Column) -> Column:
        r = _first(resp, lambda x: _same_topic(x.t_name, x.t_id, q.t_name, q.t_id) & (x.p["index"] == q.p["index"]))
        rp = r["p"]
        return _partition_event(
            topic=q.t_name,
            topic_id=q.t_id,
            partition=q.p["index"],
            error_code=rp["errorCode"],
            offset=_nonneg(rp["baseOffset"]),
            log_start_offset=_nonneg(rp["logStartOffset"]),
            leader=_nonneg(rp["currentLeader"]["leaderId"]),
            current_leader_epoch=_nonneg(rp["currentLeader"]["leaderEpoch"]),
            details=_details(
                records_size=q.p["recordsSizeInBytes"],
                error_message=rp["errorMessage"],
                acks=j["request"]["acks"],
                transactional_id=j["request"]["transactionalId"],
                log_append_time_ms=rp["logAppendTimeMs"],
            ),
        )

    return F.transform(req, one)


def _fetch(j: Column) -> Column:
    rq = j["request"]
    req = _flatten(rq["topics"], "partitions", "topic", "topicId")
    resp = _flatten(j["response"]["responses"], "partitions", "topic", "topicId")
    replica = _nonneg(F.coalesce(rq["replicaState"]["replicaId"], rq["replicaId"]))
    replica_epoch = _nonneg(rq["replicaState"]["replicaEpoch"])

    def event(q: Column | None, rp: Column, name: Column, tid: Column, part: Column) -> Column:
        qp = q["p"] if q is not None else None

        def qf(field: str) -> Column:
            return qp[field] if qp is not None else F.lit(None)

        return _partition_event(
            topic=name,
            topic_id=tid,
            partition=part,
            error_code=rp["errorCode"],
            replica_id=replica,
            broker_epoch=replica_epoch,
            offset=qf("fetchOffset"),
            current_leader_epoch=_nonneg(qf("currentLeaderEpoch")),
            high_watermark=_nonneg(rp["highWatermark"]),
            log_start_offset=_nonneg(rp["logStartOffset"]),
            leader=_nonneg(rp["currentLeader"]["leaderId"]),
            details=_details(
                last_fetched_epoch=qf("lastFetchedEpoch"),
                fetch_log_start_offset=qf("logStartOffset"),
                last_stable_offset=rp["lastStableOffset"],
                diverging_epoch=rp["divergingEpoch"]["epoch"],
                diverging_end_offset=rp["divergingEpoch"]["endOffset"],
                response_leader_epoch=rp["currentLeader"]["leaderEpoch"],
                records_size=rp["recordsSizeInBytes"],
                session_id=rq["sessionId"],
                session_epoch=rq["sessionEpoch"],
                in_request=F.lit(q is not None),
                fetcher=F.when(replica.isNotNull(), F.lit("replica")).otherwise(F.lit("consumer")),
            ),
        )

    def matches(x: Column, q: Column) -> Column:
        return _same_topic(x.t_name, x.t_id, q.t_name, q.t_id) & (x.p["partitionIndex"] == q.p["partition"])

    from_request = F.transform(
        req, lambda q: event(q, _first(resp, lambda x: matches(x, q))["p"], q.t_name, q.t_id, q.p["partition"])
    )
    # incremental fetch sessions: partitions answered without being (re)listed in the request
    response_only = F.transform(
        F.filter(resp, lambda x: ~F.exists(req, lambda q: matches(x, q))),
        lambda x: event(None, x["p"], x.t_name, x.t_id, x.p["partitionIndex"]),
    )
    return F.concat(from_request, response_only)


def _controller_common(rq: Column) -> dict[str, Column]:
    return {
        "controller_id": rq["controllerId"],
        "controller_epoch": rq["controllerEpoch"],
        "broker_epoch": _nonneg(rq["brokerEpoch"]),
    }


def _stop_replica(j: Column, version: Column) -> Column:
    rq = j["request"]
    # v3+: topicStates with per-partition LE and delete flag; v1-2 topics[{name, partitionIndexes}];
    # v0 ungroupedPartitions. v0-2 have no epoch: the broker reads it as -1 (no epoch).
    v3 = _flatten(rq["topicStates"], "partitionStates", "topicName", None)
    v1 = F.flatten(
        F.transform(
            F.coalesce(rq["topics"], F.array()),
            lambda t: F.transform(
                F.coalesce(t["partitionIndexes"], F.array()),
                lambda p: F.struct(t["name"].alias("t_name"), p.alias("idx")),
            ),
        )
    )
    v0 = F.transform(
        F.coalesce(rq["ungroupedPartitions"], F.array()),
        lambda p: F.struct(p["topicName"].alias("t_name"), p["partitionIndex"].alias("idx")),
    )
    errors = F.coalesce(j["response"]["partitionErrors"], F.array())

    def event(name: Column, idx: Column, le: Column, delete: Column) -> Column:
        err = _first(errors, lambda e: (e["topicName"] == name) & (e["partitionIndex"] == idx))
        return _partition_event(
            topic=name,
            partition=idx,
            error_code=err["errorCode"],
            leader_epoch=le,
            delete_partition=delete,
            details=_details(is_kraft_controller=rq["isKRaftController"]),
            **_controller_common(rq),
        )

    legacy = F.concat(v0, v1)
    return F.when(
        version >= 3,
        F.transform(v3, lambda q: event(q.t_name, q.p["partitionIndex"], q.p["leaderEpoch"], q.p["deletePartition"])),
    ).otherwise(F.transform(legacy, lambda q: event(q.t_name, q.idx, F.lit(-1), rq["deletePartitions"])))


def _leader_and_isr(j: Column) -> Column:
    rq = j["request"]
    grouped = _flatten(rq["topicStates"], "partitionStates", "topicName", "topicId")
    ungrouped = F.transform(
        F.coalesce(rq["ungroupedPartitionStates"], F.array()),
        lambda p: F.struct(p["topicName"].alias("t_name"), F.lit(None).cast("string").alias("t_id"), p.alias("p")),
    )
    resp = j["response"]
    def entry(name: Column, tid: Column, e: Column) -> Column:
        p = F.struct(e["partitionIndex"].alias("partitionIndex"), e["errorCode"].alias("errorCode"))
        return F.struct(name.alias("t_name"), tid.alias("t_id"), p.alias("p"))

    null_str = F.lit(None).cast("string")
    # v0-4: partitionErrors[{topicName, partitionIndex, errorCode}]; v5+: topics[{topicId, partitionErrors}]
    named_errors = F.transform(
        F.coalesce(resp["partitionErrors"], F.array()), lambda e: entry(e["topicName"], null_str, e)
    )
    id_errors = F.transform(
        _flatten(resp["topics"], "partitionErrors", None, "topicId"), lambda x: entry(null_str, x.t_id, x.p)
    )
    errors = F.concat(named_errors, id_errors)

    def one(q: Column) -> Column:
        p = q["p"]
        # the topic name may sit in the topic state (v2+) or in the partition state (v0-1)
        name = F.coalesce(q.t_name, p["topicName"])
        err = _first(
            errors,
            lambda e: _same_topic(e.t_name, e.t_id, name, q.t_id) & (e.p["partitionIndex"] == p["partitionIndex"]),
        )
        return _partition_event(
            topic=name,
            topic_id=q.t_id,
            partition=p["partitionIndex"],
            error_code=err["p"]["errorCode"],
            state_controller_epoch=p["controllerEpoch"],
            leader=p["leader"],
            leader_epoch=p["leaderEpoch"],
            partition_epoch=F.coalesce(p["partitionEpoch"], p["zkVersion"]),
            isr=p["isr"],
            replicas=p["replicas"],
            adding_replicas=p["addingReplicas"],
            removing_replicas=p["removingReplicas"],
            details=_details(
                is_new=p["isNew"],
                leader_recovery_state=p["leaderRecoveryState"],
                type=rq["type"],
                is_kraft_controller=rq["isKRaftController"],
            ),
            **_controller_common(rq),
        )

    return F.transform(F.concat(ungrouped, grouped), one)


def _update_metadata(j: Column) -> Column:
    rq = j["request"]
    grouped = _flatten(rq["topicStates"], "partitionStates", "topicName", "topicId")
    ungrouped = F.transform(
        F.coalesce(rq["ungroupedPartitionStates"], F.array()),
        lambda p: F.struct(p["topicName"].alias("t_name"), F.lit(None).cast("string").alias("t_id"), p.alias("p")),
    )

    def one(q: Column) -> Column:
        p = q["p"]
        return _partition_event(
            topic=F.coalesce(q.t_name, p["topicName"]),
            topic_id=q.t_id,
            partition=p["partitionIndex"],
            state_controller_epoch=p["controllerEpoch"],
            leader=p["leader"],
            leader_epoch=p["leaderEpoch"],
            partition_epoch=p["zkVersion"],
            isr=p["isr"],
            replicas=p["replicas"],
            # UpdateMetadata answers with one request-level error code only
            error_code=j["response"]["errorCode"],
            details=_details(
                offline_replicas=F.array_join(p["offlineReplicas"], ","),
                is_kraft_controller=rq["isKRaftController"],
            ),
            **_controller_common(rq),
        )

    parts = F.transform(F.concat(ungrouped, grouped), one)
    # a request with no partition states still raises the broker's known controller epoch
    whole = F.array(
        _partition_event(
            error_code=j["response"]["errorCode"],
            details=_details(is_kraft_controller=rq["isKRaftController"], partitions=F.lit(0)),
            **_controller_common(rq),
        )
    )
    return F.when(F.size(parts) > 0, parts).otherwise(whole)


def _alter_partition(j: Column) -> Column:
    rq = j["request"]
    # a topics entry names its topic by topicName (AlterPartition v0-1), name (AlterIsr) or topicId (v2+)
    req_all = _flatten(rq["topics"], "partitions", ("topicName", "name"), "topicId")
    resp = _flatten(j["response"]["topics"], "partitions", ("topicName", "name"), "topicId")

    def one(q: Column) -> Column:
        p = q["p"]
        r = _first(
            resp,
            lambda x: _same_topic(x.t_name, x.t_id, q.t_name, q.t_id)
            & (x.p["partitionIndex"] == p["partitionIndex"]),
        )["p"]
        with_epochs = p["newIsrWithEpochs"]
        isr = F.coalesce(F.transform(with_epochs, lambda b: b["brokerId"]), p["newIsr"])
        isr_epochs = F.coalesce(
            F.transform(with_epochs, lambda b: b["brokerEpoch"]),
            F.transform(p["newIsr"], lambda _b: F.lit(-1).cast("bigint")),
        )
        ok = r["errorCode"] == 0
        return _partition_event(
            topic=q.t_name,
            topic_id=q.t_id,
            partition=p["partitionIndex"],
            error_code=r["errorCode"],
            broker_id=rq["brokerId"],
            broker_epoch=_nonneg(rq["brokerEpoch"]),
            isr=isr,
            isr_broker_epochs=isr_epochs,
            # the committed state: matched to the controller's commit by its partition epoch
            partition_epoch=F.when(ok, F.coalesce(r["partitionEpoch"], r["currentIsrVersion"])),
            leader_epoch=F.when(ok, r["leaderEpoch"]),
            leader=F.when(ok, r["leaderId"]),
            details=_details(
                request_leader_epoch=p["leaderEpoch"],
                request_partition_epoch=F.coalesce(p["partitionEpoch"], p["currentIsrVersion"]),
                committed_isr=F.when(ok, F.array_join(r["isr"], ",")),
                leader_recovery_state=p["leaderRecoveryState"],
                with_broker_epochs=with_epochs.isNotNull(),
            ),
        )

    return F.transform(req_all, one)


def _error_name(code: Column) -> Column:
    names = F.create_map(*[x for k, v in ERROR_NAMES.items() for x in (F.lit(k), F.lit(v))])
    return F.when(code.isNull(), None).otherwise(
        F.coalesce(F.try_element_at(names, code), F.concat(F.lit("UNKNOWN_ERROR_CODE_"), code.cast("string")))
    )


def parse_request_log(records: DataFrame) -> DataFrame:
    """Completed-request lines (KIP-673 JSON, 2.8+; header only for the <=2.7 text form) -> request_* events.

    Rules served: KIP-570 StopReplica fencing, controller-epoch fencing, KIP-903 AlterPartition
    broker epochs, fetch high watermarks for catch-up, produce acceptance (see the module docstring).
    """
    msg = F.col("message")
    candidates = records.where(msg.startswith(PREFIX))
    is_json = msg.startswith(PREFIX + "{")
    # cheap name test before any JSON parsing: only our APIs are parsed at all
    api = F.when(is_json, F.regexp_extract(msg, r'"requestApiKeyName":"([A-Z_]+)"', 1)).otherwise(
        F.regexp_extract(msg, _TEXT_HEADER, 1)
    )
    # A line cut short (lost its "(logger)" tail, or its JSON does not close) is malformed whatever
    # its API: counting it irrelevant would hide the loss.
    truncated = F.col("logger").isNull() | (is_json & ~F.rtrim(msg).endswith("}"))
    ours = candidates.withColumn("_api", api).withColumn("_truncated", truncated).where(
        F.col("_api").isin(*API_EVENT_TYPES) | F.col("_truncated")
    )
    body = F.substring(msg, len(PREFIX) + 1, 1 << 30)
    opts = {"columnNameOfCorruptRecord": "_corrupt_record", "mode": "PERMISSIVE"}
    parsed = ours.select(
        "*",
        F.when(is_json, F.lit("json")).otherwise(F.lit("text")).alias("_format"),
        *[
            F.when(is_json & (F.col("_api") == name), F.from_json(body, schema, opts)).alias(f"_j_{name}")
            for name, schema in SCHEMAS.items()
        ],
    )

    def j(name: str) -> Column:
        return F.col(f"_j_{name}")

    header = F.coalesce(*[j(n)["requestHeader"] for n in SCHEMAS])
    corrupt = F.coalesce(*[j(n)["_corrupt_record"] for n in SCHEMAS])
    version = header["requestApiVersion"]
    top_error = F.coalesce(*[j(n)["response"]["errorCode"] for n in SCHEMAS if n != "PRODUCE"])
    events = (
        F.when(F.col("_api") == "PRODUCE", _produce(j("PRODUCE")))
        .when(F.col("_api") == "FETCH", _fetch(j("FETCH")))
        .when(F.col("_api") == "STOP_REPLICA", _stop_replica(j("STOP_REPLICA"), version))
        .when(F.col("_api") == "LEADER_AND_ISR", _leader_and_isr(j("LEADER_AND_ISR")))
        .when(F.col("_api") == "UPDATE_METADATA", _update_metadata(j("UPDATE_METADATA")))
        .when(F.col("_api") == "ALTER_PARTITION", _alter_partition(j("ALTER_PARTITION")))
        .when(F.col("_api") == "ALTER_ISR", _alter_partition(j("ALTER_ISR")))
        .cast(f"array<{EVENT_STRUCT_TYPE}>")
    )
    text_event = F.array(_partition_event(details=_details(format=F.lit("text"))))
    malformed = F.col("_truncated") | (F.col("_format") == "json") & (corrupt.isNotNull() | header.isNull())
    # A cut line of an API we parse keeps the JSON parser's verdict; others are named truncated.
    malformed_reason = F.when(
        F.col("_truncated") & ~F.col("_api").isin(*API_EVENT_TYPES), F.lit("truncated request-log line")
    ).otherwise(F.lit("unparseable request-log JSON"))
    staged = parsed.select(
        "*",
        malformed.alias("_malformed"),
        F.when(F.col("_format") == "json", header["requestApiVersion"])
        .otherwise(F.regexp_extract(msg, _TEXT_HEADER, 2).try_cast("int"))
        .alias("_api_version"),
        F.when(F.col("_format") == "json", header["correlationId"])
        .otherwise(F.regexp_extract(msg, _TEXT_HEADER, 4).try_cast("long"))
        .cast("long")
        .alias("_correlation_id"),
        top_error.alias("_top_error"),
        F.when(malformed, F.array(_partition_event(details=_details(reason=malformed_reason))))
        .when(F.col("_format") == "text", text_event)
        .otherwise(events)
        .alias("_events"),
    )
    # posexplode_outer + filter, not posexplode: for a plain explode the optimizer infers
    # size(_events) > 0 and pushes it below the projections, inlining the whole events
    # expression (and one from_json per field reference) into a Filter: ~15x slower.
    exploded = staged.select("*", F.posexplode_outer("_events").alias("sub_index", "e")).where(
        F.col("sub_index").isNotNull()
    )
    e = F.col("e")
    top = F.col("_top_error")
    # a partition absent from the response's error list inherits a whole-request refusal
    code = F.coalesce(e["error_code"], F.when(top != 0, top))
    event_type = F.when(F.col("_malformed"), F.lit(MALFORMED))
    for name, etype in API_EVENT_TYPES.items():
        event_type = event_type.when(F.col("_api") == name, F.lit(etype))
    extra = F.create_map(
        F.lit("error_code"), code.cast("string"),
        F.lit("top_error_code"), top.cast("string"),
        F.lit("client_id"), header["clientId"],
        F.lit("format"), F.when(F.col("_format") == "text", F.lit("text")),
        F.lit("text_client_id"), F.when(F.col("_format") == "text", F.regexp_extract(msg, _TEXT_HEADER, 3)),
    )
    details = F.map_filter(
        F.map_concat(extra, F.map_filter(F.coalesce(e["details"], F.create_map().cast("map<string,string>")),
                                         lambda k, _v: ~k.isin("format"))),
        lambda _k, v: v.isNotNull(),
    )
    return exploded.select(
        "file_id",
        "source_file",
        "cluster_id",
        "host_id",
        "file_order",
        "log_kind",
        "line_number",
        F.col("sub_index").cast("int").alias("sub_index"),
        event_type.alias("event_type"),
        "event_time",
        "level",
        "logger",
        "raw",
        F.when(F.col("_format") == "text", F.lit("2.6-2.7")).otherwise(F.lit("2.8+")).alias("kafka_version_hint"),
        F.col("_api").alias("api_key"),
        F.col("_api_version").alias("api_version"),
        F.col("_correlation_id").alias("correlation_id"),
        F.coalesce(e["broker_id"], F.col("host_id")).alias("broker_id"),
        e["topic"].alias("topic"),
        e["topic_id"].alias("topic_id"),
        e["partition"].alias("partition"),
        F.when(~F.col("_malformed"), _error_name(code)).alias("error"),
        *[
            e[n].alias(n)
            for n, _ in EVENT_FIELDS
            if n not in {"topic", "topic_id", "partition", "error_code", "broker_id", "details"}
        ],
        details.alias("details"),
    )
