"""Per floor plan and unit status, how many units it holds and their lowest and highest price and floor: what a
``unitFilter`` made of conditions on one unit ("an available unit under $700,000 from the 10th floor") cannot
hold without. A plan whose available units all cost more than $700,000 has no such unit, whatever else it holds.

:class:`~precon.service.search.plans.PlanIndex` asks :meth:`UnitBounds.candidates` first: the few plans left are
then tested unit by unit, instead of the millions of units of the catalogue. An expression that is not such a
conjunction (an ``OR`` or a ``NOT`` of a unit's field, a match on a price) has no bounds: every unit is tested.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from precon.filters import And, Compare, Expr, Match, Range, fold_text, names_units, numeric_bounds
from precon.filters.plans import UNIT_PREFIX

ANY_STATUS = -2
"""The bounds of every unit, whatever its status."""

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


@dataclass
class StatusBounds:
    units: IntArray
    low_price: FloatArray
    high_price: FloatArray
    low_floor: FloatArray
    high_floor: FloatArray
    first: IntArray
    """Per plan, its first row of this status (a plan's rows are ordered by status code); of any status, its first."""
    priced_floor: FloatArray
    """The highest floor of its units of this status that have a price (-inf for none)."""


def _bounds(values: FloatArray, chosen: Mask, first_row: IntArray) -> tuple[FloatArray, FloatArray]:
    known = chosen & ~np.isnan(values)
    low: FloatArray = np.minimum.reduceat(np.where(known, values, np.inf), first_row)
    high: FloatArray = np.maximum.reduceat(np.where(known, values, -np.inf), first_row)
    return low, high


class UnitBounds:
    """The bounds of each plan's units, per status code (and for every unit: :data:`ANY_STATUS`)."""

    def __init__(
        self,
        status: npt.NDArray[np.int32],
        price: FloatArray,
        floor: FloatArray,
        first_row: IntArray,
        terms: dict[str, int],
    ) -> None:
        """From the unit rows grouped by plan (each plan's a range starting at ``first_row``), and within a plan by
        status code."""
        self.terms = terms
        self.by_status: dict[int, StatusBounds] = {}
        if not len(first_row):
            return
        below = first_row + np.add.reduceat((status == -1).astype(np.int64), first_row)  # rows with no status first
        priced = ~np.isnan(price)
        for code in (ANY_STATUS, *sorted(terms.values())):
            chosen = status >= -1 if code == ANY_STATUS else status == code
            units: IntArray = np.add.reduceat(chosen.astype(np.int64), first_row)
            low_price, high_price = _bounds(price, chosen, first_row)
            low_floor, high_floor = _bounds(floor, chosen, first_row)
            priced_floor = _bounds(floor, chosen & priced, first_row)[1]
            first = first_row if code == ANY_STATUS else below
            floors = (low_floor, high_floor)
            self.by_status[code] = StatusBounds(units, low_price, high_price, *floors, first, priced_floor)
            if code != ANY_STATUS:
                below = below + units

    @classmethod
    def of_statuses(cls, terms: dict[str, int], by_status: dict[int, StatusBounds]) -> UnitBounds:
        """Bounds already made (a patch's: see :mod:`precon.service.search.plan_patch`)."""
        bounds = cls.__new__(cls)
        bounds.terms, bounds.by_status = terms, by_status
        return bounds

    def candidates(self, expr: Expr, plans: int) -> Candidates | None:
        """The plans that may hold a unit meeting ``expr``'s conditions on one unit, or None where ``expr`` is not
        a conjunction of them (a status matched, a price or floor compared) and of plan conditions."""
        status: int | None = None
        ranges = {"price": [-np.inf, np.inf], "floor": [-np.inf, np.inf]}
        on_plans: list[Expr] = []
        for item in _conjuncts(expr):
            if not names_units(item):
                on_plans.append(item)
                continue
            column = item.attr[len(UNIT_PREFIX) :] if isinstance(item, Match | Compare | Range) else ""
            if isinstance(item, Match) and column == "status":
                code = self.terms.get(fold_text(item.value), -3)  # as UnitColumns.matching reads a status
                if code == -3 or (status is not None and status != code):
                    return Candidates(np.zeros(plans, dtype=np.bool_), True, [])  # no such status, or two at once
                status = code
            elif isinstance(item, Compare | Range) and column in ranges and getattr(item, "op", "") != "!=":
                low, high = numeric_bounds(item)
                bounds = ranges[column]
                bounds[0], bounds[1] = max(bounds[0], low), min(bounds[1], high)
            else:
                return None
        found = self.by_status.get(ANY_STATUS if status is None else status)
        if found is None:
            return Candidates(np.zeros(plans, dtype=np.bool_), True, [])
        # One pass over the plans a finite bound (a plan without such a unit has bounds of +-inf, and fails it).
        tests: list[Mask] = []
        for column, (low, high) in ranges.items():
            lowest, highest = (found.low_price, found.high_price) if column == "price" else (
                found.low_floor, found.high_floor)  # fmt: skip
            if high < np.inf:
                tests.append(lowest <= high)
            if low > -np.inf:
                tests.append(highest >= low)
        mask: Mask = tests[0] if tests else found.units > 0
        for test in tests[1:]:
            mask &= test
        bounded = len(tests)
        # One bound on one column: the lowest (or highest) unit of the status meets it exactly when one does.
        exact = bounded <= 1 and (bounded == 1 or status is not None)
        price, floor = ranges["price"], ranges["floor"]
        return Candidates(mask, exact, on_plans, status, (price[0], price[1]), (floor[0], floor[1]))


@dataclass
class Candidates:
    """The plans that may hold a unit meeting a conjunction's unit conditions: exactly those that do where
    :attr:`exact` (they then meet the whole conjunction where they meet :attr:`on_plans` too)."""

    plans: Mask
    exact: bool
    on_plans: list[Expr]
    status: int | None = None
    """The status code the unit conditions ask for, None for any."""
    price: tuple[float, float] = (-np.inf, np.inf)
    floor: tuple[float, float] = (-np.inf, np.inf)
    """The inclusive bounds they put on a unit's price and floor."""


def _conjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, And):
        return [part for item in expr.items for part in _conjuncts(item)]
    return [expr]
