"""The template engine: a table of log message templates, routed and matched in Python.

A :class:`LineTemplate` names one message shape: the cheap prefilter that routes a row to it
(``starts`` / ``contains`` / ``contains_any``), its regex with named groups, constants, and which
derivations / fan-out / version rule apply. A :class:`TemplateTable` validates a list of them once
(at import) and precomputes, per template, everything a matched line needs:

* routing: per logger family, the templates in table order; the first whose prefilter holds is the
  row's template (no regex yet). A recognised line that carries no event routes to nothing.
* one regex per row: the chosen template's pattern, read with Java's semantics (it was written for
  the JVM engine, see :mod:`epoch_audit.bronze.parsers.spark_strings`), anchored to the whole body.
  Its groups are laid out as the JVM engine laid them out (``regexp_replace`` to
  :data:`MATCH_MARK` + groups joined by :data:`GROUP_SEPARATOR`, then split), so a group holding the
  separator, or a line terminator left after ``$``, gives the same result as before.
* values (:class:`LineMatch`): a group cast to its column type, else a per-template constant, else
  the derived value of the one derivation planned for that column and template.

Derivations, version rules and fan-outs are plain functions of a :class:`Groups` (the row's group
values and its log ident).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import ArrayType, DataType, LongType, StringType

from epoch_audit.bronze.parsers.spark_strings import cast, int_list, java_pattern

GROUP_SEPARATOR = "\u0001"
MATCH_MARK = "\u0002"
_DIGIT = re.compile(r"\d", re.ASCII)


class Groups:
    """The capture groups of one routed line and its log ident, as derivations read them.

    ``groups(name)`` is the group's text, ``None`` when the template has no such group, it took no
    part or it is empty. ``ident`` is the leading log ident (``Broker id=2``), ``ident_id`` its id."""

    __slots__ = ("values", "ident", "ident_id", "logger")

    def __init__(self, values: dict[str, str], ident: str | None = None, ident_id: int | None = None,
                 logger: str | None = None) -> None:
        self.values = values
        self.ident = ident
        self.ident_id = ident_id
        self.logger = logger

    def __call__(self, name: str) -> str | None:
        return self.values.get(name) or None


NO_GROUPS = Groups({})  # what a derivation sees on a line its template did not match

Derivation = Callable[[Groups], dict[str, Any]]  # -> column / d_<key> name: value (always the same keys)
GroupRule = Callable[[Groups], Any]  # -> one value (a version hint, a fan-out list)


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
    group; when several define a column, the first wins (even where its value is null). ``by_use``:
    derivations a template names in ``uses``. ``versions``: ``@<kind>`` version rules. ``fanouts``:
    per fan-out group, the rule building its list of elements.
    """

    by_group: Sequence[tuple[str, Derivation]]
    by_use: dict[str, Derivation]
    versions: dict[str, GroupRule]
    fanouts: dict[str, GroupRule]


def typed(text: str | None, dtype: DataType) -> Any:
    """A group's text as its column type (safe cast; a list column reads every integer in it)."""
    if text is None:
        return None
    if isinstance(dtype, ArrayType):
        return int_list(text, long=isinstance(dtype.elementType, LongType))
    if isinstance(dtype, StringType):
        return text
    return cast(text, dtype)


@dataclass
class CompiledTemplate:
    """One template with what matching it needs, precomputed (see :class:`TemplateTable`)."""

    template: LineTemplate
    pattern: re.Pattern[str] | None  # anchored, Java semantics; None for a catch-all
    groups: tuple[str, ...]  # named groups in group-number order
    group_numbers: tuple[int, ...]
    typed_groups: list[tuple[str, DataType]]  # non-string column groups, by name: the misfit check order
    units: list[Derivation]  # the derivations this template applies, in priority order
    derived_plan: dict[str, int]  # column / d_<key> -> index in ``units`` giving its derived value
    detail_keys: tuple[str, ...]  # every d_<key> a group, constant or derivation may give, sorted
    version_rule: GroupRule | None
    fanout_rule: GroupRule | None


