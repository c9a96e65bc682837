"""The Map page's parts: its state (kept in the URL), the centre (a click, a city or ``lat,lng``), the listing
card and the table of listings inside the circle. The layers are :mod:`components.map_layers`'s, the data
:mod:`components.map_data`'s.

The filters are the dashboard's shared ones (:mod:`components.shared_filters`: ``q``, ``type``, ``selling``, ``city``,
``beds``, ``price``… as the Search page writes them); this module keeps only the map's own view. That lives in
``st.session_state`` under ``map_*`` keys and is written to the URL after every run (``center``, ``radius``, ``near``,
``basemap``), so a copied link reopens the same view. A URL changed from outside (a link, an edit) is applied on the
next run; an empty URL (coming back from another page) keeps what the session had.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, TypeVar

import streamlit as st

from components import api, listing_marks, shared_filters
from components.formatting import cad, markdown_text
from components.images import draw_image
from components.listing_table import COLUMNS, listing_frame
from components.maps import (
    OTHER_COLOUR,
    STATUS_COLOURS,
)
from components.search_scope import SearchScope
from precon import filters
from precon.client.models import Listing
from precon.dashboard import listing_search

# -- limits and what is asked of the API -----------------------------------------------------------------------

RADIUS_MIN_KM = 0.5
RADIUS_MAX_KM = 100.0
RADIUS_STEP_KM = 0.5
DEFAULT_RADIUS_KM = 10.0
RADIUS_PRESETS_KM = (1.0, 3.0, 5.0, 10.0, 25.0)
"""The radii offered; a link's other radius (between the limits above) is offered beside them."""
PAGE_SIZE = 1000
"""The API's largest page: the map's listings are fetched a thousand at a time."""
NEIGHBOURHOOD_KM = 1.0
"""A centre this close to a neighbourhood's centre is named after it."""
NEARBY_LIMIT = 250
"""The table shows at most this many listings in the circle (the nearest, when there is no search)."""
FALLBACK_CENTRE = (43.6532, -79.3832)
"""Where the map opens when the catalogue names no city at all (downtown Toronto)."""
CENTRE_DECIMALS = 5
"""A centre is kept to 5 decimals (about a metre): what the URL holds is exactly what the page searched."""

CARD_ATTRIBUTES = ("listingId", "name", "cityOrDistrict", "sellingStatus", "startPrice", "_geoloc", "coverPhoto")
"""What the clicked listing's card shows."""
TABLE_ATTRIBUTES = (
    *CARD_ATTRIBUTES,
    "endPrice",
    "averagePricePerSqFeet",
    "minBeds",
    "maxBeds",
    "minBaths",
    "maxBaths",
    "completionDate",
    "completionDateTBD",
    "completionYear",
)
FACETS = ("cityOrDistrict",)
MAP_HEIGHT_PX = 620

HOW_TO = (
    "Every listing matching the filters, coloured by selling status (hover one for its name and price). "
    "**Click the map** to move the centre there, **pick a city** or **type `lat,lng`**, and set the radius: "
    "the listings inside the circle are listed below, nearest first. **Click a listing** on the map for its card."
)

# -- session keys ----------------------------------------------------------------------------------------------
# What the page remembers (kept while the user is on other pages, and written to the URL):
CENTRE = "map_centre"  # (lat, lng), or None until resolved from the city or the default
CITY = "map_city"  # the city the centre was taken from, or None
RADIUS = "map_radius"
BASEMAP = "map_basemap"
CENTRE_ERROR = "map_centre_error"  # what was wrong with a typed or linked centre
URL_ERROR = "map_url_error"  # what was wrong with the link's other values
SELECTED = "map_selected"  # the listing whose card is shown
SNAPSHOT = "map_url"  # the URL parameters the page last wrote
# The widgets (Streamlit forgets these while another page is shown; they are set again from the above):
W_CITY = "map_city_choice"
W_CENTRE = "map_centre_text"
W_RADIUS = "map_radius_km"
W_SEARCH = "map_search_text"
"""The search box: it shows the shared filters' words and writes them (it holds no state of the map's)."""
W_BASEMAP = "map_basemap_toggle"

