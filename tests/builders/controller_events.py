"""A tiny builder of bronze-shaped events for the timeline / controller / ISR tests.

Rows are plain dicts with every bronze column (so the pure-Python reference model reads the
same history the Spark checks read). Line numbers increase per (cluster, host, log kind) file,
in the order events are built; ``t`` is seconds after a fixed base time.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from typing import Any

from epoch_audit.contracts.events import EVENT_COLUMNS, EVENT_SCHEMA

BASE = datetime(2024, 3, 5, 9, 0, 0)


class History:
    """Builds one cluster's events; ``rows`` is the bronze history."""

    _ids = itertools.count()

    def __init__(self, cluster_id: str = "c1") -> None:
        self.cluster_id = cluster_id
        self.rows: list[dict[str, Any]] = []
        self._lines: dict[tuple[int | None, str], int] = {}

    def ev(self, event_type: str, host: int | None = None, log_kind: str = "state-change",
           t: float | None = None, **fields: Any) -> dict[str, Any]:
        row: dict[str, Any] = dict.fromkeys(EVENT_COLUMNS)
        n = next(History._ids)
        key = (host, log_kind)
        self._lines[key] = self._lines.get(key, 0) + 1
        row.update(
            event_id=f"e{n:06d}",
            event_type=event_type,
            cluster_id=self.cluster_id,
            host_id=host,
            broker_id=host,
            file_id=f"{self.cluster_id}/{host}/{log_kind}",
            source_file=f"cluster={self.cluster_id}/broker-{host}/{log_kind}.log",
            file_order=0,
            line_number=self._lines[key],
            sub_index=0,
            log_kind=log_kind,
            event_time=None if t is None else BASE + timedelta(seconds=t),
        )
        row.update(fields)
        self.rows.append(row)
        return row

    # ---- KRaft metadata log (one dump, host 3000) -------------------------------------------
    def batch(self, base: int, last: int, t: float = 0.0, host: int = 3000) -> dict[str, Any]:
        return self.ev("md_batch", host, "metadata-dump", t, broker_id=None, offset=base, last_offset=last)

    def md(self, event_type: str, offset: int, t: float = 0.0, host: int = 3000, **f: Any) -> dict[str, Any]:
        f.setdefault("broker_id", None)
        return self.ev(event_type, host, "metadata-dump", t, metadata_offset=offset, **f)

    def topic(self, offset: int, name: str = "orders", topic_id: str = "T1", **kw: Any) -> dict[str, Any]:
        return self.md("md_topic", offset, topic=name, topic_id=topic_id, **kw)

    def partition(self, offset: int, partition: int = 0, leader: int = 1, le: int = 0, pe: int = 0,
                  isr: list[int] | None = None, replicas: list[int] | None = None,
                  topic_id: str = "T1", **kw: Any) -> dict[str, Any]:
        isr = [1, 2, 3] if isr is None else isr
        return self.md("md_partition", offset, topic_id=topic_id, partition=partition, leader=leader,
                       leader_epoch=le, partition_epoch=pe, isr=isr,
                       replicas=replicas if replicas is not None else sorted(set(isr) | {1, 2, 3}), **kw)

    def change(self, offset: int, partition: int = 0, leader: int | None = None,
               isr: list[int] | None = None, topic_id: str = "T1", **kw: Any) -> dict[str, Any]:
        return self.md("md_partition_change", offset, topic_id=topic_id, partition=partition,
                       leader=leader, isr=isr, **kw)

    def remove_topic(self, offset: int, topic_id: str = "T1", **kw: Any) -> dict[str, Any]:
        return self.md("md_remove_topic", offset, topic_id=topic_id, **kw)

    def register(self, offset: int, broker: int, be: int, fenced: bool | None = False,
                 ics: bool | None = None, **kw: Any) -> dict[str, Any]:
        return self.md("md_register_broker", offset, broker_id=broker, broker_epoch=be, fenced=fenced,
                       in_controlled_shutdown=ics, **kw)

    def reg_change(self, offset: int, broker: int, be: int, fenced: bool | None = None,
                   ics: bool | None = None, **kw: Any) -> dict[str, Any]:
        return self.md("md_broker_registration_change", offset, broker_id=broker, broker_epoch=be,
                       fenced=fenced, in_controlled_shutdown=ics, **kw)


def to_df(spark, rows: list[dict[str, Any]]):
    """Bronze DataFrame of the rows (exact EVENT_SCHEMA)."""
    return spark.createDataFrame([tuple(r[c] for c in EVENT_COLUMNS) for r in rows], EVENT_SCHEMA)
