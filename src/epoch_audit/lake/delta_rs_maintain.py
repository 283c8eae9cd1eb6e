"""Maintenance of a delta-rs table: compaction, vacuum, a checkpoint (``epoch-audit maintain``)."""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

# Rows per Parquet row group of a compacted file. Spark splits a file among its cores only at row
# groups: one group of a long history's 241k state events (night 16 of ``bench-nights``) made the
# short run's cache one task (7–9 s), four groups let both cores build it (3.6–5 s).
COMPACTED_ROW_GROUP_ROWS = 65_536
# delta-rs's own for OPTIMIZE (given writer properties replace all of its defaults).
COMPACTED_COMPRESSION, COMPACTED_COMPRESSION_LEVEL = "ZSTD", 4
# Partitions kept sorted by a column: (table, (partition column, value), column). Every silver table
# and check reads bronze's state events by event type, and in a long history from their files: in a
# file sorted by type, Parquet skips the row groups of the other types (night 30 of `bench-nights`:
# the timelines stage 12.5 -> 10.7 s). Compaction alone concatenates the nights' files unsorted.
SORTED_PARTITIONS = (("bronze/events", ("event_class", "state"), "event_type"),)
# Columns that keep a Bloom filter per row group in a compacted file, as the ingest pass writes them
# (``epoch_audit.lake.staging.BLOOM_FILTER_COLUMNS``): the cited evidence is looked up by event id.
BLOOM_FILTERED = {"bronze/events": ("event_id",)}


def sort_new_partitions(table, where: tuple[str, str], column: str, properties) -> int:
    """Rewrite, sorted by ``column`` (a Z-order on one column), each partition of the delta-rs
    ``table`` matching ``where`` (partition column, value) that got a file since the table's last
    OPTIMIZE (one commit each); the number rewritten. A sorted partition that got nothing stays as
    it is. Which files are new is read from their modification times: a wrong guess costs time only."""
    import pyarrow as pa

    from epoch_audit.lake.delta_rs_actions import partition_string

    optimized = [h.get("timestamp") for h in table.history() if h.get("operation") == "OPTIMIZE"]
    since = max((t for t in optimized if t is not None), default=None)
    parts = list(table.metadata().partition_columns)
    files = pa.table(table.get_add_actions(flatten=True)).to_pylist()
    fresh = sorted({
        tuple(partition_string(f[f"partition.{c}"]) for c in parts) for f in files
        if partition_string(f.get(f"partition.{where[0]}")) == where[1]
        and (since is None or f["modification_time"] > since)  # both epoch milliseconds in the log
    }, key=lambda values: [v or "" for v in values])
    # A null partition value (events without a time) has no "=" filter in delta-rs: left unsorted.
    fresh = [values for values in fresh if None not in values]
    done = 0
    for values in fresh:
        partition = list(zip(parts, values, strict=True))
        try:
            table.optimize.z_order([column], partition_filters=[(c, "=", v) for c, v in partition],
                                   writer_properties=properties)
            done += 1
        except Exception as err:  # an optimisation: the compaction, vacuum and checkpoint still run
            log.warning("maintain: partition %s not sorted by %s: %s", dict(partition), column, err)
    return done


def maintain_table(
    path: str, options: dict[str, str] | None, retention_hours: int, table_name: str | None = None
) -> dict[str, int]:
    """Compact the table's small files (one commit), delete the files no version younger than
    ``retention_hours`` reads, checkpoint the log and drop the log entries past its retention.
    ``table_name`` (the lake's name of the table) first sorts its :data:`SORTED_PARTITIONS`.

    Every night's commits add small files and log entries that every later read lists and
    replays; compaction rewrites rows, never changes them. Deleting files ends time travel
    to the versions that read them: the caller holds the lake lock, so no run reads them now.
    """
    from deltalake import BloomFilterProperties, ColumnProperties, DeltaTable, WriterProperties

    from epoch_audit.lake.staging import BLOOM_FILTER_FPP

    before = len(DeltaTable(path, storage_options=options).file_uris())
    bloom = ColumnProperties(bloom_filter_properties=BloomFilterProperties(
        True, fpp=BLOOM_FILTER_FPP, ndv=COMPACTED_ROW_GROUP_ROWS))
    properties = WriterProperties(
        max_row_group_size=COMPACTED_ROW_GROUP_ROWS, compression=COMPACTED_COMPRESSION,
        compression_level=COMPACTED_COMPRESSION_LEVEL,
        column_properties={column: bloom for column in BLOOM_FILTERED.get(table_name or "", ())} or None,
    )
    sorted_count = sum(
        sort_new_partitions(DeltaTable(path, storage_options=options), where, column, properties)
        for name, where, column in SORTED_PARTITIONS if name == table_name
    )
    compacted = DeltaTable(path, storage_options=options).optimize.compact(writer_properties=properties)
    table_now = DeltaTable(path, storage_options=options)
    # enforce_retention_duration: the table's own minimum (a week by default) would refuse the
    # retention the user chose; the lock is what makes a short one safe here.
    deleted = table_now.vacuum(retention_hours=retention_hours, dry_run=False, enforce_retention_duration=False)
    table_now = DeltaTable(path, storage_options=options)
    table_now.create_checkpoint()
    table_now.cleanup_metadata()
    return {
        "files_before": before,
        "files_after": len(table_now.file_uris()),
        "files_compacted": int(compacted.get("numFilesRemoved", 0)),
        "files_deleted": len(deleted),
        "partitions_sorted": sorted_count,
    }
