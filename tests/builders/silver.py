"""The silver tables the tests build from generated bronze events."""

from __future__ import annotations

from epoch_audit.silver.tables import SILVER_TABLES

# The controller-side tables (the timeline, registrations, controller views); checks build the
# broker views they need themselves when a test leaves them out.
TIMELINE_TABLES = {
    name: SILVER_TABLES[name] for name in ("partition_timeline", "broker_registrations", "broker_controller_views")
}
BROKER_VIEW_TABLES = {name: build for name, build in SILVER_TABLES.items() if name not in TIMELINE_TABLES}
