"""The template engine: a table of log message templates compiled to Spark column expressions.

A :class:`LineTemplate` names one message shape: the cheap prefilter that routes a row to it
(``starts`` / ``contains`` / ``contains_any``), its regex with named groups, constants, and which
derivations / fan-out / version rule apply. A :class:`TemplateTable` validates a list of them once
(Python's regex engine, at import) and builds the expressions a parser selects:

* routing: a ``CASE`` over the prefilters -> the row's template index ``_tpl`` (no regex yet);
* one regex per row: ``regexp_replace(body, <the template's pattern>, <replacement>)`` where the
  replacement lists every named group separated by :data:`GROUP_SEPARATOR` (and starts with
  :data:`MATCH_MARK`, so a match is recognisable); split, that is the row's group array ``_g``;
* values: a group cast to its column type, a per-template constant, or a derived value (one
  expression per derivation, picked by template), coalesced in that order.

Per-template values (patterns, constants, ...) are literal arrays indexed by ``_tpl``
(:func:`per_template_literal`): one SQL literal, not thousands of ``F.lit`` calls.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, IntegerType, StringType

GroupAccessor = Callable[[str], Column]  # group name -> string Column (null when absent or empty)
Derivation = Callable[[GroupAccessor], dict[str, Column]]  # -> column / d_<key> name: value
GroupRule = Callable[[GroupAccessor], Column]  # -> one value (a version hint, a fan-out list)

TEMPLATE_INDEX = "_tpl"  # the row's template index column
GROUP_SEPARATOR = "\u0001"
MATCH_MARK = "\u0002"
_LITERAL_SEPARATOR = "\u0003"  # joins a per-template string list into one literal
_NAMED_GROUP = re.compile(r"\(\?P<(\w+)>")
_INT, _STR = IntegerType(), StringType()


@dataclass(frozen=True)
class LineTemplate:
    """One log message template (or, with ``regex=None``, a family catch-all -> malformed).

    Named groups: a bronze column, ``d_<key>`` (``details[<key>]``), ``tp`` (topic-partition) or
    ``_<name>`` (internal, read by a derivation). ``version``: a literal hint, or ``@<kind>``
    computed from the groups (``Derivations.versions``). ``const``: constant column / ``d_<key>``
    values; they win over derived values. ``uses``: template-keyed derivations
    (``Derivations.by_use``); everything else is derived from the group names alone
    (``Derivations.by_group``). ``fanout``: the group holding the list to fan out
    (``Derivations.fanouts``, keyed by that group name): one event per element.
    """

    tid: str
    event_type: str | None
    families: tuple[str, ...]
    starts: str
    regex: str | None = None
    contains: tuple[str, ...] = ()
    contains_any: tuple[str, ...] = ()
    version: str | None = None
    const: dict[str, Any] = field(default_factory=dict)
    uses: tuple[str, ...] = ()
    fanout: str | None = None


@dataclass(frozen=True)
class Derivations:
    """What a template table may compute beyond a group's own value.

    ``by_group``: in priority order, (group name, derivation) applied to every template having the
    group; when several define a column, the first wins. ``by_use``: derivations a template names
    in ``uses``. ``versions``: ``@<kind>`` version rules. ``fanouts``: per fan-out group, the rule
    building its list of elements.
    """

    by_group: Sequence[tuple[str, Derivation]]
    by_use: dict[str, Derivation]
    versions: dict[str, GroupRule]
    fanouts: dict[str, GroupRule]


def _sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "array(" + ", ".join(_sql_literal(x) for x in value) + ")"
    raise TypeError(value)


@functools.cache
def _literal_array(values: tuple[Any, ...], type_sql: str) -> Column:
    """A literal per-template list (one SQL expression: building it from F.lit calls is slow)."""
    if type_sql == "string":
        assert not any(_LITERAL_SEPARATOR in (v or "") for v in values)
        # split of one literal (constant-folded); "" stands for null, see per_template_literal
        return F.split(F.lit(_LITERAL_SEPARATOR.join(v or "" for v in values)), _LITERAL_SEPARATOR, -1)
    return F.expr(f"cast({_sql_literal(list(values))} as array<{type_sql}>)")


def per_template_literal(values: Sequence[Any], dtype: DataType) -> Column:
    """The entry of a per-template literal list for this row's template (``_tpl``, 0-based)."""
    type_sql = dtype.simpleString()
    out = F.get(_literal_array(tuple(values), type_sql), F.col(TEMPLATE_INDEX))
    return F.nullif(out, F.lit("")) if type_sql == "string" else out


