"""The building as a grid: a row per floor (the top floor first), a column per stack, each unit coloured by its
status; a click on a unit (or picking it from the list beside) shows it, with its plan's deposits in its dollars."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

import altair as alt
import pandas as pd
import streamlit as st

from components.deposits import render_structure
from components.formatting import MISSING, cad, markdown_text
from precon.client.models import FloorPlan, PaymentStructure

STATUS_COLOURS = {"Available": "#2e9e5b", "Reserved": "#f0a630", "Sold": "#a9a9a9"}
OTHER_COLOUR = "#d9d9d9"
MATCH_COLOUR = "#1d4ed8"
"""The outline of a unit a search's unit filters match."""
ROW_PX, HEADER_PX, MIN_HEIGHT_PX = 24, 110, 150
"""A floor's height, and what the legend and the stacks' axis take above the floors (Streamlit's chart height
includes them)."""
LABELLED_STACKS = 24
"""Up to this many columns a cell is wide enough to print its unit number."""


def grid_data(frame: pd.DataFrame) -> pd.DataFrame:
    """The units as the chart draws them: a floor label sorted as a number, the price as text for the tooltip."""
    data = frame[["unit", "floor", "stack", "plan", "status", "price", "match"]].copy()
    data["match"] = data["match"].astype(bool)
    data["row"] = data.index.astype(str)
    data["floor_label"] = data["floor"].map(lambda f: MISSING if pd.isna(f) else f"{f:.0f}")
    data["price_text"] = data["price"].map(lambda p: cad(None if pd.isna(p) else float(p)))
    data["price"] = data["price"].astype(object).where(data["price"].notna(), None)
    data["floor"] = data["floor"].astype(object).where(data["floor"].notna(), None)
    return data


def _order(values: pd.Series, reverse: bool = False) -> list[str]:
    """Labels in numeric order where they are numbers, others after them."""

    def key(label: str) -> tuple[int, float, str]:
        try:
            return (0, float(label), label)
        except ValueError:
            return (1, 0.0, label)

    ordered = sorted(set(values), key=key)
    return ordered[::-1] if reverse else ordered


def grid_chart(data: pd.DataFrame) -> alt.LayerChart:
    """Floors by stacks, coloured by status, with a click selection named ``unit`` (over the row's id)."""
    statuses = list(STATUS_COLOURS) + sorted(set(data["status"]) - set(STATUS_COLOURS))
    colours = [STATUS_COLOURS.get(status, OTHER_COLOUR) for status in statuses]
    floors, stacks = _order(data["floor_label"], reverse=True), _order(data["stack"])
    picked = alt.selection_point(name="unit", fields=["row"], on="click", clear="dblclick")
    base = alt.Chart(data).encode(
        x=alt.X("stack:O", title="Stack", sort=stacks, axis=alt.Axis(orient="top", labelAngle=0)),
        y=alt.Y("floor_label:O", title="Floor", sort=floors),
    )
    cells = (
        base.mark_rect(strokeWidth=1.5, cornerRadius=2)
        .encode(
            stroke=alt.when(picked, empty=False)
            .then(alt.value("#111111"))
            .when(alt.datum.match)
            .then(alt.value(MATCH_COLOUR))
            .otherwise(alt.value("white")),
            strokeWidth=alt.when(alt.datum.match).then(alt.value(3)).otherwise(alt.value(1.5)),
            color=alt.Color(
                "status:N",
                title="Status",
                scale=alt.Scale(domain=statuses, range=colours),
                legend=alt.Legend(orient="top"),
            ),
            opacity=alt.when(picked).then(alt.value(1.0)).otherwise(alt.value(0.4)),
            tooltip=[
                alt.Tooltip("unit:N", title="Unit"),
                alt.Tooltip("plan:N", title="Plan"),
                alt.Tooltip("floor_label:N", title="Floor"),
                alt.Tooltip("price_text:N", title="Price"),
                alt.Tooltip("status:N", title="Status"),
            ],
        )
        .add_params(picked)
    )
    layers: list[Any] = [cells]
    if len(stacks) <= LABELLED_STACKS:
        layers.append(base.mark_text(fontSize=9, color="#1f1f1f").encode(text="unit:N"))
    height = max(MIN_HEIGHT_PX, HEADER_PX + ROW_PX * len(floors))
    return alt.layer(*layers).properties(height=height)


