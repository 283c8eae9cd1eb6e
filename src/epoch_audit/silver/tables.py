"""The silver tables: {table name: builder}, each a pure ``(events, config) -> DataFrame`` over the
bronze events of :mod:`epoch_audit.contracts.events` (stored as ``silver/<name>`` in the lake)."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame

from epoch_audit.silver.broker_controller_views import broker_controller_views
from epoch_audit.silver.broker_leader_epochs import broker_leader_epochs
from epoch_audit.silver.broker_registrations import broker_registrations
from epoch_audit.silver.partition_timeline import partition_timeline
from epoch_audit.silver.produce_runs import produce_runs
from epoch_audit.silver.replica_offsets import replica_offsets

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
