"""The Search page's parts below the filters: the view in the address (sort, page, page size, table or cards), the
counts that label the refinement lists, the results as a table or cards, paging, and the one-click CSV export."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import quote

import pandas as pd
import streamlit as st

from components import api, filter_chips, shared_filters
from components import filter_panel as panel
from components.compare import compare_selected
from components.facet_search import counts_among
from components.formatting import completion, markdown_text, number_range, plural, price_text, size_range
from components.listing_table import KEYBOARD_HINT, OPENING_MODES, name_column, open_listing, picked_row
from components.search_scope import SearchScope, scope_of
from precon.client.models import PROVINCES, Listing, MatchedFloorPlans
from precon.dashboard import labels, listing_search
from precon.dashboard.filter_state import FilterState, facets_in
from precon.dashboard.listing_search import SearchOutcome
from precon.dashboard.matched_words import matched_summary
from precon.dashboard.ordering import NEWEST_LIMIT, sort_rows

SORTS: dict[str, str] = {
    "relevance": "Relevance",
    "newest": "Newest (last updated)",
    "price_asc": "Price: low to high",
    "price_desc": "Price: high to low",
    "completion": "Completion: soonest",
}
PAGE_SIZES = (20, 50, 100)
VIEWS = {"table": "Table", "cards": "Cards"}
SEARCH_PAGE = "views/search.py"
OPEN_KEY = "search_table_open"
"""The name buttons' click, on the run it causes."""
MAX_PAGE = 1_000_000
LIST_FIELDS = (
    "listingId", "name", "summary", "type", "sellingStatus", "constructionStatus", "cityOrDistrict",
    "neighbourhood", "streetName", "fullAddress", "amenities", "country", "coverPhoto", "startPrice", "endPrice",
    "contactForPricing", "averagePricePerSqFeet", "minBeds", "maxBeds", "minBaths", "maxBaths", "minSize",
    "maxSize", "completionDate", "completionYear", "completionDateTBD", "builders", "isFeatured", "updatedAt",
)  # fmt: skip
NOT_IN_LITE = frozenset({"summary", "amenities"})
"""v1-lite refuses to be asked for what it does not carry."""


# -- the view in the address -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchView:
    sort: str = "relevance"
    page: int = 0
    """Zero-based here; the address counts from 1."""
    per_page: int = PAGE_SIZES[0]
    view: str = "table"

    @classmethod
    def from_url(cls) -> tuple[SearchView, list[str]]:
        """The view the address names, and what in it could not be used."""
        problems = []
        sort = st.query_params.get("sort") or "relevance"
        if sort not in SORTS:
            problems.append(f"Sort “{markdown_text(sort)}” is not one of {', '.join(SORTS)}: sorted by relevance.")
            sort = "relevance"
        page_text = st.query_params.get("page") or "1"
        try:
            page = int(page_text)
            if not 1 <= page <= MAX_PAGE:
                raise ValueError
        except ValueError:
            problems.append(f"Page “{markdown_text(page_text)}” is not a page number: showing page 1.")
            page = 1
        per_text = st.query_params.get("per") or str(PAGE_SIZES[0])
        per_page = int(per_text) if per_text.isdigit() and int(per_text) in PAGE_SIZES else PAGE_SIZES[0]
        if str(per_page) != per_text:
            problems.append(f"{markdown_text(per_text)} per page is not offered: showing {per_page}.")
        view = st.query_params.get("view") or "table"
        if view not in VIEWS:
            problems.append(f"View “{markdown_text(view)}” is not table or cards: showing the table.")
            view = "table"
        return cls(sort, page - 1, per_page, view), problems

    def write(self) -> None:
        defaults = SearchView()
        for name, value, default in (
            ("sort", self.sort, defaults.sort),
            ("page", str(self.page + 1), str(defaults.page + 1)),
            ("per", str(self.per_page), str(defaults.per_page)),
            ("view", self.view, defaults.view),
        ):
            if value == default:
                st.query_params.pop(name, None)
            elif st.query_params.get(name) != value:
                st.query_params[name] = value


