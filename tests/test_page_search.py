"""The search page under AppTest, against the embedded service: every number shown is checked against the client's
own answer, and the whole view must come back from its address."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from components import url_state
from components.api import connection
from components.filter_panel import Selection
from components.result_cards import card_html, highlight_runs, runs_html
from precon import filters
from precon.models import Listing
from tests.dashboard_support import (  # noqa: F401
    assert_readable_failure,
    dashboard_data,
    embedded_dashboard,
    failing_service,
    open_page,
    page_text,
)

SEARCH = "views/search.py"


# -- reading the page ---------------------------------------------------------------------------------------------


def shown_total(app: AppTest) -> int:
    for markdown in app.markdown:
        found = re.match(r"\*\*([\d,]+) results?\*\*", markdown.value)
        if found:
            return int(found.group(1).replace(",", ""))
    raise AssertionError(f"no result count on the page:\n{page_text(app)}")


def shown_ids(app: AppTest) -> list[str]:
    """The listing ids of the table's rows, in order (the name column links to ``./listing?id=<id>#<name>``)."""
    assert app.dataframe, "no table on the page"
    return [re.search(r"id=([^#&]+)", link).group(1) for link in app.dataframe[0].value["name"]]  # type: ignore[union-attr]


def chips(app: AppTest) -> list[str]:
    return [b.label for b in app.button if b.key and b.key.startswith("search_chip_")]


def healthy(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]
    return app


def client_total(search: str | None = None, expression: Any = None) -> int:
    return connection().client.search_listings(search, per_page=0, filter=expression).total


def every_listing(search: str | None = None, expression: Any = None) -> list[Listing]:
    return list(connection().client.iter_listings(search, per_page=1000, filter=expression))


def reopened(app: AppTest) -> AppTest:
    """The same view opened from a fresh session with the address ``app`` shows."""
    query = {k: v if isinstance(v, str) else v[-1] for k, v in app.query_params.items()}
    return healthy(open_page(SEARCH, query))


# -- the page ---------------------------------------------------------------------------------------------------


@pytest.mark.usefixtures("embedded_dashboard")
def test_renders_every_listing_paged_with_the_sidebar() -> None:
    app = healthy(open_page(SEARCH))
    total = client_total()
    assert total > 100
    assert shown_total(app) == total
    assert len(shown_ids(app)) == 20
    text = page_text(app)
    assert f"Page 1 of {-(-total // 20)}" in text
    assert re.search(r"\*\*[\d,]+ results\*\* in [\d,]+ ms", text)
    assert "Connection" in text, "the shared sidebar is missing"
    assert {m.label for m in app.multiselect} >= {"Type", "Selling status", "City", "Neighbourhood", "Builder"}
    builders = app.multiselect(key="search_facet_builder").options
    assert builders and not any("Builders/" in option for option in builders), "builders must read by name"


@pytest.mark.usefixtures("embedded_dashboard")
def test_words_facets_and_chips_narrow_and_the_address_reopens_the_view() -> None:
    app = healthy(open_page(SEARCH))
    app.text_input(key="search_q").input("condo").run()
    healthy(app)
    words_total = shown_total(app)
    assert words_total == client_total("condo") < client_total()
    assert app.query_params["q"] == "condo"

    app.multiselect(key="search_facet_type").select("Condo").run()
    healthy(app)
    condos = filters.any_of("type", ["Condo"])
    assert shown_total(app) == client_total("condo", condos) < words_total
    assert "Type: Condo" in chips(app)
    assert app.query_params["type"] == "Condo"
    # the type facet still offers the other types, counted as they would be if added
    options = app.multiselect(key="search_facet_type").options
    assert any(option.startswith("Townhouse (") for option in options), options

    app.selectbox(key="search_sort").select("price_asc").run()
    app.selectbox(key="search_per").select(50).run()
    app.button(key="search_next").click().run()
    healthy(app)
    assert {"q", "type", "sort", "per", "page"} <= set(app.query_params), app.query_params
    assert app.query_params["page"] == "2"
    again = reopened(app)
    assert shown_total(again) == shown_total(app)
    assert shown_ids(again) == shown_ids(app)
    assert again.text_input(key="search_q").value == "condo"
    assert again.multiselect(key="search_facet_type").value == ["Condo"]
    assert again.selectbox(key="search_sort").value == "price_asc"

    app.button(key="search_clear_all").click().run()
    healthy(app)
    assert shown_total(app) == client_total()
    assert not chips(app)
    assert not {"q", "type", "page"} & set(app.query_params)
    assert app.text_input(key="search_q").value == ""
    assert app.multiselect(key="search_facet_type").value == []


