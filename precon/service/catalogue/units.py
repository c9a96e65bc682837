"""The units of a building sold by the unit, as the production service lists them in each floor plan
(``floorPlans[].units[]``): numbers by floor and stack, prices that rise with the floor and the view, and sales
that took the cheaper units of the early releases first.

Each listing's units are drawn from a generator of their own (seeded by the listing's id), so adding them moved no
other draw of the catalogue.
"""

from __future__ import annotations

import math
from random import Random
from typing import Any

from precon.service.catalogue.developments import CONDO_LIKE
from precon.service.catalogue.prices import round_price

SOLD_BY_THE_UNIT = CONDO_LIKE | {"Townhouse"}
"""Buildings whose floor plans list their units: condos, lofts, mixed use, stacked and row towns."""

FLOOR_PREMIUM = 0.006
"""Each floor up adds this much to a unit's price."""
RESERVED_ODDS = 0.0016
"""A unit's odds of being reserved (not yet firm) in a project that has sold: about the share the market's weekly
simulation holds reserved at any time (a fifth of a week's sales, firming up at 35 % a week). At 3 %, twenty times
that, a simulated history's first month firmed up a stock of reservations no later month had, and the Market page
drew it as a spike of sales."""
SANDBOX_RESERVED_ODDS = 0.03
"""The sandbox's: its bytes are pinned, served to clients who compare against them (and it has no history)."""
VIEW_PREMIUM = {"S": 0.03, "SW": 0.025, "SE": 0.02, "W": 0.01, "E": 0.01, "N": -0.01, "NE": -0.005, "NW": -0.005}
"""What a plan's best exposure adds to its units' prices (a south view most)."""

AVAILABLE, RESERVED, SOLD = "Available", "Reserved", "Sold"


def _sold_share(rand: Any, selling: str) -> float:
    """How much of the building has sold, by the listing's selling status."""
    if selling == "Sold Out":
        return 1.0
    if selling == "Selling Now":
        return 0.15 + 0.75 * rand()
    return 0.0


def _positions(total: int, floors: int, plans: int, ground: bool) -> list[tuple[int, int]]:
    """(floor, stack) of each unit: towers from their second floor up, stack by stack; towns on one floor."""
    if ground:
        return [(1, k + 1) for k in range(total)]
    first = 2 if floors > 3 else 1
    storeys = max(1, floors - first + 1)
    stacks = max(plans, math.ceil(total / storeys))
    return [(first + k // stacks, k % stacks + 1) for k in range(total)]


def building_floors(total: int, floors: int, plans: int, primary: str) -> int:
    """The floors a building sold by the unit has, as its units fill them: a tower's units from its second floor up,
    a stack per floor plan at least, reach only so high; a building said to be taller than its highest unit read
    "Floors 60" beside an inventory that stops at floor 22. Houses and towns keep their storeys (their units are
    side by side, on one floor each)."""
    if primary not in SOLD_BY_THE_UNIT or plans == 0 or primary == "Townhouse":
        return floors
    return min(floors, _positions(max(total, plans), floors, plans, ground=False)[-1][0])


def _view_premium(plan: dict[str, Any]) -> float:
    exposure = plan.get("exposure") or []
    return max((VIEW_PREMIUM.get(direction, 0.0) for direction in exposure), default=0.0)


def draw_units(
    lid: str,
    plans: list[dict[str, Any]],
    total: int,
    floors: int,
    primary: str,
    selling: str,
    reserved_odds: float = RESERVED_ODDS,
) -> None:
    """Gives each of ``plans`` its units (``total`` in all, on ``floors``), then the plan's status and start price
    from them: ``Available`` while one of its units is, its lowest available unit's price (its lowest price
    once sold out). Plans without a published price list their units without one. ``reserved_odds``: a unit's
    odds of being reserved in a project that has sold."""
    if not plans or primary not in SOLD_BY_THE_UNIT:
        return
    rng = Random(f"precon/units/{lid}")
    rand = rng.random
    ground = primary == "Townhouse"
    positions = _positions(max(total, len(plans)), floors, len(plans), ground)
    stacks = max(stack for _, stack in positions)
    # Per stack, what its units share: their plan's units, price and view (read once, not once per unit).
    owner = [plans[(stack - 1) % len(plans)] for stack in range(1, stacks + 1)]
    units: dict[int, list[dict[str, Any]]] = {id(plan): [] for plan in plans}
    stack_units = [units[id(plan)] for plan in owner]
    stack_base = [plan["startPrice"] for plan in owner]
    stack_view = [_view_premium(plan) for plan in owner]
    sold_share = _sold_share(rand, selling)
    lowest_floor = positions[0][0]
    for floor, stack in positions:
        base = stack_base[stack - 1]
        price: int | None = None
        if base != "":
            lift = 1 + FLOOR_PREMIUM * (floor - lowest_floor) + stack_view[stack - 1]
            price = round_price(base * lift * (0.99 + 0.02 * rand()), 0.5)
        number = str(stack) if ground else f"{floor}{stack:02d}"
        stack_units[stack - 1].append({"unitNumber": number, "floor": str(floor), "price": price})
    _draw_statuses(rand, [u for plan in plans for u in units[id(plan)]], sold_share, reserved_odds)
    for plan in plans:
        finish_plan(plan, units[id(plan)])


def _draw_statuses(rand: Any, units: list[dict[str, Any]], sold_share: float, reserved_odds: float) -> None:
    """Sales took the cheaper units first (the early releases' prices), not strictly: a unit's odds of having sold
    fall with its price's rank in the building."""
    keys = [(unit["price"] or 0, k) for k, unit in enumerate(units)]
    rank_of = [0.0] * len(units)
    last = max(1, len(units) - 1)
    for r, k in enumerate(sorted(range(len(units)), key=keys.__getitem__)):
        rank_of[k] = r / last
    reserved = reserved_odds * (sold_share > 0)
    for k, unit in enumerate(units):
        odds = 1.0 if sold_share >= 1 else min(1.0, sold_share * (1.6 - 1.2 * rank_of[k]))
        draw = rand()
        unit["status"] = SOLD if draw < odds else RESERVED if draw < odds + reserved else AVAILABLE


def finish_plan(plan: dict[str, Any], units: list[dict[str, Any]]) -> None:
    units.sort(key=lambda u: (int(u["floor"]), u["unitNumber"]))
    plan["units"] = units
    available = [u["price"] for u in units if u["status"] == AVAILABLE]
    plan["status"] = AVAILABLE if available else "Sold Out"
    if plan["startPrice"] != "":
        priced = [p for p in available if p is not None] or [u["price"] for u in units if u["price"] is not None]
        plan["startPrice"] = min(priced)


def sell_out(plan: dict[str, Any]) -> None:
    """Every unit of the plan sold (a sold-out listing's plan), its status and price following."""
    plan["status"] = "Sold Out"
    if plan.get("units"):
        for unit in plan["units"]:
            unit["status"] = SOLD
        finish_plan(plan, plan["units"])


def withdraw_prices(plan: dict[str, Any]) -> None:
    """The plan's price no longer published: nor its units'."""
    plan["startPrice"] = ""
    plan["contactForPricing"] = True
    for unit in plan.get("units") or ():
        unit["price"] = None
