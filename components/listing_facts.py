"""One listing's own sections: photos, key facts, address and map, pricing and fees, details, incentives,
amenities and the companies behind it.

The values are worked out by plain functions (``key_facts``, ``pricing_rows``, ``companies``…) that the page and
the tests share; the ``render_*`` functions draw them. User text reaches markdown only through
:func:`components.formatting.markdown_text`, and links only when they are ``http(s)`` addresses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from components import basemap, maps
from components.formatting import (
    MISSING,
    completion_said,
    markdown_text,
    money,
    number_range,
    profile_url,
    size_text,
)
from components.images import safe_image_source
from precon.client.models import Listing, Profile
from precon.dashboard.listing_checks import Contradiction, Section, incentive_plain_text

REFERENCE_ROLES: tuple[tuple[str, str, str], ...] = (
    ("builders", "Builders", "Builder"),
    ("architects", "Architects", "Architect"),
    ("interiorDesigners", "Interior designers", "Interior designer"),
    ("marketingCompanies", "Marketing", "Marketing company"),
    ("salesCompanies", "Sales companies", "Sales company"),
    ("salesCentres", "Sales centres", "Sales centre"),
    ("owners", "Owners", "Owner"),
)
"""Listing fields naming companies: (field, plural label, singular label), in the order the page shows them."""

LISTING_REFERENCES: tuple[str, ...] = tuple(field for field, _, _ in REFERENCE_ROLES)
"""What the listing is fetched with in ``referrences``, so its companies come back with their names."""

GALLERY_COLUMNS = 4
MAP_RADIUS_M = 1_000
NEARBY_KM = 25
LISTING_ZOOM = 12.0
BASEMAP_HELP = "Without it the map draws offline: the points and the circle on the bundled outline of land and lakes."
YES, NO = "✓", "✗"
_WEB_ADDRESS = re.compile(r"^https?://[^\s<>\"'`]+$", re.IGNORECASE)
_EMAIL = re.compile(r"^[^@\s<>()\[\]]+@[^@\s<>()\[\]]+\.[A-Za-z]{2,}$")


def web_address(value: str | None) -> str | None:
    """``value`` when it is an ``http(s)`` address safe to link to, else ``None``."""
    value = (value or "").strip()
    return value if _WEB_ADDRESS.match(value) else None


def email_address(value: str | None) -> str | None:
    value = (value or "").strip()
    return value if _EMAIL.match(value) else None


def link(text: str, url: str) -> str:
    """A markdown link with ``text`` escaped; ``url`` must be one of ours or checked by :func:`web_address`."""
    return f"[{markdown_text(text)}]({url.replace(' ', '%20').replace(')', '%29')})"


# -- companies ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Company:
    name: str
    path: str | None
    url: str | None


def company(reference: str | Profile, collection: str) -> Company:
    """A reference as the page shows it: a profile by name, or a path whose profile was not found, by its id."""
    if isinstance(reference, Profile):
        path = reference.path or (f"{collection}/{reference.profile_id}" if reference.profile_id else None)
        name = reference.name or (path or MISSING)
        return Company(name, path, profile_url(path) if path else None)
    path = reference if "/" in reference else f"{collection}/{reference}"
    return Company(reference.partition("/")[2] or reference, path, profile_url(path))


def companies(listing: Listing) -> dict[str, list[Company]]:
    """The companies of each role that has any, by plural label, in :data:`REFERENCE_ROLES` order."""
    from precon.client.models import REFERENCE_FIELDS

    found: dict[str, list[Company]] = {}
    for field, label, _ in REFERENCE_ROLES:
        references = getattr(listing, field, None) or []
        if references:
            found[label] = [company(ref, REFERENCE_FIELDS.get(field, field)) for ref in references]
    return found


def builder_names(listing: Listing) -> str:
    names = [c.name for c in companies(listing).get("Builders", [])]
    return ", ".join(names) if names else MISSING


# -- facts --------------------------------------------------------------------------------------------------


def when(text: str | None, year: int | None, tbd: bool | None) -> str:
    if tbd:
        return "TBD"
    return text or (str(year) if year else MISSING)


def _count(value: int | None) -> str:
    return MISSING if value is None else f"{value:,}"


def key_facts(listing: Listing) -> list[tuple[str, str]]:
    """(fact, value) pairs, values as plain text."""
    size = size_text(listing.minSize, listing.maxSize)
    return [
        ("Selling status", listing.sellingStatus or MISSING),
        ("Construction status", listing.constructionStatus or MISSING),
        ("Type", ", ".join(listing.type) or MISSING),
        ("Builders", builder_names(listing)),
        ("Units", _count(listing.numberOfUnits)),
        ("Floors", _count(listing.numberOfFloors)),
        ("Floor plans", _count(listing.numberOfFloorPlans)),
        ("Bedrooms", number_range(listing.minBeds, listing.maxBeds)),
        ("Bathrooms", number_range(listing.minBaths, listing.maxBaths)),
        ("Size", size),
        ("Completion", completion_said(listing)),
        (
            "Estimated completion",
            when(listing.estimatedCompletionDate, listing.estimatedCompletionYear, listing.estimatedCompletionDateTBD),
        ),
        (
            "First occupancy",
            when(listing.firstOccupancyDate, listing.firstOccupancyYear, listing.firstOccupancyDateTBD),
        ),
        (
            "Construction started",
            when(listing.constructionStarted, listing.constructionStartedYear, listing.constructionStartedTBD),
        ),
        ("Sales started", when(listing.salesStarted, listing.salesStartedYear, listing.salesStartedTBD)),
        ("Exposures", ", ".join(listing.exposures) or MISSING),
        ("Updated", listing.updatedAt.strftime("%Y-%m-%d") if listing.updatedAt else MISSING),
    ]


def address(listing: Listing) -> str:
    if listing.fullAddress:
        return listing.fullAddress
    street = " ".join(str(p) for p in (listing.streetNumber, listing.streetName) if p)
    parts = [street, listing.cityOrDistrict, listing.state, listing.postalCode]
    return ", ".join(p for p in parts if p) or MISSING


# -- pricing ------------------------------------------------------------------------------------------------


def _money(value: float | None, unit: str = "", cents: bool = False) -> str:
    return money(value, unit, cents)


def _included(flag: bool | None, yes: str = "Included", no: str = "Extra") -> str:
    if flag is None:
        return MISSING
    return f"{YES} {yes}" if flag else f"{NO} {no}"


def pricing_rows(listing: Listing) -> list[dict[str, str]]:
    """Prices and fees, each with its value, whether it is included in the price, and any note."""
    if listing.contactForPricing and not (listing.startPrice or listing.endPrice):
        start, end = "Contact for pricing", MISSING
    else:
        start, end = _money(listing.startPrice), _money(listing.endPrice)
    parking_note = listing.parkingRestriction or ("No parking" if listing.hasParking is False else "")
    locker_note = listing.storageRestriction or ("No locker" if listing.hasLocker is False else "")
    if listing.assignmentFeeFree is None:
        assignment = MISSING
    else:
        assignment = _included(listing.assignmentFeeFree, "Free", "Charged")
    rows = [
        ("Start price", start, MISSING, ""),
        ("End price", end, MISSING, ""),
        ("Price per sq ft (average)", _money(listing.averagePricePerSqFeet or None, "/sq ft"), MISSING, ""),
        ("Price per sq ft (end)", _money(listing.endPricePerSqFeet or None, "/sq ft"), MISSING, ""),
        (
            "Maintenance fee",
            _money(listing.ccOrMaintFee, "/sq ft/month", cents=True),
            _included(listing.ccOrMaintFeeIncluded),
            "",
        ),
        ("Parking", _money(listing.parkingCost), _included(listing.parkingCostIncluded), parking_note),
        (
            "Parking maintenance",
            _money(listing.parkingMaintainance, "/month"),
            _included(listing.parkingMaintainanceIncluded),
            "",
        ),
        ("Locker", _money(listing.storageCost), _included(listing.storageCostIncluded), locker_note),
        (
            "Locker maintenance",
            _money(listing.lockerMaintainance, "/month"),
            _included(listing.lockerMaintainanceIncluded),
            "",
        ),
        (
            "Development levies",
            listing.developmentLevies or MISSING,
            _included(listing.developmentLeviesIncluded),
            "",
        ),
        (
            "Assignment fee",
            _money(listing.assignmentFee) if not listing.assignmentFeeFree else "Free",
            assignment,
            "",
        ),
        ("Utilities metering", listing.metering or MISSING, _included(listing.meteringIncluded), ""),
    ]
    return [{"Item": item, "Value": value, "Included": included, "Notes": note} for item, value, included, note in rows]


# -- incentives ---------------------------------------------------------------------------------------------


def incentive_text(incentive: Any) -> str:
    """An incentive as markdown: its title in bold and its description, whatever shape it comes in."""
    if isinstance(incentive, str):
        return markdown_text(incentive)
    if isinstance(incentive, dict):
        title = incentive.get("title") or incentive.get("name")
        body = incentive.get("description") or incentive.get("text") or incentive.get("details")
        if title or body:
            parts = [f"**{markdown_text(str(title))}**" if title else "", markdown_text(str(body)) if body else ""]
            return " — ".join(p for p in parts if p)
        return markdown_text(", ".join(f"{k}: {v}" for k, v in incentive.items() if v not in (None, "")))
    return markdown_text(str(incentive))


# -- drawing ------------------------------------------------------------------------------------------------


def render_header_metrics(listing: Listing) -> None:
    on_request = listing.contactForPricing and not (listing.startPrice or listing.endPrice)
    columns = st.columns(4)
    columns[0].metric("Start price (CAD)", "On request" if on_request else _money(listing.startPrice))
    columns[1].metric("End price (CAD)", "On request" if on_request else _money(listing.endPrice))
    columns[2].metric("Average $/sq ft", _money(listing.averagePricePerSqFeet or None))
    columns[3].metric("Completion", completion_said(listing))


def render_photos(listing: Listing) -> None:
    """The cover photo large, and the other photos in a gallery below, each captioned with its tags. Only
    addresses :func:`safe_image_source` accepts are drawn: a file path or ``javascript:`` one is left out."""
    cover = safe_image_source(listing.coverPhoto.url) if listing.coverPhoto else None
    photos = [(source, p) for p in listing.photos if (source := safe_image_source(p.url)) and source != cover]
    if cover is None and photos:
        (cover, _), photos = photos[0], photos[1:]
    if cover is None:
        st.info("No photos of this listing yet.", icon="🖼️")
        return
    st.image(cover, caption="Cover", width="stretch")
    for start in range(0, len(photos), GALLERY_COLUMNS):
        columns = st.columns(GALLERY_COLUMNS)
        for column, (source, photo) in zip(columns, photos[start : start + GALLERY_COLUMNS], strict=False):
            caption = ", ".join(photo.tags) or photo.name or ""
            column.image(source, caption=caption, width="stretch")


def render_key_facts(listing: Listing) -> None:
    lines = ["| Fact | Value |", "|---|---|"]
    lines += [f"| {fact} | {markdown_text(value)} |" for fact, value in key_facts(listing)]
    st.markdown("\n".join(lines))


def distance_km(a: Listing, b: Listing) -> float:
    """Great-circle distance between two listings with positions."""
    assert a.geoloc is not None and b.geoloc is not None
    lat1, lng1, lat2, lng2 = map(math.radians, (a.geoloc.lat, a.geoloc.lng, b.geoloc.lat, b.geoloc.lng))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lng2 - lng1) / 2) ** 2
    return 2 * 6371.0 * math.asin(min(1.0, math.sqrt(h)))


def render_location(listing: Listing, similar: Sequence[Listing] = ()) -> None:
    """The address, where it is, and a small map: the listing in a 1 km circle, and similar listings close by."""
    st.markdown(f"📍 **{markdown_text(address(listing))}**")
    where = [", ".join(listing.neighbourhood), listing.cityOrDistrict or "", listing.region or "", listing.state or ""]
    shown = " · ".join(markdown_text(w) for w in where if w)
    if shown:
        st.caption(shown)
    if listing.geoloc is None:
        st.caption("No map position is recorded for this listing.")
        return
    lat, lng = listing.geoloc.lat, listing.geoloc.lng
    nearby = [
        other
        for other in similar
        if other.geoloc is not None and other.id != listing.id and distance_km(listing, other) <= NEARBY_KM
    ]
    street = st.toggle(
        "Street basemap (needs internet)", value=False, key=f"listing_basemap:{listing.id}", help=BASEMAP_HELP
    )
    # The Map page's bundled outline (land, lakes, the border) under the dots, so the map is never dots on white.
    layers = [
        *basemap.shapes_layers(filled=not street),
        maps.circle_layer(lat, lng, MAP_RADIUS_M),
        maps.points_layer(nearby, layer_id="similar", radius_px=5),
        maps.centre_layer(lat, lng),
        maps.points_layer([listing], layer_id="listing", radius_px=9),
        basemap.labels_layer([{"name": listing.name or listing.id or "", "lat": lat, "lng": lng, "count": 1}]),
    ]
    view = maps.view(lat, lng, LISTING_ZOOM)
    if nearby:
        view = maps.fitted_view([listing, *nearby])
        view.zoom = min(view.zoom - 0.6, LISTING_ZOOM)  # a margin, so no dot sits on the edge
    st.pydeck_chart(maps.deck(layers, view, basemap=street), height=320)
    legend = f"Large dot: this listing, in a circle of {MAP_RADIUS_M / 1000:g} km"
    if nearby:
        legend += f"; small dots: {len(nearby)} similar listing{'s' if len(nearby) != 1 else ''} within {NEARBY_KM} km"
    st.caption(legend + ".")


def table_height(rows: int, row_height: int = 35) -> int:
    """The height that shows a table's header and all its rows without scrolling."""
    return (rows + 1) * row_height + 3


