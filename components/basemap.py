"""The Map page's offline basemap: Canada's provinces and territories, the neighbouring United States and the
lakes along the border, from the bundled ``components/data/canada_basemap.geojson`` (Natural Earth 1:50m, public
domain; made once by ``tools/make_basemap.py``), and labels at the catalogue's cities.

Nothing here touches the network: the shapes are read from the file shipped with the dashboard, and the cities'
positions are the mean positions of their listings, as the listings service gives them.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pydeck as pdk

from precon.models import Listing

DATA = Path(__file__).resolve().parent / "data" / "canada_basemap.geojson"
SHAPES_LAYER = "basemap-shapes"
LABELS_LAYER = "basemap-cities"
ATTRIBUTION = "Outline: Natural Earth (public domain)"

WATER = [214, 226, 236, 255]
FILLS: dict[str, list[int]] = {
    "water": WATER,
    "neighbour": [236, 234, 228, 255],
    "province": [250, 248, 242, 255],
    "lake": WATER,
}
LINES: dict[str, list[int]] = {
    "water": [0, 0, 0, 0],
    "neighbour": [170, 165, 155, 255],
    "province": [120, 115, 135, 255],
    "lake": [150, 175, 200, 255],
}
WATER_BOX = (-179.0, 24.0, -40.0, 84.0)
"""West, south, east, north: the sea drawn under the land (deck.gl's own background is white)."""
LABEL_COLOUR = [40, 45, 60, 255]
LABEL_OUTLINE = [255, 255, 255, 230]


@functools.cache
def features() -> tuple[dict[str, Any], ...]:
    """The bundled shapes (read once), each with its fill and line colour."""
    collection = json.loads(DATA.read_text(encoding="utf-8"))
    return tuple(collection["features"])


def shapes(*, filled: bool = True) -> dict[str, Any]:
    """The GeoJSON the shapes layer draws: the sea (when filled), the United States, the provinces, the lakes."""
    west, south, east, north = WATER_BOX
    water = {
        "type": "Feature",
        "properties": {"kind": "water", "name": "Water", "code": "WATER"},
        "geometry": {
            "type": "Polygon",
            "coordinates": [[[west, south], [east, south], [east, north], [west, north], [west, south]]],
        },
    }
    drawn = []
    for feature in ([water] if filled else []) + list(features()):
        kind = feature["properties"]["kind"]
        properties = {**feature["properties"], "fill": FILLS[kind], "line": LINES[kind]}
        drawn.append({**feature, "properties": properties})
    return {"type": "FeatureCollection", "features": drawn}


def shapes_layer(*, filled: bool = True) -> pdk.Layer:
    """Land, borders and lakes; with ``filled=False`` (over a street basemap) only the borders."""
    return pdk.Layer(
        "GeoJsonLayer",
        id=SHAPES_LAYER,
        data=shapes(filled=filled),
        filled=filled,
        stroked=True,
        get_fill_color="properties.fill",
        get_line_color="properties.line",
        line_width_units="pixels",
        get_line_width=1,
        line_width_min_pixels=1,
        pickable=False,
    )


def city_positions(listings: Iterable[Listing]) -> dict[str, tuple[float, float]]:
    """Each city's mean listing position; for a name used in several provinces, that of its largest one."""
    groups: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for listing in listings:
        if listing.geoloc is None or not listing.cityOrDistrict:
            continue
        province = getattr(listing, "state", None) or ""
        groups.setdefault((listing.cityOrDistrict, province), []).append((listing.geoloc.lat, listing.geoloc.lng))
    best: dict[str, list[tuple[float, float]]] = {}
    for (city, _), points in groups.items():
        if len(points) > len(best.get(city, [])):
            best[city] = points
    return {
        city: (round(sum(p[0] for p in pts) / len(pts), 5), round(sum(p[1] for p in pts) / len(pts), 5))
        for city, pts in best.items()
    }


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
    return pdk.Layer(
        "TextLayer",
        id=LABELS_LAYER,
        data=list(rows),
        get_position=["lng", "lat"],
        get_text="name",
        get_size=13,
        size_units="pixels",
        get_color=LABEL_COLOUR,
        get_text_anchor="'middle'",
        get_alignment_baseline="'bottom'",
        get_pixel_offset=[0, -8],
        font_family="'Helvetica Neue', Arial, sans-serif",
        font_weight=600,
        outline_width=3,
        outline_color=LABEL_OUTLINE,
        font_settings={"sdf": True},
        character_set="auto",
        pickable=False,
    )


def nearest_city(centre: Sequence[float], positions: Mapping[str, tuple[float, float]]) -> tuple[str, float] | None:
    """The city whose position is nearest the centre, and how far it is (km), or None when no city has one."""
    best: tuple[str, float] | None = None
    for city, (lat, lng) in positions.items():
        distance = _haversine_km(centre[0], centre[1], lat, lng)
        if best is None or distance < best[1]:
            best = (city, distance)
    return best


def _haversine_km(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lng2 - lng1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371.0 * math.asin(min(1.0, math.sqrt(h)))
