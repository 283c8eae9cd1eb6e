"""Short runs keep one partition through joins and unions, so their plans need no shuffle.

A short run reads each input as one cached partition (``epoch_audit.stages.base.ShortRunInputs``):
one partition satisfies every distribution, so a window, an aggregate or a join over it should
need no exchange. Spark's planner (``EnsureRequirements``) takes that shortcut for a join only
when every side reports exactly ``SinglePartition`` and its estimated size is at most
``spark.sql.maxSinglePartitionBytes``. Two things broke it on every check: a join reports the
partitioning of both its sides (a ``PartitioningCollection``, not ``SinglePartition``) and a union
of n one-partition sides reports n partitions; so the next join shuffled both its sides into
``spark.sql.shuffle.partitions``, and every operator above did again. With adaptive execution each
shuffle stage is a job: the costliest check over data/samples ran 40 jobs for two seconds of task
time. And the estimated size of a join is the product of its sides' (no row counts without
statistics), far over the default 128 MiB after two joins of a few kilobytes.

:func:`install` makes the classic DataFrame's ``join``, ``union`` and ``unionByName`` end in
``coalesce(1)`` when the session is a short run (:data:`ONE_PARTITION_INPUTS`): a coalesce of one
partition into one moves nothing and reports ``SinglePartition``. Short runs also lift the size
limit (``epoch_audit.spark.SHORT_RUN_CONF``): a short run's data fit in one task by definition.
Over data/samples: 301 Spark jobs → 223 in the whole run, the costliest check 40 jobs → 2 (and
→ 211 with the broadcast hints a short run ignores, same place). Other sessions (a cluster, a long
run, Spark Connect's server) plan as Spark does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql.classic.dataframe import DataFrame as ClassicDataFrame

# Set in short runs: the timelines and check stages read their inputs as one partition each
# (epoch_audit.stages.base.ShortRunInputs), and joins and unions keep one (install below).
ONE_PARTITION_INPUTS = "spark.epoch_audit.onePartitionInputs"

_WRAPPED = "_epoch_audit_one_partition"


def is_one_partition_session(df: DataFrame) -> bool:
    """Whether ``df``'s session (classic or Connect) is a short run that keeps its data in one partition."""
    return df.sparkSession.conf.get(ONE_PARTITION_INPUTS, "false") == "true"


def _keeping_one_partition(method: Callable[..., ClassicDataFrame]) -> Callable[..., ClassicDataFrame]:
    @functools.wraps(method)
    def combined(self: ClassicDataFrame, *args: Any, **kwargs: Any) -> ClassicDataFrame:
        result = method(self, *args, **kwargs)
        return result.coalesce(1) if is_one_partition_session(self) else result

    setattr(combined, _WRAPPED, True)
    return combined


def install() -> None:
    """Wrap the classic DataFrame's ``join``, ``union`` and ``unionByName`` (once per process)."""
    for name in ("join", "union", "unionByName"):
        method = getattr(ClassicDataFrame, name)
        if not getattr(method, _WRAPPED, False):
            setattr(ClassicDataFrame, name, _keeping_one_partition(method))


def one_partition(df: DataFrame) -> DataFrame:
    """``df`` as one partition in a one-partition session, else unchanged: a small frame made on the
    driver (``createDataFrame`` reports no partitioning) or a staged Parquet read (one partition a
    file) that a join meets. Otherwise the join shuffles both its sides, and each shuffle stage is a
    job: the carry's write took 8 jobs and 4.5 s for 42,000 rows at night 16 of ``bench-nights``."""
    return df.coalesce(1) if is_one_partition_session(df) else df


def read_once(df: DataFrame) -> DataFrame:
    """``df`` computed once, for a plan that reads it several times (a check's shared subtree).

    A one-partition session has no exchange for the planner to reuse, so every reader recomputed
    the subtree and every DataFrame built on it re-analysed it (the ISR check read its joins 11
    times over data/samples). There it becomes a local checkpoint: one job now, and the plans above
    hold its rows instead of its subtree (one JVM: no executor to lose them with). Elsewhere ``df``
    unchanged: the readers share its exchanges, and a local checkpoint on a cluster dies with its
    executor.
    """
    return df.localCheckpoint() if is_one_partition_session(df) else df
