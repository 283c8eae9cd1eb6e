"""Framing: physical lines of log files -> log records (one per log event).

Steps, each a small pure function chained with ``DataFrame.transform``:
1. ``strip_wrappers``  — remove the agent/container prefix a collector added (Kubernetes CRI,
   docker-compose, journald/syslog, a second program's timestamp) and turn log-platform CSV
   exports into a plain line; the inner line is what the parsers see (reference §8).
2. ``mark_record_starts`` — recognise the first line of an event: Kafka default pattern
   ``[%d] %p %m (%c)``, Strimzi ``%d{ISO8601} %p %m (%c) [%t]`` (and its log4j2 variant), or the
   Seastar layout of Redpanda (§7.1). Any other line continues the record above it (multi-line
   messages, Java stack traces).
3. ``group_records`` — attach continuation lines to their record and split the first line into
   time, level, logger, thread and message.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

LEVELS = "TRACE|DEBUG|INFO|WARN|ERROR|FATAL"
_TS = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}"

# Wrappers (reference §8): prefixes to strip, outermost first.
CRI_PREFIX = r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2}) (?:stdout|stderr) [FP] "
JOURNALD_PREFIX = r"[A-Z][a-z]{2} [ 0-9]\d \d{2}:\d{2}:\d{2} \S+ [^\s:\[]+(?:\[\d+\])?: "
COMPOSE_PREFIX = r"[A-Za-z][A-Za-z0-9_.-]* *\| "
# A Kafka line embedded after another program's prefix (two timestamps on one line).
EMBEDDED_PREFIX = r"[^\[].*?(?=\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}\] (?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) )"
CSV_EXPORT = r'^"([^"]*)","(' + LEVELS + r')","([^"]*)","((?:[^"]|"")*)"$'

# First-line patterns.
KAFKA_START = r"^\[(" + _TS + r")\] (" + LEVELS + r") (.*)$"
STRIMZI_START = r"^(" + _TS + r") (" + LEVELS + r") (.*)$"
# Strimzi log4j2 alternative: %d{yyyy-MM-dd HH:mm:ss} %-5p [%t] %c{1}:%L - %m%n
STRIMZI2_START = r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}) (" + LEVELS + r") *\[([^\]]*)\] (\S+):(\d+|\?) - (.*)$"
SEASTAR_START = (
    r"^(TRACE|DEBUG|INFO|WARN|ERROR) +(" + _TS + r") \[shard +(\d+)(?: *: *([\w-]+) *)?\] (\S+) - (.*)$"
)
# The logger tail of a Kafka message: ` (<logger>)` optionally followed by Strimzi's ` [<thread>]`.
LOGGER_TAIL = r"^(.*) \(([^()\s]+)\)(?: \[([^\]]*)\])?$"
SEASTAR_SRC = r"^((?:\[[^\]]*\] )?)([\w.+-]+\.(?:cc|h|cpp|hh):\d+) - (.*)$"


# Secrets (issue #19): values of keys naming a secret, and the configs Kafka itself types PASSWORD
# (ConfigDef.Type.PASSWORD: ssl.key.password, ssl.keystore.password, ssl.truststore.password,
# ssl.keystore.key, ssl.keystore.certificate.chain, ssl.truststore.certificates, sasl.jaas.config,
# sasl.oauthbearer ...client.secret, delegation.token.secret.key, password.encoder.secret ...), in
# any listener/prefix form (``listener.name.sasl_ssl.plain.sasl.jaas.config``).
REDACTED = "[redacted]"
_SECRET_WORDS = (
    "password", "passwd", "secret", "token", "credentials", "sasl.jaas.config", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.truststore.certificates", "basic.auth.user.info",
)
_SECRET_KEY = r"[A-Za-z0-9_.-]*(?:" + "|".join(w.replace(".", r"\.") for w in _SECRET_WORDS) + r")[A-Za-z0-9_.-]*"
# Kafka prints an unset password as null and a set one as [hidden]: nothing to hide there.
_NOT_SECRET = r"(?!null\b|\[hidden\]|\[redacted\])"
# (pattern, replacement), applied in order; every pattern is case-insensitive.
REDACTIONS: list[tuple[str, str]] = [
    # A JAAS config is one value up to its closing ";": usernames and passwords inside it.
    (r"(?i)(sasl\.jaas\.config[\"']?\s*[=:]\s*+)(?![\"'])" + _NOT_SECRET + r"[^;\n]*;?", "$1" + REDACTED),
    # Quoted values: JSON "key":"v", key = "v", password="v" (inside a JAAS line of another key).
    (r"(?i)(" + _SECRET_KEY + r"[\"']?\s*[=:]\s*)\"" + _NOT_SECRET + r"[^\"]*\"", "$1\"" + REDACTED + "\""),
    (r"(?i)(" + _SECRET_KEY + r"[\"']?\s*[=:]\s*)'" + _NOT_SECRET + r"[^']*'", "$1'" + REDACTED + "'"),
    # Bare values: key=v, key = v, key: v (up to a blank or a separator).
    (r"(?i)(" + _SECRET_KEY + r"\s*[=:]\s*)" + _NOT_SECRET + r"[^\s\"',;)}\]]+", "$1" + REDACTED),
    # A config record or dump naming the key in one field and the value in the next.
    (r"(?i)(\"name\"\s*:\s*\"" + _SECRET_KEY + r"\"\s*,\s*\"value\"\s*:\s*)\"" + _NOT_SECRET + r"[^\"]*\"",
     "$1\"" + REDACTED + "\""),
]
# Cheap test first: almost no line names a secret, and those skip every regex.
_SECRET_HINTS = ("passw", "secret", "token", "credential", "jaas", "ssl.keystore", "ssl.truststore", "user.info")


def redact_secrets(lines: DataFrame) -> DataFrame:
    """Replace secret values in ``text`` by ``[redacted]`` before anything stores or logs a line.

    Adds ``redacted`` (how many values were replaced in the line). ``line_chars`` (the length as
    read) moves by the same amount as the text, so a line cut at ``max_line_chars`` still shows
    as cut and an uncut one does not.
    """
    text = F.col("text")
    low = F.lower(text)
    hinted = F.lit(False)
    for hint in _SECRET_HINTS:
        hinted = hinted | low.contains(hint)
    redacted = text
    count = F.lit(0)
    for pattern, replacement in REDACTIONS:
        count = count + F.regexp_count(redacted, F.lit(pattern))
        redacted = F.regexp_replace(redacted, pattern, replacement)
    out = lines.withColumn("redacted", F.when(hinted, count).otherwise(F.lit(0)))
    new_text = F.when(hinted, redacted).otherwise(text)
    if "line_chars" in lines.columns:
        out = out.withColumn("line_chars", F.col("line_chars") + F.length(new_text) - F.length(text))
    return out.withColumn("text", new_text)


def strip_wrappers(lines: DataFrame) -> DataFrame:
    """Strip CRI / journald, then docker-compose, then an embedding program's prefix; unpack CSV.

    Adds ``inner`` (the line without wrapper) and, for CSV export rows, ``csv_ts``/``csv_level``/
    ``csv_logger``/``csv_message``. One regexp_replace per wrapper layer keeps the plan small.
    """
    text = F.regexp_replace(F.col("text"), r"\r$", "")
    outer = F.regexp_replace(text, "^(?:" + CRI_PREFIX + "|" + JOURNALD_PREFIX + ")", "")
    inner = F.regexp_replace(F.regexp_replace(outer, "^" + COMPOSE_PREFIX, ""), "^" + EMBEDDED_PREFIX, "")
    out = lines.withColumn("inner", inner)
    csv = F.col("inner").startswith('"')
    return (
        out.withColumn("is_csv", csv & F.col("inner").rlike(CSV_EXPORT))
        .withColumn("csv_ts", F.when(F.col("is_csv"), F.regexp_extract("inner", CSV_EXPORT, 1)))
        .withColumn("csv_level", F.when(F.col("is_csv"), F.regexp_extract("inner", CSV_EXPORT, 2)))
        .withColumn("csv_logger", F.when(F.col("is_csv"), F.regexp_extract("inner", CSV_EXPORT, 3)))
        .withColumn(
            "csv_message",
            F.when(F.col("is_csv"), F.regexp_replace(F.regexp_extract("inner", CSV_EXPORT, 4), '""', '"')),
        )
    )


def mark_record_starts(lines: DataFrame) -> DataFrame:
    """Add ``line_format`` (kafka|strimzi|strimzi2|redpanda|csv) on lines that start a record."""
    inner = F.col("inner")
    fmt = (
        F.when(F.col("is_csv"), F.lit("csv"))
        .when(inner.startswith("[") & inner.rlike(KAFKA_START), F.lit("kafka"))
        .when(inner.rlike(SEASTAR_START), F.lit("redpanda"))
        .when(inner.rlike(STRIMZI_START), F.lit("strimzi"))
        .when(inner.rlike(STRIMZI2_START), F.lit("strimzi2"))
    )
    return lines.withColumn("line_format", fmt)


def _split_first_line(source_time_zone: str) -> list[Column]:
    inner = F.col("inner")
    fmt = F.col("line_format")
    ts_text = (
        F.when(fmt == "kafka", F.regexp_extract(inner, KAFKA_START, 1))
        .when(fmt == "strimzi", F.regexp_extract(inner, STRIMZI_START, 1))
        .when(fmt == "strimzi2", F.concat(F.regexp_extract(inner, STRIMZI2_START, 1), F.lit(",000")))
        .when(fmt == "redpanda", F.regexp_extract(inner, SEASTAR_START, 2))
    )
    # The safe parses: under ANSI mode to_timestamp raises on "2024-13-45" or Feb 30 and aborts the run.
    local_ts = F.try_to_timestamp(ts_text, F.lit("yyyy-MM-dd HH:mm:ss,SSS"))
    # CSV exports carry an ISO timestamp with its zone (usually Z): parse it as such.
    csv_ts = F.try_to_timestamp(F.col("csv_ts"))
    event_time = F.when(fmt == "csv", csv_ts).otherwise(F.to_utc_timestamp(local_ts, source_time_zone))
    shard_text = F.when(fmt == "redpanda", F.regexp_extract(inner, SEASTAR_START, 3))
    shard = shard_text.try_cast("int")
    # A record start whose time or shard is not a valid value: the record is malformed (see
    # epoch_audit.bronze.parsers.dispatch), never parsed with a null field.
    problem = (
        F.when(ts_text.isNotNull() & local_ts.isNull(), F.concat(F.lit("event_time: invalid timestamp "), ts_text))
        .when((fmt == "csv") & csv_ts.isNull(), F.concat(F.lit("event_time: invalid timestamp "), F.col("csv_ts")))
        .when(shard_text.isNotNull() & shard.isNull(), F.concat(F.lit("shard: value out of range "), shard_text))
    )
    level = (
        F.when(fmt == "kafka", F.regexp_extract(inner, KAFKA_START, 2))
        .when(fmt == "strimzi", F.regexp_extract(inner, STRIMZI_START, 2))
        .when(fmt == "strimzi2", F.regexp_extract(inner, STRIMZI2_START, 2))
        .when(fmt == "redpanda", F.regexp_extract(inner, SEASTAR_START, 1))
        .when(fmt == "csv", F.col("csv_level"))
    )
    body = (
        F.when(fmt == "kafka", F.regexp_extract(inner, KAFKA_START, 3))
        .when(fmt == "strimzi", F.regexp_extract(inner, STRIMZI_START, 3))
        .when(fmt == "strimzi2", F.regexp_extract(inner, STRIMZI2_START, 6))
        .when(fmt == "redpanda", F.regexp_extract(inner, SEASTAR_START, 6))
        .when(fmt == "csv", F.col("csv_message"))
    )
    return [
        event_time.alias("event_time"),
        level.alias("level"),
        body.alias("body"),
        F.when(fmt == "strimzi2", F.regexp_extract(inner, STRIMZI2_START, 4))
        .when(fmt == "redpanda", F.regexp_extract(inner, SEASTAR_START, 5))
        .when(fmt == "csv", F.col("csv_logger"))
        .alias("fixed_logger"),
        F.when(fmt == "strimzi2", F.regexp_extract(inner, STRIMZI2_START, 3)).alias("fixed_thread"),
        shard.alias("shard"),
        problem.alias("problem"),
    ]


PROVENANCE = ["file_id", "source_file", "cluster_id", "host_id", "file_order", "log_kind"]


def record_framing(marked: DataFrame) -> DataFrame:
    """Per physical line: the line number of the record start at or above it (``record_line``).

    Only keys and the start flag go through the window's shuffle, never the text: framing cost
    then scales with the line count, not with the bytes (log lines are up to a few KB).
    """
    by_file = Window.partitionBy("file_id").orderBy("line_number").rowsBetween(Window.unboundedPreceding, 0)
    return marked.select("file_id", "line_number", "line_format").withColumn(
        "record_line",
        F.max(F.when(F.col("line_format").isNotNull(), F.col("line_number"))).over(by_file),
    )


def record_continuations(marked: DataFrame, framing: DataFrame) -> DataFrame:
    """Per record with continuation lines: how many, and their text joined in line order."""
    cont_keys = framing.where(F.col("line_format").isNull() & F.col("record_line").isNotNull()).select(
        "file_id", "line_number", "record_line"
    )
    cont_text = marked.where(F.col("line_format").isNull()).select("file_id", "line_number", "inner")
    return (
        cont_keys.join(cont_text, ["file_id", "line_number"])
        .groupBy("file_id", "record_line")
        .agg(
            F.count("*").alias("extra_lines"),
            F.array_join(
                F.transform(
                    F.array_sort(F.collect_list(F.struct("line_number", "inner"))), lambda s: s["inner"]
                ),
                "\n",
            ).alias("continuation"),
        )
    )


def group_records(
    lines: DataFrame,
    source_time_zone: str = "UTC",
    framing: DataFrame | None = None,
    broadcast_continuations: bool = False,
) -> tuple[DataFrame, DataFrame]:
    """Attach continuation lines to the record above them.

    Returns ``(records, line_status)``: records as documented in ``epoch_audit.bronze.parsers``, and one row
    per physical line (file_id, line_number, record_line, line_format) mapping every line to the
    first line of its record (null for lines before any record start: orphans).

    ``framing`` may be given pre-computed (staged) by the caller; ``broadcast_continuations``
    says the continuation side is small (most records are one line), so the record starts are
    joined to it without being shuffled.
    """
    line_status = record_framing(lines) if framing is None else framing
    continuation = record_continuations(lines, line_status)
    if broadcast_continuations:
        continuation = F.broadcast(continuation)
    starts = lines.where(F.col("line_format").isNotNull()).select(
        *PROVENANCE, "line_number", "line_format", "inner", *_split_first_line(source_time_zone)
    )
    joined = starts.join(
        continuation.withColumnRenamed("record_line", "line_number"), ["file_id", "line_number"], "left"
    )
    fmt = F.col("line_format")
    is_log4j = fmt.isin("kafka", "strimzi")
    has_tail = F.col("body").rlike(LOGGER_TAIL)
    full_text = F.when(
        F.col("continuation").isNull(), F.col("body")
    ).otherwise(F.concat_ws("\n", F.col("body"), F.col("continuation")))
    # log4j prints "%m (%c)": a multi-line message has its logger tail on the message's last line,
    # a stack trace comes after the tail. Find the tail on the first line, else on the first later
    # line that ends with one.
    multi_tail = r"(?s)^(.*?) \(([^()\s]+)\)(?: \[([^\]]*)\])?(?:\n.*)?$"
    message = (
        F.when(is_log4j & has_tail, F.regexp_extract(F.col("body"), LOGGER_TAIL, 1))
        .when(is_log4j & full_text.rlike(multi_tail), F.regexp_extract(full_text, multi_tail, 1))
        .when(fmt == "redpanda", F.concat(
            F.regexp_extract(F.col("body"), SEASTAR_SRC, 1), F.regexp_extract(F.col("body"), SEASTAR_SRC, 3)
        ))
        .otherwise(F.col("body"))
    )
    logger = (
        F.when(is_log4j & has_tail, F.regexp_extract(F.col("body"), LOGGER_TAIL, 2))
        .when(is_log4j & full_text.rlike(multi_tail), F.regexp_extract(full_text, multi_tail, 2))
        .otherwise(F.col("fixed_logger"))
    )
    thread = (
        F.when(fmt == "strimzi", F.regexp_extract(F.col("body"), LOGGER_TAIL, 3)).otherwise(F.col("fixed_thread"))
    )
    # Seastar: a line without "file:line - " keeps its whole body as the message.
    rp_message = F.when(F.col("body").rlike(SEASTAR_SRC), message).otherwise(F.col("body"))
    records = joined.select(
        *PROVENANCE,
        "line_number",
        (F.coalesce(F.col("extra_lines"), F.lit(0)) + 1).alias("line_count"),
        "event_time",
        "level",
        F.when(logger == "", None).otherwise(logger).alias("logger"),
        F.when(thread == "", None).otherwise(thread).alias("thread"),
        F.when(fmt == "redpanda", rp_message).otherwise(message).alias("message"),
        F.when(
            F.col("continuation").isNull(), F.when(fmt == "redpanda", rp_message).otherwise(message)
        ).otherwise(F.concat_ws("\n", F.when(fmt == "redpanda", rp_message).otherwise(message),
                                F.col("continuation"))).alias("text"),
        F.when(F.col("continuation").isNull(), F.col("inner"))
        .otherwise(F.concat_ws("\n", F.col("inner"), F.col("continuation")))
        .alias("raw"),
        F.when(fmt == "strimzi2", F.lit("strimzi")).otherwise(fmt).alias("line_format"),
        "shard",
        F.when(fmt == "redpanda", F.regexp_extract(F.col("body"), SEASTAR_SRC, 2)).alias("src_loc"),
        "problem",
    )
    return records, line_status


def frame_log_lines(lines: DataFrame, source_time_zone: str = "UTC") -> tuple[DataFrame, DataFrame]:
    """lines -> (records, line_status): the whole framing chain (secrets redacted first)."""
    marked = lines.transform(redact_secrets).transform(strip_wrappers).transform(mark_record_starts)
    return group_records(marked, source_time_zone)


MARK_COLUMNS = ["inner", "is_csv", "csv_ts", "csv_level", "csv_logger", "csv_message", "line_format"]


def mark_lines(lines: DataFrame, is_log: Column) -> DataFrame:
    """Strip wrappers and mark record starts once, in the staged form of every line.

    Rows where ``is_log`` is false (dump and checkpoint lines) get nulls. ``inner`` is kept only
    where a wrapper was removed (``unmark`` restores it), so staging does not store each line twice.
    Secrets are redacted here, in the staged text of every line: bronze ``raw``, the quarantine and
    the report only ever see the redacted text.
    """
    lines = redact_secrets(lines)
    marked = lines.transform(strip_wrappers).transform(mark_record_starts)
    inner = F.when(is_log & (F.col("inner") != F.col("text")), F.col("inner")).alias("inner")
    return marked.select(
        *[c for c in lines.columns if c not in MARK_COLUMNS],
        inner,
        *[F.when(is_log, F.col(c)).alias(c) for c in MARK_COLUMNS if c != "inner"],
    )


def unmark(staged: DataFrame) -> DataFrame:
    """Staged marked lines -> the form ``group_records`` reads (``inner`` always set)."""
    return staged.withColumn("inner", F.coalesce(F.col("inner"), F.col("text")))
