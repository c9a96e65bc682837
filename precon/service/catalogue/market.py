"""How the market moves a listing, one week at a time: what :mod:`precon.service.stores.simulation` applies day by
day to a catalogue.

The rules follow how the Toronto and Vancouver pre-construction markets went: brisk sales in 2022 (until rates
rose mid-year), slower in 2023, and slow from 2024, condos in the two big markets slowest, with incentives
appearing and a few price cuts; Alberta held up. Within that:

* **Sales.** Each available unit of a project in sales sells in a week with a hazard that is the market's pace of
  the year, times the building type's and the region's, times how the project's price stands against its city's
  median (cheaper sells faster), times a launch burst in the first weeks. Cheaper units go first. A share of the
  sales are reservations first, which firm up (or fall through) in the following weeks.
* **Releases** raise the prices of a few plans' available units by 2 to 5 %, more often in a hot market and once a
  good part of the building has sold; from 2024 a few **cuts** lower them by 3 to 8 %, and **incentives** appear.
* **Launches** move a pending project into sales (``Pending`` to ``Selling Now``); a project **sells out** when
  its last unit sells; from 2024 a few slow projects **stall** (sales paused: back to ``Pending``); completion dates
  **slip** by a year now and then.

A listing's builder publishes its price list once a week, on a day of its own: :func:`step` moves one listing one
such week, and answers whether anything visible changed. Every draw comes from the listing's own generator
(:func:`listing_random`), so a simulation is the same for the same seed and catalogue.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass
from datetime import date
from random import Random
from typing import Any

from precon.service.catalogue.floor_plans import priced_sizes
from precon.service.catalogue.prices import _INCENTIVES, PriceRange, round_price
from precon.service.catalogue.units import AVAILABLE, RESERVED, SOLD

SELLING, PENDING, SOLD_OUT = "Selling Now", "Pending", "Sold Out"

WEEKLY_HAZARD = 0.012
"""The share of a project's available units that sell in a week at the pace of an ordinary year (1.0)."""
LAUNCH_WEEKS, LAUNCH_BURST = 6, 7.0
"""Sales in a project's first weeks run this many times faster (the launch events that sell a tower's first floors)."""
RESERVED_SHARE = 0.2
"""Of the units taken in a week, how many are reservations first."""
FIRM_UP, FALL_THROUGH = 0.35, 0.04
"""Weekly odds that a reservation becomes a sale, or that it falls through (the unit available again)."""
SLOW_FROM = 2024
"""From this year: incentives, price cuts and stalled projects."""


def year_pace(day: date) -> float:
    """The market's pace in the month of ``day`` (1.0 an ordinary year): brisk until mid-2022, slow from 2024."""
    month = day.year * 12 + day.month - 1
    points = ((2021 * 12, 1.5), (2022 * 12 + 4, 1.7), (2023 * 12, 0.9), (2024 * 12, 0.5), (2025 * 12, 0.35))
    if month <= points[0][0]:
        return points[0][1]
    for (start, low), (end, high) in itertools.pairwise(points):
        if month < end:
            return low + (high - low) * (month - start) / (end - start)
    return 0.35 + 0.05 * min(1.0, (month - points[-1][0]) / 24)  # a slow, slight recovery


def region_pace(province: str, kind: str, day: date) -> float:
    """How the region and building type move against the market: ground-oriented homes sell faster than condos;
    from 2024 the condo towers of Ontario and British Columbia slowest, Alberta ahead."""
    pace = 1.0 if kind in ("Condo", "Mixed Use", "Loft") else 1.3
    if day.year >= SLOW_FROM:
        if province in ("Ontario", "British Columbia") and pace == 1.0:
            pace *= 0.7
        elif province == "Alberta":
            pace *= 1.5
    return pace


def listing_random(seed: int, listing_id: str, start: date) -> Random:
    """The generator of one listing's draws in a simulation that starts on ``start`` (text-seeded: independent of
    ``PYTHONHASHSEED``)."""
    return Random(f"precon/market/{seed}/{listing_id}/{start.isoformat()}")


