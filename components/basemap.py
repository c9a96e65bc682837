"""The Map page's offline basemap: Canada's provinces and territories, the neighbouring United States and the
lakes along the border, from the bundled ``static/basemap/*.json`` (Natural Earth 1:50m, public domain; made once by
``tools/make_basemap.py``), and labels at the catalogue's cities.

Nothing here touches the internet. The browser fetches the shapes from the dashboard's own server (Streamlit's
static serving, ``server.enableStaticServing`` in ``.streamlit/config.toml``), once: the map's layers name them by
address, so a rerun sends a few bytes instead of the shapes, and the browser keeps what it drew. Where static
serving is off, the shapes go inline, as data. The cities' positions are the mean positions of their listings, as
the listings service gives them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pydeck as pdk
import streamlit as st

STATIC = Path(__file__).resolve().parent.parent / "static"
"""Streamlit serves this folder, next to ``app.py``, at ``app/static/``."""
LAND = STATIC / "basemap" / "land.json"
LAKES = STATIC / "basemap" / "lakes.json"
WATER_LAYER = "basemap-water"
SHAPES_LAYER = "basemap-shapes"
LAKES_LAYER = "basemap-lakes"
LABELS_LAYER = "basemap-cities"
ATTRIBUTION = "Outline: Natural Earth (public domain)"

WATER = [214, 226, 236, 255]
FILLS: dict[str, list[int]] = {
    "water": WATER,
    "neighbour": [236, 234, 228, 255],
    "province": [250, 248, 242, 255],
    "lake": WATER,
}
PROVINCE_TONES: dict[tuple[int, ...], tuple[str, ...]] = {
    (250, 248, 242, 255): ("BC", "SK", "ON", "NB", "NL", "NU"),
    (242, 238, 226, 255): ("AB", "MB", "QC", "NS", "YT"),
    (238, 241, 230, 255): ("NT", "PE"),
}
PROVINCE_FILLS: dict[str, list[int]] = {code: list(tone) for tone, codes in PROVINCE_TONES.items() for code in codes}
"""Neighbouring provinces in different tones, so that their border shows without a line: the offline map draws
no lines, since a browser without a GPU spends most of each frame on them (3.9 s of a radius step's 4 s)."""
LINES: dict[str, list[int]] = {
    "water": [0, 0, 0, 0],
    "neighbour": [170, 165, 155, 255],
    "province": [120, 115, 135, 255],
    "lake": [150, 175, 200, 255],
}
WATER_BOX = (-179.0, 24.0, -40.0, 84.0)
"""West, south, east, north: the sea drawn under the land (deck.gl's own background is white)."""
LABEL_COLOUR = [40, 45, 60, 255]
LABEL_BACKGROUND = [255, 255, 255, 190]


@functools.cache
def _collection(path: Path) -> dict[str, Any]:
    collection: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return collection


def features() -> tuple[dict[str, Any], ...]:
    """The bundled shapes (read once), each with its fill and line colour."""
    return (*_collection(LAND)["features"], *_collection(LAKES)["features"])


def served() -> bool:
    """Whether the browser can fetch the bundled shapes from the dashboard's server."""
    try:
        return bool(st.get_option("server.enableStaticServing"))
    except Exception:  # an unknown option in another Streamlit: send the shapes inline
        return False


def source(path: Path) -> str | dict[str, Any]:
    """A layer's data: the file's address on the dashboard's server (relative, so a ``baseUrlPath`` is kept), or
    the shapes themselves where static serving is off."""
    if served():
        return f"app/static/{path.relative_to(STATIC).as_posix()}"
    return _collection(path)


def water() -> dict[str, Any]:
    """The sea under the land: a rectangle around North America (deck.gl's own background is white)."""
    west, south, east, north = WATER_BOX
    return {
        "type": "FeatureCollection",
        "features": [
            {
                "type": "Feature",
                "properties": {
                    "kind": "water",
                    "name": "Water",
                    "code": "WATER",
                    "fill": WATER,
                    "line": LINES["water"],
                },
                "geometry": {
                    "type": "Polygon",
                    "coordinates": [[[west, south], [east, south], [east, north], [west, north], [west, south]]],
                },
            }
        ],
    }


def _geojson_layer(layer_id: str, data: str | dict[str, Any], *, filled: bool, stroked: bool = True) -> pdk.Layer:
    return pdk.Layer(
        "GeoJsonLayer",
        id=layer_id,
        data=data,
        filled=filled,
        stroked=stroked,
        get_fill_color="properties.fill",
        get_line_color="properties.line",
        get_line_width=30,  # metres: hairlines at every zoom, between these bounds
        line_width_min_pixels=1,
        line_width_max_pixels=2,
        line_joint_rounded=True,
        line_miter_limit=2,
        pickable=False,
    )


def shapes_layers(*, filled: bool = True) -> list[pdk.Layer]:
    """The sea, the land, and the lakes, as three layers drawn in that order (polygons in one layer would fight
    over which is on top); the provinces' borders show as changes of tone. With ``filled=False`` (over a street
    basemap) only the borders, as lines."""
    layers = [_geojson_layer(SHAPES_LAYER, source(LAND), filled=filled, stroked=not filled)]
    if filled:
        layers.insert(0, _geojson_layer(WATER_LAYER, water(), filled=True, stroked=False))
        layers.append(_geojson_layer(LAKES_LAYER, source(LAKES), filled=True, stroked=False))
    return layers


def city_rows(counts: Mapping[str, int], positions: Mapping[str, tuple[float, float]]) -> list[dict[str, Any]]:
    """A label per city with a position, the cities with the most listings first (drawn last, so on top)."""
    rows = [
        {"name": city, "lat": positions[city][0], "lng": positions[city][1], "count": count}
        for city, count in counts.items()
        if city in positions
    ]
    rows.sort(key=lambda row: (row["count"], row["name"]))
    return rows


def labels_layer(rows: Sequence[Mapping[str, Any]]) -> pdk.Layer:
    """The cities' names above their positions (sizes in pixels, deck.gl's default for text).

    No string-valued prop is set: the chart's JSON converter would read a string as an expression."""
    return pdk.Layer(
        "TextLayer",
        id=LABELS_LAYER,
        data=list(rows),
        get_position=["lng", "lat"],
        get_text="name",
        get_size=13,
        get_color=LABEL_COLOUR,
        get_pixel_offset=[0, -12],
        background=True,
        get_background_color=LABEL_BACKGROUND,
        background_padding=[3, 1],
        pickable=False,
    )
