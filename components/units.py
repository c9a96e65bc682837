"""A listing's units: what is still available, on which floor, at what price, plan by plan, as counts, a grid of
the building (:mod:`components.unit_grid`) and a table."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.floor_plans import MATCH_HELP, MATCH_LABEL
from components.formatting import MISSING, MONEY_FORMAT, cad
from components.unit_grid import render_grid
from precon.client.models import FloorPlan, PaymentStructure

COLUMNS = {
    "unit": st.column_config.TextColumn("Unit"),
    "floor": st.column_config.NumberColumn("Floor", format="%d"),
    "plan": st.column_config.TextColumn("Plan", width="medium"),
    "beds": st.column_config.NumberColumn("Beds", format="%g"),
    "status": st.column_config.TextColumn("Status"),
    "price": st.column_config.NumberColumn("Price (CAD)", format=MONEY_FORMAT, help="—: no published price"),
}
HIDDEN = ("stack", "plan_index", "unit_index", "match")
"""In the frame for the grid, not in the table (``match`` is shown where a search's unit filters mark units)."""
STATUS_ORDER = ("Available", "Reserved", "Sold")
SUMMARY_COLUMNS = {
    "plan": st.column_config.TextColumn("Plan", width="medium"),
    "units": st.column_config.NumberColumn("Units", format="%d"),
    "available": st.column_config.NumberColumn("Available", format="%d"),
    "reserved": st.column_config.NumberColumn("Reserved", format="%d"),
    "sold": st.column_config.NumberColumn("Sold", format="%d"),
    "lowest": st.column_config.TextColumn(
        "Lowest available (CAD)", help="“Not published”: units are available but the builder lists no prices"
    ),
}
NOT_PUBLISHED = "Not published"
"""The lowest available price where units are available but none has a published price (— is for none available)."""
NO_UNITS = "This listing's floor plans list no units (houses are sold by the model, and some builders list none)."


def stack_of(unit_number: str | None, floor: float | None) -> str:
    """The unit's column in the building: a tower's unit number is its floor then a two-digit stack (``1205``:
    floor 12, stack ``05``); any other number (a row town's ``3``) is its own column."""
    number = (unit_number or "").strip()
    if floor is not None and number.isdigit() and len(number) > 2 and number[:-2] == f"{floor:.0f}":
        return number[-2:]
    return number or MISSING


def unit_frame(plans: Sequence[FloorPlan]) -> pd.DataFrame:
    """One row per unit of every plan, by floor then unit number (with its stack and plan's position, hidden)."""
    rows = [
        {
            "unit": unit.unitNumber or MISSING,
            "floor": unit.floor_number,
            "plan": plan.name or plan.id or MISSING,
            "beds": plan.numberOfBedrooms,
            "status": unit.status or "Unknown",
            "price": unit.price,
            "stack": stack_of(unit.unitNumber, unit.floor_number),
            "plan_index": index,
            "unit_index": position,
            "match": False,
        }
        for index, plan in enumerate(plans)
        for position, unit in enumerate(plan.units)
    ]
    frame = pd.DataFrame(rows, columns=[*COLUMNS, *HIDDEN])
    for column in ("floor", "beds", "price"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame.sort_values(["floor", "unit"], kind="stable", na_position="last").reset_index(drop=True)


def status_counts(frame: pd.DataFrame) -> dict[str, int]:
    """Units by status, the usual three first."""
    counted = frame["status"].value_counts().to_dict()
    ordered = {status: int(counted.pop(status, 0)) for status in STATUS_ORDER}
    return {**ordered, **{str(k): int(v) for k, v in sorted(counted.items())}}


def lowest_available(frame: pd.DataFrame) -> float | None:
    """The lowest price among the available units (``None``: none available, or none priced)."""
    prices = frame.loc[frame["status"] == "Available", "price"].dropna()
    return float(prices.min()) if len(prices) else None


def lowest_text(lowest: float | None, available: int) -> str:
    """``$689,990``; "Not published" where units are available without a price; "—" where none is available."""
    if lowest is not None and not pd.isna(lowest):
        return cad(lowest)
    return NOT_PUBLISHED if available else MISSING


def plan_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """Per plan with units, in the listing's order: how many units, by status, and the lowest available price."""
    plans = frame.groupby("plan_index", sort=True)
    by_status = pd.crosstab(frame["plan_index"], frame["status"]).reindex(columns=list(STATUS_ORDER), fill_value=0)
    available = frame.loc[frame["status"] == "Available"].groupby("plan_index")["price"].min()
    summary = pd.DataFrame(
        {
            "plan": plans["plan"].first(),
            "units": plans.size(),
            "available": by_status["Available"],
            "reserved": by_status["Reserved"],
            "sold": by_status["Sold"],
            "lowest": available,
        }
    )
    summary = summary.reset_index(drop=True)[list(SUMMARY_COLUMNS)]
    for column in ("units", "available", "reserved", "sold"):
        summary[column] = summary[column].fillna(0).astype("int64")
    lowest = pd.to_numeric(summary["lowest"], errors="coerce")
    summary["lowest"] = [lowest_text(v, n) for v, n in zip(lowest, summary["available"], strict=True)]
    return summary


def render_counts(frame: pd.DataFrame) -> None:
    """The building's counts and lowest available price, then the same per plan."""
    counts = status_counts(frame)
    columns = st.columns(len(STATUS_ORDER) + 2)
    columns[0].metric("Units", f"{len(frame):,}")
    for column, status in zip(columns[1:-1], STATUS_ORDER, strict=True):
        column.metric(status, f"{counts[status]:,}")
    columns[-1].metric("Lowest available (CAD)", lowest_text(lowest_available(frame), counts["Available"]))
    summary = plan_summary(frame)
    st.dataframe(
        summary,
        column_config=SUMMARY_COLUMNS,
        hide_index=True,
        width="stretch",
        height=(len(summary) + 1) * 35 + 3,
        placeholder=MISSING,
    )


def render_table(frame: pd.DataFrame, counts: dict[str, int], key: str, marked: bool = False) -> None:
    """The units as a table, filtered by status (available ones at first) and plan."""
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
    columns = {
        **COLUMNS,
        **({"match": st.column_config.CheckboxColumn(MATCH_LABEL, help=MATCH_HELP)} if marked else {}),
    }
    st.dataframe(shown[list(columns)], column_config=columns, hide_index=True, width="stretch", placeholder=MISSING)


def render_units(
    plans: Sequence[FloorPlan] | None,
    key: str,
    structures: Sequence[PaymentStructure] = (),
    matched: frozenset[tuple[int, int]] | None = None,
) -> None:
    """The inventory: counts, the building as a grid of floors by stacks (a click shows a unit), the units table.
    ``matched``: the units (plan position, unit position) a search's unit filters match, marked in both."""
    frame = unit_frame(plans or ())
    if frame.empty:
        st.info(NO_UNITS, icon="🏢")
        return
    if matched is not None:
        frame["match"] = [pair in matched for pair in zip(frame["plan_index"], frame["unit_index"], strict=True)]
    render_counts(frame)
    render_grid(frame, list(plans or ()), structures, key=f"{key}_grid")
    with st.expander("All units as a table", icon=":material/table_rows:", expanded=matched is not None):
        render_table(frame, status_counts(frame), key, marked=matched is not None)
