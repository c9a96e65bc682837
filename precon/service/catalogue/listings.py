"""Listings: one development each, drawn part by part (place, statuses, dates, companies, floor plans, prices,
words, media) from one random stream, and assembled with its keys in ``schema.LISTING_FIELDS`` order.

The order of the draws is the catalogue: :meth:`ListingMaker.listing` draws the parts in a fixed order, and the
parts that only assemble (the ``fields`` methods, :func:`_assemble`) draw nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from random import Random
from typing import Any

from precon.service.catalogue.canada import PROVINCE_SHARES
from precon.service.catalogue.companies import COMPANY_WORDS, Profiles, choose_references, make_profiles
from precon.service.catalogue.dates import (
    PublishedDates,
    Timeline,
    draw_published_dates,
    draw_timeline,
    status_timestamp,
)
from precon.service.catalogue.deposits import draw_payment_structures
from precon.service.catalogue.developments import (
    CONDO_LIKE,
    DevelopmentNames,
    draw_amenities,
    draw_building_size,
    draw_finishes,
    draw_metering_and_ceilings,
    draw_types,
    summary,
)
from precon.service.catalogue.draws import spread, weighted
from precon.service.catalogue.floor_plans import (
    PlanRanges,
    PlanTerms,
    draw_exposures,
    draw_floor_plans,
    draw_unpublished_plans,
    priced_sizes,
)
from precon.service.catalogue.places import CityTable, Hood, Location, city_tables, draw_location
from precon.service.catalogue.prices import (
    Charges,
    ParkingAndStorage,
    PriceBasis,
    PriceRange,
    draw_charges,
    draw_parking_and_storage,
)
from precon.service.catalogue.shapes import Catalogue
from precon.service.catalogue.text import slug
from precon.service.catalogue.units import RESERVED_ODDS, SANDBOX_RESERVED_ODDS, building_floors, draw_units
from precon.service.collector import collector_paused

_ID_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
_ID_FIRST = _ID_CHARS.replace("S", "")
_PHOTO_TAGS = ("exterior", "lobby", "amenity", "suite", "kitchen", "bathroom", "view", "rooftop", "streetscape")


@dataclass(frozen=True, slots=True)
class _Statuses:
    selling: str
    construction: str | None
    featured: bool


def _draw_statuses(rand: Callable[[], float]) -> _Statuses:
    """Selling now, pending or sold out; a sold-out building is often complete, a pending one never."""
    r = rand()
    selling = "Selling Now" if r < 0.55 else "Pending" if r < 0.75 else "Sold Out"
    r = rand()
    if selling == "Sold Out":
        construction = "Complete" if r < 0.4 else "Pre Construction" if r < 0.9 else None
    elif selling == "Selling Now":
        construction = "Complete" if r < 0.14 else "Pre Construction" if r < 0.9 else None
    else:
        construction = "Pre Construction" if r < 0.9 else None
    return _Statuses(selling, construction, rand() < 0.05)


def _draw_photos(rand: Callable[[], float], media: str, revisions: list[str]) -> list[dict[str, Any]]:
    """Three to twelve photos, a rendering of the exterior first; some later ones are site plans."""
    photos = []
    for k in range(1, 3 + int(rand() * 10) + 1):
        tags = ["exterior", "rendering"] if k == 1 else [_PHOTO_TAGS[int(rand() * len(_PHOTO_TAGS))]]
        svg = k > 2 and rand() < 0.12
        photos.append(
            {
                "createdAt": revisions[0] if k <= 3 else revisions[int(rand() * len(revisions))],
                "name": f"site-plan-{k}.svg" if svg else f"{tags[0]}-{k}.jpg",
                "tags": ["site plan"] if svg else tags,
                "type": "image/svg+xml" if svg else "image/jpeg",
                "url": f"{media}/photo-{k}.svg",
            }
        )
    return photos


def _draw_brokerages(rand: Callable[[], float]) -> list[dict[str, str]]:
    """Mostly none; sometimes one co-operating brokerage and its commission."""
    if rand() < 0.8:
        return []
    name = f"{COMPANY_WORDS[int(rand() * len(COMPANY_WORDS))]} Realty Inc., Brokerage"
    return [{"name": name, "commission": ("2.5%", "3%", "4%", "5%")[int(rand() * 4)]}]


@dataclass(slots=True)
class _Draft:
    """Every part of one listing, filled in the order of the draws."""

    lid: str
    province: str
    table: CityTable
    hood: Hood
    types: list[str]
    statuses: _Statuses
    timeline: Timeline
    dates: PublishedDates
    location: Location
    references: dict[str, list[str]]
    builder_names: list[str]
    exposures: list[str]
    plans: list[dict[str, Any]] | None
    ranges: PlanRanges
    price: PriceRange
    charges: Charges | None = None
    parking: ParkingAndStorage | None = None
    metering: tuple[str, bool, str] = ("", False, "")
    """Metering, whether it is included, ceiling heights."""
    size: tuple[int, int] = (0, 0)
    """Units and floors."""
    amenities: list[str] | None = None
    name: str = ""
    summary: str = ""
    photos: list[dict[str, Any]] | None = None
    payment: list[dict[str, Any]] | None = None
    brokerages: list[dict[str, str]] | None = None
    videos: list[str] | None = None
    virtual_showing: str = ""
    maintenance_fee_included: bool = False
    finishes: str = ""
    has_logo: bool = False


def _head_fields(draft: _Draft) -> dict[str, Any]:
    """The listing's keys from ``listingId`` to ``updatedAt``."""
    lid, statuses, timeline = draft.lid, draft.statuses, draft.timeline
    return {
        "listingId": lid,
        "objectID": lid,
        "path": f"Listings/{lid}",
        "name": draft.name,
        "summary": draft.summary,
        "mode": "live",
        "sellingStatus": statuses.selling,
        "sellingStatusUpdateTimestamp": status_timestamp(
            lid, statuses.selling, timeline.created_ms, timeline.updated_ms
        ),
        "constructionStatus": statuses.construction,
        "type": draft.types,
        "isFeatured": statuses.featured,
        "createdAt": timeline.created_at,
        "updatedAt": timeline.updated_at,
    }


