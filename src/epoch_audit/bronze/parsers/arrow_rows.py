"""What the parsers that read a batch of lines in Arrow share: the ingest pass's rows built as
Arrow columns, with the values ``rows.finish_row`` and ``file_pass.FilePass.emit_events`` give the
per-line parsers' rows (ids, provenance, ``details`` maps, the day and the running max time)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


@dataclass(frozen=True)
class FileConstants:
    """What every event of one file shares (the provenance columns)."""

    file_id: str
    source_file: str
    cluster_id: str | None
    host_id: int | None
    file_order: int | None
    log_kind: str


def event_id(file_id: str, line_number: int, sub_index: int = 0) -> str:
    """``rows.event_id`` of a line's event."""
    return hashlib.sha256(f"{file_id}|{line_number}|{sub_index}".encode()).hexdigest()


def as_text(values: pa.Array) -> pa.Array:
    """A details value as the per-line parsers print it (ints in decimal, booleans true / false)."""
    return values if pa.types.is_string(values.type) else pc.cast(values, pa.string())


def details_map(columns: list[tuple[str, pa.Array]], rows: int) -> pa.MapArray:
    """map<string,string> of the non-null values, keys in ``columns`` order (the per-line order)."""
    keys = len(columns)
    values = pa.concat_arrays([as_text(v) for _, v in columns])  # column-major: key k of row i at k * rows + i
    order = (np.arange(keys)[None, :] * rows + np.arange(rows)[:, None]).ravel()  # row-major
    items = values.take(pa.array(order))
    names = pa.array(np.repeat(np.array([k for k, _ in columns], dtype=object)[None, :], rows, axis=0).ravel(),
                     pa.string())
    present = items.is_valid()
    counts = np.asarray(present.to_numpy(zero_copy_only=False), dtype=np.int32).reshape(rows, keys).sum(axis=1)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    return pa.MapArray.from_arrays(pa.array(offsets), names.filter(present), items.filter(present))


def pass_batch(columns: dict[str, pa.Array], file: FileConstants, lines: Sequence[int], micros: pa.Array,
               own_micros: Sequence[int | None], raws: Sequence[str], event_class: str,
               schema: pa.Schema, subs: Sequence[int] | None = None) -> pa.RecordBatch:
    """Events as the ingest pass's rows (``schema``): ``columns`` by name (the others null), the
    file's provenance, ``broker_id`` the host; per event its line, ``sub_index`` (``subs``, else 0),
    event time (``micros``: epoch microseconds, null for none), the file's running max there and raw text."""
    rows = len(lines)
    subs = [0] * rows if subs is None else subs
    event_time = micros.cast(pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    columns = dict(columns)
    columns.update(
        row_kind=pa.array(["event"] * rows, pa.string()),
        event_id=pa.array([event_id(file.file_id, n, k) for n, k in zip(lines, subs, strict=True)], pa.string()),
        cluster_id=pa.array([file.cluster_id] * rows, pa.string()),
        host_id=pa.array([file.host_id] * rows, pa.int32()),
        broker_id=pa.array([file.host_id] * rows, pa.int32()),
        event_time=event_time, source_file=pa.array([file.source_file] * rows, pa.string()),
        file_id=pa.array([file.file_id] * rows, pa.string()), file_order=pa.array([file.file_order] * rows, pa.int64()),
        line_number=pa.array(lines, pa.int64()), sub_index=pa.array(subs, pa.int32()),
        log_kind=pa.array([file.log_kind] * rows, pa.string()), raw=pa.array(raws, pa.string()),
        event_date=pc.cast(event_time, pa.date32()), event_class=pa.array([event_class] * rows, pa.string()),
        own_time=pa.array(own_micros, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
    )
    arrays = [columns[f.name].cast(f.type) if f.name in columns else pa.nulls(rows, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
