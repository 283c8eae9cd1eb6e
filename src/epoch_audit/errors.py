"""Errors that end a run with exit code 2: the user's input, not the data or the code."""

from __future__ import annotations


class UsageError(ValueError):
    """Bad command-line usage."""
