"""Is one cluster id one cluster? Input problems that make a cluster's violations doubtful.

A collection agent that writes two clusters' logs under one ``cluster=<id>`` folder (a copied
path, a shared default cluster id) makes the checks compare brokers that never shared a
controller: hundreds of violations that say nothing about either cluster. Two signs are read
from the cluster's bronze events, in one aggregation:

- **mixed modes**: the logs of a ZooKeeper-mode controller (its partition state machine, the
  LeaderAndIsr / UpdateMetadata requests brokers handle), of a KRaft quorum (metadata-log
  records, the quorum controller's partition changes) and of Redpanda (Raft terms) under one id.
  Redpanda beside Kafka is never one cluster. ZooKeeper beside KRaft is one cluster during a
  ZooKeeper-to-KRaft migration (KIP-866), so it is a problem only where nothing shows one: a
  ``ZkMigrationStateRecord`` past NONE, a broker registered as a migrating ZooKeeper broker, or a
  request a KRaft controller sent (``isKRaftController``).
- **conflicting identities**: a host whose own lines (``[Broker id=N]``, ``[Partition t-p
  broker=N]``) speak as another broker: the folder ``broker-1`` holds broker 4's logs.

Detection only: the checks still run and their violations stay in gold; the run summary and the
report name the problem and mark that cluster's violations as doubtful.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

# Only a ZooKeeper-mode controller logs these, or a broker that a ZooKeeper-mode (or migrating
# KRaft) controller sends LeaderAndIsr / UpdateMetadata to.
ZOOKEEPER_EVENT_TYPES = (
    "controller_partition_state_change",
    "controller_isr_change",
    "controller_send_leader_and_isr",
    "controller_send_stop_replica",
    "controller_send_update_metadata",
    "controller_reassignment_send",
    "leader_and_isr_received",
    "update_metadata_applied",
)
# Only a KRaft quorum writes these (besides every metadata-log record, md_*).
KRAFT_EVENT_TYPES = ("controller_partition_diff", "controller_fencing_broker", "raft_state_transition")
# Lines whose broker id is the logging broker's own (the line's prefix names it), never another's.
SELF_NAMING_EVENT_TYPES = (
    "become_leader",
    "become_follower",
    "isr_shrink",
    "isr_expand",
    "leader_and_isr_received",
    "stop_replica_received",
)

MODE_NAMES = {"zookeeper": "ZooKeeper-mode controller logs", "kraft": "KRaft metadata logs",
              "redpanda": "Redpanda logs"}


@dataclass(frozen=True)
class InputProblem:
    """One reason to doubt that a cluster id's input is one cluster."""

    cluster_id: str
    problem: str  # mixed_modes | conflicting_identity
    detail: str
    hosts: list[int]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _flag(condition: Column, name: str) -> Column:
    """Whether any row meets ``condition`` (a null condition is not met)."""
    return F.max(F.coalesce(condition, F.lit(False))).alias(name)


def host_signs(events: DataFrame, by: tuple[Column, ...] = ()) -> DataFrame:
    """Per (cluster_id, host_id, ``by``): which modes its events show, whether any shows a
    migration, and the other broker ids its self-naming lines speak as. Every sign is a flag some
    row sets or a set of ids, so the signs of a union of rows are the merge of each part's
    (:func:`merged_signs`): a nightly run keeps them per bronze partition (epoch_audit.stages.input_signs)."""
    et = F.col("event_type")
    # Only the metadata log's records and the requests a KRaft controller sent show a migration: the
    # details map is looked into for those rows alone (the segment dumps' millions of batches are
    # most of the state events, and a map lookup reads the row's every key).
    migrating = (et.startswith("md_") | (F.col("log_kind") == "request")) & (
        (F.col("details")["is_migrating_zk_broker"] == "true")
        | (F.col("details")["is_kraft_controller"] == "true")
        | ((F.col("record_type") == "ZkMigrationStateRecord")
           & ~F.coalesce(F.col("details")["data"], F.lit("")).rlike(r'"zkMigrationState"\s*:\s*0\b'))
    )
    other_self = F.when(
        et.isin(*SELF_NAMING_EVENT_TYPES) & F.col("host_id").isNotNull() & (F.col("broker_id") != F.col("host_id")),
        F.col("broker_id"),
    )
    # Flags (fixed-width: a hash aggregate) per other id first, then the ids collected over those
    # few rows: a set aggregated over every event took the object aggregate's slow path for all.
    per_other = events.groupBy("cluster_id", "host_id", *by, other_self.alias("_other")).agg(
        _flag(et.isin(*ZOOKEEPER_EVENT_TYPES), "zookeeper"),
        _flag(et.startswith("md_") | et.isin(*KRAFT_EVENT_TYPES), "kraft"),
        _flag(et.startswith("rp_") | (F.col("log_kind") == "redpanda"), "redpanda"),
        _flag(migrating, "migrating"),
    )
    keys = per_other.columns[: 2 + len(by)]
    return per_other.groupBy(*keys).agg(
        *[F.max(flag).alias(flag) for flag in SIGN_FLAGS],
        F.array_sort(F.collect_set("_other")).alias("speaks_as"),
    )


