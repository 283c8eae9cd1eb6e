"""Maintenance of a delta-rs table: compaction, vacuum, a checkpoint (``epoch-audit maintain``)."""

from __future__ import annotations

# Rows per Parquet row group of a compacted file. Spark splits a file among its cores only at row
# groups: one group of a long history's 241k state events (night 16 of ``bench-nights``) made the
# short run's cache one task (7–9 s), four groups let both cores build it (3.6–5 s).
COMPACTED_ROW_GROUP_ROWS = 65_536
# delta-rs's own for OPTIMIZE (given writer properties replace all of its defaults).
COMPACTED_COMPRESSION, COMPACTED_COMPRESSION_LEVEL = "ZSTD", 4


def maintain_table(path: str, options: dict[str, str] | None, retention_hours: int) -> dict[str, int]:
    """Compact the table's small files (one commit), delete the files no version younger than
    ``retention_hours`` reads, checkpoint the log and drop the log entries past its retention.

    Every night's commits add small files and log entries that every later read lists and
    replays; compaction rewrites rows, never changes them. Deleting files ends time travel
    to the versions that read them: the caller holds the lake lock, so no run reads them now.
    """
    from deltalake import DeltaTable, WriterProperties

    before = len(DeltaTable(path, storage_options=options).file_uris())
    properties = WriterProperties(max_row_group_size=COMPACTED_ROW_GROUP_ROWS, compression=COMPACTED_COMPRESSION,
                                  compression_level=COMPACTED_COMPRESSION_LEVEL)
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
    }
