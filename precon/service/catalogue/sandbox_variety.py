"""The sandbox's variety: patches to the small sandbox catalogue so that every shape a client must handle occurs
in it, each patched listing kept consistent with its floor plans."""

from __future__ import annotations

from typing import Any

from precon.service.catalogue.shapes import Catalogue
from precon.service.catalogue.units import sell_out, withdraw_prices


def ensure_sandbox_variety(catalogue: Catalogue) -> None:
    """Patch the sandbox so that every shape a client must handle occurs, keeping every listing consistent."""
    listings = catalogue.listings
    if not any(item["constructionStatus"] is None for item in listings):
        listings[1]["constructionStatus"] = None
    if not any(item["sellingStatus"] == "Sold Out" for item in listings):
        target = listings[2]
        target["sellingStatus"] = "Sold Out"
        for plan in target["floorPlans"] or []:
            sell_out(plan)
        _reprice(target)
    if not any(item["isFeatured"] for item in listings):
        listings[0]["isFeatured"] = True
    if not any(
        plan["startPrice"] == "" for item in listings if item["floorPlans"] and not item["contactForPricing"]
        for plan in item["floorPlans"]
    ):  # fmt: skip
        target = next(item for item in listings if item["floorPlans"] and len(item["floorPlans"]) >= 3)
        withdraw_prices(target["floorPlans"][1])
        _reprice(target)
    if not any(item["floorPlans"] is None for item in listings):
        target = listings[3]
        target["floorPlans"] = None
        target["numberOfFloorPlans"] = 0
        _reprice(target)
    if not any(item["contactForPricing"] and item["floorPlans"] for item in listings):
        target = listings[4]
        for plan in target["floorPlans"] or []:
            withdraw_prices(plan)
        _reprice(target)


def _reprice(listing: dict[str, Any]) -> None:
    """Recompute a listing's prices, beds, baths and sizes from its floor plans."""
    plans = listing["floorPlans"]
    if not plans:
        for key in ("startPrice", "endPrice", "minBeds", "maxBeds", "minBaths", "maxBaths", "minSize", "maxSize"):
            listing[key] = None
        listing["averagePricePerSqFeet"] = listing["endPricePerSqFeet"] = 0
        listing["contactForPricing"] = True
        return
    priced = [(p["startPrice"], int(p["squareFeet"])) for p in plans if p["startPrice"] != ""]
    if priced:
        psfs = [price / size for price, size in priced]
        listing["startPrice"] = min(price for price, _ in priced)
        listing["endPrice"] = max(price for price, _ in priced)
        listing["averagePricePerSqFeet"] = round(sum(psfs) / len(psfs))
        listing["endPricePerSqFeet"] = round(max(psfs))
    else:
        listing["startPrice"] = listing["endPrice"] = None
        listing["averagePricePerSqFeet"] = listing["endPricePerSqFeet"] = 0
        listing["contactForPricing"] = True
