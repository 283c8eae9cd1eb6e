"""Configuration profiles (conf/*.yaml): one typed object, strict keys, one clear error line.

The sections are pydantic models in strict mode (no "3" for 3, no 1 for true) that forbid unknown
keys; docs/config.schema.json is their JSON Schema, for editors
(``python -m epoch_audit_tools.config_schema > docs/config.schema.json``).
"""

from __future__ import annotations

import re
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal
from zoneinfo import ZoneInfo

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, NonNegativeInt, ValidationError, model_validator

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

CONF_DIR = Path(__file__).resolve().parent / "conf"


class ConfigError(ValueError):
    """Bad configuration: reported as one line, exit code 2."""


def _regex_with_a_group(pattern: str) -> str:
    try:
        groups = re.compile(pattern).groups
    except re.error as err:
        raise ValueError(f"invalid regular expression ({err})") from None
    if groups < 1:
        raise ValueError("the pattern needs one capturing group")
    return pattern


def _time_zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except Exception:  # ZoneInfo raises several kinds (not found, bad key, a path): all one answer
        raise ValueError(f"unknown time zone {name!r}") from None
    return name


def _iso_time(text: str) -> str:
    try:
        datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not an ISO date/time: {text!r}") from None
    return text


def _spark_remote(url: str) -> str:
    if not re.fullmatch(r"sc://\S+|local(\[\d+\])?", url):
        raise ValueError(f"{url!r} is not sc://host[:port] or local[N]")
    return url


def _maven_coordinates(text: str) -> str:
    if not re.fullmatch(r"[\w.-]+:[\w.-]+:[\w.-]+", text):
        raise ValueError(f"{text!r} is not group:artifact:version")
    return text


# The checks one key's value needs beyond its type, run where the key is declared.
PathPattern = Annotated[str, AfterValidator(_regex_with_a_group)]
TimeZone = Annotated[str, AfterValidator(_time_zone)]
IsoTime = Annotated[str, AfterValidator(_iso_time)]
SparkRemote = Annotated[str, AfterValidator(_spark_remote)]
MavenCoordinates = Annotated[str, AfterValidator(_maven_coordinates)]
Suite = Literal["bronze", "silver", "gold"]


class _Section(BaseModel):
    # Strict: a YAML typo ("3" for 3, yes/no in a string key) fails instead of being coerced.
    model_config = ConfigDict(extra="forbid", strict=True)


class SparkConf(_Section):
    """The Spark session: embedded, the active one, or Spark Connect."""

    master: str | None = "local[2]"  # null: reuse the active/cluster session, never override it
    # Spark Connect instead of a classic session: sc://host:port (a running server), or local[N]
    # (PySpark starts a Connect server in a local JVM, set up like `master`). null: classic.
    remote: SparkRemote | None = None
    driver_memory: str = "2g"
    conf: dict[str, Any] = Field(default_factory=dict)
    # A local run whose input files and local bronze events together hold fewer bytes starts its
    # JVM for a short run (epoch_audit.spark.SHORT_RUN): compiling costs it more than running. 0: never.
    short_run_max_bytes: NonNegativeInt = 64 * 1024 * 1024
    # A longer local run weighed the same way keeps the JIT's C2 compiler from this many bytes on;
    # below, C1 alone (epoch_audit.spark.MID_RUN_JAVA_OPTIONS): C2's compiling costs a mid-size run
    # more than its faster code saves. 0: always C2.
    c2_min_bytes: NonNegativeInt = 2 * 1024 * 1024 * 1024
    # Independent queries a stage submits at once from its own threads (the checks, the silver
    # tables): the driver plans one while the executors run another. 1: one at a time.
    concurrent_queries: int = Field(2, ge=1)


# The Delta build for the pinned Spark (4.1): from Delta 4.1 on, the artifact names the Spark line.
DELTA_SPARK_PACKAGE = "io.delta:delta-spark_4.1_2.13:4.4.0"


class StorageConf(_Section):
    """The Delta engine."""

    engine: Literal["auto", "delta-spark", "delta-rs"] = "auto"
    # Maven coordinates an embedded (local) session loads for engine delta-spark (fetched once by
    # Spark's Ivy into the cache, see epoch_audit.spark.ivy_cache_dir); a cluster's or Databricks'
    # session brings its own.
    delta_spark_package: MavenCoordinates = DELTA_SPARK_PACKAGE