def render_pricing(listing: Listing) -> None:
    frame = pd.DataFrame(pricing_rows(listing))
    st.dataframe(
        frame,
        placeholder="—",
        hide_index=True,
        width="stretch",
        height=table_height(len(frame)),
        column_config={
            "Item": st.column_config.TextColumn("Item", width="medium"),
            "Value": st.column_config.TextColumn("Value (CAD)", width="medium"),
            "Included": st.column_config.TextColumn(
                "Included", help="✓ included in the purchase price, ✗ paid on top; for the assignment fee, ✓ free"
            ),
            "Notes": st.column_config.TextColumn("Notes"),
        },
        key="listing_pricing",
    )


def render_details(listing: Listing) -> None:
    """Finishes, ceilings, parking and locker, virtual tour, videos and co-operating brokerages."""
    lines = []
    if listing.ceilingHeights:
        lines.append(f"- **Ceiling heights:** {markdown_text(listing.ceilingHeights)}")
    if listing.finishes:
        lines.append(f"- **Finishes:** {markdown_text(listing.finishes)}")
    if listing.hasParking is not None:
        lines.append(f"- **Parking:** {'available' if listing.hasParking else 'none'}")
    if listing.hasLocker is not None:
        lines.append(f"- **Locker:** {'available' if listing.hasLocker else 'none'}")
    tour = web_address(listing.virtualShowing)
    if tour:
        lines.append(f"- **Virtual tour:** {link('open the tour', tour)}")
    for number, video in enumerate(listing.videos, 1):
        url = web_address(video) if isinstance(video, str) else None
        if url:
            lines.append(f"- **Video:** {link(f'video {number}' if len(listing.videos) > 1 else 'video', url)}")
    for brokerage in listing.brokerages:
        if isinstance(brokerage, dict) and brokerage.get("name"):
            commission = brokerage.get("commission")
            commission = f" (commission {markdown_text(str(commission))})" if commission else ""
            lines.append(f"- **Co-operating brokerage:** {markdown_text(str(brokerage['name']))}{commission}")
    if lines:
        st.markdown("\n".join(lines))