def go_to_page(page: int) -> None:
    if page <= 0:
        st.query_params.pop("page", None)
    else:
        st.query_params["page"] = str(page + 1)


def on_text(key: str) -> None:
    shared_filters.change(lambda state: state.with_text(st.session_state.get(key) or ""))


def on_choice(key: str, param: str, default: str) -> None:
    value = str(st.session_state.get(key) or default)
    if value == default:
        st.query_params.pop(param, None)
    else:
        st.query_params[param] = value
    if param != "view":
        st.query_params.pop("page", None)


def list_fields() -> list[str]:
    """The attributes the table and the cards show, as far as the sidebar's version has them."""
    version, _ = api.scope()
    return [name for name in LIST_FIELDS if version != "v1-lite" or name not in NOT_IN_LITE]


# -- counts for the refinement lists ----------------------------------------------------------------------------


def facet_views(state: FilterState, outcome: SearchOutcome) -> list[panel.FacetView]:
    """Counts per facet value: with every filter for facets not in use; for a facet in use, with the others only
    (what each of its values would give if added). A chosen value outside the top 100 is counted too."""
    views = []
    names_wanted: list[str] = []
    version, _ = api.scope()
    for facet in facets_in(version):
        counts = dict(outcome.facets.get(facet.attr, {}))
        chosen = state.facets.get(facet.param, ())
        if chosen:
            others = scope_of(state, without=facet.param)
            _, found = listing_search.total_and_facets(
                api.backend, others.text, others.filter, others.unit_filter, [facet.attr],
                unit_supported=others.unit_supported,
            )  # fmt: skip
            counts = dict(found.get(facet.attr, {}))
            missing = [v for v in chosen if v not in counts]
            if missing:
                extra = counts_among(facet, state, missing)
                counts.update({v: c for v, c in extra.items() if v in missing})
        if facet.collection:
            names_wanted += [*counts, *chosen]
        views.append(panel.FacetView(facet, counts, {}))
    names = filter_chips.profile_names(names_wanted)
    return [panel.FacetView(v.spec, v.counts, names) for v in views]


# -- what the page says -----------------------------------------------------------------------------------------


def nothing_found(state: FilterState) -> str:
    """Why there are no results, and what to do about it."""
    _, province = api.scope()
    said = "No listings match"
    if state.text:
        said += f" '{markdown_text(state.text)}'"
    if state.count:
        said += f" with {'this filter' if state.count == 1 else f'these {state.count} filters'}"
    if province in PROVINCES:
        said += f" in {PROVINCES[province]}"
    remedies = []
    if state.count:
        remedies.append("remove a filter (or clear them all)")
    if state.text:
        remedies.append("check the spelling or try fewer words")
    if province in PROVINCES:
        remedies.append("choose another province in the sidebar")
    if not remedies:
        return "There are no listings in this catalogue yet."
    remedy = remedies[0] if len(remedies) == 1 else "; ".join(remedies[:-1]) + "; or " + remedies[-1]
    return f"{said} — {remedy}."


def order_caption(view: SearchView, state: FilterState, outcome: SearchOutcome) -> str:
    if view.sort == "relevance":
        if state.text:
            return "Best matches first."
        return "No search words: featured listings first, then the most recently updated."
    if view.sort == "newest":
        if outcome.limited:
            return (
                f"Most recently updated first, among the {NEWEST_LIMIT:,} best matches of {outcome.total:,} "
                "(add words or filters to order them all)."
            )
        return "Most recently updated first, over every match."
    what = "starting price" if view.sort.startswith("price") else "completion year"
    direction = {"price_desc": "highest first", "completion": "soonest first"}.get(view.sort, "lowest first")
    return (
        f"By the listing's {what}, {direction}, over every match (ordered by the dashboard: the API sorts by "
        f"relevance only); ties in relevance order, listings without a {what} last."
    )


