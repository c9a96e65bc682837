"""The Map page: every matching listing on an offline pydeck map, a centre set by a click, a city or ``lat,lng``, a
radius, and the listings inside the circle as the service answers ``nearby``/``radius``, nearest first."""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from components import api
from components import map_centre as mc
from components import map_layers as ml
from components.formatting import plural
from components.search_scope import SearchScope
from precon import filters
from tests.dashboard_support import (  # noqa: F401
    assert_readable_failure,
    dashboard_data,
    embedded_dashboard,
    failing_service,
    open_page,
    page_text,
)

PAGE = "views/map.py"
TORONTO = (43.65, -79.38)


# -- helpers ---------------------------------------------------------------------------------------------------


def client():
    """The embedded service's client, as the page uses it (the oracle the page is checked against)."""
    return api.connection().client


def deck_spec(app: AppTest) -> dict[str, Any]:
    charts = app.get("deck_gl_json_chart")
    assert len(charts) == 1, charts
    return json.loads(charts[0].proto.json)


def layer(spec: dict[str, Any], layer_id: str) -> dict[str, Any]:
    return next(item for item in spec["layers"] if item["id"] == layer_id)


def grid_cells(spec: dict[str, Any]) -> list[dict[str, float]]:
    """Where the browser draws each click-grid row: the layer's position expression, evaluated for the row."""
    grid = layer(spec, ml.GRID_LAYER)
    expression = grid["getPosition"].removeprefix("@@=")
    cells = []
    for row in grid["data"]:
        lng, lat = eval(expression, {"__builtins__": {}}, {"i": row["i"], "j": row["j"]})
        cells.append({"lat": lat, "lng": lng})
    return cells


def table_ids(app: AppTest) -> list[str]:
    return list(app.dataframe[0].value["id"]) if app.dataframe else []


def service_ids_within(centre: tuple[float, float], radius_km: float, **params: Any) -> list[str]:
    page = client().search_listings(nearby=centre, radius=radius_km * 1000, per_page=1000, **params)
    return [listing.id for listing in page.results]


def set_view(app: AppTest, centre: str, radius_km: float) -> AppTest:
    app.text_input(key=mc.W_CENTRE).set_value(centre)
    app.select_slider(key=mc.W_RADIUS).set_value(radius_km)
    return app.run()


def pick(app: AppTest, layer_id: str, index: int) -> AppTest:
    """A click on the map that picks row ``index`` of a layer, as the browser reports it to the page.

    AppTest has no driver for a pydeck chart, so the selection is sent as the chart's widget value (what the
    frontend sends: ``{"selection": {"indices": ..., "objects": ...}}``) with the other widgets' values.
    """
    chart = app.get("deck_gl_json_chart")[0]
    row = layer(json.loads(chart.proto.json), layer_id)["data"][index]
    states = app._tree.get_widget_states()
    state = states.widgets.add()
    state.id = chart.proto.id
    state.string_value = json.dumps({"selection": {"indices": {layer_id: [index]}, "objects": {layer_id: [row]}}})
    return app._run(states)


def chip_labels(app: AppTest) -> list[str]:
    """The labels of the filter chips (buttons keyed ``map_chip_*``)."""
    return [b.label for b in app.button if b.key and b.key.startswith("map_chip_")]


def assert_sorted_by_distance(app: AppTest, radius_km: float) -> None:
    distances = list(app.dataframe[0].value["distance_km"])
    assert distances == sorted(distances)
    assert all(d <= radius_km + 0.01 for d in distances)


