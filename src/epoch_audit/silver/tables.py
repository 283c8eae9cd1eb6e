"""The silver tables: {table name: builder}, each a pure ``(events, config) -> DataFrame`` over the
bronze events of :mod:`epoch_audit.contracts.events` (stored as ``silver/<name>`` in the lake), and
:func:`silver_builds`: all of them at once, each table another one reads built only once."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from pyspark.sql import DataFrame

from epoch_audit.silver.broker_controller_views import broker_controller_views
from epoch_audit.silver.broker_leader_epochs import broker_leader_epochs
from epoch_audit.silver.broker_registrations import broker_registrations
from epoch_audit.silver.partition_timeline import partition_timeline
from epoch_audit.silver.produce_runs import produce_runs
from epoch_audit.silver.replica_offsets import replica_offsets, replica_offsets_with_runs

# The config argument is the checks' rule parameters; no silver table depends on them today.
SilverBuilder = Callable[[DataFrame, object], DataFrame]

SILVER_TABLES: dict[str, SilverBuilder] = {
    "partition_timeline": partition_timeline,
    "broker_registrations": broker_registrations,
    "broker_controller_views": broker_controller_views,
    "broker_leader_epochs": broker_leader_epochs,
    "replica_offsets": replica_offsets,
    "produce_runs": produce_runs,
}


def silver_builds(
    events: DataFrame, config: object, reused: Callable[[DataFrame], DataFrame]
) -> dict[str, Callable[[], DataFrame]]:
    """{table name: a thunk building it} over the same ``events``: what :data:`SILVER_TABLES` builds,
    but ``produce_runs`` once, through ``reused`` (a frame two queries read: cached by the caller),
    for its own table and for ``replica_offsets``' dump series (it was computed twice)."""
    runs = reused(produce_runs(events, config))
    builds: dict[str, Callable[[], DataFrame]] = {name: partial(build, events, config) for name, build in
                                                  SILVER_TABLES.items()}
    builds["produce_runs"] = lambda: runs
    builds["replica_offsets"] = partial(replica_offsets_with_runs, events, runs)
    return builds
