"""The home page under AppTest: its numbers against the client's, and its failures as a user sees them."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.dataframe_util import convert_arrow_bytes_to_pandas_df
from streamlit.testing.v1 import AppTest
from streamlit.util import calc_hash

from components.api import connection
from precon.client.models import PROVINCES
from tests.dashboard_support import (  # noqa: F401
    APP,
    TIMEOUT_S,
    assert_readable_failure,
    dashboard_data,
    embedded_dashboard,
    failing_service,
    open_page,
    page_text,
)

HOME = "views/home.py"


def chart_data(app: AppTest) -> dict[str, pd.DataFrame]:
    """Each Altair chart's data, by the chart's title."""
    found = {}
    for chart in app.get("vega_lite_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec.get("title", {})
        found[title.get("text") if isinstance(title, dict) else title] = convert_arrow_bytes_to_pandas_df(
            chart.proto.datasets[0].data.data
        )
    return found


def counts(frame: pd.DataFrame) -> dict[str, int]:
    return {value: int(count) for value, count in zip(frame["value"], frame["count"], strict=True) if count}


@pytest.mark.usefixtures("embedded_dashboard")
def test_home_numbers_are_the_services() -> None:
    app = open_page(HOME)
    assert not app.exception, [e.value for e in app.exception]
    client = connection().client
    expected = client.facet_counts(["state", "sellingStatus"])
    total = client.search_listings(per_page=0).total

    charts = chart_data(app)
    provinces = charts["Listings by province"]
    assert counts(provinces) == expected["state"]
    assert set(provinces["value"]) == set(PROVINCES.values())  # all ten, with province "all"
    assert list(provinces["count"]) == sorted(provinces["count"], reverse=True)
    assert counts(charts["Listings by selling status"]) == expected["sellingStatus"]

    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Listings"] == f"{total:,}"
    assert metrics["Selling now"] == f"{expected['sellingStatus']['Selling Now']:,}"
    listings = list(client.iter_listings(per_page=1000, retrieve_attributes=["startPrice", "updatedAt", "name"]))
    prices = pd.Series([listing.startPrice for listing in listings], dtype=float)
    assert metrics["Median start price"] == f"${prices[prices > 0].median():,.0f}"

    trending, recent = app.dataframe
    names = list(trending.value["name"])
    assert names == [listing.name for listing in client.trending_listings(per_page=10).results]
    newest = sorted(listings, key=lambda listing: listing.updatedAt, reverse=True)[:10]
    assert list(recent.value["name"]) == [listing.name for listing in newest]
    assert list(recent.value["updated"]) == [listing.updatedAt.date() for listing in newest]


@pytest.mark.usefixtures("embedded_dashboard")
def test_home_in_one_province() -> None:
    app = open_page(HOME, {"province": "on"})
    assert not app.exception, [e.value for e in app.exception]
    client = connection().client
    expected = client.facet_counts(["state", "sellingStatus"], province="on")
    charts = chart_data(app)
    assert counts(charts["Listings by province"]) == expected["state"] == {"Ontario": expected["state"]["Ontario"]}
    assert counts(charts["Listings by selling status"]) == expected["sellingStatus"]
    assert "Only Ontario is in view" in page_text(app)


@pytest.mark.usefixtures("embedded_dashboard")
def test_home_in_every_version() -> None:
    for version, province in [("v1-lite", "all"), ("v1-sandbox", "all"), ("v1-sandbox", "pe")]:
        app = open_page(HOME, {"version": version, "province": province})
        assert not app.exception, (version, province, [e.value for e in app.exception])
        expected = connection().client.facet_counts(["state", "sellingStatus"], version=version, province=province)
        charts = chart_data(app)
        assert counts(charts["Listings by province"]) == expected["state"], (version, province)
        assert counts(charts["Listings by selling status"]) == expected["sellingStatus"], (version, province)
        assert len(app.dataframe) == 2


@pytest.mark.parametrize(
    ("status", "shown"),
    [(403, "Access refused"), (500, "The listings service failed"), (None, "cannot be reached")],
)
def test_home_failures_are_readable(status: int | None, shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with failing_service(status, monkeypatch):
        app = open_page(HOME)
        assert_readable_failure(app, shown)
        assert not app.get("vega_lite_chart")


@pytest.mark.usefixtures("embedded_dashboard")
@pytest.mark.parametrize("province", ["all", "on"])
def test_home_counts_are_exact(province: str) -> None:
    app = open_page(HOME, {"province": province})
    assert not app.exception, [e.value for e in app.exception]
    client = connection().client
    builders = client.search_profiles(collection="Builders", per_page=0, province=province).total
    cities = client.search_facet_values("cityOrDistrict", max_hits=1, province=province).total
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Builders"] == f"{builders:,}"
    assert metrics["Cities"] == f"{cities:,}"
    assert "+" not in metrics["Builders"] + metrics["Cities"]


@pytest.mark.usefixtures("embedded_dashboard")
def test_home_search_box_opens_search_with_the_words() -> None:
    app = open_page(HOME)
    app.text_input(key="home_search").input("king west")
    app = app.button[[b.label for b in app.button].index("Search")].click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["q"] == "king west"
    assert "Search listings" in [t.value for t in app.title]
    client = connection().client
    assert f"{client.search_listings('king west', per_page=0).total:,}" in page_text(app)


@pytest.mark.usefixtures("embedded_dashboard")
def test_home_at_its_own_address() -> None:
    """``/home`` opens Home (the default page, at ``/``), not "Page not found"."""
    app = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    app.run()
    app._page_hash = calc_hash("home")  # what the browser asks for at /home
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert "Precon Explorer" in [t.value for t in app.title]
    assert {metric.label for metric in app.metric} >= {"Listings", "Builders", "Cities"}
