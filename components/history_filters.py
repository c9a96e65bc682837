"""The shared filters as the pages about the market over time (Changes, Market) show them: a search box of their
own, the filter chips with links to Search, Map and Facets, and the filter panel folded under "Filters"; what they
match is asked once, for the counts and the names of the values chosen."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from components import api, filter_chips
from components import filter_panel as panel
from components import search_results as results
from components.search_scope import SearchScope, local_note, scope_of
from precon.dashboard import listing_search
from precon.dashboard.filter_state import SEARCH_MAX_CHARS, FilterState, facets_in


@dataclass(frozen=True)
class Matched:
    """What the filters ask of the deployment, how many listings they match now, and the names of facet values
    (builders' names for their ids)."""

    scope: SearchScope
    total: int
    names: dict[str, str]


def search_box(prefix: str, state: FilterState) -> None:
    """The words of the shared filters, in a box of the page's own (``<prefix>_q``)."""
    key = f"{prefix}_q"
    panel.set_widget(key, state.text)
    st.text_input(
        "Search",
        key=key,
        on_change=results.on_text,
        args=(key,),
        max_chars=SEARCH_MAX_CHARS,
        placeholder="Words in the listings' name, city, street… then Enter",
        icon=":material/search:",
    )


def chips_and_panel(prefix: str, state: FilterState) -> Matched:
    """The chips and the folded panel, with the counts they show; a failure of the service stops the page there."""
    with api.guarded():
        scope = scope_of(state)
        total, found = listing_search.total_and_facets(
            api.backend, scope.text, scope.filter, scope.unit_filter, [f.attr for f in facets_in(api.scope()[0])],
            unit_supported=scope.unit_supported,
        )  # fmt: skip
        facet_views = results.facet_views(state, listing_search.SearchOutcome(total, [], found, 0))
        names = {k: v for view in facet_views for k, v in view.names.items()}
        filter_chips.render(state, prefix=prefix, with_text=False, links=("search", "map", "facets"), names=names)
        with st.expander("Filters", icon=":material/filter_list:", key=f"{prefix}_filters"):
            panel.render_panel(state, facet_views, panel.numeric_bounds(), unit_level=scope.unit_level)
    if scope.local:
        st.caption(local_note())
    return Matched(scope, total, names)
