"""docs/tables.md from the contracts' table descriptions (epoch_audit.contracts.descriptions):
``python -m epoch_audit_tools.table_docs > docs/tables.md``. A unit test keeps the page in sync."""

from __future__ import annotations

import sys

from epoch_audit.contracts.descriptions import SHARED_COLUMNS, TABLES


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")


def tables_markdown() -> str:
    """The page: each table's description and its columns' comments, in lake order."""
    lines = [
        "# Tables",
        "",
        "Every table of the lake, with the description and the column comments its Delta log carries",
        "(`DESCRIBE DETAIL` / `DESCRIBE TABLE`, `deltalake.DeltaTable(...).metadata().description` and the",
        "schema's field metadata `comment`). Generated from `src/epoch_audit/contracts/descriptions.py`",
        "(`python -m epoch_audit_tools.table_docs > docs/tables.md`); `tests/unit/test_table_descriptions.py`",
        "fails when this page and the contracts differ. Layout and partitioning:",
        "[operations.md](operations.md#lake-layout).",
        "",
    ]
    for name, entry in TABLES.items():
        lines += [f"## `{name}`", "", _cell(entry.description), "", "| column | meaning |", "|---|---|"]
        lines += [f"| `{column}` | {_cell(text)} |" for column, text in entry.columns.items()]
        lines.append("")
    lines += [
        "## Shared columns",
        "",
        "A column a table's section does not list means the same in every table that has it:",
        "",
        "| column | meaning |",
        "|---|---|",
    ]
    lines += [f"| `{column}` | {_cell(text)} |" for column, text in SHARED_COLUMNS.items()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.stdout.write(tables_markdown())
