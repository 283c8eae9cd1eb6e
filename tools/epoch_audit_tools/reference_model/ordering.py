"""A broker's own log order, in plain Python (spec "Ordering and time", rule 2).

A history is a list of dicts with the bronze columns (``epoch_audit.contracts.events.EVENT_COLUMNS``).
Line order inside one file is the broker's own order; a host's files interleave by its own clock,
taken as the running maximum of ``event_time`` along each file's lines (so line order wins inside
a file even where times go backwards, e.g. Redpanda's multi-shard files).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from epoch_audit_tools.reference_model.event_types import Event

_MIN_TIME = datetime.min


def nulls_first(value: Any) -> tuple[bool, Any]:
    """Sort key part: nulls first (Spark's ascending default)."""
    return (value is not None, value if value is not None else 0)


def nulls_last(value: Any) -> tuple[bool, Any]:
    """Sort key part: nulls last."""
    return (value is None, value if value is not None else 0)


def own_times(events: Iterable[Event]) -> dict[str, datetime | None]:
    """event_id -> running max of event_time along its file's lines (line order wins in a file)."""
    by_file: dict[Any, list[Event]] = defaultdict(list)
    for event in events:
        by_file[event.get("file_id")].append(event)
    out: dict[str, datetime | None] = {}
    for rows in by_file.values():
        rows.sort(key=lambda e: (e.get("line_number") or 0, e.get("sub_index") or 0))
        running_max: datetime | None = None
        for event in rows:
            time = event.get("event_time")
            if time is not None and (running_max is None or time > running_max):
                running_max = time
            out[event["event_id"]] = running_max
    return out


def own_position(event: Event, times: dict[str, datetime | None]) -> tuple:
    """Sort key of a broker's own log order: (own time, file order, file id, line, sub index, id)."""
    time = times.get(event["event_id"])
    return (
        time or _MIN_TIME,
        event.get("file_order") or 0,
        event.get("file_id") or "",
        event.get("line_number") or 0,
        event.get("sub_index") or 0,
        event["event_id"],
    )


def by_broker_in_own_order(events: Iterable[Event]) -> Iterator[tuple[tuple, list[Event]]]:
    """Yield ((cluster_id, broker_id), events in that broker's own log order)."""
    events = list(events)
    times = own_times(events)
    groups: dict[tuple, list[Event]] = defaultdict(list)
    for event in events:
        if event.get("broker_id") is not None:
            groups[(event.get("cluster_id"), event["broker_id"])].append(event)
    for key, rows in groups.items():
        rows.sort(key=lambda e: own_position(e, times))
        yield key, rows
