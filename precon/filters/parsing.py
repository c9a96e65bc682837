"""Parsing a filterQuery (its lark grammar) into an expression, with errors that say where and what."""

from __future__ import annotations

import contextlib
import math
import re
from functools import lru_cache
from typing import Final

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from precon.filters.expressions import (
    MAX_DEPTH,
    MAX_LENGTH,
    And,
    Compare,
    Expr,
    FilterSyntaxError,
    Match,
    Not,
    Or,
    Range,
)

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

ATTR_RE: Final = re.compile(_ATTR_PATTERN)
BARE_RE: Final = re.compile(_BARE_PATTERN)
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


def parse_number(text: str) -> int | float | None:
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
    value = parse_number(token.value) if token.type != "QUOTED" else None
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
