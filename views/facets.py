"""Facets: listings counted by any facetable attribute, two attributes cross-tabulated, the spread of start prices
and the median price per square foot by city, all under the dashboard's shared filters.

The filters are the Search page's (:mod:`components.shared_filters`: words, facets, ranges and the floor-plan
filters, in the address as ``q``, ``type``, ``selling``, ``construction``, ``city``, ``beds``, ``price``…); they are
shown as removable chips, and type, selling status, construction status and city can be picked here too. Where the
deployment cannot filter floor plans, the page counts over every matching listing itself.

The page's own choices are widgets bound to URL parameters (``bind="query-params"``, the parameter named by the
widget's key), so a copied link reopens the same view. A parameter at its default is left out of the URL; a value no
longer offered is dropped; a list repeats the parameter. Attributes are named in the URL as the page labels them:

    facet         the facets counted: ?facet=Selling+status&facet=Builders
    top           values shown per facet
    rows, cols    the cross-tab's row and column attributes: ?rows=City+or+district&cols=Selling+status
    bins          bins of the start-price histogram
    min_listings  the fewest listings a city needs to be in the price per square foot chart
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import altair as alt
import pandas as pd
import streamlit as st

from components import api, charts, filter_chips, search_scope, shared_filters
from components.formatting import cad
from components.search_scope import SearchScope
from components.sidebar import PROVINCE_LABELS
from precon import filters
from precon.client.errors import PreconError
from precon.client.models import REFERENCE_FIELDS, Listing
from precon.dashboard import listing_search
from precon.dashboard.filter_state import FACET_BY_PARAM, LITE_VERSION, FilterState
from precon.schema import LITE_LEFT_OUT

FACETS: dict[str, str] = {
    "type": "Type",
    "sellingStatus": "Selling status",
    "constructionStatus": "Construction status",
    "cityOrDistrict": "City or district",
    "neighbourhood": "Neighbourhood",
    "municipalities": "Municipality",
    "region": "Region",
    "state": "Province",
    "amenities": "Amenities",
    "exposures": "Exposures",
    "builders": "Builders",
    "architects": "Architects",
    "interiorDesigners": "Interior designers",
    "marketingCompanies": "Marketing companies",
    "salesCompanies": "Sales companies",
    "salesCentres": "Sales centres",
    "owners": "Owners",
    "completionYear": "Completion year",
    "estimatedCompletionYear": "Estimated completion year",
    "firstOccupancyYear": "First occupancy year",
    "constructionStartedYear": "Construction start year",
    "salesStartedYear": "Sales start year",
    "isFeatured": "Featured",
    "contactForPricing": "Contact for pricing",
    "hasParking": "Has parking",
    "hasLocker": "Has locker",
    "mode": "Mode",
    "country": "Country",
}
YES_NO = {"true": "Yes", "false": "No"}
BOOLEAN_FACETS = frozenset({"isFeatured", "contactForPricing", "hasParking", "hasLocker"})
DEFAULT_FACETS = ["sellingStatus", "type", "cityOrDistrict", "builders"]
PICKED = ("type", "selling", "construction")
"""Shared filters offered here as pills (few values each)."""
LISTED = ("city",)
"""Shared filters offered here as a list to pick from (many values)."""
FILTERS: dict[str, str] = {param: FACET_BY_PARAM[param].attr for param in (*PICKED, *LISTED)}
MAX_FACET_VALUES = 100  # the API counts at most this many values per facet
CROSS_TAB_ROWS = 15
CROSS_TAB_COLUMNS = 20
MAX_CITIES = 40


def label_of(facet: str) -> str:
    return FACETS.get(facet, facet)


def value_labels(facet: str) -> dict[str, str]:
    """What to show for a facet's values: names for reference paths, Yes/No for booleans; else the value."""
    if facet in BOOLEAN_FACETS:
        return YES_NO
    collection = REFERENCE_FIELDS.get(facet)
    if collection is None:
        return {}
    try:
        return filter_chips.collection_names(collection)
    except PreconError as error:
        st.caption(f"{label_of(facet)} are shown by their ids: their names could not be fetched ({error.message}).")
        return {}


def values_note(counts: Mapping[str, int], shown: int) -> str:
    more = "+" if len(counts) >= MAX_FACET_VALUES else ""
    if shown < len(counts):
        return f"top {shown} of {len(counts)}{more} values"
    return f"{len(counts)}{more} value{'s' if len(counts) != 1 else ''}"


def missing_facet(facet: str, version: str) -> str:
    lite = " The v1-lite version leaves this attribute out: choose v1 in the sidebar." if version == "v1-lite" else ""
    return f"No listing in view has a value for {label_of(facet).lower()}.{lite}"


