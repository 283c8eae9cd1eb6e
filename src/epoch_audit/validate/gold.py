"""Gold suite: ``gold/violations`` keeps the output contract (``shared/spec/invariants.md``).

- the contract's columns are present; ids and keys non-null, ``violation_id`` unique;
- every ``invariant`` is an id some registered check emits (:data:`epoch_audit.gold.registry.REGISTRY`);
- ``severity`` / ``confidence`` come from the allowed sets (:mod:`epoch_audit.contracts.violations`);
- ``explanation`` is a non-empty sentence;
- every violation has evidence, and every evidence id exists in ``bronze/events`` (a cross-table
  anti-join in Spark; skipped with a note when bronze/events is absent).
"""

from __future__ import annotations

import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation

from epoch_audit.contracts.violations import CHECK_COLUMNS, CONFIDENCES, SEVERITIES
from epoch_audit.validate.base import TableSuite, ValidationSettings, offending_rows, view
from epoch_audit.validate.scope import gold_clusters_of_run

EVENTS = "bronze/events"


def known_invariant_ids() -> list[str]:
    """Every invariant id a registered check can emit."""
    from epoch_audit.gold.registry import REGISTRY

    return sorted(spec.id for spec in REGISTRY)


def evidence_query() -> str:
    """(violation_id, evidence_id) pairs whose evidence event is not in bronze/events, plus empty evidence.

    Bronze is semi-joined to the evidence ids first (the ids are the broadcast side), then the
    evidence is anti-joined to what was found, so the driver holds at most the evidence ids. A
    direct anti-join can only build from bronze, and Spark sizes bronze's ``event_id`` projection
    about ten times too small (12 MB for 1.3 M events): under about a million events it is below
    the broadcast threshold, and every event id was collected to the driver to build the table.
    """
    return (
        "WITH ev AS (SELECT violation_id, invariant, EXPLODE(evidence) AS evidence_id FROM {batch}), "
        "ids AS (SELECT DISTINCT evidence_id FROM ev WHERE evidence_id IS NOT NULL), "
        f"found AS (SELECT DISTINCT e.event_id FROM {view(EVENTS)} e "
        "LEFT SEMI JOIN ids ON e.event_id = ids.evidence_id) "
        "SELECT CAST(ev.violation_id AS STRING) AS violation_id, ev.invariant, "
        "CAST(ev.evidence_id AS STRING) AS evidence_id FROM ev "
        "LEFT ANTI JOIN found ON found.event_id = ev.evidence_id "
        "UNION ALL SELECT CAST(violation_id AS STRING) AS violation_id, invariant, "
        "CAST(NULL AS STRING) AS evidence_id FROM {batch} WHERE evidence IS NULL OR SIZE(evidence) = 0"
    )


def violations_expectations(settings: ValidationSettings) -> list[Expectation]:
    """The gold/violations epoch_audit.validate."""
    del settings
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["run_id", "violation_id", *CHECK_COLUMNS], exact_match=False),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("violation_id", "run_id", "invariant")],
        gxe.ExpectColumnValuesToBeUnique(column="violation_id"),
        gxe.ExpectColumnValuesToBeInSet(column="invariant", value_set=known_invariant_ids()),
        gxe.ExpectColumnValuesToBeInSet(column="severity", value_set=list(SEVERITIES)),
        gxe.ExpectColumnValuesToNotBeNull(column="severity"),
        gxe.ExpectColumnValuesToBeInSet(column="confidence", value_set=list(CONFIDENCES)),
        gxe.ExpectColumnValuesToNotBeNull(column="confidence"),
        gxe.ExpectColumnValuesToNotBeNull(column="explanation"),
        gxe.ExpectColumnValuesToNotMatchRegex(column="explanation", regex=r"^\s*$"),
        offending_rows(
            "evidence_exists_in_bronze",
            evidence_query(),
            "every violation has evidence and every evidence id exists in bronze/events",
        ),
    ]


SUITES: list[TableSuite] = [
    TableSuite(
        "gold", "gold/violations", violations_expectations, key_columns=("violation_id",),
        this_run=gold_clusters_of_run,
    ),
]