# -- pure parts ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "centre"),
    [
        ("43.65,-79.38", TORONTO),
        (" 43.65, -79.38 ", TORONTO),
        ("43.65 -79.38", TORONTO),
        ("(49.2827,-123.1207)", (49.2827, -123.1207)),
    ],
)
def test_centres_are_read_from_lat_lng(text: str, centre: tuple[float, float]) -> None:
    assert mc.parse_centre(text) == centre
    assert mc.parse_centre(mc.format_centre(centre)) == centre


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "latitude,longitude"),
        ("Toronto", "not a centre"),
        ("43.65", "not a centre"),
        ("43.65,-79.38,12", "not a centre"),
        ("north,west", "must be numbers"),
        ("nan,1", "finite"),
        ("95,10", "Latitude 95 is out of range"),
        ("45,-200", "Longitude -200 is out of range"),
    ],
)
def test_bad_centres_say_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(mc.CentreError, match=says):
        mc.parse_centre(text)


def test_radius_from_a_link_is_kept_on_the_slider_scale() -> None:
    assert mc.parse_radius(None) == (10.0, None)
    assert mc.parse_radius("15") == (15.0, None)
    assert mc.parse_radius("2.7") == (2.5, None)
    assert mc.parse_radius("500")[0] == 100.0 and "between" in (mc.parse_radius("500")[1] or "")
    assert mc.parse_radius("far")[0] == 10.0 and "not a number" in (mc.parse_radius("far")[1] or "")


def test_click_grid_covers_the_circle_with_cells_about_a_tenth_of_the_radius() -> None:
    grid = ml.ClickGrid.around(*TORONTO, 10_000)
    assert 900 <= grid.size_m <= 1100  # about 1 km at city scale
    spec = json.loads(ml.CompactDeck(layers=[grid.layer()]).to_json())
    cells = grid_cells(spec)
    assert len(cells) == ml.GRID_CELLS * ml.GRID_ROWS
    assert any(math.isclose(c["lat"], 43.65) and math.isclose(c["lng"], -79.38) for c in cells)
    assert all(row["title"] == "Click to centre here" for row in layer(spec, ml.GRID_LAYER)["data"])  # the tooltip
    east = max(mc.haversine_km(*TORONTO, TORONTO[0], c["lng"]) for c in cells)
    north = max(mc.haversine_km(*TORONTO, c["lat"], TORONTO[1]) for c in cells)
    assert east > 2.4 * 10 and north > 1.4 * 10  # past the map's edges: the circle spans 80% of its height
    lats = sorted({round(c["lat"], 6) for c in cells})
    assert all(0 < b - a < 0.01 for a, b in itertools.pairwise(lats))
    for row, cell in zip(layer(spec, ml.GRID_LAYER)["data"], cells, strict=True):  # a pick lands where it's drawn
        state: dict[str, Any] = {mc.CENTRE: TORONTO, mc.RADIUS: 10.0}
        ml.apply_pick(state, {ml.GRID_LAYER: [row]})
        assert mc.haversine_km(*state[mc.CENTRE], cell["lat"], cell["lng"]) < 0.002


def test_a_pick_opens_a_card_or_moves_the_centre() -> None:
    state: dict[str, Any] = {mc.CENTRE: TORONTO, mc.CITY: "Toronto"}
    ml.apply_pick(state, {ml.LISTINGS_LAYER: [{"id": "ABC123", "lat": 1.0, "lng": 2.0}]})
    assert state[mc.SELECTED] == "ABC123" and state[mc.CENTRE] == TORONTO
    ml.apply_pick(state, {ml.GRID_LAYER: [{"lat": 43.7, "lng": -79.4}]})
    assert state[mc.CENTRE] == (43.7, -79.4) and state[mc.CITY] is None and state[mc.W_CENTRE] == "43.7, -79.4"
    assert state[mc.SELECTED] == "ABC123"  # the card stays while the centre moves
    ml.apply_pick(state, {})
    assert state[mc.SELECTED] is None


def test_listings_are_ordered_by_distance_with_unplaced_ones_last() -> None:
    from precon.models import Listing

    far = Listing(listingId="FAR001", _geoloc={"lat": 45.0, "lng": -79.0})
    near = Listing(listingId="NEAR01", _geoloc={"lat": 43.651, "lng": -79.381})
    nowhere = Listing(listingId="NOWHER")
    ordered, distances = mc.by_distance([far, nowhere, near], TORONTO)
    assert [x.id for x in ordered] == ["NEAR01", "FAR001", "NOWHER"]
    assert distances[0] is not None and distances[0] < 0.2 and distances[2] is None


