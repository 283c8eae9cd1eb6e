"""Staging: scratch Parquet a run writes under ``<lake>/_staging/<run_id>/`` and reads back once
(big plans are cut there); never a table, never read by another run."""

from __future__ import annotations

import shutil

from epoch_audit import objstore


def staging_dir(lake: str, run_id: str | None = None) -> str:
    """``<lake>/_staging`` (every run's scratch space), or one run's ``<lake>/_staging/<run_id>``."""
    root = f"{lake.rstrip('/')}/_staging"
    return root if run_id is None else f"{root}/{run_id}"


def remove_staging(staging: str) -> None:
    """Staged Parquet is scratch space, removed once read (an object store's too: every object
    under the prefix)."""
    if objstore.is_remote(staging):
        try:
            objstore.delete_dir(staging)
        except OSError:  # scratch space: the next run removes it again
            pass
        return
    shutil.rmtree(staging.removeprefix("file:"), ignore_errors=True)