SECTION_NAMES: dict[Section, str] = {"pricing": "Pricing and fees", "deposits": "Deposit structure"}


def render_contradictions(found: Sequence[Contradiction], section: Section) -> None:
    """A warning listing the contradictions that concern ``section``, to show next to its facts."""
    shown = [c for c in found if c.section == section]
    if not shown:
        return
    lines = [f"- {markdown_text(c.message)}" for c in shown]
    head = "**An incentive contradicts the listing**" if len(shown) == 1 else "**Incentives contradict the listing**"
    head += " — ask the builder which applies:"
    st.warning(head + "\n\n" + "\n".join(lines), icon="⚠️")


def render_incentives(listing: Listing, found: Sequence[Contradiction] = ()) -> None:
    """The incentives; one that contradicts the fees or deposits is marked, saying where the warning is."""
    if not listing.incentives:
        st.caption("No incentives are advertised.")
        return
    lines = []
    for incentive in listing.incentives:
        text = incentive_plain_text(incentive)
        where = sorted({SECTION_NAMES[c.section] for c in found if c.incentive == text})
        mark = f" ⚠️ _contradicted: see {markdown_text(' and '.join(where))}_" if where else ""
        lines.append(f"- 🎁 {incentive_text(incentive)}{mark}")
    st.markdown("\n".join(lines))


def render_amenities(listing: Listing) -> None:
    if not listing.amenities:
        st.caption("No amenities are listed.")
        return
    columns = st.columns(3)
    per_column = -(-len(listing.amenities) // 3)
    for index, column in enumerate(columns):
        chunk = listing.amenities[index * per_column : (index + 1) * per_column]
        if chunk:
            column.markdown("\n".join(f"- {markdown_text(a)}" for a in chunk))


def render_companies(listing: Listing) -> None:
    """Each role's companies by name, each name opening its profile page in this tab (the session, and so the way
    back to the results, kept)."""
    found = companies(listing)
    if not found:
        st.caption("No companies are recorded for this listing.")
        return
    for label, entries in found.items():
        with st.container(horizontal=True, gap="small", vertical_alignment="center"):
            st.markdown(f"**{label}:**", width="content")
            for entry in entries:
                collection, _, profile_id = (entry.path or "").partition("/")
                if profile_id:
                    st.page_link(
                        "views/profile.py", label=entry.name, query_params={"collection": collection, "id": profile_id}
                    )
                else:
                    st.markdown(markdown_text(entry.name), width="content")
