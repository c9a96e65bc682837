"""A deterministic generator of a realistic catalogue: listings of developments across Canada and the profiles
of the companies behind them.

``generate(listings, seed)`` returns the same bytes for the same arguments on any machine: the only source of
randomness is :class:`random.Random` seeded from text (hashed with SHA-512, independent of ``PYTHONHASHSEED``),
timestamps are built arithmetically from a fixed reference date, and nothing iterates over a set.

Shapes follow docs/api.md (listing, floor plan, profile):

* a listing's keys come in ``schema.LISTING_FIELDS`` order; ``objectID`` equals ``listingId``; ``_score`` is never
  generated (search adds it);
* ``lat``/``long``, ``numberOfUnits``, ``numberOfFloors`` and a floor plan's ``squareFeet`` are numeric *text*;
  a floor plan's ``startPrice`` is a number, or ``""`` when the price is not published;
* numbers are ``int`` when whole and ``float`` only when fractional (``1.5`` baths), as JSON from JavaScript is;
* reference fields hold ``<Collection>/<id>`` paths and every profile's ``listings`` holds exactly the listings
  that refer to it;
* every media URL is a site-relative path under ``/media/`` (``.svg``), served as a generated placeholder.

The modules, by what they make: :mod:`.places` (cities, neighbourhoods, streets, postal codes, coordinates),
:mod:`.dates` (timestamps and published dates), :mod:`.developments` (building types, names, amenities,
summaries), :mod:`.floor_plans`, :mod:`.prices` (prices, fees, parking), :mod:`.deposits` (payment structures),
:mod:`.companies` (profiles and the companies of each listing), :mod:`.listings` (a listing from its parts, and
the order of the draws), :mod:`.sandbox_variety`; :mod:`.draws` and :mod:`.text` help them all.
"""

from __future__ import annotations

from precon.client.models import PROFILE_COLLECTIONS, REFERENCE_FIELDS
from precon.service.catalogue.developments import AMENITIES, BUILDING_TYPES
from precon.service.catalogue.floor_plans import COMPASS
from precon.service.catalogue.listings import ListingMaker
from precon.service.catalogue.sandbox_variety import ensure_sandbox_variety
from precon.service.catalogue.shapes import (
    FLOOR_PLAN_FIELDS,
    PROFILE_FIELDS,
    REFERENCE_DATE,
    Catalogue,
)

__all__ = [
    "AMENITIES",
    "BUILDING_TYPES",
    "COMPASS",
    "FLOOR_PLAN_FIELDS",
    "PROFILE_COLLECTIONS",
    "PROFILE_FIELDS",
    "REFERENCE_DATE",
    "REFERENCE_FIELDS",
    "SANDBOX_SEED",
    "Catalogue",
    "default_profile_count",
    "generate",
    "sandbox",
]


def default_profile_count(listings: int) -> int:
    """How many profiles :func:`generate` makes when not told: about 0.4 per listing, at least 70, at most 8,000."""
    return min(8000, max(70, round(listings * 0.4)))


def generate(listings: int = 2500, seed: int = 0, profiles: int | None = None) -> Catalogue:
    """A catalogue of ``listings`` listings and ``profiles`` profiles (default: :func:`default_profile_count`).

    The same arguments give the same catalogue, byte for byte. Listing ids never start with ``S`` (the sandbox's
    ids all do), so no generated catalogue shares an id with :func:`sandbox`.
    """
    if listings < 0:
        raise ValueError("listings must be >= 0")
    count = default_profile_count(listings) if profiles is None else profiles
    if count < 0:
        raise ValueError("profiles must be >= 0")
    return ListingMaker(seed, sandbox=False).run(listings, count)


SANDBOX_SEED = 20240
"""The seed of the sandbox catalogue (with its own id scheme: listing ids start with ``S``)."""


def sandbox() -> Catalogue:
    """The small fixed catalogue served under ``v1-sandbox``: 40 listings and 60 profiles over all ten provinces.

    It holds every shape a client must handle: a listing with ``constructionStatus`` null, a floor plan with
    ``startPrice`` ``""`` in a priced listing, sold-out, pending, featured and complete listings, a listing without
    floor plans, one with contact-for-pricing (patched in where the seed alone would not give them).
    """
    catalogue = ListingMaker(SANDBOX_SEED, sandbox=True).run(40, 60)
    ensure_sandbox_variety(catalogue)
    return catalogue
