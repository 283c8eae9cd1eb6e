"""Bronze suite: the event contract and the line accounting.

``bronze/events``
- schema and types: every column of :data:`epoch_audit.contracts.events.EVENT_SCHEMA` is present with its
  Spark type class;
- ids and keys: ``event_id`` non-null and unique, ``event_type`` / ``file_id`` / ``line_number``
  non-null;
- epochs >= -2 (-1 and -2 are protocol sentinels, anything lower is a parse error);
- ``event_type`` one of :data:`epoch_audit.contracts.events.EVENT_TYPES`;
- ``event_time`` (where present) inside ``[validation.event_time_min, now + event_time_max_ahead_hours]``.

``bronze/ingest_accounting``
- every file read reconciles: ``lines_read = parsed + irrelevant + malformed``;
- the quarantine rate ``sum(malformed) / sum(lines_read)`` of this run's ingest (the whole table
  when this run read nothing) is at most ``validation.max_quarantine_rate``.

``bronze/ingest_files`` (always the whole table: silence is about the hosts a run did not hear from)
- no host is silent: every (cluster, host) that ever delivered a file delivered new lines within
  ``validation.silence_hours`` (``last_delivered_at``, the time of the run that last read new lines
  of a file). A dead collector, a broker that stopped logging or a path that moved reads as a
  failure, not as a quiet green night.
"""

from __future__ import annotations

import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation

from epoch_audit.contracts.events import EVENT_SCHEMA, EVENT_TYPES
from epoch_audit.validate.base import TableSuite, ValidationSettings, offending_rows, sql_string, sql_timestamp
from epoch_audit.validate.scope import bronze_events_of_run, ledger_rows_of_run

# Columns holding an epoch (LE, PE, CE, BE, quorum epoch); -1 / -2 are the only negatives allowed.
EPOCH_COLUMNS = (
    "controller_epoch",
    "state_controller_epoch",
    "known_controller_epoch",
    "leader_epoch",
    "current_leader_epoch",
    "prev_leader_epoch",
    "partition_epoch",
    "broker_epoch",
    "quorum_epoch",
)
MIN_EPOCH = -2


def epoch_query(columns: tuple[str, ...] = EPOCH_COLUMNS) -> str:
    """Offending (event_id, column, value) for every epoch below ``MIN_EPOCH``: one scan (the rows
    with any low epoch, then one output row per low column), not one scan per column."""
    pairs = ", ".join(f"'{c}', CAST({c} AS BIGINT)" for c in columns)
    any_low = " OR ".join(f"{c} < {MIN_EPOCH}" for c in columns)
    return (
        "SELECT CAST(event_id AS STRING) AS event_id, column_name, CAST(value AS STRING) AS value FROM ("
        f"SELECT event_id, stack({len(columns)}, {pairs}) AS (column_name, value) FROM {{batch}} WHERE {any_low}"
        f") WHERE value < {MIN_EPOCH}"
    )


def unique_query(column: str, partitions: int | None = None) -> str:
    """Offending (value, copies) for every non-null value of ``column`` on more than one row.

    The values are grouped by their 64-bit hash first: a shuffle of longs, not of the ids (64
    characters each), and no sort — GX's own uniqueness is a window over the column, which sorted
    every row of the batch with every column the suite reads (half of a 20 s validation at 10^7
    events). ``partitions`` (a large batch) spreads the hashes over that many tasks so that no
    task's hash table outgrows its memory and spills. Only the rows whose hash repeats (none, but
    for a duplicate or a collision) are then grouped by the value itself: the answer is exact.
    """
    spread = f"/*+ REPARTITION({partitions}, h) */ " if partitions else ""
    return (
        f"WITH hashes AS (SELECT {spread}xxhash64({column}) AS h FROM {{batch}} WHERE {column} IS NOT NULL), "
        "repeated AS (SELECT h FROM hashes GROUP BY h HAVING COUNT(*) > 1) "
        f"SELECT /*+ BROADCAST(r) */ CAST(b.{column} AS STRING) AS {column}, CAST(COUNT(*) AS STRING) AS copies "
        f"FROM {{batch}} b JOIN repeated r ON xxhash64(b.{column}) = r.h WHERE b.{column} IS NOT NULL "
        f"GROUP BY b.{column} HAVING COUNT(*) > 1"
    )


