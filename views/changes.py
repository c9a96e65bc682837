"""Changes: what moved in the market over a window (launches, sell-outs, start price increases and cuts, units
sold) among the listings the shared filters match (the Search, Map and Facets pages' filters, in the address as
theirs are); counted, charted per week, listed with a link to each listing, and downloadable.

The page's own address parameters: ``window`` (7, 30, 90 or 365 days; 30 is left out) or ``from`` and ``to``
(dates), ``show`` (the kinds the chart and the table show) and ``page``. The work is
:mod:`precon.dashboard.market_changes` and
:mod:`components.market`.
"""

from __future__ import annotations

import streamlit as st

from components import api, freshness, history_filters, market, shared_filters
from components.formatting import plural

st.title("Market changes")
state, problems = shared_filters.current("changes")
window, window_problems = market.read_window()
for problem in problems:
    st.warning(f"This link had a value that could not be used. {problem}", icon=":material/link_off:")
for problem in window_problems:
    st.warning(problem, icon=":material/date_range:")

search_column, window_column = st.columns([1, 2], vertical_alignment="bottom")
with search_column:
    history_filters.search_box("changes", state)
with window_column:
    market.window_controls(window)

matched = history_filters.chips_and_panel("changes", state)
scope, total = matched.scope, matched.total

with api.guarded(), st.spinner("Reading the market's history…"):
    try:
        frame = market.changes_frame(scope, window)
    except market.ChangesMissing:
        st.warning(market.missing_note(), icon=":material/history_toggle_off:")
        st.stop()
freshness.show()

st.caption(
    f"{plural(len(frame), 'change')} in {window.describe()} (UTC) among {plural(total, 'listing')} matching the "
    "filters now; a listing removed since is judged on what it last was."
)
market.counts(market.summary_of(frame))
if frame.empty:
    st.info(
        f"Nothing launched, sold out, changed its start price or sold a unit in {window.describe()} among these "
        "listings: widen the window or remove a filter.",
        icon=":material/event_busy:",
    )
    st.stop()
kinds = market.show_picker()
market.weekly_chart(frame, window, kinds)
st.subheader("The changes")
shown = market.changes_table(frame, kinds)
if not shown.empty:
    market.csv_download(shown, window)
