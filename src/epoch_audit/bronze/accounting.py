"""Line accounting: every physical line is parsed, irrelevant or malformed — exactly one.

- parsed: the line belongs to a record (or is a file-level line) that produced at least one event;
- malformed: a line of a recognised format that could not be parsed (parser reason), a line
  before any log record start that is not blank, binary content (NUL), or a line cut at
  ``max_line_chars``;
- irrelevant: everything else (lines of recognised formats that carry nothing we audit, blanks).
Continuation lines share their record's status.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from epoch_audit.bronze.discover import LOG_KINDS
from epoch_audit.bronze.parsers import MALFORMED

STATUS_COLUMNS = ["file_id", "source_file", "line_number", "status", "reason", "bad_utf8", "redacted"]


def line_problem(text: Column, line_chars: Column) -> Column:
    """Why a physical line cannot be parsed at all, or null."""
    return (
        F.when(line_chars > F.length(text), F.format_string("line longer than %d characters", F.length(text)))
        .when(F.instr(text, "\u0000") > 0, F.lit("binary content (NUL bytes)"))
    )


def _outcomes(events: DataFrame) -> DataFrame:
    """Per (file_id, line_number) of an event's first line: did it parse, and the malformed reason."""
    return events.groupBy("file_id", "line_number").agg(
        F.max(F.when(F.col("event_type") != MALFORMED, 1).otherwise(0)).alias("has_event"),
        F.first(
            F.when(F.col("event_type") == MALFORMED, F.coalesce(F.col("details")["reason"], F.lit("malformed"))),
            ignorenulls=True,
        ).alias("parser_reason"),
    )


def _status(problem: Column, has_event: Column, parser_reason: Column, orphan: Column, blank: Column) -> list[Column]:
    status = (
        F.when(problem.isNotNull(), "malformed")
        .when(parser_reason.isNotNull(), "malformed")
        .when(has_event == 1, "parsed")
        .when(orphan & ~blank, "malformed")
        .otherwise("irrelevant")
    )
    reason = (
        F.when(problem.isNotNull(), problem)
        .when(parser_reason.isNotNull(), parser_reason)
        .when(has_event == 1, F.lit(None))
        .when(orphan & ~blank, F.lit("unrecognised line: no log record starts before it"))
    )
    return [status.alias("status"), reason.alias("reason")]


def _line_facts(lines: DataFrame) -> DataFrame:
    """The per-line facts the status needs, computed before any join: the text is never shuffled
    (the quarantine fetches the text of its few malformed lines afterwards)."""
    return lines.select(
        "file_id",
        "source_file",
        "line_number",
        line_problem(F.col("text"), F.col("line_chars")).alias("_problem"),
        (F.trim("text") == "").alias("_blank"),
        (F.instr("text", "\ufffd") > 0).alias("bad_utf8"),
        # secret values replaced in the line (epoch_audit.bronze.records.redact_secrets)
        (F.col("redacted") if "redacted" in lines.columns else F.lit(0)).alias("redacted"),
    )


def line_status_for_logs(log_lines: DataFrame, framing: DataFrame, record_events: DataFrame) -> DataFrame:
    """Status of every line of a log file, from its record's parse outcome."""
    outcomes = _outcomes(record_events).withColumnRenamed("line_number", "record_line")
    joined = (
        _line_facts(log_lines)
        .join(framing.select("file_id", "line_number", "record_line"), ["file_id", "line_number"], "left")
        .join(outcomes, ["file_id", "record_line"], "left")
    )
    return joined.select(
        "file_id",
        "source_file",
        "line_number",
        *_status(F.col("_problem"), F.col("has_event"), F.col("parser_reason"), F.col("record_line").isNull(),
                 F.col("_blank")),
        "bad_utf8",
        "redacted",
    )


def line_status_for_files(file_lines: DataFrame, file_events: DataFrame) -> DataFrame:
    """Status of every line of a file-level format (dumps, checkpoints)."""
    joined = _line_facts(file_lines).join(_outcomes(file_events), ["file_id", "line_number"], "left")
    return joined.select(
        "file_id",
        "source_file",
        "line_number",
        *_status(F.col("_problem"), F.col("has_event"), F.col("parser_reason"), F.lit(False), F.col("_blank")),
        "bad_utf8",
        "redacted",
    )


def file_accounting(status: DataFrame) -> DataFrame:
    """Per file: lines read = parsed + irrelevant + malformed (and how many had bad UTF-8, and how
    many secret values were redacted)."""
    return status.groupBy("file_id").agg(
        F.count("*").alias("lines_read"),
        F.sum(F.when(F.col("status") == "parsed", 1).otherwise(0)).alias("parsed"),
        F.sum(F.when(F.col("status") == "irrelevant", 1).otherwise(0)).alias("irrelevant"),
        F.sum(F.when(F.col("status") == "malformed", 1).otherwise(0)).alias("malformed"),
        F.sum(F.when(F.col("bad_utf8"), 1).otherwise(0)).alias("bad_utf8"),
        F.sum(F.coalesce(F.col("redacted"), F.lit(0))).alias("redacted"),
    )


# Continuation lines (stack traces, multi-line messages) up to this count are broadcast to the
# record starts instead of shuffling every record's text to meet them.
BROADCAST_CONTINUATION_LINES = 200_000


def unparseable() -> Column:
    """Lines no parser should see: cut at max_line_chars, or binary."""
    return (F.col("line_chars") > F.length("text")) | (F.instr("text", "\u0000") > 0)


def line_statuses(lines: DataFrame, parsed: DataFrame, framing: DataFrame) -> DataFrame:
    """Every line's status (parsed | irrelevant | malformed) from the parse outcomes and the
    staged framing (no text is shuffled: see ``epoch_audit.bronze.accounting``)."""
    is_log = F.col("log_kind").isin(*LOG_KINDS)
    outcomes = parsed.select("file_id", "line_number", "event_type", "details")
    return line_status_for_logs(lines.where(is_log), framing, outcomes).unionByName(
        line_status_for_files(lines.where(~is_log), outcomes)
    )


def quarantine_lines(status: DataFrame, lines: DataFrame) -> DataFrame:
    """Malformed lines with their text. Usually few: then they are broadcast and the lines are
    not shuffled to meet them."""
    malformed = status.where(F.col("status") == "malformed").select("file_id", "source_file", "line_number", "reason")
    if malformed.count() <= BROADCAST_CONTINUATION_LINES:
        malformed = F.broadcast(malformed)
    text = lines.select("file_id", "line_number", F.substring("text", 1, 10_000).alias("raw"))
    return malformed.join(text, ["file_id", "line_number"])
