"""The job-saving GX engine gives GX's own results: a table's offending-rows queries folded into one."""

from __future__ import annotations

from unittest import mock

import great_expectations as gx
import pytest

from epoch_audit.validate.base import offending_rows
from epoch_audit.validate.engine import BundledSparkEngine, install

ROWS = [("a", 1, None), ("b", -3, "x"), ("c", 7, "y"), ("d", -1, None)]
QUERIES = {
    # offending rows with a null column: GX returns the key with None
    "negative": "SELECT CAST(k AS STRING) AS k, CAST(v AS STRING) AS v, CAST(note AS STRING) AS note "
                "FROM {batch} WHERE v < 0",
    # none
    "huge": "SELECT CAST(k AS STRING) AS k FROM {batch} WHERE v > 1000",
    # a CTE, an aggregate and a quote: folded inside a subquery all the same
    "notes": "WITH n AS (SELECT note, COUNT(*) AS c FROM {batch} WHERE note IS NOT NULL GROUP BY note) "
             "SELECT CAST(note AS STRING) AS note, CAST(c AS STRING) AS c, 'it''s' AS said FROM n",
    # a column that is not a string: left to GX, which returns it typed
    "typed": "SELECT k, v FROM {batch} WHERE v = 7",
    # a query that fails: GX reports its error, the others still fold
    "broken": "SELECT no_such_column FROM {batch}",
}


def _validate(spark, bundled: bool) -> tuple[dict, set[str]]:
    context = gx.get_context(mode="ephemeral")
    datasource = context.data_sources.add_spark("lake")
    if bundled:
        install(datasource, spark)
    batch = datasource.add_dataframe_asset("t").add_batch_definition_whole_dataframe("whole")
    suite = context.suites.add(
        gx.ExpectationSuite(name="t", expectations=[offending_rows(n, q, n) for n, q in QUERIES.items()])
    )
    definition = context.validation_definitions.add(gx.ValidationDefinition(name="t", data=batch, suite=suite))
    df = spark.createDataFrame(ROWS, "k string, v int, note string")
    # The SQL queries Spark ran (an action on the query or on its limit), recorded where they are sent:
    # which queries ran is what folding changes. How often GX runs one varies from run to run, and the
    # status tracker's job count fell behind on a loaded CI host (30 and 35 jobs of runs that take about
    # 90 and 35), so neither is counted.
    ran: set[str] = set()
    session, frame = type(spark), type(df)
    send, limit = session.sql, frame.limit

    def sent(self, query, *args, **kwargs):
        result = send(self, query, *args, **kwargs)
        result._sql_text = query
        return result

    def limited(self, *args, **kwargs):
        result = limit(self, *args, **kwargs)
        result._sql_text = getattr(self, "_sql_text", None)
        return result

    def action(method):
        def run(self, *args, **kwargs):
            if getattr(self, "_sql_text", None) is not None:
                ran.add(self._sql_text)
            return method(self, *args, **kwargs)
        return run

    with mock.patch.object(session, "sql", sent), mock.patch.object(frame, "limit", limited), \
            mock.patch.object(frame, "collect", action(frame.collect)), \
            mock.patch.object(frame, "count", action(frame.count)):
        result = definition.run(batch_parameters={"dataframe": df}, result_format={"result_format": "SUMMARY"})
    out = {}
    for r in result.results:
        name = r.expectation_config.meta["name"]
        rows = (r.result or {}).get("details", {}).get("unexpected_rows")
        raised = bool((r.exception_info or {}).get("raised_exception"))
        out[name] = (r.success, (r.result or {}).get("observed_value"), sorted(map(repr, rows or [])), raised)
    return out, ran


@pytest.fixture(scope="module")
def both(spark):
    return _validate(spark, bundled=False), _validate(spark, bundled=True)


def test_folded_queries_give_gx_results(both):
    (plain, _), (folded, _) = both
    assert folded == plain
    assert plain["negative"][:2] == (False, 2)
    assert plain["negative"][2] == sorted(map(repr, [{"k": "b", "v": "-3", "note": "x"},
                                                     {"k": "d", "v": "-1", "note": None}]))
    assert plain["huge"][:3] == (True, 0, [])
    assert plain["notes"][2] == sorted(map(repr, [{"note": "x", "c": "1", "said": "it's"},
                                                  {"note": "y", "c": "1", "said": "it's"}]))
    assert plain["typed"][2] == [repr({"k": "c", "v": 7})]
    assert plain["broken"][0] is False


def test_folded_queries_run_as_one_spark_query(both):
    (_, plain), (_, folded) = both
    alone = {name: q.format(batch="tmp_view") for name, q in QUERIES.items()}
    # GX runs each query that analyses on its own (the broken one fails before it runs)
    assert plain == {alone[n] for n in ("negative", "huge", "notes", "typed")}
    # folded: the three string queries run inside one UNION ALL, the typed one on its own, as before
    union = [q for q in folded if "UNION ALL" in q]
    assert len(union) == 1 and folded == {union[0], alone["typed"]}
    assert all(f"({alone[n]})" in union[0] for n in ("negative", "huge", "notes"))


def test_the_engine_is_installed(spark):
    datasource = gx.get_context(mode="ephemeral").data_sources.add_spark("lake")
    assert isinstance(install(datasource, spark), BundledSparkEngine)
