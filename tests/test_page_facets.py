"""The facets page under AppTest: its charts against the client's counts, its URL state, and its failures."""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest

from components.api import connection
from precon import filters
from precon.client import Client
from tests.dashboard_support import (  # noqa: F401
    assert_readable_failure,
    dashboard_data,
    embedded_dashboard,
    failing_service,
    open_page,
    page_text,
)

FACETS = "views/facets.py"
PRICE_ATTRIBUTES = ["startPrice", "cityOrDistrict", "averagePricePerSqFeet"]


def chart_data(app: AppTest) -> dict[str, pd.DataFrame]:
    """Each Altair chart's data, by the chart's title."""
    assert not app.exception, [e.value for e in app.exception]
    found = {}
    for chart in app.get("vega_lite_chart"):
        title = json.loads(chart.proto.spec).get("title", {})
        found[title.get("text") if isinstance(title, dict) else title] = convert_arrow_bytes_to_pandas_df(
            chart.proto.datasets[0].data.data
        )
    return found


def counts(frame: pd.DataFrame, key: str = "value") -> dict[str, int]:
    return {value: int(count) for value, count in zip(frame[key], frame["count"], strict=True) if count}


def ranked(facet_counts: dict[str, int], top: int) -> list[str]:
    """The values a chart of the top ``top`` shows: highest count first, ties by value."""
    return [value for value, _ in sorted(facet_counts.items(), key=lambda item: (-item[1], item[0].casefold()))][:top]


def client() -> Client:
    return connection().client


@pytest.mark.usefixtures("embedded_dashboard")
def test_facets_charts_filters_and_cross_tab() -> None:
    app = open_page(FACETS)
    shown = chart_data(app)
    everything = client().facet_counts(["sellingStatus", "type", "cityOrDistrict", "builders"])
    assert counts(shown["Selling status"]) == everything["sellingStatus"]
    assert list(shown["City or district"]["value"]) == ranked(everything["cityOrDistrict"], 15)

    chosen = ["type", "builders", "amenities", "completionYear", "hasParking"]
    app.multiselect(key="facet").set_value(chosen)
    app.slider(key="top").set_value(100)
    app.run()
    shown = chart_data(app)
    expected = client().facet_counts(chosen)
    for facet, title in zip(chosen, ["Type", "Builders", "Amenities", "Completion year", "Has parking"], strict=True):
        frame = shown[title]
        assert counts(frame) == expected[facet], facet
        assert list(frame["count"]) == sorted(frame["count"], reverse=True), facet
    builders = client().search_profiles(collection="Builders", per_page=1000).results
    names = {profile.path: profile.name for profile in builders}
    assert list(shown["Builders"]["label"]) == [names[path] for path in shown["Builders"]["value"]]
    assert set(shown["Has parking"]["label"]) <= {"Yes", "No"}

    app.pills(key="facets_pick_selling").set_value(["Sold Out"]).run()
    assert app.query_params["selling"] == "Sold Out"  # the shared filters' parameter, plain value
    sold_out = filters.any_of("sellingStatus", ["Sold Out"])
    shown = chart_data(app)
    filtered = client().facet_counts(chosen, filter=sold_out)
    assert counts(shown["Type"]) == filtered["type"] != expected["type"]
    assert counts(shown["Amenities"]) == filtered["amenities"]
    assert f"**{client().search_listings(per_page=0, filter=sold_out).total:,}** listings in view" in page_text(app)

    # Selling status by city, under the filter: one facet count of the column per top row value.
    heat = shown["Selling status by city or district"]
    cities = ranked(client().facet_counts(["cityOrDistrict"], filter=sold_out)["cityOrDistrict"], 15)
    assert list(dict.fromkeys(heat["row_value"])) == cities
    for city in cities:
        per_city = client().facet_counts(
            ["sellingStatus"], filter=filters.and_(filters.eq("cityOrDistrict", city), sold_out)
        )["sellingStatus"]
        assert counts(heat[heat["row_value"] == city], "column_value") == per_city, city

    app.button(key="facets_chip_selling_" + hashlib.sha1(b"Sold Out").hexdigest()[:10]).click().run()
    assert "selling" not in app.query_params and app.pills(key="facets_pick_selling").value == []
    app.selectbox(key="rows").set_value("type")
    app.selectbox(key="cols").set_value("exposures")
    app.run()
    heat = chart_data(app)["Exposures by type"]
    types = client().facet_counts(["type"])["type"]
    assert list(dict.fromkeys(heat["row_value"])) == ranked(types, 15)
    for kind in types:
        per_type = client().facet_counts(["exposures"], filter=filters.eq("type", kind))["exposures"]
        assert counts(heat[heat["row_value"] == kind], "column_value") == per_type, kind
    (table,) = app.dataframe
    assert list(table.value["All listings"]) == [types[kind] for kind in ranked(types, 15)]
    for kind in types:
        assert (
            table.value.loc[kind, "N"]
            == heat[(heat["row_value"] == kind) & (heat["column_value"] == "N")]["count"].sum()
        )