def matched_text(matched: MatchedFloorPlans | None, *, compact: bool = False) -> str:
    """``2 of 7 plans match, from $689,990`` (compact, for a table cell: ``2 of 7 · from $689,990``)."""
    if matched is None:
        return ""
    of = f" of {matched.of}" if matched.of is not None else ""
    price = f"from ${matched.minPrice:,.0f}" if matched.minPrice else "price on request"
    if compact:
        return f"{matched.count}{of} · {price}"
    verb = "matches" if matched.count == 1 and not of else "match"
    return f"{matched.count}{of} plans {verb}, {price}"


# -- the results ------------------------------------------------------------------------------------------------

TABLE_COLUMNS: dict[str, Any] = {
    "id": None,  # in the data (tests read it), not on the screen
    "name": st.column_config.TextColumn("Name", width=165),  # a button where a click opens: see results_table
    "matched": st.column_config.TextColumn(
        "Matched in", width=190, help="Where the search words were found: the field, and the text found there"
    ),
    "type": st.column_config.TextColumn("Type", width=80),
    "city": st.column_config.TextColumn("City", width=95),
    "status": st.column_config.TextColumn("Status", width=85),
    "builder": st.column_config.TextColumn("Builder", width=125),
    "price": st.column_config.TextColumn("Price from", width=90),
    "rooms": st.column_config.TextColumn("Beds · baths", width=80),
    "units": st.column_config.TextColumn("Matching plans", width=155),
    "size": st.column_config.TextColumn("Sq ft", width=85),
    "completion": st.column_config.TextColumn("Completion", width=95),
}
"""Widths that fit a 1280-pixel screen beside the sidebar. With unit filters on, "Matching plans" (how many plans
meet them, from what price) takes the place of the listing's price and rooms; with search words, "Matched in" (where
each listing matched them, most of those fields being off the table) takes the place of its size."""
UNIT_COLUMNS_REPLACE = ("price", "rooms")
WORDS_COLUMNS_REPLACE = ("size",)
TABLE_ROW_PX, TABLE_HEADER_PX = 35, 38


def first_and_more(values: Sequence[str]) -> str:
    """``Condo +2``: the first value and how many more, for a narrow cell ("—" for none)."""
    kept = [v for v in values if v]
    if not kept:
        return "—"
    return kept[0] if len(kept) == 1 else f"{kept[0]} +{len(kept) - 1}"


def _builders(listing: Listing, names: dict[str, str]) -> list[str]:
    return [names.get(b, b) if isinstance(b, str) else (b.name or "") for b in listing.builders]


def results_frame(
    listings: Sequence[Listing], names: dict[str, str], with_units: bool, with_words: bool = False
) -> pd.DataFrame:
    rows = [
        {
            "id": listing.id,
            "name": listing.name or listing.id,
            "matched": matched_summary(listing.highlight, most=2, shown=("name",)) or "—",
            "type": first_and_more(listing.type),
            "city": listing.cityOrDistrict or "—",
            "status": listing.sellingStatus or "—",
            "builder": first_and_more(_builders(listing, names)),
            "price": price_text(listing.startPrice, listing.contactForPricing),
            "rooms": f"{number_range(listing.minBeds, listing.maxBeds)} · "
            f"{number_range(listing.minBaths, listing.maxBaths)}",
            "size": size_range(listing.minSize, listing.maxSize),
            "units": matched_text(listing.matched_floor_plans, compact=True),
            "completion": completion(listing),
        }
        for listing in listings
    ]
    hidden = UNIT_COLUMNS_REPLACE if with_units else ("units",)
    hidden += WORDS_COLUMNS_REPLACE if with_words else ("matched",)
    columns = [c for c in TABLE_COLUMNS if c not in hidden]
    return pd.DataFrame(rows, columns=columns)


