"""Listings as a table: cover image, name linking to the listing page, place, status, prices, size, completion."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.formatting import completion, listing_link_value, number_range
from precon.models import Listing

COLUMNS = {
    "cover": st.column_config.ImageColumn("Cover", width="small"),
    "name": st.column_config.LinkColumn("Name", display_text=r"#(.*)$", width="large"),
    "city": st.column_config.TextColumn("City"),
    "status": st.column_config.TextColumn("Status"),
    "price_from": st.column_config.NumberColumn("Price from", format="$%,.0f"),
    "price_to": st.column_config.NumberColumn("Price to", format="$%,.0f"),
    "price_per_sqft": st.column_config.NumberColumn("$/sq ft", format="$%,.0f"),
    "beds": st.column_config.TextColumn("Beds"),
    "baths": st.column_config.TextColumn("Baths"),
    "completion": st.column_config.TextColumn("Completion"),
}


def listing_frame(listings: Sequence[Listing], extra: dict[str, Sequence[object]] | None = None) -> pd.DataFrame:
    """One row per listing, in the columns the table shows (and any ``extra`` ones after them)."""
    rows = [
        {
            "cover": listing.coverPhoto.url if listing.coverPhoto else None,
            "name": listing_link_value(listing),
            "city": listing.cityOrDistrict,
            "status": listing.sellingStatus,
            "price_from": listing.startPrice,
            "price_to": listing.endPrice,
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


def listing_table(
    listings: Sequence[Listing],
    *,
    key: str | None = None,
    extra: dict[str, Sequence[object]] | None = None,
    extra_config: dict[str, object] | None = None,
    height: int | str = "auto",
) -> None:
    """The table of listings; the name opens the listing page."""
    if not listings:
        return
    frame = listing_frame(listings, extra)
    st.dataframe(
        frame,
        column_config={**COLUMNS, **(extra_config or {})},
        hide_index=True,
        width="stretch",
        height=height,
        key=key,
        row_height=48,
    )
