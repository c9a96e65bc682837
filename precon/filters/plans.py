"""One floor plan against a ``unitFilter``: the reference every engine is held to.

A ``unitFilter`` must hold for one floor plan and, where it names a unit's fields (``units.price``,
``units.floor``, ``units.status``), for one unit of that plan: "a 2-bedroom plan with an available unit under
$700,000 on floor 10 or higher" is one unit. The expression is evaluated once per unit, over the plan's fields with
``units`` standing for that one unit; a plan without units is evaluated once with no unit, so that each
``units.*`` test fails on it (and ``NOT`` of one holds), as any test of a missing field does.

A unit is read as contract.md types it: ``status`` a string, ``price`` and ``floor`` numbers (``"6"`` is floor 6;
``floor`` is compared as a number), anything else no value.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from precon.filters.evaluation import compile_predicate
from precon.filters.expressions import Expr
from precon.filters.rendering import attributes

UNIT_PREFIX = "units."


def names_units(expr: Expr | None) -> bool:
    """Whether the expression tests a unit's field."""
    return any(name.startswith(UNIT_PREFIX) for name in attributes(expr))


class _UnitRow(Mapping[str, Any]):
    """A plan seen with ``units`` standing for one unit: the plan is not copied for each of its hundreds of units."""

    __slots__ = ("_plan", "_unit")

    def __init__(self, plan: Mapping[str, Any], unit: dict[str, Any] | None) -> None:
        self._plan = plan
        self._unit = unit

    def __getitem__(self, key: str) -> Any:
        return self._unit if key == "units" else self._plan[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._unit if key == "units" else self._plan.get(key, default)

    def __iter__(self) -> Iterator[str]:
        yield from self._plan
        if "units" not in self._plan:
            yield "units"

    def __len__(self) -> int:
        return len(self._plan) + ("units" not in self._plan)


def unit_rows(plan: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The plan once per unit (its ``units`` that one unit), or once with no unit where it lists none."""
    units = plan.get("units")
    listed = [unit for unit in units if isinstance(unit, Mapping)] if isinstance(units, list) else []
    if not listed:
        return [_UnitRow(plan, None)]
    return [_UnitRow(plan, unit_values(unit)) for unit in listed]


def unit_values(unit: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a ``unitFilter`` tests of one unit, typed as the contract types them."""
    status = unit.get("status")
    return {
        "status": status if isinstance(status, str) else None,
        "price": number_of(unit.get("price")),
        "floor": number_of(unit.get("floor")),
    }


_NUMBER_STARTS = frozenset("+-.0123456789")
"""The ASCII characters a finite number's text may start with, after spaces (``float`` also reads other digits)."""


def number_of(value: Any) -> float | None:
    """A number, or numeric text, as a finite float; anything else None (bools too). The one reading of a stored
    value as a number: the stores index with it (``as_number``), the unit filter's reference reads units with it."""
    kind = type(value)
    if kind is float or kind is int:
        number = float(value)
        return number if math.isfinite(number) else None
    if kind is str:
        if not value:
            return None
        first = value[0]
        if first.isascii() and first not in _NUMBER_STARTS and not first.isspace():
            return None  # text no number starts with: answered without the cost of float()'s exception
    elif kind is bool or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def plan_matches(expr: Expr, plan: Mapping[str, Any]) -> bool:
    """Whether the plan (with one of its units, where the expression names units) satisfies ``expr``."""
    predicate = compile_predicate(expr)
    if not names_units(expr):
        return predicate(plan)
    return any(predicate(row) for row in unit_rows(plan))


def matching_units(expr: Expr, plan: Mapping[str, Any]) -> int:
    """How many of the plan's units satisfy ``expr`` with it (0 for a plan that lists none)."""
    return plan_and_units(expr, plan)[1]


def plan_and_units(expr: Expr, plan: Mapping[str, Any]) -> tuple[bool, int]:
    """Whether the plan satisfies ``expr`` (:func:`plan_matches`), and how many of its units do
    (:func:`matching_units`), in one pass over its units."""
    predicate = compile_predicate(expr)
    if not names_units(expr):
        held = predicate(plan)
        return held, 0
    matched = units = 0
    for row in unit_rows(plan):
        if predicate(row):
            matched += 1
            units += row["units"] is not None
    return matched > 0, units if isinstance(plan.get("units"), list) else 0
