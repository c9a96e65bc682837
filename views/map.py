"""Map: every listing matching the shared filters (the Search page's: words, facets, completion year and the
floor-plan filters), coloured by selling status; a centre (a click on the map, a city or ``lat,lng``) and a radius
drawn as a circle; and the listings inside the circle, nearest first, as the service answers ``nearby``/``radius``.
Under them lies the bundled outline of Canada (:mod:`components.basemap`), with the catalogue's cities named, so the
map reads without a network; the street basemap is an option. The controls and the map are a fragment: changing
the centre, the radius or the selection reruns only them, not the search box and chips above.
Everything the page shows is named by its URL (see :mod:`components.map_centre` and
:mod:`components.shared_filters`)."""

from __future__ import annotations

import streamlit as st

from components import api, basemap, filter_chips, map_data, saved, search_scope, shared_filters
from components import map_centre as mc
from components import map_layers as ml
from components.formatting import markdown_text, plural
from precon.client.models import Listing
from precon.dashboard.filter_state import SEARCH_MAX_CHARS

state = st.session_state
chosen, problems = shared_filters.current("map")

st.title("Map")
st.caption(mc.HOW_TO)

mc.sync_from_url()

with api.guarded():
    options = mc.facet_options()
    scope = search_scope.scope_of(chosen)
    places = map_data.catalogue_places()
cities = options["cityOrDistrict"]


# -- the centre: as set, else the city's, else the city with the most listings ---------------------------------
def resolve_centre() -> None:
    if state.get(mc.CENTRE) is not None:
        return
    centre = None
    wanted = state.get(mc.CITY)
    if wanted:
        with api.guarded():
            centre = mc.resolve_city(wanted)
        if centre is None:
            state[mc.URL_ERROR] = f"No listing in {markdown_text(wanted)} has a position here; showing another city."
            state[mc.CITY] = None
    if centre is None:
        biggest = max(cities, key=lambda name: cities[name]) if cities else None
        if biggest is not None:
            with api.guarded():
                centre = mc.resolve_city(biggest)
        state[mc.CITY] = biggest if centre is not None else None
        centre = centre or mc.FALLBACK_CENTRE
    state[mc.CENTRE] = centre
    if not state.get(mc.CENTRE_ERROR):
        state[mc.W_CENTRE] = mc.format_centre(centre, ", ")
    state[mc.W_CITY] = state[mc.CITY]


# -- the shared filters (a change reruns the whole page) -------------------------------------------------------
search_col, chips_col = st.columns([1, 2], vertical_alignment="bottom")
mc.show_search_words(chosen.text)
search_col.text_input(
    "Search",
    key=mc.W_SEARCH,
    on_change=mc.on_search_typed,
    placeholder="Name, street, neighbourhood…",
    max_chars=SEARCH_MAX_CHARS,
)
with chips_col, api.guarded():
    filter_chips.render(chosen, prefix="map", with_text=False, links=("search", "facets"))
saved.save_control(chosen, "map")
for problem in problems:
    st.warning(problem, icon="🔗")
if scope.local:
    st.caption(search_scope.local_note())

with api.guarded():
    points = map_data.matching(scope)


# -- the centre's controls, the map and the table (a change reruns only these) ---------------------------------
def view_controls() -> None:
    """City, centre, radius and basemap; what they hold is copied into the page's state."""
    city_col, centre_col, radius_col, basemap_col = st.columns([2, 2, 2.5, 2.5], vertical_alignment="bottom")
    city_options = sorted(set(cities) | ({state[mc.W_CITY]} if state.get(mc.W_CITY) else set()), key=str.casefold)
    city_col.selectbox(
        "City",
        city_options,
        key=mc.W_CITY,
        on_change=mc.on_city_chosen,
        placeholder="Pick a city…",
        format_func=lambda name: f"{name} ({cities[name]:,})" if name in cities else name,
        help="Centres the circle on the mean position of the city's listings.",
    )
    centre_col.text_input(
        "Centre (lat,lng)",
        key=mc.W_CENTRE,
        on_change=mc.on_centre_typed,
        placeholder="43.65, -79.38",
        help="Latitude then longitude, in degrees; press Enter to move the centre. Or click the map.",
    )
    radius_col.select_slider(
        "Radius",
        mc.radius_options(state.get(mc.W_RADIUS)),
        key=mc.W_RADIUS,
        format_func=lambda km: f"{mc.format_km(km)} km",
    )
    basemap_col.toggle(
        "Street basemap (needs internet)",
        key=mc.W_BASEMAP,
        help="Map tiles from Carto, loaded over the internet. Off, the map needs no network: it draws the bundled "
        "outline of Canada's provinces and territories, with the catalogue's cities named.",
    )
    state[mc.RADIUS] = float(state[mc.W_RADIUS])
    state[mc.BASEMAP] = bool(state[mc.W_BASEMAP])