def test_every_matching_listing_is_fetched_a_thousand_at_a_time_and_kept_as_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from components import map_data
    from precon.models import Listing, Page
    from tests.dashboard_support import reset_caches

    asked: list[dict[str, Any]] = []

    def search_listings(self: Any, search: str | None = None, **arguments: Any) -> Page[Listing]:
        asked.append({"search": search, "version": self.version, "province": self.province, **arguments})
        first = arguments["page"] * 1000
        count = max(0, min(1000, 2345 - first))
        results = [
            Listing(
                listingId=f"L{first + i:05d}",
                name=f"Tower {first + i}",
                sellingStatus=["Selling Now", "Pending", None][(first + i) % 3],
                _geoloc=None if (first + i) % 100 == 7 else {"lat": 43.0 + (first + i) / 1e5, "lng": -79.0},
            )
            for i in range(count)
        ]
        return Page[Listing](results=results, total=2345, page=arguments["page"], pages=3, perPage=1000)

    monkeypatch.setattr(map_data._DirectBackend, "search_listings", search_listings)
    monkeypatch.setattr(api, "connection", lambda: type("C", (), {"identity": "test"})())
    reset_caches()
    scope = SearchScope("tower", filters.eq("type", "Condo"), None, unit_level=True, unit_supported=True)
    points = map_data.matching(scope)
    assert [a["page"] for a in asked] == [0, 1, 2]
    assert all(a["per_page"] == 1000 and a["retrieve_attributes"] == list(map_data.ATTRIBUTES) for a in asked)
    assert all(a["search"] == "tower" and a["filter"] == filters.eq("type", "Condo") for a in asked)
    assert points.matching == points.fetched == 2345 and len(points) == 2345 - 24  # 24 have no position
    assert points.without_position == 24 and points.ids[:2] == ["L00000", "L00001"] and "L00007" not in points.ids
    assert points.lat.dtype.kind == "f" and math.isclose(float(points.lat[1]), 43.00001)
    assert points.status_counts == {"Selling Now": 782, "Pending": 782, "Unknown": 781}
    assert map_data.matching(scope).digest == points.digest and len(asked) == 3  # the second time from the cache
    reset_caches()


# -- the page --------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("embedded_dashboard")
def test_every_listing_on_an_offline_map_around_the_biggest_city() -> None:
    app = open_page(PAGE)
    assert not app.exception, [e.value for e in app.exception]

    spec = deck_spec(app)
    # No basemap: pydeck's default style, which Streamlit reads as "none" (an absent one would fetch Carto's).
    assert "mapProvider" not in spec and spec["mapStyle"] == "__MAP_STYLE__"
    everything = client().search_listings(per_page=1000, retrieve_attributes=["_geoloc"])
    points = layer(spec, ml.LISTINGS_LAYER)
    assert points["@@type"] == "ScatterplotLayer" and points["pickable"] is True
    assert len(points["data"]) == sum(1 for x in everything.results if x.geoloc is not None) > 0
    assert {row["colour"][:3] == [42, 157, 143] for row in points["data"] if "Selling Now" in row["detail"]} == {True}
    assert layer(spec, ml.GRID_LAYER)["pickable"] is True
    assert layer(spec, "radius")["@@type"] == "PolygonLayer"
    assert layer(spec, "centre")

    biggest = client().facet_counts(["cityOrDistrict"])["cityOrDistrict"]
    city = max(biggest, key=lambda name: biggest[name])
    assert app.query_params["near"] == city and "city" not in app.query_params  # `city` is the shared city filter
    assert app.query_params["radius"] == "10"
    centre = mc.parse_centre(app.query_params["center"])
    assert f"within 10 km of {city}" in page_text(app)
    assert table_ids(app) == service_ids_within(centre, 10)
    assert "Selling Now" in page_text(app) and "Click the map" in page_text(app)  # legend and how-to

    app.toggle(key=mc.W_BASEMAP).set_value(True).run()
    assert deck_spec(app)["mapProvider"] == "carto" and app.query_params["basemap"] == "1"
    assert not app.exception and table_ids(app) == service_ids_within(centre, 10)


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_typed_centre_and_radius_list_the_services_answer_nearest_first() -> None:
    app = set_view(open_page(PAGE), "43.65, -79.38", 25.0)
    assert not app.exception, [e.value for e in app.exception]
    expected = service_ids_within(TORONTO, 25)
    assert expected and table_ids(app) == expected
    assert_sorted_by_distance(app, 25)
    assert f"{len(expected)} listings within 25 km of " in page_text(app)
    assert "43.6500, -79.3800" not in page_text(app)  # the heading names the nearest city, not the coordinates
    assert app.query_params["center"] == "43.65,-79.38" and app.query_params["radius"] == "25"
    assert "near" not in app.query_params
    spec = deck_spec(app)
    assert layer(spec, "centre")["data"] == [{"lat": 43.65, "lng": -79.38}]
    assert spec["initialViewState"]["latitude"] == 43.65


