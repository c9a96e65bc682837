"""A listing's floor plans: a table that sorts by header click and filters by status, bedrooms and price, and a
chart of price against size."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import altair as alt
import pandas as pd
import streamlit as st

from components.formatting import MONEY_FORMAT, SIZE_FORMAT
from components.images import safe_image_source
from precon.client.models import FloorPlan

COLUMNS = {
    "image": st.column_config.ImageColumn("Plan", width="small"),
    "name": st.column_config.TextColumn("Name", width="medium"),
    "type": st.column_config.TextColumn("Type"),
    "beds": st.column_config.NumberColumn("Beds", format="%g"),
    "baths": st.column_config.NumberColumn("Baths", format="%g"),
    "sqft": st.column_config.NumberColumn("Size", format=SIZE_FORMAT),
    "price": st.column_config.NumberColumn("Price (CAD)", format=MONEY_FORMAT, help="—: contact for pricing"),
    "price_per_sqft": st.column_config.NumberColumn("$/sq ft", format=MONEY_FORMAT),
    "status": st.column_config.TextColumn("Status"),
    "available": st.column_config.NumberColumn("Available", format="%d", help="Units available, where it lists them"),
    "sold": st.column_config.NumberColumn("Sold", format="%d", help="Units sold, where the plan lists them"),
    "exposure": st.column_config.TextColumn("Exposure"),
}
COLOUR_BY = {"Bedrooms": "beds_label", "Status": "status"}
PRICE_STEP = 5_000
MATCH_LABEL = "Matches"
MATCH_HELP = "Matches the unit filters of the search this listing was opened from"
SLIDER_MONEY_FORMAT = "$%,d"
"""Whole dollars, thousands separated, as sliders print them: ``$689,990``."""


def plan_frame(plans: Sequence[FloorPlan]) -> pd.DataFrame:
    """One row per floor plan, in the table's columns."""
    rows = [
        {
            "image": safe_image_source(plan.image.url) if plan.image else None,
            "name": plan.name or "—",
            "type": ", ".join(plan.floorPlanType) or None,
            "beds": plan.numberOfBedrooms,
            "baths": plan.numberOfBathrooms,
            "sqft": plan.squareFeet,
            "price": plan.startPrice or None,
            "price_per_sqft": round(plan.price_per_square_foot, 2) if plan.price_per_square_foot else None,
            "status": plan.status or "Unknown",
            "available": len(plan.available_units) if plan.units else None,
            "sold": sum(1 for unit in plan.units if unit.status == "Sold") if plan.units else None,
            "exposure": ", ".join(plan.exposure) or None,
        }
        for plan in plans
    ]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in ("beds", "baths", "sqft", "price", "price_per_sqft", "available", "sold"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame


def beds_label(beds: float | None) -> str:
    if beds is None or pd.isna(beds):
        return "Unknown"
    return "Studio" if beds == 0 else f"{beds:g} bed"


def filter_plans(
    frame: pd.DataFrame,
    statuses: Sequence[str] = (),
    beds: Sequence[float] = (),
    max_price: float | None = None,
) -> pd.DataFrame:
    """The plans with one of ``statuses`` and of ``beds`` (empty: any) priced at most ``max_price`` (``None``: any;
    a plan without a price is left out once a price limit is set)."""
    kept = frame
    if statuses:
        kept = kept[kept["status"].isin(list(statuses))]
    if beds:
        kept = kept[kept["beds"].isin(list(beds))]
    if max_price is not None:
        kept = kept[kept["price"].notna() & (kept["price"] <= max_price)]
    return kept


def price_size_chart(frame: pd.DataFrame, colour: str) -> alt.Chart | None:
    """Price against size, one point per plan with a price and a size, coloured by ``colour`` (a column)."""
    points = frame.dropna(subset=["price", "sqft"]).copy()
    if points.empty:
        return None
    points["beds_label"] = points["beds"].map(beds_label)
    order = list(dict.fromkeys(points.sort_values("beds", na_position="last")[colour]))
    return (
        alt.Chart(points)
        .mark_circle(size=110, opacity=0.85, stroke="white", strokeWidth=1)
        .encode(
            x=alt.X("sqft:Q", title="Size (sq ft)", scale=alt.Scale(zero=False)),
            y=alt.Y("price:Q", title="Price (CAD)", scale=alt.Scale(zero=False), axis=alt.Axis(format="$,.0f")),
            color=alt.Color(f"{colour}:N", title="Bedrooms" if colour == "beds_label" else "Status", sort=order),
            tooltip=[
                alt.Tooltip("name:N", title="Plan"),
                alt.Tooltip("beds:Q", title="Beds"),
                alt.Tooltip("baths:Q", title="Baths"),
                alt.Tooltip("sqft:Q", title="Sq ft", format=",.0f"),
                alt.Tooltip("price:Q", title="Price", format="$,.0f"),
                alt.Tooltip("price_per_sqft:Q", title="$/sq ft", format="$,.0f"),
                alt.Tooltip("status:N", title="Status"),
                alt.Tooltip("exposure:N", title="Exposure"),
            ],
        )
        .properties(height=320)
        .interactive()
    )


def price_steps(frame: pd.DataFrame) -> tuple[int, int] | None:
    """The price slider's ends (whole steps around the plans' prices); None where there is no range to slide."""
    prices = frame["price"].dropna()
    if not len(prices) or prices.min() >= prices.max():
        return None
    return int(prices.min() // PRICE_STEP * PRICE_STEP), int(-(-prices.max() // PRICE_STEP) * PRICE_STEP)


def plan_filters(
    frame: pd.DataFrame, key: str, steps: tuple[int, int] | None
) -> tuple[list[str], list[float], float | None]:
    """The status, bedrooms and price-limit filters (the limit None where it is at its end, or there is none)."""
    statuses = sorted(frame["status"].dropna().unique())
    bed_options = sorted(b for b in frame["beds"].dropna().unique())
    columns = st.columns([2, 2, 3])
    chosen_status = columns[0].multiselect(
        "Status", statuses, key=f"{key}_status", placeholder="Any status", select_all=False
    )
    chosen_beds = columns[1].multiselect(
        "Bedrooms", bed_options, key=f"{key}_beds", format_func=beds_label, placeholder="Any", select_all=False
    )
    max_price: float | None = None
    if steps is not None:
        low, high = steps
        limit = columns[2].slider(
            "Max price (CAD)",
            min_value=low,
            max_value=high,
            value=high,
            step=PRICE_STEP,
            format=SLIDER_MONEY_FORMAT,
            key=f"{key}_max_price",
        )
        if limit < high:
            max_price = float(limit)
    return chosen_status, chosen_beds, max_price


def render_floor_plans(
    plans: Sequence[FloorPlan] | None,
    key: str,
    matched: frozenset[int] | None = None,
    preset: Callable[[pd.DataFrame, tuple[int, int] | None], None] | None = None,
) -> None:
    """Filters, the table and the chart; ``key`` keeps this listing's widgets apart from another's. ``matched``:
    the plans (by position) a search's unit filters match, marked in a column of their own; ``preset`` sets the
    filters' state before they are drawn (from the frame and the price slider's ends)."""
    if not plans:
        st.info("No floor plans are published for this listing yet.", icon="📐")
        return
    frame = plan_frame(plans)
    if matched is not None:
        frame.insert(1, "match", [index in matched for index in range(len(frame))])
    steps = price_steps(frame)
    if preset is not None:
        preset(frame, steps)

    chosen_status, chosen_beds, max_price = plan_filters(frame, key, steps)
    shown = filter_plans(frame, chosen_status, chosen_beds, max_price)

    st.caption(
        f"Showing {len(shown)} of {len(frame)} floor plans. Click a column header to sort."
        + (" Plans without a price are hidden while a price limit is set." if max_price is not None else "")
    )
    st.dataframe(
        shown,
        column_config={**COLUMNS, "match": st.column_config.CheckboxColumn(MATCH_LABEL, help=MATCH_HELP)},
        hide_index=True,
        width="stretch",
        row_height=48,
        placeholder="—",
        key=f"{key}_table",
    )
    colour = st.radio("Colour the chart by", list(COLOUR_BY), horizontal=True, key=f"{key}_colour")
    chart = price_size_chart(shown, COLOUR_BY[colour or "Bedrooms"])
    if chart is None:
        st.caption("No plan shown has both a price and a size to chart.")
    else:
        st.altair_chart(chart, width="stretch")
