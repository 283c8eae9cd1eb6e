"""Pure-Python reference model: replays a bronze history event by event with explicit state.

``check_history(events, config)`` builds the partition timeline from the events
(``epoch_audit_tools.reference_model.timeline``, the twin of
``epoch_audit.silver.timelines.partition_timeline``), runs every
module's ``check`` and returns the violations as dicts (see ``violations``; compare on
``violations.VIOLATION_KEY``). It needs no Spark, and it shares only the input / output contracts
with the Spark code: its event-type lists (``event_types``) and its config (``config.ModelConfig``,
or any object with the same attributes, such as the pipeline's ``CheckConfig``) are its own, so
that a wrong list on one side shows in the differential tests. Adding a module: append its
``check`` to CHECKERS (``check(events, config)``) or, when it reads the timeline, to
TIMELINE_CHECKERS (``check(events, timeline, config)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from epoch_audit_tools.reference_model import isr_membership as _isr_membership
from epoch_audit_tools.reference_model import leadership as _leadership
from epoch_audit_tools.reference_model import offsets as _offsets
from epoch_audit_tools.reference_model import stop_replica as _stop_replica
from epoch_audit_tools.reference_model.config import RuleConfig
from epoch_audit_tools.reference_model.timeline import partition_timeline

CHECKERS: list[Callable[[list[dict[str, Any]], Any], list[dict[str, Any]]]] = [
    _stop_replica.check,
    _isr_membership.check,
]
TIMELINE_CHECKERS: list[Callable[[list[dict[str, Any]], list[dict[str, Any]], Any], list[dict[str, Any]]]] = [
    _leadership.check,
    _offsets.check,
]


def check_history(events: list[dict[str, Any]], config: RuleConfig | None = None) -> list[dict[str, Any]]:
    """All violations the reference model finds in ``events`` (bronze-column dicts)."""
    events = list(events)
    timeline = partition_timeline(events)
    return [v for check in CHECKERS for v in check(events, config)] + [
        v for check in TIMELINE_CHECKERS for v in check(events, timeline, config)
    ]