@pytest.mark.usefixtures("embedded_dashboard")
def test_the_table_holds_the_nearest_few_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mc, "NEARBY_LIMIT", 7)
    app = set_view(open_page(PAGE), "43.65, -79.38", 25.0)
    expected = service_ids_within(TORONTO, 25)
    assert len(expected) > 7 and table_ids(app) == expected[:7]
    assert f"{len(expected)} listings within 25 km of " in page_text(app)
    assert "Showing the 7 nearest, by distance." in page_text(app)


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_link_reopens_the_same_view() -> None:
    first = set_view(open_page(PAGE, {"selling": "Selling Now", "type": "Condo,Townhouse"}), "43.7,-79.42", 5.0)
    link = dict(first.query_params)
    assert link["center"] == "43.7,-79.42" and link["radius"] == "5"
    assert link["selling"] == "Selling Now" and link["type"] == "Condo,Townhouse"  # as the Search page writes them

    again = open_page(PAGE, link)
    assert not again.exception, [e.value for e in again.exception]
    chosen = filters.and_(filters.any_of("type", ["Condo", "Townhouse"]), filters.eq("sellingStatus", "Selling Now"))
    assert table_ids(again) == table_ids(first) == service_ids_within((43.7, -79.42), 5, filter=chosen)
    assert table_ids(again)
    assert again.text_input(key=mc.W_CENTRE).value == "43.7, -79.42"
    assert again.select_slider(key=mc.W_RADIUS).value == 5
    assert "Selling status: Selling Now" in chip_labels(again)
    assert {"Type: Condo", "Type: Townhouse"} <= set(chip_labels(again))
    shown = layer(deck_spec(again), ml.LISTINGS_LAYER)["data"]
    assert shown and all("Selling Now" in row["detail"] for row in shown)
    everywhere = client().search_listings(filter=chosen, per_page=0).total
    assert len(shown) == everywhere