def _on_click(chart_key: str, pick_key: str, labels: dict[str, str]) -> None:
    """A click on a unit picks it in the list, which is what the details follow."""
    event: Any = st.session_state.get(chart_key) or {}
    selection = event.get("selection", {}) if isinstance(event, dict) else getattr(event, "selection", {})
    points = selection.get("unit") or []
    rows = [str(point.get("row")) for point in points if isinstance(point, dict) and point.get("row") is not None]
    st.session_state[pick_key] = labels.get(rows[0]) if rows else None


def unit_labels(frame: pd.DataFrame) -> dict[str, str]:
    """Each unit's line in the list to pick from (``unit · plan · status · price``), by its row."""
    prices = [cad(None if pd.isna(price) else float(price)) for price in frame["price"]]
    return {
        str(index): f"{unit} · {plan} · {status} · {price}"
        for index, unit, plan, status, price in zip(
            frame.index, frame["unit"], frame["plan"], frame["status"], prices, strict=True
        )
    }


def render_details(row: pd.Series, plan: FloorPlan | None, structures: Sequence[PaymentStructure], key: str) -> None:
    """The unit picked: its plan, floor, price and status, and the deposits in dollars of its price."""
    price = None if pd.isna(row["price"]) else float(row["price"])
    floor = MISSING if pd.isna(row["floor"]) else f"{row['floor']:.0f}"
    with st.container(border=True, key=f"{key}_details"):
        st.markdown(f"**Unit {markdown_text(str(row['unit']))}** · {markdown_text(str(row['status']))}")
        columns = st.columns(4)
        columns[0].metric("Plan", str(row["plan"]))
        columns[1].metric("Floor", floor)
        columns[2].metric("Price (CAD)", cad(price))
        columns[3].metric("Status", str(row["status"]))
        if plan is not None and (plan.numberOfBedrooms is not None or plan.squareFeet):
            beds = "Studio" if plan.numberOfBedrooms == 0 else f"{plan.numberOfBedrooms or 0:g} bed"
            size = f" · {plan.squareFeet:,.0f} sq ft" if plan.squareFeet else ""
            st.caption(f"{beds}{size}")
        if row["status"] == "Sold":
            st.caption("This unit is sold: no deposits are due on it. The listing's deposit structure is below.")
            return
        if not structures:
            st.caption("No deposit structure is published for this listing.")
            return
        st.markdown("Deposits for this unit" + (" (its price has not been published)" if price is None else ""))
        for index, structure in enumerate(structures):
            render_structure(structure, index, price, date.today(), f"{key}_deposits")


def render_grid(
    frame: pd.DataFrame, plans: Sequence[FloorPlan], structures: Sequence[PaymentStructure], key: str
) -> None:
    """The grid, a list to pick a unit from (kept in step with clicks), and the picked unit's details."""
    data = grid_data(frame)
    chart_key, pick_key = f"{key}_chart", f"{key}_unit"
    labels = unit_labels(frame)
    rows = {label: int(index) for index, label in labels.items()}
    st.altair_chart(
        grid_chart(data),
        width="stretch",
        key=chart_key,
        on_select=lambda: _on_click(chart_key, pick_key, labels),
        selection_mode="unit",
    )
    if st.session_state.get(pick_key) not in rows:
        st.session_state.pop(pick_key, None)  # a unit of another listing, or of data since refreshed
    chosen = st.selectbox(
        "Unit", list(rows), index=None, key=pick_key, placeholder="Click a unit in the grid, or pick one here"
    )
    if frame["match"].any():
        st.caption(f"Outlined in blue: the {int(frame['match'].sum()):,} units matching your search.")
    if chosen is None:
        st.caption("Hover over a unit for its plan and price; click it for its details and deposits.")
        return
    row = frame.loc[rows[chosen]]
    index = int(row["plan_index"])
    render_details(row, plans[index] if 0 <= index < len(plans) else None, structures, key)