def results_table(
    listings: Sequence[Listing], names: dict[str, str], with_units: bool, with_words: bool = False
) -> None:
    """The page of results; a click on a name (or ticking its row, Shift+Space from the keyboard) opens the listing
    in this tab, or, while picking listings to compare, ticks it. With search words, each row says where they were
    found."""
    frame = results_frame(listings, names, with_units, with_words)
    comparing = st.toggle(
        "Pick listings to compare",
        key="search_compare_mode",
        help="Tick 2 to 4 rows, then press Compare selected (a ticked row is then picked instead of opened).",
    )
    config = {k: v for k, v in TABLE_COLUMNS.items() if k in frame.columns}
    if not comparing:
        config["name"] = name_column("Name", OPEN_KEY, 165, "Click a name to open the listing")
    event = st.dataframe(
        frame,
        placeholder="—",
        column_config=config,
        column_order=[c for c in frame.columns if TABLE_COLUMNS.get(c) is not None],
        hide_index=True,
        width="stretch",
        height=TABLE_HEADER_PX + TABLE_ROW_PX * len(frame) + 3,
        # Another key in each mode: a table's selection mode cannot change under the same key.
        key="search_table_compare" if comparing else "search_table",
        on_select="rerun",
        selection_mode="multi-row" if comparing else OPENING_MODES,
    )
    if comparing:
        rows = event.selection.rows if event is not None else []
        compare_selected([listings[r].id or "" for r in rows if 0 <= r < len(listings) and listings[r].id], SEARCH_PAGE)
        return
    row = picked_row(event, OPEN_KEY, len(listings))
    if row is not None and listings[row].id:
        open_listing(listings[row].id or "", SEARCH_PAGE)
    st.caption(f"Click a name to open the listing ({KEYBOARD_HINT}); the back link there returns to these results.")


def pagination(outcome: SearchOutcome, view: SearchView) -> None:
    pages = max(math.ceil(outcome.total / view.per_page), 1)
    previous, where, following = st.columns([1, 2, 1], vertical_alignment="center")
    previous.button(
        "Previous", key="search_prev", icon=":material/chevron_left:", disabled=outcome.page == 0,
        on_click=go_to_page, args=(outcome.page - 1,), width="stretch",
    )  # fmt: skip
    shown_from = outcome.page * view.per_page + 1
    shown_to = min((outcome.page + 1) * view.per_page, outcome.total)
    where.markdown(
        f"<div style='text-align:center'>Page {outcome.page + 1:,} of {pages:,} · "
        f"listings {shown_from:,}–{shown_to:,} of {outcome.total:,}</div>",
        unsafe_allow_html=True,
    )
    following.button(
        "Next", key="search_next", icon=":material/chevron_right:", icon_position="right",
        disabled=outcome.page + 1 >= pages, on_click=go_to_page, args=(outcome.page + 1,), width="stretch",
    )  # fmt: skip


# -- the CSV ----------------------------------------------------------------------------------------------------

SPREADSHEET_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
CSV_FIELDS = (
    "listingId", "name", "type", "sellingStatus", "constructionStatus", "cityOrDistrict", "neighbourhood", "state",
    "fullAddress", "startPrice", "endPrice", "contactForPricing", "averagePricePerSqFeet", "minBeds", "maxBeds",
    "minBaths", "maxBaths", "minSize", "maxSize", "completionDate", "completionYear", "completionDateTBD",
    "builders", "updatedAt", "isFeatured",
)  # fmt: skip
CsvColumn = tuple[str, Callable[[Listing, dict[str, str], str], Any]]
CSV_COLUMNS: list[CsvColumn] = [
    ("Id", lambda lst, _, __: lst.id),
    ("Link", lambda lst, _, base: f"{base}/listing?id={quote(lst.id or '')}"),
    ("Name", lambda lst, _, __: lst.name),
    ("Type", lambda lst, _, __: "; ".join(lst.type)),
    ("Selling status", lambda lst, _, __: lst.sellingStatus),
    ("Construction status", lambda lst, _, __: lst.constructionStatus),
    ("City", lambda lst, _, __: lst.cityOrDistrict),
    ("Neighbourhood", lambda lst, _, __: "; ".join(lst.neighbourhood)),
    ("Province", lambda lst, _, __: lst.state),
    ("Address", lambda lst, _, __: lst.fullAddress),
    ("Price from (CAD)", lambda lst, _, __: lst.startPrice or None),
    ("Price to (CAD)", lambda lst, _, __: lst.endPrice or None),
    ("Prices on request", lambda lst, _, __: bool(lst.contactForPricing)),
    ("Price per sq ft (CAD)", lambda lst, _, __: lst.averagePricePerSqFeet or None),
    ("Fewest bedrooms", lambda lst, _, __: lst.minBeds),
    ("Most bedrooms", lambda lst, _, __: lst.maxBeds),
    ("Fewest bathrooms", lambda lst, _, __: lst.minBaths),
    ("Most bathrooms", lambda lst, _, __: lst.maxBaths),
    ("Smallest plan (sq ft)", lambda lst, _, __: lst.minSize),
    ("Largest plan (sq ft)", lambda lst, _, __: lst.maxSize),
    ("Matching plans", lambda lst, _, __: matched_text(lst.matched_floor_plans) or None),
    ("Completion", lambda lst, _, __: completion(lst)),
    ("Completion year", lambda lst, _, __: lst.completionYear),
    ("Builders", lambda lst, names, __: "; ".join(names.get(b, b) for b in lst.builders if isinstance(b, str))),
    ("Updated (UTC)", lambda lst, _, __: lst.updatedAt.isoformat() if lst.updatedAt else None),
]


