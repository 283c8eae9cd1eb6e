"""GX's Spark execution engine, minus the Spark jobs whose answer is already known.

GX resolves a suite's metrics in rounds; in one round it bundles every aggregate of a domain into one
``agg`` (all ``unexpected_count`` partials of a table in one pass) but runs every other metric as its
own Spark job. For a column-map expectation the samples (``unexpected_values``, the partial unexpected
list, and ``unexpected_index_list``, the offending keys) are such jobs, one each, and they sit in the
same round as the bundled count. For an ``UnexpectedRowsExpectation`` the row count and the (at most
``MAX_RESULT_RECORDS``) rows are two jobs running the same query.

:class:`BundledSparkEngine` resolves each round's bundled aggregates and counts first, then:
- a sample of a condition whose unexpected count is 0 is the empty list GX would have fetched (the
  same condition on the same domain matches no row), so no job runs;
- an offending-rows query runs once: when it returned fewer than ``MAX_RESULT_RECORDS`` rows, that
  is its row count; otherwise GX counts it as before;
- the offending-rows queries of one round over the same batch run as one query (a ``UNION ALL`` of
  each query's first ``MAX_RESULT_RECORDS`` rows, each row carried as JSON), not one each: a table's
  SQL expectations cost one Spark query. Only queries whose columns are all strings are folded (the
  suites cast their keys to strings), so each row comes back as GX's own ``Row.asDict()`` would.
Everything else (and every case it cannot match) goes to GX unchanged, so results are GX's own.
"""

from __future__ import annotations

import json
from typing import Any

from great_expectations.constants import MAX_RESULT_RECORDS
from great_expectations.core.id_dict import IDDict
from great_expectations.core.metric_domain_types import MetricDomainTypes
from great_expectations.core.metric_function_types import SummarizationMetricNameSuffixes
from great_expectations.execution_engine.sparkdf_execution_engine import SparkDFExecutionEngine
from great_expectations.expectations.metrics.query_metrics.query_table.unexpected_rows_query_table import (
    UnexpectedRowsQueryTable,
)
from great_expectations.util import convert_to_json_serializable  # noqa: TID251 - as GX engine does
from great_expectations.validator.metric_configuration import MetricConfiguration

COUNT = SummarizationMetricNameSuffixes.UNEXPECTED_COUNT.value
VALUES = SummarizationMetricNameSuffixes.UNEXPECTED_VALUES.value
INDEX_LIST = SummarizationMetricNameSuffixes.UNEXPECTED_INDEX_LIST.value
AGGREGATE_SUFFIX = "aggregate_fn"
ROWS_TABLE = "unexpected_rows_query.table"
ROWS_COUNT = "unexpected_rows_query.row_count"
# The view GX registers the batch as before it runs an offending-rows query (QueryTable._spark).
GX_BATCH_VIEW = "tmp_view"


def _count_id(config: Any, suffix: str) -> Any:
    """The id of the ``unexpected_count`` metric of the same condition as map metric ``config`` (ends in ``suffix``).

    GX asks for a count with the sample's domain and value kwargs, less ``result_format``.
    """
    metric = config.metric_configuration
    name = metric.metric_name
    if not name.endswith("." + suffix):
        return None
    values = {k: v for k, v in (metric.metric_value_kwargs or {}).items() if k != "result_format"}
    return MetricConfiguration(
        metric_name=name[: -len(suffix)] + COUNT,
        metric_domain_kwargs=dict(metric.metric_domain_kwargs or {}),
        metric_value_kwargs=values,
    ).id


def _rows_query_key(config: Any) -> tuple[str, str]:
    metric = config.metric_configuration
    return str(metric.metric_domain_kwargs_id), str(metric.metric_value_kwargs_id)


