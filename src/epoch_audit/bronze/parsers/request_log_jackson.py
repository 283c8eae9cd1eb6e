"""Spark's ``from_json`` on JSON that does not parse (a stray byte, a cut line): the rare path.

Spark reads JSON with Jackson's streaming parser and keeps what it converted before a syntax error
(partial results): the fields of a request-log line read before the error survive, and those after
it too when the parser resynchronises. Which fields survive depends on how Jackson's tokenizer
recovers, so this module replays it: a token stream with Jackson's rules (Spark's options: single
quotes, NaN / Infinity allowed; comments, unquoted names, leading zeros, trailing commas not;
1000-digit numbers and 1000 levels at most; a value in an object is scanned with its field name,
a string only when read) under Spark's converter (``JacksonParser.convertObject``/``convertArray``).
Valid JSON never comes here (:mod:`~epoch_audit.bronze.parsers.request_log_json` reads it).
"""

from __future__ import annotations

from typing import Any

from epoch_audit.bronze.parsers.request_log_json import INT32_LIMIT, INT64_LIMIT, Pairs, jackson_json, no_surrogates

_WS = " \t\n\r"
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "'": "'"}
_MAX_DEPTH = 1000
_MAX_DIGITS = 1000
_TOKENS = {"true": True, "false": False, "null": None, "NaN": float("nan"), "Infinity": float("inf"),
           "INF": float("inf")}


class _SyntaxError(Exception):
    """Jackson's JsonParseException."""


class _Misfit(Exception):
    """Spark's conversion error (a value of the wrong JSON type or out of range)."""


class _Partial(Exception):
    """Spark's PartialValueException: a struct / array converted with misfits inside."""

    def __init__(self, partial: Any) -> None:
        self.partial = partial