def _money_fields(draft: _Draft) -> dict[str, Any]:
    """The listing's keys from ``startPrice`` to ``meteringIncluded``."""
    charges, parking = draft.charges, draft.parking
    assert charges is not None and parking is not None
    metering, metering_included, _ = draft.metering
    return {
        **draft.price.fields(),
        "assignmentFee": charges.assignment_fee,
        "assignmentFeeFree": charges.assignment_free,
        "ccOrMaintFee": charges.maintenance_fee,
        "ccOrMaintFeeIncluded": draft.maintenance_fee_included,
        "developmentLevies": charges.levies,
        "developmentLeviesIncluded": charges.levies_included,
        **parking.fields(),
        "metering": metering,
        "meteringIncluded": metering_included,
    }


def _tail_fields(draft: _Draft) -> dict[str, Any]:
    """The listing's keys from ``numberOfUnits`` to ``floorPlans``."""
    charges = draft.charges
    assert charges is not None
    units, floors = draft.size
    media = f"/media/listings/{draft.lid}"
    return {
        "numberOfUnits": str(units),
        "numberOfFloors": str(floors),
        "numberOfFloorPlans": len(draft.plans) if draft.plans is not None else 0,
        "numberOfIncentives": len(charges.incentives),
        "ceilingHeights": draft.metering[2],
        "finishes": draft.finishes,
        "virtualShowing": draft.virtual_showing,
        "exposures": draft.exposures,
        "amenities": draft.amenities,
        "incentives": charges.incentives,
        "brokerages": draft.brokerages,
        "videos": draft.videos,
        "logo": {"name": "logo.svg", "url": f"{media}/logo.svg"} if draft.has_logo else {"name": "", "url": None},
        "coverPhoto": {"name": "cover.svg", "url": f"{media}/cover.svg"},
        "photos": draft.photos,
        "paymentStructures": draft.payment,
        **draft.references,
        "floorPlans": draft.plans,
    }


def _assemble(draft: _Draft) -> dict[str, Any]:
    """The listing, its keys in ``schema.LISTING_FIELDS`` order."""
    return {
        **_head_fields(draft),
        **draft.location.fields(draft.table, draft.hood),
        **draft.dates.fields(),
        **_money_fields(draft),
        **draft.ranges.fields(),
        **_tail_fields(draft),
    }


