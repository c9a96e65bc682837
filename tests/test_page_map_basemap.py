"""The Map page's offline basemap (the bundled outline, city names, the nearest place named after a click), its
radius presets, its clusters over many listings and what a rerun sends (tests/test_page_map.py: centre, radius and
the listings nearest first)."""

from __future__ import annotations

import json
import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

from components import map_centre as mc
from components import map_layers as ml
from components.formatting import plural
from tests.dashboard_support import (  # noqa: F401
    assert_readable_failure,
    dashboard_data,
    embedded_dashboard,
    failing_service,
    open_page,
    page_text,
)
from tests.map_support import (
    PAGE,
    TORONTO,
    client,
    deck_spec,
    grid_cells,
    layer,
    pick,
    service_ids_within,
    table_ids,
)

# -- the offline basemap, the radius presets and the nearest city ----------------------------------------------


def test_the_bundled_outline_is_small_and_has_every_province_and_territory() -> None:
    from components import basemap

    assert basemap.LAND.stat().st_size + basemap.LAKES.stat().st_size < 500_000
    codes = {f["properties"]["code"] for f in basemap.features() if f["properties"]["kind"] == "province"}
    assert codes == {"AB", "BC", "MB", "NB", "NL", "NS", "NT", "NU", "ON", "PE", "QC", "SK", "YT"}
    ontario = next(f for f in basemap.features() if f["properties"]["code"] == "ON")
    west, east = (min(p[0] for part in ontario["geometry"]["coordinates"] for p in part[0]),
                  max(p[0] for part in ontario["geometry"]["coordinates"] for p in part[0]))  # fmt: skip
    assert -96 < west < -94 and -75 < east < -74  # Ontario's outline where Ontario is