def _anchored(regex: str) -> re.Pattern[str]:
    """The JVM engine's pattern ``"^" + regex + "$"`` with Java semantics (``^`` ignores a ``(?s)``)."""
    flags = "(?s)" if regex.startswith("(?s)") else ""
    return java_pattern(flags + "^" + regex.removeprefix(flags) + "$")


class LineMatch:
    """A routed line read by its template: the malformed reason (None when parsed), values, fan-out."""

    __slots__ = ("compiled", "groups", "reason", "fan", "_units", "typed")

    def __init__(self, compiled: CompiledTemplate, groups: Groups, reason: str | None) -> None:
        self.compiled = compiled
        self.groups = groups
        self.reason = reason
        self._units: dict[int, dict[str, Any]] = {}
        self.typed: dict[str, Any] = {}  # typed group values, by column (see TemplateTable._misfit)
        rule = compiled.fanout_rule
        self.fan: list[dict[str, Any]] | None = rule(groups) if rule is not None else None

    @property
    def tid(self) -> str:
        return self.compiled.template.tid

    def derived(self, name: str) -> Any:
        """The value of ``name`` from the one derivation planned for it (None when none is)."""
        unit = self.compiled.derived_plan.get(name)
        if unit is None:
            return None
        if unit not in self._units:
            self._units[unit] = self.compiled.units[unit](self.groups)
        return self._units[unit][name]

    def value(self, column: str, dtype: DataType) -> Any:
        """A column's value: its group (typed), else its constant, else its derived value (safe cast)."""
        value = self.typed[column] if column in self.typed else typed(self.groups(column), dtype)
        if value is not None:
            return value
        const = self.compiled.template.const.get(column)
        if const is not None:
            return cast(const, dtype)
        return cast(self.derived(column), dtype)

    def detail(self, key: str) -> str | None:
        """A ``d_<key>`` value: its group, else its constant, else its derived value."""
        value = self.groups(key)
        if value is None:
            value = self.compiled.template.const.get(key)
        return self.derived(key) if value is None else value

    def details(self) -> dict[str, str]:
        """``template`` and every non-null ``d_<key>`` (keys without the prefix)."""
        out = {"template": self.tid}
        for key in self.compiled.detail_keys:
            value = self.detail(key)
            if value is not None:
                out[key[2:]] = value
        return out

    def version(self) -> str | None:
        """The literal version hint, else the template's ``@<kind>`` rule."""
        version = self.compiled.template.version
        if version is not None and not version.startswith("@"):
            return version
        rule = self.compiled.version_rule
        return rule(self.groups) if rule is not None else None


