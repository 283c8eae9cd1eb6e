"""Pure-Python reference model: replays a bronze history event by event with explicit state.

``check_history(events, config)`` runs every module's ``check`` and returns the violations as
dicts (see reference_model.model.violation; compare on model.VIOLATION_KEY). Adding a module:
append its ``check`` to CHECKERS.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reference_model import isr_membership as _isr_membership
from reference_model import stop_replica as _stop_replica

CHECKERS: list[Callable[[list[dict[str, Any]], Any], list[dict[str, Any]]]] = [
    _stop_replica.check,
    _isr_membership.check,
]


def check_history(events: list[dict[str, Any]], config: Any = None) -> list[dict[str, Any]]:
    """All violations the reference model finds in ``events`` (bronze-column dicts)."""
    return [v for check in CHECKERS for v in check(events, config)]
