"""Staging: scratch Parquet a run writes under ``<lake>/_staging/<run_id>/`` and reads back once
(big plans are cut there); never a table, never read by another run."""

from __future__ import annotations

import shutil


def staging_dir(lake: str, run_id: str | None = None) -> str:
    """``<lake>/_staging`` (every run's scratch space), or one run's ``<lake>/_staging/<run_id>``."""
    root = f"{lake.rstrip('/')}/_staging"
    return root if run_id is None else f"{root}/{run_id}"


def remove_staging(staging: str) -> None:
    """Staged Parquet is scratch space; local lakes clean it up (object stores: lifecycle rules)."""
    if "://" not in staging or staging.startswith("file:"):
        shutil.rmtree(staging.removeprefix("file:"), ignore_errors=True)
