"""One company (``/profile?collection=Builders&id=…``): who it is, how to reach it, and its listings as a table
and on a map. Without an id, a picker: search a company by name, choose it, open it."""

from __future__ import annotations

from collections.abc import Iterator

import streamlit as st

from components import api, maps, shared_filters
from components.formatting import markdown_text
from components.images import safe_image_source
from components.listing_facts import email_address, link, web_address
from components.listing_table import listing_table
from precon.client.errors import NotFound, PreconError
from precon.client.models import PROFILE_COLLECTIONS, PROVINCES, Listing, Profile

PICKER_MATCHES = 20  # the companies the picker offers for the words typed
IDS_PER_CALL = 100  # the most ids multiple_listings takes in one call
MAP_MARGIN_ZOOM = 0.6  # zoomed out a little from the tightest fit, so no dot sits on the map's edge
KNOWN_COLLECTIONS = PROFILE_COLLECTIONS
SINGULAR = {
    "Architects": "Architect",
    "Builders": "Builder",
    "InteriorDesigners": "Interior designer",
    "Marketers": "Marketing company",
    "SalesCentres": "Sales centre",
    "SalesCompanies": "Sales company",
    "Owners": "Owner",
}


def requested() -> tuple[str | None, str | None, str | None]:
    """(collection, id, the collection as given when it is not one the API knows)."""
    given = (st.query_params.get("collection") or "").strip()
    profile_id = (st.query_params.get("id") or "").strip() or None
    collection = {name.lower(): name for name in KNOWN_COLLECTIONS}.get(given.lower())
    return collection, profile_id, (given if given and collection is None else None)


def listing_ids(profile: Profile) -> list[str]:
    """The ids in the profile's ``listings`` paths (``Listings/ABC123``), in order, without repeats."""
    ids = [path.rpartition("/")[2] for path in profile.listings if path]
    return list(dict.fromkeys(i for i in ids if i))


def chunks(ids: list[str], size: int = IDS_PER_CALL) -> Iterator[list[str]]:
    for start in range(0, len(ids), size):
        yield ids[start : start + size]


def fetch_listings(ids: list[str]) -> list[Listing]:
    found: list[Listing] = []
    for chunk in chunks(ids):
        found += api.call("multiple_listings", ids=chunk)
    return found


def render_directory_link() -> None:
    st.page_link("views/profiles.py", label="Browse all companies", icon="👷")


def choice_label(profile: Profile) -> str:
    kind = SINGULAR.get(profile.collection or "", profile.collection or "")
    return f"{profile.name or profile.profile_id} · {kind}" if kind else str(profile.name or profile.profile_id)


def open_chosen() -> None:
    """The picker's Open: the address names the company, which the page then shows."""
    chosen: Profile | None = st.session_state.get("profile_pick")
    if chosen is not None and chosen.profile_id:
        st.query_params["collection"] = chosen.collection or ""
        st.query_params["id"] = chosen.profile_id


def render_picker() -> None:
    """No company in the address: find one by name (the directory's search), choose it and open it."""
    st.title("Company")
    st.caption("Search a company by name, choose it and open it; or browse them all in the directory.")
    words = st.text_input("Company name", key="profile_search", placeholder="e.g. a builder's or an architect's name")
    try:
        found: list[Profile] = api.call(
            "search_profiles",
            search=words.strip() or None,
            per_page=PICKER_MATCHES,
            sort_by_name=None if words.strip() else "asc",
        ).results
    except PreconError as error:
        api.show_error(error)
        return
    found = [profile for profile in found if profile.profile_id]
    if not found:
        st.info("No company matches these words: try another name.", icon="🔎")
    else:
        pick, go = st.columns([4, 1], vertical_alignment="bottom")
        pick.selectbox(
            "Best matches" if words.strip() else f"The first {len(found)} companies, A to Z",
            found,
            format_func=choice_label,
            key="profile_pick",
        )
        go.button("Open company", icon="➡️", type="primary", on_click=open_chosen, width="stretch")
    render_directory_link()


