"""Bronze-shaped event and timeline builders for the C2 tests (views, leadership, offsets).

``H`` builds one history: ``h.ev(type, host, **cols)`` appends a bronze event with a deterministic
event_id, a per-host file and increasing line numbers; ``h.decision(...)`` appends a
partition_timeline row. ``to_frames`` turns any number of histories into one events DataFrame and
one timeline DataFrame (one Spark job for many histories).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from functools import partial
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from epoch_audit.contracts.events import EVENT_COLUMNS, EVENT_SCHEMA
from epoch_audit.contracts.silver import TIMELINE_SCHEMA
from epoch_audit.contracts.violations import CHECK_COLUMNS
from epoch_audit.gold.context import CheckConfig, CheckContext, check_context
from epoch_audit.gold.registry import SPECS, violations_of

T0 = dt.datetime(2024, 3, 5, 9, 0, 0)


def ts(ms: int) -> dt.datetime:
    """T0 + ms milliseconds."""
    return T0 + dt.timedelta(milliseconds=ms)


class H:
    """One cluster's history of bronze events and controller decisions."""

    def __init__(self, cluster_id: str = "c1") -> None:
        self.cluster_id = cluster_id
        self.events: list[dict[str, Any]] = []
        self.timeline: list[dict[str, Any]] = []
        self._lines: dict[str, int] = {}

    def ev(
        self,
        event_type: str,
        host: int,
        t: int | None = None,
        topic: str | None = "orders",
        partition: int | None = 0,
        file: str | None = None,
        **cols: Any,
    ) -> str:
        """Append an event on ``host`` at T0+t ms; returns its event_id."""
        log_kind = cols.pop("log_kind", None) or _kind(event_type)
        file = file or f"{log_kind}.log"
        src = f"cluster={self.cluster_id}/broker-{host}/{file}"
        n = self._lines.get(src, 0) + 1
        self._lines[src] = n
        eid = f"{self.cluster_id}:{host}:{file}:{n}"
        row: dict[str, Any] = {c: None for c in EVENT_COLUMNS}
        row.update(
            event_id=eid,
            event_type=event_type,
            cluster_id=self.cluster_id,
            host_id=host,
            broker_id=cols.pop("broker_id", host),
            topic=topic,
            partition=partition,
            event_time=ts(t) if t is not None else None,
            source_file=src,
            file_id=src,
            file_order=cols.pop("file_order", 0),
            line_number=n,
            sub_index=0,
            log_kind=log_kind,
            raw=cols.pop("raw", event_type),
        )
        for k, v in cols.items():
            if k not in row:
                raise KeyError(k)
            row[k] = v
        self.events.append(row)
        return eid

    def decision(
        self,
        leader: int,
        le: int,
        t: int,
        topic: str = "orders",
        partition: int = 0,
        is_leader_change: bool | None = None,
        source: str = "kraft",
        topic_id: str | None = None,
    ) -> str:
        """Append a controller decision (partition_timeline row); returns its event_id."""
        same = [d for d in self.timeline if d["topic"] == topic and d["partition"] == partition]
        seq = len(same) + 1
        if is_leader_change is None:
            is_leader_change = not same or same[-1]["leader"] != leader
        eid = f"{self.cluster_id}:ctl:{topic}-{partition}:{seq}"
        self.timeline.append(
            dict(
                cluster_id=self.cluster_id,
                topic=topic,
                partition=partition,
                decision_seq=seq,
                source=source,
                topic_id=topic_id,
                leader=leader,
                leader_epoch=le,
                partition_epoch=seq,
                isr=[leader] if leader >= 0 else [],
                replicas=[1, 2, 3],
                event_time=ts(t),
                metadata_offset=100 + seq,
                controller_id=3000,
                controller_epoch=1,
                event_id=eid,
                commit_offset=100 + seq,
                is_leader_change=is_leader_change,
            )
        )
        return eid


def _kind(event_type: str) -> str:
    if event_type.startswith("rp_"):
        return "redpanda"
    if event_type.startswith("request_"):
        return "request"
    if event_type == "data_batch":
        return "segment-dump"
    if event_type.startswith("checkpoint_leader_epoch"):
        return "leader-epoch-checkpoint"
    if event_type == "checkpoint_replication_offset":
        return "replication-offset-checkpoint"
    if event_type == "checkpoint_log_start_offset":
        return "log-start-offset-checkpoint"
    if event_type == "partition_metadata":
        return "partition-metadata"
    if event_type.startswith("md_"):
        return "metadata-dump"
    if event_type.startswith("log_"):
        return "server"
    return "state-change"


def registered(invariant_id: str) -> Callable[[CheckContext], DataFrame]:
    """The registry's check of ``invariant_id``, its severity applied (as the check stage runs it)."""
    return partial(violations_of, SPECS[invariant_id])


def to_frames(spark: SparkSession, histories: list[H]) -> tuple[DataFrame, DataFrame]:
    ev = [r for h in histories for r in h.events]
    tl = [r for h in histories for r in h.timeline]
    events = spark.createDataFrame([tuple(r[c] for c in EVENT_COLUMNS) for r in ev], EVENT_SCHEMA)
    # decisions carry no next_commit_offset (only the KRaft ISR checks read it): null
    timeline = spark.createDataFrame([tuple(r.get(f.name) for f in TIMELINE_SCHEMA.fields) for r in tl], TIMELINE_SCHEMA)
    return events, timeline


def run_check(spark: SparkSession, histories: list[H], check: Any, skew_ms: int = 1000) -> list[dict]:
    """Run a Spark check over the histories; rows as dicts (sorted for stable comparisons)."""
    events, timeline = to_frames(spark, histories)
    ctx = check_context(events, {"partition_timeline": timeline}, CheckConfig(max_clock_skew_ms=skew_ms))
    rows = [r.asDict() for r in check(ctx).collect()]
    for r in rows:
        assert list(r) == CHECK_COLUMNS
    return sorted(rows, key=row_key)


def row_key(r: dict) -> tuple:
    return tuple(str(r[c]) for c in CHECK_COLUMNS if c != "explanation")


def comparable(rows: list[dict]) -> list[tuple]:
    """Rows without the free-text explanation, for Spark vs model comparisons."""
    out = [tuple(tuple(r[c]) if c == "evidence" else r[c] for c in CHECK_COLUMNS if c != "explanation") for r in rows]
    return sorted(out, key=str)


def run_all(spark: SparkSession, histories: list[H], checks: list[Any], skew_ms: int = 1000) -> dict[str, list[dict]]:
    """Run several Spark checks over many histories at once; rows grouped by cluster_id."""
    events, timeline = to_frames(spark, histories)
    ctx = check_context(
        events.cache(), {"partition_timeline": timeline.cache()}, CheckConfig(max_clock_skew_ms=skew_ms)
    )
    df = checks[0](ctx)
    for c in checks[1:]:
        df = df.unionByName(c(ctx))
    out: dict[str, list[dict]] = {h.cluster_id: [] for h in histories}
    for r in df.collect():
        out.setdefault(r["cluster_id"], []).append(r.asDict())
    return out


def model_all(histories: list[H], models: list[Any], skew_ms: int = 1000) -> dict[str, list[dict]]:
    """The reference model over the same histories, grouped by cluster_id."""
    ev = [r for h in histories for r in h.events]
    tl = [r for h in histories for r in h.timeline]
    cfg = CheckConfig(max_clock_skew_ms=skew_ms)
    out: dict[str, list[dict]] = {h.cluster_id: [] for h in histories}
    for m in models:
        for r in m(ev, tl, cfg):
            out.setdefault(r["cluster_id"], []).append(r)
    return out
