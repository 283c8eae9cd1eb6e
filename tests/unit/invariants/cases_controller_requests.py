"""stale_stop_replica_accepted and stale_controller_epoch_accepted: every rule and must-NOT-flag case.

Each scenario is one cluster of one bronze DataFrame; both checks run once over all of them, and
every scenario's Spark result must equal the reference model's.
"""

from __future__ import annotations

from epoch_audit_tools.reference_model import stop_replica as model
from epoch_audit_tools.reference_model.model import key_of

from epoch_audit.contracts.violations import CHECK_COLUMNS
from epoch_audit.gold.context import CheckConfig, check_context
from epoch_audit.gold.registry import SPECS, violations_of
from tests.builders.controller_events import History, to_df
from tests.builders.silver import TIMELINE_TABLES as SILVER_BUILDERS

B = 2  # the broker under test


def become(h: History, t: float, le: int, kind: str = "become_follower", tp=("orders", 3)):
    return h.ev(kind, B, t=t, topic=tp[0], partition=tp[1], leader_epoch=le)


def stop(h: History, t: float, le: int, corr: int = 57, ce: int = 7, delete: bool = False, removed: bool = True,
         tp=("orders", 3)):
    """TRACE Received StopReplica (+ the Removed fetcher line that proves the stop)."""
    s = h.ev("stop_replica_received", B, t=t, topic=tp[0], partition=tp[1], leader_epoch=le, delete_partition=delete,
             correlation_id=corr, controller_id=1, controller_epoch=ce)
    if removed:
        h.ev("fetcher_removed", B, "server", t=t + 0.01, topic=tp[0], partition=tp[1])
    return s


def lair(h: History, t: float, le: int, ce: int, corr: int, state_ce: int | None = None, ctrl: int = 1):
    """TRACE Received LeaderAndIsr + the Follower start line that applies it."""
    r = h.ev("leader_and_isr_received", B, t=t, topic="orders", partition=3, leader_epoch=le, leader=1,
             controller_id=ctrl, controller_epoch=ce, state_controller_epoch=state_ce or ce, correlation_id=corr)
    become(h, t + 0.01, le)
    return r


SCENARIOS: dict[str, History] = {}


def scenario(fn):
    h = History(fn.__name__)
    fn(h)
    SCENARIOS[fn.__name__] = h
    return fn


@scenario
def stale_trace(h):
    become(h, 1, 5)
    stop(h, 2, 4)


@scenario
def refused_by_warn_line(h):
    become(h, 1, 5)
    stop(h, 2, 4, removed=False)
    h.ev("stop_replica_fenced", B, t=2.001, topic="orders", partition=3, leader_epoch=4, current_leader_epoch=5,
         correlation_id=57, controller_id=1, controller_epoch=7)


@scenario
def sentinel_minus_two(h):
    become(h, 1, 5)
    stop(h, 2, -2, delete=True)


@scenario
def sentinel_minus_one(h):
    become(h, 1, 5)
    stop(h, 2, -1)


@scenario
def equal_epoch(h):
    become(h, 1, 5)
    stop(h, 2, 5)


@scenario
def higher_epoch(h):
    become(h, 1, 5)
    stop(h, 2, 6)


@scenario
def request_log_accepted(h):
    h.ev("request_leader_and_isr", B, "request", t=1, topic="orders", partition=3, leader_epoch=6, error="NONE",
         controller_id=1, controller_epoch=7, correlation_id=50)
    h.ev("request_stop_replica", B, "request", t=2, topic="orders", partition=3, leader_epoch=5, error="NONE",
         controller_id=1, controller_epoch=7, correlation_id=51)


@scenario
def request_log_refusal_vetoes_trace(h):
    become(h, 1, 5)
    stop(h, 2, 4)
    h.ev("request_stop_replica", B, "request", t=2.5, topic="orders", partition=3, leader_epoch=4,
         error="FENCED_LEADER_EPOCH", controller_id=1, controller_epoch=7, correlation_id=57)


@scenario
def trace_and_request_log_one_row(h):
    become(h, 1, 5)
    stop(h, 2, 4)
    h.ev("request_stop_replica", B, "request", t=2.5, topic="orders", partition=3, leader_epoch=4, error="NONE",
         controller_id=1, controller_epoch=7, correlation_id=57)