SIGN_FLAGS = ("zookeeper", "kraft", "redpanda", "migrating")


def merged_signs(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (cluster_id, host_id) from :func:`host_signs` rows of parts of the events: a flag
    any part sets, the union of the ids spoken as (sorted)."""
    merged: dict[tuple, dict[str, Any]] = {}
    for row in parts:
        key = (row["cluster_id"], row["host_id"])
        into = merged.setdefault(key, {"cluster_id": key[0], "host_id": key[1], **dict.fromkeys(SIGN_FLAGS, False),
                                       "speaks_as": []})
        for flag in SIGN_FLAGS:
            into[flag] = bool(into[flag] or row[flag])
        into["speaks_as"] = sorted(set(into["speaks_as"]) | set(row["speaks_as"] or []))
    return list(merged.values())


def _hosts_text(hosts: list[int]) -> str:
    return "hosts " + ", ".join(map(str, hosts)) if hosts else "no host folder"


def problems_of(signs: list[dict[str, Any]]) -> list[InputProblem]:
    """The input problems of every cluster, from :func:`host_signs`'s rows (pure: tested alone)."""
    by_cluster: dict[str, list[dict[str, Any]]] = {}
    for row in signs:
        if row["cluster_id"] is not None:
            by_cluster.setdefault(row["cluster_id"], []).append(row)
    problems: list[InputProblem] = []
    for cluster in sorted(by_cluster):
        rows = by_cluster[cluster]
        modes = {m: sorted(r["host_id"] for r in rows if r[m] and r["host_id"] is not None)
                 for m in MODE_NAMES if any(r[m] for r in rows)}
        migrating = any(r["migrating"] for r in rows)
        if len(modes) > 1 and not (set(modes) == {"zookeeper", "kraft"} and migrating):
            parts = [f"{MODE_NAMES[m]} ({_hosts_text(h)})" for m, h in modes.items()]
            detail = (f"{' and '.join(parts)} under one cluster id: more than one cluster's logs, "
                      "so its violations are doubtful")
            if set(modes) == {"zookeeper", "kraft"}:
                detail += " (no ZooKeeper-to-KRaft migration shows in the logs)"
            hosts = sorted({h for hs in modes.values() for h in hs})
            problems.append(InputProblem(cluster, "mixed_modes", detail, hosts))
        for r in sorted((r for r in rows if r["speaks_as"]), key=lambda r: r["host_id"]):
            ids = ", ".join(map(str, r["speaks_as"]))
            problems.append(InputProblem(
                cluster, "conflicting_identity",
                f"host {r['host_id']}'s logs speak as broker {ids}: its folder holds another broker's logs, "
                "so its cluster's violations are doubtful",
                [r["host_id"]],
            ))
    return problems


INPUT_PROBLEMS_SCHEMA = "cluster_id string, problem string, detail string, hosts array<int>, run_id string"


def input_problems(events: DataFrame) -> list[InputProblem]:
    """Every input problem of the clusters in ``events`` (one aggregation, a row per host)."""
    return problems_of([r.asDict() for r in host_signs(events).collect()])
