"""The Map page's layers: the bundled outline of Canada, the click grid, the circle, the listings (or their
clusters), the centre and the city labels; and what a click on them does.

pydeck tells the page which *objects* were clicked, never where: so under everything lies a transparent, pickable
grid of cells around the centre, and a click on empty map picks a cell whose centre becomes the new centre. A click
on a listing picks the listing instead (it is drawn above the grid).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, MutableMapping, Sequence
from typing import Any

import pydeck as pdk
import streamlit as st
from pydeck.bindings.json_tools import default_serialize

from components import basemap, map_data
from components.map_centre import (
    MAP_HEIGHT_PX,
    SELECTED,
    CentreError,
    parse_centre,
    place_of_point,
    rounded,
    set_centre,
)
from components.map_data import MapPoints
from components.maps import basemap_options, centre_layer, circle_layer, view, zoom_for_radius

LISTINGS_LAYER = "listings"
GRID_LAYER = "click-grid"
CLUSTERS_LAYER = "clusters"
CLUSTER_LABELS_LAYER = "cluster-counts"
CLUSTER_THRESHOLD = 3_000
"""Above this many listings with a position, the map draws clusters (counted in Python, :func:`map_data.cluster_rows`:
only one row per cluster goes to the browser) rather than a dot per listing."""
CLUSTER_LABEL_COLOUR = [255, 255, 255, 255]
GRID_CELLS = 51
"""Cells along each side of the click grid (odd, so the centre is a cell's centre): a tenth of the radius each."""
GRID_RADII = 2.5
"""How far the grid reaches each way, in radii: past the map's edges on a wide screen (the circle spans 80% of its
height), and no further, since every cell is sent on every change of the radius or the centre."""
GRID_MIN_HALF_M = 3_000.0
GRID_COLOUR = [255, 255, 255, 1]
"""All but invisible; a fully transparent cell might not be drawn, and so not picked."""
GRID_HIGHLIGHT = [61, 90, 128, 50]
TOOLTIP = {
    "html": "<b>{title}</b><br/>{detail}",
    "style": {
        "backgroundColor": "#1f2a36",
        "color": "white",
        "fontSize": "13px",
        "pointerEvents": "none",
        "marginLeft": "14px",
        "marginTop": "14px",
    },
}
"""Every pickable row carries ``title`` and ``detail``; Streamlit HTML-escapes the values it puts in. The tooltip
sits beside the pointer and lets clicks through, so a click under it still reaches the map."""


def grid_half_extent_m(radius_m: float) -> float:
    return max(GRID_RADII * radius_m, GRID_MIN_HALF_M)


def grid_rows(lat: float, lng: float, radius_m: float, cells: int = GRID_CELLS) -> tuple[list[dict[str, Any]], float]:
    """The click grid: ``cells`` × ``cells`` square cells centred on the centre, covering :data:`GRID_RADII` each way.

    Returns the rows (each a cell centre, with its tooltip) and the cell size in metres.
    """
    half = grid_half_extent_m(radius_m)
    size = 2 * half / (cells - 1)
    dlat = size / 111_320.0
    dlng = size / (111_320.0 * max(math.cos(math.radians(lat)), 0.01))
    middle = cells // 2
    rows = []
    for i in range(cells):
        cell_lat = lat + (i - middle) * dlat
        if not -85 <= cell_lat <= 85:
            continue
        for j in range(cells):
            cell_lng = lng + (j - middle) * dlng
            if not -180 <= cell_lng <= 180:
                continue
            centre = rounded((cell_lat, cell_lng))
            rows.append(
                {"lat": centre[0], "lng": centre[1], "title": "Click to centre here", "detail": place_of_point(centre)}
            )
    return rows, size


def click_grid_layer(lat: float, lng: float, radius_m: float) -> pdk.Layer:
    rows, size = grid_rows(lat, lng, radius_m)
    return pdk.Layer(
        "GridCellLayer",
        id=GRID_LAYER,
        data=rows,
        get_position=["lng", "lat"],
        cell_size=size,
        offset=[0, 0],
        extruded=False,
        get_fill_color=GRID_COLOUR,
        pickable=True,
        auto_highlight=True,
        highlight_color=GRID_HIGHLIGHT,
    )


def listings_layer(points: MapPoints) -> pdk.Layer:
    return pdk.Layer(
        "ScatterplotLayer",
        id=LISTINGS_LAYER,
        data=map_data.listing_rows(points),
        get_position=["lng", "lat"],
        get_fill_color="colour",
        get_radius=60,
        radius_min_pixels=5,
        radius_max_pixels=18,
        stroked=True,
        get_line_color=[255, 255, 255, 200],
        line_width_min_pixels=1,
        pickable=True,
        auto_highlight=True,
    )


def cluster_layers(rows: Sequence[Mapping[str, Any]]) -> list[pdk.Layer]:
    """The clusters as circles sized by their count (pickable: a click centres the circle there), and their counts."""
    circles = pdk.Layer(
        "ScatterplotLayer",
        id=CLUSTERS_LAYER,
        data=list(rows),
        get_position=["lng", "lat"],
        get_fill_color="colour",
        get_radius="radius",
        radius_min_pixels=9,
        stroked=True,
        get_line_color=[255, 255, 255, 230],
        line_width_min_pixels=1.5,
        pickable=True,
        auto_highlight=True,
    )
    counts = pdk.Layer(
        "TextLayer",
        id=CLUSTER_LABELS_LAYER,
        data=list(rows),
        get_position=["lng", "lat"],
        get_text="label",
        get_size=12,
        get_color=CLUSTER_LABEL_COLOUR,
        pickable=False,
    )
    return [circles, counts]


class CompactDeck(pdk.Deck):  # type: ignore[misc]
    """A deck whose JSON has no indentation. pydeck indents its JSON, which forces Python's pure-Python encoder:
    on a rerun with thousands of rows that took most of the page's time; unindented, the C encoder writes it."""

    def to_json(self) -> str:
        return json.dumps(self, sort_keys=True, default=default_serialize, separators=(",", ":"))


def map_deck(
    points: MapPoints,
    centre: Sequence[float],
    radius_m: float,
    *,
    street: bool = False,
    cities: Sequence[Mapping[str, Any]] = (),
    height_px: int = MAP_HEIGHT_PX,
) -> pdk.Deck:
    """The bundled outline of Canada, the grid (for clicks), circle, listings, the centre and the city labels.

    Without the street basemap nothing is fetched: the outline is drawn filled. With it, the tiles come from the
    network and the outline is drawn as borders only over them (so it is still there when the tiles are not).
    """
    lat, lng = centre
    zoom = zoom_for_radius(lat, radius_m, height_px)
    if len(points) > CLUSTER_THRESHOLD:
        drawn = cluster_layers(map_data.cluster_rows(points, lat, zoom))
    else:
        drawn = [listings_layer(points)]
    return CompactDeck(
        layers=[
            *basemap.shapes_layers(filled=not street),
            click_grid_layer(lat, lng, radius_m),
            circle_layer(lat, lng, radius_m),
            *drawn,
            centre_layer(lat, lng),
            basemap.labels_layer(cities),
        ],
        initial_view_state=view(lat, lng, zoom),
        tooltip=TOOLTIP,  # type: ignore[arg-type]
        **basemap_options(street),
    )


def apply_pick(state: MutableMapping[str, Any], objects: Mapping[str, Sequence[Mapping[str, Any]]] | None) -> None:
    """What a click on the map does to the page's state: a listing opens its card, a grid cell or a cluster moves
    the centre, and a click that picks nothing (or clears the selection) closes the card."""
    objects = objects or {}
    picked_listing = list(objects.get(LISTINGS_LAYER) or [])
    picked_cell = list(objects.get(CLUSTERS_LAYER) or objects.get(GRID_LAYER) or [])
    if picked_listing and picked_listing[0].get("id"):
        state[SELECTED] = str(picked_listing[0]["id"])
        return
    if picked_cell:
        try:
            centre = parse_centre(f"{picked_cell[0]['lat']},{picked_cell[0]['lng']}")
        except (CentreError, KeyError, TypeError):
            return
        set_centre(state, centre)
        return
    state[SELECTED] = None


def on_map_pick(key: str) -> Callable[[], None]:
    def handle() -> None:
        value = st.session_state.get(key)
        selection = value.get("selection") if value is not None else None
        apply_pick(st.session_state, selection.get("objects") if selection is not None else None)

    return handle