@pytest.mark.usefixtures("embedded_dashboard")
def test_choosing_a_city_moves_the_centre_to_its_listings() -> None:
    app = open_page(PAGE, {"center": "43.65,-79.38"})
    counts = client().facet_counts(["cityOrDistrict"])["cityOrDistrict"]
    city = sorted(counts, key=lambda name: (-counts[name], name))[1]
    app.selectbox(key=mc.W_CITY).set_value(city).run()
    assert not app.exception, [e.value for e in app.exception]

    located = client().search_listings(filter=filters.eq("cityOrDistrict", city), per_page=1000).results
    by_province: dict[str, list[tuple[float, float]]] = {}
    for x in located:
        if x.geoloc is not None:
            by_province.setdefault(x.state or "", []).append((x.geoloc.lat, x.geoloc.lng))
    points = max(by_province.values(), key=len)
    mean = (sum(p[0] for p in points) / len(points), sum(p[1] for p in points) / len(points))
    centre = mc.parse_centre(app.query_params["center"])
    assert math.isclose(centre[0], mean[0], abs_tol=1e-4) and math.isclose(centre[1], mean[1], abs_tol=1e-4)
    assert app.query_params["near"] == city and "city" not in app.query_params
    assert f"within 10 km of {city}" in page_text(app)
    assert table_ids(app) == service_ids_within(centre, 10)


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_bad_centre_is_an_inline_message_and_the_view_stays() -> None:
    app = set_view(open_page(PAGE), "43.65,-79.38", 10.0)
    before = table_ids(app)
    app.text_input(key=mc.W_CENTRE).set_value("Toronto downtown").run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("not a centre" in e.value and "43.65,-79.38" in e.value for e in app.error)
    assert app.query_params["center"] == "43.65,-79.38" and table_ids(app) == before

    app.text_input(key=mc.W_CENTRE).set_value("95, 10").run()
    assert any("Latitude 95 is out of range" in e.value for e in app.error)
    app.text_input(key=mc.W_CENTRE).set_value("43.66,-79.39").run()
    assert not app.error and app.query_params["center"] == "43.66,-79.39"

    linked = open_page(PAGE, {"center": "here", "radius": "far"})
    assert not linked.exception, [e.value for e in linked.exception]
    assert any("The link's centre is not usable" in e.value for e in linked.error)
    assert any("not a number of kilometres" in w.value for w in linked.warning)
    assert table_ids(linked)  # the page still shows the default view


@pytest.mark.usefixtures("embedded_dashboard")
def test_clicking_the_map_moves_the_centre_and_clicking_a_listing_opens_its_card() -> None:
    app = open_page(PAGE, {"center": "43.65,-79.38", "radius": "10"})
    grid = grid_cells(deck_spec(app))
    index = next(i for i, row in enumerate(grid) if row["lat"] > 43.69 and row["lng"] > -79.35)
    cell = dict(zip(("lat", "lng"), mc.rounded((grid[index]["lat"], grid[index]["lng"])), strict=True))
    pick(app, ml.GRID_LAYER, index)
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["center"] == mc.format_centre((cell["lat"], cell["lng"]))
    assert app.text_input(key=mc.W_CENTRE).value == mc.format_centre((cell["lat"], cell["lng"]), ", ")
    assert table_ids(app) == service_ids_within((cell["lat"], cell["lng"]), 10)
    assert layer(deck_spec(app), "centre")["data"] == [{"lat": cell["lat"], "lng": cell["lng"]}]

    points = layer(deck_spec(app), ml.LISTINGS_LAYER)["data"]
    pick(app, ml.LISTINGS_LAYER, 0)
    assert not app.exception, [e.value for e in app.exception]
    assert points[0]["title"] in page_text(app)
    links = app.get("page_link")
    assert any(
        link.proto.label == "Open listing" and f"id={points[0]['id']}" in link.proto.query_string for link in links
    )
    assert app.query_params["center"] == mc.format_centre((cell["lat"], cell["lng"]))  # the centre stays

    app.button(key="map_centre_here").click().run()
    assert app.query_params["center"] == mc.format_centre((points[0]["lat"], points[0]["lng"]))
    assert table_ids(app)[0] == points[0]["id"]  # the listing itself, 0 km away
    app.button(key="map_close_card").click().run()
    assert not [link for link in app.get("page_link") if link.proto.label == "Open listing"]
    assert points[0]["title"] not in page_text(app)


@pytest.mark.parametrize(
    ("status", "says"),
    [(403, "Access refused"), (500, "The listings service failed"), (None, "cannot be reached")],
)
def test_a_failing_service_is_a_readable_message(
    status: int | None, says: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with failing_service(status, monkeypatch):
        app = open_page(PAGE, {"center": "43.65,-79.38"})
        assert_readable_failure(app, says)
        assert not app.get("deck_gl_json_chart")


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
    from precon.models import Listing

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
    from precon.models import Listing

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
