"""Run the layer suites on the lake's tables with GX and turn the results into rows.

For every :class:`~epoch_audit.validate.base.TableSuite` of :data:`LAYERS`: read the table through the
storage interface (absent table: one ``skipped`` row with a note, never a pass), register the
cross-table temp views, and validate the Spark DataFrame through a GX file context kept at
``<lake>/reports/gx`` (Spark datasource, one dataframe asset per table, whole-dataframe batch
definition, one ``ValidationDefinition`` per table). Results are stored by GX (so its Data Docs
site at ``<lake>/reports/data_docs/`` lists every run) and returned as ``gold/validation_results``
rows: one per expectation, with the observed value, the unexpected count and a bounded sample of
the offending keys.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from epoch_audit import objstore
from epoch_audit.gold.evidence import cited_events
from epoch_audit.lake.tables import EVENTS_TABLE, LEDGER_TABLE
from epoch_audit.validate import bronze, gold, silver
from epoch_audit.validate.base import VIEW_NAMES, ExpectNoOffendingRows, TableSuite, ValidationSettings
from epoch_audit.validate.data_docs import make_offline, page_versions
from epoch_audit.validate.engine import BundledSparkEngine, install

log = logging.getLogger(__name__)

LAYERS: dict[str, list[TableSuite]] = {"bronze": bronze.SUITES, "silver": silver.SUITES, "gold": gold.SUITES}
RESULTS_TABLE = "gold/validation_results"
DATASOURCE = "epoch_audit_lake"
DOCS_SITE = "epoch_audit"
# The site, relative to the GX project directory (<reports>/gx): <reports>/data_docs.
DOCS_BASE_DIRECTORY = "../data_docs"
SAMPLE_VALUE_CHARS = 500

RESULTS_SCHEMA = StructType(
    [
        StructField("run_id", StringType()),
        StructField("validated_at", TimestampType()),
        StructField("suite", StringType()),
        StructField("table", StringType()),
        StructField("expectation", StringType()),
        StructField("expectation_type", StringType()),
        StructField("description", StringType()),
        StructField("critical", BooleanType()),
        StructField("status", StringType()),  # passed | failed | error | skipped
        StructField("success", BooleanType()),  # null when skipped
        StructField("observed_value", StringType()),  # JSON
        StructField("unexpected_count", LongType()),
        StructField("element_count", LongType()),
        StructField("unexpected_sample", ArrayType(StringType())),  # JSON objects, at most sample size
        StructField("note", StringType()),
    ]
)
RESULT_COLUMNS = [f.name for f in RESULTS_SCHEMA.fields]


@dataclass
class ValidationOutcome:
    """What a validation run produced."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    data_docs: str | None = None

    @property
    def critical_failures(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["critical"] and r["status"] in ("failed", "error")]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows:
            out[r["status"]] = out.get(r["status"], 0) + 1
        return out


def expectation_name(exp: Any) -> str:
    """A stable, readable name: the SQL expectation's ``meta.name``, else ``type(column)``."""
    meta = getattr(exp, "meta", None) or {}
    if isinstance(exp, ExpectNoOffendingRows) and meta.get("name"):
        return str(meta["name"])
    column = getattr(exp, "column", None)
    return f"{exp.expectation_type}({column})" if column else exp.expectation_type


def _json(value: Any) -> str | None:
    if value is None:
        return None
    return json.dumps(value, default=str, sort_keys=True)


def _sample(result: dict[str, Any], size: int) -> list[str]:
    """The offending keys GX returned, as JSON strings (bounded)."""
    rows = (result.get("details") or {}).get("unexpected_rows")
    if rows is None:
        rows = result.get("partial_unexpected_index_list")
    if rows is None:
        rows = [{"value": v} for v in result.get("partial_unexpected_list") or []]
    out = []
    for row in list(rows)[:size]:
        row = row if isinstance(row, dict) else {"value": row}
        out.append(_json({k: (str(v)[:SAMPLE_VALUE_CHARS] if v is not None else None) for k, v in row.items()}))
    return out