class IngestConf(_Section):
    """Reading the collected log files."""

    cluster_id: str | None = None  # used when no cluster=<id> path segment names it
    cluster_pattern: PathPattern = r"(?:^|/)cluster=([^/]+)"
    host_pattern: PathPattern = r"(?:^|/)(?:broker|node)[-=](\d+)(?:/|$)"
    source_time_zone: TimeZone = "UTC"
    max_line_chars: NonNegativeInt = 1_000_000  # longer lines are quarantined (kept truncated)
    batch_lines: NonNegativeInt = 100_000  # Arrow batch size of the file reader


class ChecksConf(_Section):
    """The invariant checks."""

    max_clock_skew_ms: NonNegativeInt = 1000
    # YAML file of acknowledged violations (epoch_audit.suppressions); --suppressions overrides it
    suppressions_file: str | None = None


class IncrementalConf(_Section):
    """What a nightly run reads again."""

    # Nightly runs read a cluster's request-log FETCH / PRODUCE lines only from its horizon on, plus
    # the few older ones a check still needs (epoch_audit.stages.carry); false: always the whole history.
    carry_traffic: bool = True
    # The horizon: this many minutes before the cluster's latest traffic (default a day). Traffic
    # that arrives later but timed before it makes the next run read the cluster's whole history.
    traffic_lag_minutes: NonNegativeInt = 1440


class ValidationConf(_Section):
    """The expectation suites, silence and the run report's limits."""

    critical_suites: list[Suite] = Field(default_factory=lambda: ["bronze", "silver", "gold"])
    max_quarantine_rate: float = Field(0.01, ge=0, le=1)
    # a night with fewer lines than this cannot fail on its quarantine rate (1 bad line of 2 is noise)
    min_lines_for_quarantine_rate: NonNegativeInt = 1000
    unexpected_sample_size: NonNegativeInt = 20
    event_time_min: IsoTime = "2010-01-01"  # bronze event_time window: ISO date/time (UTC) ...
    event_time_max_ahead_hours: NonNegativeInt = 24  # ... up to the run's start plus this many hours
    # a host none of whose files grew for this many hours is silent: a failed critical expectation
    # (a dead log collector must not read as a green night); 0: never
    silence_hours: NonNegativeInt = 26
    report_max_violations: NonNegativeInt = 500  # violations listed in the run report (all are counted)
    report_max_partitions: NonNegativeInt = 50  # partitions with a violation that get a timeline chart
    report_max_evidence: NonNegativeInt = 10  # evidence lines shown per violation in the report
    report_max_timeline_points: NonNegativeInt = 500  # latest decisions drawn per partition chart
    # where the HTML reports and GX Data Docs go (`--report-dir` wins): a directory or an object
    # store's URI; null: <lake>/reports (on an object store too)
    report_dir: str | None = None


class AlertsConf(_Section):
    """The webhook alert."""

    # The environment variable holding the webhook URL (Slack-compatible incoming webhook). The URL
    # carries its token, so it never sits in a config file, a table or a log: only its variable's name.
    webhook_url_env: str = "EPOCH_AUDIT_WEBHOOK_URL"
    webhook_timeout_seconds: NonNegativeInt = 10


class MaintenanceConf(_Section):
    """`epoch-audit maintain`."""

    # `epoch-audit maintain`: files no table version younger than this reads are deleted (Delta's
    # own default minimum is a week; time travel further back ends there).
    retention_hours: NonNegativeInt = 168


