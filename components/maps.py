"""Listings on a pydeck map: points coloured by selling status, a radius circle, and an optional basemap.

Without a basemap (``map_provider=None``) the map needs nothing from the network: the points and shapes are
drawn on a plain background. The basemap is offered where the network allows it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pydeck as pdk

from components.formatting import cad
from precon.client.models import Listing

STATUS_COLOURS: dict[str, list[int]] = {
    "Selling Now": [42, 157, 143, 220],
    "Pending": [233, 196, 106, 220],
    "Sold Out": [231, 111, 81, 220],
}
OTHER_COLOUR = [120, 120, 140, 200]
CIRCLE_COLOUR = [61, 90, 128, 40]
CIRCLE_LINE = [61, 90, 128, 220]
TOOLTIP = {
    "html": "<b>{name}</b><br/>{city} · {status}<br/>{price}",
    "style": {"backgroundColor": "#1f2a36", "color": "white", "fontSize": "13px"},
}
BASEMAP_STYLE = "light"


def point_rows(listings: Sequence[Listing]) -> list[dict[str, Any]]:
    """What the points layer draws and the tooltip shows, one dict per listing with a position."""
    rows = []
    for listing in listings:
        if listing.geoloc is None:
            continue
        rows.append(
            {
                "id": listing.id,
                "name": listing.name or listing.id,
                "city": listing.cityOrDistrict or "",
                "status": listing.sellingStatus or "Unknown",
                "price": cad(listing.startPrice) if listing.startPrice else "Contact for pricing",
                "lat": listing.geoloc.lat,
                "lng": listing.geoloc.lng,
                "colour": STATUS_COLOURS.get(listing.sellingStatus or "", OTHER_COLOUR),
            }
        )
    return rows


def points_layer(listings: Sequence[Listing], *, layer_id: str = "listings", radius_px: int = 6) -> pdk.Layer:
    return pdk.Layer(
        "ScatterplotLayer",
        id=layer_id,
        data=point_rows(listings),
        get_position=["lng", "lat"],
        get_fill_color="colour",
        get_radius=60,
        radius_min_pixels=radius_px,
        radius_max_pixels=radius_px * 3,
        stroked=True,
        get_line_color=[255, 255, 255, 200],
        line_width_min_pixels=1,
        pickable=True,
        auto_highlight=True,
    )


def circle_polygon(lat: float, lng: float, radius_m: float, steps: int = 96) -> list[list[float]]:
    """The points of a circle of ``radius_m`` metres on the ground, as [lng, lat] pairs."""
    ring = []
    angular = radius_m / 6_371_000.0
    phi, lam = math.radians(lat), math.radians(lng)
    for step in range(steps + 1):
        bearing = 2 * math.pi * step / steps
        phi2 = math.asin(math.sin(phi) * math.cos(angular) + math.cos(phi) * math.sin(angular) * math.cos(bearing))
        lam2 = lam + math.atan2(
            math.sin(bearing) * math.sin(angular) * math.cos(phi), math.cos(angular) - math.sin(phi) * math.sin(phi2)
        )
        ring.append([math.degrees(lam2), math.degrees(phi2)])
    return ring


def circle_layer(lat: float, lng: float, radius_m: float) -> pdk.Layer:
    return pdk.Layer(
        "PolygonLayer",
        id="radius",
        data=[{"polygon": circle_polygon(lat, lng, radius_m)}],
        get_polygon="polygon",
        get_fill_color=CIRCLE_COLOUR,
        get_line_color=CIRCLE_LINE,
        line_width_min_pixels=2,
        pickable=False,
    )


def centre_layer(lat: float, lng: float) -> pdk.Layer:
    return pdk.Layer(
        "ScatterplotLayer",
        id="centre",
        data=[{"lat": lat, "lng": lng}],
        get_position=["lng", "lat"],
        get_fill_color=[29, 53, 87, 255],
        radius_min_pixels=7,
        stroked=True,
        get_line_color=[255, 255, 255, 255],
        line_width_min_pixels=2,
    )


def zoom_for_radius(lat: float, radius_m: float, height_px: int = 620) -> float:
    """The zoom at which a circle of this radius spans about 80% of a map ``height_px`` high.

    deck.gl's world is 512 px wide at zoom 0, and a metre spans more pixels away from the equator (by 1/cos lat).
    """
    metres_per_px = 2 * max(radius_m, 50.0) / (0.8 * height_px)
    equator_m = 40_075_016.0 * max(math.cos(math.radians(lat)), 0.05)
    return max(1.0, min(18.0, math.log2(equator_m / (512 * metres_per_px))))


def view(lat: float, lng: float, zoom: float) -> pdk.ViewState:
    return pdk.ViewState(latitude=lat, longitude=lng, zoom=zoom, pitch=0)


def fitted_view(listings: Sequence[Listing]) -> pdk.ViewState:
    """A view that shows all of these listings (Canada when there are none)."""
    points = [(lst.geoloc.lat, lst.geoloc.lng) for lst in listings if lst.geoloc is not None]
    if not points:
        return view(56.0, -96.0, 2.6)
    lats, lngs = [p[0] for p in points], [p[1] for p in points]
    span = max(max(lats) - min(lats), (max(lngs) - min(lngs)) * 0.6, 0.01)
    zoom = max(2.0, min(14.0, math.log2(180 / span)))
    return view((max(lats) + min(lats)) / 2, (max(lngs) + min(lngs)) / 2, zoom)


def basemap_options(street: bool) -> dict[str, Any]:
    """The deck's basemap: Carto's tiles, or none at all. For none, ``map_style`` is left to pydeck, whose default
    Streamlit reads as "no basemap"; ``map_style=None`` would make Streamlit fetch a Carto style of its choosing."""
    return {"map_provider": "carto", "map_style": BASEMAP_STYLE} if street else {"map_provider": None}


def deck(layers: Sequence[pdk.Layer], initial: pdk.ViewState, *, basemap: bool = False) -> pdk.Deck:
    """A deck of these layers; with no basemap it draws offline, with one it loads tiles from the network."""
    return pdk.Deck(
        layers=list(layers),
        initial_view_state=initial,
        tooltip=TOOLTIP,  # type: ignore[arg-type]
        **basemap_options(basemap),
    )
