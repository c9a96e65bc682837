"""Search: words, facets and ranges over the listings, as a table or cards, sorted, paged, and downloadable.

The whole view lives in the address, so a copied link reopens it: ``q`` (search words), the filters of
:mod:`components.filter_panel` (``type``, ``selling``, ``construction``, ``city``, ``hood``, ``amenity``,
``builder``, ``price``, ``beds``, ``baths``, ``size``, ``year``), ``sort``, ``page`` (from 1), ``per`` (page size)
and ``view``; the sidebar adds ``province`` and ``version``. Defaults are left out of the address.

Sorting. The API orders by relevance only (with no search words: featured first, then last updated). Other
orders are computed here, exactly, over every match, without reading every match:

* price and completion year: the service counts matches at or below a value (``perPage=0``), so a bisection
  finds the value range holding the page's ranks; only that window's keys are read and ordered. Ties keep the
  relevance order; listings without the value come last, in relevance order.
* newest (last updated): without search words the service's own order is newest-first within featured and
  within the others, so the two streams are merged; with search words the last-updated dates of the
  :data:`NEWEST_LIMIT` most relevant matches are read and ordered (the caption says so when there are more).
"""

from __future__ import annotations

import csv
import io
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import streamlit as st

from components import api, url_state
from components import filter_panel as panel
from components.formatting import completion, markdown_text
from components.listing_table import listing_table
from components.result_cards import result_cards
from precon import filters
from precon.filters import Expr
from precon.models import PROVINCES, Listing, Page

SORTS: dict[str, str] = {
    "relevance": "Relevance",
    "newest": "Newest (last updated)",
    "price_asc": "Price: low to high",
    "price_desc": "Price: high to low",
    "completion": "Completion: soonest",
}
NUMERIC_SORTS: dict[str, tuple[str, bool]] = {
    "price_asc": ("startPrice", False),
    "price_desc": ("startPrice", True),
    "completion": ("completionYear", False),
}
PAGE_SIZES = (20, 50, 100)
VIEWS = {"table": "Table", "cards": "Cards"}
SEARCH_MAX_CHARS = 512
TABLE_ROW_PX, TABLE_HEADER_PX = 48, 42
# A narrower name and number columns, so every column fits across a laptop screen.
TABLE_CONFIG = {
    "name": st.column_config.LinkColumn("Name", display_text=r"#(.*)$", width="medium"),
    "beds": st.column_config.TextColumn("Beds", width=70),
    "baths": st.column_config.TextColumn("Baths", width=70),
    "price_per_sqft": st.column_config.NumberColumn("$/sq ft", format="$%,.0f", width=70),
}
WINDOW = 1000  # keys read at once when ordering: the service's largest page
FAR = 1e15  # beyond any price or year
NEWEST_LIMIT = 10_000  # with search words, "newest" orders this many of the most relevant matches
LIST_FIELDS = [
    "listingId", "name", "summary", "type", "sellingStatus", "constructionStatus", "cityOrDistrict",
    "neighbourhood", "streetName", "fullAddress", "amenities", "country", "coverPhoto", "startPrice", "endPrice",
    "averagePricePerSqFeet", "minBeds", "maxBeds", "minBaths", "maxBaths", "minSize", "maxSize", "completionDate",
    "completionYear", "completionDateTBD", "builders", "isFeatured", "updatedAt",
]  # fmt: skip
NOT_IN_LITE = frozenset({"summary", "amenities"})  # v1-lite refuses to be asked for what it does not carry
CSV_COLUMNS: list[tuple[str, Callable[[Listing, dict[str, str]], Any]]] = [
    ("id", lambda lst, _: lst.id),
    ("name", lambda lst, _: lst.name),
    ("type", lambda lst, _: "; ".join(lst.type)),
    ("selling_status", lambda lst, _: lst.sellingStatus),
    ("construction_status", lambda lst, _: lst.constructionStatus),
    ("city", lambda lst, _: lst.cityOrDistrict),
    ("neighbourhood", lambda lst, _: "; ".join(lst.neighbourhood)),
    ("province", lambda lst, _: lst.state),
    ("address", lambda lst, _: lst.fullAddress),
    ("price_from_cad", lambda lst, _: lst.startPrice),
    ("price_to_cad", lambda lst, _: lst.endPrice),
    ("price_per_sqft_cad", lambda lst, _: lst.averagePricePerSqFeet or None),
    ("beds_min", lambda lst, _: lst.minBeds),
    ("beds_max", lambda lst, _: lst.maxBeds),
    ("baths_min", lambda lst, _: lst.minBaths),
    ("baths_max", lambda lst, _: lst.maxBaths),
    ("size_min_sqft", lambda lst, _: lst.minSize),
    ("size_max_sqft", lambda lst, _: lst.maxSize),
    ("completion", lambda lst, _: completion(lst)),
    ("completion_year", lambda lst, _: lst.completionYear),
    ("builders", lambda lst, names: "; ".join(names.get(b, b) for b in lst.builders if isinstance(b, str))),
    ("updated_at", lambda lst, _: lst.updatedAt.isoformat() if lst.updatedAt else None),
]
CSV_FIELDS = [
    "listingId", "name", "type", "sellingStatus", "constructionStatus", "cityOrDistrict", "neighbourhood", "state",
    "fullAddress", "startPrice", "endPrice", "averagePricePerSqFeet", "minBeds", "maxBeds", "minBaths", "maxBaths",
    "minSize", "maxSize", "completionDate", "completionYear", "completionDateTBD", "builders", "updatedAt",
    "isFeatured",
]  # fmt: skip
SPREADSHEET_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