def result_row(
    settings: ValidationSettings, suite: TableSuite, name: str, exp: Any, res: Any, now: datetime
) -> dict[str, Any]:
    """One gold/validation_results row from a GX ExpectationValidationResult."""
    result = dict(res.result or {})
    exc = res.exception_info or {}
    raised = bool(exc.get("raised_exception")) if isinstance(exc, dict) else False
    observed = result.get("observed_value")
    unexpected = result.get("unexpected_count")
    if unexpected is None and isinstance(exp, ExpectNoOffendingRows) and isinstance(observed, int):
        unexpected = observed
    if observed is None and "unexpected_count" in result:
        observed = {"unexpected_count": unexpected, "unexpected_percent": result.get("unexpected_percent")}
    note = None
    if raised:
        note = str(exc.get("exception_message") or "expectation raised an exception")[:1000]
    return {
        "run_id": settings.run_id,
        "validated_at": now,
        "suite": suite.layer,
        "table": suite.table,
        "expectation": name,
        "expectation_type": exp.expectation_type,
        "description": getattr(exp, "description", None),
        "critical": suite.layer in settings.critical_suites,
        "status": "error" if raised else ("passed" if res.success else "failed"),
        "success": bool(res.success) and not raised,
        "observed_value": _json(observed),
        "unexpected_count": int(unexpected) if unexpected is not None else None,
        "element_count": int(result["element_count"]) if result.get("element_count") is not None else None,
        "unexpected_sample": _sample(result, settings.unexpected_sample_size),
        "note": note,
    }


def skipped_row(
    settings: ValidationSettings, suite: TableSuite, name: str, exp_type: str, note: str, now: datetime
) -> dict[str, Any]:
    """A row saying an expectation (or a whole table's suite) did not run, and why."""
    return {
        "run_id": settings.run_id,
        "validated_at": now,
        "suite": suite.layer,
        "table": suite.table,
        "expectation": name,
        "expectation_type": exp_type,
        "description": None,
        "critical": suite.layer in settings.critical_suites,
        "status": "skipped",
        "success": None,
        "observed_value": None,
        "unexpected_count": None,
        "element_count": None,
        "unexpected_sample": [],
        "note": note,
    }