class TemplateTable:
    """A validated template list, compiled for routing and matching (see the module docstring).

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
        # Python-validated regex (named groups) per template having one
        self.patterns = self._compile(event_types, malformed)
        self.tids = [t.tid for t in self.templates]
        self.compiled = [self._compiled(t) for t in self.templates]
        # per logger family (in order of first appearance), its templates in table order
        self.families: dict[str, list[int]] = {}
        for i, t in enumerate(self.templates):
            for fam in t.families:
                self.families.setdefault(fam, []).append(i)
        # routing: per family, per first character of ``starts``, the candidates in table order
        self._routes: dict[str, dict[str, list[tuple[int, LineTemplate]]]] = {}
        for fam, indices in self.families.items():
            by_char = self._routes.setdefault(fam, {})
            for i in indices:
                t = self.templates[i]
                if not t.starts:
                    raise ValueError(f"{t.tid}: a template needs a literal prefix (starts)")
                by_char.setdefault(t.starts[0], []).append((i, t))

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

    @functools.cached_property
    def _unit_columns(self) -> list[tuple[str, Derivation, set[str]]]:
        """Every derivation (by group, then by use) with the columns it defines."""
        units = list(self.derivations.by_group) + list(self.derivations.by_use.items())
        return [(key, fn, set(fn(NO_GROUPS))) for key, fn in units]

    def _compiled(self, t: LineTemplate) -> CompiledTemplate:
        active = t.regex is not None and t.event_type is not None
        index = self.patterns[t.tid].groupindex if active else {}
        numbered = sorted(index.items(), key=lambda item: item[1])
        groups = tuple(name for name, _ in numbered)
        n_by_group = len(self.derivations.by_group)
        units: list[Derivation] = []
        plan: dict[str, int] = {}
        for unit, (key, fn, columns) in enumerate(self._unit_columns):
            if not (key in groups if unit < n_by_group else key in t.uses):
                continue
            units.append(fn)
            for column in columns:
                plan.setdefault(column, len(units) - 1)
                # a constant wins over a derived value: only where that is meant
                if column in t.const and column != "fenced":
                    raise ValueError(f"{t.tid}: {column} is both a constant and derived")
        details = {n for n in groups if n.startswith("d_")} | {k for k in plan if k.startswith("d_")}
        details |= {k for k in t.const if k.startswith("d_")}
        types = self.column_types
        kind = t.version if t.version is not None and t.version.startswith("@") else None
        return CompiledTemplate(
            template=t,
            pattern=_anchored(t.regex) if t.regex is not None else None,
            groups=groups,
            group_numbers=tuple(number for _, number in numbered),
            typed_groups=[(n, types[n]) for n in sorted(groups)
                          if n in types and not isinstance(types[n], StringType)],
            units=units,
            derived_plan=plan,
            detail_keys=tuple(sorted(details)),
            version_rule=self.derivations.versions[kind] if kind else None,
            fanout_rule=self.derivations.fanouts[t.fanout] if active and t.fanout else None,
        )

    def route(self, family: str, body: str) -> int | None:
        """The index of the first template of ``family`` whose prefilter holds for ``body``; None when
        there is none or it is a recognised line carrying no event."""
        for i, t in self._routes.get(family, {}).get(body[:1], ()):
            if (
                body.startswith(t.starts)
                and all(text in body for text in t.contains)
                and (not t.contains_any or any(text in body for text in t.contains_any))
            ):
                return i if t.event_type is not None else None
        return None

    def match(self, index: int, body: str, ident: str | None, ident_id: int | None, logger: str | None) -> LineMatch:
        """Template ``index`` applied to ``body``: its groups, values and malformed reason."""
        compiled = self.compiled[index]
        values = self._groups(compiled, body) if compiled.pattern is not None else None
        groups = Groups(values or {}, ident, ident_id, logger)
        tid = compiled.template.tid
        if compiled.pattern is None:
            return LineMatch(compiled, groups, f"no known variant of {tid}")
        if values is None:
            return LineMatch(compiled, groups, f"template {tid} did not match")
        line = LineMatch(compiled, groups, None)
        fanout = compiled.template.fanout
        if line.fan is not None and not line.fan and _DIGIT.search(groups(fanout) or ""):
            line.reason = f"template {tid}: list not parsed"
        else:
            line.reason = self._misfit(line)
        return line

    @staticmethod
    def _groups(compiled: CompiledTemplate, body: str) -> dict[str, str] | None:
        """The JVM engine's group array: ``regexp_replace(body, ^regex$, MARK + $1 SEP $2 ...)``,
        recognised by its mark and split back into as many groups as the template has."""
        assert compiled.pattern is not None
        m = compiled.pattern.match(body)
        if m is not None:
            laid_out = [m.group(n) or "" for n in compiled.group_numbers]
            replaced = MATCH_MARK + GROUP_SEPARATOR.join(laid_out) + body[m.end():]
        else:
            replaced = body
        if not replaced.startswith(MATCH_MARK):
            return None
        parts = replaced[1:].split(GROUP_SEPARATOR)
        if len(parts) != len(compiled.groups):
            return None
        return dict(zip(compiled.groups, parts, strict=True))

    @staticmethod
    def _misfit(line: LineMatch) -> str | None:
        """The first typed group whose text does not fit its column (an epoch beyond int32, a list
        element beyond the type), as ``"<column>: value out of range <text>"``. Such a line is
        malformed, never parsed with a null field."""
        for name, dtype in line.compiled.typed_groups:
            text = line.groups(name)
            if text is None:
                continue
            value = line.typed[name] = typed(text, dtype)
            if (any(v is None for v in value) if isinstance(dtype, ArrayType) else value is None):
                return f"{name}: value out of range {text[:100]}"
        return None
