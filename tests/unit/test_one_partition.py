"""In a short run, joins and unions over one-partition inputs plan no shuffle; elsewhere Spark's plan."""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import functions as F

from epoch_audit import one_partition
from tests.helpers import short_run_session


def _inputs(spark):
    """Two one-partition cached inputs, as ShortRunInputs holds them, read once: Spark knows their
    size (an unread in-memory DataFrame's is unknown, the largest a size can be; a Parquet table's
    is its files')."""
    brokers = spark.createDataFrame([(b, f"host-{b}") for b in range(6)], "broker int, host string")
    epochs = spark.createDataFrame([(b % 6, e) for b in range(40) for e in range(3)], "broker int, epoch int")
    held = [df.coalesce(1).persist(StorageLevel.MEMORY_AND_DISK) for df in (brokers, epochs)]
    for df in held:
        df.count()
    return held


def _checks_like(brokers, epochs):
    """A join, a union over it, a join of that with an input, and an aggregate: a check's shape."""
    joined = epochs.join(brokers, "broker")
    both = joined.unionByName(joined.withColumn("epoch", F.col("epoch") + 10))
    again = both.join(brokers.withColumnRenamed("host", "h2"), "broker")
    return again.groupBy("broker").agg(F.count("*").alias("n"), F.max("epoch").alias("top"))


def _shuffles(df) -> int:
    return df._jdf.queryExecution().executedPlan().toString().count("Exchange")


def test_short_run_plans_no_shuffle_and_the_answer_is_unchanged(spark):
    brokers, epochs = _inputs(spark)
    try:
        with short_run_session(spark, True):
            short = _checks_like(brokers, epochs)
            assert _shuffles(short) == 0
            short_rows = sorted(short.collect())
        with short_run_session(spark, False):
            plain = _checks_like(brokers, epochs)
            assert _shuffles(plain) > 0  # Spark's own plan: the join's sides and the union shuffled
            plain_rows = sorted(plain.collect())
        assert short_rows == plain_rows
        assert short_rows[0]["n"] == 2 * 7 * 3 and short_rows[0]["top"] == 12
    finally:
        brokers.unpersist()
        epochs.unpersist()


def test_install_wraps_once(spark):
    from pyspark.sql.classic.dataframe import DataFrame

    join = DataFrame.join
    one_partition.install()
    assert DataFrame.join is join
    assert getattr(join, "_epoch_audit_one_partition", False)


def test_read_once_checkpoints_only_in_a_short_run(spark):
    """A short run gets the frame's rows in place of its subtree (a local checkpoint: the window is
    gone from the plan above it); elsewhere the frame itself. The rows are the same either way."""
    from pyspark.sql import Window

    from epoch_audit.one_partition import read_once

    brokers, epochs = _inputs(spark)
    ranked = epochs.withColumn("rank", F.row_number().over(Window.partitionBy("broker").orderBy("epoch")))
    expected = sorted(ranked.collect())
    for on in (True, False):
        with short_run_session(spark, on):
            once = read_once(ranked)
            plan = once.join(brokers, "broker")._jdf.queryExecution().optimizedPlan().toString()
            assert ("Window" in plan) is not on
            assert (once is ranked) is not on
            assert sorted(once.collect()) == expected


def test_shared_analysis_persisted_in_a_long_run_only_when_several_queries_read_it(spark):
    """``CheckContext.shared`` in a long run: an analysis two checks read (or a check and this run's
    carry) is persisted once and dropped by ``release``; one only one query reads stays the plain
    frame; a short run checkpoints either. The rows are the same every way."""
    from pyspark.sql import Window

    from epoch_audit.gold.context import check_context
    from epoch_audit.silver.tables import SILVER_TABLES

    brokers, epochs = _inputs(spark)
    silver = dict.fromkeys(SILVER_TABLES, brokers)

    def ranked(ctx):
        return ctx.events.withColumn("rank", F.row_number().over(Window.partitionBy("broker").orderBy("epoch")))

    expected = sorted(ranked(check_context(epochs, silver)).collect())
    with short_run_session(spark, False):
        for checks, horizons, persisted in ((2, None, True), (1, {"c": 1}, True), (1, None, False)):
            ctx = check_context(epochs, silver, carry_horizons=horizons)
            kept = ctx.shared(ranked, checks=checks)
            assert ctx.shared(ranked, checks=checks) is kept
            assert kept.storageLevel.useMemory is persisted
            assert sorted(kept.collect()) == expected
            ctx.release()
            assert not kept.storageLevel.useMemory
    with short_run_session(spark, True):
        kept = check_context(epochs, silver).shared(ranked)
        assert "Window" not in kept._jdf.queryExecution().optimizedPlan().toString()
        assert sorted(kept.collect()) == expected


def test_the_broker_views_a_context_builds_are_cached_until_it_is_released(spark):
    from epoch_audit.contracts.events import EVENT_SCHEMA
    from epoch_audit.gold.context import TIMELINE_TABLES, check_context
    from epoch_audit.silver.tables import SILVER_TABLES

    ctx = check_context(spark.createDataFrame([], EVENT_SCHEMA))
    views = [ctx.silver[name] for name in SILVER_TABLES if name not in TIMELINE_TABLES]
    assert views and all(view.storageLevel.useMemory for view in views)
    assert not any(ctx.silver[name].storageLevel.useMemory for name in TIMELINE_TABLES)
    ctx.release()
    assert not any(view.storageLevel.useMemory for view in views)
