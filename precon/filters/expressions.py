"""The expression tree of a filterQuery: its node types, their checks, and the limits of a query."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, get_args

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
    "units.price",
    "units.floor",
    "units.status",
)
"""The fields of one floor plan that a ``unitFilter`` may name (the same grammar, evaluated per floor plan), and
of one unit of it (``units.*``: see :mod:`precon.filters.plans`)."""

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
