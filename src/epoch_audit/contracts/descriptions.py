"""What every table of the lake holds: its Delta table description and a comment per column.

Both engines write them with every table (``epoch_audit.lake``: delta-rs puts the description in the
metadata action and the comment in each field's metadata; delta-spark sets the table comment and the
column comments), so a SQL warehouse, a catalog browser or ``DESCRIBE TABLE`` explains the columns a
dashboard reads; docs/tables.md is generated from here (``tools``, kept in sync by a test).

The columns of the contracts' own schemas are described next to their fields (bronze events in
``events.py``, violations in ``violations.py``, the partition timeline in ``silver.py``); the tables
whose schema is built by a stage are described here. A column a table's entry does not name takes
the shared meaning in :data:`SHARED_COLUMNS`.
"""

from __future__ import annotations

from dataclasses import dataclass

from epoch_audit.contracts.events import EVENT_COLUMN_DESCRIPTIONS
from epoch_audit.contracts.silver import TIMELINE_COLUMN_DESCRIPTIONS
from epoch_audit.contracts.violations import VIOLATION_COLUMN_DESCRIPTIONS

# Columns that mean the same in every table that has them.
SHARED_COLUMNS: dict[str, str] = {
    "cluster_id": "Cluster the row is about.",
    "run_id": "The run that wrote the row (its report is reports/<run_id>/index.html).",
    "file_id": "sha256 identity of the file's content stream (cluster, host, log name, first line).",
    "source_file": "Path of the input file, as found under --input.",
    "host_id": "Host the file came from (broker-<id>, broker=<id> or node-<id> path segment).",
    "log_kind": "Kind of log the file holds (see bronze/events.log_kind).",
    "broker_id": "The broker the row is about.",
    "topic": "Topic.",
    "partition": "Partition number.",
    "event_id": "The event in bronze/events the row comes from.",
    "event_type": "The type of that event.",
    "event_time": "Time of that event.",
    "leader_epoch": "Leader epoch.",
    "invariant": "Id of the invariant (docs/invariants.md).",
    "severity": "error or warning.",
    "confidence": "confirmed or suspected.",
    "violation_id": "The violation in gold/violations.",
    "file_order": "Sortable rank of the file among its host's files of one log (the live file last).",
    "line_number": "1-based line in the file.",
    "sub_index": "0.. when one line yields several events.",
    "topic_id": "Kafka topic id in force.",
    "tid": "Topic id in force for the series (its own, else the host's last logged one).",
    "ots": "Own time: running maximum of event_time along the file's lines of this view.",
    "fingerprint": "sha256 of the cluster's ledger keys (bronze/ingest_accounting) the build read.",
}


@dataclass(frozen=True)
class TableDescription:
    """A table's description and the meaning of its own columns (others: :data:`SHARED_COLUMNS`)."""

    description: str
    columns: dict[str, str]


