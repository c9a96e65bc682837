"""Listings as a table: cover image, name, place, status, prices, size, completion. A click on a name opens the
listing in this tab (the session, and so the way back, kept)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import streamlit as st

from components import listing_marks, shared_filters
from components.formatting import completion, listing_link_value, number_range, price_text
from components.images import safe_image_source
from precon.client.models import Listing

COLUMNS = {
    "cover": st.column_config.ImageColumn("Cover", width="small"),
    "name": st.column_config.LinkColumn("Name", display_text=r"#(.*)$", width="large"),
    "city": st.column_config.TextColumn("City"),
    "status": st.column_config.TextColumn("Status"),
    "price_from": st.column_config.TextColumn("Price from"),
    "price_to": st.column_config.TextColumn("Price to"),
    "price_per_sqft": st.column_config.NumberColumn("$/sq ft", format="$%,.0f"),
    "beds": st.column_config.TextColumn("Beds"),
    "baths": st.column_config.TextColumn("Baths"),
    "completion": st.column_config.TextColumn("Completion"),
}
SELECTABLE_COLUMNS = {
    **COLUMNS,
    "name": st.column_config.TextColumn("Name", width="large", help="Click a name to open the listing"),
}
"""Where a click on the name opens the listing, the name is plain text: a link would open another tab."""
OPENING_MODES: list[Any] = ["single-row", "single-cell"]
"""A table whose rows open a record: a click on its name cell opens it (a cell selection), and so does ticking the
row's box (a row selection, what the keyboard reaches: Space on a row)."""


def listing_frame(
    listings: Sequence[Listing], extra: dict[str, Sequence[object]] | None = None, *, links: bool = True
) -> pd.DataFrame:
    """One row per listing, in the columns the table shows (and any ``extra`` ones after them). ``links``: the name
    as a link to the listing page (``./listing?id=…#Name``), else the name alone."""
    rows = [
        {
            "cover": safe_image_source(listing.coverPhoto.url) if listing.coverPhoto else None,
            "name": listing_link_value(listing) if links else (listing.name or listing.id),
            "city": listing.cityOrDistrict,
            "status": listing.sellingStatus,
            "price_from": price_text(listing.startPrice, listing.contactForPricing),
            "price_to": price_text(listing.endPrice, listing.contactForPricing),
            "price_per_sqft": listing.averagePricePerSqFeet or None,
            "beds": number_range(listing.minBeds, listing.maxBeds),
            "baths": number_range(listing.minBaths, listing.maxBaths),
            "completion": completion(listing),
        }
        for listing in listings
    ]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for name, values in (extra or {}).items():
        frame[name] = list(values)
    return frame


def picked_row(event: Any, column: str, count: int) -> int | None:
    """The row of a table (of ``count`` rows) a person opened: the row ticked, or the row of the cell clicked in
    ``column`` (the name); None for a click elsewhere, or no click."""
    selection = getattr(event, "selection", None)
    if selection is None:
        return None
    rows = list(getattr(selection, "rows", None) or [])
    rows += [row for row, name in getattr(selection, "cells", None) or [] if name == column]
    return next((row for row in rows if 0 <= row < count), None)


def open_listing(listing_id: str, opened_from: str) -> None:
    """The listing page, in this tab; its "Back to results" link returns to ``opened_from`` (a page's script) as it
    is now, with the unit filters of its address (the listing marks what they match). Call it in the page's run,
    not in a callback: a page switch is allowed only there."""
    shared_filters.remember_results(opened_from, dict(st.query_params.to_dict()))
    st.switch_page("views/listing.py", query_params=listing_marks.listing_params(listing_id))


def listing_table(
    listings: Sequence[Listing],
    *,
    key: str,
    opened_from: str,
    extra: dict[str, Sequence[object]] | None = None,
    extra_config: dict[str, object] | None = None,
    height: int | str = "auto",
) -> None:
    """The table of listings; a click on a name (or ticking a row) opens the listing page in this tab."""
    if not listings:
        return
    frame = listing_frame(listings, {**(extra or {}), "id": [listing.id for listing in listings]}, links=False)
    event = st.dataframe(
        frame,
        placeholder="—",
        column_config={**SELECTABLE_COLUMNS, "id": None, **(extra_config or {})},
        hide_index=True,
        width="stretch",
        height=height,
        key=key,
        row_height=48,
        on_select="rerun",
        selection_mode=OPENING_MODES,
    )
    row = picked_row(event, "name", len(listings))
    if row is not None and listings[row].id:
        open_listing(listings[row].id or "", opened_from)
