"""Prices and the money around them: a listing's price per square foot and price range, the rounding builders
use, incentives, assignment and maintenance fees, development levies, parking and storage."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from random import Random
from typing import Any

from precon.service.catalogue.canada import City
from precon.service.catalogue.draws import distinct_indices, weighted
from precon.service.catalogue.text import json_number

_TYPE_PRICE_FACTOR: dict[str, float] = {
    "Condo": 1.0,
    "Mixed Use": 1.0,
    "Loft": 1.02,
    "Stacked Townhouse": 0.84,
    "Townhouse": 0.8,
    "Semi-Detached": 0.74,
    "Detached": 0.7,
}
"""How much less a square foot of each building type costs than a condo's, in the most expensive cities."""

_INCENTIVES: tuple[tuple[str, str], ...] = (
    ("Free assignment", "Assign your unit before closing at no charge (legal fees not included)."),
    ("Capped development charges", "Development charges and levies capped for all suites."),
    ("Extended deposit structure", "Only 15% down spread over 540 days."),
    ("Right to lease during occupancy", "Lease your suite during the interim occupancy period."),
    ("Free parking", "One parking space included with suites of two bedrooms or more."),
    ("Décor credit", "A $10,000 credit towards upgrades at the design studio."),
    ("Free locker", "A storage locker included with every suite."),
    ("Cash back on closing", "$20,000 cash back on closing for a limited time."),
    ("Maintenance fees paid", "Common-element fees paid for the first year after occupancy."),
    ("Limited-time pricing", "Launch pricing on a limited number of suites."),
    ("Free appliance package", "Stainless-steel appliance package included."),
)
_PARKING_RESTRICTIONS = (
    "Available for units 700 sq ft+",
    "Available for 2 Bed and larger",
    "One space per suite, limited availability",
    "Available for units 800 sq ft+",
)
_STORAGE_RESTRICTIONS = ("Available for units 650 sq ft+", "Limited availability", "Available for 1 Bed + Den+")
_INCENTIVE_ODDS: dict[str, tuple[float, ...]] = {
    "Selling Now": (35, 65, 85, 95, 100),
    "Pending": (60, 90, 100, 100, 100),
    "Sold Out": (80, 100, 100, 100, 100),
}
"""Cumulative odds of 0 to 4 incentives, by selling status."""


def type_price_factor(kind: str, psf_scale: float) -> float:
    """The price per square foot of ``kind`` relative to a condo's; the gap narrows where prices are low."""
    return 1 - (1 - _TYPE_PRICE_FACTOR[kind]) * psf_scale


def round_price(price: float, style: float) -> int:
    """A price rounded the way the builder rounds all its prices: 649,990, 649,900 or 650,000."""
    thousands = round(price / 1000) * 1000
    if style < 0.6:
        return thousands - 10
    if style < 0.85:
        return thousands - 100
    return thousands


@dataclass(frozen=True, slots=True)
class PriceBasis:
    """What every price of one listing derives from."""

    per_sqft: float
    scale: float
    """How far the city's prices are from the cheapest (0) towards the most expensive (1), for type factors."""
    rounding: float
    """The builder's rounding style, see :func:`round_price`."""


@dataclass(frozen=True, slots=True)
class PriceRange:
    start_price: int | None
    end_price: int | None
    average_psf: int
    end_psf: int
    contact: bool

    @classmethod
    def of(cls, priced: list[tuple[int, int]], contact: bool) -> PriceRange:
        """From (price, square feet) pairs; with none, the listing is contact-for-pricing."""
        if not priced:
            return cls(None, None, 0, 0, True)
        prices = [price for price, _ in priced]
        psfs = [price / size for price, size in priced]
        return cls(min(prices), max(prices), round(sum(psfs) / len(psfs)), round(max(psfs)), contact)

    def fields(self) -> dict[str, Any]:
        return {
            "startPrice": self.start_price,
            "endPrice": self.end_price,
            "averagePricePerSqFeet": self.average_psf,
            "endPricePerSqFeet": self.end_psf,
            "contactForPricing": self.contact,
        }


@dataclass(frozen=True, slots=True)
class Charges:
    """Incentives and the fees beside the price."""

    incentives: list[dict[str, str]]
    assignment_fee: int | None
    assignment_free: bool
    maintenance_fee: float | None
    """Per square foot per month (``ccOrMaintFee``)."""
    levies: str | None
    levies_included: bool