class AppConfig(_Section):
    """epoch-audit's configuration (a profile, conf/*.yaml); every key is optional."""

    spark: SparkConf = Field(default_factory=SparkConf)
    storage: StorageConf = Field(default_factory=StorageConf)
    ingest: IngestConf = Field(default_factory=IngestConf)
    checks: ChecksConf = Field(default_factory=ChecksConf)
    incremental: IncrementalConf = Field(default_factory=IncrementalConf)
    validation: ValidationConf = Field(default_factory=ValidationConf)
    alerts: AlertsConf = Field(default_factory=AlertsConf)
    maintenance: MaintenanceConf = Field(default_factory=MaintenanceConf)

    @model_validator(mode="before")
    @classmethod
    def _empty_sections(cls, data: Any) -> Any:
        """A section whose keys are all commented out (``spark:`` alone) is null in YAML: its defaults."""
        if isinstance(data, dict):
            return {key: {} if value is None and key in cls.model_fields else value for key, value in data.items()}
        return data

    def to_dict(self) -> dict[str, Any]:
        """Plain data (sections as dicts)."""
        return self.model_dump()


def _where(location: tuple[int | str, ...]) -> str:
    """``validation.critical_suites[1]`` for ("validation", "critical_suites", 1)."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location).lstrip(".")


def _known_keys(location: tuple[int | str, ...]) -> list[str]:
    section: Any = AppConfig
    for part in location:
        section = section.model_fields[part].annotation
    return sorted(section.model_fields)


def _reason(error: ErrorDetails) -> str:
    """What is wrong with one value, in the words of the hand-written checker this replaced."""
    kind, value, context = error["type"], error["input"], error.get("ctx", {})
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"expected a mapping, got {type(value).__name__}"
    if kind in ("int_type", "int_from_float", "int_parsing"):
        return f"expected a non-negative integer, got {value!r}"
    if kind == "greater_than_equal" and context.get("ge") == 0 and isinstance(value, int):
        return f"expected a non-negative integer, got {value!r}"
    if kind == "greater_than_equal":
        return f"must be at least {context['ge']:g}, got {value!r}"
    if kind == "less_than_equal":
        return f"must be at most {context['le']:g}, got {value!r}"
    if kind == "literal_error":
        choices = context["expected"].replace("'", "")  # pydantic quotes them: 'auto', 'delta-spark' or ...
        return f"{value!r} is not {choices}"
    if kind == "value_error":  # our own checks (AfterValidator): their message as it is
        return str(context["error"])
    expected = {"bool_type": "true/false", "string_type": "a string", "float_type": "a number", "list_type": "a list"}
    if kind in expected:
        return f"expected {expected[kind]}, got {value!r}"
    return f"{error['msg']}, got {value!r}"


def _config_error(err: ValidationError) -> ConfigError:
    """The first problem pydantic found, as one line naming the key."""
    error = err.errors()[0]
    location = error["loc"]
    if error["type"] == "extra_forbidden":
        parent = location[:-1]
        reason = f"unknown key {location[-1]!r} (known: {', '.join(_known_keys(parent))})"
        return ConfigError(f"{_where(parent)}: {reason}" if parent else reason)
    return ConfigError(f"{_where(location)}: {_reason(error)}" if location else _reason(error))


def _parse(data: Any) -> AppConfig:
    try:
        return AppConfig.model_validate(data)
    except ValidationError as err:
        raise _config_error(err) from None


def validate_config(cfg: AppConfig) -> AppConfig:
    """Check ``cfg`` again after the command line changed keys in place (assignments are not
    validated); raise ConfigError naming the key."""
    _parse(cfg.model_dump())
    return cfg


def load_config(path: str | Path | None = None, profile: str = "local") -> AppConfig:
    """Load ``path`` (or ``conf/<profile>.yaml``) into an AppConfig; raise ConfigError on anything odd."""
    if path:
        source: Any = Path(path)
    else:
        # through importlib.resources: under spark-submit --py-files the package is imported from
        # the wheel itself (a zip), where conf/ is no folder on disk
        source = resources.files("epoch_audit.conf").joinpath(f"{profile}.yaml")
    if not source.is_file():
        where = source if path else f"{CONF_DIR / f'{profile}.yaml'} (profile {profile!r})"
        raise ConfigError(f"config file not found: {where}")
    try:
        data = yaml.safe_load(source.read_text()) or {}
    except yaml.YAMLError as err:
        first = str(err).splitlines()[0] if str(err) else "syntax error"
        raise ConfigError(f"{source}: invalid YAML ({first})") from None
    try:
        return _parse(data)
    except ConfigError as err:  # one line that names the file as well as the key
        raise ConfigError(f"{source}: {err}") from None
