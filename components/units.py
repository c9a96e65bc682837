"""A listing's units: what is still available, on which floor, at what price, plan by plan."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.formatting import MONEY_FORMAT
from precon.models import FloorPlan

COLUMNS = {
    "unit": st.column_config.TextColumn("Unit"),
    "floor": st.column_config.NumberColumn("Floor", format="%d"),
    "plan": st.column_config.TextColumn("Plan", width="medium"),
    "beds": st.column_config.NumberColumn("Beds", format="%g"),
    "status": st.column_config.TextColumn("Status"),
    "price": st.column_config.NumberColumn("Price (CAD)", format=MONEY_FORMAT, help="—: no published price"),
}
STATUS_ORDER = ("Available", "Reserved", "Sold")


def unit_frame(plans: Sequence[FloorPlan]) -> pd.DataFrame:
    """One row per unit of every plan, by floor then unit number."""
    rows = [
        {
            "unit": unit.unitNumber or "—",
            "floor": unit.floor_number,
            "plan": plan.name or "—",
            "beds": plan.numberOfBedrooms,
            "status": unit.status or "Unknown",
            "price": unit.price,
        }
        for plan in plans
        for unit in plan.units
    ]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in ("floor", "beds", "price"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame.sort_values(["floor", "unit"], kind="stable", na_position="last").reset_index(drop=True)


def status_counts(frame: pd.DataFrame) -> dict[str, int]:
    """Units by status, the usual three first."""
    counted = frame["status"].value_counts().to_dict()
    ordered = {status: int(counted.pop(status, 0)) for status in STATUS_ORDER}
    return {**ordered, **{str(k): int(v) for k, v in sorted(counted.items())}}


def render_units(plans: Sequence[FloorPlan] | None, key: str) -> None:
    """The counts by status, then the units, filtered by status and plan."""
    frame = unit_frame(plans or ())
    if frame.empty:
        st.caption("This listing publishes no units (houses are sold by the model, and some builders list none).")
        return
    counts = status_counts(frame)
    columns = st.columns(len(STATUS_ORDER) + 1)
    columns[0].metric("Units", f"{len(frame):,}")
    for column, status in zip(columns[1:], STATUS_ORDER, strict=True):
        column.metric(status, f"{counts[status]:,}")
    available = frame[frame["status"] == "Available"]["price"].dropna()
    if len(available):
        st.caption(f"Available from ${available.min():,.0f} to ${available.max():,.0f}.")
    filters = st.columns([2, 3])
    chosen = filters[0].multiselect(
        "Unit status", list(counts), default=["Available"] if counts["Available"] else [], key=f"{key}_status"
    )
    plan_names = sorted(frame["plan"].unique())
    chosen_plans = filters[1].multiselect("Plans", plan_names, key=f"{key}_plans", placeholder="Any plan")
    shown = frame
    if chosen:
        shown = shown[shown["status"].isin(chosen)]
    if chosen_plans:
        shown = shown[shown["plan"].isin(chosen_plans)]
    st.caption(f"Showing {len(shown):,} of {len(frame):,} units.")
    st.dataframe(shown, column_config=COLUMNS, hide_index=True, width="stretch", placeholder="—")