def facet_chart(facet: str, counts: Mapping[str, int], top: int, version: str) -> None:
    if not counts:
        st.markdown(f"**{label_of(facet)}**")
        st.info(missing_facet(facet, version), icon="ℹ️")
        return
    frame = charts.counts_frame(counts, value_labels(facet), top)
    charts.show(
        charts.ranked_bars(frame, title=label_of(facet), subtitle=f"Listings per value · {values_note(counts, top)}"),
        key=f"facet_chart_{facet}",
    )


def cross_tab(row: str, column: str, counted: Counts, version: str) -> None:
    """Listings per (row value, column value): one facet count of the column attribute per top row value."""
    with api.guarded():
        row_counts = counted.facets([row]).get(row, {})
        if not row_counts:
            st.info(missing_facet(row, version), icon="ℹ️")
            return
        rows = charts.counts_frame(row_counts, value_labels(row), CROSS_TAB_ROWS)
        column_labels = value_labels(column)
        cells = {value: counted.facets([column], (row, value)).get(column, {}) for value in rows["value"]}
    totals: dict[str, int] = {}
    for counts in cells.values():
        for value, count in counts.items():
            totals[value] = totals.get(value, 0) + count
    if not totals:
        st.info(missing_facet(column, version), icon="ℹ️")
        return
    columns = charts.counts_frame(totals, column_labels, CROSS_TAB_COLUMNS)
    row_label = dict(zip(rows["value"], rows["label"], strict=True))
    column_label = dict(zip(columns["value"], columns["label"], strict=True))
    long = pd.DataFrame(
        [
            {
                "row_value": row_value,
                "row_label": row_label[row_value],
                "column_value": column_value,
                "column_label": column_label[column_value],
                "count": int(cells[row_value].get(column_value, 0)),
            }
            for row_value in rows["value"]
            for column_value in columns["value"]
        ]
    )
    subtitle = (
        f"{label_of(row)}: {values_note(row_counts, len(rows))} · "
        f"{label_of(column)}: {values_note(totals, len(columns))}"
    )
    charts.show(
        charts.heatmap(
            long,
            title=f"{label_of(column)} by {label_of(row).lower()}",
            subtitle=subtitle,
            row_title=label_of(row),
            column_title=label_of(column),
            row_order=list(rows["label"]),
            column_order=list(columns["label"]),
        ),
        key="cross_tab_chart",
    )
    table = long.pivot(index="row_label", columns="column_label", values="count")
    table = table.reindex(index=list(rows["label"]), columns=list(columns["label"]))
    table.insert(0, "All listings", [int(row_counts[value]) for value in rows["value"]])
    table.index.name = label_of(row)
    st.dataframe(table, key="cross_tab_table", height=35 * (len(table) + 1) + 3, placeholder="—")
    st.caption(
        f"Each row counts the listings with that {label_of(row).lower()}; *All listings* is all of them, whatever "
        f"their {label_of(column).lower()}. A listing with several values is counted under each."
    )


class Counts:
    """Counts of the listings under the shared filters: asked of the service; or, where it cannot filter floor
    plans (``scope.local``), counted here over every matching listing, read once with what the page counts."""

    def __init__(self, scope: SearchScope) -> None:
        self.scope = scope
        self.matches: list[Listing] | None = None
        if scope.local:
            wanted = sorted({*FACETS, *charts.PRICE_ATTRIBUTES})
            self.matches, _ = listing_search.all_matching(
                api.backend, scope.text, scope.filter, scope.unit_filter, wanted, unit_supported=False
            )

    def _unit(self) -> dict[str, filters.Expr]:
        return {"unit_filter": self.scope.unit_filter} if self.scope.unit_filter is not None else {}

    def total(self) -> int:
        if self.matches is not None:
            return len(self.matches)
        return api.call(
            "search_listings", per_page=0, search=self.scope.text or None, filter=self.scope.filter, **self._unit()
        ).total

    def facets(self, names: Sequence[str], where: tuple[str, str] | None = None) -> dict[str, dict[str, int]]:
        """Counts of each facet's values; ``where`` = (attribute, value) counts only the listings having it."""
        if self.matches is not None:
            listings = self.matches
            if where is not None:
                attribute, value = where
                listings = [x for x in listings if value in listing_search.count_facets([x], [attribute])[attribute]]
            return listing_search.count_facets(listings, names)
        narrowed = filters.and_(filters.eq(*where), self.scope.filter) if where is not None else self.scope.filter
        return api.call(
            "facet_counts", facets=list(names), filter=narrowed, search=self.scope.text or None, **self._unit()
        )

    def prices(self) -> pd.DataFrame:
        """Every listing in view with the price charts' attributes."""
        if self.matches is not None:
            return charts.listings_frame(self.matches, charts.PRICE_ATTRIBUTES)
        return charts.listing_values(
            charts.PRICE_ATTRIBUTES, filter=self.scope.filter, search=self.scope.text or None, what="prices",
            **self._unit(),
        )  # fmt: skip


