"""One filter state for the Search, Map and Facets pages, kept in the address and carried between the pages.

The address is the truth while a page is shown (a copied link reopens the view). Streamlit empties the address
when another page is chosen in the navigation, so the last state is also kept in the session: a page opened from
another, with no filter in its address, takes the session's state and writes it to its address.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from components import api
from precon.dashboard.filter_state import FACETS, PARAMS, FilterState, facets_in

RESET_ON_CHANGE = ("page",)
"""Parameters a change of filters removes: a paged view goes back to its first page."""
SESSION_KEY = "shared_filters"
PAGE_KEY = "shared_filters_page"


def _address() -> dict[str, list[str]]:
    return {name: st.query_params.get_all(name) for name in PARAMS if st.query_params.get_all(name)}


def current(page: str) -> tuple[FilterState, list[str]]:
    """The filters for ``page``, and what in its address could not be used (sentences to show)."""
    arriving = st.session_state.get(PAGE_KEY) != page
    st.session_state[PAGE_KEY] = page
    address = _address()
    remembered: FilterState | None = st.session_state.get(SESSION_KEY)
    if arriving and not address and remembered is not None:
        write(remembered)
        return remembered, []
    state, problems = FilterState.from_params(address)
    version, _ = api.scope()
    for spec in (f for f in FACETS if f not in facets_in(version)):
        if state.facets.get(spec.param):
            state = state.without(spec.param)
            problems.append(f"{spec.label} are not part of {version}, so that filter was left out.")
    if problems:
        write(state)  # the address then holds only what is in use, and the message says what was left out
    st.session_state[SESSION_KEY] = state
    return state, problems


def write(state: FilterState) -> None:
    """Puts ``state`` in the address (only the filter parameters are touched) and in the session."""
    wanted = state.to_params()
    for name in PARAMS:
        if name in wanted:
            if st.query_params.get_all(name) != [wanted[name]]:
                st.query_params[name] = wanted[name]
        elif name in st.query_params:
            del st.query_params[name]
    st.session_state[SESSION_KEY] = state


def change(update: Callable[[FilterState], FilterState]) -> None:
    """Applies ``update`` to the filters in force and writes the result (a paged view back to its first page).

    For widget callbacks: they run before the page, so the filters in force are the ones the page last showed.
    """
    write(update(remembered()))
    for name in RESET_ON_CHANGE:
        st.query_params.pop(name, None)


def remembered() -> FilterState:
    """The last filter state of this session (empty before any page set one)."""
    state: FilterState | None = st.session_state.get(SESSION_KEY)
    return state if state is not None else FilterState()


def link_params(state: FilterState | None = None) -> dict[str, str]:
    """Address parameters that open another page on the same filters (for ``st.page_link`` / ``st.switch_page``)."""
    return (state if state is not None else remembered()).to_params()


RESULTS_KEY = "shared_filters_results"


def remember_results(page: str, params: dict[str, str]) -> None:
    """Where a listing or profile was opened from (a page and its address), for the way back."""
    st.session_state[RESULTS_KEY] = (page, params)


def back_to_results() -> None:
    """A link back to the results a listing or profile was opened from, if it was opened from some."""
    remembered_results = st.session_state.get(RESULTS_KEY)
    if remembered_results:
        page, params = remembered_results
        st.page_link(page, label="Back to results", icon=":material/arrow_back:", query_params=params)
