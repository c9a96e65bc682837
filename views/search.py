"""Search: words, refinement lists, unit filters and ranges over the listings, as a table or cards, sorted, paged,
and downloadable.

The filters are the shared state of :mod:`precon.dashboard.filter_state` (the same on the Map and Facets pages); the
page adds ``sort``, ``page`` (from 1), ``per`` (page size) and ``view`` to the address. Defaults are left out of the
address, and what in it cannot be used is said at the top of the page. The work is
:func:`precon.dashboard.listing_search.run`.

Everything under the title is one fragment: a slider step, a facet pick, the search box, the view's choices, paging
and a click in the results rerun it alone, not the app around it (the navigation, the sign-in gate, the sidebar and
the compare list, none of which shows anything of the search). The address, the chips, the count and the save
control are drawn inside it, so they follow every change; opening a listing or Compare leaves the page as before.
"""

from __future__ import annotations

import streamlit as st

from components import api, filter_chips, saved, shared_filters
from components import filter_panel as panel
from components import search_results as results
from components.formatting import plural
from components.listing_table import open_listing
from components.result_cards import result_cards
from components.search_scope import SearchScope, local_note, scope_of
from precon.dashboard import listing_search
from precon.dashboard.filter_state import SEARCH_MAX_CHARS, FilterState, facets_in
from precon.dashboard.listing_search import SearchOutcome
from precon.dashboard.ordering import NUMERIC_SORTS


def search_box(state: FilterState) -> None:
    panel.set_widget("search_q", state.text)
    st.text_input(
        "Search",
        key="search_q",
        on_change=results.on_text,
        args=("search_q",),
        max_chars=SEARCH_MAX_CHARS,
        placeholder="Words in the name, summary, city, neighbourhood, street or amenities — then press Enter",
        icon=":material/search:",
        label_visibility="collapsed",
    )


def view_controls(state: FilterState, view: results.SearchView) -> None:
    """Sort, table or cards, page size, and the link to the same filters on the Map."""
    sort_column, view_column, size_column, map_column = st.columns([2, 1.2, 1, 1.2], vertical_alignment="bottom")
    panel.set_widget("search_sort", view.sort)
    sort_column.selectbox(
        "Sort by", list(results.SORTS), format_func=results.SORTS.get, key="search_sort",
        on_change=results.on_choice, args=("search_sort", "sort", "relevance"),
    )  # fmt: skip
    panel.set_widget("search_view", view.view)
    view_column.segmented_control(
        "Show as", list(results.VIEWS), format_func=results.VIEWS.get, key="search_view", required=True,
        on_change=results.on_choice, args=("search_view", "view", "table"),
    )  # fmt: skip
    panel.set_widget("search_per", view.per_page)
    size_column.selectbox(
        "Per page", results.PAGE_SIZES, key="search_per", on_change=results.on_choice,
        args=("search_per", "per", "20"),
    )  # fmt: skip
    map_column.page_link(
        "views/map.py", label="Show on map", icon=":material/map:", query_params=shared_filters.link_params(state)
    )


def listings_shown(
    state: FilterState, view: results.SearchView, scope: SearchScope, outcome: SearchOutcome, names: dict[str, str]
) -> None:
    """The page of results as a table or cards, then paging and the CSV."""
    st.caption(results.order_caption(view, state, outcome))
    if view.view == "cards":
        result_cards(
            outcome.listings,
            names,
            on_open=lambda listing_id: open_listing(listing_id, results.SEARCH_PAGE),
            matched=results.matched_text,
        )
    else:
        results.results_table(
            outcome.listings, names, with_units=scope.unit_filter is not None, with_words=bool(state.text.strip())
        )
    results.pagination(outcome, view)
    results.csv_download(scope, view.sort, outcome.total)


@st.fragment
def search() -> None:
    state, problems = shared_filters.current("search")
    view, view_problems = results.SearchView.from_url()
    if view_problems:
        view.write()  # the address then holds only what is in use; the warning below says what was left out
    search_box(state)

    with api.guarded(), st.spinner("Searching…"):
        scope = scope_of(state)
        bounds = panel.numeric_bounds()
        request = listing_search.SearchRequest(
            text=state.text,
            filter=scope.filter,
            unit_filter=scope.unit_filter,
            sort=view.sort,
            page=view.page,
            per_page=view.per_page,
            facets=tuple(f.attr for f in facets_in(api.scope()[0])),
            attributes=tuple(results.list_fields()),
            high_values={attr: bounds[attr][1] for attr, _ in NUMERIC_SORTS.values() if attr in bounds},
        )
        outcome = listing_search.run(api.backend, request, unit_supported=scope.unit_supported)
        facet_views = results.facet_views(state, outcome)
        names = filter_chips.profile_names(b for lst in outcome.listings for b in lst.builders if isinstance(b, str))
        names.update({k: v for fv in facet_views for k, v in fv.names.items()})

    if outcome.page != view.page and outcome.total:
        view_problems.append(f"Page {view.page + 1:,} is past the end: showing the last page, {outcome.page + 1:,}.")
        results.go_to_page(outcome.page)
    for problem in problems + view_problems:
        st.warning(f"This link had a value that could not be used. {problem}", icon=":material/link_off:")

    with st.expander("Filters", icon=":material/filter_list:", key="search_filters"):
        panel.render_panel(state, facet_views, bounds, unit_level=scope.unit_level)
    filter_chips.render(state, prefix="search", links=(), names=names)
    saved.save_control(state, "search")

    timing = f" in {outcome.service_ms:,.0f} ms" if outcome.service_ms is not None else ""
    if outcome.ordering_ms is not None:
        timing += f" (ordered in {outcome.ordering_ms:,.0f} ms)"
    st.markdown(f"**{plural(outcome.total, 'result')}**{timing}")
    if scope.local:
        st.caption(local_note(outcome.candidates))
    view_controls(state, view)
    if not outcome.total:
        st.info(results.nothing_found(state), icon=":material/search_off:")
        return
    listings_shown(state, view, scope, outcome, names)


st.title("Search listings")
search()
