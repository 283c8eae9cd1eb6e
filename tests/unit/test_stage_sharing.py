"""A short run's state events, read and cached by the timelines stage, are the check stage's: read once."""

from __future__ import annotations

from epoch_audit.stages import base
from epoch_audit.stages.base import ShortRunInputs, shared_key, stage_sharing
from tests.helpers import short_run_session


class _Reads:
    """A frame's read, counted."""

    def __init__(self, spark, rows: int) -> None:
        self.spark, self.rows, self.calls = spark, rows, 0

    def __call__(self):
        self.calls += 1
        return self.spark.range(self.rows).repartition(3)


def test_the_check_stage_takes_what_the_timelines_stage_read(spark):
    reads = _Reads(spark, 50)
    key = shared_key("/lake", ["b", "a"], {"a": "fp-a", "b": "fp-b", "c": "fp-c"})
    assert key == shared_key("/lake", ["a", "b"], {"a": "fp-a", "b": "fp-b"})  # the clusters asked for, in order
    with short_run_session(spark, True), stage_sharing():
        with ShortRunInputs() as timelines:
            first = timelines.shared(key, reads)
            cached = base._SHARED[key].cached
            assert first.count() == 50 and cached.is_cached and first.rdd.getNumPartitions() == 1
            # cached in a partition per core at most (every core builds it), read as one partition
            assert cached.rdd.getNumPartitions() == min(3, spark.sparkContext.defaultParallelism)
        assert cached.is_cached  # kept past its stage
        with ShortRunInputs() as check:
            taken = check.take(key, reads)
            assert taken is first and reads.calls == 1
        assert not cached.is_cached and not base._SHARED  # released with the stage that took it


def test_another_key_reads_again_and_releases_the_shared_one(spark):
    reads = _Reads(spark, 20)
    with short_run_session(spark, True), stage_sharing():
        with ShortRunInputs() as timelines:
            first = timelines.shared(shared_key("/lake", ["a"], {"a": "fp-1"}), reads)
            (first_cached,) = [h.cached for h in base._SHARED.values()]
        # bronze moved in between (another fingerprint): the check stage reads its own
        with ShortRunInputs() as check:
            taken = check.take(shared_key("/lake", ["a"], {"a": "fp-2"}), reads)
            (taken_cached,) = check._held
            assert taken is not first and reads.calls == 2 and taken_cached.is_cached
            assert not first_cached.is_cached
        assert not taken_cached.is_cached


def test_a_run_that_stops_before_taking_releases_it(spark):
    with short_run_session(spark, True):
        with stage_sharing():
            with ShortRunInputs() as timelines:
                first = timelines.shared(("/lake", ()), _Reads(spark, 5))
                cached = base._SHARED[("/lake", ())].cached
                first.count()
        assert not cached.is_cached and not base._SHARED


def test_elsewhere_nothing_is_cached_or_kept(spark):
    reads = _Reads(spark, 5)
    with short_run_session(spark, False), stage_sharing():
        with ShortRunInputs() as timelines:
            first = timelines.shared(("/lake", ()), reads)
            assert not first.is_cached and not base._SHARED
        with ShortRunInputs() as check:
            assert check.take(("/lake", ()), reads) is not first and reads.calls == 2


def test_a_warmed_input_is_built_once_in_the_background(spark):
    from pyspark.sql import functions as F

    computed = spark.sparkContext.accumulator(0)

    def counted(x):  # no hints: PySpark would read them as a pandas UDF's
        computed.add(1)
        return x

    counted_udf = F.udf(counted, "long")
    with short_run_session(spark, True):
        with ShortRunInputs() as inputs:
            warmed = inputs(spark.range(40).repartition(2).select(counted_udf("id").alias("id")), warm=True)
            for building in inputs._warming:
                building.result(timeout=120)  # built without any query of the stage asking
            (cached,) = inputs._held
            assert computed.value == 40 and cached.is_cached and warmed.rdd.getNumPartitions() == 1
            assert warmed.where("id >= 20").count() == 20 and computed.value == 40  # read from the cache
        assert not cached.is_cached and not inputs._warming
    with short_run_session(spark, False), ShortRunInputs() as inputs:
        plain = spark.range(3)
        assert inputs(plain, warm=True) is plain and not inputs._warming  # elsewhere: nothing cached or built


def test_a_long_history_in_large_files_is_read_from_them(spark, tmp_path, monkeypatch):
    small, large = str(tmp_path / "small"), str(tmp_path / "large")
    spark.range(40).repartition(4).write.parquet(small)  # a short history: many small files
    spark.range(100_000).coalesce(1).write.parquet(large)  # a long one, compacted
    small_mean = base.mean_file_bytes(spark.read.parquet(small))
    large_mean = base.mean_file_bytes(spark.read.parquet(large))
    assert small_mean is not None and large_mean is not None and small_mean < large_mean
    assert base.mean_file_bytes(spark.range(3)) is None  # no files: decided as before (cached)
    monkeypatch.setattr(base, "DIRECT_READ_MIN_FILE_BYTES", (small_mean + large_mean) / 2)
    with short_run_session(spark, True), stage_sharing():
        with ShortRunInputs() as timelines:
            direct = timelines.shared(("/lake", ("large",)), lambda: spark.read.parquet(large))
            assert not base._SHARED and not timelines._held and not timelines._warming
            assert direct.rdd.getNumPartitions() == 1 and not direct.is_cached and direct.count() == 100_000
        with ShortRunInputs() as check:  # nothing shared: the check stage reads the files as well
            taken = check.take(("/lake", ("large",)), lambda: spark.read.parquet(large))
            assert not check._held and taken.rdd.getNumPartitions() == 1 and taken.count() == 100_000
        with ShortRunInputs() as timelines:
            held = timelines.shared(("/lake", ("small",)), lambda: spark.read.parquet(small))
            (kept,) = base._SHARED.values()
            assert kept.cached.is_cached and held.count() == 40
    with short_run_session(spark, False), ShortRunInputs() as inputs:
        plain = spark.read.parquet(large)
        assert inputs.take(("/lake", ()), lambda: plain) is plain  # a long run: as it was read