def _on_pick(param: str, key: str) -> None:
    """A pill or list of this page changed: the shared filters take its values (kept in their order)."""
    picked = [str(v) for v in st.session_state.get(key) or []]
    state = shared_filters.remembered()
    kept = [v for v in state.facets.get(param, ()) if v in picked]
    updated = state.without(param)
    for value in [*kept, *(v for v in picked if v not in kept)]:
        updated = updated.with_value(param, value)
    shared_filters.write(updated)


def pick_key(param: str) -> str:
    return f"facets_pick_{param}"


def filter_pickers(state: FilterState, offered: Mapping[str, Mapping[str, int]]) -> None:
    """Type, selling status and construction status as pills, city as a list: plain values (no counts), each
    showing the shared filters' values and writing them back when changed."""
    params = (*PICKED, *LISTED)
    for place, param in zip(st.columns([2, 1, 1, 2]), params, strict=True):
        spec = FACET_BY_PARAM[param]
        chosen = list(state.facets.get(param, ()))
        options = sorted({*offered.get(spec.attr, {}), *chosen}, key=str.casefold)
        key = pick_key(param)
        if st.session_state.get(key) != chosen:
            st.session_state[key] = chosen
        if param in PICKED:
            place.pills(
                label_of(spec.attr), options, selection_mode="multi", key=key, on_change=_on_pick, args=(param, key)
            )
        else:
            place.multiselect(
                label_of(spec.attr),
                options,
                key=key,
                on_change=_on_pick,
                args=(param, key),
                placeholder="Any",
                select_all=False,  # Enter picks the value typed, never every match
            )


def start_prices(data: pd.DataFrame, matched: int) -> None:
    prices = pd.to_numeric(data["startPrice"], errors="coerce")
    prices = prices[prices > 0]
    bins = st.slider("Bins", 5, 80, 30, key="bins", bind="query-params", help="About this many bins of a round width.")
    if prices.empty:
        none = (
            "The listing in view has no start price: it is contact-for-pricing."
            if matched == 1
            else f"None of the {matched:,} listings in view has a start price: they are all contact-for-pricing."
        )
        st.info(none, icon="ℹ️")
        return
    median = float(prices.median())
    figures = st.columns(4)
    figures[0].metric("Median start price", cad(median))
    figures[1].metric("Lower quartile", cad(float(prices.quantile(0.25))))
    figures[2].metric("Upper quartile", cad(float(prices.quantile(0.75))))
    figures[3].metric("Listings with a price", f"{len(prices):,} of {len(data):,}")
    frame = charts.histogram_frame(prices, bins)
    width = float(frame["end"].iloc[0] - frame["start"].iloc[0])
    charts.show(
        charts.price_histogram(
            frame,
            title="Distribution of start prices",
            subtitle=f"{charts.listings(len(prices))} in bins of ${width:,.0f} · dashed line: median, {cad(median)}",
            median=median,
        ),
        key="price_histogram",
    )
    if len(prices) < len(data):
        left_out = len(data) - len(prices)
        verb = "is" if left_out == 1 else "are"
        st.caption(f"{charts.listings(left_out)} without a start price (contact for pricing) {verb} left out.")


