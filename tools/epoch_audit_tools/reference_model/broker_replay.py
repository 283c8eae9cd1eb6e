"""KRaft broker registrations replayed record by record, like the controller's ClusterControlManager.

KIP-631 (broker registration and fencing) and KIP-841 (controlled shutdown): a RegisterBrokerRecord
starts a broker incarnation (its broker epoch, fenced unless it says otherwise); Fence / Unfence /
Unregister records and BrokerRegistrationChangeRecords change only the flags they carry. Each
record kind is one small named transition over a frozen :class:`BrokerRegistration`. Spec "Ordering
and time": a broker is in controlled shutdown from the record that sets it until it is fenced or
registers again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from epoch_audit_tools.reference_model.event_types import (
    KRAFT_BROKER_TYPES,
    KRAFT_FENCE_BROKER,
    KRAFT_REGISTER_BROKER,
    KRAFT_UNFENCE_BROKER,
    KRAFT_UNREGISTER_BROKER,
    Event,
)
from epoch_audit_tools.reference_model.metadata_log import (
    capped,
    committed_metadata,
    covered_intervals,
    hole_after,
    replay_segments,
    snapshot_records,
)


@dataclass(frozen=True)
class BrokerRegistration:
    """A broker's registration after a record; None = not known from the dumped log."""

    broker_epoch: int | None = None
    registered_at_offset: int | None = None
    registered_at_time: Any = None
    registration_event_id: str | None = None
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "broker_epoch": self.broker_epoch,
            "registered_at_offset": self.registered_at_offset,
            "registered_at_time": self.registered_at_time,
            "registration_event_id": self.registration_event_id,
            "fenced": self.fenced,
            "in_controlled_shutdown": self.in_controlled_shutdown,
        }


def register_broker(state: BrokerRegistration, record: Event) -> BrokerRegistration:
    """RegisterBrokerRecord: a new incarnation; fenced unless the record says otherwise (KIP-631)."""
    return replace(
        state,
        registered_at_offset=record.get("metadata_offset"),
        registered_at_time=record.get("event_time"),
        registration_event_id=record["event_id"],
        fenced=True if record.get("fenced") is None else record["fenced"],
        in_controlled_shutdown=bool(record.get("in_controlled_shutdown")),
    )


def fence_broker(state: BrokerRegistration) -> BrokerRegistration:
    """FenceBrokerRecord / UnregisterBrokerRecord: fenced, and so out of controlled shutdown."""
    return replace(state, fenced=True, in_controlled_shutdown=False)


def unfence_broker(state: BrokerRegistration) -> BrokerRegistration:
    """UnfenceBrokerRecord."""
    return replace(state, fenced=False)


def apply_registration_change(state: BrokerRegistration, change: Event) -> BrokerRegistration:
    """BrokerRegistrationChangeRecord: only the flags it carries (KIP-841: fencing ends a
    controlled shutdown)."""
    if change.get("fenced") is not None:
        state = replace(state, fenced=change["fenced"])
    if change.get("fenced") is True:
        state = replace(state, in_controlled_shutdown=False)
    elif change.get("in_controlled_shutdown") is True:
        state = replace(state, in_controlled_shutdown=True)
    return state


def apply_broker_record(state: BrokerRegistration, record: Event) -> BrokerRegistration:
    """One committed broker record: every record but UnregisterBrokerRecord states the broker
    epoch it is about; then the record's own transition."""
    record_type = record["event_type"]
    if record_type != KRAFT_UNREGISTER_BROKER and record.get("broker_epoch") is not None:
        state = replace(state, broker_epoch=record["broker_epoch"])
    if record_type == KRAFT_REGISTER_BROKER:
        return register_broker(state, record)
    if record_type in (KRAFT_UNREGISTER_BROKER, KRAFT_FENCE_BROKER):
        return fence_broker(state)
    if record_type == KRAFT_UNFENCE_BROKER:
        return unfence_broker(state)
    return apply_registration_change(state, record)


def with_snapshot_fields(state: BrokerRegistration, serving_snapshot: Event | None,
                         position: int) -> BrokerRegistration:
    """The registration as shown after ``position``: past its serving snapshot's offset, what no
    record of the segment has stated yet is the snapshot's registration."""
    if serving_snapshot is not None and position > serving_snapshot["_snap_pos"]:
        state = replace(
            state,
            broker_epoch=serving_snapshot.get("broker_epoch") if state.broker_epoch is None else state.broker_epoch,
            fenced=serving_snapshot.get("fenced") if state.fenced is None else state.fenced,
            in_controlled_shutdown=serving_snapshot.get("in_controlled_shutdown")
            if state.in_controlled_shutdown is None else state.in_controlled_shutdown,
            registration_event_id=serving_snapshot.get("event_id")
            if state.registration_event_id is None else state.registration_event_id,
        )
    return replace(state, in_controlled_shutdown=bool(state.in_controlled_shutdown))


def broker_states(events: Iterable[Event]) -> list[Event]:
    """KRaft broker registration states after each committed record, as dicts, with
    ``next_commit_offset`` (the broker's next record's commit point, or the first offset of a hole
    in the dumped log, if that comes first).

    A broker whose log records all follow a snapshot starts from the snapshot's registration; a
    segment without a RegisterBrokerRecord (the log's start, or after a hole in the dumped log)
    starts unknown: what no record of it has stated yet is its serving snapshot's, after its offset.
    """
    events = list(events)
    log = [{**r, "_pos": r["metadata_offset"]} for r in committed_metadata(events, KRAFT_BROKER_TYPES)
           if r.get("broker_id") is not None]
    snapshots = [r for r in snapshot_records(events, (KRAFT_REGISTER_BROKER,)) if r.get("broker_id") is not None]
    segments = replay_segments(snapshots, log, lambda r: (r["cluster_id"], r["broker_id"]), KRAFT_REGISTER_BROKER,
                               covered_intervals(events))
    out: list[Event] = []
    for key in sorted(segments):
        state = BrokerRegistration()
        previous_segment = None
        for record, segment, serving_snapshot in segments[key]:
            if segment != previous_segment:  # nothing is carried over a hole (or past a new registration)
                state = BrokerRegistration()
            previous_segment = segment
            state = apply_broker_record(state, record)
            shown = with_snapshot_fields(state, serving_snapshot, record["_pos"])
            out.append(
                {
                    "cluster_id": record["cluster_id"],
                    "broker_id": record["broker_id"],
                    "metadata_offset": record.get("metadata_offset"),
                    "commit_offset": record["commit_offset"],
                    "event_id": record["event_id"],
                    "event_time": record.get("event_time"),
                    **shown.as_dict(),
                }
            )
    covered = covered_intervals(events)
    for state_row, following in zip(out, out[1:] + [None], strict=False):
        same_broker = following is not None and (state_row["cluster_id"], state_row["broker_id"]) == (
            following["cluster_id"], following["broker_id"])
        state_row["next_commit_offset"] = capped(following["commit_offset"] if same_broker else None,
                                                 hole_after(covered, state_row["cluster_id"],
                                                            state_row["commit_offset"]))
    return out
