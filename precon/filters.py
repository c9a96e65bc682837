"""The ``filterQuery`` language: parser, reference evaluator and query builder.

The language is Algolia's filter syntax as docs/api.md settles it::

    type:Condo                          match (case-insensitive; any element of an array attribute)
    builders:"Builders/5fH9CC8jgOxPuxqyMk70"   quoted value; ``\\"`` and ``\\\\`` escape inside quotes
    startPrice >= 400000                comparison: = != > >= < <=, spaces optional
    startPrice:400000 TO 900000         inclusive numeric range
    a:x AND (b:y OR NOT c:z)            AND binds tighter than OR; NOT applies to the next term

Keywords (``AND``, ``OR``, ``NOT``, ``TO``) are upper-case. Attribute names are identifiers with dotted nested
paths (``floorPlans.startPrice``), or a quoted name (``"my attr":x``). An unquoted value is any run of
characters other than whitespace, parentheses, ``:`` and ``"`` that is not a bare keyword.

Public API:

* AST: :class:`Match`, :class:`Range`, :class:`Compare`, :class:`Not`, :class:`And`, :class:`Or`, ``Expr``.
* :func:`parse` text -> ``Expr | None`` (raises :class:`FilterSyntaxError`, never a lark exception).
* :func:`compile_predicate` / :func:`evaluate`: the reference semantics over plain ``dict`` records.
* :func:`to_query` and the builders :func:`eq`, :func:`any_of`, :func:`between`, :func:`compare`,
  :func:`and_`, :func:`or_`, :func:`not_`, :func:`from_selection`.
* :func:`attributes`: the attribute paths an expression uses.
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Final, Literal, TypeAlias, get_args

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

__all__ = [
    "MAX_DEPTH",
    "MAX_LENGTH",
    "UNIT_FIELDS",
    "And",
    "Compare",
    "CompareOp",
    "Expr",
    "FilterSyntaxError",
    "Match",
    "Not",
    "Or",
    "Predicate",
    "Range",
    "and_",
    "any_of",
    "attributes",
    "between",
    "compare",
    "compile_predicate",
    "eq",
    "evaluate",
    "fold_text",
    "from_selection",
    "not_",
    "or_",
    "parse",
    "to_query",
]

MAX_LENGTH: Final = 4096
"""Longest accepted ``filterQuery``, in characters."""
MAX_DEPTH: Final = 64
"""Deepest accepted nesting of parentheses."""
UNIT_FIELDS: Final[tuple[str, ...]] = (
    "numberOfBedrooms",
    "numberOfBathrooms",
    "squareFeet",
    "startPrice",
    "status",
    "floorPlanType",
    "exposure",
    "contactForPricing",
)
"""The fields of one floor plan that a ``unitFilter`` may name (the same grammar, evaluated per floor plan)."""

CompareOp: TypeAlias = Literal["=", "!=", "<", "<=", ">", ">="]
_COMPARE_OPS: Final[frozenset[str]] = frozenset(get_args(CompareOp))
KEYWORDS: Final[frozenset[str]] = frozenset({"AND", "OR", "NOT", "TO"})

# ----------------------------------------------------------------------------------------------------------
# Errors
# ----------------------------------------------------------------------------------------------------------


class FilterSyntaxError(ValueError):
    """A ``filterQuery`` that cannot be parsed.

    ``position`` is the 0-based character offset into the original text where the problem is (``len(text)``
    for an unexpected end of input); ``message`` is the human-readable description, which already names the
    position. ``str(err)`` is ``"filterQuery: " + message``.
    """

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"filterQuery: {message}")
        self.message = message
        self.position = position


# ----------------------------------------------------------------------------------------------------------
# AST
# ----------------------------------------------------------------------------------------------------------


def _check_attr(attr: object) -> None:
    if not isinstance(attr, str) or not attr:
        raise ValueError(f"attribute name must be a non-empty string, not {attr!r}")


def _check_number(value: object, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be an int or float, not {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{what} must be finite, not {value!r}")


@dataclass(frozen=True, slots=True)
class Match:
    """``attr:value`` — the value as written, without quotes or escapes."""

    attr: str
    value: str

    def __post_init__(self) -> None:
        _check_attr(self.attr)
        if not isinstance(self.value, str):
            raise TypeError(f"Match value must be a string, not {self.value!r} (use eq() to convert)")


@dataclass(frozen=True, slots=True)
class Range:
    """``attr:low TO high`` — inclusive numeric range; ``low <= high``."""

    attr: str
    low: float
    high: float

    def __post_init__(self) -> None:
        _check_attr(self.attr)
        _check_number(self.low, "range low")
        _check_number(self.high, "range high")
        if self.low > self.high:
            raise ValueError(f"range low {self.low!r} is above high {self.high!r}")


@dataclass(frozen=True, slots=True)
class Compare:
    """``attr op number``; ``op`` is one of ``= != < <= > >=``."""

    attr: str
    op: CompareOp
    value: float

    def __post_init__(self) -> None:
        _check_attr(self.attr)
        if self.op not in _COMPARE_OPS:
            raise ValueError(f"unknown comparison operator {self.op!r}")
        _check_number(self.value, "comparison value")


@dataclass(frozen=True, slots=True)
class Not:
    """``NOT expr``."""

    expr: Expr

    def __post_init__(self) -> None:
        if not isinstance(self.expr, _EXPR_TYPES):
            raise TypeError(f"Not needs an expression, not {self.expr!r}")


def _flatten(kind: type[And] | type[Or], items: Iterable[Expr]) -> tuple[Expr, ...]:
    out: list[Expr] = []
    for item in items:
        if isinstance(item, kind):
            out.extend(item.items)
        elif isinstance(item, _EXPR_TYPES):
            out.append(item)
        else:
            raise TypeError(f"{kind.__name__} items must be expressions, not {item!r}")
    if len(out) < 2:
        raise ValueError(f"{kind.__name__} needs at least two items (and_()/or_() accept any number)")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class And:
    """Conjunction. Always flat (no ``And`` directly inside) and of at least two items; the constructor
    flattens nested ``And`` items and rejects fewer than two."""

    items: tuple[Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", _flatten(And, self.items))


@dataclass(frozen=True, slots=True)
class Or:
    """Disjunction. Always flat (no ``Or`` directly inside) and of at least two items; the constructor
    flattens nested ``Or`` items and rejects fewer than two."""

    items: tuple[Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", _flatten(Or, self.items))


Expr: TypeAlias = Match | Range | Compare | Not | And | Or
_EXPR_TYPES: Final = (Match, Range, Compare, Not, And, Or)

# ----------------------------------------------------------------------------------------------------------
# Grammar and parser
# ----------------------------------------------------------------------------------------------------------

# Character classes shared by the grammar and the renderer, so that whatever to_query() writes bare is exactly
# what the lexer reads back as one token.
_KW = r"(?:AND|OR|NOT|TO)"
_ATTR_PATTERN = rf"(?!{_KW}(?![\w.]))[^\W\d]\w*(?:\.[^\W\d]\w*)*"
_BARE_PATTERN = rf'(?!{_KW}(?![^\s():"]))[^\s():"]+'
_NUMBER_CORE = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"

_GRAMMAR = rf"""
?start: or_expr
?or_expr: and_expr (OR and_expr)*
?and_expr: term (AND term)*
?term: atom
     | NOT atom -> negation
