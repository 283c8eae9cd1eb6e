"""Configuration: strict keys and types, one error line naming the file and the key, the shipped
profiles, and docs/config.schema.json in sync with the models (no Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from epoch_audit_tools.config_schema import config_schema_json

from epoch_audit.config import CONF_DIR, ConfigError, load_config, validate_config

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "docs" / "config.schema.json"
PROFILES = sorted(CONF_DIR.glob("*.yaml"))


def test_docs_config_schema_is_generated_from_the_models():
    assert SCHEMA.read_text(encoding="utf-8") == config_schema_json(), (
        "docs/config.schema.json is out of date: python -m epoch_audit_tools.config_schema > docs/config.schema.json"
    )


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.stem)
def test_shipped_profiles_load_and_point_editors_at_the_schema(profile):
    load_config(None, profile.stem)
    first = profile.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# yaml-language-server: $schema=")
    assert (profile.parent / first.split("$schema=")[1]).resolve() == SCHEMA
    jsonschema.validate(yaml.safe_load(profile.read_text(encoding="utf-8")), json.loads(SCHEMA.read_text()))


def test_the_schema_refuses_what_the_models_refuse(tmp_path):
    schema = json.loads(SCHEMA.read_text())
    conf = tmp_path / "c.yaml"
    for bad in ({"spark": {"driver_memori": "2g"}}, {"sparks": {}}, {"spark": {"driver_memory": 3}},
                {"storage": {"engine": "delta"}}, {"validation": {"max_quarantine_rate": 2}},
                {"validation": {"critical_suites": ["platinum"]}}, {"checks": {"max_clock_skew_ms": -1}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        conf.write_text(yaml.safe_dump(bad))
        with pytest.raises(ConfigError):
            load_config(conf)


@pytest.mark.parametrize(("text", "says"), [
    ("spark:\n  driver_memory: 3\n", "spark.driver_memory: expected a string, got 3"),
    ("spark:\n  foo: 1\n", "spark: unknown key 'foo' (known: c2_min_bytes, concurrent_queries, conf, driver_memory, master, remote, "
                           "short_run_max_bytes)"),
    ("sparks: {}\n", "unknown key 'sparks' (known: alerts, checks, incremental, ingest, maintenance, spark, storage, "
                     "validation)"),
    ("- spark\n", "expected a mapping, got list"),
    ("spark: [1]\n", "spark: expected a mapping, got list"),
    ("spark:\n  concurrent_queries: 0\n", "spark.concurrent_queries: must be at least 1, got 0"),
    ("spark:\n  short_run_max_bytes: '3'\n", "spark.short_run_max_bytes: expected a non-negative integer, got '3'"),
    ("spark:\n  short_run_max_bytes: -1\n", "spark.short_run_max_bytes: expected a non-negative integer, got -1"),
    ("spark:\n  short_run_max_bytes: true\n", "spark.short_run_max_bytes: expected a non-negative integer, got True"),
    ("spark:\n  remote: http://spark:15002\n", "spark.remote: 'http://spark:15002' is not sc://host[:port] or local[N]"),
    ("storage:\n  engine: delta\n", "storage.engine: 'delta' is not auto, delta-spark or delta-rs"),
    ("storage:\n  delta_spark_package: delta\n", "storage.delta_spark_package: 'delta' is not group:artifact:version"),
    ("ingest:\n  cluster_pattern: cluster\n", "ingest.cluster_pattern: the pattern needs one capturing group"),
    ("ingest:\n  host_pattern: '('\n", "ingest.host_pattern: invalid regular expression (missing ), unterminated"),
    ("ingest:\n  source_time_zone: Mars/Base\n", "ingest.source_time_zone: unknown time zone 'Mars/Base'"),
    ("incremental:\n  carry_traffic: 'yes'\n", "incremental.carry_traffic: expected true/false, got 'yes'"),
    ("validation:\n  max_quarantine_rate: 2\n", "validation.max_quarantine_rate: must be at most 1, got 2"),
    ("validation:\n  max_quarantine_rate: '0.1'\n", "validation.max_quarantine_rate: expected a number, got '0.1'"),
    ("validation:\n  critical_suites: [gold, platinum]\n",
     "validation.critical_suites[1]: 'platinum' is not bronze, silver or gold"),
    ("validation:\n  event_time_min: yesterday\n", "validation.event_time_min: not an ISO date/time: 'yesterday'"),
])
def test_a_bad_file_is_one_line_naming_the_file_and_the_key(tmp_path, text, says):
    conf = tmp_path / "night.yaml"
    conf.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(conf)
    message = str(raised.value)
    assert message.startswith(f"{conf}: {says}") and "\n" not in message, message


def test_defaults_empty_sections_and_changes_in_place(tmp_path):
    conf = tmp_path / "c.yaml"
    conf.write_text("spark:\nstorage:\n  engine: delta-rs\nvalidation:\n  max_quarantine_rate: 1\n")
    cfg = load_config(conf)  # a section with every key commented out is null in YAML: its defaults
    assert (cfg.spark.master, cfg.storage.engine, cfg.validation.max_quarantine_rate) == ("local[2]", "delta-rs", 1)
    assert cfg.to_dict()["validation"]["critical_suites"] == ["bronze", "silver", "gold"]
    # the command line sets keys in place, then checks the whole again
    cfg.spark.remote = "sc://spark:15002"
    assert validate_config(cfg) is cfg
    cfg.spark.remote = "http://spark:15002"
    with pytest.raises(ConfigError, match=r"^spark.remote: 'http://spark:15002' is not"):
        validate_config(cfg)
