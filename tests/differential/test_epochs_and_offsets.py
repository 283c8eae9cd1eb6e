"""Differential tests: Spark checks vs the reference model on generated histories.

Hypothesis draws batches of small random histories (each its own cluster_id) over a narrow value
domain so that regressions, equal-LE claims, moves, fences, clamps and divergences all occur; one
Spark run per example checks every C2 invariant on the whole batch, and the violation sets must be
identical to the model's (all columns but the free-text explanation).
"""

from __future__ import annotations

from epoch_audit_tools.reference_model import leadership as lmodel
from epoch_audit_tools.reference_model import offsets as omodel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.builders.epoch_events import H, comparable, model_all, registered, run_all
from tests.helpers import release_spark_memory

HOSTS = st.integers(1, 3)
LE = st.integers(0, 4)
T = st.integers(0, 6).map(lambda x: x * 700)
OFF = st.integers(0, 8).map(lambda x: x * 10)

EVENT = st.one_of(
    st.builds(
        lambda b, t, e, o, hw: ("become_leader", b, t, dict(leader_epoch=e, offset=o, high_watermark=hw)),
        HOSTS,
        T,
        LE,
        OFF,
        OFF,
    ),
    st.builds(lambda b, t, e, ldr: ("become_follower", b, t, dict(leader_epoch=e, leader=ldr)), HOSTS, T, LE, HOSTS),
    st.builds(lambda b, t, e: ("rp_becoming_leader", b, t, dict(leader_epoch=e)), HOSTS, T, LE),
    st.builds(
        lambda b, t, e, ldr: ("rp_leadership_notification", b, t, dict(leader=ldr, details={"term": str(e)})),
        HOSTS,
        T,
        LE,
        HOSTS,
    ),
    st.builds(
        lambda b, t, err, e: ("request_produce", b, t, dict(error=err, leader_epoch=e)),
        HOSTS,
        T,
        st.sampled_from(["NONE", "NOT_LEADER_OR_FOLLOWER"]),
        st.none() | LE,
    ),
    st.builds(
        lambda b, o, n, e: ("data_batch", b, 0, dict(offset=o, last_offset=o + n, leader_epoch=e)),
        HOSTS,
        OFF,
        st.integers(0, 9),
        LE,
    ),
    st.builds(lambda b, e, o: ("checkpoint_leader_epoch", b, None, dict(leader_epoch=e, offset=o)), HOSTS, LE, OFF),
    st.builds(lambda b, t, hw: ("checkpoint_replication_offset", b, t, dict(high_watermark=hw)), HOSTS, T, OFF),
    st.builds(lambda b, o: ("checkpoint_log_start_offset", b, None, dict(log_start_offset=o)), HOSTS, OFF),
    st.builds(lambda b, t: ("md_fence_broker", 9, t, dict(broker_id=b, topic=None, partition=None)), HOSTS, T),
)
DECISION = st.tuples(st.integers(-1, 3), LE, T)
HISTORY = st.tuples(st.lists(EVENT, max_size=14), st.lists(DECISION, max_size=4))


def build(i: int, spec) -> H:
    events, decisions = spec
    h = H(f"gen{i}")
    for et, host, t, cols in events:
        cols = dict(cols)
        if et == "checkpoint_replication_offset":
            cols["file"] = f"roc.{t}"
        h.ev(et, host, t, **cols)
    for leader, le, t in sorted(decisions, key=lambda d: d[2]):
        h.decision(leader, le, t)
    return h


CHECKS = [
    registered("leader_epoch_regression"),
    registered("two_leaders_same_epoch"),
    registered("write_accepted_by_fenced_leader"),
    registered("produce_epoch_mismatch_accepted"),
    registered("high_watermark_regression"),
    registered("epoch_start_offset_divergence"),
]


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(HISTORY, min_size=8, max_size=8))
def test_spark_matches_reference_model(spark, specs):
    hs = [build(i, s) for i, s in enumerate(specs)]
    try:
        got = run_all(spark, hs, CHECKS)
    finally:
        release_spark_memory(spark)  # each example's frames, caches and broadcasts go with it
    want = model_all(hs, [lmodel.check, omodel.check])
    for h in hs:
        assert comparable(got[h.cluster_id]) == comparable(want[h.cluster_id]), h.cluster_id