class GxProject:
    """The GX file context of a lake, its Spark datasource and its Data Docs site."""

    def __init__(self, reports: Path) -> None:
        import great_expectations as gx
        from great_expectations.data_context.types.base import ProgressBarsConfig

        reports.mkdir(parents=True, exist_ok=True)
        self.docs_dir = reports / "data_docs"
        self.context = gx.get_context(mode="file", project_root_dir=str(reports))
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.context.variables.save()
        site = {
            "class_name": "SiteBuilder",
            # relative to the GX project (reports/gx): the project names no absolute path, so a
            # reports folder copied, moved or staged from an object store still builds in place
            "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": DOCS_BASE_DIRECTORY},
            "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
        }
        sites = self.context.list_data_docs_sites()
        if DOCS_SITE not in sites:
            self.context.add_data_docs_site(DOCS_SITE, site)
        elif sites[DOCS_SITE].get("store_backend", {}).get("base_directory") != DOCS_BASE_DIRECTORY:
            # a project an older build wrote names its working copy's absolute path
            self.context.update_data_docs_site(DOCS_SITE, site)
        # persist=False: GX would cache each batch whole (every column, bronze's raw lines too) on
        # its first query; the few folded queries a suite runs read only their columns from Parquet.
        self.datasource = self.context.data_sources.add_or_update_spark(DATASOURCE, persist=False)
        self.engines = _install_engines(self.context, self.datasource)
        self.validated: set[str] = set()  # suites validated (their pages are rebuilt)

    def validate(self, suite: TableSuite, expectations: list[Any], df: Any, settings: ValidationSettings) -> Any:
        """Validate ``df`` against ``expectations`` as suite ``suite.suite_name``; GX stores the result."""
        import great_expectations as gx
        from great_expectations.core.run_identifier import RunIdentifier

        name = suite.suite_name
        self.validated.add(name)
        names = {a.name for a in self.datasource.assets}
        asset = self.datasource.get_asset(name) if name in names else self.datasource.add_dataframe_asset(name)
        try:
            batch_def = asset.get_batch_definition("whole")
        except Exception:  # KeyError-like lookup failure when the definition is new
            batch_def = asset.add_batch_definition_whole_dataframe("whole")
        gx_suite = self.context.suites.add_or_update(gx.ExpectationSuite(name=name, expectations=expectations))
        vd = self.context.validation_definitions.add_or_update(
            gx.ValidationDefinition(name=name, data=batch_def, suite=gx_suite)
        )
        result_format = {
            "result_format": "SUMMARY",
            "partial_unexpected_count": settings.unexpected_sample_size,
            "unexpected_index_column_names": list(suite.key_columns),
        }
        return vd.run(
            batch_parameters={"dataframe": df},
            result_format=result_format,
            run_id=RunIdentifier(run_name=settings.run_id, run_time=datetime.now(UTC)),
        )

    def build_docs(self, run_name: str | None = None) -> str:
        """Build the Data Docs site, self-contained (:mod:`epoch_audit.validate.data_docs`); its index.

        ``run_name``: only the pages of this run's results and of the suites it validated are
        rendered, and the index; a site without an index (a new lake, a deleted or staged site) is
        built whole. Rendering every stored result grew with the nights (116 results, 2.1–2.5 s at
        night 16 of ``bench-nights``); the index still reads each result's outcome."""
        from great_expectations.data_context.types.resource_identifiers import ExpectationSuiteIdentifier

        resources, unchanged = None, None
        if run_name is not None and (self.docs_dir / "index.html").is_file():
            results = [k for k in self.context.validation_results_store.list_keys()
                       if getattr(k, "run_id", None) is not None and k.run_id.run_name == run_name]
            resources = results + [ExpectationSuiteIdentifier(name=n) for n in sorted(self.validated)]
            unchanged = page_versions(self.docs_dir)
        self.context.build_data_docs(site_names=[DOCS_SITE], resource_identifiers=resources)
        remote = make_offline(self.docs_dir, unchanged)
        if remote:
            log.warning("Data Docs pages still load from the network (a GX template this build does not "
                        "know): %s", ", ".join(remote[:3]))
        return str(self.docs_dir / "index.html")


def _install_engines(context: Any, datasource: Any) -> list[BundledSparkEngine]:
    """The job-saving engine on our datasource and on the context's copy of it (GX may use either)."""
    spark = SparkSession.getActiveSession()
    engines = [install(datasource, spark)]
    stored = context.data_sources.get(DATASOURCE)
    if stored is not datasource:
        engines.append(install(stored, spark))
    return engines


def _missing_view(exp: Any, present: frozenset[str]) -> str | None:
    """The lake table whose temp view ``exp``'s SQL needs but which is absent, if any."""
    query = getattr(exp, "unexpected_rows_query", None)
    if not isinstance(query, str):
        return None
    for table, name in VIEW_NAMES.items():
        if name in query and table not in present:
            return table
    return None


def run_suites(
    spark: SparkSession,
    storage: Any,
    settings: ValidationSettings,
    layers: dict[str, list[TableSuite]] | None = None,
) -> ValidationOutcome:
    """Validate every layer's tables; GX Data Docs are rebuilt when the lake is a local directory."""
    layers = LAYERS if layers is None else layers
    now = datetime.now(UTC)
    present = frozenset(t for t in VIEW_NAMES if storage.exists(t))
    for table in present:
        view_frame = storage.read(table)
        cited = cited_events(storage) if table == EVENTS_TABLE else None
        if cited is not None:  # only the cited events are ever looked up in it (VIEW_NAMES)
            view_frame = cited
        view_frame.createOrReplaceTempView(VIEW_NAMES[table])
    settings = replace(settings, views=present, id_partitions=id_partitions(spark, storage, settings))
    root = objstore.reports_root(storage.lake, settings.report_dir)
    # On an object store the GX project is worked on in a local copy: its files (results of
    # earlier runs, which the Data Docs index lists) are copied down, and back up after the build.
    staged = Path(tempfile.mkdtemp(prefix="epoch-audit-gx-")) if objstore.is_remote(root) else None
    try:
        if staged is not None:
            objstore.download_dir(objstore.join(root, "gx"), str(staged / "gx"))
        project = GxProject(staged or Path(root))
        outcome = _validate_layers(project, storage, settings, layers, present, now)
        docs = project.build_docs(settings.run_id)
        if staged is not None:
            objstore.upload_dir(str(staged), root)
            docs = objstore.join(root, "data_docs", "index.html")
        outcome.data_docs = docs
    finally:
        if staged is not None:
            shutil.rmtree(staged, ignore_errors=True)
    return outcome


