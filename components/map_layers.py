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
from dataclasses import dataclass
from typing import Any

import pydeck as pdk
import streamlit as st
from pydeck.bindings.json_tools import default_serialize

from components import basemap, map_data
from components.map_centre import (
    CENTRE,
    DEFAULT_RADIUS_KM,
    MAP_HEIGHT_PX,
    RADIUS,
    SELECTED,
    CentreError,
    format_centre,
    parse_centre,
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
NEAR_RADII = 4.0
"""Clusters within this many radii of the centre (each way; the map shows about 1.3 up and down, 2.5 across a wide
screen) are counted in cells of the opening zoom; those beyond, in cells :data:`map_data.FAR_CELL_FACTOR` times
wider, since they are seen only panned or zoomed out."""
GRID_CELLS = 51
"""Cells across the click grid, west to east (odd, so the centre is a cell's centre): a tenth of the radius each."""
GRID_RADII = 2.5
"""How far the grid reaches east and west, in radii: past the map's edges on a wide screen (the circle spans 80% of
its height), and no further, since every cell is sent on every change of the radius or the centre."""
GRID_ROWS = 31
"""Cells from south to north: 1.5 radii each way, past the top and bottom edges (1.25 radii from the centre)."""
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


@dataclass(frozen=True)
class ClickGrid:
    """The click grid around a centre: :data:`GRID_ROWS` rows of :data:`GRID_CELLS` square cells reaching
    :data:`GRID_RADII` radii east and west, cell (0, 0) on the centre.

    A cell is sent as its offsets ``i`` (north) and ``j`` (east) from the centre cell, and the layer places it
    with an expression of them: so the rows are the same for every centre and radius, and a picked cell is turned
    back into a position by the grid drawn (:meth:`position`). Each row carries the tooltip's words, since
    Streamlit's tooltip shows a field a row lacks as its ``{name}``."""

    lat: float
    lng: float
    size_m: float

    @classmethod
    def around(cls, lat: float, lng: float, radius_m: float) -> ClickGrid:
        return cls(lat, lng, 2 * grid_half_extent_m(radius_m) / (GRID_CELLS - 1))

    @property
    def dlat(self) -> float:
        return self.size_m / 111_320.0

    @property
    def dlng(self) -> float:
        return self.size_m / (111_320.0 * max(math.cos(math.radians(self.lat)), 0.01))

    def position(self, i: int, j: int) -> tuple[float, float]:
        return rounded((self.lat + i * self.dlat, self.lng + j * self.dlng))

    def rows(self) -> list[dict[str, int]]:
        """Every cell on the globe, as its offsets."""
        across, up = GRID_CELLS // 2, GRID_ROWS // 2
        return [
            {"i": i, "j": j, "title": "Click to centre here", "detail": ""}
            for i in range(-up, up + 1)
            if -85 <= self.lat + i * self.dlat <= 85
            for j in range(-across, across + 1)
            if -180 <= self.lng + j * self.dlng <= 180
        ]

    def layer(self) -> pdk.Layer:
        return pdk.Layer(
            "GridCellLayer",
            id=GRID_LAYER,
            data=self.rows(),
            get_position=f"[{self.lng!r} + j * {self.dlng!r}, {self.lat!r} + i * {self.dlat!r}]",
            cell_size=self.size_m,
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
        data=[{"lat": row["lat"], "lng": row["lng"], "label": row["label"]} for row in rows],  # half the bytes
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
        near = map_data.Near(lat, lng, NEAR_RADII * radius_m)
        drawn = cluster_layers(map_data.cluster_rows(points, lat, zoom, near=near))
    else:
        drawn = [listings_layer(points)]
    return CompactDeck(
        layers=[
            *basemap.shapes_layers(filled=not street),
            ClickGrid.around(lat, lng, radius_m).layer(),
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
        centre = _picked_position(state, picked_cell[0])
        if centre is not None:
            set_centre(state, centre)
        return
    state[SELECTED] = None


def _picked_position(state: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[float, float] | None:
    """Where a picked cluster is, or the centre of a picked grid cell (of the grid drawn around the state's centre
    at its radius: the click's callback runs before anything changes them)."""
    try:
        if "i" in row and "j" in row and state.get(CENTRE) is not None:
            lat, lng = state[CENTRE]
            grid = ClickGrid.around(lat, lng, float(state.get(RADIUS, DEFAULT_RADIUS_KM)) * 1000)
            return parse_centre(format_centre(grid.position(int(row["i"]), int(row["j"]))))
        return parse_centre(f"{row['lat']},{row['lng']}")
    except (CentreError, KeyError, TypeError, ValueError):
        return None


def on_map_pick(key: str) -> Callable[[], None]:
    def handle() -> None:
        value = st.session_state.get(key)
        selection = value.get("selection") if value is not None else None
        apply_pick(st.session_state, selection.get("objects") if selection is not None else None)

    return handle
