"""The shapes the generator makes: the catalogue itself and the key order of floor plans and profiles."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REFERENCE_DATE = "2026-11-01T00:00:00.000Z"
"""Every generated timestamp lies in [2021-01-01, this instant)."""

FLOOR_PLAN_FIELDS: tuple[str, ...] = (
    "id",
    "name",
    "planCategory",
    "floorPlanType",
    "squareFeet",
    "startPrice",
    "contactForPricing",
    "status",
    "numberOfBedrooms",
    "numberOfBathrooms",
    "exposure",
    "image",
    "createdAt",
    "lastUpdated",
)
"""The keys of every generated floor plan, in order."""

PROFILE_FIELDS: tuple[str, ...] = (
    "id",
    "path",
    "name",
    "address",
    "website",
    "email",
    "phone",
    "logo",
    "listings",
    "summary",
    "state",
    "createdAt",
    "updatedAt",
)
"""The keys of every profile, in order; builders add ``yearFounded`` and ``provinces`` after them."""


@dataclass
class Catalogue:
    listings: list[dict[str, Any]]
    """Keys in ``schema.LISTING_FIELDS`` order."""
    profiles: list[dict[str, Any]]
    """Every profile carries ``path`` = ``<Collection>/<id>`` and ``id``; see :data:`PROFILE_COLLECTIONS`."""
