"""The directory of companies: builders, architects, designers, marketers, sales companies and centres.

Search by collection and name, sort by name either way (accents and case ignored) or by number of listings, page
through; the state lives in the address (``/profiles?collection=Builders&q=homes&sort=dsc&page=2&per_page=25``),
so a link reopens the same view. The
address is read when the page opens (its widgets then have no state yet) and written after every change.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from components import api
from components.images import safe_image_source
from components.listing_facts import web_address
from components.listing_table import KEYBOARD_HINT, OPENING_MODES, name_column, picked_row
from precon.client.models import Page, Profile

PAGE_SIZES = (10, 25, 50, 100)
ROW_HEIGHT, HEADER_HEIGHT, MAX_VISIBLE_ROWS = 44, 40, 15
DEFAULTS: dict[str, Any] = {"collection": "", "q": "", "sort": "asc", "page": 1, "per_page": 25}
# Each setting's widget key; the setting's name is its query parameter.
KEYS = {name: f"profiles_{name}" for name in DEFAULTS}
COLLECTION_LABELS = {
    "": "All collections",
    "Architects": "Architects",
    "Builders": "Builders",
    "InteriorDesigners": "Interior designers",
    "Marketers": "Marketers",
    "SalesCentres": "Sales centres",
    "SalesCompanies": "Sales companies",
    "Owners": "Owners",
}
SORT_LABELS = {"asc": "Name A → Z", "dsc": "Name Z → A", "listings": "Most listings"}
# Widths in pixels, so the address and the website read in full on a 1280-pixel screen beside the sidebar.
COLUMNS = {
    "logo": st.column_config.ImageColumn("Logo", width=56),
    "name": name_column("Name", "profiles_table_open", 230, "Click a name to open the company's profile"),
    "collection": st.column_config.TextColumn("Collection", width=120),
    "address": st.column_config.TextColumn("Address", width=340),
    "website": st.column_config.LinkColumn("Website", display_text=r"^https?://(?:www\.)?([^/?#]+)", width=200),
    "listings": st.column_config.NumberColumn("Listings", format="%d", width=80),
}


def _positive(text: str | None, default: int) -> int:
    try:
        value = int(text or "")
    except ValueError:
        return default
    return value if value > 0 else default


def url_state() -> dict[str, Any]:
    """The settings the address asks for; a value that makes no sense falls back to the default quietly."""
    params = st.query_params
    collections = {name.lower(): name for name in COLLECTION_LABELS if name}
    per_page = _positive(params.get("per_page"), DEFAULTS["per_page"])
    return {
        "collection": collections.get((params.get("collection") or "").lower(), ""),
        "q": (params.get("q") or "").strip(),
        "sort": params.get("sort") if params.get("sort") in SORT_LABELS else DEFAULTS["sort"],
        "page": _positive(params.get("page"), 1),
        "per_page": per_page if per_page in PAGE_SIZES else DEFAULTS["per_page"],
    }


def start_from_url() -> None:
    """Fills each setting's widget state from the address when the page opens (or the widget was not drawn)."""
    wanted = url_state()
    for name, key in KEYS.items():
        if key not in st.session_state:
            st.session_state[key] = wanted[name]


def write_url(state: dict[str, Any]) -> None:
    for name, value in state.items():
        if value == DEFAULTS[name]:
            st.query_params.pop(name, None)
        else:
            st.query_params[name] = str(value)


def first_page() -> None:
    st.session_state[KEYS["page"]] = 1


def turn(by: int) -> None:
    st.session_state[KEYS["page"]] = max(1, int(st.session_state.get(KEYS["page"], 1)) + by)


def profile_path(profile: Profile) -> str:
    return profile.path or f"{profile.collection or ''}/{profile.profile_id or ''}"


def open_profile(profile: Profile) -> None:
    """The company's profile page, in this tab (a page switch: call it in the run, not in a callback)."""
    collection, _, profile_id = profile_path(profile).partition("/")
    st.switch_page("views/profile.py", query_params={"collection": collection, "id": profile_id})


