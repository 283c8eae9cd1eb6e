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
