"""People's words for the service's names: the one mapping every page, table and CSV of the dashboard uses.

The service speaks in attribute names (``startPrice``, ``floorPlan``, ``numberOfBedrooms:2 TO 2``); a person reads
"Start price", "Floor plan", "2 bed". Here are the words for a history entry's scope, field and kind of change
(:func:`scope_label`, :func:`field_label`, :func:`change_label`), for a count of bedrooms (:func:`bedrooms_label`),
for a market group (:func:`group_label`, ordered by :func:`group_order`), for a set of filters
(:func:`describe_filters`: ``Toronto · Selling Now · 2 bed · up to $800,000``), and for a cell of a table or a CSV
(:func:`cell`: an unknown value is blank, never ``nan`` or ``None``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from precon.dashboard.filter_state import FACETS, RANGES, FilterState, RangeSpec

SCOPES: dict[str, str] = {"listing": "Listing", "floorPlan": "Floor plan", "unit": "Unit"}
"""What a history entry is about."""
CHANGES: dict[str, str] = {"created": "Added", "updated": "Changed", "deleted": "Removed"}
"""What happened to it."""
FIELDS: dict[str, str] = {
    "startPrice": "Start price",
    "endPrice": "Top price",
    "price": "Price",
    "status": "Status",
    "sellingStatus": "Selling status",
    "constructionStatus": "Construction status",
    "cityOrDistrict": "City",
    "neighbourhood": "Neighbourhood",
    "builders": "Builders",
    "type": "Type",
    "name": "Name",
    "numberOfBedrooms": "Bedrooms",
    "numberOfBathrooms": "Bathrooms",
    "squareFeet": "Size (sq ft)",
    "minBeds": "Fewest bedrooms",
    "maxBeds": "Most bedrooms",
    "minBaths": "Fewest bathrooms",
    "maxBaths": "Most bathrooms",
    "minSize": "Smallest size (sq ft)",
    "maxSize": "Largest size (sq ft)",
    "completionYear": "Completion year",
    "completionDate": "Completion date",
    "completionDateTBD": "Completion date to be decided",
    "estimatedCompletionYear": "Estimated completion year",
    "numberOfFloors": "Floors",
    "numberOfUnits": "Units",
    "numberOfFloorPlans": "Floor plans",
    "numberOfIncentives": "Incentives",
    "averagePricePerSqFeet": "Average price per sq ft",
    "endPricePerSqFeet": "Top price per sq ft",
    "ccOrMaintFee": "Maintenance fee",
    "developmentLevies": "Development levies",
    "assignmentFee": "Assignment fee",
    "parkingCost": "Parking price",
    "parkingMaintainance": "Parking maintenance",
    "storageCost": "Locker price",
    "lockerMaintainance": "Locker maintenance",
    "contactForPricing": "Prices on request",
    "isFeatured": "Featured",
    "unitNumber": "Unit number",
    "floor": "Floor",
    "exposure": "Exposure",
    "amenities": "Amenities",
    "streetName": "Street",
    "fullAddress": "Address",
    "incentives": "Incentives",
    "paymentStructures": "Deposit structures",
}
"""Fields a person meets in a listing's history or a CSV; any other is spelt out from its name."""
BEDROOMS_GROUP = "floorPlans.numberOfBedrooms"
NOT_GIVEN = "Not given"
"""A group whose value the listings do not give."""


def _spelt_out(name: str) -> str:
    """``sellingStatusUpdateTimestamp`` → ``Selling status update timestamp``; ``floorPlans.squareFeet`` → its
    last part's words."""
    last = name.rpartition(".")[2]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", last).lower()
    return words[:1].upper() + words[1:]


def scope_label(scope: str | None) -> str:
    return SCOPES.get(scope or "", _spelt_out(scope or ""))


def change_label(change: str | None) -> str:
    return CHANGES.get(change or "", _spelt_out(change or ""))


