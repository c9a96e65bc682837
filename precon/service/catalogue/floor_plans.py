"""Floor plans: the suites or house models a development offers, with sizes, bedrooms, bathrooms, exposures,
statuses and prices, and the ranges a listing publishes from them."""

from __future__ import annotations

import re
from bisect import bisect
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from random import Random
from typing import Any

from precon.service.catalogue.dates import Timeline
from precon.service.catalogue.developments import CONDO_LIKE
from precon.service.catalogue.draws import distinct_indices
from precon.service.catalogue.prices import PriceBasis, round_price, type_price_factor
from precon.service.catalogue.text import ascii_fold

COMPASS: tuple[str, ...] = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")

# label, bedrooms, bathroom choices, smallest and largest size, weight
_CONDO_PLANS: tuple[tuple[str, float, tuple[float, ...], int, int, float], ...] = (
    ("Studio", 0, (1,), 330, 480, 5),
    ("1 Bed", 1, (1,), 450, 620, 17),
    ("1 Bed + Den", 1.5, (1, 1, 1.5, 2), 560, 760, 22),
    ("2 Bed", 2, (2, 2, 1, 1.5), 680, 920, 22),
    ("2 Bed + Den", 2.5, (2, 2, 2.5), 840, 1120, 14),
    ("3 Bed", 3, (2, 2, 2.5, 3), 980, 1450, 12),
    ("3 Bed + Den", 3.5, (2.5, 3), 1250, 1700, 4),
    ("Penthouse", 3, (2.5, 3, 3.5), 1500, 3200, 3),
)
_CONDO_PLAN_CUMULATIVE = tuple(accumulate(p[5] for p in _CONDO_PLANS))
# per ground-oriented type: (bedrooms, bathrooms, smallest size, largest size) options
_GROUND_PLANS: dict[str, tuple[tuple[float, float, int, int], ...]] = {
    "Townhouse": ((2, 1.5, 1050, 1400), (3, 2.5, 1350, 1900), (3, 2.5, 1400, 2000), (4, 3.5, 1800, 2500)),
    "Stacked Townhouse": ((1, 1.5, 700, 900), (2, 2, 850, 1150), (2, 2.5, 950, 1250), (3, 2.5, 1150, 1500)),
    "Detached": ((3, 2.5, 1800, 2400), (4, 3.5, 2300, 3200), (4, 3.5, 2500, 3400), (5, 4.5, 3100, 4400)),
    "Semi-Detached": ((3, 2.5, 1500, 1900), (3, 2.5, 1650, 2100), (4, 3.5, 1900, 2600)),
    "Loft": ((1, 1, 550, 800), (1.5, 1.5, 700, 950), (2, 2, 850, 1400)),
}
_MODEL_NAMES = (
    "Aspen", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Hawthorn", "Juniper", "Laurel", "Magnolia", "Maple", "Oak",
    "Pine", "Redbud", "Spruce", "Sycamore", "Willow", "Alder", "Ash", "Beech", "Chestnut", "Cypress", "Hazel",
    "Hemlock", "Hickory", "Linden", "Poplar", "Rowan", "Sequoia", "Tamarack", "Walnut", "Acacia", "Balsam",
    "Cherry", "Ginkgo", "Holly", "Ironwood", "Jasmine", "Larch", "Mulberry", "Olive", "Sumac", "Trillium",
    "Violet", "Wisteria", "Amber", "Carlton", "Dalton", "Everett", "Fulton", "Grayson", "Harper", "Lennox",
    "Monroe", "Newport", "Oxford", "Preston", "Rutherford", "Sheridan", "Thornton", "Wellington", "Ashford",
)  # fmt: skip

PlanSpec = tuple[str, float, float, int, float]
"""A floor plan before it is named and priced: label, bedrooms, bathrooms, square feet, price factor."""


def draw_exposures(rand: Callable[[], float]) -> list[str]:
    """The directions a building faces: an arc (N, NE, E...) or every other direction (N, E, S)."""
    first, step = int(rand() * 8), 1 + int(rand() * 2)
    return [COMPASS[k] for k in sorted({(first + step * j) % 8: None for j in range(1 + int(rand() * 4))})]


