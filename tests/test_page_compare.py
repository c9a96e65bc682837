"""The Compare page under AppTest: the table against each listing the API gives, the cheapest unit meeting the unit
filters, the distances, every kind of bad address, and "Compare selected" on Search; and the pure parts."""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from components import api
from components.compare_table import BEST, CompareRow, date_key, haversine_km, parse_ids
from components.formatting import cad
from precon.client.models import Listing
from tests.dashboard_support import APP, TIMEOUT_S, open_page, page_text
from tests.history_support import HistoryCatalogue, history_catalogue, history_dashboard  # noqa: F401

COMPARE = "views/compare.py"
SEARCH = "views/search.py"


def healthy(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error, [e.value for e in app.error]
    return app


def compare_table(app: AppTest) -> pd.DataFrame:
    found = [frame.value for frame in app.table if "Start price" in list(frame.value.index)]
    assert len(found) == 1, [list(frame.value.index) for frame in app.table]
    return found[0]


def unmarked(text: str) -> str:
    return text.removesuffix(f" {BEST}")


def selling_listings(count: int) -> list[Listing]:
    client = api.connection().client
    found = client.search_listings(per_page=100, filter='sellingStatus:"Selling Now"', references=["builders"])
    with_units = [lst for lst in found.results if any(plan.available_units for plan in lst.floorPlans or [])]
    assert len(with_units) >= count
    return with_units[:count]


def oracle_km(a: Listing, b: Listing) -> float:
    """The great-circle distance, worked out here on its own (spherical law of cosines)."""
    la1, lo1, la2, lo2 = map(math.radians, (a.lat or 0, a.long or 0, b.lat or 0, b.long or 0))
    cosine = math.sin(la1) * math.sin(la2) + math.cos(la1) * math.cos(la2) * math.cos(lo2 - lo1)
    return 6371.0088 * math.acos(max(-1.0, min(1.0, cosine)))


@pytest.mark.usefixtures("history_dashboard")
def test_the_table_is_each_listings_prices_units_and_distances() -> None:
    open_page(COMPARE)
    listings = selling_listings(3)
    app = healthy(open_page(COMPARE, {"ids": ",".join(lst.id or "" for lst in listings)}))
    table = compare_table(app)
    assert list(table.columns) == [lst.name for lst in listings]
    for listing, column in zip(listings, table.columns, strict=True):
        units = [unit for plan in listing.floorPlans or [] for unit in plan.units]
        assert unmarked(table.loc["Start price", column]) == cad(listing.startPrice)
        assert unmarked(table.loc["Units available", column]) == f"{sum(u.status == 'Available' for u in units):,}"
        assert unmarked(table.loc["Units sold", column]) == f"{sum(u.status == 'Sold' for u in units):,}"
    cheapest = min(listings, key=lambda lst: lst.startPrice or math.inf)
    assert table.loc["Start price", cheapest.name].endswith(BEST)
    assert sum(cell.endswith(BEST) for cell in table.loc["Start price"]) == 1
    most = max(len([u for p in lst.floorPlans or [] for u in p.available_units]) for lst in listings)
    for listing in listings:
        left = len([u for p in listing.floorPlans or [] for u in p.available_units])
        assert table.loc["Units available", listing.name].endswith(BEST) == (left == most)
    assert not re.search(r"\bNone\b|\bnan\b", table.astype(str).to_string())

    distances = next(frame.value for frame in app.table if "Start price" not in list(frame.value.index))
    for a in listings:
        for b in listings:
            cell = distances.loc[a.name, b.name]
            if a is b:
                assert cell == ""
            else:
                assert abs(float(cell.removesuffix(" km").replace(",", "")) - oracle_km(a, b)) <= 0.06, cell
    assert app.get("download_button"), "the CSV"


@pytest.mark.usefixtures("history_dashboard")
def test_the_cheapest_unit_meets_the_unit_filters_of_the_address() -> None:
    open_page(COMPARE)
    listings = selling_listings(2)
    app = healthy(open_page(COMPARE, {"ids": ",".join(lst.id or "" for lst in listings), "beds": "2.."}))
    table = compare_table(app)
    for listing in listings:
        fits = [
            (unit.price, unit.unitNumber)
            for plan in listing.floorPlans or []
            if (plan.numberOfBedrooms or 0) >= 2
            for unit in plan.available_units
            if unit.price
        ]
        cell = unmarked(table.loc["Cheapest unit meeting the filters", listing.name])
        if fits:
            price, number = min(fits)
            assert cell.startswith(f"{number} · ") and cell.endswith(cad(price)), cell
        else:
            assert cell == "—"
    assert "bedrooms ≥ 2" in page_text(app).lower()


def warnings_of(app: AppTest) -> str:
    return "\n".join(w.value for w in app.warning)


@pytest.mark.parametrize(
    ("ids", "expected", "columns"),
    [
        ("{0}", "One listing to compare", 1),
        ("{0},{1},{2},{3},{4}", "At most 4 listings can be compared", 4),
        ("{0},NOPE99", "no listing NOPE99", 1),
        ("{0},<b>bold</b>,{1}", "is not a listing id", 2),
        ("{0},AB\x00C,{1}", "is not a listing id", 2),
        ("{0},{1},{0}", "is named more than once", 2),
        ("{0},{deleted},{1}", "was removed from the catalogue", 2),
        ("", "No listing to compare", 0),
    ],
)
@pytest.mark.usefixtures("history_dashboard")
def test_a_bad_address_reads_as_a_message_and_the_rest_works(
    request: pytest.FixtureRequest, ids: str, expected: str, columns: int
) -> None:
    catalogue: HistoryCatalogue = request.getfixturevalue("history_catalogue")
    open_page(COMPARE)
    listings = selling_listings(5)
    asked = ids.format(*(lst.id for lst in listings), deleted=catalogue.deleted_id)
    app = open_page(COMPARE, {"ids": asked})
    assert not app.exception, [e.value for e in app.exception]
    assert expected.lower() in (warnings_of(app) + "\n" + page_text(app)).lower(), page_text(app)
    assert "<b>" not in page_text(app) and "\x00" not in page_text(app)
    if columns:
        assert list(compare_table(app).columns) == [lst.name for lst in listings[:columns]]
    else:
        assert not app.table


@pytest.mark.usefixtures("history_dashboard")
def test_compare_selected_on_search_says_why_it_is_disabled() -> None:
    app = healthy(open_page(SEARCH))
    assert not [b for b in app.button if b.key == "compare_selected"]  # a click on a row opens it, as before
    app = healthy(app.toggle(key="search_compare_mode").set_value(True).run())
    button = app.button(key="compare_selected")
    assert button.disabled
    assert "Select 2 to 4 rows to compare (0 selected)." in page_text(app)


@pytest.mark.usefixtures("history_dashboard")
def test_the_compare_list_of_the_session_fills_an_address_without_ids() -> None:
    open_page(COMPARE)
    listings = selling_listings(2)
    app = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    app.session_state["compare_ids"] = [lst.id for lst in listings]
    app.switch_page(COMPARE).run()
    healthy(app)
    assert app.query_params["ids"] == ",".join(lst.id or "" for lst in listings)
    assert list(compare_table(app).columns) == [lst.name for lst in listings]


# -- the pure parts ---------------------------------------------------------------------------------------------


def test_parse_ids_keeps_each_valid_id_once_and_at_most_four() -> None:
    assert parse_ids("A1, B2 ,,A1") == (["A1", "B2"], ["A1 is named more than once: compared once."])
    ids, problems = parse_ids("A,B,C,D,E,<x>")
    assert ids == ["A", "B", "C", "D"] and len(problems) == 2
    assert parse_ids(None) == ([], [])


def test_the_best_of_a_row_is_marked_only_where_values_differ() -> None:
    assert CompareRow("p", ["", "", ""], [3.0, 1.0, None], "low").best() == {1}
    assert CompareRow("p", ["", "", ""], [3.0, 1.0, 3.0], "high").best() == {0, 2}
    assert CompareRow("p", ["", ""], [2.0, 2.0], "low").best() == set()
    assert CompareRow("p", ["", ""], [2.0, None], "low").best() == set()
    assert CompareRow("p", ["", ""], [1.0, 2.0], None).best() == set()


def test_haversine_and_completion_dates() -> None:
    toronto, montreal = (43.6532, -79.3832), (45.5019, -73.5674)
    assert abs(haversine_km(*toronto, *montreal) - 504.3) < 1.0
    assert haversine_km(*toronto, *toronto) == 0
    order = ["Q1 2026", "Spring 2026", "Mid 2026", "August 2026", "Fall 2026", "Q4 2026", "2027-01-15"]
    keys: list[Any] = [date_key(text) for text in order]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert date_key("TBD") is None


@pytest.mark.usefixtures("history_dashboard")
def test_the_compare_list_is_in_the_address_and_the_owners_store_from_session_to_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from components import auth
    from components.saved import db_path
    from precon.dashboard.compare_lists import CompareLists

    open_page(COMPARE)
    first, second, third = selling_listings(3)
    app = healthy(open_page("views/listing.py", {"id": third.id or "", "compare": f"{first.id},{second.id}"}))
    links = [link.proto.label for link in app.get("page_link") if "compare" in link.proto.page]
    assert any(label.startswith("Compare (2 of 4") for label in links), links  # the address's list, adopted
    app = healthy(app.button(key="compare_add").click().run())
    assert app.query_params["compare"] == f"{first.id},{second.id},{third.id}"  # a reload keeps it

    monkeypatch.setattr(auth, "saver", lambda: "ann@example.com")  # signed in: the list is hers, on any browser
    store = CompareLists(db_path())
    store.put("person:ann@example.com", [])
    for listing in (second, third):  # each opened by its address: a new session each
        app = healthy(open_page("views/listing.py", {"id": listing.id or ""}))
        healthy(app.button(key="compare_add").click().run())
    assert store.get("person:ann@example.com") == [second.id, third.id]
    app = healthy(open_page(COMPARE))  # a new session, no ids in the address: her stored list
    assert list(compare_table(app).columns) == [second.name, third.name]