def publishing_day(listing_id: str) -> int:
    """The day of the week (0 Monday) on which the listing's price list is published."""
    return hashlib.blake2b(listing_id.encode(), digest_size=2).digest()[0] % 7


@dataclass
class Week:
    """The week a step moves a listing through: its last day, and what the market looks like then."""

    day: date
    pace: float
    median_price: float
    """The median start price of listings in the listing's city (its price's benchmark)."""


@dataclass
class Listing:
    """The small state the simulation keeps of each listing between its steps (the document is read only when
    something happens to it)."""

    listing_id: str
    province: str
    city: str
    kind: str
    status: str
    start_price: float | None
    available: int
    reserved: int
    complete: bool
    launched_weeks: int = LAUNCH_WEEKS
    """Weeks since the project launched (while under :data:`LAUNCH_WEEKS`, its launch burst lasts)."""
    units: int = 0

    @property
    def has_units(self) -> bool:
        return self.units > 0

    @classmethod
    def of(cls, doc: dict[str, Any]) -> Listing:
        units = [u for plan in _plans(doc) for u in plan.get("units") or () if isinstance(u, dict)]
        kinds = doc.get("type") or ["Condo"]
        return cls(
            listing_id=str(doc["listingId"]),
            province=str(doc.get("state") or ""),
            city=str(doc.get("cityOrDistrict") or ""),
            kind=str(kinds[0]) if isinstance(kinds, list) and kinds else "Condo",
            status=str(doc.get("sellingStatus") or ""),
            start_price=_number(doc.get("startPrice")),
            available=sum(u.get("status") == AVAILABLE for u in units),
            reserved=sum(u.get("status") == RESERVED for u in units),
            complete=str(doc.get("constructionStatus") or "").lower() == "complete",
            units=len(units),
        )


@dataclass
class Draws:
    """What a week brings one listing, drawn from its summary alone: whether its document must be read."""

    sales: int = 0
    firmed: int = 0
    fell_through: int = 0
    launch: bool = False
    stall: bool = False
    release: bool = False
    cut: bool = False
    incentive: bool = False
    slip: bool = False
    sell_out: bool = False
    """A project whose plans list no units sells out as a whole."""

    def __bool__(self) -> bool:
        return any((self.sales, self.firmed, self.fell_through, self.launch, self.stall, self.release, self.cut,
                    self.incentive, self.slip, self.sell_out))  # fmt: skip


def draw_week(state: Listing, week: Week, rng: Random) -> Draws:
    """What happens to the listing this week (every listing draws the same number of times a week, whatever
    happens, so one event never shifts another listing's or week's draws)."""
    rand = [rng.random() for _ in range(9)]
    slow = week.day.year >= SLOW_FROM
    draws = Draws(slip=not state.complete and state.status != SOLD_OUT and rand[0] < (0.004 if slow else 0.002))
    if state.status == PENDING:
        draws.launch = rand[1] < 0.02 * (0.6 + 0.4 * week.pace)
        return draws
    if state.status != SELLING:
        return draws
    pace = week.pace * state_pace(state, week)
    if state.launched_weeks < LAUNCH_WEEKS:
        pace *= LAUNCH_BURST
    draws.sales = _poisson(state.available * min(0.5, WEEKLY_HAZARD * pace), rand[2])
    draws.firmed = _binomial(state.reserved, FIRM_UP, rand[3])
    draws.fell_through = _binomial(state.reserved - draws.firmed, FALL_THROUGH, rand[4])
    sold_share = 1 - (state.available + state.reserved) / state.units if state.units else 0.5
    draws.release = state.available > 3 and sold_share > 0.3 and rand[5] < 0.025 * week.pace
    draws.cut = slow and state.available > 3 and rand[6] < 0.004
    draws.incentive = slow and rand[7] < 0.01
    draws.stall = slow and state.launched_weeks >= 26 and sold_share < 0.5 and rand[8] < 0.0015
    if not state.has_units:  # plans without a list of units: the project sells out as a whole, in time
        draws.sales = 0
        draws.sell_out = rand[2] < 0.004 * pace
    return draws


