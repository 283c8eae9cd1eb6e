"""Readers of bronze event fields that several silver tables and checks share."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

NO_ERROR = ("NONE", "0")


def is_no_error(col: Column) -> Column:
    """Request-log / response error NONE (the parsers write the name; tolerate the code 0)."""
    return F.coalesce(col.isin(*NO_ERROR), F.lit(False))


def is_ok(error: Column) -> Column:
    """A request-log partition error meaning success (error code 0, printed NONE); null stays null."""
    return F.upper(F.trim(error)).isin("NONE", "0")


def rp_term() -> Column:
    """The term a Redpanda line names in details (vote replies, notifications, step-downs)."""
    return F.col("details")["term"].cast("int")
