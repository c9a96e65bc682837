"""One listing in full (``/listing?id=ABC123``), or a finder when the address names none.

Fetching a listing counts a view for trending, so a visit fetches it once, uncached: the listing is kept in the
session with the scope it was read in, and reruns from this page's own widgets reuse it. A visit ends when the
page is left: Streamlit then drops the state of the page's widgets, the Refresh button's among them, and coming
back fetches (and counts) again. Within a visit the data is refreshed, without counting a view, when Refresh is
clicked or the copy is older than the dashboard's cache time.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from components import api, listing_marks, saved, shared_filters
from components.compare import render_compare_button
from components.deposits import render_deposits
from components.floor_plans import render_floor_plans
from components.formatting import markdown_text
from components.listing_facts import (
    LISTING_REFERENCES,
    render_amenities,
    render_companies,
    render_contradictions,
    render_details,
    render_header_metrics,
    render_incentives,
    render_key_facts,
    render_location,
    render_photos,
    render_pricing,
)
from components.listing_history import render_history
from components.listing_table import listing_table
from components.units import render_units
from precon.client.errors import NotFound, PreconError
from precon.client.models import PROVINCES, Listing, Page
from precon.dashboard.listing_checks import contradictions

# The Refresh button's key: present in the session only while the page stays open (see the module doc).
VISIT_MARKER = "listing_refresh"
VISIT = "listing_visit"
FINDER_RESULTS = 20
SIMILAR_COUNT = 6
STATUS_BADGES = {"Selling Now": "green", "Pending": "orange", "Sold Out": "red"}


def requested_id() -> str | None:
    value = (st.query_params.get("id") or "").strip()
    return value or None


def scope_text() -> str:
    version, province = api.scope()
    where = "all provinces" if province == "all" else PROVINCES.get(province, province)
    return f"{where}, API {version}"


# -- fetching -----------------------------------------------------------------------------------------------


def current_listing(listing_id: str) -> Listing | None:
    """The listing for this visit (``None``: not found); the first fetch of a visit is the one that counts a view."""
    key = [listing_id, *api.scope()]
    visit: dict[str, Any] | None = st.session_state.get(VISIT)
    continuing = visit is not None and visit["key"] == key and VISIT_MARKER in st.session_state
    if not continuing:
        listing: Listing | None = api.call_uncached("get_listing", id=listing_id, references=LISTING_REFERENCES)
    elif st.session_state.get(VISIT_MARKER) or time.time() - visit["at"] > api.DATA_TTL_S:
        found = api.call_uncached("multiple_listings", ids=[listing_id], references=LISTING_REFERENCES)
        listing = found[0] if found else None
    else:
        return visit["listing"]
    if listing is None:
        st.session_state.pop(VISIT, None)
        return None
    st.session_state[VISIT] = {"key": key, "listing": listing, "at": time.time()}
    return listing


def similar_listings(listing_id: str) -> tuple[list[Listing], PreconError | None]:
    try:
        page: Page[Listing] = api.call("similar_listings", id=listing_id, max_recommendations=SIMILAR_COUNT)
    except PreconError as error:
        return [], error
    return page.results, None


# -- without a listing --------------------------------------------------------------------------------------


def finder_label(listing: Listing) -> str:
    place = ", ".join(p for p in (listing.cityOrDistrict, listing.state) if p)
    parts = [listing.name or listing.id or "?", place, listing.sellingStatus or ""]
    return " · ".join(p for p in parts if p)


def open_listing(listing_id: str) -> None:
    st.query_params["id"] = listing_id


def render_finder() -> None:
    st.subheader("Find a listing")
    query = st.text_input(
        "Search by name, city, street or amenity",
        key="listing_finder",
        placeholder="e.g. King West condo",
    ).strip()
    with api.guarded():
        page: Page[Listing] = api.call("search_listings", search=query or None, per_page=FINDER_RESULTS)
    found = [listing for listing in page.results if listing.id]
    if not found:
        st.info("No listing matches these words: try fewer or different ones.", icon="🔎")
        return
    if query:
        st.caption(f"{page.total:,} listings match; the best {len(found)} are below.")
    else:
        st.caption(f"Type to search the {page.total:,} listings, or pick one of these.")
    by_id = {listing.id: listing for listing in found if listing.id}
    pick, go = st.columns([5, 1], vertical_alignment="bottom")
    chosen = pick.selectbox(
        "Listing", list(by_id), format_func=lambda i: finder_label(by_id[i]), key=f"listing_finder_pick:{query}"
    )
    go.button(
        "Open listing",
        type="primary",
        key="listing_finder_open",
        on_click=open_listing,
        args=(chosen,),
        disabled=chosen is None,
        width="stretch",
    )
    listing_table(found, opened_from="views/listing.py", key="listing_finder_table")


def render_not_found(listing_id: str) -> None:
    st.title("Listing not found")
    _, province = api.scope()
    elsewhere = (
        "If the listing may be in another province, choose *All provinces* in the sidebar. "
        if province != "all"
        else ""
    )
    st.error(
        f"**There is no listing with the id {markdown_text(listing_id)}** in {scope_text()}.\n\n"
        f"Check the id in the address; it may also have been removed. {elsewhere}Or find the listing with the "
        "search below.",
        icon="🔎",
    )
    render_finder()


# -- the listing --------------------------------------------------------------------------------------------


def render_title(listing: Listing) -> None:
    heading, refresh = st.columns([6, 1], vertical_alignment="center")
    heading.title(markdown_text(listing.name or listing.id))
    refresh.button(
        "Refresh",
        icon="🔄",
        key=VISIT_MARKER,
        help="Fetch the latest data for this listing (does not count another view).",
        width="stretch",
    )
    with st.container(horizontal=True, gap="small"):
        if listing.sellingStatus:
            st.badge(markdown_text(listing.sellingStatus), color=STATUS_BADGES.get(listing.sellingStatus, "gray"))
        if listing.constructionStatus:
            st.badge(markdown_text(listing.constructionStatus), color="blue", icon="🏗️")
        for kind in listing.type:
            st.badge(markdown_text(kind), color="gray")
        if listing.isFeatured:
            st.badge("Featured", color="violet", icon="⭐")
    place = ", ".join(p for p in (listing.cityOrDistrict, listing.state) if p)
    fetched = time.strftime("%H:%M:%S", time.localtime(st.session_state[VISIT]["at"]))
    st.caption(f"{markdown_text(place)} · id {markdown_text(listing.id)} · data fetched at {fetched}")


def render_plans_and_units(listing: Listing) -> None:
    """The floor plans and the inventory; with the unit filters of the search that opened the listing, what they
    match marked in both and the plans' filters set from them."""
    listing_id = listing.id or ""
    st.subheader("Floor plans")
    plans_key = f"plans:{listing_id}"
    marked = listing_marks.current(listing.floorPlans)
    if marked is None:
        render_floor_plans(listing.floorPlans, key=plans_key)
    else:
        state, matching = marked
        render_floor_plans(
            listing.floorPlans,
            key=plans_key,
            matched=matching.plans,
            preset=lambda frame, steps: listing_marks.preset(plans_key, listing_id, state, frame, steps),
        )
    st.subheader("Inventory")
    render_units(listing.floorPlans, key=f"units:{listing_id}", structures=listing.paymentStructures,
                 matched=None if marked is None else marked[1].units)  # fmt: skip


