"""How values read on the dashboard: prices in CAD, ranges, dates, links to records."""

from __future__ import annotations

from datetime import date
from urllib.parse import quote

from precon.client.models import Listing, Profile
from precon.dashboard.completion import completion_note

MISSING = "—"


def plural(count: int, word: str) -> str:
    """``1 listing``, ``2,500 listings``."""
    return f"{count:,} {word}{'' if count == 1 else 's'}"


MONEY_FORMAT = "$%,.0f"
"""Whole dollars with thousands separated, for ``st.column_config.NumberColumn`` and sliders: ``$689,990``."""
CENTS_FORMAT = "$%,.2f"
SIZE_FORMAT = "%,d sq ft"
"""Square feet, thousands separated: ``1,250 sq ft``."""
SIZE_UNIT = " sq ft"


def cad(value: float | None) -> str:
    """Whole dollars: ``$689,990``; "—" if unknown."""
    return MISSING if value is None else f"${value:,.0f}"


def money(value: float | None, unit: str = "", cents: bool = False) -> str:
    """``$689,990``, ``$0.62/sq ft/month`` with ``cents``, ``$450/month`` with a ``unit``; "—" if unknown."""
    if value is None:
        return MISSING
    return (f"${value:,.2f}" if cents else cad(value)) + unit


def sqft(value: float | None) -> str:
    """``1,250 sq ft``; "—" if unknown or zero."""
    return f"{value:,.0f}{SIZE_UNIT}" if value else MISSING


def size_text(low: float | None, high: float | None) -> str:
    """A size range with its unit: ``540–1,120 sq ft``, ``1,250 sq ft``; "—" if unknown."""
    shown = size_range(low, high)
    return shown if shown == MISSING else shown + SIZE_UNIT


def percent(value: float | None) -> str:
    """``2.5%``, ``20%``; "—" if unknown."""
    return MISSING if value is None else f"{value:g}%"


def number_range(low: float | None, high: float | None, unit: str = "") -> str:
    def text(value: float) -> str:
        return f"{value:g}"

    if low is None and high is None:
        return MISSING
    if low is None or high is None or low == high:
        return text(low if low is not None else high) + unit  # type: ignore[arg-type]
    return f"{text(low)}–{text(high)}{unit}"


def price_text(price: float | None, contact_for_pricing: bool | None = None) -> str:
    """A starting price: ``$374,990``; "On request" where the builder gives prices on request; "—" if unknown."""
    if price:
        return cad(price)
    return "On request" if contact_for_pricing else MISSING


def size_range(low: float | None, high: float | None) -> str:
    """``540–1,120`` square feet, thousands separated; "—" if unknown."""
    if not low and not high:
        return MISSING
    if not low or not high or low == high:
        return f"{(low or high):,.0f}"
    return f"{low:,.0f}–{high:,.0f}"


def price_range(low: float | None, high: float | None) -> str:
    if low is None and high is None:
        return "Contact for pricing"
    if low is None or high is None or low == high:
        return cad(low if low is not None else high)
    return f"{cad(low)} – {cad(high)}"


def listing_url(listing_id: str | None) -> str:
    """The listing page's address, relative to the app (what a link column or markdown link takes)."""
    return f"./listing?id={quote(listing_id or '')}"


def listing_link_value(listing: Listing) -> str:
    """A link column's value: the page address, with the name after ``#`` for the column to show."""
    return f"{listing_url(listing.id)}#{listing.name or listing.id}"


def profile_url(path: str | None) -> str:
    """The profile page's address: ``Builders/5fH9…`` → ``./profile?collection=Builders&id=5fH9…``."""
    collection, _, profile_id = (path or "").partition("/")
    return f"./profile?collection={quote(collection)}&id={quote(profile_id)}"


def profile_name(reference: str | Profile) -> str:
    if isinstance(reference, Profile):
        return reference.name or reference.path or MISSING
    return reference


def completion_said(listing: Listing, today: date | None = None) -> str:
    """The completion date, with "completed" or "completion date passed" where it is behind the listing
    (:mod:`precon.dashboard.completion`): ``Fall 2024 (completed)``, never read as upcoming."""
    stated = completion(listing)
    note = completion_note(listing, today or date.today())
    if note is None:
        return stated
    return note[0].upper() + note[1:] if stated == MISSING else f"{stated} ({note})"


def completion(listing: Listing) -> str:
    if listing.completionDateTBD:
        return "TBD"
    return listing.completionDate or (str(listing.completionYear) if listing.completionYear else MISSING)


def markdown_text(text: str | None) -> str:
    """User text made safe for ``st.markdown``: no HTML, no markdown syntax taken from it."""
    if not text:
        return ""
    escaped = text.replace("\\", "\\\\")
    for symbol in "`*_{}[]()#+-.!|<>~$":
        escaped = escaped.replace(symbol, "\\" + symbol)
    return escaped
