"""Small unpartitioned tables (the ingest ledger, the files table, the state tables, the run summary,
the validation results) written and read by the driver through Arrow, without a Spark job.

Each of these writes is a handful of rows, but through Spark it is a query: planning, a job, a
Parquet writer and, for an upsert, a key search over the table first; a samples run made about
twenty of them, 0.1–0.8 s each, most of it fixed cost (issue #20). The delta-rs engine writes
these rows with pyarrow and commits them with the same add/remove actions, schema and statistics
as its Spark writes (:mod:`epoch_audit.lake.delta_rs`); tables whose rows grow with the data
(bronze, silver, gold violations) never come here.

Rows arrive as ``createDataFrame`` takes them (tuples for a ``StructType``) and are checked and
converted by PySpark's own code (``_make_type_verifier``, ``StructType.toInternal``): the stored
values are the ones a Spark write of the same rows stores (a naive time is the process's local
time, as PySpark reads it).
"""

from __future__ import annotations

import io
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql.types import StructType, _make_type_verifier

from epoch_audit import objstore


def arrow_rows(rows: list[tuple], schema: StructType) -> pa.Table:
    """``rows`` as an Arrow table of ``schema``'s Arrow types, converted as Spark converts them."""
    from pyspark.sql.pandas.types import to_arrow_schema

    verify = _make_type_verifier(schema)
    internal = []
    for row in rows:
        verify(row)  # the error createDataFrame raises for a value of the wrong type
        internal.append(schema.toInternal(row))
    arrow_schema = to_arrow_schema(schema)
    columns = [pa.array([r[i] for r in internal], type=f.type) for i, f in enumerate(arrow_schema)]
    return pa.Table.from_arrays(columns, schema=arrow_schema)


def key_tuples(table: pa.Table, keys: list[str]) -> list[tuple]:
    """Each row's key (null-safe: a null key part equals a null, as MERGE's ``<=>``)."""
    return list(zip(*(table.column(k).to_pylist() for k in keys), strict=True))


def first_per_key(table: pa.Table, keys: list[str]) -> pa.Table:
    """One row per key (the first): what an upsert's source is reduced to."""
    seen: set[tuple] = set()
    keep = []
    for key in key_tuples(table, keys):
        keep.append(key not in seen)
        seen.add(key)
    return table if all(keep) else table.filter(pa.array(keep))


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns, in its order and types; a column it lacks is
    null (a file written before the column was added)."""
    columns = []
    for field in schema:
        if field.name in table.column_names:
            columns.append(table.column(field.name).cast(field.type))
        else:
            columns.append(pa.nulls(table.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def read_file(uri: str, schema: pa.Schema) -> pa.Table:
    """One data file of a table, as ``schema`` (see :func:`conform`)."""
    with objstore.open_input(uri) as fh:
        present = [f.name for f in schema if f.name in pq.read_schema(fh).names]
        fh.seek(0)
        return conform(pq.read_table(fh, columns=present), schema)


def write_file(uri: str, table: pa.Table) -> tuple[int, pq.FileMetaData]:
    """``table`` as one snappy Parquet file at ``uri``: its size and footer."""
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="snappy")
    data = buffer.getvalue()
    objstore.write_bytes(uri, data)
    return len(data), pq.read_metadata(io.BytesIO(data))


def python_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows as dicts of Arrow's Python values (a time is an aware UTC datetime)."""
    return table.to_pylist()
