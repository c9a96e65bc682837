"""A listing opened from a search with unit filters ("2 bedrooms under $800,000, available"): the filters, carried
in the listing's address, said above the plans, pre-set on the floor plans' filters, the matching plans and units
marked (in the plans table, the inventory grid and its tables), and a button to clear them. The matching itself is
:mod:`precon.dashboard.unit_marks`'."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components.filter_chips import describe
from components.floor_plans import MATCH_LABEL, PRICE_STEP
from components.formatting import plural
from precon.client.models import FloorPlan
from precon.dashboard.filter_state import FilterState
from precon.dashboard.unit_marks import UNIT_PARAMS, Marks, marks, unit_params, unit_state

PRESET_KEY = "listing_marks_preset"
"""The filters and listing the floor plans' filters were last pre-set for: set once, then the person's to change."""


def carried_params() -> dict[str, str]:
    """The unit filters in the current page's address, for the address of a listing opened from it."""
    return unit_params(st.query_params.to_dict())


def listing_params(listing_id: str) -> dict[str, str]:
    """The listing page's address parameters: its id, and the unit filters of the search it is opened from."""
    return {"id": listing_id, **carried_params()}


def _clear() -> None:
    for name in UNIT_PARAMS:
        st.query_params.pop(name, None)
    st.session_state.pop(PRESET_KEY, None)


def current(plans: Sequence[FloorPlan]) -> tuple[FilterState, Marks] | None:
    """The unit filters in the address and what they match of ``plans``, said above the plans with a button to
    clear them; None when the address has none."""
    state, problems = unit_state(st.query_params.to_dict())
    for problem in problems:
        st.warning(f"This link had a value that could not be used. {problem}", icon=":material/link_off:")
    if not state.has_unit_filter:
        return None
    found = marks(state, [plan.model_dump(mode="json") for plan in plans])
    said, clear = st.columns([6, 1], vertical_alignment="center")
    said.info(
        f"**From your search: {describe(state)}.** {plural(len(found.plans), 'floor plan')} and "
        f"{plural(len(found.units), 'unit')} match; they are marked below (✓ under “{MATCH_LABEL}”, outlined in the "
        "grid); the floor plans' filters are set from it.",
        icon=":material/filter_alt:",
    )
    clear.button("Clear", key="listing_marks_clear", on_click=_clear, icon=":material/filter_alt_off:",
                 help="Show every plan and unit unmarked", width="stretch")  # fmt: skip
    return state, found


def preset(key: str, listing_id: str, state: FilterState, frame: pd.DataFrame, steps: tuple[int, int] | None) -> None:
    """The floor plans' filters set from the search's (once per listing and filters): bedrooms within its range,
    "Available" plans when it asks for available units, the price limit at its highest price. ``steps``: the
    price slider's (low, high), where it has one."""
    signature = (listing_id, tuple(sorted(state.to_params().items())))
    if st.session_state.get(PRESET_KEY) == signature:
        return
    st.session_state[PRESET_KEY] = signature
    low, high = state.ranges.get("beds", (None, None))
    beds = [
        b for b in sorted(frame["beds"].dropna().unique()) if (low is None or b >= low) and (high is None or b <= high)
    ]
    st.session_state[f"{key}_beds"] = beds if (low, high) != (None, None) else []
    statuses = set(frame["status"].dropna())
    st.session_state[f"{key}_status"] = ["Available"] if state.available and "Available" in statuses else []
    _, top = state.ranges.get("price", (None, None))
    if steps is not None:
        slider_low, slider_high = steps
        # Rounded up to the slider's step: a plan the search matched is never hidden by the rounding.
        above = slider_low + -(-(int(top) - slider_low) // PRICE_STEP) * PRICE_STEP if top is not None else slider_high
        limit = min(max(above, slider_low), slider_high)
        st.session_state[f"{key}_max_price"] = limit