@cache
def image_name(plan: str) -> str:
    """The file name of a floor plan's image: "The Aspen" -> "the-aspen.svg" (plan names repeat: cached)."""
    return re.sub(r"[^a-z0-9]+", "-", ascii_fold(plan)).strip("-") + ".svg"


def plan_names(rng: Random, count: int, condo: bool) -> list[str]:
    """``count`` names in one of the styles builders use: "Suite 1A", "Plan 101", "Unit A1", "The Aspen"."""
    r = rng.random()
    if condo and r < 0.35:
        return [f"Suite {k // 4 + 1}{'ABCD'[k % 4]}" for k in range(count)]
    if condo and r < 0.55:
        return [f"Plan {101 + k}" for k in range(count)]
    if condo and r < 0.65:
        return [f"Unit {'ABCDEFGH'[k % 8]}{k // 8 + 1}" for k in range(count)]
    if count <= len(_MODEL_NAMES):
        return [f"The {_MODEL_NAMES[k]}" for k in distinct_indices(rng.random, len(_MODEL_NAMES), count)]
    return [f"The {_MODEL_NAMES[k % len(_MODEL_NAMES)]}{' II' if k >= len(_MODEL_NAMES) else ''}" for k in range(count)]


def _condo_specs(rand: Callable[[], float], count: int, factor: float) -> list[PlanSpec]:
    cumulative, total, last = _CONDO_PLAN_CUMULATIVE, _CONDO_PLAN_CUMULATIVE[-1], len(_CONDO_PLANS) - 1
    specs: list[PlanSpec] = []
    for _ in range(count):
        position = bisect(cumulative, rand() * total)
        label, beds, bath_options, low, high, _ = _CONDO_PLANS[min(position, last)]
        size = low + int((high - low) * rand())
        baths = bath_options[int(rand() * len(bath_options))]
        premium = 1.2 if label == "Penthouse" else 1.0
        adjust = (700 / size) ** 0.12
        specs.append((label, beds, baths, size, factor * premium * adjust))
    return specs


def _ground_specs(rand: Callable[[], float], kind: str, count: int, factor: float) -> list[PlanSpec]:
    options = _GROUND_PLANS[kind]
    specs: list[PlanSpec] = []
    for _ in range(count):
        beds, baths, low, high = options[int(rand() * len(options))]
        size = low + int((high - low) * rand())
        adjust = (2000 / size) ** 0.08 if kind != "Loft" else (700 / size) ** 0.12
        specs.append((kind, beds, baths, size, factor * adjust))
    return specs