class BundledSparkEngine(SparkDFExecutionEngine):
    """A ``SparkDFExecutionEngine`` that skips the Spark jobs whose result the round already implies."""

    # How many metrics this engine answered without a Spark job (logged by the runner).
    skipped_jobs: int = 0
    # The metrics resolved in earlier rounds (the counts a sample of this round follows from).
    _prior: dict | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Aggregates computed one round early (id -> value), handed to GX when it asks for them.
        self._early: dict = {}

    def resolve_metrics(self, metrics_to_resolve: Any, metrics: dict | None = None, runtime_configuration: Any = None):
        self._prior = metrics or {}
        try:
            return super().resolve_metrics(metrics_to_resolve, metrics, runtime_configuration)
        finally:
            self._prior = None

    def _process_direct_and_bundled_metric_computation_configurations(
        self,
        metric_fn_direct_configurations: list[Any],
        metric_fn_bundle_configurations: list[Any],
    ) -> dict:
        # 0. aggregates this engine already computed a round early
        resolved: dict = {}
        bundle = []
        for config in metric_fn_bundle_configurations:
            if config.metric_configuration.id in self._early:
                resolved[config.metric_configuration.id] = self._early.pop(config.metric_configuration.id)
            else:
                bundle.append(config)
        # 1. the bundled aggregates (one agg per domain), the aggregate expressions of the next
        #    round, the direct unexpected counts and the offending rows of SQL expectations
        first = [
            c for c in metric_fn_direct_configurations
            if c.metric_configuration.metric_name.endswith(("." + COUNT, "." + AGGREGATE_SUFFIX))
            or c.metric_configuration.metric_name == ROWS_TABLE
        ]
        rest = [c for c in metric_fn_direct_configurations if c not in first]
        folded = self._offending_rows_folded([c for c in first if c.metric_configuration.metric_name == ROWS_TABLE])
        resolved.update(folded)
        resolved.update(
            super()._process_direct_and_bundled_metric_computation_configurations(
                metric_fn_direct_configurations=[c for c in first if c.metric_configuration.id not in folded],
                metric_fn_bundle_configurations=bundle,
            )
        )
        # GX would aggregate these next round, after the samples: aggregate them now (same
        # expressions, one agg per domain), so the samples below know their counts
        self._aggregate_early(first, resolved)
        counts = {**(self._prior or {}), **resolved, **self._early}
        query_rows = {
            _rows_query_key(c): resolved.get(c.metric_configuration.id)
            for c in first if c.metric_configuration.metric_name == ROWS_TABLE
        }
        # 2. what those answer without a job; the rest goes to GX
        to_compute = []
        for config in rest:
            value = self._known(config, counts, query_rows)
            if value is None:
                to_compute.append(config)
            else:
                resolved[config.metric_configuration.id] = value[0]
                self.skipped_jobs += 1
        if to_compute:
            resolved.update(
                super()._process_direct_and_bundled_metric_computation_configurations(
                    metric_fn_direct_configurations=to_compute, metric_fn_bundle_configurations=[]
                )
            )
        return resolved

    def _offending_rows_folded(self, configs: list[Any]) -> dict:
        """{metric id: rows} of the offending-rows queries in ``configs`` that run as one query per batch.

        What GX's ``QueryTable._spark`` returns for each: the batch as view ``tmp_view``, the query's
        first ``MAX_RESULT_RECORDS`` rows, each as a dict. A batch with one query, a query with a
        column that is not a string, and a batch whose folded query fails are left to GX.
        """
        by_domain: dict[Any, list[Any]] = {}
        for config in configs:
            domain = IDDict(config.metric_configuration.metric_domain_kwargs or {})
            by_domain.setdefault(domain.to_id(), []).append(config)
        out: dict = {}
        for group in by_domain.values():
            if len(group) < 2:
                continue
            try:
                df, _, _ = self.get_compute_domain(
                    dict(group[0].metric_configuration.metric_domain_kwargs or {}), domain_type=MetricDomainTypes.TABLE
                )
                df.createOrReplaceTempView(GX_BATCH_VIEW)
                queries = {}
                for config in group:
                    kwargs = config.metric_configuration.metric_value_kwargs or {}
                    if kwargs.get("fetch_all"):
                        continue
                    try:
                        query = UnexpectedRowsQueryTable._format_query(
                            UnexpectedRowsQueryTable._get_query_from_metric_value_kwargs(dict(kwargs)),
                            batch=GX_BATCH_VIEW,
                        )
                        columns = self.spark.sql(query).schema.fields
                    except Exception:  # noqa: BLE001 - a query that does not analyse: GX reports it
                        continue
                    if all(type(f.dataType).__name__ == "StringType" for f in columns):
                        queries[config.metric_configuration.id] = (query, [f.name for f in columns])
                if len(queries) < 2:
                    continue
                out.update(self._run_folded(queries))
            except Exception:  # noqa: BLE001 - GX runs (and reports) these queries one by one
                continue
        return out

    def _run_folded(self, queries: dict[Any, tuple[str, list[str]]]) -> dict:
        """Run ``{metric id: (query, its columns)}`` as one ``UNION ALL``; {metric id: [row dict]}.

        The branches go in the order of their queries' text, not of GX's metrics (a set, in an order
        that varies with the hash seed and between GX's retries of a round): the same queries make
        the same SQL every time.
        """
        ids = sorted(queries, key=lambda key: (queries[key][0], str(key)))
        branches = [
            f"SELECT {index} AS _ea_query, TO_JSON(STRUCT(*), MAP('ignoreNullFields', 'false')) AS _ea_row "
            f"FROM (SELECT * FROM ({queries[key][0]}) LIMIT {MAX_RESULT_RECORDS})"
            for index, key in enumerate(ids)
        ]
        rows: dict[Any, list[dict]] = {key: [] for key in ids}
        for row in self.spark.sql("\nUNION ALL\n".join(branches)).collect():
            key = ids[row["_ea_query"]]
            values = json.loads(row["_ea_row"])
            rows[key].append({column: values.get(column) for column in queries[key][1]})
        return rows

    def _aggregate_early(self, configs: list[Any], resolved: dict) -> None:
        """Compute the aggregates whose expressions ``configs`` just built, one ``agg`` per domain.

        A domain whose ``agg`` fails is left to GX (which then reports the error per metric).
        """
        by_domain: dict[Any, tuple[dict, list[Any], list[Any]]] = {}
        for config in configs:
            metric = config.metric_configuration
            value = resolved.get(metric.id)
            if not metric.metric_name.endswith("." + AGGREGATE_SUFFIX) or not isinstance(value, tuple):
                continue
            expression, compute_kwargs = value[0], value[1]
            target = MetricConfiguration(
                metric_name=metric.metric_name[: -len(AGGREGATE_SUFFIX) - 1],
                metric_domain_kwargs=dict(metric.metric_domain_kwargs or {}),
                metric_value_kwargs=dict(metric.metric_value_kwargs or {}),
            ).id
            domain = IDDict(compute_kwargs or {})
            entry = by_domain.setdefault(domain.to_id(), (domain, [], []))
            entry[1].append(expression)
            entry[2].append(target)
        for domain, expressions, targets in by_domain.values():
            try:
                row = self.get_domain_records(domain_kwargs=domain).agg(*expressions).collect()[0]
            except Exception:  # noqa: BLE001 - GX computes (and reports) these itself next round
                continue
            for index, target in enumerate(targets):
                self._early[target] = convert_to_json_serializable(data=row[index])

    def _known(self, config: Any, counts: dict, query_rows: dict) -> tuple[Any] | None:
        """``(value,)`` when ``config``'s result follows from this round's counts or rows, else None."""
        name = config.metric_configuration.metric_name
        if name == ROWS_COUNT:
            rows = query_rows.get(_rows_query_key(config))
            if isinstance(rows, list) and len(rows) < MAX_RESULT_RECORDS:
                return (len(rows),)
            return None
        key = _count_id(config, VALUES) or _count_id(config, INDEX_LIST)
        if key is None or key not in counts or counts[key] not in (0, None):
            return None
        return ([],) if self._empty_sample_is_valid(config, name.endswith("." + INDEX_LIST)) else None

    def _empty_sample_is_valid(self, config: Any, index_list: bool) -> bool:
        """True when GX would return ``[]`` (not None, not an error) for a sample with no offending row."""
        kwargs = config.metric_provider_kwargs or {}
        condition = (kwargs.get("metrics") or {}).get("unexpected_condition")
        if not condition or condition[0] is None:
            return False
        _, compute_kwargs, accessor_kwargs = condition
        if not index_list:
            return "column" in (accessor_kwargs or {})
        result_format = (kwargs.get("metric_value_kwargs") or {}).get("result_format") or {}
        keys = result_format.get("unexpected_index_column_names") if isinstance(result_format, dict) else None
        if not keys:
            return False
        # GX checks that the key columns exist before it fetches: keep that error
        columns = set(self.get_domain_records(domain_kwargs=dict(compute_kwargs or {})).columns)
        needed = [*keys, *[accessor_kwargs[k] for k in ("column",) if k in (accessor_kwargs or {})]]
        return all(isinstance(c, str) and c in columns for c in needed)


def engine_kwargs_of(datasource: Any) -> dict:
    """The keyword arguments GX builds its engine with for ``datasource`` (after ``get_execution_engine``)."""
    return dict(getattr(datasource, "_cached_execution_engine_kwargs", {}) or {})


def install(datasource: Any, spark: Any) -> BundledSparkEngine:
    """Make ``datasource`` (a GX Spark datasource) validate with a :class:`BundledSparkEngine`.

    GX keeps one engine per datasource and rebuilds it only when the datasource's settings change;
    it has no public hook for the engine class of one datasource, so the engine built from the same
    settings is put in its place.
    """
    gx_engine = datasource.get_execution_engine()  # records the settings GX compares against
    if isinstance(gx_engine, BundledSparkEngine):
        return gx_engine
    engine = BundledSparkEngine(spark=spark, **engine_kwargs_of(datasource))
    datasource._execution_engine = engine
    return engine