def field_label(field: str | None) -> str:
    """A field as people name it: ``startPrice`` → ``Start price``; blank for none."""
    if not field:
        return ""
    return FIELDS.get(field) or FIELDS.get(field.rpartition(".")[2]) or _spelt_out(field)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def bedrooms_label(value: Any) -> str:
    """``0`` → ``Studio``, ``1.5`` → ``1 bed + den``, ``2`` → ``2 bed``; text that is not a number as it is."""
    number = _number(value)
    if number is None:
        return NOT_GIVEN if blank(value) else str(value)
    if number == 0:
        return "Studio"
    whole = math.floor(number)
    if number - whole == 0.5:
        return f"{whole} bed + den"
    return f"{number:g} bed"


def group_label(group_by: str | None, value: Any) -> str:
    """A market group's name: bedrooms in words, others as the listings give them; "Not given" for none."""
    if blank(value):
        return NOT_GIVEN
    if group_by == BEDROOMS_GROUP:
        return bedrooms_label(value)
    return str(value)


def group_order(group_by: str | None, value: Any) -> tuple[int, float]:
    """A key for a stable sort of groups as people count them: bedrooms by number (Studio, 1 bed, 1 bed + den,
    2 bed…); other groups keep their order (the service's, largest first); "Not given" last."""
    if blank(value):
        return (2, 0.0)
    number = _number(value) if group_by == BEDROOMS_GROUP else None
    return (0, number) if number is not None else (1, 0.0)


def blank(value: Any) -> bool:
    """None, NaN (pandas' missing value) or empty text."""
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    try:
        import pandas as pd  # the dashboard's frames; the library works without it

        if value is pd.NaT or value is pd.NA:
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(value, str) and not value.strip()


def cell(value: Any) -> Any:
    """A value as a table or CSV holds it: blank ("") where unknown, never ``nan`` or ``None``."""
    return "" if blank(value) else value


# -- filters -------------------------------------------------------------------------------------------------------


def _money(value: float) -> str:
    return f"${value:,.0f}"


def _amount(spec: RangeSpec, value: float) -> str:
    if spec.unit == "price":
        return _money(value)
    if spec.unit == "size":
        return f"{value:,.0f}"
    return f"{value:g}"


PLACES = ("city", "hood")
RANGE_UNITS = {"beds": " bed", "baths": " bath", "size": " sq ft"}


def range_words(spec: RangeSpec, low: float | None, high: float | None) -> str:
    """``2 bed``, ``2+ bed``, ``up to $800,000``, ``600–1,200 sq ft``, ``completing 2026–2028``."""
    if spec.param == "beds" and low is not None and low == high:
        return bedrooms_label(low)
    unit = RANGE_UNITS.get(spec.param, "")
    if low is not None and high is not None:
        text = _amount(spec, low) if low == high else f"{_amount(spec, low)}–{_amount(spec, high)}"
    elif low is not None:
        text = f"{_amount(spec, low)}+" if spec.unit != "price" else f"from {_amount(spec, low)}"
    elif high is not None:
        text = f"up to {_amount(spec, high)}"
    else:
        return ""
    if spec.param == "year":
        return f"completing {text}"
    return text + unit


def describe_filters(state: FilterState, names: Mapping[str, str] | None = None) -> str:
    """A set of filters in people's words: ``“rooftop” · Toronto · Selling Now · 2 bed · up to $800,000 ·
    available units``; builders by name where ``names`` has them; "Every listing" for none."""
    parts = [f"“{state.text}”"] if state.text else []
    for spec in sorted(FACETS, key=lambda f: f.param not in PLACES):  # where first, as people say it
        values = state.facets.get(spec.param, ())
        if values:
            shown = [(names or {}).get(v) or f"{spec.label} {spec.to_url(v)}" if spec.collection else v for v in values]
            parts.append(" or ".join(shown))
    for spec in RANGES:
        if spec.param in state.ranges:
            parts.append(range_words(spec, *state.ranges[spec.param]))
    if state.available:
        parts.append("available units")
    return " · ".join(p for p in parts if p) or "Every listing"
