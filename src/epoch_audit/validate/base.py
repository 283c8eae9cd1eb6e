"""Shared pieces of the layer suites: what a table check is, the settings, a keyed SQL expectation.

A layer suite (``epoch_audit.validate.bronze`` / ``silver`` / ``gold``) is a list of :class:`TableSuite`:
one lake table, the GX expectations to run on it, and the columns that identify an offending row.
The runner (:mod:`epoch_audit.validate.runner`) reads each table through the storage interface, hands the
Spark DataFrame to GX (Spark datasource, whole-dataframe batch) and turns GX's results into rows of
``gold/validation_results``.

Rules that no built-in expectation expresses (ordering, monotonicity, cross-table references) are
:class:`ExpectNoOffendingRows`: a Spark SQL query over ``{batch}`` (and, for cross-table rules,
temp views of other lake tables named in :data:`VIEW_NAMES`) whose result rows are the offending
keys. Spark runs the query as an aggregation/join; GX counts its rows and fetches at most
``MAX_RESULT_RECORDS`` (200) of them, of which we keep ``unexpected_sample_size``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from great_expectations.expectations.core.unexpected_rows_expectation import UnexpectedRowsExpectation
from great_expectations.expectations.expectation import Expectation

# Temp views the runner registers for cross-table SQL (only when the table exists).
# bronze/events' view holds the events gold's violations cite (epoch_audit.gold.evidence), what the
# gold suite looks up in it, where they can be listed; else the whole table.
VIEW_NAMES: dict[str, str] = {
    "bronze/events": "ea_v_bronze_events",
    "gold/violations": "ea_v_gold_violations",
}


@dataclass(frozen=True)
class ValidationSettings:
    """The ``validation:`` section of the config, resolved for one run."""

    run_id: str
    critical_suites: tuple[str, ...] = ("bronze", "silver", "gold")
    max_quarantine_rate: float = 0.01
    min_lines_for_quarantine_rate: int = 1000
    unexpected_sample_size: int = 20
    event_time_min: datetime = datetime(2010, 1, 1, tzinfo=UTC)
    event_time_max: datetime = field(default_factory=lambda: datetime.now(UTC) + timedelta(days=1))
    # hosts whose files last grew before this are silent (None: never judged)
    silent_before: datetime | None = None
    # Lake tables present as temp views for this run (set by the runner; see VIEW_NAMES).
    views: frozenset[str] = frozenset()
    # True for a run that ingested: data expectations read only what this run wrote (its bronze
    # chunks, the clusters it rebuilt), so one old bad row never fails every later night.
    this_run_only: bool = False
    # where the GX project and its Data Docs live: <lake>/reports unless the config names a place
    report_dir: str | None = None
    # tasks the uniqueness of bronze's ids is counted in (None: Spark's shuffle partitions; set by
    # the runner for a large batch, see validate.bronze.unique_query)
    id_partitions: int | None = None

    @classmethod
    def from_config(cls, validation: Any, run_id: str, now: datetime | None = None) -> ValidationSettings:
        """Build from ``AppConfig.validation`` (event_time_max = now + event_time_max_ahead_hours)."""
        now = now or datetime.now(UTC)
        return cls(
            run_id=run_id,
            critical_suites=tuple(validation.critical_suites),
            max_quarantine_rate=float(validation.max_quarantine_rate),
            min_lines_for_quarantine_rate=int(getattr(validation, "min_lines_for_quarantine_rate", 1000)),
            unexpected_sample_size=int(validation.unexpected_sample_size),
            report_dir=getattr(validation, "report_dir", None),
            event_time_min=parse_utc(getattr(validation, "event_time_min", "2010-01-01")),
            event_time_max=now + timedelta(hours=int(getattr(validation, "event_time_max_ahead_hours", 24))),
            silent_before=(now - timedelta(hours=silence)) if (silence := int(getattr(validation, "silence_hours", 26)))
            else None,
        )


def parse_utc(text: str) -> datetime:
    """An ISO-8601 date or timestamp; naive values are UTC."""
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def sql_timestamp(value: datetime) -> str:
    """A Spark SQL TIMESTAMP literal (UTC) for ``value``."""
    return "TIMESTAMP '" + value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S") + "+00:00'"


def sql_string(value: str) -> str:
    """A Spark SQL string literal (quotes and backslashes escaped; braces doubled for GX's formatter)."""
    escaped = value.replace("\\", "\\\\").replace("'", "\\'")
    return "'" + escaped.replace("{", "{{").replace("}", "}}") + "'"


class ExpectNoOffendingRows(UnexpectedRowsExpectation):
    """An ``UnexpectedRowsExpectation`` that returns its offending rows at every result format.

    The query selects only key columns (cast to strings), so a sample is small and JSON-safe.
    The stock expectation drops the rows below COMPLETE; COMPLETE would make every column-map
    expectation return its full unexpected list, which is unbounded. Here the rows GX already
    fetched (at most 200) are cut to ``partial_unexpected_count``.
    """

    def _validate(
        self,
        metrics: dict,
        runtime_configuration: dict | None = None,
        execution_engine: Any = None,
    ) -> Any:
        result = super()._validate(metrics, runtime_configuration, execution_engine)
        if not isinstance(result, dict) or "result" not in result:
            return result
        fmt = self._get_result_format(runtime_configuration=runtime_configuration)
        limit = fmt.get("partial_unexpected_count", 20) if isinstance(fmt, dict) else 20
        rows = metrics.get("unexpected_rows_query.table") or []
        result["result"]["details"] = {"unexpected_rows": list(rows)[: int(limit)]}
        return result


def offending_rows(name: str, query: str, description: str) -> ExpectNoOffendingRows:
    """A keyed SQL expectation named ``name``: ``query`` returns one row per offending key (none = success)."""
    return ExpectNoOffendingRows(unexpected_rows_query=query, description=description, meta={"name": name})


@dataclass(frozen=True)
class TableSuite:
    """The expectations one lake table must meet.

    ``build`` returns the expectations for a run's settings (thresholds, window, run id);
    ``key_columns`` name an offending row in column-map samples (GX ``unexpected_index_column_names``);
    an expectation whose SQL names the view of an absent table (see :data:`VIEW_NAMES`) is skipped
    by the runner with a note, never passed.
    """

    layer: str
    table: str
    build: Callable[[ValidationSettings], list[Expectation]]
    key_columns: tuple[str, ...] = ()
    # The rows this run wrote, given the whole table, the storage and the settings (None: whole table).
    this_run: Callable[[Any, Any, ValidationSettings], Any] | None = None

    @property
    def suite_name(self) -> str:
        """The GX suite name (``bronze.events``...)."""
        return self.table.replace("/", ".")


def view(table: str) -> str:
    """The temp-view name of lake table ``table`` inside a suite's SQL."""
    return VIEW_NAMES[table]