# URL parameter names. The centre's city is ``near``: ``city`` is the shared filters' city-or-district facet.
P_CENTRE, P_RADIUS, P_NEAR, P_BASEMAP = ("center", "radius", "near", "basemap")
URL_PARAMS = (P_CENTRE, P_RADIUS, P_NEAR, P_BASEMAP)

Key = TypeVar("Key")

# -- pure helpers ----------------------------------------------------------------------------------------------


class CentreError(ValueError):
    """A centre that is not ``lat,lng``; the message says what is wrong, for the user."""


def parse_centre(text: str | None) -> tuple[float, float]:
    """``"43.65,-79.38"`` (a comma and/or spaces between) → (43.65, -79.38), rounded to 5 decimals."""
    raw = (text or "").strip().strip("()[]")
    example = "for example `43.65,-79.38`"
    if not raw:
        raise CentreError(f"Type the centre as latitude,longitude ({example}).")
    parts = raw.replace(",", " ").split()
    if len(parts) != 2:
        raise CentreError(f"“{markdown_text(raw)}” is not a centre: type it as latitude,longitude ({example}).")
    try:
        lat, lng = float(parts[0]), float(parts[1])
    except ValueError:
        raise CentreError(
            f"“{markdown_text(raw)}” is not a centre: both parts must be numbers, latitude first ({example})."
        ) from None
    if not (math.isfinite(lat) and math.isfinite(lng)):
        raise CentreError(f"“{markdown_text(raw)}” is not a centre: both parts must be finite numbers ({example}).")
    if not -90 <= lat <= 90:
        raise CentreError(f"Latitude {lat:g} is out of range: it must be between -90 and 90 (latitude comes first).")
    if not -180 <= lng <= 180:
        raise CentreError(f"Longitude {lng:g} is out of range: it must be between -180 and 180.")
    return rounded((lat, lng))


def rounded(centre: Sequence[float]) -> tuple[float, float]:
    return round(float(centre[0]), CENTRE_DECIMALS), round(float(centre[1]), CENTRE_DECIMALS)


def format_centre(centre: Sequence[float], sep: str = ",") -> str:
    """The centre as the URL and the input box write it: ``43.65,-79.38`` (no trailing zeros)."""

    def text(value: float) -> str:
        return f"{value:.{CENTRE_DECIMALS}f}".rstrip("0").rstrip(".")

    return f"{text(centre[0])}{sep}{text(centre[1])}"


def place_of_point(centre: Sequence[float]) -> str:
    return f"{centre[0]:.4f}, {centre[1]:.4f}"