def render_not_found(profile_id: str, collection: str | None) -> None:
    version, province = api.scope()
    where = "all provinces" if province == "all" else PROVINCES.get(province, province)
    among = f" among the {markdown_text(collection)}" if collection else ""
    st.title("Company not found")
    elsewhere = "choose *All provinces* in the sidebar if it works elsewhere, " if province != "all" else ""
    st.error(
        f"**There is no company with the id {markdown_text(profile_id)}**{among} in {where} (API {version}).\n\n"
        f"Check the id and the collection in the address, {elsewhere}or find the company in the directory.",
        icon="🔎",
    )
    render_directory_link()


def render_header(profile: Profile) -> None:
    logo = safe_image_source(profile.logo)
    if logo:
        picture, heading = st.columns([1, 7], vertical_alignment="center")
        picture.image(logo, width=96)
    else:
        heading = st.container()
    with heading:
        st.title(markdown_text(profile.name or profile.profile_id or "Company"))
        if profile.collection:
            st.badge(SINGULAR.get(profile.collection, profile.collection), color="blue")
    lines = []
    if profile.address:
        lines.append(f"📍 {markdown_text(profile.address)}")
    website = web_address(profile.website)
    if website:
        lines.append(f"🌐 {link(website, website)}")
    elif profile.website:
        lines.append(f"🌐 {markdown_text(profile.website)}")
    email = email_address(profile.email)
    if email:
        lines.append(f"✉️ {link(email, 'mailto:' + email)}")
    if profile.phone:
        lines.append(f"📞 {markdown_text(profile.phone)}")
    extra = profile.model_extra or {}
    if extra.get("yearFounded"):
        lines.append(f"🗓️ Founded in {markdown_text(str(extra['yearFounded']))}")
    provinces = extra.get("provinces")
    if isinstance(provinces, list) and provinces:
        lines.append(f"🗺️ Works in {markdown_text(', '.join(str(p) for p in provinces))}")
    if lines:
        st.markdown("  \n".join(lines))
    if profile.summary:
        st.markdown(markdown_text(profile.summary))


def render_listings(profile: Profile) -> None:
    ids = listing_ids(profile)
    count = len(profile.listings)
    st.subheader(f"{count:,} listing{'s' if count != 1 else ''}")
    if not ids:
        st.caption("No listings are recorded for this company.")
        return
    try:
        found = fetch_listings(ids)
    except PreconError as error:
        api.show_error(error)
        return
    if len(found) < len(ids):
        _, province = api.scope()
        where = "this province" if province != "all" else "the catalogue"
        st.caption(f"{len(ids) - len(found):,} of them are not in {where}; {len(found):,} are shown.")
    if not found:
        return
    selling = sum(1 for listing in found if listing.sellingStatus == "Selling Now")
    prices = [listing.startPrice for listing in found if listing.startPrice]
    columns = st.columns(3)
    columns[0].metric("Selling now", f"{selling:,}")
    columns[1].metric("Cities", f"{len({listing.cityOrDistrict for listing in found if listing.cityOrDistrict}):,}")
    columns[2].metric("Lowest start price", f"${min(prices):,.0f}" if prices else "—")
    placed = [listing for listing in found if listing.geoloc is not None]
    if placed:
        view = maps.fitted_view(placed)
        view.zoom = max(2.0, view.zoom - MAP_MARGIN_ZOOM) if len(placed) > 1 else min(view.zoom, 12.0)
        st.pydeck_chart(maps.deck([maps.points_layer(placed)], view, basemap=False), height=380)
        st.caption("Dots: green selling now, yellow pending, red sold out.")
    listing_table(found, opened_from="views/profile.py", key="profile_listings")


def main() -> None:
    shared_filters.back_to_results()
    collection, profile_id, unknown_collection = requested()
    if profile_id is None:
        render_picker()
        return
    if unknown_collection:
        st.warning(
            f"There is no collection called {markdown_text(unknown_collection)}; "
            "the company is looked up in every collection.",
            icon="⚠️",
        )
    try:
        profile: Profile = api.call("get_profile", id=profile_id, collection=collection)
    except NotFound:
        render_not_found(profile_id, collection)
        return
    except PreconError as error:
        st.title("Company")
        api.show_error(error)
        return
    render_header(profile)
    render_listings(profile)
    render_directory_link()


main()
