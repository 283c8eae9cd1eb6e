"""docs/config.schema.json, the JSON Schema of a configuration file, from the pydantic models of
``epoch_audit.config``: ``python -m epoch_audit_tools.config_schema > docs/config.schema.json``.
Editors validate and complete conf/*.yaml with it (the profiles' ``yaml-language-server`` line);
a unit test fails when the committed file and the models differ."""

from __future__ import annotations

import json
import sys
from typing import Any

from epoch_audit.config import AppConfig


def config_schema() -> dict[str, Any]:
    """The models' schema (JSON Schema 2020-12, pydantic's dialect) under a title and a pointer to the docs."""
    schema = AppConfig.model_json_schema()
    head = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "epoch-audit configuration",
        "description": (
            "An epoch-audit profile (--profile NAME, --conf FILE); every key is optional. Keys and defaults: "
            "docs/operations.md#configuration and src/epoch_audit/conf/local.yaml. "
            "Generated from src/epoch_audit/config.py by python -m epoch_audit_tools.config_schema."
        ),
    }
    return {**head, **{key: value for key, value in schema.items() if key not in head}}


def config_schema_json() -> str:
    """The file's text: keys in the models' order (the order of conf/local.yaml), a final newline."""
    return json.dumps(config_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(config_schema_json())