@pytest.mark.usefixtures("embedded_dashboard")
def test_the_url_reopens_the_view() -> None:
    query = {
        "facet": ["Exposures", "Type", "No such facet"],
        "top": "5",
        "selling": ["Selling Now"],
        "city": ["Toronto"],
        "rows": "Type",
        "cols": "Construction status",
        "bins": "12",
        "min_listings": "2",
    }
    app = open_page(FACETS, query)
    assert app.multiselect(key="facet").value == ["exposures", "type"]
    assert app.slider(key="top").value == 5
    assert app.pills(key="facets_pick_selling").value == ["Selling Now"]
    assert app.multiselect(key="facets_pick_city").value == ["Toronto"]
    assert app.pills(key="facets_pick_type").value == []
    assert (app.selectbox(key="rows").value, app.selectbox(key="cols").value) == ("type", "constructionStatus")
    assert (app.slider(key="bins").value, app.slider(key="min_listings").value) == (12, 2)

    shown = chart_data(app)
    assert set(shown) >= {"Exposures", "Type", "Construction status by type"}
    selection = filters.from_selection({"sellingStatus": ["Selling Now"], "cityOrDistrict": ["Toronto"]})
    expected = client().facet_counts(["type", "exposures"], filter=selection)
    assert list(shown["Type"]["value"]) == ranked(expected["type"], 5)
    assert counts(shown["Type"]) == {value: expected["type"][value] for value in ranked(expected["type"], 5)}
    assert counts(shown["Exposures"]) == {
        value: expected["exposures"][value] for value in ranked(expected["exposures"], 5)
    }
    assert app.query_params["facet"] == ["Exposures", "Type"]  # what is not offered is dropped from the link


@pytest.mark.usefixtures("embedded_dashboard")
def test_prices_are_a_pandas_reading_of_the_listings() -> None:
    app = open_page(FACETS, {"min_listings": "3"})
    shown = chart_data(app)
    listings = client().iter_listings(per_page=1000, retrieve_attributes=PRICE_ATTRIBUTES)
    frame = pd.DataFrame([listing.model_dump(include=set(PRICE_ATTRIBUTES)) for listing in listings])

    priced = frame[frame["averagePricePerSqFeet"] > 0]
    by_city = priced.groupby("cityOrDistrict")["averagePricePerSqFeet"].agg(["median", "size"])
    by_city = by_city[by_city["size"] >= 3].sort_values("median", ascending=False).head(40)
    chart = shown["Median price per square foot by city"]
    assert dict(zip(chart["value"], chart["median"], strict=True)) == pytest.approx(by_city["median"].to_dict())
    assert dict(zip(chart["value"], chart["listings"], strict=True)) == by_city["size"].to_dict()
    assert list(chart["median"]) == sorted(chart["median"], reverse=True)

    prices = frame["startPrice"][frame["startPrice"] > 0]
    histogram = shown["Distribution of start prices"]
    assert histogram["count"].sum() == len(prices)
    assert (histogram["start"] <= prices.min()).any() and (histogram["end"] > prices.max()).any()
    assert {m.label: m.value for m in app.metric}["Median start price"] == f"${prices.median():,.0f}"


@pytest.mark.usefixtures("embedded_dashboard")
def test_empty_results_say_why() -> None:
    service = client()
    cities = service.facet_counts(["cityOrDistrict"])["cityOrDistrict"]
    city = next(
        city
        for city in cities
        if "Sold Out"
        not in service.facet_counts(["sellingStatus"], filter=filters.eq("cityOrDistrict", city))["sellingStatus"]
    )
    app = open_page(FACETS, {"city": [city], "selling": ["Sold Out"]})
    assert not app.exception
    assert f"No listing in any province has selling status Sold Out and city or district {city}" in page_text(app)
    assert not app.get("vega_lite_chart")

    app = open_page(FACETS, {"facet": "", "min_listings": "50"})
    text = page_text(app)
    assert "Choose one or more facets" in text
    assert "No city has 50 or more listings with a price per square foot" in text


@pytest.mark.usefixtures("embedded_dashboard")
def test_facets_in_every_version() -> None:
    for version, province in [("v1-lite", "all"), ("v1-sandbox", "all"), ("v1", "pe")]:
        app = open_page(FACETS, {"version": version, "province": province, "facet": ["Type", "Builders"]})
        shown = chart_data(app)
        expected = client().facet_counts(["type", "builders"], version=version, province=province)
        assert counts(shown["Type"]) == expected["type"], (version, province)
        builders = shown["Builders"]  # the top 15; ties at the cut go by name, so check the counts
        assert all(expected["builders"][value] == count for value, count in counts(builders).items())
        assert list(builders["count"]) == sorted(expected["builders"].values(), reverse=True)[:15]


@pytest.mark.parametrize(
    ("status", "shown"),
    [(403, "Access refused"), (500, "The listings service failed"), (None, "cannot be reached")],
)
def test_facets_failures_are_readable(status: int | None, shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with failing_service(status, monkeypatch):
        app = open_page(FACETS, {"facet": ["Type", "Builders"]})
        assert_readable_failure(app, shown)
        assert not app.get("vega_lite_chart")
