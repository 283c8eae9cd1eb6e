"""Configuration profiles (conf/*.yaml): one typed object, strict keys, one clear error line."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

CONF_DIR = Path(__file__).resolve().parent / "conf"


class ConfigError(ValueError):
    """Bad configuration: reported as one line, exit code 2."""


@dataclass
class SparkConf:
    master: str | None = "local[2]"  # null: reuse the active/cluster session, never override it
    # Spark Connect instead of a classic session: sc://host:port (a running server), or local[N]
    # (PySpark starts a Connect server in a local JVM, set up like `master`). null: classic.
    remote: str | None = None
    driver_memory: str = "2g"
    conf: dict[str, Any] = field(default_factory=dict)
    # A local run whose input files and local bronze events together hold fewer bytes starts its
    # JVM for a short run (epoch_audit.spark.SHORT_RUN): compiling costs it more than running. 0: never.
    short_run_max_bytes: int = 64 * 1024 * 1024
    # Independent queries a stage submits at once from its own threads (the checks, the silver
    # tables): the driver plans one while the executors run another. 1: one at a time.
    concurrent_queries: int = 2


# The Delta build for the pinned Spark (4.1): from Delta 4.1 on, the artifact names the Spark line.
DELTA_SPARK_PACKAGE = "io.delta:delta-spark_4.1_2.13:4.4.0"


@dataclass
class StorageConf:
    engine: str = "auto"  # auto | delta-spark | delta-rs
    # Maven coordinates an embedded (local) session loads for engine delta-spark (fetched once by
    # Spark's Ivy into the cache, see epoch_audit.spark.ivy_cache_dir); a cluster's or Databricks'
    # session brings its own.
    delta_spark_package: str = DELTA_SPARK_PACKAGE


@dataclass
class IngestConf:
    cluster_id: str | None = None  # used when no cluster=<id> path segment names it
    cluster_pattern: str = r"(?:^|/)cluster=([^/]+)"
    host_pattern: str = r"(?:^|/)(?:broker|node)[-=](\d+)(?:/|$)"
    source_time_zone: str = "UTC"
    max_line_chars: int = 1_000_000  # longer lines are quarantined (kept truncated)
    batch_lines: int = 100_000  # Arrow batch size of the file reader


@dataclass
class ChecksConf:
    max_clock_skew_ms: int = 1000
    # YAML file of acknowledged violations (epoch_audit.suppressions); --suppressions overrides it
    suppressions_file: str | None = None


@dataclass
class IncrementalConf:
    # Nightly runs read a cluster's request-log FETCH / PRODUCE lines only from its horizon on, plus
    # the few older ones a check still needs (epoch_audit.stages.carry); false: always the whole history.
    carry_traffic: bool = True
    # The horizon: this many minutes before the cluster's latest traffic (default a day). Traffic
    # that arrives later but timed before it makes the next run read the cluster's whole history.
    traffic_lag_minutes: int = 1440


@dataclass
class ValidationConf:
    critical_suites: list[str] = field(default_factory=lambda: ["bronze", "silver", "gold"])
    max_quarantine_rate: float = 0.01
    # a night with fewer lines than this cannot fail on its quarantine rate (1 bad line of 2 is noise)
    min_lines_for_quarantine_rate: int = 1000
    unexpected_sample_size: int = 20
    event_time_min: str = "2010-01-01"  # bronze event_time window: ISO date/time (UTC) ...
    event_time_max_ahead_hours: int = 24  # ... up to the run's start plus this many hours
    # a host none of whose files grew for this many hours is silent: a failed critical expectation
    # (a dead log collector must not read as a green night); 0: never
    silence_hours: int = 26
    report_max_violations: int = 500  # violations listed in the run report (all are counted)
    report_max_partitions: int = 50  # partitions with a violation that get a timeline chart
    report_max_evidence: int = 10  # evidence lines shown per violation in the report
    report_max_timeline_points: int = 500  # latest decisions drawn per partition chart


@dataclass
class AlertsConf:
    # The environment variable holding the webhook URL (Slack-compatible incoming webhook). The URL
    # carries its token, so it never sits in a config file, a table or a log: only its variable's name.
    webhook_url_env: str = "EPOCH_AUDIT_WEBHOOK_URL"
    webhook_timeout_seconds: int = 10


@dataclass
class MaintenanceConf:
    # `epoch-audit maintain`: files no table version younger than this reads are deleted (Delta's
    # own default minimum is a week; time travel further back ends there).
    retention_hours: int = 168


@dataclass
class AppConfig:
    spark: SparkConf = field(default_factory=SparkConf)
    storage: StorageConf = field(default_factory=StorageConf)
    ingest: IngestConf = field(default_factory=IngestConf)
    checks: ChecksConf = field(default_factory=ChecksConf)
    incremental: IncrementalConf = field(default_factory=IncrementalConf)
    validation: ValidationConf = field(default_factory=ValidationConf)
    alerts: AlertsConf = field(default_factory=AlertsConf)
    maintenance: MaintenanceConf = field(default_factory=MaintenanceConf)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _build(cls: type, data: Any, where: str) -> Any:
    if data is None:
        return cls()
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
    kwargs = {}
    defaults = cls()
    for name, value in data.items():
        default = getattr(defaults, name)
        key = f"{where}.{name}" if where else name
        if is_dataclass(default):
            kwargs[name] = _build(type(default), value, key)
        else:
            kwargs[name] = _check_type(key, value, default)
    return cls(**kwargs)


def _check_type(key: str, value: Any, default: Any) -> Any:
    if value is None or default is None:
        return value
    if isinstance(default, bool) and not isinstance(value, bool):
        raise ConfigError(f"{key}: expected true/false, got {value!r}")
    if isinstance(default, int) and not isinstance(default, bool):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ConfigError(f"{key}: expected a non-negative integer, got {value!r}")
    if isinstance(default, float) and not isinstance(value, int | float):
        raise ConfigError(f"{key}: expected a number, got {value!r}")
    if isinstance(default, str) and not isinstance(value, str):
        raise ConfigError(f"{key}: expected a string, got {value!r}")
    if isinstance(default, list | dict) and not isinstance(value, type(default)):
        raise ConfigError(f"{key}: expected a {type(default).__name__}, got {value!r}")
    return value


def validate_config(cfg: AppConfig) -> AppConfig:
    """The checks no single key can make alone (patterns, zones, ranges); raise ConfigError."""
    for key in ("cluster_pattern", "host_pattern"):
        pattern = getattr(cfg.ingest, key)
        try:
            if re.compile(pattern).groups < 1:
                raise ConfigError(f"ingest.{key}: the pattern needs one capturing group")
        except re.error as err:
            raise ConfigError(f"ingest.{key}: invalid regular expression ({err})") from None
    if cfg.storage.engine not in ("auto", "delta-spark", "delta-rs"):
        raise ConfigError(f"storage.engine: {cfg.storage.engine!r} is not auto, delta-spark or delta-rs")
    if not re.fullmatch(r"[\w.-]+:[\w.-]+:[\w.-]+", cfg.storage.delta_spark_package):
        raise ConfigError(
            f"storage.delta_spark_package: {cfg.storage.delta_spark_package!r} is not group:artifact:version"
        )
    try:
        from zoneinfo import ZoneInfo

        ZoneInfo(cfg.ingest.source_time_zone)
    except Exception:
        raise ConfigError(f"ingest.source_time_zone: unknown time zone {cfg.ingest.source_time_zone!r}") from None
    if cfg.spark.remote is not None and not re.fullmatch(r"sc://\S+|local(\[\d+\])?", cfg.spark.remote):
        raise ConfigError(f"spark.remote: {cfg.spark.remote!r} is not sc://host[:port] or local[N]")
    if cfg.spark.concurrent_queries < 1:
        raise ConfigError("spark.concurrent_queries: must be at least 1")
    if not 0 <= cfg.validation.max_quarantine_rate <= 1:
        raise ConfigError("validation.max_quarantine_rate: must be between 0 and 1")
    if cfg.validation.min_lines_for_quarantine_rate < 0:
        raise ConfigError("validation.min_lines_for_quarantine_rate: must be >= 0")
    try:
        from datetime import datetime

        datetime.fromisoformat(cfg.validation.event_time_min)
    except ValueError:
        raise ConfigError(
            f"validation.event_time_min: not an ISO date/time: {cfg.validation.event_time_min!r}"
        ) from None
    unknown_suites = set(cfg.validation.critical_suites) - {"bronze", "silver", "gold"}
    if unknown_suites:
        raise ConfigError(f"validation.critical_suites: unknown suite {sorted(unknown_suites)[0]!r}")
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
        return validate_config(_build(AppConfig, data, ""))
    except ConfigError as err:  # one line that names the file as well as the key
        raise ConfigError(f"{source}: {err}") from None
