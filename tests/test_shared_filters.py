"""One filter state across the Search, Map and Facets pages: what Search's address names is what the Map shows and
the Facets page counts (checked against the service through the client), chips remove filters to clean addresses,
and moving between the pages keeps the filters."""

from __future__ import annotations

import inspect
import json
import re
from typing import Any

import pandas as pd
import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from components import api, filter_chips
from components import map_centre as mc
from components import map_layers as ml
from precon.client import Client
from precon.dashboard.filter_state import PARAMS, FilterState
from tests.dashboard_support import (  # noqa: F401
    dashboard_data,
    embedded_dashboard,
    open_page,
    page_text,
)

SEARCH, MAP, FACETS = "views/search.py", "views/map.py", "views/facets.py"
FACETS_ONLY = {"type": "Condo,Townhouse", "selling": "Selling Now"}
WITH_UNITS = {"type": "Condo", "selling": "Selling Now", "beds": "2..", "price": "..800000"}
UNIT_FILTER_LANDED = "unit_filter" in inspect.signature(Client.search_listings).parameters
needs_unit_filter = pytest.mark.skipif(
    not UNIT_FILTER_LANDED, reason="the client's unit_filter= keyword has not landed yet"
)


def client() -> Client:
    return api.connection().client


def state_of(params: dict[str, str]) -> FilterState:
    state, problems = FilterState.from_params(params)
    assert not problems, problems
    return state


def service_search(state: FilterState, **params: Any) -> Any:
    """The service's answer for these filters, asked directly through the client (the oracle)."""
    unit = state.unit_expression()
    extra = {"unit_filter": unit} if unit is not None else {}
    return client().search_listings(
        state.text or None, filter=state.listing_expression(), **{"per_page": 1000, **extra, **params}
    )


def service_facets(state: FilterState, names: list[str]) -> dict[str, dict[str, int]]:
    unit = state.unit_expression()
    extra = {"unit_filter": unit} if unit is not None else {}
    return client().facet_counts(names, filter=state.listing_expression(), search=state.text or None, **extra)


def map_points(app: AppTest) -> list[dict[str, Any]]:
    assert not app.exception, [e.value for e in app.exception]
    (chart,) = app.get("deck_gl_json_chart")
    spec = json.loads(chart.proto.json)
    return next(layer for layer in spec["layers"] if layer["id"] == ml.LISTINGS_LAYER)["data"]


def matching_note(app: AppTest) -> tuple[int, int]:
    """The map's "N of M matching listings on the map"."""
    found = re.search(r"([\d,]+) of ([\d,]+) matching listings on the map", page_text(app))
    assert found, page_text(app)
    return int(found[1].replace(",", "")), int(found[2].replace(",", ""))


def chart_counts(app: AppTest, title: str) -> dict[str, int]:
    assert not app.exception, [e.value for e in app.exception]
    for chart in app.get("vega_lite_chart"):
        heading = json.loads(chart.proto.spec).get("title", {})
        if (heading.get("text") if isinstance(heading, dict) else heading) == title:
            frame: pd.DataFrame = convert_arrow_bytes_to_pandas_df(chart.proto.datasets[0].data.data)
            return {v: int(c) for v, c in zip(frame["value"], frame["count"], strict=True) if c}
    raise AssertionError(f"no chart titled {title!r}")


def in_view(app: AppTest) -> int:
    found = re.search(r"\*\*([\d,]+)\*\* listings? in view", page_text(app))
    assert found, page_text(app)
    return int(found[1].replace(",", ""))


def filter_params(app: AppTest) -> dict[str, str]:
    return {name: value for name, value in app.query_params.items() if name in PARAMS}


def navigate(app: AppTest, page: str) -> AppTest:
    """Another page chosen in the navigation: Streamlit empties the address, the session stays."""
    app.query_params.clear()
    app.switch_page(page)
    return app.run()


def assert_map_shows(app: AppTest, state: FilterState) -> None:
    expected = service_search(state, retrieve_attributes=["_geoloc"])
    assert {row["id"] for row in map_points(app)} == {x.id for x in expected.results if x.geoloc is not None}
    assert matching_note(app)[1] == expected.total


def assert_facets_count(app: AppTest, state: FilterState) -> None:
    expected = service_facets(state, ["sellingStatus", "type", "cityOrDistrict"])
    assert in_view(app) == service_search(state, per_page=0).total
    assert chart_counts(app, "Selling status") == expected["sellingStatus"]
    assert chart_counts(app, "Type") == expected["type"]


# -- Search's address on the Map and on Facets -----------------------------------------------------------------


@pytest.mark.usefixtures("embedded_dashboard")
@pytest.mark.parametrize(
    "params", [FACETS_ONLY, pytest.param(WITH_UNITS, marks=needs_unit_filter)], ids=["facets", "units"]
)
def test_the_map_shows_what_the_service_answers_for_the_same_filters(params: dict[str, str]) -> None:
    state = state_of(params)
    app = open_page(MAP, {**params, "center": "43.65,-79.38", "radius": "15"})
    assert_map_shows(app, state)
    inside = service_search(state, nearby=(43.65, -79.38), radius=15_000)
    assert list(app.dataframe[0].value["id"]) == [x.id for x in inside.results]
    assert filter_params(app) == state.to_params()  # the address keeps the filters, as Search wrote them
    assert "city" not in app.query_params  # the map's centre city is `near`, not the city filter