def per_template_arrays(values: Sequence[Sequence[Any]], element_type: str) -> Column:
    """The entry of a per-template list of literal arrays for this row's template (``_tpl``)."""
    arr = F.array(*[F.array(*[F.lit(v) for v in vs]).cast(f"array<{element_type}>") for vs in values])
    return F.get(arr, F.col(TEMPLATE_INDEX))


def int_list(s: Column, dtype: DataType = _INT) -> Column:
    """Every integer in a printed list, any form: 1,2 / [1, 2] / List(1, 2) / Set() -> array."""
    # try_cast: an element beyond the type is a null element (finish_events quarantines the line), not an abort.
    return F.transform(F.regexp_extract_all(s, F.lit(r"-?\d+"), 0), lambda x: x.try_cast(dtype))


def java_regex(regex: str) -> str:
    """Python named groups -> plain Java groups (same numbering), anchored to the whole body."""
    return "^" + _NAMED_GROUP.sub("(", regex) + "$"


def _probe(name: str) -> Column:
    """Stand-in group accessor: lets a derivation be called to list the columns it defines."""
    return F.lit(None).cast(_STR)


class TemplateTable:
    """A validated template list and the Spark expressions compiled from it (see module docstring).

    ``column_types``: the type of every column a group may name; ``event_types``: the event types
    a template may emit (besides ``None`` = recognised and dropped, and ``malformed``).
    """

    def __init__(
        self,
        templates: Sequence[LineTemplate],
        derivations: Derivations,
        column_types: dict[str, DataType],
        event_types: Sequence[str],
        malformed: str,
    ) -> None:
        self.templates = list(templates)
        self.derivations = derivations
        self.column_types = column_types
        self.patterns = self._compile(event_types, malformed)
        # every group name of any template, sorted: the slot order of ``_pos``
        self.slots = sorted({name for pat in self.patterns.values() for name in pat.groupindex})
        self.tids = [t.tid for t in self.templates]
        # templates whose rows are parsed: a regex and an event type (event_type None = recognised, dropped)
        self.active = [t.regex is not None and t.event_type is not None for t in self.templates]
        # per template, its named groups in group-number order (unnamed groups are not extracted)
        self.groups: list[list[str]] = [
            self._positional_names(t) if active else [] for t, active in zip(self.templates, self.active, strict=True)
        ]
        # per template, per slot: 0-based position in ``_g`` (None: no such group)
        self.group_positions: list[list[int | None]] = [
            [grp.index(n) if n in grp else None for n in self.slots] for grp in self.groups
        ]
        self.const_columns = sorted({column for t in self.templates for column in t.const})
        self._slot_index = {n: i for i, n in enumerate(self.slots)}
        self._group_cache: dict[str, Column] = {}
        self._unit_values_cache: dict[int, dict[str, Column]] = {}

    def _compile(self, event_types: Sequence[str], malformed: str) -> dict[str, re.Pattern[str]]:
        patterns: dict[str, re.Pattern[str]] = {}
        seen: set[str] = set()
        derive = self.derivations
        for t in self.templates:
            if t.tid in seen:
                raise ValueError(f"duplicate template id {t.tid}")
            seen.add(t.tid)
            if t.event_type not in (None, malformed) and t.event_type not in event_types:
                raise ValueError(f"{t.tid}: unknown event type {t.event_type}")
            for u in t.uses:
                if u not in derive.by_use:
                    raise ValueError(f"{t.tid}: unknown derivation {u}")
            if t.version is not None and t.version.startswith("@") and t.version not in derive.versions:
                raise ValueError(f"{t.tid}: unknown version kind {t.version}")
            if t.regex is None:
                continue
            pat = re.compile(t.regex)
            if not pat.groupindex:
                raise ValueError(f"{t.tid}: a template regex needs at least one named group")
            if t.fanout is not None and (t.fanout not in derive.fanouts or t.fanout not in pat.groupindex):
                raise ValueError(f"{t.tid}: fan-out group {t.fanout} unknown or not in the regex")
            patterns[t.tid] = pat
            for name in pat.groupindex:
                if not (name.startswith(("d_", "_")) or name == "tp" or name in self.column_types):
                    raise ValueError(f"{t.tid}: group {name} is not a bronze column")
        return patterns

    def _positional_names(self, t: LineTemplate) -> list[str]:
        pat = self.patterns[t.tid]
        return [name for name, _ in sorted(pat.groupindex.items(), key=lambda item: item[1])]

    def _replacement(self, t: LineTemplate) -> str:
        idx = self.patterns[t.tid].groupindex
        return MATCH_MARK + GROUP_SEPARATOR.join(f"${idx[n]}" for n in self._positional_names(t))

    # ------------------------------------------------------------------ per-template literals

    def lookup(self, values: Sequence[Any], dtype: DataType) -> Column:
        return per_template_literal(values, dtype)

    def per_active(self, fn: Callable[[LineTemplate], Any], dtype: DataType) -> Column:
        """``fn(template)`` for the parsed templates, null for the others."""
        return self.lookup([fn(t) if a else None for t, a in zip(self.templates, self.active, strict=True)], dtype)

    def pattern(self) -> Column:
        return self.per_active(lambda t: java_regex(t.regex), _STR)

    def replacement(self) -> Column:
        return self.per_active(self._replacement, _STR)

    def group_count(self) -> Column:
        return self.lookup([len(grp) for grp in self.groups], _INT)

    def group_position_table(self) -> Column:
        """Per template, the ``_g`` position of every slot: a literal array<array<int>>."""
        return F.expr(f"cast({_sql_literal(self.group_positions)} as array<array<int>>)")

    def fanout_kind(self) -> Column:
        return self.per_active(lambda t: t.fanout, _STR)

    def fanout_position(self) -> Column:
        """The ``_g`` position of the row's fan-out group."""
        return self.lookup(
            [grp.index(t.fanout) if t.fanout and grp else None for t, grp in zip(self.templates, self.groups, strict=True)],
            _INT,
        )

    # ------------------------------------------------------------------ groups and values

    def group(self, name: str) -> Column:
        """The string value of a capture group of the row's template (null when absent or empty).

        Reads ``_g`` (the group array) at ``_pos`` (this template's positions, staged per row)."""
        if name not in self._group_cache:
            if name not in self._slot_index:
                value = F.lit(None).cast(_STR)
            else:
                slot = F.lit(self._slot_index[name])
                value = F.nullif(F.get(F.col("_g"), F.get(F.col("_pos"), slot)), F.lit(""))
            self._group_cache[name] = value
        return self._group_cache[name]

    def has_slot(self, name: str) -> bool:
        return name in self._slot_index

    @functools.cached_property
    def _units(self) -> list[tuple[str, Derivation]]:
        return list(self.derivations.by_group) + list(self.derivations.by_use.items())

    @functools.cached_property
    def unit_plan(self) -> dict[str, list[int | None]]:
        """Per column, the derivation unit giving each template's value (first in priority order).

        Built on first use (deriving the column lists needs a Spark context)."""
        units = self._units
        n_by_group = len(self.derivations.by_group)
        columns_of = [set(fn(_probe)) for _, fn in units]
        plan: dict[str, list[int | None]] = {}
        for template_index, (t, groups) in enumerate(zip(self.templates, self.groups, strict=True)):
            for unit, (key, _) in enumerate(units):
                applies = key in groups if unit < n_by_group else key in t.uses
                if not applies:
                    continue
                for column in columns_of[unit]:
                    plan.setdefault(column, [None] * len(self.templates))
                    if plan[column][template_index] is None:
                        plan[column][template_index] = unit
                    # a constant wins over a derived value: only where that is meant
                    if column in t.const and column != "fenced":
                        raise ValueError(f"{t.tid}: {column} is both a constant and derived")
        return plan

    def _unit_values(self, unit: int) -> dict[str, Column]:
        if unit not in self._unit_values_cache:
            self._unit_values_cache[unit] = self._units[unit][1](self.group)
        return self._unit_values_cache[unit]

    def derived(self, col_name: str) -> Column | None:
        """The derived value of a column: one expression per unit that defines it, picked by template."""
        plan = self.unit_plan.get(col_name)
        if plan is None:
            return None
        row_unit = self.lookup(plan, _INT)
        expr = None
        for unit in sorted({u for u in plan if u is not None}):
            value = self._unit_values(unit)[col_name]
            expr = F.when(row_unit == unit, value) if expr is None else expr.when(row_unit == unit, value)
        return expr

    def const(self, col_name: str, dtype: DataType) -> Column | None:
        if col_name not in self.const_columns:
            return None
        return self.lookup([t.const.get(col_name) for t in self.templates], dtype)

    def value(self, col_name: str) -> Column:
        """A column's value: its group (typed), else its constant, else its derived value."""
        dtype = self.column_types[col_name]
        parts: list[Column] = []
        if col_name in self._slot_index:
            parts.append(_typed(self.group(col_name), dtype))
        const = self.const(col_name, dtype)
        if const is not None:
            parts.append(const)
        derived = self.derived(col_name)
        if derived is not None:
            parts.append(derived.try_cast(dtype))
        if not parts:
            return F.lit(None).cast(dtype)
        return parts[0] if len(parts) == 1 else F.coalesce(*parts)

    def misfit_group(self) -> Column:
        """The first typed group of the row's template whose text does not fit its column (an epoch
        beyond int32, a list element beyond the type), as ``"<column>: value out of range <text>"``;
        null when every group fits. Such a line is malformed, never parsed with a null field."""
        checks = []
        for name in self.slots:
            dtype = self.column_types.get(name)
            if dtype is None or isinstance(dtype, StringType):
                continue
            text = self.group(name)
            typed = _typed(text, dtype)
            if isinstance(dtype, ArrayType):
                bad = F.coalesce(F.exists(typed, lambda x: x.isNull()), F.lit(False))
            else:
                bad = text.isNotNull() & typed.isNull()
            checks.append(F.when(bad, F.concat(F.lit(f"{name}: value out of range "), F.substring(text, 1, 100))))
        return F.coalesce(*checks) if checks else F.lit(None).cast(_STR)

    def detail_value(self, key: str) -> Column:
        """A ``d_<key>`` value: its group, else its constant, else its derived value (strings)."""
        group = self.group(key) if key in self._slot_index else None
        parts = [p for p in (group, self.const(key, _STR), self.derived(key)) if p is not None]
        return parts[0] if len(parts) == 1 else F.coalesce(*parts) if parts else F.lit(None).cast(_STR)

    def detail_keys(self) -> set[str]:
        """Every ``d_<key>`` a group, constant or derivation of the table may define."""
        return (
            {n for n in self.slots if n.startswith("d_")}
            | {k for k in self.unit_plan if k.startswith("d_")}
            | {k for k in self.const_columns if k.startswith("d_")}
        )

    def version(self) -> Column:
        """The literal version hint, else the template's ``@<kind>`` rule."""
        kind = self.lookup([t.version if t.version and t.version.startswith("@") else None for t in self.templates], _STR)
        computed = None
        for name, rule in self.derivations.versions.items():
            value = rule(self.group)
            computed = F.when(kind == name, value) if computed is None else computed.when(kind == name, value)
        literal = self.lookup([t.version if t.version and not t.version.startswith("@") else None
                               for t in self.templates], _STR)
        return F.coalesce(literal, computed)

    def fanout(self) -> Column:
        """The row's fan-out list (by the template's fan-out group), null for other templates."""
        kind = self.fanout_kind()
        out = None
        for name, rule in self.derivations.fanouts.items():
            value = rule(self.group)
            out = F.when(kind == name, value) if out is None else out.when(kind == name, value)
        return out

    # ------------------------------------------------------------------ routing

    def routing(self, family_predicate: Callable[[str], Column], body: Column) -> Column:
        """Nested CASE: logger family, then cheap startswith/contains per template -> template index
        (null for unknown lines and for recognised lines that carry no event)."""
        families: list[str] = []
        for t in self.templates:
            for fam in t.families:
                if fam not in families:
                    families.append(fam)
        outer = None
        for fam in families:
            inner = None
            for i, t in enumerate(self.templates):
                if fam not in t.families:
                    continue
                pred = body.startswith(t.starts)
                for text in t.contains:
                    pred = pred & body.contains(text)
                if t.contains_any:
                    any_pred = None
                    for text in t.contains_any:
                        any_pred = body.contains(text) if any_pred is None else any_pred | body.contains(text)
                    pred = pred & any_pred
                value = F.lit(i) if t.event_type is not None else F.lit(None).cast(_INT)
                inner = F.when(pred, value) if inner is None else inner.when(pred, value)
            cond = family_predicate(fam)
            outer = F.when(cond, inner) if outer is None else outer.when(cond, inner)
        return outer


def _typed(s: Column, dtype: DataType) -> Column:
    if isinstance(dtype, ArrayType):
        return F.when(s.isNotNull(), int_list(s, dtype.elementType))
    if isinstance(dtype, StringType):
        return s
    return s.try_cast(dtype)