def price_per_square_foot(data: pd.DataFrame) -> None:
    least = st.slider("Cities with at least this many listings", 1, 50, 5, key="min_listings", bind="query-params")
    priced = data.assign(price=pd.to_numeric(data["averagePricePerSqFeet"], errors="coerce"))
    priced = priced[(priced["price"] > 0) & priced["cityOrDistrict"].notna()]
    by_city = priced.groupby("cityOrDistrict")["price"].agg(["median", "size"]).reset_index()
    by_city = by_city[by_city["size"] >= least]
    if by_city.empty:
        st.info(
            f"No city has {least} or more listings with a price per square foot in view: lower the minimum, or widen "
            "the filters.",
            icon="ℹ️",
        )
        return
    by_city = by_city.sort_values(["median", "cityOrDistrict"], ascending=[False, True])
    shown = by_city.head(MAX_CITIES).reset_index(drop=True)
    frame = pd.DataFrame(
        {
            "value": shown["cityOrDistrict"],
            "label": shown["cityOrDistrict"],
            "median": shown["median"].astype(float),
            "listings": shown["size"].astype(int),
        }
    )
    cities = f"{len(by_city)} cities"
    if len(by_city) > MAX_CITIES:
        cities = f"the {MAX_CITIES} highest of {cities}"
    charts.show(
        charts.ranked_bars(
            frame,
            title="Median price per square foot by city",
            subtitle=f"{cities} with at least {least} listing{'s' if least != 1 else ''} priced per square foot",
            value="median",
            value_title="Median $ / sq ft",
            value_format="$,.0f",
            axis_format="$,.0f",
            tooltip=[alt.Tooltip("listings:Q", title="Listings", format=",d")],
        ),
        key="price_per_sqft_chart",
    )
    st.caption("Listings without a price per square foot (contact for pricing) are left out.")


def counts_per_facet(counted: Counts) -> None:
    st.subheader("Counts per facet")
    left, right = st.columns([3, 1])
    facets = left.multiselect(
        "Facets",
        offered_facets,
        default=DEFAULT_FACETS,
        format_func=label_of,
        key="facet",
        bind="query-params",
        select_all=False,
    )
    top = right.slider("Values per facet", 3, MAX_FACET_VALUES, 15, key="top", bind="query-params")
    if not facets:
        st.info("Choose one or more facets to count the listings by.", icon="ℹ️")
        return
    with api.guarded():
        facet_counts = counted.facets(facets)
        for start in range(0, len(facets), 2):
            for place, facet in zip(st.columns(2, gap="large"), facets[start : start + 2], strict=False):
                with place:
                    facet_chart(facet, facet_counts.get(facet, {}), top, version)


def cross_tab_chosen(counted: Counts) -> None:
    st.subheader("Cross-tab")
    left, right = st.columns(2)
    names = offered_facets
    row_facet = left.selectbox(
        "Rows", names, index=names.index("cityOrDistrict"), format_func=label_of, key="rows", bind="query-params"
    )
    column_facet = right.selectbox(
        "Columns", names, index=names.index("sellingStatus"), format_func=label_of, key="cols", bind="query-params"
    )
    if row_facet == column_facet:
        st.info("Choose two different attributes for the rows and the columns.", icon="ℹ️")
    else:
        cross_tab(row_facet, column_facet, counted, version)


@st.fragment
def facets_page() -> None:
    """Everything under the title: a pick, a chip or a choice of the page reruns this alone, not the app around it
    (the navigation, the sign-in gate, the sidebar), none of which shows anything of the filters."""
    state, problems = shared_filters.current("facets")
    for problem in problems:
        st.warning(problem, icon="🔗")
    with api.guarded():
        offered = api.call("facet_counts", facets=list(FILTERS.values()))
        scope = search_scope.scope_of(state)
        names_in_state = filter_chips.reference_names(state)
    with st.container(border=True):
        filter_chips.render(state, prefix="facets", links=("search", "map"), names=names_in_state)
        filter_pickers(state, offered)
        if scope.local:
            st.caption(search_scope.local_note())
    with api.guarded():
        counted = Counts(scope)
        matched = counted.total()
    described = filter_chips.describe(state, names_in_state, facet_labels=FACETS)
    if matched == 0:
        if not described:
            st.info(f"No listings in {anywhere} in this version of the API: choose another in the sidebar.", icon="ℹ️")
        else:
            st.info(
                f"No listing in {anywhere} has {described}. Remove a filter, or choose another province in the "
                "sidebar.",
                icon="ℹ️",
            )
        return
    st.caption(
        f"**{matched:,}** {'listing' if matched == 1 else 'listings'} in view"
        + (f": {described}." if described else ".")
    )
    counts_per_facet(counted)
    cross_tab_chosen(counted)
    with api.guarded():
        fetched = counted.prices()
    st.subheader("Start prices")
    start_prices(fetched, matched)
    st.subheader("Price per square foot by city")
    price_per_square_foot(fetched)


version, province = api.scope()
offered_facets = [f for f in FACETS if version != LITE_VERSION or f not in LITE_LEFT_OUT]
"""What this version can count: v1-lite refuses a facet on an attribute it leaves out."""
where = PROVINCE_LABELS.get(province, province)
anywhere = "any province" if province == "all" else where
st.title("Facets")
st.caption(
    f"Listings counted by any attribute, under the filters below (the Search and Map pages' too) · {where}. "
    "Every choice is kept in the address bar: copy it to share this view."
)
facets_page()