@pytest.mark.usefixtures("embedded_dashboard")
def test_range_sliders_narrow_and_chips_remove_them() -> None:
    app = healthy(open_page(SEARCH))
    price = app.select_slider(key="search_range_price")
    low, high = price.value
    assert low < 400_000 < 700_000 < high, "the price slider spans the data"
    price.set_range(400_000.0, 700_000.0).run()
    healthy(app)
    in_range = filters.between("startPrice", 400_000, 700_000)
    assert shown_total(app) == client_total(None, in_range)
    assert app.query_params["price"] == "400000..700000"
    assert any(label.startswith("Starting price:") for label in chips(app))

    app.select_slider(key="search_range_beds").set_range(2.0, 3.0).run()
    healthy(app)
    offers_2_to_3 = filters.and_(in_range, filters.compare("maxBeds", ">=", 2), filters.compare("minBeds", "<=", 3))
    assert shown_total(app) == client_total(None, offers_2_to_3)
    assert app.query_params["beds"] == "2..3"

    again = reopened(app)
    assert again.select_slider(key="search_range_price").value == (400_000.0, 700_000.0)
    assert shown_ids(again) == shown_ids(app)

    price_chip = next(b for b in app.button if b.label.startswith("Starting price:"))
    price_chip.click().run()
    healthy(app)
    assert "price" not in app.query_params
    assert shown_total(app) == client_total(
        None, filters.and_(filters.compare("maxBeds", ">=", 2), filters.compare("minBeds", "<=", 3))
    )