# -- the view in the address -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class View:
    text: str
    sort: str
    page: int  # zero-based here; the address counts from 1
    per_page: int
    view: str

    @classmethod
    def from_url(cls) -> View:
        return cls(
            text=url_state.get_str("q", max_length=SEARCH_MAX_CHARS),
            sort=url_state.get_choice("sort", list(SORTS), "relevance"),
            page=url_state.get_int("page", 1, minimum=1, maximum=1_000_000) - 1,
            per_page=url_state.get_choice("per", PAGE_SIZES, PAGE_SIZES[0]),
            view=url_state.get_choice("view", list(VIEWS), "table"),
        )


def _go_to_page(page: int) -> None:
    url_state.set_int("page", page + 1, 1)


def _on_text() -> None:
    url_state.set_str("q", st.session_state.get("search_q", "")[:SEARCH_MAX_CHARS])
    url_state.remove(*panel.RESET_ON_CHANGE)


def _on_sort() -> None:
    url_state.set_str("sort", st.session_state.get("search_sort"), "relevance")
    url_state.remove(*panel.RESET_ON_CHANGE)


def _on_view() -> None:
    url_state.set_str("view", st.session_state.get("search_view") or "table", "table")


def _on_per_page(old_per_page: int, old_page: int) -> None:
    per_page = st.session_state.get("search_per") or PAGE_SIZES[0]
    url_state.set_int("per", per_page, PAGE_SIZES[0])
    _go_to_page(old_page * old_per_page // per_page)  # the first listing shown stays on the page


def _clear_everything() -> None:
    panel.clear_filters()
    url_state.remove("q")


def _clear_text() -> None:
    url_state.remove("q", *panel.RESET_ON_CHANGE)


# -- reading from the service ------------------------------------------------------------------------------------


def _search(text: str, **arguments: Any) -> Page[Listing]:
    page: Page[Listing] = api.call("search_listings", search=text or None, **arguments)
    return page


def _count(text: str, expression: Expr | None) -> int:
    return _search(text, per_page=0, filter=expression).total


def _server_slice(text: str, expression: Expr | None, offset: int, count: int, attrs: Sequence[str]) -> list[Listing]:
    """Matches at ranks ``[offset, offset + count)`` of the service's own order, with only ``attrs``."""
    if count <= 0:
        return []
    per_page = min(WINDOW, count)
    found: list[Listing] = []
    for number in range(offset // per_page, (offset + count - 1) // per_page + 1):
        page = _search(text, page=number, per_page=per_page, filter=expression, retrieve_attributes=list(attrs))
        start = number * per_page
        found += [lst for i, lst in enumerate(page.results, start) if offset <= i < offset + count]
        if len(page.results) < per_page:
            break
    return found


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def _numeric_page(
    text: str, base: Expr | None, attr: str, descending: bool, first: int, last: int, bounds: dict[str, Any]
) -> list[str]:
    """Ids at ranks ``[first, last)`` of the matches ordered by ``attr`` (ties and the rest in relevance order).

    A value counts when it is above zero (a price of 0 means "contact for pricing"); the others come last.
    """
    keyed = filters.compare(attr, ">", 0)
    with_key = filters.and_(base, keyed)
    keyed_total = _count(text, with_key)
    ids: list[str] = []
    if first < keyed_total:
        ids += _keyed_slice(text, with_key, attr, descending, first, min(last, keyed_total), keyed_total, bounds)
    if last > keyed_total:
        start = max(first, keyed_total)
        without_key = filters.and_(base, filters.not_(keyed))
        rest = _server_slice(text, without_key, start - keyed_total, last - start, ["listingId"])
        ids += [lst.id for lst in rest if lst.id]
    return ids


def _keyed_slice(
    text: str,
    with_key: Expr | None,
    attr: str,
    descending: bool,
    first: int,
    last: int,
    keyed_total: int,
    bounds: dict[str, Any],
) -> list[str]:
    # Positions u along the order: u = value ascending, u = -value descending. prefix(u) holds the first C(u).
    def prefix(u: float) -> Expr:
        return filters.compare(attr, ">=", _number(-u)) if descending else filters.compare(attr, "<=", _number(u))

    counted: dict[float, int] = {}

    def at_or_before(u: float) -> int:
        if u not in counted:
            counted[u] = _count(text, filters.and_(with_key, prefix(u)))
        return counted[u]

    # The ends of the line: nothing is before the first, everything keyed is before the last. The data's bounds
    # give them; bounds older than the data are checked and, if wrong, the whole line is searched.
    high_value = bounds.get(attr, (0.0, FAR))[1]
    if descending:
        low_u, high_u = float(-math.floor(high_value) - 1), 0.0
        counted[high_u] = keyed_total
        if at_or_before(low_u) != 0:
            low_u = -FAR
            counted[low_u] = 0
    else:
        low_u, high_u = 0.0, float(math.ceil(high_value))
        counted[low_u] = 0
        if at_or_before(high_u) < keyed_total:
            high_u = FAR
            counted[high_u] = keyed_total
    # The last position with at most `first` before it, and the first with at least `last`: bisection on counts.
    left, right = low_u, high_u
    while at_or_before(right) - at_or_before(left) > WINDOW // 2 and right - left > 1:
        middle = math.floor((left + right) / 2)
        if at_or_before(middle) <= first:
            left = middle
        else:
            right = middle
    lower = left
    left = max((u for u, c in counted.items() if c < last), default=lower)
    right = min((u for u, c in counted.items() if c >= last), default=high_u)
    while at_or_before(right) - at_or_before(left) > WINDOW // 2 and right - left > 1:
        middle = math.floor((left + right) / 2)
        if at_or_before(middle) >= last:
            right = middle
        else:
            left = middle
    upper = right
    before = at_or_before(lower)
    window = filters.and_(with_key, filters.not_(prefix(lower)), prefix(upper))
    rows = _server_slice(text, window, 0, at_or_before(upper) - before, ["listingId", attr])
    rows.sort(key=lambda lst: getattr(lst, attr) or 0, reverse=descending)  # stable: ties keep relevance order
    return [lst.id for lst in rows[first - before : last - before] if lst.id]


def _updated(listing: Listing) -> float:
    return listing.updatedAt.timestamp() if isinstance(listing.updatedAt, datetime) else float("-inf")


def ids(rows: Sequence[Listing]) -> list[str]:
    return [lst.id for lst in rows if lst.id]


def _newest_page(text: str, base: Expr | None, total: int, first: int, last: int) -> tuple[list[str], bool]:
    """Ids at ranks ``[first, last)`` by last update, newest first; and whether only the best matches were ordered."""
    if text:
        limit = min(total, NEWEST_LIMIT)
        ordered: list[str] = []
        if first < limit:
            rows = _server_slice(text, base, 0, limit, ["listingId", "updatedAt"])
            rows.sort(key=_updated, reverse=True)
            ordered = ids(rows[first : min(last, limit)])
        if last > limit:  # past the best NEWEST_LIMIT matches: the rest in relevance order
            start = max(first, limit)
            ordered += ids(_server_slice(text, base, start, last - start, ["listingId"]))
        return ordered, total > limit
    featured = filters.and_(base, filters.eq("isFeatured", True))
    others = filters.and_(base, filters.not_(filters.eq("isFeatured", True)))
    featured_total = _count(text, featured)
    if featured_total in (0, total):
        return ids(_server_slice(text, base, first, last - first, ["listingId"])), False
    # Both streams come newest first: find how many featured ones are among the newest `first` (a binary search
    # reading single entries), then merge the two runs that follow.
    others_total = total - featured_total

    def when(stream: Expr | None, rank: int) -> float:
        return _updated(_server_slice(text, stream, rank, 1, ["listingId", "updatedAt"])[0])

    low, high = max(0, first - others_total), min(first, featured_total)
    while low < high:
        taken = (low + high + 1) // 2  # featured among the first `first`
        if first - taken < others_total and when(featured, taken - 1) < when(others, first - taken):
            high = taken - 1
        else:
            low = taken
    taken, size, attrs = low, last - first, ["listingId", "updatedAt"]
    rows = _server_slice(text, featured, taken, min(size, featured_total - taken), attrs)
    rows += _server_slice(text, others, first - taken, min(size, others_total - first + taken), attrs)
    rows.sort(key=_updated, reverse=True)
    return ids(rows[:size]), False


def list_fields() -> list[str]:
    """The attributes the table and the cards show, as far as the sidebar's version has them."""
    version, _ = api.scope()
    return [name for name in LIST_FIELDS if version != "v1-lite" or name not in NOT_IN_LITE]


def _listings_by_ids(text: str, ids: Sequence[str]) -> list[Listing]:
    """These listings, in this order; with search words, with their highlights."""
    if not ids:
        return []
    found: dict[str, Listing] = {}
    if text:
        page = _search(
            text,
            per_page=len(ids),
            filter=filters.any_of("listingId", list(ids)),
            highlight=True,
            retrieve_attributes=list_fields(),
        )
        found = {lst.id: lst for lst in page.results if lst.id}
    missing = [i for i in ids if i not in found]
    if missing:
        for listing in api.call("multiple_listings", ids=missing, retrieve_attributes=list_fields()):
            if listing.id:
                found[listing.id] = listing
    return [found[i] for i in ids if i in found]


@dataclass
class Results:
    total: int
    listings: list[Listing]
    facets: dict[str, dict[str, int]]
    service_ms: float | None
    ordering_ms: float | None
    page: int
    limited: bool = False


def fetch(view: View, selection: panel.Selection, bounds: dict[str, Any]) -> Results:
    text, base = view.text, selection.expression()
    highlight = True if text else None
    if view.sort == "relevance":
        result = _search(
            text, page=view.page, per_page=view.per_page, facets=panel.FACET_ATTRS, filter=base,
            highlight=highlight, retrieve_attributes=list_fields(),
        )  # fmt: skip
        last_page = max(math.ceil(result.total / view.per_page) - 1, 0)
        page = min(view.page, last_page)
        if page != view.page:
            result = _search(
                text, page=page, per_page=view.per_page, facets=panel.FACET_ATTRS, filter=base,
                highlight=highlight, retrieve_attributes=list_fields(),
            )  # fmt: skip
        meta = result.response_meta
        return Results(result.total, result.results, result.facets or {}, meta.elapsed_ms if meta else None, None, page)
    summary = _search(text, per_page=0, facets=panel.FACET_ATTRS, filter=base)
    meta = summary.response_meta
    page = min(view.page, max(math.ceil(summary.total / view.per_page) - 1, 0))
    first, last = page * view.per_page, min((page + 1) * view.per_page, summary.total)
    started = time.perf_counter()
    limited = False
    if last <= first:
        ids: list[str] = []
    elif view.sort == "newest":
        ids, limited = _newest_page(text, base, summary.total, first, last)
    else:
        attr, descending = NUMERIC_SORTS[view.sort]
        ids = _numeric_page(text, base, attr, descending, first, last, bounds)
    listings = _listings_by_ids(text, ids)
    ordering_ms = (time.perf_counter() - started) * 1000
    return Results(
        summary.total, listings, summary.facets or {}, meta.elapsed_ms if meta else None, ordering_ms, page, limited
    )


def facet_counts(view: View, selection: panel.Selection, results: Results) -> dict[str, dict[str, int]]:
    """Counts per facet value: with every filter for facets not in use; for a facet in use, with the others only
    (what each of its values would give if added), so that more values of it can still be chosen."""
    counts = dict(results.facets)
    for param in selection.facets:
        attr = panel.FACET_BY_PARAM[param].attr
        others = _search(view.text, per_page=0, facets=[attr], filter=selection.expression(without=param))
        counts[attr] = (others.facets or {}).get(attr, {})
    return counts


# -- what the page says -----------------------------------------------------------------------------------------


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def nothing_found(view: View, selection: panel.Selection) -> str:
    """Why there are no results, and what to do about it."""
    _, province = api.scope()
    said = "No listings match"
    if view.text:
        said += f" '{markdown_text(view.text)}'"
    if selection.count:
        said += f" with {'this filter' if selection.count == 1 else f'these {selection.count} filters'}"
    if province in PROVINCES:
        said += f" in {PROVINCES[province]}"
    remedies = []
    if selection.count:
        remedies.append("remove a filter (or clear them all)")
    if view.text:
        remedies.append("check the spelling or try fewer words")
    if province in PROVINCES:
        remedies.append("choose another province in the sidebar")
    if not remedies:
        return "There are no listings in this catalogue yet."
    remedy = remedies[0] if len(remedies) == 1 else "; ".join(remedies[:-1]) + "; or " + remedies[-1]
    return f"{said} — {remedy}."


def order_caption(view: View, results: Results) -> str:
    if view.sort == "relevance":
        if view.text:
            return "Best matches first."
        return "No search words: featured listings first, then the most recently updated."
    if view.sort == "newest":
        if results.limited:
            return (
                f"Most recently updated first, among the {NEWEST_LIMIT:,} best matches of {results.total:,} "
                "(add words or filters to order them all)."
            )
        return "Most recently updated first, over every match."
    what = "starting price" if view.sort.startswith("price") else "completion year"
    direction = "highest first" if view.sort == "price_desc" else "lowest first"
    if view.sort == "completion":
        direction = "soonest first"
    return (
        f"By {what}, {direction}, over every match (ordered by the dashboard: the API sorts by relevance only); "
        f"ties in relevance order, listings without a {what} last."
    )


# -- the CSV download ---------------------------------------------------------------------------------------------


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(SPREADSHEET_FORMULA_STARTS):
        return "'" + value  # a spreadsheet must not read a listing's text as a formula
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _sort_all(listings: list[Listing], view: View) -> list[Listing]:
    """Every match in the page's order (the service's order is kept for relevance, and for ties)."""
    if view.sort == "newest":
        return sorted(listings, key=_updated, reverse=True)
    if view.sort in NUMERIC_SORTS:
        attr, descending = NUMERIC_SORTS[view.sort]
        keyed = [lst for lst in listings if (getattr(lst, attr) or 0) > 0]
        rest = [lst for lst in listings if (getattr(lst, attr) or 0) <= 0]
        return sorted(keyed, key=lambda lst: getattr(lst, attr), reverse=descending) + rest
    return listings


def csv_bytes(listings: Sequence[Listing], names: dict[str, str]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([name for name, _ in CSV_COLUMNS])
    for listing in listings:
        writer.writerow([_cell(read(listing, names)) for _, read in CSV_COLUMNS])
    return ("\ufeff" + out.getvalue()).encode("utf-8")  # the BOM makes Excel read the accents right


def csv_download(view: View, base: Expr | None, total: int) -> None:
    version, province = api.scope()
    signature = (version, province, view.text, filters.to_query(base), view.sort)
    prepared = st.session_state.get("search_csv")
    if prepared and prepared[0] != signature:
        prepared = None
    label = f"Prepare CSV of all {_plural(total, 'result')}"
    if prepared is None and st.button(label, key="search_prepare_csv", icon=":material/table:"):
        bar = st.progress(0.0, text="Reading the listings…")

        def progress(done: int, of: int) -> None:
            bar.progress(min(done / of, 1.0) if of else 1.0, text=f"Read {done:,} of {of:,} listings…")

        with api.guarded():
            client = api.connection().client
            listings = list(
                client.iter_listings(
                    view.text or None,
                    per_page=WINDOW,
                    progress=progress,
                    filter=base,
                    retrieve_attributes=CSV_FIELDS,
                    version=version,
                    province=province,
                )
            )
            names = panel.profile_names(b for lst in listings for b in lst.builders if isinstance(b, str))
        bar.empty()
        prepared = (signature, csv_bytes(_sort_all(listings, view), names), len(listings))
        st.session_state["search_csv"] = prepared
    if prepared is not None:
        st.download_button(
            f"Download CSV ({_plural(prepared[2], 'listing')})",
            data=prepared[1],
            file_name="precon-search.csv",
            mime="text/csv",
            key="search_download_csv",
            icon=":material/download:",
            on_click="ignore",
            type="primary",
        )


# -- the page ------------------------------------------------------------------------------------------------------


def controls(view: View) -> None:
    sort_column, view_column, size_column = st.columns([2, 1.2, 1], vertical_alignment="bottom")
    sorts, views = list(SORTS), list(VIEWS)
    panel.show_in_widget("search_sort", view.sort)
    sort_column.selectbox(
        "Sort by", sorts, index=sorts.index(view.sort), format_func=SORTS.get, key="search_sort", on_change=_on_sort
    )
    panel.show_in_widget("search_view", view.view)
    view_column.segmented_control(
        "Show as", views, default=view.view, format_func=VIEWS.get, key="search_view", on_change=_on_view, required=True
    )
    panel.show_in_widget("search_per", view.per_page)
    size_column.selectbox(
        "Per page",
        PAGE_SIZES,
        index=PAGE_SIZES.index(view.per_page),
        key="search_per",
        on_change=_on_per_page,
        args=(view.per_page, view.page),
    )


def pagination(results: Results, view: View) -> None:
    pages = max(math.ceil(results.total / view.per_page), 1)
    previous, where, following = st.columns([1, 2, 1], vertical_alignment="center")
    previous.button(
        "Previous", key="search_prev", icon=":material/chevron_left:", disabled=results.page == 0,
        on_click=_go_to_page, args=(results.page - 1,), width="stretch",
    )  # fmt: skip
    shown_from = results.page * view.per_page + 1
    shown_to = min((results.page + 1) * view.per_page, results.total)
    where.markdown(
        f"<div style='text-align:center'>Page {results.page + 1:,} of {pages:,} · "
        f"listings {shown_from:,}–{shown_to:,} of {results.total:,}</div>",
        unsafe_allow_html=True,
    )
    following.button(
        "Next", key="search_next", icon=":material/chevron_right:", icon_position="right",
        disabled=results.page + 1 >= pages, on_click=_go_to_page, args=(results.page + 1,), width="stretch",
    )  # fmt: skip


def main() -> None:
    st.title("Search listings")
    view = View.from_url()
    selection = panel.Selection.from_url()
    panel.show_in_widget("search_q", view.text)
    st.text_input(
        "Search",
        value=view.text,
        key="search_q",
        on_change=_on_text,
        max_chars=SEARCH_MAX_CHARS,
        placeholder="Words in the name, summary, city, neighbourhood, street or amenities — then press Enter",
        icon=":material/search:",
        label_visibility="collapsed",
    )
    with api.guarded(), st.spinner("Searching…"):
        bounds = panel.numeric_bounds()
        results = fetch(view, selection, bounds)
        counts = facet_counts(view, selection, results)
        builder_paths = [*counts.get("builders", {}), *selection.facets.get("builder", ())]
        builder_paths += [b for lst in results.listings for b in lst.builders if isinstance(b, str)]
        names = panel.profile_names(builder_paths)

    with st.expander("Filters", expanded=True, icon=":material/filter_list:", key="search_filters"):
        panel.render_panel(selection, counts, bounds, names)
    chips = panel.chips_for(selection, names)
    if view.text:
        chips.insert(0, panel.Chip(f"Search: {markdown_text(view.text)}", _clear_text))
    panel.render_chips(chips, clear_all=_clear_everything)
    timing = f" in {results.service_ms:,.0f} ms" if results.service_ms is not None else ""
    if results.ordering_ms is not None:
        timing += f" (ordered in {results.ordering_ms:,.0f} ms)"
    st.markdown(f"**{_plural(results.total, 'result')}**{timing}")
    controls(view)
    if not results.total:
        st.info(nothing_found(view, selection), icon=":material/search_off:")
        return
    st.caption(order_caption(view, results))
    if view.view == "cards":
        result_cards(results.listings, names)
    else:
        # every row of the page at once: the page scrolls, not a box inside it
        listing_table(
            results.listings,
            key="search_table",
            height=TABLE_HEADER_PX + TABLE_ROW_PX * len(results.listings),
            extra_config=TABLE_CONFIG,
        )
    pagination(results, view)
    csv_download(view, selection.expression(), results.total)


main()
