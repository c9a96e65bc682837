"""Evaluating an expression against a record: the reference semantics every engine is held to."""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Final, TypeAlias

from precon.filters.expressions import And, Compare, Expr, Match, Not, Or, Range
from precon.filters.parsing import parse_number

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


def _match_test(expr: Match) -> Callable[[Any], bool]:
    value = expr.value
    folded = fold_text(value)
    bool_target: bool | None = {"true": True, "1": True, "false": False, "0": False}.get(folded)
    num_target = parse_number(value.strip())

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

    return test


def _match_predicate(expr: Match) -> Predicate:
    get = _make_getter(expr.attr)
    test = _match_test(expr)

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


def _numeric_test(test: Callable[[int | float], bool]) -> Callable[[Any], bool]:
    def holds(x: Any) -> bool:
        n = _as_number(x)
        return n is not None and test(n)

    return holds


def _numeric_predicate(attr: str, test: Callable[[int | float], bool]) -> Predicate:
    get = _make_getter(attr)
    holds = _numeric_test(test)

    def pred(record: Mapping[str, Any]) -> bool:
        return any(map(holds, get(record)))

    return pred


@lru_cache(maxsize=512)
def value_test(expr: Match | Compare | Range) -> Callable[[Any], bool]:
    """Whether one value of ``expr``'s attribute passes it, as :func:`compile_predicate` tests each (a record passes
    a Match, a Compare other than ``!=`` or a Range when any of its values does): for an index that holds each
    distinct value once and tests it alone."""
    if isinstance(expr, Match):
        return _match_test(expr)
    if isinstance(expr, Range):
        low, high = expr.low, expr.high
        return _numeric_test(lambda n: low <= n <= high)
    if expr.op == "!=":
        raise ValueError("'!=' is NOT '=' over a record's values, not a test of one value")
    fn, v = _OPERATORS[expr.op], expr.value
    return _numeric_test(lambda n: fn(n, v))


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