class ListingMaker:
    """Makes the listings (and first the profiles) of one catalogue from its seed."""

    def __init__(self, seed: int, sandbox: bool) -> None:
        tag = "sandbox" if sandbox else "catalogue"
        self.profile_rng = Random(f"precon/{tag}/{seed}/profiles")
        self.rng = Random(f"precon/{tag}/{seed}/listings")
        self.sandbox = sandbox
        self.names = DevelopmentNames(self.rng)
        self.used_ids: set[str] = set()
        self.profiles: Profiles | None = None

    def run(self, listings: int, profiles: int) -> Catalogue:
        # Millions of small containers and no cycles: the cyclic collector would only rescan them, again and again.
        with collector_paused():
            self.profiles = make_profiles(self.profile_rng, profiles, set())
            provinces = spread(self.rng, listings, PROVINCE_SHARES, at_least_one=listings >= len(PROVINCE_SHARES))
            records = [self.listing(province) for province in provinces]
        return Catalogue(records, self.profiles.finish())

    def _listing_id(self) -> str:
        """Six letters and digits, unique; a sandbox id starts with ``S``, a generated one never does."""
        rng = self.rng
        while True:
            first = "S" if self.sandbox else _ID_FIRST[int(rng.random() * len(_ID_FIRST))]
            lid = first + "".join(rng.choices(_ID_CHARS, k=5))
            if lid not in self.used_ids:
                self.used_ids.add(lid)
                return lid

    def listing(self, province: str) -> dict[str, Any]:
        """One listing in ``province``."""
        draft = self._draft(province)
        self._draw_extras(draft)
        return _assemble(draft)

    def _draft(self, province: str) -> _Draft:
        """Place, statuses, dates, companies, floor plans and prices."""
        rng = self.rng
        rand = rng.random
        assert self.profiles is not None
        tables, cumulative = city_tables()[province]
        table: CityTable = weighted(rng, tables, cumulative)
        city = table.city
        hood = table.hoods[int(rand() * len(table.hoods))]
        lid = self._listing_id()
        types = draw_types(rng, table)
        condo_like = types[0] in CONDO_LIKE
        statuses = _draw_statuses(rand)
        timeline = draw_timeline(rng)
        dates = draw_published_dates(rng, statuses.selling, statuses.construction, condo_like)
        location = draw_location(rng, table, hood)
        references, builder_names = choose_references(
            rng, self.profiles, (lid, province, f"{province}/{city.name}"), timeline.created_ms, statuses.selling
        )
        per_sqft = city.price_per_sqft * hood.price_factor * (0.9 + 0.22 * rand())
        contact = rand() < 0.05
        exposures = draw_exposures(rand)
        basis = PriceBasis(per_sqft, min(1.0, city.price_per_sqft / 1000), rand())
        plans: list[dict[str, Any]] | None = None
        if rand() >= 0.02:
            plans = draw_floor_plans(rng, types, PlanTerms(lid, contact, statuses.selling, exposures, basis, timeline))
            ranges, priced = PlanRanges.of(plans), priced_sizes(plans)
        else:
            ranges, priced = draw_unpublished_plans(rand, types[0], contact, basis)
        price = PriceRange.of(priced, contact)
        return _Draft(
            lid, province, table, hood, types, statuses, timeline, dates, location, references, builder_names,
            exposures, plans, ranges, price,
        )  # fmt: skip

    def _draw_extras(self, draft: _Draft) -> None:
        """Money around the price, the building, words and media, in the order of the draws."""
        rng = self.rng
        rand = rng.random
        city, primary = draft.table.city, draft.types[0]
        draft.charges = draw_charges(rng, city, primary, draft.statuses.selling)
        draft.parking = draw_parking_and_storage(rand, city, primary in CONDO_LIKE)
        draft.metering = draw_metering_and_ceilings(rand, primary)
        units, floors = draft.size = draw_building_size(
            rand, city.kind, primary, len(draft.plans) if draft.plans is not None else 0
        )
        if draft.plans is not None:
            reserved = SANDBOX_RESERVED_ODDS if self.sandbox else RESERVED_ODDS
            draw_units(draft.lid, draft.plans, units, floors, primary, draft.statuses.selling, reserved)
            floors = building_floors(units, floors, len(draft.plans), primary)  # no draw: as high as the units
            draft.size = (units, floors)
            draft.price = PriceRange.of(priced_sizes(draft.plans), draft.price.contact)
        draft.amenities = draw_amenities(rand, primary in CONDO_LIKE)
        draft.name = self.names.draw(draft.table, draft.hood.name, draft.types, draft.province)
        ranges = draft.ranges
        draft.summary = summary(
            rng, draft.name, draft.types, draft.builder_names, draft.hood.name, city.name, draft.location.street,
            units, floors, ranges.min_size, ranges.max_size, draft.amenities, draft.dates.first_occupancy,
        )  # fmt: skip
        site = slug(draft.name)[:40] or draft.lid.lower()
        draft.photos = _draw_photos(rand, f"/media/listings/{draft.lid}", draft.timeline.revisions)
        draft.payment = draw_payment_structures(rng, draft.province, draft.types, draft.price.start_price)
        draft.brokerages = _draw_brokerages(rand)
        draft.videos = [] if rand() < 0.85 else [f"https://www.{site}.ca/video"]
        draft.virtual_showing = "" if rand() < 0.7 else f"https://www.{site}.ca/virtual-tour"
        draft.maintenance_fee_included = draft.charges.maintenance_fee is not None and rand() < 0.03
        draft.finishes = draw_finishes(rand)
        draft.has_logo = rand() >= 0.12
