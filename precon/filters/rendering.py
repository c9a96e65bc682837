"""Writing an expression back as a filterQuery, and building expressions in code."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final

from precon.filters.expressions import And, Compare, CompareOp, Expr, Match, Not, Or, Range
from precon.filters.parsing import ATTR_RE, BARE_RE

# ----------------------------------------------------------------------------------------------------------
# Rendering and builders
# ----------------------------------------------------------------------------------------------------------


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _render_attr(attr: str) -> str:
    return attr if ATTR_RE.fullmatch(attr) else _quote(attr)


def _render_value(value: str) -> str:
    return value if "\\" not in value and BARE_RE.fullmatch(value) else _quote(value)


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