def parse_radius(text: str | None) -> tuple[float, str | None]:
    """The link's radius in km, on the slider's scale (clamped and stepped), and a message if it was not usable."""
    if text is None or not text.strip():
        return DEFAULT_RADIUS_KM, None
    try:
        value = float(text.strip().removesuffix("km").strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        return DEFAULT_RADIUS_KM, (
            f"The link's radius “{markdown_text(text)}” is not a number of kilometres; "
            f"showing {DEFAULT_RADIUS_KM:g} km."
        )
    clamped = min(RADIUS_MAX_KM, max(RADIUS_MIN_KM, round(value / RADIUS_STEP_KM) * RADIUS_STEP_KM))
    if not RADIUS_MIN_KM <= value <= RADIUS_MAX_KM:
        return clamped, (
            f"The radius must be between {RADIUS_MIN_KM:g} and {RADIUS_MAX_KM:g} km; showing {clamped:g} km."
        )
    return clamped, None


def format_km(km: float) -> str:
    return f"{km:g}"


def radius_options(current: float | None) -> list[float]:
    """The presets, and the current radius among them when a link set another."""
    chosen = {float(km) for km in RADIUS_PRESETS_KM}
    if current is not None:
        chosen.add(float(current))
    return sorted(chosen)


def place_near(
    centre: Sequence[float],
    cities: Mapping[str, tuple[float, float]],
    neighbourhoods: Mapping[tuple[str, str], tuple[float, float]] | None = None,
) -> str:
    """A point named by what is nearest (Markdown): ``Liberty Village, Toronto`` within
    :data:`NEIGHBOURHOOD_KM` of a neighbourhood's centre, else ``central Toronto`` or ``a point 3.2 km from
    Toronto`` by the nearest city, else its coordinates."""
    hood = _nearest(centre, neighbourhoods or {})
    if hood is not None and hood[1] <= NEIGHBOURHOOD_KM:
        name, city = hood[0]
        return f"{markdown_text(name)}, {markdown_text(city)}"
    nearest = _nearest(centre, cities)
    if nearest is None:
        return place_of_point(centre)
    city, km = nearest
    if km < 0.5:
        return f"central {markdown_text(city)}"
    return f"a point {km:,.1f} km from {markdown_text(city)}"


def _nearest(centre: Sequence[float], positions: Mapping[Key, tuple[float, float]]) -> tuple[Key, float] | None:
    """The key whose position is nearest the centre, and how far it is (km); None when there is none."""
    best: tuple[Key, float] | None = None
    for key, (lat, lng) in positions.items():
        distance = haversine_km(centre[0], centre[1], lat, lng)
        if best is None or distance < best[1]:
            best = (key, distance)
    return best


def haversine_km(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    """Great-circle distance, on the sphere the service measures on (radius 6,371 km)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lng2 - lng1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371.0 * math.asin(min(1.0, math.sqrt(h)))


def distance_km(listing: Listing, centre: Sequence[float]) -> float | None:
    if listing.geoloc is None:
        return None
    return haversine_km(centre[0], centre[1], listing.geoloc.lat, listing.geoloc.lng)


def by_distance(listings: Sequence[Listing], centre: Sequence[float]) -> tuple[list[Listing], list[float | None]]:
    """The listings nearest first (those without a position last, in the order given), with their distances."""
    measured = [(distance_km(listing, centre), index, listing) for index, listing in enumerate(listings)]
    measured.sort(key=lambda item: (item[0] is None, item[0] or 0.0, item[1]))
    return [item[2] for item in measured], [item[0] for item in measured]


def city_centre(listings: Sequence[Listing]) -> tuple[float, float] | None:
    """The mean position of a city's listings; of those in its largest province, when the name is in several."""
    groups: dict[str, list[tuple[float, float]]] = {}
    for listing in listings:
        if listing.geoloc is not None:
            province = getattr(listing, "state", None) or ""
            groups.setdefault(province, []).append((listing.geoloc.lat, listing.geoloc.lng))
    if not groups:
        return None
    points = max(groups.values(), key=len)
    return rounded((sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points)))


def set_centre(state: MutableMapping[str, Any], centre: tuple[float, float]) -> None:
    """A centre chosen as a point (typed or clicked): no city any more (the City box keeps what it showed, and
    the heading names the nearest city), and the input box shows it."""
    state[CENTRE] = centre
    state[CITY] = None
    state[W_CENTRE] = format_centre(centre, ", ")
    state[CENTRE_ERROR] = None


# -- URL and session state -------------------------------------------------------------------------------------


def read_url() -> dict[str, list[str]]:
    return {name: list(st.query_params.get_all(name)) for name in URL_PARAMS if st.query_params.get_all(name)}


def _first(params: Mapping[str, list[str]], name: str) -> str | None:
    values = params.get(name) or []
    return values[0] if values else None


def apply_url(state: MutableMapping[str, Any], params: Mapping[str, list[str]]) -> None:
    """The view a link names; what it leaves out is the default."""
    radius, radius_error = parse_radius(_first(params, P_RADIUS))
    state[RADIUS] = radius
    state[URL_ERROR] = radius_error
    state[BASEMAP] = (_first(params, P_BASEMAP) or "").lower() in {"1", "true", "yes", "on"}
    state[CITY] = (_first(params, P_NEAR) or "").strip() or None
    state[CENTRE] = None
    state[CENTRE_ERROR] = None
    state[SELECTED] = None
    raw_centre = _first(params, P_CENTRE)
    if raw_centre is not None:
        try:
            state[CENTRE] = parse_centre(raw_centre)
        except CentreError as error:
            state[CENTRE_ERROR] = f"The link's centre is not usable. {error}"
    state[W_CITY] = state[CITY]
    state[W_CENTRE] = format_centre(state[CENTRE], ", ") if state[CENTRE] else (raw_centre or "")
    state[W_RADIUS] = radius
    state[W_BASEMAP] = state[BASEMAP]


def url_params(state: Mapping[str, Any]) -> dict[str, list[str]]:
    """The URL parameters for the page's state (defaults left out)."""
    params: dict[str, list[str]] = {}
    if state.get(CENTRE):
        params[P_CENTRE] = [format_centre(state[CENTRE])]
    params[P_RADIUS] = [format_km(state.get(RADIUS, DEFAULT_RADIUS_KM))]
    if state.get(CITY):
        params[P_NEAR] = [state[CITY]]
    if state.get(BASEMAP):
        params[P_BASEMAP] = ["1"]
    return params


def sync_from_url() -> None:
    """Brings the session in line with the URL, if the URL changed since the page last wrote it."""
    state = st.session_state
    params = read_url()
    if params and params != state.get(SNAPSHOT):
        apply_url(state, params)
    elif SNAPSHOT not in state:
        apply_url(state, {})
    # The widgets' values are forgotten while other pages are shown: put them back from what the page remembers.
    restore = {
        W_CITY: state.get(CITY),
        W_CENTRE: format_centre(state[CENTRE], ", ") if state.get(CENTRE) else "",
        W_RADIUS: state.get(RADIUS, DEFAULT_RADIUS_KM),
        W_BASEMAP: bool(state.get(BASEMAP, False)),
    }
    for key, value in restore.items():
        if key not in state:
            state[key] = value


def write_url() -> None:
    """Writes the page's state to the URL (only the page's own parameters; the sidebar writes its own)."""
    params = url_params(st.session_state)
    for name in URL_PARAMS:
        if name in params:
            if st.query_params.get_all(name) != params[name]:
                st.query_params[name] = params[name][0]
        elif name in st.query_params:
            del st.query_params[name]
    st.session_state[SNAPSHOT] = params


# -- callbacks -------------------------------------------------------------------------------------------------


def on_search_typed() -> None:
    """The search box's words become the shared filters' words (every other filter kept)."""
    text = st.session_state.get(W_SEARCH) or ""
    shared_filters.write(shared_filters.remembered().with_text(text))


def show_search_words(text: str) -> None:
    """Puts the shared filters' words in the search box before it is drawn (they may have changed elsewhere)."""
    if st.session_state.get(W_SEARCH) != text:
        st.session_state[W_SEARCH] = text


def on_city_chosen() -> None:
    city = st.session_state.get(W_CITY)
    if not city:
        return
    st.session_state[CITY] = city
    st.session_state[CENTRE] = None  # resolved from the city's listings in the next run
    st.session_state[CENTRE_ERROR] = None


def on_centre_typed() -> None:
    text = st.session_state.get(W_CENTRE, "")
    try:
        centre = parse_centre(text)
    except CentreError as error:
        st.session_state[CENTRE_ERROR] = str(error)
        return
    set_centre(st.session_state, centre)


def close_card() -> None:
    st.session_state[SELECTED] = None


def centre_on(listing_id: str, centre: tuple[float, float]) -> None:
    set_centre(st.session_state, centre)
    st.session_state[SELECTED] = listing_id


# -- API -------------------------------------------------------------------------------------------------------


def facet_options() -> dict[str, dict[str, int]]:
    """The cities to centre on, with their counts (over the whole catalogue of the province, whatever the filters)."""
    counts: dict[str, dict[str, int]] = api.call("facet_counts", facets=list(FACETS))
    return {facet: dict(counts.get(facet) or {}) for facet in FACETS}


def resolve_city(city: str) -> tuple[float, float] | None:
    page = api.call(
        "search_listings",
        filter=filters.eq("cityOrDistrict", city),
        per_page=PAGE_SIZE,
        retrieve_attributes=["_geoloc", "state"],
    )
    return city_centre(page.results)


def listings_within(centre: tuple[float, float], radius_km: float, scope: SearchScope) -> tuple[list[Listing], int]:
    """The service's answer to "which listings matching the filters are within this radius" (at most
    :data:`NEARBY_LIMIT`, nearest first), and how many."""
    return listing_search.all_matching(
        api.backend, scope.text, scope.filter, scope.unit_filter, TABLE_ATTRIBUTES,
        unit_supported=scope.unit_supported, limit=NEARBY_LIMIT, nearby=centre, radius=round(radius_km * 1000),
    )  # fmt: skip


def card_listing(listing_id: str, inside: Sequence[Listing]) -> Listing | None:
    """The clicked listing, from the table's rows when it is inside the circle, else asked of the API."""
    found = next((x for x in inside if x.id == listing_id), None)
    if found is not None:
        return found
    listings: list[Listing] = api.call("multiple_listings", ids=[listing_id], retrieve_attributes=list(CARD_ATTRIBUTES))
    return listings[0] if listings else None


def deck_key(*parts: Any) -> str:
    """The chart's key: new whenever its data changes, so a selection never outlives the rows it picked."""
    digest = hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return f"map_deck_{digest}"


# -- rendering -------------------------------------------------------------------------------------------------


def legend(counts: Mapping[str, int]) -> str:
    """The colour key, with how many of the map's listings have each status (HTML built from constants only)."""

    def dot(colour: Sequence[int]) -> str:
        return f"<span style='color: rgb({colour[0]}, {colour[1]}, {colour[2]}); font-size: 1.2em'>●</span>"

    items = [f"{dot(colour)} {status} ({counts.get(status, 0):,})" for status, colour in STATUS_COLOURS.items()]
    other = sum(count for status, count in counts.items() if status not in STATUS_COLOURS)
    if other:
        items.append(f"{dot(OTHER_COLOUR)} Other ({other:,})")
    items.append("<span style='color: rgb(29, 53, 87); font-size: 1.2em'>◉</span> centre")
    return " &nbsp; ".join(items)


def listing_card(listing: Listing, centre: tuple[float, float]) -> None:
    """The clicked listing: picture, name, place, status, price, distance; and the way to its page."""
    with st.container(border=True):
        draw_image(listing.coverPhoto.url if listing.coverPhoto else None, placeholder=None)
        st.markdown(f"**{markdown_text(listing.name or listing.id)}**")
        where = " · ".join(markdown_text(part) for part in (listing.cityOrDistrict, listing.sellingStatus) if part)
        st.caption(where or "—")
        st.markdown(f"From {cad(listing.startPrice)}" if listing.startPrice else "Contact for pricing")
        distance = distance_km(listing, centre)
        if distance is not None:
            st.caption(f"{distance:,.1f} km from the centre")
        st.page_link(
            "views/listing.py",
            label="Open listing",
            icon="🏢",
            query_params=listing_marks.listing_params(listing.id or ""),
        )
        if st.button("Go to listing", key="map_go_listing", icon="➡️", width="stretch"):
            st.switch_page("views/listing.py", query_params=listing_marks.listing_params(listing.id or ""))
        if listing.geoloc is not None:
            st.button(
                "Centre here",
                key="map_centre_here",
                icon="🎯",
                width="stretch",
                on_click=centre_on,
                args=(listing.id or "", rounded((listing.geoloc.lat, listing.geoloc.lng))),
                help="Move the circle's centre to this listing.",
            )
        st.button("Close", key="map_close_card", on_click=close_card, type="tertiary")


def nearby_table(listings: Sequence[Listing], centre: tuple[float, float]) -> None:
    """The listings in the circle, nearest first, with their distance; the name opens the listing page."""
    ordered, distances = by_distance(listings, centre)
    frame = listing_frame(
        ordered,
        {"distance_km": [None if d is None else round(d, 2) for d in distances], "id": [x.id for x in ordered]},
    )
    st.dataframe(
        frame,
        placeholder="—",
        column_config={
            **COLUMNS,
            "distance_km": st.column_config.NumberColumn("Distance", format="%.2f km", help="From the centre"),
        },
        column_order=["distance_km", *COLUMNS],
        hide_index=True,
        width="stretch",
        row_height=48,
        key="map_nearby_table",
    )