@pytest.mark.usefixtures("embedded_dashboard")
@pytest.mark.parametrize(
    "params", [FACETS_ONLY, pytest.param(WITH_UNITS, marks=needs_unit_filter)], ids=["facets", "units"]
)
def test_facets_counts_what_the_service_counts_for_the_same_filters(params: dict[str, str]) -> None:
    state = state_of(params)
    app = open_page(FACETS, {**params, "facet": ["Selling status", "Type", "City or district"], "top": "100"})
    assert_facets_count(app, state)
    cities = service_facets(state, ["cityOrDistrict"])["cityOrDistrict"]
    assert chart_counts(app, "City or district") == cities


@pytest.mark.usefixtures("embedded_dashboard")
@needs_unit_filter
def test_where_the_service_cannot_filter_floor_plans_the_pages_check_them_and_agree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(api, "unit_filter_supported", lambda: False)
    state = state_of(WITH_UNITS)
    app = open_page(MAP, WITH_UNITS)
    assert_map_shows(app, state)
    assert any("checked them itself" in c.value for c in app.caption)
    facets = open_page(FACETS, {**WITH_UNITS, "facet": ["Selling status", "Type"], "top": "100"})
    assert_facets_count(facets, state)
    assert any("checked them itself" in c.value for c in facets.caption)


# -- chips -----------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("embedded_dashboard")
def test_removing_a_chip_on_the_map_leaves_a_clean_address_and_updates_the_count() -> None:
    app = open_page(MAP, {"type": "Condo,Townhouse", "selling": "Selling Now", "q": "park"})
    labels = [b.label for b in app.button if b.key and b.key.startswith("map_chip_")]
    assert labels == ["Type: Condo", "Type: Townhouse", "Selling status: Selling Now"]  # the words have their box
    assert app.text_input(key=mc.W_SEARCH).value == "park"

    app.button(key=filter_chips.chip_key("map", "type", "Townhouse")).click().run()
    assert filter_params(app) == {"q": "park", "type": "Condo", "selling": "Selling Now"}
    left = state_of(filter_params(app))
    assert_map_shows(app, left)
    for value in app.query_params.values():  # values only: no label, no count
        for text in value if isinstance(value, list) else [value]:
            assert ":" not in text and not re.search(r"\(\d[\d,]*\)", text), text

    app.button(key=filter_chips.chip_key("map", "selling", "Selling Now")).click().run()
    assert filter_params(app) == {"q": "park", "type": "Condo"}
    assert_map_shows(app, state_of(filter_params(app)))

    app.text_input(key=mc.W_SEARCH).set_value("").run()
    assert filter_params(app) == {"type": "Condo"}
    app.button(key=filter_chips.clear_key("map")).click().run()
    assert filter_params(app) == {}
    assert_map_shows(app, FilterState())
    assert "No filters" in page_text(app)


@pytest.mark.usefixtures("embedded_dashboard")
def test_facets_chips_pills_and_links_carry_the_same_values() -> None:
    app = open_page(FACETS, {"selling": "Selling Now", "q": "park", "facet": ["Selling status", "Type"]})
    app.pills(key="facets_pick_type").set_value(["Condo"]).run()
    assert filter_params(app) == {"q": "park", "type": "Condo", "selling": "Selling Now"}
    assert_facets_count(app, state_of(filter_params(app)))
    links = {link.proto.label: link.proto.query_string for link in app.get("page_link")}
    for label in ("Edit filters on Search", "Show on the map"):
        assert "type=Condo" in links[label] and "selling=Selling+Now" in links[label] and "q=park" in links[label]

    app.button(key=filter_chips.chip_key("facets", "q")).click().run()
    assert filter_params(app) == {"type": "Condo", "selling": "Selling Now"}
    app.button(key=filter_chips.clear_key("facets")).click().run()
    assert filter_params(app) == {}
    assert in_view(app) == client().search_listings(per_page=0).total


# -- between the pages -----------------------------------------------------------------------------------------


@pytest.mark.usefixtures("embedded_dashboard")
def test_search_map_facets_and_back_keep_the_filters() -> None:
    params = {"type": "Condo", "selling": "Selling Now", "year": "2020.."}
    state = state_of(params)
    app = open_page(SEARCH, params)
    assert not app.exception, [e.value for e in app.exception]
    assert filter_params(app) == state.to_params()

    navigate(app, MAP)
    assert filter_params(app) == state.to_params()
    assert_map_shows(app, state)

    app.button(key=filter_chips.chip_key("map", "type", "Condo")).click().run()
    narrowed = state.without("type")
    assert filter_params(app) == narrowed.to_params()

    navigate(app, FACETS)
    assert not app.exception, [e.value for e in app.exception]
    assert filter_params(app) == narrowed.to_params()
    assert in_view(app) == service_search(narrowed, per_page=0).total
    app.pills(key="facets_pick_construction").set_value(["Pre Construction"]).run()
    final = narrowed.with_value("construction", "Pre Construction")
    assert filter_params(app) == final.to_params()

    navigate(app, SEARCH)
    assert not app.exception, [e.value for e in app.exception]
    assert filter_params(app) == final.to_params()

    navigate(app, MAP)
    assert filter_params(app) == final.to_params()
    assert_map_shows(app, final)


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_page_opened_with_no_filters_and_no_session_shows_everything() -> None:
    everything = client().search_listings(per_page=1000, retrieve_attributes=["_geoloc"])
    app = open_page(MAP)
    assert filter_params(app) == {}
    assert matching_note(app)[1] == everything.total
    assert len(map_points(app)) == sum(1 for x in everything.results if x.geoloc is not None)

    facets = open_page(FACETS)
    assert filter_params(facets) == {}
    assert in_view(facets) == everything.total
    assert chart_counts(facets, "Selling status") == client().facet_counts(["sellingStatus"])["sellingStatus"]