def _draw_specs(rng: Random, types: list[str], psf_scale: float) -> list[PlanSpec]:
    """Up to 40 plans, smallest first: many for a condo tower, fewer for houses, a third for a second type."""
    rand = rng.random
    primary = types[0]
    ground_count = 2 + min(int(rng.expovariate(0.25)), 18)
    condo_count = 2 + min(int(rng.expovariate(0.1)), 38)
    specs: list[PlanSpec] = []
    for kind in types:
        condo = kind in ("Condo", "Mixed Use")
        count = condo_count if condo else ground_count
        if len(types) > 1 and kind != primary:
            count = max(1, count // 3)
        factor = type_price_factor(kind, psf_scale)
        specs.extend(_condo_specs(rand, count, factor) if condo else _ground_specs(rand, kind, count, factor))
    del specs[40:]
    specs.sort(key=lambda spec: (spec[3], spec[1]))
    return specs


@dataclass(frozen=True, slots=True)
class PlanTerms:
    """What every plan of one listing shares."""

    lid: str
    contact: bool
    selling: str
    exposures: list[str]
    basis: PriceBasis
    timeline: Timeline


def _plan_status(rand: Callable[[], float], selling: str) -> str:
    if selling == "Sold Out":
        return "Sold Out"
    if selling == "Selling Now":
        return "Sold Out" if rand() < 0.2 else "Available"
    return "Available"


def _plan_record(rand: Callable[[], float], terms: PlanTerms, index: int, name: str, spec: PlanSpec) -> dict[str, Any]:
    label, beds, baths, size, factor = spec
    no_price = terms.contact or rand() < 0.035
    status = _plan_status(rand, terms.selling)
    exposures = terms.exposures
    start = exposures[int(rand() * len(exposures))]
    exposure = [start] if len(exposures) == 1 or rand() < 0.6 else [start, exposures[-1]]
    if len(exposure) == 2 and exposure[0] == exposure[1]:
        exposure.pop()
    basis = terms.basis
    price = "" if no_price else round_price(size * basis.per_sqft * factor * (0.97 + 0.06 * rand()), basis.rounding)
    revisions = terms.timeline.revisions
    return {
        "id": f"{terms.lid}-{index}",
        "name": name,
        "planCategory": "floorPlan",
        "floorPlanType": [label],
        "squareFeet": str(size),
        "startPrice": price,
        "contactForPricing": no_price,
        "status": status,
        "numberOfBedrooms": beds,
        "numberOfBathrooms": baths,
        "exposure": exposure,
        "image": {"name": image_name(name), "url": f"/media/listings/{terms.lid}/plans/{index}.svg"},
        "createdAt": terms.timeline.plans_created,
        "lastUpdated": revisions[int(rand() * len(revisions))],
    }


def draw_floor_plans(rng: Random, types: list[str], terms: PlanTerms) -> list[dict[str, Any]]:
    """The floor plans of a listing, smallest first, with ids ``<listing id>-<n>``."""
    specs = _draw_specs(rng, types, terms.basis.scale)
    names = plan_names(rng, len(specs), types[0] in CONDO_LIKE)
    rand = rng.random
    return [_plan_record(rand, terms, index, names[index - 1], spec) for index, spec in enumerate(specs, start=1)]


@dataclass(frozen=True, slots=True)
class PlanRanges:
    """The smallest and largest numbers of bedrooms, bathrooms and square feet a listing offers."""

    min_beds: float | None = None
    max_beds: float | None = None
    min_baths: float | None = None
    max_baths: float | None = None
    min_size: int | None = None
    max_size: int | None = None

    @classmethod
    def of(cls, plans: list[dict[str, Any]]) -> PlanRanges:
        beds = [p["numberOfBedrooms"] for p in plans]
        baths = [p["numberOfBathrooms"] for p in plans]
        sizes = [int(p["squareFeet"]) for p in plans]
        return cls(min(beds), max(beds), min(baths), max(baths), min(sizes), max(sizes))

    def fields(self) -> dict[str, Any]:
        return {
            "minBeds": self.min_beds,
            "maxBeds": self.max_beds,
            "minBaths": self.min_baths,
            "maxBaths": self.max_baths,
            "minSize": self.min_size,
            "maxSize": self.max_size,
        }


def priced_sizes(plans: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """(price, square feet) of every plan with a published price."""
    return [(p["startPrice"], int(p["squareFeet"])) for p in plans if p["startPrice"] != ""]


def draw_unpublished_plans(
    rand: Callable[[], float], primary: str, contact: bool, basis: PriceBasis
) -> tuple[PlanRanges, list[tuple[int, int]]]:
    """For a listing without floor plans: half the time a published range of sizes and prices (the smallest and
    largest home, as (price, square feet)), else nothing."""
    if contact or rand() >= 0.5:
        return PlanRanges(), []
    condo_like = primary in CONDO_LIKE
    low = 450 if condo_like else 1400
    high = low + 400 + int(rand() * 1200)
    factor = type_price_factor(primary, basis.scale)
    priced = [
        (round_price(low * basis.per_sqft * factor, basis.rounding), low),
        (round_price(high * basis.per_sqft * factor, basis.rounding), high),
    ]
    if condo_like:
        return PlanRanges(1, 3, 1, 2, low, high), priced
    return PlanRanges(3, 4, 2.5, 3.5, low, high), priced