def draw_charges(rng: Random, city: City, primary: str, selling: str) -> Charges:
    """Incentives (more as sales slow down), an assignment fee unless assignment is free, a maintenance fee per
    square foot for suites and most townhomes, and development levies."""
    rand = rng.random
    count: int = weighted(rng, (0, 1, 2, 3, 4), _INCENTIVE_ODDS[selling])
    incentives = [
        {"title": title, "description": text}
        for title, text in (_INCENTIVES[k] for k in sorted(distinct_indices(rand, len(_INCENTIVES), count)))
    ]
    assignment_free = any(item["title"] == "Free assignment" for item in incentives)
    assignment_fee = None if assignment_free or rand() < 0.3 else (5000, 7500, 10000, 15000)[int(rand() * 4)]
    maintenance_fee: float | None = None
    if primary in ("Condo", "Mixed Use", "Loft"):
        maintenance_fee = round(0.55 + 0.30 * rand(), 2)
    elif primary == "Stacked Townhouse":
        maintenance_fee = round(0.40 + 0.20 * rand(), 2)
    elif primary == "Townhouse" and rand() < 0.4:
        maintenance_fee = round(0.25 + 0.20 * rand(), 2)
    levies, levies_included = _draw_levies(rand, city)
    return Charges(incentives, assignment_fee, assignment_free, maintenance_fee, levies, levies_included)


def _draw_levies(rand: Callable[[], float], city: City) -> tuple[str | None, bool]:
    """Development levies as published, and whether they are included in the price."""
    r = rand()
    levy_base = 8000 + int(city.price_per_sqft * 12 / 500) * 500
    if r < 0.2:
        return None, True
    if r < 0.62:
        return f"Capped at ${levy_base:,}", False
    if r < 0.72:
        return f"Capped at ${levy_base - 3000:,} for 1 Bed, ${levy_base + 2000:,} for 2 Bed+", False
    if r < 0.85:
        return "Uncapped", False
    return None, False


@dataclass(frozen=True, slots=True)
class ParkingAndStorage:
    has_parking: bool
    parking_cost: float | None
    parking_fee: int | None
    parking_included: bool
    parking_restriction: str
    has_locker: bool
    storage_cost: float | None
    locker_fee: int | None
    storage_restriction: str

    def fields(self) -> dict[str, Any]:
        """The listing's keys from ``parkingCost`` to ``hasLocker``, in order."""
        return {
            "parkingCost": json_number(self.parking_cost) if self.parking_cost is not None else None,
            "parkingMaintainance": self.parking_fee,
            "storageCost": json_number(self.storage_cost) if self.storage_cost is not None else None,
            "lockerMaintainance": self.locker_fee,
            "parkingCostIncluded": self.parking_included,
            "parkingMaintainanceIncluded": self.parking_included,
            "storageCostIncluded": False,
            "lockerMaintainanceIncluded": False,
            "parkingRestriction": self.parking_restriction,
            "storageRestriction": self.storage_restriction,
            "hasParking": self.has_parking,
            "hasLocker": self.has_locker,
        }


_GROUND_PARKING = ParkingAndStorage(True, None, None, True, "", False, None, None, "")
"""A house comes with its driveway and garage, and has no locker."""


def draw_parking_and_storage(rand: Callable[[], float], city: City, condo_like: bool) -> ParkingAndStorage:
    """Parking spaces and lockers sold beside a suite, with their monthly fees; nothing drawn for a house."""
    if not condo_like:
        return _GROUND_PARKING
    has_parking = rand() < 0.85
    parking_cost = round(city.price_per_sqft * (65 + 25 * rand()), -3) if has_parking and rand() >= 0.1 else None
    parking_fee = 45 + int(rand() * 50) if has_parking else None
    parking_restriction = (
        _PARKING_RESTRICTIONS[int(rand() * len(_PARKING_RESTRICTIONS))] if has_parking and rand() < 0.5 else ""
    )
    has_locker = rand() < 0.7
    storage_cost = round(city.price_per_sqft * (5 + 7 * rand()), -2) if has_locker else None
    locker_fee = 15 + int(rand() * 25) if has_locker else None
    storage_restriction = (
        _STORAGE_RESTRICTIONS[int(rand() * len(_STORAGE_RESTRICTIONS))] if has_locker and rand() < 0.35 else ""
    )
    return ParkingAndStorage(
        has_parking, parking_cost, parking_fee, False, parking_restriction,
        has_locker, storage_cost, locker_fee, storage_restriction,
    )  # fmt: skip
