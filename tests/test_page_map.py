"""The Map page: every matching listing on an offline pydeck map, a centre set by a click, a city or ``lat,lng``, a
radius, and the listings inside the circle as the service answers ``nearby``/``radius``, nearest first."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest

from components import api
from components import map_centre as mc
from components import map_layers as ml
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
from tests.map_support import (
    PAGE,
    TORONTO,
    assert_sorted_by_distance,
    chip_labels,
    client,
    deck_spec,
    grid_cells,
    layer,
    pick,
    service_ids_within,
    set_view,
    table_ids,
)

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
    from precon.client.models import Listing

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
    from precon.client.models import Listing, Page
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