def state_pace(state: Listing, week: Week) -> float:
    """The listing's pace against the market's: its region and type, and its price against its city's median."""
    pace = region_pace(state.province, state.kind, week.day)
    if state.start_price and week.median_price:
        pace *= min(1.8, max(0.5, (week.median_price / state.start_price) ** 0.7))
    return pace


def _poisson(mean: float, draw: float) -> int:
    """The count of a Poisson law of ``mean`` at the quantile ``draw`` (one draw, whatever the count)."""
    count, term = 0, math.exp(-mean)
    total = term
    while draw > total and count < 10_000:
        count += 1
        term *= mean / count
        total += term
    return count


def _binomial(n: int, p: float, draw: float) -> int:
    """A binomial count by its normal approximation at the quantile ``draw`` (one draw; small n exactly enough)."""
    if n <= 0:
        return 0
    if n == 1:
        return int(draw < p)
    mean, spread = n * p, math.sqrt(n * p * (1 - p))
    return max(0, min(n, round(mean + spread * _normal_quantile(draw))))


def _normal_quantile(p: float) -> float:
    p = min(max(p, 1e-9), 1 - 1e-9)
    # A logistic fit of the normal quantile: close enough for a count of reservations.
    return math.log(p / (1 - p)) / 1.702


def apply_week(
    doc: dict[str, Any], state: Listing, draws: Draws, week: Week, rng: Random, seen: UnitsSeen | None = None
) -> dict[str, Any]:
    """The listing's document after this week's draws (a new one: the plans and units that change are copies, the
    rest shared with ``doc``), and ``state`` brought up to date.

    ``seen``: what earlier weeks found of this listing's plans (see :data:`UnitsSeen`), kept by a caller that moves
    the documents it got back from here (not read again from a store)."""
    out = dict(doc)
    plans = _Plans(doc, seen)
    if draws.slip:
        _slip(out)
    if state.status == PENDING and draws.launch:
        _launch(out, week.day)
        state.launched_weeks = 0
    elif state.status == SELLING:
        _sales(plans, draws, rng)
        if draws.release or draws.cut:
            _reprice(plans, rng, up=draws.release)
        if draws.incentive:
            _add_incentive(out, rng)
        if draws.stall:
            out["sellingStatus"] = PENDING
        left = state.available + state.reserved + plans.moved.get(AVAILABLE, 0) + plans.moved.get(RESERVED, 0)
        if (state.has_units and left <= 0) or draws.sell_out:
            _sell_out(out, plans)
    out["floorPlans"] = plans.finished()
    if plans.touched:
        _ranges(out, out["floorPlans"])
    state.launched_weeks += 1
    state.status, state.start_price = str(out.get("sellingStatus") or ""), _number(out.get("startPrice"))
    state.available += plans.moved.get(AVAILABLE, 0)
    state.reserved += plans.moved.get(RESERVED, 0)
    return out


OpenUnits = dict[str, list[tuple[int, int, dict[str, Any]]]]
"""A plan's units ``Available`` and ``Reserved``: (plan position, unit position, unit) by status, in order."""
UnitsSeen = dict[int, tuple[list[Any], OpenUnits]]
"""What earlier weeks found of one listing's plans, by plan position: the plan's list of units (the object) and its
open units. A week changes a few units of a few plans and copies only those plans' lists (see :class:`_Plans`), so
a list met again as the same object holds what it held: its units need not be read again."""