def profile_frame(profiles: list[Profile]) -> pd.DataFrame:
    rows = [
        {
            "logo": safe_image_source(profile.logo),
            "name": profile.name or profile.profile_id or profile_path(profile),
            "collection": COLLECTION_LABELS.get(profile.collection or "", profile.collection),
            "address": profile.address,
            "website": web_address(profile.website),
            "listings": len(profile.listings),
        }
        for profile in profiles
    ]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def fetch(state: dict[str, Any]) -> Page[Profile]:
    result: Page[Profile] = api.call(
        "search_profiles",
        search=state["q"] or None,
        collection=state["collection"] or None,
        page=state["page"] - 1,
        per_page=state["per_page"],
        sort_by_name="asc" if state["sort"] == "listings" else state["sort"],
        sort_by_listings="desc" if state["sort"] == "listings" else None,
    )
    return result


def controls() -> dict[str, Any]:
    """The name search, the collection and the order; what they hold."""
    search, collection, sort = st.columns([4, 3, 4], vertical_alignment="bottom")
    search.text_input("Name", key=KEYS["q"], placeholder="Search by name, address or website", on_change=first_page)
    collection.selectbox(
        "Collection",
        list(COLLECTION_LABELS),
        format_func=COLLECTION_LABELS.get,
        key=KEYS["collection"],
        on_change=first_page,
    )
    sort.radio(
        "Sort by",
        list(SORT_LABELS),
        format_func=SORT_LABELS.get,
        key=KEYS["sort"],
        horizontal=True,
        on_change=first_page,
    )
    state = {name: st.session_state[key] for name, key in KEYS.items()}
    state["q"] = (state["q"] or "").strip()
    return state


def directory_table(result: Page[Profile]) -> None:
    """The page of companies; a click on a name opens its profile."""
    # A line between the controls and the table: the table's toolbar opens above its top right corner, where it
    # covered the last "Sort by" choice.
    st.caption(f"{result.total:,} companies · click a name to open the company's profile ({KEYBOARD_HINT}).")
    event = st.dataframe(
        profile_frame(result.results),
        placeholder="—",
        column_config=COLUMNS,
        hide_index=True,
        width="stretch",
        row_height=ROW_HEIGHT,
        height=min(len(result.results), MAX_VISIBLE_ROWS) * ROW_HEIGHT + HEADER_HEIGHT,
        key="profiles_table",
        on_select="rerun",
        selection_mode=OPENING_MODES,
    )
    row = picked_row(event, "profiles_table_open", len(result.results))
    if row is not None:
        open_profile(result.results[row])


def main() -> None:
    st.title("Companies")
    st.caption("Builders, architects, interior designers, marketers, sales companies and sales centres.")
    start_from_url()
    state = controls()
    with api.guarded():
        result = fetch(state)
        pages = max(result.pages, 1)
        if state["page"] > pages:
            state["page"] = st.session_state[KEYS["page"]] = pages
            if result.pages:
                result = fetch(state)
    write_url(state)

    if not result.results:
        st.info("No company matches: try another name or collection.", icon="🔎")
    else:
        directory_table(result)

    # Below the table, clear of the toolbar that opens above its top right corner.
    back, number, where, size, forward = st.columns([1, 1, 3, 1, 1], vertical_alignment="bottom")
    back.button("Previous", icon="⬅️", on_click=turn, args=(-1,), disabled=state["page"] <= 1, width="stretch")
    number.number_input("Page", min_value=1, max_value=pages, step=1, key=KEYS["page"])
    where.markdown(f"Page **{state['page']}** of **{pages}** · {result.total:,} companies")
    size.selectbox("Per page", PAGE_SIZES, key=KEYS["per_page"], on_change=first_page)
    forward.button("Next", icon="➡️", on_click=turn, args=(1,), disabled=state["page"] >= pages, width="stretch")


main()