def events_expectations(settings: ValidationSettings) -> list[Expectation]:
    """The bronze/events epoch_audit.validate."""
    exps: list[Expectation] = [
        gxe.ExpectTableColumnsToMatchSet(column_set=[f.name for f in EVENT_SCHEMA.fields], exact_match=False),
    ]
    exps += [
        gxe.ExpectColumnValuesToBeOfType(column=f.name, type_=type(f.dataType).__name__) for f in EVENT_SCHEMA.fields
    ]
    exps += [gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("event_id", "event_type", "file_id", "line_number")]
    exps.append(offending_rows("event_id_unique", unique_query("event_id", settings.id_partitions),
                               "event_id is unique"))
    exps.append(gxe.ExpectColumnValuesToBeInSet(column="event_type", value_set=sorted(EVENT_TYPES)))
    exps.append(
        offending_rows("epochs_at_least_minus_2", epoch_query(), f"epochs are >= {MIN_EPOCH} (-1 / -2 are sentinels)")
    )
    lo, hi = sql_timestamp(settings.event_time_min), sql_timestamp(settings.event_time_max)
    exps.append(
        offending_rows(
            "event_time_in_window",
            "SELECT CAST(event_id AS STRING) AS event_id, CAST(event_time AS STRING) AS event_time, "
            f"CAST(source_file AS STRING) AS source_file FROM {{batch}} "
            f"WHERE event_time < {lo} OR event_time > {hi}",
            f"event_time inside [{settings.event_time_min.isoformat()}, {settings.event_time_max.isoformat()}]",
        )
    )
    return exps


def accounting_expectations(settings: ValidationSettings) -> list[Expectation]:
    """The bronze/ingest_accounting epoch_audit.validate."""
    run = sql_string(settings.run_id)
    rate = float(settings.max_quarantine_rate)
    return [
        gxe.ExpectTableColumnsToMatchSet(
            column_set=["file_id", "source_file", "lines_read", "parsed", "irrelevant", "malformed"],
            exact_match=False,
        ),
        offending_rows(
            "accounting_reconciles",
            "SELECT CAST(file_id AS STRING) AS file_id, CAST(source_file AS STRING) AS source_file, "
            "CAST(start_line AS STRING) AS start_line, CAST(lines_read AS STRING) AS lines_read, "
            "CAST(parsed AS STRING) AS parsed, CAST(irrelevant AS STRING) AS irrelevant, "
            "CAST(malformed AS STRING) AS malformed FROM {batch} "
            "WHERE NOT (lines_read <=> parsed + irrelevant + malformed) "
            "OR lines_read IS NULL OR parsed < 0 OR irrelevant < 0 OR malformed < 0",
            "every file read reconciles: lines_read = parsed + irrelevant + malformed",
        ),
        offending_rows(
            "quarantine_rate_under_threshold",
            f"WITH this_run AS (SELECT * FROM {{batch}} WHERE run_id = {run}), "
            "scope AS (SELECT * FROM this_run UNION ALL "
            "SELECT * FROM {batch} WHERE NOT EXISTS (SELECT 1 FROM this_run)) "
            "SELECT CAST(SUM(malformed) AS STRING) AS malformed, CAST(SUM(lines_read) AS STRING) AS lines_read, "
            "CAST(ROUND(SUM(malformed) / SUM(lines_read), 6) AS STRING) AS quarantine_rate FROM scope "
            f"HAVING SUM(lines_read) >= {max(1, settings.min_lines_for_quarantine_rate)} "
            f"AND SUM(malformed) > {rate!r} * SUM(lines_read)",
            f"quarantine rate (malformed / lines_read) <= {rate} (this run's ingest, else the whole table; "
            f"checked from {settings.min_lines_for_quarantine_rate} lines on)",
        ),
    ]


def files_expectations(settings: ValidationSettings) -> list[Expectation]:
    """The bronze/ingest_files expectations: no silent host."""
    if settings.silent_before is None:
        return []
    before = sql_timestamp(settings.silent_before)
    return [
        offending_rows(
            "hosts_not_silent",
            "SELECT CAST(cluster_id AS STRING) AS cluster_id, CAST(host_id AS STRING) AS host_id, "
            "CAST(MAX(last_delivered_at) AS STRING) AS last_delivered_at, CAST(COUNT(*) AS STRING) AS files "
            "FROM {batch} GROUP BY cluster_id, host_id "
            f"HAVING NOT (MAX(last_delivered_at) >= {before})",
            f"every host delivered new lines since {settings.silent_before.isoformat(timespec='minutes')} "
            "(validation.silence_hours)",
        ),
    ]


SUITES: list[TableSuite] = [
    TableSuite(
        "bronze", "bronze/events", events_expectations, key_columns=("event_id",), this_run=bronze_events_of_run
    ),
    TableSuite(
        "bronze", "bronze/ingest_accounting", accounting_expectations, key_columns=("file_id", "start_line"),
        this_run=ledger_rows_of_run,
    ),
    TableSuite("bronze", "bronze/ingest_files", files_expectations, key_columns=("cluster_id", "host_id")),
]