class _Plans:
    """The floor plans of a document being changed: a plan and a unit are copied the first time they change."""

    def __init__(self, doc: dict[str, Any], seen: UnitsSeen | None = None) -> None:
        self.plans = _plans(doc)
        self.touched: set[int] = set()
        self.moved: dict[str, int] = {}
        """Units gained (or lost, negative) by each status."""
        self._by_status: OpenUnits | None = None
        self._seen: UnitsSeen = {} if seen is None else seen

    def units(self, status: str) -> list[tuple[int, int, dict[str, Any]]]:
        """(plan, position, unit) of each unit ``Available`` or ``Reserved`` (``status``), as the document had them
        (one pass for both, the first time: a week changes a few units of hundreds)."""
        if self._by_status is None:
            self._by_status = {AVAILABLE: [], RESERVED: []}
            for p, plan in enumerate(self.plans):
                units = plan.get("units")
                if not isinstance(units, list):
                    continue
                known = self._seen.get(p)
                if known is None or known[0] is not units:
                    known = self._seen[p] = (units, _open_units(p, units))
                for status_of in (AVAILABLE, RESERVED):
                    self._by_status[status_of] += known[1][status_of]
        return list(self._by_status.get(status, ()))

    def plan(self, p: int) -> dict[str, Any]:
        if p not in self.touched:
            plan = dict(self.plans[p])
            if isinstance(plan.get("units"), list):
                plan["units"] = list(plan["units"])
            self.plans[p] = plan
            self.touched.add(p)
        return self.plans[p]

    def set(self, p: int, k: int, key: str, value: Any) -> None:
        self._seen.pop(p, None)  # the plan's list changes: what was found in it (if it was this one) is not kept
        units = self.plan(p)["units"]
        unit = units[k] = dict(units[k])
        if key == "status":
            self.moved[unit.get("status")] = self.moved.get(unit.get("status"), 0) - 1
            self.moved[value] = self.moved.get(value, 0) + 1
        unit[key] = value

    def finished(self) -> list[dict[str, Any]]:
        """The plans, each changed one's status and start price following its units."""
        for p in self.touched:
            _finish(self.plans[p])
        return self.plans


def _open_units(p: int, units: list[Any]) -> OpenUnits:
    found: OpenUnits = {AVAILABLE: [], RESERVED: []}
    for k, unit in enumerate(units):
        into = found.get(unit.get("status") if isinstance(unit, dict) else None)
        if into is not None:
            into.append((p, k, unit))
    return found


def _finish(plan: dict[str, Any]) -> None:
    """A plan's status and start price from its units (as :func:`~precon.service.catalogue.units.finish_plan`
    makes them, for any plan a store holds: a mirrored one may lack a price or a readable floor)."""
    units = [unit for unit in plan.get("units") or () if isinstance(unit, dict)]
    if not units:
        return
    available = [u.get("price") for u in units if u.get("status") == AVAILABLE]
    plan["status"] = AVAILABLE if available else "Sold Out"
    if isinstance(plan.get("startPrice"), int | float) and not isinstance(plan.get("startPrice"), bool):
        priced = [p for p in available if isinstance(p, int | float)]
        priced = priced or [u.get("price") for u in units if isinstance(u.get("price"), int | float)]
        if priced:
            plan["startPrice"] = min(priced)


def _plans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    plans = doc.get("floorPlans")
    return [plan for plan in plans if isinstance(plan, dict)] if isinstance(plans, list) else []


def _sales(plans: _Plans, draws: Draws, rng: Random) -> None:
    """The week's reservations firmed up or fallen through, then its new sales, cheaper units first."""
    reserved = plans.units(RESERVED)
    rng.shuffle(reserved)
    for p, k, _ in reserved[: draws.firmed]:
        plans.set(p, k, "status", SOLD)
    for p, k, _ in reserved[draws.firmed : draws.firmed + draws.fell_through]:
        plans.set(p, k, "status", AVAILABLE)
    available = plans.units(AVAILABLE)
    for _ in range(min(draws.sales, len(available))):
        # The cheaper of two units drawn at random: cheaper units go first, without sorting hundreds.
        first, second = int(len(available) * rng.random()), int(len(available) * rng.random())
        taken = first if _price(available[first]) <= _price(available[second]) else second
        p, k, _ = available[taken]
        available[taken] = available[-1]
        available.pop()
        plans.set(p, k, "status", RESERVED if rng.random() < RESERVED_SHARE else SOLD)


