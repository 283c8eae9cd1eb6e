"""with_keys_of: the rows a keyed window reads, null keys equal to null keys."""

from __future__ import annotations

from epoch_audit.gold.analysis.keys import with_keys_of

SCHEMA = "broker_id int, topic string, partition int, v string"


def test_keeps_rows_of_keys_present_and_matches_null_to_null(spark) -> None:
    rows = spark.createDataFrame(
        [
            (1, "a", 0, "kept"),
            (1, "a", 0, "kept too"),
            (1, "a", 1, "other partition"),
            (2, "a", 0, "other broker"),
            (None, "b", 0, "null broker, kept"),
            (3, None, 0, "null topic, no such key"),
        ],
        SCHEMA,
    )
    keyed = spark.createDataFrame([(1, "a", 0, "x"), (1, "a", 0, "y"), (None, "b", 0, "z"), (3, "c", 0, "w")], SCHEMA)
    kept = with_keys_of(rows, keyed, ["broker_id", "topic", "partition"])
    assert kept.columns == rows.columns
    assert sorted(r["v"] for r in kept.collect()) == ["kept", "kept too", "null broker, kept"]


def test_no_keyed_rows_keeps_nothing(spark) -> None:
    rows = spark.createDataFrame([(1, "a", 0, "v")], SCHEMA)
    assert with_keys_of(rows, rows.limit(0), ["broker_id", "topic", "partition"]).collect() == []


def test_extreme_struct_by_key_answers_as_the_struct_aggregate(spark) -> None:
    # random groups with ties of the first field, nulls in keys and in both fields, min and max
    import random

    from pyspark.sql import functions as F

    from epoch_audit.gold.analysis.keys import extreme_struct_by_key

    rng = random.Random(7)
    data = [
        (rng.choice([1, 2, 3, None]), rng.choice(["a", "b", None]), rng.choice([None, 1, 2, 2, 3, 3, 3]),
         rng.choice([None, "x", "y", "z"]), rng.randint(0, 9))
        for _ in range(400)
    ]
    rows = spark.createDataFrame(data, "k1 int, k2 string, t int, id string, n int")
    for largest in (True, False):
        pick = F.max if largest else F.min
        expected = rows.groupBy("k1", "k2").agg(pick(F.struct("t", "id")).alias("m"), F.sum("n").alias("s"))
        got = extreme_struct_by_key(rows, ["k1", "k2"], ["t", "id"], "m", largest, also=(F.sum("n").alias("s"),))
        assert got.columns == expected.columns
        assert sorted(map(tuple, got.collect()), key=repr) == sorted(map(tuple, expected.collect()), key=repr)
    only_null = spark.createDataFrame([(1, None, "b"), (1, None, "a")], "k1 int, t int, id string")
    for largest, want in ((True, "b"), (False, "a")):
        got = extreme_struct_by_key(only_null, ["k1"], ["t", "id"], "m", largest).collect()
        assert [r["m"]["id"] for r in got] == [want]