def coverage_note() -> str:
    """How many of the matching listings the map shows, and how."""
    note = f"{len(points):,} of {points.matching:,} matching listings on the map"
    if points.matching > points.fetched:
        note += f" (the first {points.fetched:,}: narrow the filters to see the rest)"
    elif points.without_position:
        note += f" ({points.without_position:,} have no position)"
    if len(points) > ml.CLUSTER_THRESHOLD:
        note += (
            f"; more than {ml.CLUSTER_THRESHOLD:,}, so they are grouped: each circle is the listings near it, "
            "with their count, coloured by the commonest status (click one to centre there)"
        )
    return note


def legend_and_source() -> None:
    st.markdown(
        mc.legend(points.status_counts) + f" &nbsp;·&nbsp; <span style='opacity: 0.7'>{coverage_note()}.</span>",
        unsafe_allow_html=True,
    )
    if state[mc.BASEMAP]:
        st.caption(
            "The street map's tiles come from the internet: where they can't load, only the bundled outline "
            f"of the provinces and the city names show. {basemap.ATTRIBUTION}."
        )
    else:
        st.caption(
            "Offline map: the bundled outline of Canada's provinces and territories and the catalogue's cities "
            f"(no streets; the street basemap needs internet). {basemap.ATTRIBUTION}."
        )


def clicked_card(inside: list[Listing], centre: tuple[float, float]) -> None:
    selected_id = state.get(mc.SELECTED)
    selected = None
    if selected_id:
        with api.guarded():
            selected = mc.card_listing(selected_id, inside)
    if selected is not None:
        mc.listing_card(selected, centre)
    else:
        st.info("Click a listing on the map to see it here; click anywhere else to move the centre.", icon="👆")


def listings_inside(inside: list[Listing], total: int, centre: tuple[float, float], place_md: str) -> None:
    st.subheader(f"{plural(total, 'listing')} within {mc.format_km(state[mc.RADIUS])} km of {place_md}")
    if not inside:
        st.info("No listing matching the filters is inside the circle: widen the radius or move the centre.")
        return
    if total > len(inside):
        which = "best matches" if chosen.text else "nearest"
        st.caption(f"Showing the {len(inside):,} {which}, by distance.")
    mc.nearby_table(inside, centre)


def the_map(centre: tuple[float, float], place: str) -> None:
    # Not keyed by the radius: a new radius redraws the chart in place instead of making a new one.
    key = mc.deck_key(api.scope(), chosen.to_params(), centre, points.digest, state[mc.BASEMAP])
    st.pydeck_chart(
        ml.map_deck(
            points,
            centre,
            state[mc.RADIUS] * 1000,
            street=state[mc.BASEMAP],
            cities=basemap.city_rows(cities, places.cities),
        ),
        on_select=ml.on_map_pick(key),
        selection_mode="single-object",
        key=key,
        height=mc.MAP_HEIGHT_PX,
        alt=f"Map of {len(points):,} listings around {place}",
    )


@st.fragment
def map_view() -> None:
    resolve_centre()
    view_controls()
    if state.get(mc.CENTRE_ERROR):
        st.error(state[mc.CENTRE_ERROR], icon="📍")
    if state.get(mc.URL_ERROR):
        st.warning(state.pop(mc.URL_ERROR), icon="🔗")  # said once: the next change is the user's
    mc.write_url()

    centre: tuple[float, float] = state[mc.CENTRE]
    near = mc.place_near(centre, places.cities, places.neighbourhoods)
    place = state[mc.CITY] or near
    place_md = markdown_text(state[mc.CITY]) if state[mc.CITY] else near
    with api.guarded():
        inside, inside_total = mc.listings_within(centre, state[mc.RADIUS], scope)

    map_col, side_col = st.columns([3, 1])
    with map_col:
        chart_box = st.container()  # filled last, below
        legend_and_source()
    with side_col:
        clicked_card(inside, centre)
    listings_inside(inside, inside_total, centre, place_md)
    # The chart goes last: everything else of the rerun is on the page before the browser starts drawing the map,
    # which takes a few hundred milliseconds in a browser without a GPU.
    with chart_box:
        the_map(centre, place)


map_view()
