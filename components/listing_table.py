"""Listings as a table: cover image, name, place, status, prices, size, completion. A click on a name opens the
listing in this tab (the session, and so the way back, kept); so does ticking its row, which is what the keyboard
reaches (Shift+Space on a row of the grid). Moving the grid's cell cursor, with the mouse or the arrow keys, opens
nothing."""

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
OPENING_MODES: list[Any] = ["single-row"]
"""A table whose rows open a record: ticking a row's box opens it, and so does Shift+Space on a row from the
keyboard. Not a cell selection: the grid sends its cell cursor as the selection on every move, so an arrow key that
landed on a name opened that row."""
KEYBOARD_HINT = "from the keyboard, move to its row in the table and press Shift+Space"


def name_column(label: str, key: str, width: int | str, help: str) -> Any:
    """The name as a button in its cell: a click on it opens the record (read with :func:`picked_row`). A link would
    open another tab; a button cell answers a click only, never the cell cursor passing over it."""
    return st.column_config.ButtonColumn(label, width=width, help=help, type="tertiary", alignment="left", key=key)


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


def picked_row(event: Any, name_key: str, count: int) -> int | None:
    """The row of a table (of ``count`` rows) a person opened: the row whose name button (of ``name_key``) was
    clicked on this run, or the row ticked; None without either."""
    clicked = st.session_state.get(name_key)  # a click's row, present only on the run the click caused
    rows = [clicked["row"]] if clicked is not None else []
    selection = getattr(event, "selection", None)
    rows += list(getattr(selection, "rows", None) or [])
    return next((row for row in rows if isinstance(row, int) and 0 <= row < count), None)


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
    name = name_column("Name", f"{key}_open", "large", "Click a name to open the listing")
    event = st.dataframe(
        frame,
        placeholder="—",
        column_config={**COLUMNS, "name": name, "id": None, **(extra_config or {})},
        hide_index=True,
        width="stretch",
        height=height,
        key=key,
        row_height=48,
        on_select="rerun",
        selection_mode=OPENING_MODES,
    )
    row = picked_row(event, f"{key}_open", len(listings))
    if row is not None and listings[row].id:
        open_listing(listings[row].id or "", opened_from)
