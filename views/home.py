"""Home: the catalogue at a glance, in the version and province chosen in the sidebar.

A search box that opens Search with the words, headline numbers (exact: the number of builders is the directory's
total, the number of cities the facet value search's), listings by province and by selling status, the listings
viewed most in the last days, and the listings updated last.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import api, charts, shared_filters
from components.formatting import MISSING, cad
from components.listing_table import listing_table
from components.sidebar import PROVINCE_LABELS, VERSION_LABELS
from precon import filters
from precon.client.errors import PreconError
from precon.client.models import PROVINCES, Listing
from precon.dashboard.filter_state import FilterState

TABLE_ROWS = 10
TABLE_HEIGHT = 48 * TABLE_ROWS + 40  # every row in view, no scrolling: the table's rows are 48 px
MAX_FACET_VALUES = 100  # the API counts at most this many values per facet: a facet with this many may have more
# The tables' columns, in pixels: every column of a 1280-pixel screen beside the sidebar in view, completion whole.
TABLE_COLUMNS = {
    "name": st.column_config.TextColumn("Name", width=200),
    "city": st.column_config.TextColumn("City", width=105),
    "status": st.column_config.TextColumn("Status", width=95),
    "price_from": st.column_config.TextColumn("Price from", width=90),
    "price_to": st.column_config.TextColumn("Price to", width=90),
    "completion": st.column_config.TextColumn("Completion", width=125),
}


def distinct(counts: dict[str, int]) -> str:
    """How many values a facet has, as far as facet counts tell (they stop at 100 values)."""
    return f"{len(counts)}+" if len(counts) >= MAX_FACET_VALUES else f"{len(counts):,}"


def value_count(facet: str, counts: dict[str, int]) -> str:
    """How many values a facet has, exactly: the facet value search's total (ours); facet counts otherwise."""
    try:
        total = api.call("search_facet_values", facet=facet, max_hits=1).total
    except PreconError:
        total = None
    return distinct(counts) if total is None else f"{total:,}"


def recently_updated(count: int) -> list[Listing]:
    """The ``count`` listings updated last. The search's default order puts featured listings first, then the most
    recently updated, so the newest of both groups are merged by ``updatedAt``."""
    featured = filters.eq("isFeatured", True)
    groups = [api.call("search_listings", per_page=count, filter=f) for f in (featured, filters.not_(featured))]
    unique = {listing.id: listing for group in groups for listing in group.results}
    ordered = sorted(
        unique.values(), key=lambda listing: listing.updatedAt.timestamp() if listing.updatedAt else float("-inf")
    )
    return ordered[::-1][:count]


version, province = api.scope()
where = PROVINCE_LABELS.get(province, province)
st.title("Precon Explorer")
st.caption(f"Canada's pre-construction housing market at a glance · {where} · {VERSION_LABELS.get(version, version)}")

with st.form("home_search_form", border=False):
    box, go = st.columns([6, 1], vertical_alignment="bottom")
    words = box.text_input(
        "Search listings",
        key="home_search",
        placeholder="Words to find: a name, a neighbourhood, a city, an amenity…",
        label_visibility="collapsed",
    )
    searched = go.form_submit_button("Search", icon=":material/search:", type="primary", width="stretch")
if searched and words.strip():
    # A new search with these words: Search reads them from its address (the session keeps them for Map, Facets).
    wanted = FilterState().with_text(words)
    shared_filters.write(wanted)
    st.switch_page("views/search.py", query_params=wanted.to_params())

with api.guarded():
    total = api.call("search_listings", per_page=0).total
    counts = api.call("facet_counts", facets=["state", "sellingStatus", "builders", "cityOrDistrict"])
    builders = api.call("search_profiles", collection="Builders", per_page=0).total
    cities = value_count("cityOrDistrict", counts.get("cityOrDistrict", {}))

if total == 0:
    st.info(
        f"No listings in {'any province' if province == 'all' else where} in this version of the API. "
        "Choose another province or version in the sidebar.",
        icon="ℹ️",
    )
    st.stop()

with api.guarded():
    prices = charts.listing_values(charts.PRICE_ATTRIBUTES, what="start prices")

start_prices = pd.to_numeric(prices["startPrice"], errors="coerce")
start_prices = start_prices[start_prices > 0]
selling = counts.get("sellingStatus", {}).get("Selling Now", 0)

columns = st.columns(5)
columns[0].metric("Listings", f"{total:,}", help=f"Pre-construction listings in {where}.")
columns[1].metric("Selling now", f"{selling:,}", help=f"{selling / total:.0%} of the listings are selling now.")
columns[2].metric(
    "Median start price",
    cad(float(start_prices.median())) if len(start_prices) else MISSING,
    help=f"Over the {charts.listings(len(start_prices))} with a start price; "
    f"{len(prices) - len(start_prices):,} have none (contact for pricing).",
)
builders_help = "Builders in the directory." if province == "all" else f"Builders with a listing in {where}."
columns[3].metric("Builders", f"{builders:,}", help=builders_help)
columns[4].metric("Cities", cities, help="Cities and districts with listings.")

left, right = st.columns([3, 2], gap="large")
with left:
    by_province = dict(counts.get("state", {}))
    if province == "all":
        for name in PROVINCES.values():
            by_province.setdefault(name, 0)
    charts.show(
        charts.ranked_bars(
            charts.counts_frame(by_province), title="Listings by province", subtitle=charts.listings(total)
        ),
        key="home_provinces",
    )
    if province == "all":
        st.caption("All ten provinces. Choose one in the sidebar to look at it alone.")
    else:
        st.caption(f"Only {where} is in view. Choose *All provinces* in the sidebar to compare the ten.")
with right:
    statuses = charts.counts_frame(counts.get("sellingStatus", {}))
    if statuses.empty:
        st.info("No listing here has a selling status.", icon="ℹ️")
    else:
        charts.show(
            charts.donut(
                statuses,
                title="Listings by selling status",
                subtitle=charts.listings(int(statuses["count"].sum())),
                colours=charts.STATUS_COLOURS,
            ),
            key="home_statuses",
        )

st.subheader("Trending")
st.caption("The listings viewed most in the last days: a view counts half as much each day after it.")
with api.guarded():
    trending = api.call("trending_listings", per_page=TABLE_ROWS).results
if trending:
    listing_table(
        trending, opened_from="views/home.py", key="home_trending", height=TABLE_HEIGHT, extra_config=TABLE_COLUMNS
    )
else:
    st.info("No listings to rank here yet.", icon="ℹ️")

st.subheader("Recently updated")
st.caption("The listings whose details changed last.")
with api.guarded():
    recent = recently_updated(TABLE_ROWS)
listing_table(
    recent,
    opened_from="views/home.py",
    key="home_recent",
    extra={"updated": [listing.updatedAt.date() if listing.updatedAt else None for listing in recent]},
    extra_config={
        **TABLE_COLUMNS,
        "updated": st.column_config.DateColumn("Updated", format="MMM D, YYYY", pinned=True, width=100),
    },
    height=TABLE_HEIGHT,
)

st.page_link("views/facets.py", label="Count listings by any attribute, cross-tabulate them, and see prices", icon="📊")