IDS_PER_TASK = 400_000  # bronze ids a task counts at most in the uniqueness check (a 1 GB heap's share)


def id_partitions(spark: SparkSession, storage: Any, settings: ValidationSettings) -> int | None:
    """How many tasks to count bronze's ids in: one per :data:`IDS_PER_TASK` lines the validated
    ingest parsed (this run's ledger rows, else every row), or None when Spark's shuffle partitions
    already give each task no more."""
    if not storage.exists(LEDGER_TABLE):
        return None
    # a small table: read by the driver where the engine can (no Spark job for one sum)
    parsed = sum(r["parsed"] or 0 for r in storage.rows(LEDGER_TABLE, ["run_id", "parsed"])
                 if not settings.this_run_only or r["run_id"] == settings.run_id)
    tasks = -(-int(parsed) // IDS_PER_TASK)
    return tasks if tasks > int(spark.conf.get("spark.sql.shuffle.partitions", "200")) else None


def _validate_layers(
    project: GxProject, storage: Any, settings: ValidationSettings, layers: dict[str, list[TableSuite]],
    present: frozenset[str], now: datetime,
) -> ValidationOutcome:
    """Every suite of ``layers`` run in ``project``: one row per expectation (skips included)."""
    outcome = ValidationOutcome()
    for layer, suites in layers.items():
        for suite in suites:
            if not storage.exists(suite.table):
                outcome.rows.append(
                    skipped_row(
                        settings,
                        suite,
                        "table_exists",
                        "table",
                        f"table {suite.table} is absent: its {layer} expectations were not run",
                        now,
                    )
                )
                log.warning("validation: %s is absent, its expectations were skipped", suite.table)
                continue
            expectations = suite.build(settings)
            runnable = []
            for exp in expectations:
                missing = _missing_view(exp, present)
                if missing:
                    outcome.rows.append(
                        skipped_row(
                            settings,
                            suite,
                            expectation_name(exp),
                            exp.expectation_type,
                            f"needs table {missing}, which is absent",
                            now,
                        )
                    )
                else:
                    runnable.append(exp)
            if not runnable:
                continue
            table = storage.read(suite.table)
            if settings.this_run_only and suite.this_run is not None:
                table = suite.this_run(table, storage, settings)
            res = project.validate(suite, runnable, table, settings)
            seen = set()
            for r in res.results:
                exp = r.expectation_config.to_domain_obj()
                seen.add(expectation_name(exp))
                outcome.rows.append(result_row(settings, suite, expectation_name(exp), exp, r, now))
            for exp in runnable:
                if expectation_name(exp) not in seen:
                    outcome.rows.append(
                        skipped_row(
                            settings,
                            suite,
                            expectation_name(exp),
                            exp.expectation_type,
                            "GX returned no result for this expectation",
                            now,
                        )
                    )
            log.info("validation %s: %s", suite.table, _short(outcome.rows, suite.table))
    log.info("validation: %d metric jobs answered without Spark", sum(e.skipped_jobs for e in project.engines))
    return outcome


def _short(rows: list[dict[str, Any]], table: str) -> str:
    mine = [r for r in rows if r["table"] == table]
    failed = [r["expectation"] for r in mine if r["status"] in ("failed", "error")]
    return f"{len(mine) - len(failed)}/{len(mine)} ok" + (f", failed: {', '.join(failed)}" if failed else "")


def result_rows(outcome: ValidationOutcome) -> list[tuple]:
    """The outcome as gold/validation_results rows (RESULTS_SCHEMA; one per expectation: small)."""
    return [tuple(r[c] for c in RESULT_COLUMNS) for r in outcome.rows]