TABLES: dict[str, TableDescription] = {
    "bronze/events": TableDescription(
        "One row per audit event parsed from the brokers' and controllers' logs (schema: "
        "epoch_audit.contracts.events). Partitioned by cluster_id, event_class, event_date.",
        EVENT_COLUMN_DESCRIPTIONS,
    ),
    "bronze/ingest_files": TableDescription(
        "One row per file identity (cluster, host, log name, first line): the bytes and lines ingest consumed "
        "and their hash, so a grown file is read from where the last run stopped.",
        {
            "stream": "Name of the log the file is a copy or rotation of.",
            "consumed_bytes": "Bytes of the file read so far.",
            "consumed_lines": "Lines of the file read so far.",
            "prefix_sha256": "sha256 of the consumed bytes: a file whose start changed is a new file.",
            "last_run_id": "The last run that read new lines of the file.",
            "max_event_micros": "Latest event time of the file's events so far (epoch microseconds).",
            "last_delivered_at": "When a run last read new lines of the file (UTC): silence is an alarm.",
        },
    ),
    "bronze/ingest_accounting": TableDescription(
        "The ledger: one row per chunk of a file ingested, every line accounted for as parsed, irrelevant "
        "or malformed (lines_read = parsed + irrelevant + malformed).",
        {
            "run_id": "The run that read the chunk.",
            "start_line": "First line of the chunk (1-based).",
            "end_line": "Last line of the chunk.",
            "start_byte": "Byte offset of the chunk in the file.",
            "lines_read": "Lines in the chunk.",
            "parsed": "Lines that gave audit events.",
            "irrelevant": "Lines of no audit interest.",
            "malformed": "Lines quarantined (quarantine/lines, with the reason).",
            "bad_utf8": "Lines with invalid UTF-8 (decoded with replacement characters).",
        },
    ),
    "quarantine/lines": TableDescription(
        "One row per malformed line, with the reason it was quarantined.",
        {
            "run_id": "The run that read the line.",
            "reason": "Why the line was quarantined (the field whose value did not fit).",
            "raw": "The line's text (cut), secrets redacted.",
        },
    ),
    "silver/partition_timeline": TableDescription(
        "One row per controller decision per partition, in causal order (KRaft metadata log, ZooKeeper "
        "controller lines or received LeaderAndIsr states, Redpanda terms).",
        TIMELINE_COLUMN_DESCRIPTIONS,
    ),
    "silver/broker_registrations": TableDescription(
        "A broker's KRaft registration state after each metadata record about it; the state holds for commit "
        "points in [commit_offset, next_commit_offset).",
        {
            "broker_epoch": "Registered broker epoch of the incarnation.",
            "registered_at_offset": "Metadata offset of the incarnation's RegisterBrokerRecord.",
            "registered_at_time": "Its CreateTime (controller clock, UTC).",
            "registration_event_id": "Its event id.",
            "registered": "False after UnregisterBrokerRecord.",
            "fenced": "Whether the broker is fenced in this state.",
            "in_controlled_shutdown": "Whether the broker is in controlled shutdown in this state.",
            "metadata_offset": "Metadata offset of the record.",
            "commit_offset": "Commit point from which the state holds.",
            "next_commit_offset": "Commit point where it stops holding (null: to the end of the input).",
            "record_type": "The record's type.",
            "source": "Where the state comes from (a record, or a snapshot's base).",
        },
    ),
    "silver/broker_controller_views": TableDescription(
        "Per ZooKeeper broker, the controller epochs it has seen, in its own log order.",
        {
            "correlation_id": "Request correlation id.",
            "controller_id": "Controller that sent the request.",
            "controller_epoch": "The request's controller epoch.",
            "seen_controller_epoch": "The controller epoch this event shows the broker knew.",
            "_own_time": "Own time of the event (bronze own_time).",
            "prior_max_controller_epoch": "Highest controller epoch seen strictly before this event.",
            "prior_max_event_id": "An event that showed that epoch (evidence).",
            "max_controller_epoch": "Running maximum including this event.",
        },
    ),
    "silver/broker_leader_epochs": TableDescription(
        "Per broker and partition, the leader-epoch (Redpanda: Raft-term) series the broker itself holds, with "
        "its log deletions and its acknowledgements of others' leadership, in its own log order.",
        {
            "row_kind": "epoch (a held epoch), series_break (a local log deletion) or ack (another's leadership).",
            "leader": "Leader the row names.",
            "gen": "Number of series breaks so far: comparisons never cross a gen.",
            "is_claim": "A leadership claim (leader start line, Redpanda becoming/became the leader).",
            "system": "kafka or redpanda.",
            "seq": "Order of the row within its series.",
        },
    ),
    "silver/replica_offsets": TableDescription(
        "Per broker and partition, the offsets a replica records, one series each: epoch starts (lines, "
        "checkpoints, dumps), log start, high watermark (leader lines, checkpoints).",
        {
            "series": "Which series the row belongs to (epoch_start_line, hw_checkpoint...).",
            "value": "The recorded offset.",
            "is_latest_copy": "The row is from the broker's newest checkpoint copy.",
            "is_earliest_entry": "The smallest epoch in that checkpoint copy.",
            "series_seq": "Order of the row within its series.",
        },
    ),
    "silver/produce_runs": TableDescription(
        "A host's dumped data batches compacted to runs of consecutive batches with one leader epoch.",
        {
            "broker_id": "Host whose segment dump holds the batches.",
            "run_no": "Number of the run in offset order.",
            "leader_epoch": "partitionLeaderEpoch of the run's batches.",
            "prev_run_epoch": "Leader epoch of the run just below.",
            "first_offset": "First offset of the run.",
            "last_offset": "Last offset of the run.",
            "last_base_offset": "Base offset of the run's last batch.",
            "batch_count": "Batches in the run.",
            "first_event_id": "Event of the first batch.",
            "last_event_id": "Event of the last batch.",
            "first_time": "CreateTime of the first batch (producer clock: informative only).",
            "last_time": "CreateTime of the last batch.",
        },
    ),
    "gold/violations": TableDescription(
        "One row per replication-safety violation the logs prove, with its evidence and a one-sentence "
        "explanation (docs/invariants.md, the violations contract).",
        VIOLATION_COLUMN_DESCRIPTIONS,
    ),
    "gold/run_summary": TableDescription(
        "One row per completed run, written as its last step (a killed run has none).",
        {
            "run_id": "The run's id.",
            "command": "The command that ran (run, ingest, check, validate, report...).",
            "started_at": "When the run started (UTC).",
            "finished_at": "When it finished (UTC).",
            "exit_code": "Its exit code (0 ok, 3 found).",
            "new_violations": "Violations it reported first, less suppressed ones.",
            "summary": "The run summary as JSON (what --json prints).",
            # typed copies of the summary's facts, for dashboards; null when the run did not run the
            # stage that counts them (older rows: taken out of their summary when the columns were added)
            "status": "ok (exit 0) or found (exit 3).",
            "run_date": "UTC day the run started.",
            "wall_seconds": "Seconds from start to finish.",
            "lines_read": "Input lines the ingest read (parsed + irrelevant + malformed).",
            "parsed": "Lines parsed into events.",
            "irrelevant": "Lines recognised as carrying no audit event.",
            "malformed": "Lines quarantined (quarantine/lines).",
            "known_violations": "Violations in gold/violations after the check.",
            "suppressed_new": "New violations an active suppression covers (not in new_violations).",
            "failed_expectations": "Expectations that failed or raised.",
            "critical_failures": "Failed expectations of the critical suites (exit 3).",
            "silent_hosts": "Hosts that delivered no new lines within validation.silence_hours (null when "
                            "not checked).",
            "input_problem_clusters": "Checked clusters whose input is doubtful (gold/input_problems).",
        },
    ),
    "gold/validation_results": TableDescription(
        "One row per run, table and expectation: the Great Expectations results (docs/validation.md).",
        {
            "run_id": "The run that validated.",
            "validated_at": "When (UTC).",
            "suite": "Suite (bronze, silver, gold).",
            "table": "Table validated.",
            "expectation": "Expectation name.",
            "expectation_type": "Great Expectations type.",
            "description": "What the expectation checks.",
            "critical": "Whether a failure makes the run exit 3.",
            "status": "passed, failed, error or skipped.",
            "success": "Whether it passed (null when skipped).",
            "observed_value": "Observed value, JSON.",
            "unexpected_count": "Offending rows.",
            "element_count": "Rows validated.",
            "unexpected_sample": "Offending keys (JSON objects), at most validation.unexpected_sample_size.",
            "note": "Why skipped, or what raised.",
        },
    ),
    "gold/daily_invariant_counts": TableDescription(
        "Violations per UTC day of their event time, cluster, invariant, severity and confidence; rewritten by "
        "every report, for dashboards.",
        {
            "date": "UTC day of the violations' event_time (null without one).",
            "count": "Violations.",
            "suppressed": "Of them, covered by an active suppression.",
        },
    ),
    "gold/suppressions": TableDescription(
        "One row per violation an entry of the suppressions file covers.",
        {
            "entry": "Index of the entry in the suppressions file.",
            "reason": "Why it is accepted.",
            "owner": "Who accepted it.",
            "expires": "Last day the entry is active (UTC).",
            "status": "active or expired.",
        },
    ),
    "gold/input_problems": TableDescription(
        "Per cluster, the reasons to doubt that its input is one cluster's logs (epoch_audit.gold.analysis."
        "input_sanity): its violations are doubtful while a row names it. Replaced for every checked cluster.",
        {
            "problem": "mixed_modes (ZooKeeper, KRaft and Redpanda logs under one cluster id) or "
                       "conflicting_identity (a host whose lines speak as another broker).",
            "detail": "What was found, in words.",
            "hosts": "The hosts involved.",
            "run_id": "The run that checked the cluster.",
        },
    ),
    "state/silver_built": TableDescription(
        "Per cluster, the bronze fingerprint its silver tables were last built from.",
        {"run_id": "The run that built them."},
    ),
    "state/gold_checked": TableDescription(
        "Per cluster, the bronze fingerprint its violations were last checked from.",
        {"run_id": "The run that checked them."},
    ),
    "state/input_signs": TableDescription(
        "Per state partition of bronze/events (cluster, event class, day) and host, the signs the input "
        "problems are read from (epoch_audit.stages.input_signs): a run reads again only the partitions whose "
        "files changed.",
        {
            "event_class": "The partition's event class.",
            "event_date": "The partition's day (ISO; null: events without a time).",
            "files_fingerprint": "sha256 of the partition's live files when its signs were read.",
            "code_fingerprint": "sha256 of the code that read them (other code reads the partition again).",
            "zookeeper": "Some event of the host shows a ZooKeeper-mode controller.",
            "kraft": "Some event of the host shows a KRaft quorum.",
            "redpanda": "Some event of the host is Redpanda's.",
            "migrating": "Some event of the host shows a ZooKeeper-to-KRaft migration.",
            "speaks_as": "Other broker ids the host's self-naming lines speak as.",
        },
    ),
    "state/traffic_carry": TableDescription(
        "Carried request-log traffic: the older events a check still needs (bronze event columns), and one "
        "marker row per cluster with its horizon.",
        {
            **EVENT_COLUMN_DESCRIPTIONS,
            "carry_horizon_micros": "Marker row: the cluster's traffic horizon (epoch microseconds).",
            "carry_fingerprint": "Marker row: fingerprint of the state the carry was taken against.",
        },
    ),
}


def table_description(table: str) -> TableDescription | None:
    """The description of lake table ``table`` (None: a table this build does not describe)."""
    return TABLES.get(table)


def column_comments(table: str, columns: list[str]) -> dict[str, str]:
    """The comment of each of ``columns`` of ``table`` that has one (its own, else the shared one)."""
    entry = TABLES.get(table)
    own = entry.columns if entry is not None else {}
    return {c: own.get(c) or SHARED_COLUMNS[c] for c in columns if c in own or c in SHARED_COLUMNS}