def _price(unit: tuple[int, int, dict[str, Any]]) -> float:
    price = unit[2].get("price")
    return price if isinstance(price, int | float) else 0


def _reprice(plans: _Plans, rng: Random, up: bool) -> None:
    """A release (``up``: 2 to 5 % on one to three plans' available units) or a cut (3 to 8 % on one or two)."""
    by_plan: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for p, k, unit in plans.units(AVAILABLE):
        if isinstance(unit.get("price"), int | float):
            by_plan.setdefault(p, []).append((k, unit))
    if not by_plan:
        return
    count = min(len(by_plan), 1 + int(rng.random() * (3 if up else 2)))
    change = (0.02 + 0.03 * rng.random()) if up else -(0.03 + 0.05 * rng.random())
    for p in rng.sample(sorted(by_plan), count):
        for k, unit in by_plan[p]:
            plans.set(p, k, "price", round_price(unit["price"] * (1 + change), _rounding_style(unit["price"])))


def _rounding_style(price: float) -> float:
    """The builder's rounding, read back from a price it set (see :func:`round_price`)."""
    rest = int(price) % 1000
    return 0.5 if rest == 990 else 0.7 if rest == 900 else 0.9


def _add_incentive(doc: dict[str, Any], rng: Random) -> None:
    incentives = list(doc.get("incentives") or [])
    titles = {item.get("title") for item in incentives if isinstance(item, dict)}
    fresh = [(title, text) for title, text in _INCENTIVES if title not in titles]
    if len(incentives) >= 4 or not fresh:
        return
    title, text = fresh[int(rng.random() * len(fresh))]
    incentives.append({"title": title, "description": text})
    doc["incentives"] = incentives
    doc["numberOfIncentives"] = len(incentives)


def _launch(doc: dict[str, Any], day: date) -> None:
    doc["sellingStatus"] = SELLING
    doc["salesStarted"] = f"Q{(day.month - 1) // 3 + 1} {day.year}"
    doc["salesStartedYear"] = day.year
    doc["salesStartedTBD"] = False


def _sell_out(doc: dict[str, Any], plans: _Plans) -> None:
    doc["sellingStatus"] = SOLD_OUT
    for p, k, _ in plans.units(AVAILABLE) + plans.units(RESERVED):
        plans.set(p, k, "status", SOLD)
    for p in range(len(plans.plans)):
        plans.plan(p)["status"] = "Sold Out"


def _slip(doc: dict[str, Any]) -> None:
    """The estimated completion (and first occupancy, when given) a year later."""
    for text_field, year_field in (
        ("estimatedCompletionDate", "estimatedCompletionYear"),
        ("firstOccupancyDate", "firstOccupancyYear"),
    ):
        year = doc.get(year_field)
        if isinstance(year, int) and not isinstance(year, bool):
            doc[year_field] = year + 1
            text = doc.get(text_field)
            if isinstance(text, str) and str(year) in text:
                doc[text_field] = text.replace(str(year), str(year + 1))


def _ranges(doc: dict[str, Any], plans: list[dict[str, Any]]) -> None:
    """The listing's prices from its plans' (as the generator made them), where its plans publish any."""
    priced = [(price, size) for price, size in _priced(plans)]
    if priced:
        fields = PriceRange.of(priced, bool(doc.get("contactForPricing"))).fields()
        fields.pop("contactForPricing")
        doc.update(fields)


def _priced(plans: list[dict[str, Any]]) -> list[tuple[int, int]]:
    try:
        return priced_sizes([p for p in plans if isinstance(p.get("startPrice"), int | float)])
    except (KeyError, TypeError, ValueError):  # a plan without a readable size: its listing's prices stay
        return []


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
