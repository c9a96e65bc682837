"""Comparing listings side by side: the compare list ("Add to compare" on a listing, "Compare selected" on Search;
kept as :mod:`components.compare_list` says, so it outlives a reload) and the Compare page (``/compare?ids=A,B,C``);
the table itself is :mod:`components.compare_table`'s."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import streamlit as st

from components import api, shared_filters
from components import compare_list as compare_lists
from components.compare_table import (
    BEST,
    MAX_COMPARE,
    MIN_COMPARE,
    column_names,
    compare_rows,
    csv_bytes,
    distance_frame,
    parse_ids,
    table_frame,
)
from components.filter_chips import range_text
from components.formatting import markdown_text
from components.search_scope import scope_of
from precon.client.errors import NotFound, PreconError
from precon.client.models import PROVINCES, HistoryPage, Listing
from precon.dashboard.filter_state import UNIT_RANGES, FilterState

COMPARE_LIST = compare_lists.COMPARE_LIST
NOTICE = compare_lists.NOTICE
COMPARE_PAGE = "views/compare.py"
REFERENCES = ("builders",)
BEST_STYLE = "background-color: rgba(46, 158, 91, 0.18); font-weight: 600"


# -- the compare list ---------------------------------------------------------------------------------------


def compare_list() -> list[str]:
    return compare_lists.current()


def _add(listing_id: str) -> None:
    ids = compare_list()
    if listing_id in ids:
        return
    if len(ids) >= MAX_COMPARE:
        st.session_state[NOTICE] = (
            f"The compare list holds at most {MAX_COMPARE} listings: remove one before adding this one."
        )
        return
    compare_lists.change([*ids, listing_id])


def _remove(listing_id: str) -> None:
    compare_lists.change([i for i in compare_list() if i != listing_id])


def render_compare_button(listing_id: str) -> None:
    """ "Add to compare" (or remove), and a link to the Compare page with the list as it is."""
    ids = compare_list()
    with st.container(horizontal=True, vertical_alignment="center", key="compare_actions"):
        if listing_id in ids:
            st.button(
                "Remove from compare",
                icon=":material/remove:",
                key="compare_remove",
                on_click=_remove,
                args=(listing_id,),
            )
        else:
            st.button(
                "Add to compare", icon=":material/compare_arrows:", key="compare_add", on_click=_add, args=(listing_id,)
            )
        if ids:
            st.page_link(
                COMPARE_PAGE,
                label=f"Compare ({len(ids)} of {MAX_COMPARE}: {', '.join(ids)})",
                icon=":material/table_chart:",
                query_params={"ids": ",".join(ids)},
            )
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        st.warning(notice, icon=":material/block:")


def compare_selected(ids: Sequence[str], opened_from: str) -> None:
    """The "Compare selected" button of a table whose rows are listings: enabled for 2 to 4 of them."""
    count = len(ids)
    if count < MIN_COMPARE:
        why = f"Select {MIN_COMPARE} to {MAX_COMPARE} rows to compare ({count} selected)."
    elif count > MAX_COMPARE:
        why = f"At most {MAX_COMPARE} listings can be compared: {count} are selected."
    else:
        why = ""
    pressed = st.button(
        f"Compare selected ({count})",
        icon=":material/table_chart:",
        key="compare_selected",
        disabled=bool(why),
        help=why or "Open these listings side by side.",
    )
    if why:
        st.caption(why)
    if pressed and not why:
        compare_lists.change(ids)
        shared_filters.remember_results(opened_from, dict(st.query_params.to_dict()))
        st.switch_page(COMPARE_PAGE, query_params={"ids": ",".join(ids)})


# -- the page -----------------------------------------------------------------------------------------------


def _scope_text() -> str:
    version, province = api.scope()
    return f"{'all provinces' if province == 'all' else PROVINCES.get(province, province)}, API {version}"


def _why_missing(listing_id: str) -> str:
    """Why a listing is not found: removed (its history says when, where the deployment keeps one), or unknown."""
    if api.offers("listing_history"):
        try:
            page: HistoryPage = api.call("listing_history", id=listing_id, per_page=1)
        except PreconError:
            page = HistoryPage()  # then it is simply not found
        latest = page.results[0] if page.results else None
        if latest is not None and latest.change == "deleted" and latest.scope == "listing":
            when = f" on {latest.at:%d %b %Y}" if latest.at else ""
            return f"Listing {listing_id} was removed from the catalogue{when}: it is left out."
    return (
        f"There is no listing {listing_id} in {_scope_text()} (it may have been removed, or be in another province): "
        "it is left out."
    )


def fetch(ids: Sequence[str]) -> tuple[list[Listing], list[str]]:
    """The listings of ``ids`` the deployment has, in the order asked, and a sentence for each it has not."""
    if not ids:
        return [], []
    try:
        found: list[Listing] = api.call("multiple_listings", ids=list(ids), references=list(REFERENCES))
    except NotFound:
        found = []
    by_id = {listing.id: listing for listing in found if listing.id}
    return [by_id[i] for i in ids if i in by_id], [_why_missing(i) for i in ids if i not in by_id]


def unit_filter_text(state: FilterState) -> str:
    parts = [
        f"{spec.label.lower()} {range_text(spec, *state.ranges[spec.param])}"
        for spec in UNIT_RANGES
        if spec.param in state.ranges
    ]
    if state.available:
        parts.append("available")
    return markdown_text(", ".join(parts))


def _highlight(table: pd.DataFrame) -> pd.DataFrame:
    return table.map(lambda text: BEST_STYLE if isinstance(text, str) and text.endswith(BEST) else "")


def render_table(listings: Sequence[Listing], state: FilterState) -> None:
    scope = scope_of(state)
    headers = column_names(listings)
    rows = compare_rows(listings, scope.unit_filter)
    table = table_frame(rows, headers)
    # A static table: every cell's whole text, wrapped (a deposit schedule is long), and readable in the page.
    st.table(table.style.apply(_highlight, axis=None))
    described = unit_filter_text(state)
    st.caption(
        f"{BEST} marks the best of each row: the lowest price or fee, the most units available, the soonest "
        "completion. The cheapest unit is the cheapest available one "
        + (f"meeting the unit filters ({described})." if described else "(no unit filter is set on Search).")
    )
    st.subheader("Distances")
    distances = distance_frame(listings, headers)
    st.table(distances)
    st.download_button(
        "Download CSV",
        data=csv_bytes(table, distances, [listing.id or "" for listing in listings]),
        file_name="precon-compare.csv",
        mime="text/csv",
        icon=":material/download:",
        key="compare_csv",
        on_click="ignore",
    )


def render_links(listings: Sequence[Listing]) -> None:
    with st.container(horizontal=True, key="compare_links"):
        for listing in listings:
            st.page_link(
                "views/listing.py",
                label=markdown_text(listing.name or listing.id),
                icon=":material/apartment:",
                query_params={"id": listing.id or ""},
            )


def requested_ids() -> tuple[list[str], list[str]]:
    """The ids in the address, or the session's compare list when the address names none (written to it)."""
    text = st.query_params.get("ids")
    if text is None and compare_list():
        text = ",".join(compare_list())
        st.query_params["ids"] = text
    return parse_ids(text)


def render_page() -> None:
    shared_filters.back_to_results()
    state, filter_problems = shared_filters.current("compare")
    ids, problems = requested_ids()
    try:
        listings, missing = fetch(ids)
    except PreconError as error:
        api.show_error(error)
        return
    for problem in filter_problems + problems + missing:
        st.warning(problem, icon=":material/link_off:")
    if len(listings) < MIN_COMPARE:
        have = "No listing" if not listings else "One listing"
        st.info(
            f"{have} to compare: Compare needs {MIN_COMPARE} to {MAX_COMPARE}. Add listings with “Add to compare” on "
            "a listing's page, or select rows on Search and press “Compare selected”. The address takes them as "
            "`/compare?ids=A,B,C`.",
            icon=":material/table_chart:",
        )
        st.page_link("views/search.py", label="Search listings", icon=":material/search:")
        if not listings:
            return
    render_links(listings)
    render_table(listings, state)
