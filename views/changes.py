"""Changes: what moved in the market over a window (launches, sell-outs, start price increases and cuts, units
sold) among the listings the shared filters match (the Search, Map and Facets pages' filters, in the address as
theirs are); counted, charted per week, listed with a link to each listing, and downloadable.

The page's own address parameters: ``window`` (7, 30, 90 or 365 days; 30 is left out) or ``from`` and ``to``
(dates), ``show`` (the kinds the table lists) and ``page``. The work is :mod:`precon.market_changes` and
:mod:`components.market`.
"""

from __future__ import annotations

import streamlit as st

from components import api, filter_chips, market, shared_filters
from components import filter_panel as panel
from components import search_results as results
from components.formatting import plural
from components.search_scope import local_note, scope_of
from precon import listing_search
from precon.filter_state import SEARCH_MAX_CHARS, facets_in

st.title("Market changes")
state, problems = shared_filters.current("changes")
window, window_problems = market.read_window()
for problem in problems:
    st.warning(f"This link had a value that could not be used. {problem}", icon=":material/link_off:")
for problem in window_problems:
    st.warning(problem, icon=":material/date_range:")

search_column, window_column = st.columns([1, 2], vertical_alignment="bottom")
panel.set_widget("changes_q", state.text)
search_column.text_input(
    "Search",
    key="changes_q",
    on_change=results.on_text,
    args=("changes_q",),
    max_chars=SEARCH_MAX_CHARS,
    placeholder="Words in the listings' name, city, street… then Enter",
    icon=":material/search:",
)
with window_column:
    market.window_controls(window)

with api.guarded():
    scope = scope_of(state)
    total, found = listing_search.total_and_facets(
        api.backend, scope.text, scope.filter, scope.unit_filter, [f.attr for f in facets_in(api.scope()[0])],
        unit_supported=scope.unit_supported,
    )  # fmt: skip
    facet_views = results.facet_views(state, listing_search.SearchOutcome(total, [], found, 0))
    names = {k: v for view in facet_views for k, v in view.names.items()}
    filter_chips.render(state, prefix="changes", with_text=False, links=("search", "map", "facets"), names=names)
    with st.expander("Filters", icon=":material/filter_list:", key="changes_filters"):
        panel.render_panel(state, facet_views, panel.numeric_bounds(), unit_level=scope.unit_level)
if scope.local:
    st.caption(local_note())

with api.guarded(), st.spinner("Reading the market's history…"):
    try:
        frame = market.changes_frame(scope, window)
    except market.ChangesMissing:
        st.warning(market.missing_note(), icon=":material/history_toggle_off:")
        st.stop()

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
market.weekly_chart(frame, window)
st.subheader("The changes")
shown = market.changes_table(frame)
if not shown.empty:
    market.csv_download(shown, window)