@pytest.mark.usefixtures("embedded_dashboard")
def test_sorts_are_exact_over_every_match_and_pages_follow() -> None:
    listings = every_listing()
    priced = sorted((lst for lst in listings if lst.startPrice), key=lambda lst: lst.startPrice or 0)
    unpriced = [lst for lst in listings if not lst.startPrice]

    app = healthy(open_page(SEARCH, {"sort": "price_asc"}))
    assert shown_ids(app) == [lst.id for lst in priced[:20]]
    app.button(key="search_next").click().run()
    healthy(app)
    assert "Page 2 of" in page_text(app)
    assert shown_ids(app) == [lst.id for lst in priced[20:40]]
    app.button(key="search_prev").click().run()
    assert shown_ids(healthy(app)) == [lst.id for lst in priced[:20]]

    # the last page of "high to low": the cheapest, then the listings without a price
    pages = -(-len(listings) // 50)
    app = healthy(open_page(SEARCH, {"sort": "price_desc", "per": "50", "page": str(pages)}))
    shown = shown_ids(app)
    tail = len(listings) - (pages - 1) * 50
    assert len(shown) == tail
    assert set(shown[len(shown) - len(unpriced) :]) == {lst.id for lst in unpriced}
    prices = [lst.startPrice for lst in priced[::-1]][(pages - 1) * 50 : (pages - 1) * 50 + tail - len(unpriced)]
    by_id = {lst.id: lst.startPrice for lst in listings}
    assert [by_id[i] for i in shown[: tail - len(unpriced)]] == prices

    newest = sorted(listings, key=lambda lst: lst.updatedAt.timestamp() if lst.updatedAt else 0, reverse=True)
    app = healthy(open_page(SEARCH, {"sort": "newest", "page": "3"}))
    assert shown_ids(app) == [lst.id for lst in newest[40:60]]

    years = sorted((lst for lst in listings if lst.completionYear), key=lambda lst: lst.completionYear or 0)
    app = healthy(open_page(SEARCH, {"sort": "completion", "per": "100"}))
    assert [by_year.completionYear for by_year in years[:100]] == [
        {lst.id: lst.completionYear for lst in listings}[i] for i in shown_ids(app)
    ]
    assert "soonest first" in page_text(app)


@pytest.mark.usefixtures("embedded_dashboard")
def test_cards_highlight_the_matched_words_and_csv_downloads_every_match(monkeypatch: pytest.MonkeyPatch) -> None:
    downloads: list[bytes] = []
    original = st.download_button

    def keep(label: str, data: Any, *args: Any, **kwargs: Any) -> Any:
        downloads.append(data)
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", keep)
    app = healthy(open_page(SEARCH, {"q": "condo", "view": "cards", "type": "Condo", "sort": "price_desc"}))
    cards = [m.value for m in app.markdown if "precon-card-title" in m.value]
    assert len(cards) == 20
    assert any("<mark>" in card for card in cards)
    assert not app.dataframe

    app.button(key="search_prepare_csv").click().run()
    healthy(app)
    expected = every_listing("condo", filters.any_of("type", ["Condo"]))
    assert f"Download CSV ({len(expected):,} listings)" in app.get("download_button")[0].proto.label
    rows = list(csv.DictReader(io.StringIO(downloads[-1].decode("utf-8-sig"))))
    assert {row["id"] for row in rows} == {lst.id for lst in expected}
    prices = [float(row["price_from_cad"]) for row in rows if row["price_from_cad"]]
    assert prices == sorted(prices, reverse=True), "the CSV comes in the page's order"
    assert all(row["builders"] and "Builders/" not in row["builders"] for row in rows if row["builders"])


@pytest.mark.usefixtures("embedded_dashboard")
def test_lite_version_and_a_province() -> None:
    app = healthy(open_page(SEARCH, {"version": "v1-lite", "q": "condo", "view": "cards"}))
    assert shown_total(app) == connection().client.search_listings("condo", per_page=0, version="v1-lite").total
    app = healthy(open_page(SEARCH, {"province": "on", "sort": "price_asc", "per": "100"}))
    ontario = connection().client.search_listings(per_page=0, province="on").total
    assert shown_total(app) == ontario < client_total()
    assert set(app.dataframe[0].value["city"]) <= {
        lst.cityOrDistrict for lst in connection().client.iter_listings(per_page=1000, province="on")
    }


@pytest.mark.usefixtures("embedded_dashboard")
def test_an_impossible_search_says_why() -> None:
    app = healthy(open_page(SEARCH, {"q": "zzqxv", "type": "Condo", "price": "100000..900000"}))
    assert shown_total(app) == 0
    said = "\n".join(i.value for i in app.info)
    assert "No listings match 'zzqxv' with these 2 filters" in said
    assert "remove a filter" in said
    app = healthy(open_page(SEARCH, {"q": "zzqxv"}))
    assert "No listings match 'zzqxv' — check the spelling" in "\n".join(i.value for i in app.info)


@pytest.mark.usefixtures("embedded_dashboard")
def test_nonsense_in_the_address_falls_back_quietly() -> None:
    nonsense = {"sort": "cheapest", "page": "-4", "per": "7", "view": "grid", "price": "abc..", "beds": ".."}
    app = healthy(open_page(SEARCH, nonsense))
    assert shown_total(app) == client_total()
    assert app.selectbox(key="search_sort").value == "relevance"
    app = healthy(open_page(SEARCH, {"page": "999"}))
    assert f"Page {-(-client_total() // 20)} of" in page_text(app)


@pytest.mark.parametrize(
    ("status", "shown"),
    [(403, "req-forbidden-1"), (500, "req-failing-42"), (None, "cannot be reached")],
)
def test_failures_are_readable(status: int | None, shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with failing_service(status, monkeypatch):
        app = open_page(SEARCH, {"q": "condo", "type": "Condo"})
        assert_readable_failure(app, shown)


# -- the pieces ---------------------------------------------------------------------------------------------------


def test_url_encodings_round_trip() -> None:
    values = ["Oak, Maple", "back\\slash", "Loft"]
    assert url_state.decode_list(url_state.encode_list(values)) == values
    assert url_state.decode_list("a,,b, a") == ["a", "b"]
    assert url_state.encode_range(400000.0, None) == "400000.."
    assert url_state.decode_range("..3") == (None, 3.0)
    assert url_state.decode_range("3..1.5") == (1.5, 3.0)
    assert url_state.decode_range("x..y") == (None, None)
    assert url_state.decode_range(url_state.encode_range(1.5, 2.0)) == (1.5, 2.0)


def test_the_selection_filters_by_overlap_and_ors_within_a_facet() -> None:
    selection = Selection(
        {"type": ("Condo", "Loft"), "builder": ("Builders/abc",)}, {"beds": (2.0, None), "price": (1e5, 5e5)}
    )
    query = filters.to_query(selection.expression())
    assert "type:Condo OR type:Loft" in query
    assert "maxBeds >= 2" in query and "minBeds" not in query
    assert "startPrice:100000 TO 500000" in query
    assert "type" not in filters.to_query(selection.expression(without="type"))
    assert selection.count == 5


def test_highlights_only_ever_let_the_dashboards_own_tags_through() -> None:
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt; <em>Lofts</em> &amp; *more*"
    runs = highlight_runs(escaped)
    assert runs == [("<script>alert(1)</script> ", False), ("Lofts", True), (" & *more*", False)]
    rendered = runs_html(runs)
    assert "<script" not in rendered and "<mark>Lofts</mark>" in rendered and "*" not in rendered
    for hostile in ("<img src=x onerror=alert(1)> <em>a</em>", "<em>open", "a</em>", "<EM>x</EM>", 42):
        assert highlight_runs(hostile) is None
    listing = Listing.model_validate(
        {
            "listingId": "XSS0A1",
            "name": "<script>alert(1)</script> Lofts",
            "_highlightResult": {"name": {"value": "<img src=x onerror=alert(1)> <em>Lofts</em>"}},
        }
    )
    html = card_html(listing)
    assert "<img" not in html and "<script" not in html and "&#60;script&#62;" in html