def render_listing(listing: Listing) -> None:
    listing_id = listing.id or ""
    similar, similar_error = similar_listings(listing_id)
    found = contradictions(listing)
    render_title(listing)
    saved.watch_control(listing)
    render_compare_button(listing_id)
    render_header_metrics(listing)

    left, right = st.columns([3, 2], gap="large")
    with left:
        render_photos(listing)
    with right:
        st.subheader("Key facts")
        render_key_facts(listing)
    if listing.summary:
        st.markdown(markdown_text(listing.summary))

    st.subheader("Location")
    render_location(listing, similar)

    st.subheader("Pricing and fees")
    render_contradictions(found, "pricing")
    render_pricing(listing)

    render_plans_and_units(listing)

    st.subheader("History")
    render_history(listing, key=f"history:{listing_id}")

    st.subheader("Deposit structure")
    render_contradictions(found, "deposits")
    render_deposits(listing.paymentStructures, listing.floorPlans, key=f"deposits:{listing_id}")

    incentives, amenities = st.columns(2, gap="large")
    with incentives:
        st.subheader("Incentives")
        render_incentives(listing, found)
    with amenities:
        st.subheader("Amenities")
        render_amenities(listing)
    render_details(listing)

    st.subheader("Companies")
    render_companies(listing)

    st.subheader("Similar listings")
    if similar_error is not None:
        api.show_error(similar_error)
    elif similar:
        listing_table(similar, opened_from="views/listing.py", key="listing_similar")
    else:
        st.caption("No similar listings were found.")
    st.page_link("views/listing.py", label="Find another listing", icon="🔎")


def main() -> None:
    shared_filters.back_to_results()
    listing_id = requested_id()
    if listing_id is None:
        st.title("Listing")
        st.caption("Open a listing from a search, the map or any table, or find one here.")
        render_finder()
        return
    try:
        listing = current_listing(listing_id)
    except NotFound:
        listing = None
    except PreconError as error:
        st.title("Listing")
        api.show_error(error)
        return
    if listing is None:
        render_not_found(listing_id)
        return
    render_listing(listing)


main()
