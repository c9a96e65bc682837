"""The unit filters of the search that opened a listing, and the plans and units of that listing they match.

A search for "2 bedrooms under $800,000, available" finds listings with one floor plan that has all of it (the
``unitFilter`` of :meth:`FilterState.unit_expression`). Opened from such a search, the listing page keeps those
filters (the ``beds``, ``baths``, ``size``, ``price`` and ``available`` address parameters, as the search writes
them) and marks:

* the plans the search's ``unitFilter`` holds for: the plans the service names in ``_matchedFloorPlans``;
* among their units, the ones a person asking that would want: for sale ("available": ``units.status:Available``)
  and priced within the price range (``units.price``). These are the units of :func:`unit_expression`, evaluated
  as the service evaluates a ``unitFilter`` naming ``units.*`` (:mod:`precon.filters.plans`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from precon import filters
from precon.dashboard.filter_state import AVAILABLE_PARAM, AVAILABLE_STATUS, UNIT_RANGES, FilterState
from precon.filters import Expr

UNIT_PARAMS: tuple[str, ...] = (*(spec.param for spec in UNIT_RANGES), AVAILABLE_PARAM)
"""The address parameters of the unit filters, which travel from a search to the listing it opens."""


def unit_state(params: Mapping[str, str | Sequence[str]]) -> tuple[FilterState, list[str]]:
    """The unit filters an address names (everything else in it left aside), and what could not be used."""
    return FilterState.from_params({name: value for name, value in params.items() if name in UNIT_PARAMS})


def unit_params(params: Mapping[str, str | Sequence[str]]) -> dict[str, str]:
    """The address parameters of the unit filters among ``params``, as a search writes them (unusable ones left
    out): what a listing opened from the search carries."""
    return unit_state(params)[0].to_params()


def plan_expression(state: FilterState) -> Expr | None:
    """What a plan must hold to match: the search's own ``unitFilter``."""
    return state.unit_expression()


def unit_expression(state: FilterState) -> Expr | None:
    """What a unit of a matching plan must hold too: for sale when "available" is on, within the price range."""
    clauses: list[Expr | None] = [state.unit_expression()]
    if state.available:
        clauses.append(filters.eq("units.status", AVAILABLE_STATUS))
    low, high = state.ranges.get("price", (None, None))
    if (low, high) != (None, None):
        clauses.append(filters.between("units.price", low, high))
    return filters.and_(*clauses)


@dataclass(frozen=True)
class Marks:
    """The plans (by position in the listing) and units (plan position, unit position) that match."""

    plans: frozenset[int]
    units: frozenset[tuple[int, int]]


def marks(state: FilterState, plans: Sequence[Mapping[str, Any]]) -> Marks:
    """The plans and units of ``plans`` (as the service serves them) that ``state``'s unit filters match."""
    plan_expr, unit_expr = plan_expression(state), unit_expression(state)
    if plan_expr is None or unit_expr is None:
        return Marks(frozenset(), frozenset())
    matched = frozenset(i for i, plan in enumerate(plans) if filters.plan_matches(plan_expr, plan))
    predicate = filters.compile_predicate(unit_expr)
    units = frozenset(
        (i, j)
        for i in sorted(matched)
        for j, row in enumerate(filters.unit_rows(plans[i]))
        if row["units"] is not None and predicate(row)
    )
    return Marks(matched, units)