class _Tokens:
    """Jackson's ReaderBasedJsonParser over one string, as far as Spark's reading uses it."""

    def __init__(self, text: str) -> None:
        self.s, self.pos = text, 0
        self.frames: list[list] = [["root", -1, None]]  # [kind, index, current name]
        self.cur: str | None = None
        self.pending: str | None = None  # the value token scanned with a field name
        self.value: Any = None
        self.incomplete = False  # a string token not read yet

    # --- characters ---
    def _char(self) -> str | None:
        """The next non-blank character, consumed (None at the end)."""
        s = self.s
        while self.pos < len(s):
            c = s[self.pos]
            self.pos += 1
            if c in _WS:
                continue
            if c == "/" or c < " ":
                raise _SyntaxError("comment or control character")
            return c
        return None

    def _string(self, quote: str, keep: bool) -> str:
        s, out = self.s, []
        while True:
            if self.pos >= len(s):
                raise _SyntaxError("end of input in a string")
            c = s[self.pos]
            self.pos += 1
            if c == quote:
                break
            if c == "\\":
                if self.pos >= len(s):
                    raise _SyntaxError("end of input in an escape")
                e = s[self.pos]
                self.pos += 1
                if e == "u":
                    digits = s[self.pos:self.pos + 4]
                    for k, d in enumerate(digits):
                        if d not in "0123456789abcdefABCDEF":
                            self.pos += k + 1
                            raise _SyntaxError("bad \\u escape")
                    self.pos += len(digits)
                    if len(digits) < 4:
                        raise _SyntaxError("end of input in an escape")
                    c = chr(int(digits, 16))
                elif e in _ESCAPES:  # \' too: single quotes are on
                    c = _ESCAPES[e]
                else:
                    raise _SyntaxError("bad escape")
            elif c < " ":
                raise _SyntaxError("control character in a string")
            if keep:
                out.append(c)
        text = "".join(out)
        return no_surrogates(text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")) if keep else ""

    def text(self) -> str:
        """The current string token (Jackson's getText: reads a pending string)."""
        if self.incomplete:
            self.incomplete = False
            self.value = self._string('"', True)
        return self.value

    def _word(self, first: str) -> Any:
        start = self.pos - 1
        end = start
        while end < len(self.s) and (self.s[end].isalnum() or self.s[end] in "_$"):
            end += 1
        word = self.s[start:end]
        self.pos = end
        if word not in _TOKENS:
            raise _SyntaxError("unrecognized token")
        return _TOKENS[word]

    def _number(self, first: str) -> str:
        s, start = self.s, self.pos - 1
        i = self.pos
        if first == "-":
            if i < len(s) and s[i] == "I":
                self.pos = i + 1
                self.value = -self._word("I")
                return "FLT"
            if i >= len(s) or not s[i].isdigit() or not s[i].isascii():
                raise _SyntaxError("minus without digits")
            i += 1
        if s[i - 1] == "0" and i < len(s) and "0" <= s[i] <= "9":
            self.pos = i
            raise _SyntaxError("leading zeroes")
        while i < len(s) and "0" <= s[i] <= "9":
            i += 1
        kind = "INT"
        if i < len(s) and s[i] == ".":
            kind, i = "FLT", i + 1
            if not (i < len(s) and "0" <= s[i] <= "9"):
                self.pos = i + 1
                raise _SyntaxError("decimal point without digits")
            while i < len(s) and "0" <= s[i] <= "9":
                i += 1
        if i < len(s) and s[i] in "eE":
            kind, i = "FLT", i + 1
            if i < len(s) and s[i] in "+-":
                i += 1
            if not (i < len(s) and "0" <= s[i] <= "9"):
                self.pos = i + 1
                raise _SyntaxError("exponent without digits")
            while i < len(s) and "0" <= s[i] <= "9":
                i += 1
        self.pos = i
        text = s[start:i]
        if len(text) > _MAX_DIGITS:
            raise _SyntaxError("number too long")
        self.value = int(text) if kind == "INT" else float(text)
        return kind

    def _push(self, kind: str) -> None:
        if len(self.frames) > _MAX_DEPTH:
            raise _SyntaxError("nesting too deep")
        self.frames.append([kind, -1, None])

    def _scan_value(self, c: str | None, in_object: bool) -> str:
        self.value = None
        if c is None:
            raise _SyntaxError("end of input where a value was expected")
        if c == '"':
            self.incomplete = True
            return "STR"
        if c in "[{":
            if not in_object:
                self._push("arr" if c == "[" else "obj")
            return "SA" if c == "[" else "SO"
        if c == "'":
            self.value = self._string("'", True)
            return "STR"
        if c == "-" or "0" <= c <= "9":
            return self._number(c)
        if c == "+" and self.s[self.pos:self.pos + 1] == "I":
            self.pos += 1
            self.value = self._word("I")
            return "FLT"
        if c in "tfnNI":
            self.value = self._word(c)
            return {True: "TRUE", False: "FALSE", None: "NULL"}.get(self.value, "FLT") if c in "tfn" else "FLT"
        raise _SyntaxError("expected a value")

    def next(self) -> str | None:
        """Jackson's nextToken."""
        if self.cur == "FN":
            t, self.pending = self.pending, None
            if t in ("SA", "SO"):
                self._push("arr" if t == "SA" else "obj")
            self.cur = t
            return t
        if self.incomplete:
            self.incomplete = False
            self._string('"', False)
        c = self._char()
        frame = self.frames[-1]
        if c is None:
            if frame[0] != "root":
                raise _SyntaxError("end of input inside a value")
            self.cur = None
            return None
        if c in "]}":
            if frame[0] != ("arr" if c == "]" else "obj"):
                raise _SyntaxError("mismatched close marker")
            self.frames.pop()
            self.cur = "EA" if c == "]" else "EO"
            return self.cur
        frame[1] += 1
        if frame[0] != "root" and frame[1] > 0:
            if c != ",":
                raise _SyntaxError("expected a comma")
            c = self._char()
            if c is None:
                raise _SyntaxError("end of input after a comma")
        in_object = frame[0] == "obj"
        if in_object:
            if c not in "\"'":
                raise _SyntaxError("expected a field name")
            frame[2] = self._string(c, True)
            self.cur = "FN"
            if self._char() != ":":
                raise _SyntaxError("expected a colon")
            self.pending = self._scan_value(self._char(), True)
            return "FN"
        self.cur = self._scan_value(c, False)
        return self.cur

    def name(self) -> str | None:
        frame = self.frames[-1]
        return frame[2] if frame[0] == "obj" else None

    def skip_children(self) -> None:
        if self.cur not in ("SO", "SA"):
            return
        depth = 1
        while depth:
            t = self.next()
            if t is None:
                return
            depth += 1 if t in ("SO", "SA") else -1 if t in ("EO", "EA") else 0

    def copy_structure(self) -> Any:
        """The current value (an object or array read to its end) as plain JSON data."""
        if self.cur == "STR":
            return self.text()
        if self.cur not in ("SO", "SA"):
            return self.value
        stack: list[Any] = [[] if self.cur == "SA" else Pairs()]
        while True:
            t = self.next()
            if t in ("EO", "EA", None):
                done = stack.pop()
                if not stack or t is None:
                    return done
                continue
            container = stack[-1]
            key = None
            if t == "FN":
                key = self.name()
                t = self.next()
            value = [] if t == "SA" else Pairs() if t == "SO" else self.text() if t == "STR" else self.value
            if isinstance(container, list):
                container.append(value)
            else:
                container.pairs.append((key, value))
            if t in ("SA", "SO"):
                stack.append(value)


def _value(p: _Tokens, schema: Any) -> Any:
    """Spark's converter for ``schema`` at the current token (parseJsonToken)."""
    if p.cur == "FN":
        p.next()
    t = p.cur
    if t is None or t == "NULL":
        return None
    if isinstance(schema, dict):
        if t == "SO":
            return _object(p, schema)
    elif isinstance(schema, list):
        if t == "SA":
            return _array(p, schema[0])
    elif schema == "string":
        return p.text() if t == "STR" else jackson_json(p.copy_structure())
    elif schema == "boolean":
        if t in ("TRUE", "FALSE"):
            return t == "TRUE"
    elif t == "INT":
        limit = INT32_LIMIT if schema == "int" else INT64_LIMIT
        if -limit <= p.value < limit:
            return p.value
    if t == "STR":
        p.text()  # Spark reads the string for its error message
    raise _Misfit(t)


def _object(p: _Tokens, schema: dict) -> dict:
    row: dict = {}
    bad = False
    while True:
        t = p.next()
        if t is None or t == "EO":
            break
        field = schema.get(p.name())
        if field is None:
            p.skip_children()
            continue
        name = p.name()
        try:
            row[name] = _value(p, field)
        except _Partial as partial:
            bad = True
            row[name] = partial.partial
        except (_Misfit, _SyntaxError, ValueError):
            bad = True
            p.skip_children()
    if bad:
        raise _Partial(row)
    return row


def _array(p: _Tokens, element: Any) -> list:
    values: list = []
    bad = False
    while True:
        t = p.next()
        if t is None or t == "EA":
            break
        try:
            values.append(_value(p, element))
        except _Partial as partial:
            bad = True
            values.append(partial.partial)
    if bad:
        raise _Partial(values)
    return values


def jackson_from_json(body: str, schema: dict) -> tuple[dict, bool]:
    """(fields, corrupt) of Spark's PERMISSIVE ``from_json`` on ``body`` (an object that Python's
    ``json`` refused): the fields Spark keeps as partial results, or none."""
    p = _Tokens(body)
    try:
        if p.next() != "SO":
            return {}, True
        row = _object(p, schema)
    except _Partial as partial:
        return partial.partial, True
    except (_Misfit, _SyntaxError, ValueError, RecursionError):
        return {}, True
    return row, False