@pytest.mark.usefixtures("embedded_dashboard")
def test_the_map_draws_canada_and_names_the_catalogues_cities_with_no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from components import basemap

    real_connect = socket.socket.connect

    def loopback_only(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in {"127.0.0.1", "localhost", "::1"} and not host.startswith("/"):
            raise OSError(f"no network in this test: {host}")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", loopback_only)
    app = open_page(PAGE)
    assert not app.exception, [e.value for e in app.exception]
    spec = deck_spec(app)
    assert "mapProvider" not in spec and spec["mapStyle"] == "__MAP_STYLE__"
    shapes = layer(spec, "basemap-shapes")
    assert shapes["@@type"] == "GeoJsonLayer" and shapes["filled"] is True
    # The browser fetches the shapes from the dashboard's own server (static serving), by a relative address.
    assert shapes["data"] == "app/static/basemap/land.json" and basemap.served()
    kinds = Counter(f["properties"]["kind"] for f in basemap._collection(basemap.LAND)["features"])
    assert kinds == {"province": 13, "neighbour": 1}
    assert [item["id"] for item in spec["layers"][:3]] == ["basemap-water", "basemap-shapes", "basemap-lakes"]
    assert layer(spec, "basemap-lakes")["data"] == "app/static/basemap/lakes.json"
    lakes = basemap._collection(basemap.LAKES)["features"]
    assert lakes[0]["geometry"]["coordinates"] and lakes[0]["properties"]["fill"] == basemap.FILLS["lake"]
    labels = layer(spec, "basemap-cities")
    assert labels["@@type"] == "TextLayer" and spec["layers"][-1]["id"] == "basemap-cities"  # over everything
    catalogue = client().facet_counts(["cityOrDistrict"])["cityOrDistrict"]
    assert {row["name"] for row in labels["data"]} == set(catalogue)
    toronto = next(row for row in labels["data"] if row["name"] == "Toronto")
    assert math.isclose(toronto["lat"], 43.7, abs_tol=0.3) and math.isclose(toronto["lng"], -79.4, abs_tol=0.3)
    assert "Offline map" in page_text(app) and "Natural Earth" in page_text(app)

    app.toggle(key=mc.W_BASEMAP).set_value(True).run()
    spec = deck_spec(app)
    assert spec["mapProvider"] == "carto" and layer(spec, "basemap-shapes")["filled"] is False
    assert not any(item["id"] in {"basemap-water", "basemap-lakes"} for item in spec["layers"])  # the tiles show
    assert "needs internet" in page_text(app) or "come from the internet" in page_text(app)
    assert layer(spec, "basemap-cities")["data"]


@pytest.mark.usefixtures("embedded_dashboard")
def test_the_radius_presets_list_the_services_count_for_each_radius() -> None:
    app = open_page(PAGE, {"center": "43.65,-79.38"})
    assert app.select_slider(key=mc.W_RADIUS).options == ["1 km", "3 km", "5 km", "10 km", "25 km"]
    for km in mc.RADIUS_PRESETS_KM:
        app.select_slider(key=mc.W_RADIUS).set_value(km).run()
        assert not app.exception, [e.value for e in app.exception]
        total = client().search_listings(nearby=TORONTO, radius=km * 1000, per_page=0).total
        assert f"{plural(total, 'listing')} within {mc.format_km(km)} km of " in page_text(app)
        assert table_ids(app) == service_ids_within(TORONTO, km)
        assert app.query_params["radius"] == mc.format_km(km)
    linked = open_page(PAGE, {"center": "43.65,-79.38", "radius": "7.5"})
    assert linked.select_slider(key=mc.W_RADIUS).value == 7.5  # a link's own radius is offered beside the presets


@pytest.mark.usefixtures("embedded_dashboard")
def test_after_a_click_the_heading_names_the_nearest_neighbourhood_or_city_and_the_city_box_stays() -> None:
    app = open_page(PAGE)
    city = app.selectbox(key=mc.W_CITY).value
    assert city and f"within 10 km of {city}" in page_text(app)
    grid = grid_cells(deck_spec(app))
    centre = mc.parse_centre(app.query_params["center"])
    index = next(
        i
        for i, row in enumerate(grid)
        if 1.5 < mc.haversine_km(*centre, row["lat"], row["lng"]) < 3 and row["lat"] > centre[0]
    )
    cell = dict(zip(("lat", "lng"), mc.rounded((grid[index]["lat"], grid[index]["lng"])), strict=True))
    pick(app, ml.GRID_LAYER, index)
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["center"] == mc.format_centre((cell["lat"], cell["lng"])) and "near" not in app.query_params
    labels = layer(deck_spec(app), "basemap-cities")["data"]
    nearest = min(labels, key=lambda row: mc.haversine_km(cell["lat"], cell["lng"], row["lat"], row["lng"]))
    heading = next(h.value for h in app.subheader)
    # The oracle: every neighbourhood's mean position, from the service.
    everything = client().search_listings(
        per_page=1000, retrieve_attributes=["cityOrDistrict", "neighbourhood", "_geoloc"]
    )
    spots: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for x in everything.results:
        if x.geoloc and x.neighbourhood and x.cityOrDistrict:
            spots.setdefault((x.neighbourhood[0], x.cityOrDistrict), []).append((x.geoloc.lat, x.geoloc.lng))
    hoods = {
        key: (sum(p[0] for p in pts) / len(pts), sum(p[1] for p in pts) / len(pts))
        for key, pts in spots.items()
        if len(pts) >= 2
    }
    hood, (lat, lng) = min(hoods.items(), key=lambda kv: mc.haversine_km(cell["lat"], cell["lng"], *kv[1]))
    if mc.haversine_km(cell["lat"], cell["lng"], lat, lng) <= mc.NEIGHBOURHOOD_KM:
        assert f"of {hood[0]}, {hood[1]}" in heading, heading
    else:
        assert f"km from {nearest['name']}" in heading or f"central {nearest['name']}" in heading, heading
    assert mc.place_of_point((cell["lat"], cell["lng"])) not in heading
    assert app.selectbox(key=mc.W_CITY).value == city  # the City box does not reset


def test_a_point_is_named_by_the_nearest_neighbourhood_within_a_kilometre_else_by_the_nearest_city() -> None:
    cities = {"Toronto": (43.70, -79.40), "Mississauga": (43.59, -79.64)}
    hoods = {("Liberty Village", "Toronto"): (43.6387, -79.4207), ("Port Credit", "Mississauga"): (43.5505, -79.5854)}
    assert mc.place_near((43.6400, -79.4200), cities, hoods) == "Liberty Village, Toronto"
    assert mc.place_near((43.5510, -79.5860), cities, hoods) == "Port Credit, Mississauga"
    assert mc.place_near((43.6700, -79.3300), cities, hoods).startswith("a point ")  # no neighbourhood within 1 km
    assert mc.place_near((43.7001, -79.4001), cities, {}) == "central Toronto"
    assert mc.place_near((43.6500, -79.3800), {}, {}) == mc.place_of_point((43.65, -79.38))
    assert mc.place_near((43.6400, -79.4200), cities, {("St_Lawrence*", "Toronto"): (43.64, -79.42)}) == (
        "St\\_Lawrence\\*, Toronto"
    )  # Markdown in a name is shown as written


# -- many listings: clusters -----------------------------------------------------------------------------------


def test_fifty_thousand_listings_are_counted_into_a_few_hundred_clusters() -> None:
    from components import map_data
    from precon.client.models import Listing

    statuses = ["Selling Now", "Pending", "Sold Out", None]
    listings = [
        Listing(
            listingId=f"L{i:05d}",
            sellingStatus=statuses[i % 4 if i % 7 else 0],
            _geoloc={"lat": 43.2 + (i * 7919 % 1000) / 1000, "lng": -80.0 + (i * 104729 % 1000) / 700},
        )
        for i in range(50_000)
    ]
    zoom = ml.zoom_for_radius(43.7, 10_000)
    points = map_data.points_of([*listings, Listing(listingId="NOWHER")], 50_001)
    rows = map_data.cluster_rows(points, 43.7, zoom)
    assert 10 < len(rows) < 2_000
    assert sum(row["count"] for row in rows) == 50_000
    assert [row["count"] for row in rows] == sorted(row["count"] for row in rows)  # the biggest drawn last
    assert all(row["label"] == f"{row['count']:,}" and row["radius"] > 0 for row in rows)
    assert {tuple(row["colour"]) for row in rows} <= {
        tuple(c) for c in [*map_data.STATUS_COLOURS.values(), map_data.OTHER_COLOUR]
    }
    assert len(json.dumps(rows)) < 400_000  # what goes to the browser stays small
    assert map_data.cluster_rows(map_data.points_of([Listing(listingId="NOWHER")], 1), 43.7, zoom) == []


def test_clusters_far_from_the_centre_are_counted_in_wider_cells() -> None:
    from components import map_data
    from precon.client.models import Listing

    listings = [  # a degree by a degree and a half around Toronto
        Listing(listingId=f"L{i}", _geoloc={"lat": 43.2 + i * 7919 % 1000 / 1000, "lng": -80 + i * 104729 % 1000 / 700})
        for i in range(50_000)
    ]  # fmt: skip
    points = map_data.points_of(listings, 50_000)
    zoom = ml.zoom_for_radius(43.7, 5_000)
    near = map_data.Near(43.7, -79.3, 20_000)
    everywhere = map_data.cluster_rows(points, 43.7, zoom)
    rows = map_data.cluster_rows(points, 43.7, zoom, near=near)
    assert sum(row["count"] for row in rows) == 50_000
    assert len(rows) < len(everywhere) / 3  # what goes to the browser on every step

    # Inside the box (less a wide cell's width at its edges), the clusters are those of the box's listings alone.
    inside = near.contains(points.lat, points.lng)
    alone = map_data.MapPoints(
        ids=[x for x, keep in zip(points.ids, inside, strict=True) if keep], names=[], cities=[], provinces=[],
        neighbourhoods=[], statuses=[s for s, keep in zip(points.statuses, inside, strict=True) if keep], prices=[],
        lat=points.lat[inside], lng=points.lng[inside], matching=0, fetched=0,
    )  # fmt: skip
    margin_m = (
        map_data.FAR_CELL_FACTOR
        * map_data.CLUSTER_CELL_PX
        * 40_075_016
        * math.cos(math.radians(43.7))
        / (512 * 2**zoom)
    )
    inner = map_data.Near(43.7, -79.3, 20_000 - margin_m)

    def core(found: list[dict[str, Any]]) -> list[tuple[float, float, int]]:
        keep = inner.contains(np.array([r["lat"] for r in found]), np.array([r["lng"] for r in found]))
        return sorted((r["lat"], r["lng"], r["count"]) for r, k in zip(found, keep, strict=True) if k)

    assert core(rows) == core(map_data.cluster_rows(alone, 43.7, zoom)) != []


@pytest.mark.usefixtures("embedded_dashboard")
def test_above_the_threshold_the_map_draws_clusters_and_below_it_the_points(monkeypatch: pytest.MonkeyPatch) -> None:
    app = open_page(PAGE, {"center": "43.65,-79.38", "radius": "10"})
    spec = deck_spec(app)
    on_map = len(layer(spec, ml.LISTINGS_LAYER)["data"])
    assert on_map > 20 and ml.CLUSTERS_LAYER not in {item["id"] for item in spec["layers"]}
    below_table = table_ids(app)

    monkeypatch.setattr(ml, "CLUSTER_THRESHOLD", 20)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    spec = deck_spec(app)
    ids = {item["id"] for item in spec["layers"]}
    assert ml.LISTINGS_LAYER not in ids and {ml.CLUSTERS_LAYER, ml.CLUSTER_LABELS_LAYER} <= ids
    clusters = layer(spec, ml.CLUSTERS_LAYER)
    assert clusters["@@type"] == "ScatterplotLayer" and clusters["pickable"] is True
    assert layer(spec, ml.CLUSTER_LABELS_LAYER)["@@type"] == "TextLayer"
    assert sum(row["count"] for row in clusters["data"]) == on_map > len(clusters["data"])
    assert table_ids(app) == below_table == service_ids_within(TORONTO, 10)  # the table lists them as before
    assert "so they are grouped" in page_text(app)

    index = max(range(len(clusters["data"])), key=lambda i: clusters["data"][i]["count"])
    row = clusters["data"][index]
    pick(app, ml.CLUSTERS_LAYER, index)
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["center"] == mc.format_centre((row["lat"], row["lng"]))
    assert table_ids(app) == service_ids_within((row["lat"], row["lng"]), 10)


# -- what a rerun sends --------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("embedded_dashboard")
def test_without_static_serving_the_outline_goes_inline(monkeypatch: pytest.MonkeyPatch) -> None:
    from components import basemap

    monkeypatch.setattr(basemap, "served", lambda: False)
    app = open_page(PAGE, {"center": "43.65,-79.38"})
    spec = deck_spec(app)
    kinds = Counter(f["properties"]["kind"] for f in layer(spec, "basemap-shapes")["data"]["features"])
    assert kinds == {"province": 13, "neighbour": 1}
    assert layer(spec, "basemap-lakes")["data"]["features"][0]["properties"]["kind"] == "lake"


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_radius_step_redraws_the_same_chart_and_sends_no_shapes() -> None:
    app = open_page(PAGE, {"center": "43.65,-79.38", "radius": "10"})
    key = app.get("deck_gl_json_chart")[0].proto.id
    for km in (3.0, 25.0, 1.0):
        app.select_slider(key=mc.W_RADIUS).set_value(km).run()
        assert not app.exception, [e.value for e in app.exception]
        chart = app.get("deck_gl_json_chart")[0]
        assert chart.proto.id == key  # the same chart, redrawn in place: the browser keeps what it drew
        # The shapes are fetched once by address, not sent on every step; the JSON is not indented.
        assert '"kind":"province"' not in chart.proto.json and not chart.proto.json.startswith("{\n")
        circle = layer(json.loads(chart.proto.json), "radius")["data"][0]["polygon"]
        assert math.isclose(mc.haversine_km(43.65, -79.38, circle[0][1], circle[0][0]), km, rel_tol=0.02)
    assert app.query_params["radius"] == "1"
