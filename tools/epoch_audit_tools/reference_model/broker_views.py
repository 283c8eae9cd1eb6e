"""Pure-Python twin of ``epoch_audit.silver.broker_views``: the broker-held series, replicated offsets and
data-batch runs, replayed with explicit state over a list of bronze-shaped dicts.

Same rules as the Spark builders (see their docstrings); the differential tests require both to
yield identical violations.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from epoch_audit.silver.broker_leader_epochs import (
    ACK_TYPES,
    CLAIM_TYPES,
    HELD_TYPES,
    RP_NOT_HELD_TYPES,
    RP_VOTE_REQUEST,
    SERIES_BREAK_TYPES,
)
from epoch_audit.silver.replica_offsets import TOPIC_ID_TYPES

Row = dict[str, Any]


def g(e: Row, k: str) -> Any:
    return e.get(k)


def nf(v: Any) -> tuple[bool, Any]:
    """Sort key part: nulls first (Spark's ascending default)."""
    return (v is not None, v if v is not None else 0)


def nl(v: Any) -> tuple[bool, Any]:
    """Sort key part: nulls last."""
    return (v is None, v if v is not None else 0)


def rp_term(e: Row) -> Any:
    t = (e.get("details") or {}).get("term")
    try:
        return int(t) if t is not None else None
    except ValueError:
        return None


def is_ok(error: Any) -> bool:
    return error is not None and str(error).strip().upper() in ("NONE", "0")


def add_own_order(rows: list[Row]) -> None:
    """Set ``ots`` = running max of event_time along each file's line order (host clock, but line
    order wins inside a file: Redpanda multi-shard files are not time-monotonic)."""
    by_file: dict[Any, list[Row]] = defaultdict(list)
    for r in rows:
        by_file[r.get("file_id")].append(r)
    for rs in by_file.values():
        rs.sort(key=lambda r: (nf(r.get("line_number")), nf(r.get("sub_index"))))
        cur = None
        for r in rs:
            t = r.get("event_time")
            if t is not None and (cur is None or t > cur):
                cur = t
            r["ots"] = cur


def own_key(r: Row) -> tuple:
    return tuple(nf(r.get(c)) for c in ("ots", "file_order", "file_id", "line_number", "sub_index"))


def copy_key(r: Row) -> tuple:
    return (
        nl(r.get("event_time")),
        nf(r.get("file_order")),
        nf(r.get("source_file")),
        nf(r.get("line_number")),
        nf(r.get("sub_index")),
    )


def broker_leader_epochs(events: Iterable[Row]) -> list[Row]:
    """Per (cluster, broker, topic, partition) the held LE series with breaks, gen, tid and seq."""
    rows: list[Row] = []
    for e in events:
        et = e.get("event_type")
        if e.get("topic") is None or e.get("partition") is None:
            continue
        prevote = str((e.get("details") or {}).get("prevote")).lower() == "true"
        rp_held = et.startswith("rp_") and et not in RP_NOT_HELD_TYPES and not prevote
        if et in HELD_TYPES or rp_held:
            if et == "request_leader_and_isr" and not is_ok(e.get("error")):
                continue
            le = e.get("current_leader_epoch") if et == RP_VOTE_REQUEST else e.get("leader_epoch")
            if le is None or le < 0:
                continue
            kind = "epoch"
        elif et in ACK_TYPES:
            le = e.get("leader_epoch") if e.get("leader_epoch") is not None else rp_term(e)
            if e.get("leader") is None or le is None:
                continue
            kind = "ack"
        elif et in SERIES_BREAK_TYPES:
            le, kind = None, "series_break"
        else:
            continue
        r = dict(e)
        r.update(
            leader_epoch=le,
            row_kind=kind,
            broker_id=e.get("broker_id") if e.get("broker_id") is not None else e.get("host_id"),
            is_claim=kind == "epoch" and et in CLAIM_TYPES,
            system="redpanda" if et.startswith("rp_") else "kafka",
        )
        rows.append(r)
    add_own_order(rows)
    series: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:
        series[(r["cluster_id"], r["broker_id"], r["topic"], r["partition"])].append(r)
    for rs in series.values():
        rs.sort(key=own_key)
        gen, tid = 0, None
        for i, r in enumerate(rs, 1):
            r["seq"] = i
            if r["row_kind"] == "series_break":
                gen += 1
                tid = None
            if r.get("topic_id") is not None:
                tid = r["topic_id"]
            r["gen"], r["tid"] = gen, tid
    return rows


def produce_runs(events: Iterable[Row]) -> list[Row]:
    """Dump batches compacted to runs of consecutive same-epoch batches in offset order."""
    parts: dict[tuple, list[Row]] = defaultdict(list)
    for e in events:
        if e.get("event_type") != "data_batch":
            continue
        if e.get("offset") is None or e.get("leader_epoch") is None:
            continue
        if e.get("topic") is None or e.get("partition") is None:
            continue
        b = e.get("host_id") if e.get("host_id") is not None else e.get("broker_id")
        lo = e.get("last_offset") if e.get("last_offset") is not None else e["offset"]
        parts[(e.get("cluster_id"), b, e["topic"], e["partition"])].append(dict(e, last_offset=lo))
    runs: list[Row] = []
    for (c, b, t, p), bs in parts.items():
        bs.sort(key=lambda x: (x["offset"], x["last_offset"], x["event_id"]))
        cur: Row | None = None
        prev_epoch = None
        run_no = 0
        for x in bs:
            if cur is None or x["leader_epoch"] != cur["leader_epoch"]:
                if cur is not None:
                    prev_epoch = cur["leader_epoch"]
                run_no += 1
                cur = dict(
                    cluster_id=c,
                    broker_id=b,
                    topic=t,
                    partition=p,
                    run_no=run_no,
                    leader_epoch=x["leader_epoch"],
                    prev_run_epoch=prev_epoch,
                    first_offset=x["offset"],
                    last_offset=x["last_offset"],
                    last_base_offset=x["offset"],
                    batch_count=0,
                    first_event_id=x["event_id"],
                    last_event_id=x["event_id"],
                    first_time=x.get("event_time"),
                    last_time=x.get("event_time"),
                )
                runs.append(cur)
            cur["batch_count"] += 1
            cur["last_offset"] = max(cur["last_offset"], x["last_offset"])
            cur["last_base_offset"] = x["offset"]
            cur["last_event_id"] = x["event_id"]
            t_ = x.get("event_time")
            if t_ is not None:
                cur["first_time"] = t_ if cur["first_time"] is None else min(cur["first_time"], t_)
                cur["last_time"] = t_ if cur["last_time"] is None else max(cur["last_time"], t_)
    return runs


def _tid_sources(events: Iterable[Row]) -> dict[tuple, list[tuple]]:
    src: dict[tuple, list[tuple]] = defaultdict(list)
    for e in events:
        if e.get("event_type") in TOPIC_ID_TYPES and e.get("topic_id") is not None:
            k = (e.get("cluster_id"), e.get("host_id"), e.get("topic"), e.get("partition"))
            src[k].append((nl(e.get("event_time")), e["topic_id"]))
    for v in src.values():
        v.sort(key=lambda x: x[0])
    return src


def replica_offsets(events: list[Row]) -> list[Row]:
    """The replica offset series (see ``epoch_audit.silver.broker_views.replica_offsets``)."""
    rows: list[Row] = []

    def own(e: Row) -> Any:
        return e.get("broker_id") if e.get("broker_id") is not None else e.get("host_id")

    def host(e: Row) -> Any:
        return e.get("host_id") if e.get("host_id") is not None else e.get("broker_id")

    def add(e: Row, series: str, broker: Any, le: Any, value: Any) -> None:
        if value is None:
            return
        rows.append(
            dict(
                cluster_id=e.get("cluster_id"),
                broker_id=broker,
                host_id=e.get("host_id"),
                topic=e["topic"],
                partition=e["partition"],
                series=series,
                leader_epoch=le,
                value=value,
                topic_id=e.get("topic_id"),
                event_type=e.get("event_type"),
                event_id=e.get("event_id"),
                event_time=e.get("event_time"),
                file_id=e.get("file_id"),
                file_order=e.get("file_order"),
                source_file=e.get("source_file"),
                line_number=e.get("line_number"),
                sub_index=e.get("sub_index"),
                series_seq=None,
            )
        )

    def first(*vals: Any) -> Any:
        return next((v for v in vals if v is not None), None)

    for e in events:
        et = e.get("event_type")
        if e.get("topic") is None or e.get("partition") is None:
            continue
        if et == "become_leader":
            add(e, "epoch_start_line", own(e), e.get("leader_epoch"), e.get("offset"))
            add(e, "hw_leader_line", own(e), e.get("leader_epoch"), e.get("high_watermark"))
        elif et == "checkpoint_leader_epoch" and e.get("leader_epoch") is not None:
            add(e, "epoch_start_checkpoint", host(e), e.get("leader_epoch"), e.get("offset"))
        elif et == "checkpoint_replication_offset":
            add(e, "hw_checkpoint", host(e), None, first(e.get("high_watermark"), e.get("offset")))
        elif et == "checkpoint_log_start_offset":
            add(e, "log_start", host(e), None, first(e.get("log_start_offset"), e.get("offset")))
        elif et == "log_start_offset_incremented":
            add(e, "log_start", own(e), None, first(e.get("log_start_offset"), e.get("offset")))

    line_rows = [r for r in rows if r["series"] in ("epoch_start_line", "hw_leader_line")]
    add_own_order(line_rows)
    groups: dict[tuple, list[Row]] = defaultdict(list)
    for r in rows:
        groups[(r["cluster_id"], r["broker_id"], r["topic"], r["partition"], r["series"])].append(r)
    for k, rs in groups.items():
        if k[4] in ("epoch_start_line", "hw_leader_line"):
            rs.sort(key=own_key)
        elif k[4] in ("epoch_start_checkpoint", "hw_checkpoint"):
            rs.sort(key=copy_key)
        else:
            continue
        for i, r in enumerate(rs, 1):
            r["series_seq"] = i

    # First batch of each epoch in a host's dumps, where the boundary is visible.
    firsts: dict[tuple, Row] = {}
    for run in produce_runs(events):
        k = (run["cluster_id"], run["broker_id"], run["topic"], run["partition"], run["leader_epoch"])
        if k not in firsts or (run["first_offset"], run["run_no"]) < (
            firsts[k]["first_offset"],
            firsts[k]["run_no"],
        ):
            firsts[k] = run
    for run in firsts.values():
        if run["prev_run_epoch"] is None or not run["prev_run_epoch"] < run["leader_epoch"]:
            continue
        rows.append(
            dict(
                cluster_id=run["cluster_id"],
                broker_id=run["broker_id"],
                host_id=run["broker_id"],
                topic=run["topic"],
                partition=run["partition"],
                series="epoch_start_dump",
                leader_epoch=run["leader_epoch"],
                value=run["first_offset"],
                topic_id=None,
                event_type="data_batch",
                event_id=run["first_event_id"],
                event_time=run["first_time"],
                file_id=None,
                file_order=None,
                source_file=None,
                line_number=None,
                sub_index=None,
                series_seq=None,
            )
        )

    src = _tid_sources(events)
    for r in rows:
        tid = r.get("topic_id")
        if tid is None:
            k = (r["cluster_id"], r["host_id"], r["topic"], r["partition"])
            rk = nl(r.get("event_time"))
            for t_key, t_id in src.get(k, []):
                if t_key <= rk:
                    tid = t_id
        r["tid"] = tid

    # Latest leader-epoch-checkpoint copy and its earliest entry.
    latest: dict[tuple, tuple] = {}
    for r in rows:
        if r["series"] != "epoch_start_checkpoint":
            continue
        k = (r["cluster_id"], r["broker_id"], r["topic"], r["partition"])
        ck = (
            r.get("event_time") is None,
            nf(r.get("event_time")),
            nf(r.get("file_order")),
            nf(r.get("source_file")),
        )
        if k not in latest or ck > latest[k]:
            latest[k] = ck
    min_epoch: dict[tuple, int] = {}
    for r in rows:
        r["is_latest_copy"] = False
        r["is_earliest_entry"] = False
        if r["series"] != "epoch_start_checkpoint":
            continue
        k = (r["cluster_id"], r["broker_id"], r["topic"], r["partition"])
        ck = (
            r.get("event_time") is None,
            nf(r.get("event_time")),
            nf(r.get("file_order")),
            nf(r.get("source_file")),
        )
        r["is_latest_copy"] = ck == latest[k]
        if r["is_latest_copy"]:
            kf = k + (r.get("source_file"),)
            min_epoch[kf] = min(min_epoch.get(kf, r["leader_epoch"]), r["leader_epoch"])
    for r in rows:
        if r["is_latest_copy"]:
            kf = (r["cluster_id"], r["broker_id"], r["topic"], r["partition"], r.get("source_file"))
            r["is_earliest_entry"] = r["leader_epoch"] == min_epoch[kf]
    return rows
