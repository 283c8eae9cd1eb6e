"""KRaft partition states replayed record by record, like the controller's PartitionChangeBuilder.

KIP-631 (the KRaft metadata records): a PartitionRecord states a partition's whole registration
(leader, leader epoch, partition epoch, ISR, replicas); a PartitionChangeRecord carries only what
changed, and the epochs follow from it (``PartitionRegistration.merge``). Each record kind is one
small named transition over a frozen :class:`PartitionState`. Only committed records count
(``metadata_log.committed_metadata``); snapshots and holes in the dumped log are handled by
``metadata_log.replay_segments``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from epoch_audit_tools.reference_model.event_types import (
    KRAFT_FULL_PARTITION_TYPE,
    KRAFT_PARTITION_TYPES,
    Event,
)
from epoch_audit_tools.reference_model.metadata_log import (
    capped,
    committed_metadata,
    covered_intervals,
    hole_after,
    replay_segments,
    snapshot_records,
    topic_names,
    topic_removals,
)

# PartitionChangeRecord.leader: -2 = the leader does not change (KIP-631 NO_LEADER_CHANGE).
NO_LEADER_CHANGE = -2


@dataclass(frozen=True)
class PartitionState:
    """A partition's registration after a record; None = not known from the dumped log."""

    leader: int | None = None
    leader_epoch: int | None = None
    partition_epoch: int | None = None
    isr: list[int] | None = None
    replicas: list[int] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
            "isr": self.isr,
            "replicas": self.replicas,
        }


def _plus_one(epoch: int | None) -> int | None:
    return None if epoch is None else epoch + 1


def changes_leader(change: Event) -> bool:
    """A PartitionChangeRecord that names a leader (absent or -2: the leader does not change)."""
    return change.get("leader") is not None and change["leader"] != NO_LEADER_CHANGE


def apply_partition_record(record: Event) -> PartitionState:
    """PartitionRecord (KIP-631): the whole state."""
    return PartitionState(
        leader=record.get("leader"),
        leader_epoch=record.get("leader_epoch"),
        partition_epoch=record.get("partition_epoch"),
        isr=record.get("isr"),
        replicas=record.get("replicas"),
    )


def elect_leader(state: PartitionState, leader: int) -> PartitionState:
    """A leader named by a change: the leader epoch goes up by one, also when the same leader is
    re-sent (KAFKA-15021: PartitionChangeBuilder bumps the epoch on every election)."""
    return replace(state, leader=leader, leader_epoch=_plus_one(state.leader_epoch))


def bump_partition_epoch(state: PartitionState) -> PartitionState:
    """Every PartitionChangeRecord raises the partition epoch (KIP-631)."""
    return replace(state, partition_epoch=_plus_one(state.partition_epoch))


def apply_partition_change(state: PartitionState, change: Event) -> PartitionState:
    """PartitionChangeRecord (KIP-631, PartitionRegistration.merge): only the fields it carries
    change; ISR / replicas absent = unchanged; the epochs follow from the change."""
    if changes_leader(change):
        state = elect_leader(state, change["leader"])
    state = bump_partition_epoch(state)
    if change.get("isr") is not None:
        state = replace(state, isr=change["isr"])
    if change.get("replicas") is not None:
        state = replace(state, replicas=change["replicas"])
    return state


def unknown_segment_start(segment_rows: list[Event], serving_snapshot: Event | None) -> PartitionState:
    """The state before a segment without a PartitionRecord (the log's start, or after a hole in
    the dumped log): unknown, except the epochs its serving snapshot gives, counted back over the
    segment's changes up to the snapshot's offset (one partition epoch per change, one leader
    epoch per election)."""
    if serving_snapshot is None:
        return PartitionState()
    up_to_snapshot = [r for r in segment_rows if r["_pos"] <= serving_snapshot["_snap_pos"]]
    elections = sum(int(changes_leader(r)) for r in up_to_snapshot)
    leader_epoch, partition_epoch = serving_snapshot.get("leader_epoch"), serving_snapshot.get("partition_epoch")
    return PartitionState(
        leader_epoch=None if leader_epoch is None else leader_epoch - elections,
        partition_epoch=None if partition_epoch is None else partition_epoch - len(up_to_snapshot),
    )