?atom: group | match | range | compare
group: LPAR or_expr RPAR
match: attr COLON value
range: attr COLON value TO NUMBER
compare: attr OP NUMBER
attr: ATTR | QUOTED
value: BARE | QUOTED

AND: /AND(?![^\s():"])/
OR: /OR(?![^\s():"])/
NOT: /NOT(?![^\s():"])/
TO: /TO(?![^\s():"])/
LPAR: "("
RPAR: ")"
COLON: ":"
OP: /[<>!]=|[<>=]/
NUMBER: /{_NUMBER_CORE}(?![^\s()])/
QUOTED: /"(?:[^"\\]|\\.)*"/s
ATTR: /{_ATTR_PATTERN}/
BARE.2: /{_BARE_PATTERN}/
WS: /\s+/
%ignore WS
"""

_PARSER: Final = Lark(_GRAMMAR, parser="lalr", lexer="contextual", start="start")

_ATTR_RE: Final = re.compile(_ATTR_PATTERN)
_BARE_RE: Final = re.compile(_BARE_PATTERN)
_NUMBER_RE: Final = re.compile(_NUMBER_CORE)
_ESCAPE_RE: Final = re.compile(r"\\(.)", re.DOTALL)

_TERMINAL_NAMES: Final[dict[str, str]] = {
    "ATTR": "an attribute name",
    "QUOTED": "a quoted string",
    "BARE": "a value",
    "NUMBER": "a number",
    "COLON": "':'",
    "OP": "a comparison operator",
    "LPAR": "'('",
    "RPAR": "')'",
    "AND": "AND",
    "OR": "OR",
    "NOT": "NOT",
    "TO": "TO",
    "$END": "end of input",
}


def _unescape(quoted: str) -> str:
    """Strip the quotes; ``\\"`` is a quote, ``\\\\`` a backslash, any other backslash is kept as written."""

    def repl(m: re.Match[str]) -> str:
        c = m.group(1)
        return c if c in '"\\' else m.group(0)

    return _ESCAPE_RE.sub(repl, quoted[1:-1])


def _parse_number(text: str) -> int | float | None:
    """A number written as the grammar allows (sign, decimals, exponent): int when written without ``.`` or
    exponent, else float. None if not a number, or beyond what a float holds (a 310-digit integer): the stores
    compare numbers as floats, and such a value cannot be one."""
    if not _NUMBER_RE.fullmatch(text):
        return None
    try:
        if any(c in text for c in ".eE"):
            f = float(text)
            return f if math.isfinite(f) else None
        whole = int(text)
        float(whole)
    except OverflowError:
        return None
    return whole


def _describe(token: Token) -> str:
    if token.type == "$END":
        return "end of input"
    text = str(token.value)
    if len(text) > 30:
        text = text[:27] + "..."
    return f"'{text}'"


def _join_alternatives(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def _syntax_error_from_token(text: str, token: Token, expected: set[str]) -> FilterSyntaxError:
    at_end = token.type == "$END"
    pos = len(text) if at_end else int(token.start_pos or 0)
    found = _describe(token) if not at_end else "end of input"
    before = text[:pos].rstrip()
    if expected and expected <= {"BARE", "QUOTED"}:
        return FilterSyntaxError(f"expected a value after ':' at position {pos}, found {found}", pos)
    if expected == {"NUMBER"}:
        if before.endswith("TO"):
            after = "'TO'"
        else:
            op = before[len(before.rstrip("<>=!")) :]
            after = f"'{op}'" if op else "the operator"
        return FilterSyntaxError(f"expected a number after {after} at position {pos}, found {found}", pos)
    if "COLON" in expected and "OP" in expected:
        want = "':' or a comparison operator (= != < <= > >=) after the attribute name"
    elif "ATTR" in expected:
        want = "an attribute name, NOT or '('" if "NOT" in expected else "an attribute name or '(' after NOT"
    else:
        # TO is only meaningful after a number; naming it after every value would mislead.
        order = ["AND", "OR", "RPAR", "$END"]
        names = [_TERMINAL_NAMES[n] for n in order if n in expected]
        names += sorted(_TERMINAL_NAMES.get(n, n) for n in expected if n not in order and n != "TO")
        want = _join_alternatives(names) if names else ""
    message = f"unexpected {found} at position {pos}"
    if want:
        message += f"; expected {want}"
    return FilterSyntaxError(message, pos)


def _syntax_error(text: str, exc: LarkError) -> FilterSyntaxError:
    if isinstance(exc, UnexpectedToken):
        expected = set(exc.expected or ())
        if exc.interactive_parser is not None:
            # The LALR state's lookahead set can be wider than what is really acceptable; ask the parser.
            with contextlib.suppress(LarkError):
                expected = set(exc.interactive_parser.accepts()) or expected
        return _syntax_error_from_token(text, exc.token, expected)
    if isinstance(exc, UnexpectedCharacters):
        pos = int(exc.pos_in_stream)
        if pos < len(text) and text[pos] == '"':
            what = "attribute name" if "ATTR" in (exc.allowed or ()) else "value"
            return FilterSyntaxError(f"unterminated quoted {what} starting at position {pos}", pos)
        char = text[pos] if pos < len(text) else ""
        return FilterSyntaxError(f"unexpected character {char!r} at position {pos}", pos)
    if isinstance(exc, UnexpectedEOF):
        return FilterSyntaxError(f"unexpected end of input at position {len(text)}", len(text))
    return FilterSyntaxError("cannot parse the expression at position 0", 0)  # pragma: no cover


def _check_depth(tree: Tree[Token]) -> None:
    stack: list[tuple[Tree[Token], int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if node.data == "group":
            depth += 1
            if depth > MAX_DEPTH:
                lpar = node.children[0]
                pos = int(lpar.start_pos or 0) if isinstance(lpar, Token) else 0
                message = f"parentheses nested deeper than {MAX_DEPTH} levels at position {pos}"
                raise FilterSyntaxError(message, pos)
        stack.extend((child, depth) for child in node.children if isinstance(child, Tree))


def _leaf(tree: Tree[Token]) -> Token:
    token = tree.children[0]
    assert isinstance(token, Token)
    return token


def _attr_name(tree: Tree[Token]) -> str:
    token = _leaf(tree)
    if token.type == "QUOTED":
        name = _unescape(token.value)
        if not name:
            pos = int(token.start_pos or 0)
            raise FilterSyntaxError(f"empty attribute name at position {pos}", pos)
        return name
    return str(token.value)


def _number_token(token: Token, what: str) -> int | float:
    pos = int(token.start_pos or 0)
    value = _parse_number(token.value) if token.type != "QUOTED" else None
    if value is None:
        if token.type != "QUOTED" and _NUMBER_RE.fullmatch(token.value):
            shown = token.value if len(token.value) <= 24 else f"{token.value[:20]}… ({len(token.value)} characters)"
            raise FilterSyntaxError(f"{what} {shown} is out of range at position {pos}", pos)
        raise FilterSyntaxError(f"{what} must be a number, found {_describe(token)} at position {pos}", pos)
    return value


def _build(node: Tree[Token]) -> Expr:
    data = node.data
    subtrees = [c for c in node.children if isinstance(c, Tree)]
    if data == "or_expr":
        return Or(tuple(_build(c) for c in subtrees))
    if data == "and_expr":
        return And(tuple(_build(c) for c in subtrees))
    if data == "negation":
        return Not(_build(subtrees[0]))
    if data == "group":
        return _build(subtrees[0])
    attr = _attr_name(subtrees[0])
    if data == "match":
        token = _leaf(subtrees[1])
        return Match(attr, _unescape(token.value) if token.type == "QUOTED" else str(token.value))
    if data == "range":
        low_token = _leaf(subtrees[1])
        high_token = node.children[-1]
        assert isinstance(high_token, Token)
        low = _number_token(low_token, "range low")
        high = _number_token(high_token, "range high")
        if low > high:
            pos = int(low_token.start_pos or 0)
            raise FilterSyntaxError(
                f"range low {low_token.value} is above high {high_token.value} at position {pos}", pos
            )
        return Range(attr, low, high)
    if data == "compare":
        op_token, number_token = node.children[1], node.children[2]
        assert isinstance(op_token, Token) and isinstance(number_token, Token)
        return Compare(attr, op_token.value, _number_token(number_token, "comparison value"))  # type: ignore[arg-type]
    raise AssertionError(f"unexpected parse node {data!r}")  # pragma: no cover


def parse(text: str | None) -> Expr | None:
    """Parse a ``filterQuery`` into its normalised AST; ``None`` for ``None``, empty or blank text.

    Raises :class:`FilterSyntaxError` (and nothing else) for any bad expression, including one longer than
    :data:`MAX_LENGTH` characters or with parentheses nested deeper than :data:`MAX_DEPTH`.
    """
    if text is None or not text.strip():
        return None
    if len(text) > MAX_LENGTH:
        message = f"expression is {len(text)} characters long, above the limit of {MAX_LENGTH}"
        raise FilterSyntaxError(f"{message} at position {MAX_LENGTH}", MAX_LENGTH)
    return _parse_valid_length(text)


PARSED_CACHE_SIZE = 1024
"""Expressions kept parsed: a dashboard's filters come back page after page, and parsing one costs more than
evaluating it over the index. Their trees are immutable, so one may serve every request that sends its text."""


@lru_cache(maxsize=PARSED_CACHE_SIZE)
def _parse_valid_length(text: str) -> Expr:
    try:
        tree = _PARSER.parse(text)
    except LarkError as exc:
        raise _syntax_error(text, exc) from None
    _check_depth(tree)
    return _build(tree)


# ----------------------------------------------------------------------------------------------------------
# Evaluator
# ----------------------------------------------------------------------------------------------------------

Predicate: TypeAlias = Callable[[Mapping[str, Any]], bool]
_Getter: TypeAlias = Callable[[Mapping[str, Any]], "list[Any] | tuple[Any, ...]"]
_NO_VALUES: Final[tuple[Any, ...]] = ()


def _make_getter(attr: str) -> _Getter:
    """All leaf values of ``attr`` in a record: dotted paths walk into dicts and, element-wise, into lists of
    dicts; a list leaf contributes its elements; ``None`` contributes nothing."""
    parts = attr.split(".")
    if len(parts) == 1:
        key = parts[0]

        def get_plain(record: Mapping[str, Any]) -> list[Any] | tuple[Any, ...]:
            v = record.get(key)
            if v is None:
                return _NO_VALUES
            if type(v) is list or type(v) is tuple:
                return v
            return (v,)

        return get_plain

    def get_path(record: Mapping[str, Any]) -> list[Any] | tuple[Any, ...]:
        current: list[Any] = [record]
        for part in parts:
            following: list[Any] = []
            for node in current:
                if isinstance(node, Mapping):
                    v = node.get(part)
                    if v is None:
                        continue
                    if isinstance(v, list | tuple):
                        following.extend(v)
                    else:
                        following.append(v)
            if not following:
                return _NO_VALUES
            current = following
        return current

    return get_path


def _as_number(x: Any) -> int | float | None:
    """The numeric reading of a record value: an int/float (never a bool) or a non-empty string holding a
    finite number; None otherwise."""
    t = type(x)
    if t is int or t is float:
        return x  # type: ignore[no-any-return]
    if t is str:
        if not x:
            return None
        try:
            f = float(x)
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return x
    if isinstance(x, str):
        return _as_number(str(x))
    return None


_SEPARATORS = re.compile(r"[\s_-]+")


@functools.lru_cache(maxsize=65536)
def fold_text(value: str) -> str:
    """The form in which string values are compared: case ignored, and runs of spaces, hyphens and underscores
    counted as one separator (``Pre-Construction`` matches ``Pre Construction`` and ``pre-construction``)."""
    return _SEPARATORS.sub(" ", value.casefold()).strip()


def _match_predicate(expr: Match) -> Predicate:
    get = _make_getter(expr.attr)
    value = expr.value
    folded = fold_text(value)
    bool_target: bool | None = {"true": True, "1": True, "false": False, "0": False}.get(folded)
    num_target = _parse_number(value.strip())

    def test(x: Any) -> bool:
        t = type(x)
        if t is str:
            return x == value or fold_text(x) == folded  # type: ignore[no-any-return]
        if t is bool:
            return x is bool_target
        if t is int or t is float:
            return num_target is not None and x == num_target  # type: ignore[no-any-return]
        if isinstance(x, str):
            return fold_text(str(x)) == folded
        if isinstance(x, bool):
            return bool(x) is bool_target
        if isinstance(x, int | float):
            return num_target is not None and x == num_target
        return False

    def pred(record: Mapping[str, Any]) -> bool:
        return any(map(test, get(record)))

    return pred


_OPERATORS: Final[dict[str, Callable[[Any, Any], bool]]] = {
    "=": operator.eq,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _numeric_predicate(attr: str, test: Callable[[int | float], bool]) -> Predicate:
    get = _make_getter(attr)

    def holds(x: Any) -> bool:
        n = _as_number(x)
        return n is not None and test(n)

    def pred(record: Mapping[str, Any]) -> bool:
        return any(map(holds, get(record)))

    return pred


def _compile(expr: Expr) -> Predicate:
    if isinstance(expr, Match):
        return _match_predicate(expr)
    if isinstance(expr, Compare):
        if expr.op == "!=":
            equal = _compile(Compare(expr.attr, "=", expr.value))
            return lambda record: not equal(record)
        fn, v = _OPERATORS[expr.op], expr.value
        return _numeric_predicate(expr.attr, lambda n: fn(n, v))
    if isinstance(expr, Range):
        low, high = expr.low, expr.high
        return _numeric_predicate(expr.attr, lambda n: low <= n <= high)
    if isinstance(expr, Not):
        inner = _compile(expr.expr)
        return lambda record: not inner(record)
    if isinstance(expr, And):
        preds = tuple(_compile(e) for e in expr.items)
        if len(preds) == 2:
            a, b = preds
            return lambda record: a(record) and b(record)

        def all_of(record: Mapping[str, Any]) -> bool:
            return all(p(record) for p in preds)

        return all_of
    if isinstance(expr, Or):
        preds = tuple(_compile(e) for e in expr.items)

        def one_of(record: Mapping[str, Any]) -> bool:
            return any(p(record) for p in preds)

        return one_of
    raise TypeError(f"not a filter expression: {expr!r}")


def _always(record: Mapping[str, Any]) -> bool:
    return True


@lru_cache(maxsize=512)
def compile_predicate(expr: Expr | None) -> Predicate:
    """Compile ``expr`` once into a fast ``record -> bool`` closure (cached per expression).

    Semantics, the reference for every other implementation:

    * An attribute resolves to all its leaf values: a dotted path walks into dicts and element-wise into
      lists of dicts (``floorPlans.startPrice`` is every floor plan's price); a list leaf contributes its
      elements. A missing attribute, ``None`` or an empty list has no values, and then Match, Compare and
      Range are false.
    * ``Match`` holds when any value matches: a string value ignoring case and treating spaces, hyphens and
      underscores alike (:func:`fold_text`); a bool
      value against the filter value ``true``/``false``/``1``/``0`` (case-insensitive); an int/float value
      when the filter value, read as a number, is equal. A string holding digits is still compared as a
      string.
    * ``Compare`` and ``Range`` are numeric and hold when any value satisfies them; a value counts if it is an
      int/float (not bool) or a non-empty string holding a finite number (``"750"``); ``""`` is no value.
    * ``attr != v`` is defined as ``NOT (attr = v)``: it holds when no value equals ``v`` — in particular when
      the attribute is missing.
    * ``None`` (no filter) matches every record.
    """
    if expr is None:
        return _always
    return _compile(expr)


def evaluate(expr: Expr | None, record: Mapping[str, Any]) -> bool:
    """Whether ``record`` satisfies ``expr`` (see :func:`compile_predicate` for the semantics)."""
    return compile_predicate(expr)(record)


# ----------------------------------------------------------------------------------------------------------
# Rendering and builders
# ----------------------------------------------------------------------------------------------------------


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _render_attr(attr: str) -> str:
    return attr if _ATTR_RE.fullmatch(attr) else _quote(attr)


def _render_value(value: str) -> str:
    return value if "\\" not in value and _BARE_RE.fullmatch(value) else _quote(value)


def _render_number(value: float) -> str:
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, int):
        return str(int(value))
    return repr(float(value))


def _render(expr: Expr) -> str:
    if isinstance(expr, Match):
        return f"{_render_attr(expr.attr)}:{_render_value(expr.value)}"
    if isinstance(expr, Compare):
        return f"{_render_attr(expr.attr)} {expr.op} {_render_number(expr.value)}"
    if isinstance(expr, Range):
        return f"{_render_attr(expr.attr)}:{_render_number(expr.low)} TO {_render_number(expr.high)}"
    if isinstance(expr, Not):
        inner = _render(expr.expr)
        return f"NOT ({inner})" if isinstance(expr.expr, Not | And | Or) else f"NOT {inner}"
    if isinstance(expr, And):
        return " AND ".join(f"({_render(e)})" if isinstance(e, Or) else _render(e) for e in expr.items)
    if isinstance(expr, Or):
        return " OR ".join(_render(e) for e in expr.items)
    raise TypeError(f"not a filter expression: {expr!r}")


def to_query(expr: Expr | None) -> str:
    """Render ``expr`` as ``filterQuery`` text (``""`` for None) in canonical form: values quoted unless they
    are a safe bare token, minimal parentheses, numbers written so they parse back exactly.
    ``parse(to_query(e)) == e`` for every expression ``e``."""
    return "" if expr is None else _render(expr)


def eq(attr: str, value: str | bool | int | float) -> Match:
    """``attr:value``; a bool becomes ``true``/``false``, a number its exact decimal text."""
    if isinstance(value, bool):
        return Match(attr, "true" if value else "false")
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"cannot match a non-finite number: {value!r}")
        return Match(attr, _render_number(value))
    return Match(attr, value)


def and_(*exprs: Expr | None) -> Expr | None:
    """Conjunction of the expressions, ignoring None; flattened; one item is returned bare, none is None."""
    items = [e for e in exprs if e is not None]
    if not items:
        return None
    return items[0] if len(items) == 1 else And(tuple(items))


def or_(*exprs: Expr | None) -> Expr | None:
    """Disjunction of the expressions, ignoring None; flattened; one item is returned bare, none is None."""
    items = [e for e in exprs if e is not None]
    if not items:
        return None
    return items[0] if len(items) == 1 else Or(tuple(items))


def not_(expr: Expr) -> Expr:
    """``NOT expr``; a double negation collapses (``not_(not_(e)) == e``). Negating None (no filter, which
    matches everything) is refused with ValueError rather than silently meaning "match everything"."""
    if expr is None:
        raise ValueError("cannot negate an empty filter")
    return expr.expr if isinstance(expr, Not) else Not(expr)


def any_of(attr: str, values: Iterable[str | bool | int | float]) -> Expr | None:
    """``attr:v1 OR attr:v2 ...`` in the given order; a single Match for one value, None for none."""
    return or_(*(eq(attr, v) for v in values))


def between(attr: str, low: float | None = None, high: float | None = None) -> Expr | None:
    """Inclusive bounds: a Range for both, ``>=`` / ``<=`` for one, None for neither."""
    if low is not None and high is not None:
        return Range(attr, low, high)
    if low is not None:
        return Compare(attr, ">=", low)
    if high is not None:
        return Compare(attr, "<=", high)
    return None


def compare(attr: str, op: CompareOp, value: float) -> Compare:
    """``attr op value``."""
    return Compare(attr, op, value)


_EMPTY_FACETS: Final[Mapping[str, Iterable[str | bool]]] = MappingProxyType({})
_EMPTY_RANGES: Final[Mapping[str, tuple[float | None, float | None]]] = MappingProxyType({})


def from_selection(
    facets: Mapping[str, Iterable[str | bool]] = _EMPTY_FACETS,
    ranges: Mapping[str, tuple[float | None, float | None]] = _EMPTY_RANGES,
) -> Expr | None:
    """The filter for a dashboard selection: OR within one facet's values, AND across facets and ranges.

    Clauses are ordered by attribute name (a facet before a range on the same attribute), values in the
    given order; facets without values and ranges without bounds are left out. None when nothing is selected.
    """
    clauses: list[tuple[str, int, Expr]] = []
    for attr, values in facets.items():
        clause = any_of(attr, values)
        if clause is not None:
            clauses.append((attr, 0, clause))
    for attr, (low, high) in ranges.items():
        clause = between(attr, low, high)
        if clause is not None:
            clauses.append((attr, 1, clause))
    clauses.sort(key=lambda c: (c[0], c[1]))
    return and_(*(c[2] for c in clauses))


def numeric_bounds(expr: Compare | Range) -> tuple[float, float]:
    """The inclusive bounds a comparison (not ``!=``) or range allows."""
    if isinstance(expr, Range):
        return float(expr.low), float(expr.high)
    value = float(expr.value)
    return {
        "=": (value, value),
        "<": (-math.inf, math.nextafter(value, -math.inf)),
        "<=": (-math.inf, value),
        ">": (math.nextafter(value, math.inf), math.inf),
        ">=": (value, math.inf),
    }[expr.op]


def attributes(expr: Expr | None) -> set[str]:
    """The attribute paths ``expr`` uses."""
    found: set[str] = set()
    stack: list[Expr] = [] if expr is None else [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Not):
            stack.append(e.expr)
        elif isinstance(e, And | Or):
            stack.extend(e.items)
        else:
            found.add(e.attr)
    return found