@scenario
def no_stop_evidence(h):
    become(h, 1, 5)
    stop(h, 2, 4, removed=False)


@scenario
def no_current_epoch(h):
    stop(h, 2, 4)


@scenario
def other_partition_epoch(h):
    become(h, 1, 9, tp=("orders", 4))
    stop(h, 2, 4)


@scenario
def deleted_replica_has_no_epoch(h):
    become(h, 1, 5)
    stop(h, 2, 5, corr=60, delete=True)
    stop(h, 3, 3, corr=61, delete=True)  # re-sent after deletion: the broker hosts nothing


@scenario
def stale_controller_epoch_lair(h):
    h.ev("update_metadata_applied", B, t=1, controller_id=3, controller_epoch=9, correlation_id=1)
    lair(h, 2, le=6, ce=8, corr=12, ctrl=2)


@scenario
def partition_state_ce_is_not_request_ce(h):
    h.ev("update_metadata_applied", B, t=1, controller_id=3, controller_epoch=9, correlation_id=1)
    lair(h, 2, le=6, ce=9, corr=2, state_ce=8, ctrl=3)


@scenario
def stale_controller_refused(h):
    h.ev("update_metadata_applied", B, t=1, controller_id=3, controller_epoch=9, correlation_id=1)
    h.ev("leader_and_isr_received", B, t=2, topic="orders", partition=3, leader_epoch=6, controller_id=2,
         controller_epoch=8, state_controller_epoch=8, correlation_id=12)
    h.ev("leader_and_isr_stale_controller", B, t=2.01, controller_id=2, controller_epoch=8, correlation_id=12,
         known_controller_epoch=9)


@scenario
def stale_controller_epoch_stop(h):
    lair(h, 1, le=4, ce=9, corr=3, ctrl=3)
    stop(h, 2, 5, ce=7, corr=4)


@scenario
def equal_controller_epoch(h):
    h.ev("update_metadata_applied", B, t=1, controller_id=3, controller_epoch=9, correlation_id=1)
    lair(h, 2, le=6, ce=9, corr=2, ctrl=3)


@scenario
def known_epoch_from_info_lines(h):
    # INFO-only logs: the L11 "Stopped fetchers ... from controller 3 epoch 9" line shows the broker
    # processed a CE 9 request; a later StopReplica of CE 8 it accepts is stale.
    h.ev("leader_and_isr_fetchers_stopped", B, t=1, controller_id=3, controller_epoch=9, correlation_id=1)
    stop(h, 2, 5, ce=8, corr=2)


@scenario
def stale_broker_epoch_request_not_processed(h):
    # A LeaderAndIsr the broker refused whole (STALE_BROKER_EPOCH: addressed to its previous
    # incarnation) was never processed: its controller epoch 9 is not the broker's known epoch.
    h.ev("request_leader_and_isr", B, "request", t=1, topic="orders", partition=3, leader_epoch=6,
         controller_id=3, controller_epoch=9, correlation_id=1, error="STALE_BROKER_EPOCH")
    stop(h, 2, 5, ce=8, corr=2)


def family_results(spark):
    rows = [r for h in SCENARIOS.values() for r in h.rows]
    events = to_df(spark, rows)
    config = CheckConfig()
    # materialised, as the pipeline reads silver from its tables: lazily built silver subtrees
    # repeated inside every check made plans of tens of thousands of nodes
    ctx = check_context(events, {name: fn(events, config).localCheckpoint() for name, fn in SILVER_BUILDERS.items()})
    out = violations_of(SPECS["stale_stop_replica_accepted"], ctx).unionByName(
        violations_of(SPECS["stale_controller_epoch_accepted"], ctx)
    )
    assert out.columns == CHECK_COLUMNS
    spark_rows = [r.asDict() for r in out.collect()]
    return spark_rows, model.check(rows)


def _of(results, cluster):
    spark_rows, model_rows = results
    s = [r for r in spark_rows if r["cluster_id"] == cluster]
    m = [r for r in model_rows if r["cluster_id"] == cluster]
    assert sorted(map(key_of, s)) == sorted(map(key_of, m)), "Spark and the reference model disagree"
    assert sorted(tuple(r["evidence"]) for r in s) == sorted(tuple(r["evidence"]) for r in m)
    return s


def _ids(cluster, *types):
    return [r["event_id"] for r in SCENARIOS[cluster].rows if r["event_type"] in types]