def _cell(value: Any) -> Any:
    if labels.blank(value):
        return ""
    if isinstance(value, str) and value.startswith(SPREADSHEET_FORMULA_STARTS):
        return "'" + value  # a spreadsheet must not read a listing's text as a formula
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def csv_bytes(listings: Sequence[Listing], names: dict[str, str], base_url: str) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([name for name, _ in CSV_COLUMNS])
    for listing in listings:
        writer.writerow([_cell(read(listing, names, base_url)) for _, read in CSV_COLUMNS])
    return ("\ufeff" + out.getvalue()).encode("utf-8")  # the BOM makes Excel read the accents right


def app_base_url() -> str:
    """The dashboard's address without the page, for the CSV's links (``http://host:8501``)."""
    url = str(st.context.url or "").split("?")[0].rstrip("/")
    return url.rsplit("/", 1)[0] if url.count("/") > 2 else url


def _all_rows(scope: SearchScope, sort: str, backend: Any) -> list[Listing]:
    """Every match with the CSV's fields, in the page's order."""
    rows, _ = listing_search.all_matching(
        backend, scope.text, scope.filter, scope.unit_filter, CSV_FIELDS, unit_supported=scope.unit_supported
    )
    return sort_rows(rows, sort)


class _ScopedClient:
    """The connection's client in a fixed version and province: the CSV is made on a thread of its own, where the
    page's session (and so the sidebar's choice) cannot be read."""

    def __init__(self, version: str, province: str) -> None:
        self.client = api.connection().client
        self.version, self.province = version, province

    def search_listings(self, search: str | None = None, **arguments: Any) -> Any:
        return self.client.search_listings(search, version=self.version, province=self.province, **arguments)

    def multiple_listings(self, ids: Any, **arguments: Any) -> Any:
        return self.client.multiple_listings(ids, version=self.version, province=self.province, **arguments)


def csv_download(scope: SearchScope, sort: str, total: int) -> None:
    """One click downloads every match as CSV, made when clicked (the button shows it working)."""
    version, province = api.scope()
    backend = _ScopedClient(version, province)
    base_url = app_base_url()

    def make() -> bytes:
        rows = _all_rows(scope, sort, backend)
        paths = [b for lst in rows for b in lst.builders if isinstance(b, str)]
        lookup = partial(backend.client.search_profiles, version=version, province=province)
        return csv_bytes(rows, filter_chips.profile_names(paths, lookup=lookup), base_url)

    st.download_button(
        f"Download CSV ({plural(total, 'listing')})",
        data=make,
        file_name="precon-search.csv",
        mime="text/csv",
        key="search_download_csv",
        icon=":material/download:",
        on_click="ignore",
        help="Every match, in this order, with a link to each listing.",
    )