def with_snapshot_fields(state: PartitionState, serving_snapshot: Event | None, position: int) -> PartitionState:
    """The state as shown after ``position``: past its serving snapshot's offset, what no change
    has set yet (leader, ISR, replicas) is the snapshot's."""
    if serving_snapshot is None or position <= serving_snapshot["_snap_pos"]:
        return state
    return replace(
        state,
        leader=serving_snapshot.get("leader") if state.leader is None else state.leader,
        isr=serving_snapshot.get("isr") if state.isr is None else state.isr,
        replicas=serving_snapshot.get("replicas") if state.replicas is None else state.replicas,
    )


def _partition_key(record: Event) -> tuple:
    return (record["cluster_id"], record.get("topic_id"), record.get("partition"))


def _key_order(key: tuple) -> tuple:
    cluster, topic_id, partition = key
    return (str(cluster), str(topic_id), partition is not None, partition or 0)


def replay_partitions(events: list[Event]) -> list[tuple[Event, PartitionState]]:
    """(record, state after it) per committed KRaft partition record, snapshots included.

    A snapshot below a partition's first log record is its starting state (a record at the
    snapshot's last offset, ``commit_offset`` there, no metadata offset); a segment without a
    PartitionRecord (the log's start, or after a hole in the dumped log) has unknown epochs unless
    a snapshot serves it (:func:`unknown_segment_start`).
    """
    log = [{**r, "_pos": r["metadata_offset"]} for r in committed_metadata(events, KRAFT_PARTITION_TYPES)]
    segments = replay_segments(snapshot_records(events, (KRAFT_FULL_PARTITION_TYPE,)), log, _partition_key,
                               KRAFT_FULL_PARTITION_TYPE, covered_intervals(events))
    out: list[tuple[Event, PartitionState]] = []
    for key in sorted(segments, key=_key_order):
        rows = segments[key]
        state = PartitionState()
        for i, (record, segment, serving_snapshot) in enumerate(rows):
            starts_segment = i == 0 or segment != rows[i - 1][1]
            if record["event_type"] == KRAFT_FULL_PARTITION_TYPE:  # the whole state: a new segment
                state = apply_partition_record(record)
            else:
                if starts_segment:
                    segment_rows = [r for r, number, _ in rows if number == segment]
                    state = unknown_segment_start(segment_rows, serving_snapshot)
                state = apply_partition_change(state, record)
            out.append((record, with_snapshot_fields(state, serving_snapshot, record["_pos"])))
    return out


def partition_states(events: Iterable[Event]) -> list[Event]:
    """KRaft partition states, one per committed record, as dicts.

    Columns: cluster_id, topic_id, topic, partition, metadata_offset, commit_offset, event_id,
    event_time, leader, leader_epoch, partition_epoch, isr, next_commit_offset (the next state's
    commit point, or the topic id's RemoveTopicRecord commit point, or the first offset of a hole
    in the dumped log, if that comes first) - sorted by (cluster, topic id, partition, offset).
    """
    events = list(events)
    names = topic_names(events)
    out: list[Event] = []
    for record, state in replay_partitions(events):
        out.append(
            {
                "cluster_id": record["cluster_id"],
                "topic_id": record.get("topic_id"),
                "topic": names.get((record["cluster_id"], record.get("topic_id")), record.get("topic")),
                "partition": record.get("partition"),
                "metadata_offset": record.get("metadata_offset"),
                "commit_offset": record["commit_offset"],
                "event_id": record["event_id"],
                "event_time": record.get("event_time"),
                "leader": state.leader,
                "leader_epoch": state.leader_epoch,
                "partition_epoch": state.partition_epoch,
                "isr": state.isr,
            }
        )
    covered = covered_intervals(events)
    removed = topic_removals(events)
    for state, following in zip(out, out[1:] + [None], strict=False):
        same_partition = following is not None and _partition_key(state) == _partition_key(following)
        next_commit = following["commit_offset"] if same_partition else None
        # a removed topic's partitions hold no state from the removal's commit point on
        removal = removed.get((state["cluster_id"], state["topic_id"]))
        if removal is not None and removal >= state["commit_offset"]:
            next_commit = removal if next_commit is None else min(next_commit, removal)
        # ... and never past a hole in the dumped log (a change there may have replaced it)
        state["next_commit_offset"] = capped(next_commit, hole_after(covered, state["cluster_id"],
                                                                     state["commit_offset"]))
    return out
