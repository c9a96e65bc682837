"""The listing page under AppTest: one real listing against the client's answer, the view it counts, the finder,
a listing that does not exist, and failures as a user sees them."""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from components import api
from components.deposits import dollar_steps, plan_label, priced_plans, total_percent
from components.formatting import cad, markdown_text, size_text
from components.listing_facts import company
from precon.client.models import Listing
from precon.dashboard import labels
from precon.dashboard.listing_checks import Contradiction, contradictions
from precon.service.config import ServiceSettings
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
from tests.history_support import history_catalogue, history_dashboard  # noqa: F401

LISTING = "views/listing.py"


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client's back-off shortened: these tests are about what the page shows, not how long it waits."""
    monkeypatch.setattr("precon.client.retries.RETRY_INITIAL_WAIT_S", 0.01)
    monkeypatch.setattr("precon.client.retries.RETRY_MAX_WAIT_S", 0.02)


def views(data_dir: Path, listing_id: str) -> int:
    """The views the embedded service has recorded for a listing, read from its catalogue."""
    path = ServiceSettings(data_dir=data_dir).catalogue_path
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT views FROM listing_views WHERE listing_id = ?", (listing_id,)).fetchone()
    return int(row[0]) if row else 0


def table_with(app: AppTest, column: str) -> pd.DataFrame:
    """The one table on the page that has this column."""
    found = [frame.value for frame in app.dataframe if column in frame.value.columns]
    assert len(found) == 1, [list(frame.value.columns) for frame in app.dataframe]
    return found[0]


def linked_ids(frame: pd.DataFrame) -> list[str]:
    """The listing ids of a listing table's rows (a click on a row opens that listing)."""
    return list(frame["id"])


def a_rich_listing() -> Listing:
    """A listing with builders and with floor plans in more than one status, read without counting a view."""
    client = api.connection().client
    for listing in client.search_listings(per_page=100, references=["builders"]).results:
        statuses = {plan.status for plan in listing.floorPlans or []}
        if len(statuses) > 1 and listing.builders and listing.startPrice and listing.paymentStructures:
            return listing
    raise AssertionError("no listing with floor plans in two statuses")


def counting_fetches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every uncached ``get_listing`` the page makes, by listing id (the fetches that count a view)."""
    fetched: list[str] = []
    real: Callable[..., Any] = api.call_uncached

    def spy(operation: str, /, **arguments: Any) -> Any:
        if operation == "get_listing":
            fetched.append(arguments["id"])
        return real(operation, **arguments)

    monkeypatch.setattr(api, "call_uncached", spy)
    return fetched


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_listing_in_full_counting_one_view_per_visit(monkeypatch: pytest.MonkeyPatch) -> None:
    data_dir = Path(os.environ["PRECON_SERVICE_DATA_DIR"])  # set by embedded_dashboard
    open_page(LISTING)  # starts the embedded service, to ask it for a listing
    listing = a_rich_listing()
    assert listing.id and listing.floorPlans
    before = views(data_dir, listing.id)
    fetched = counting_fetches(monkeypatch)

    app = open_page(LISTING, {"id": listing.id})
    assert not app.exception, [e.value for e in app.exception]
    assert markdown_text(listing.name) in [t.value for t in app.title]
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Start price (CAD)"] == cad(listing.startPrice)
    assert metrics["End price (CAD)"] == cad(listing.endPrice)
    pricing = table_with(app, "Included")
    assert cad(listing.startPrice) in list(pricing["Value"])

    plans = table_with(app, "exposure")
    assert len(plans) == len(listing.floorPlans)
    assert sorted(plans["name"]) == sorted(plan.name for plan in listing.floorPlans)

    links = {(link.proto.label, link.proto.page) for link in app.get("page_link")}
    for builder in listing.builders:
        shown = company(builder, "Builders")
        assert shown.path and shown.path.startswith("Builders/")
        assert any(label == shown.name and "profile" in page for label, page in links), (shown.name, links)

    similar = api.connection().client.similar_listings(listing.id, max_recommendations=6).results
    assert similar
    assert linked_ids(table_with(app, "cover")) == [other.id for other in similar]

    # Filtering the floor plans by status: fewer rows, all of that status; a rerun, not another view.
    status_filter = app.multiselect(key=f"plans:{listing.id}_status")
    app = status_filter.set_value(["Available"]).run()
    assert not app.exception, [e.value for e in app.exception]
    available = sum(1 for plan in listing.floorPlans if plan.status == "Available")
    filtered = table_with(app, "exposure")
    assert len(filtered) == available < len(listing.floorPlans)
    assert set(filtered["status"]) == {"Available"}
    app.radio(key=f"plans:{listing.id}_colour").set_value("Status").run()
    app.button(key="listing_refresh").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert markdown_text(listing.name) in [t.value for t in app.title]

    assert fetched == [listing.id]
    assert views(data_dir, listing.id) == before + 1

    # Leaving the page and coming back is another visit: the listing is fetched (and counted) again.
    app.switch_page("views/home.py").run()
    app.switch_page(LISTING).run()
    assert not app.exception, [e.value for e in app.exception]
    assert fetched == [listing.id, listing.id]
    assert len(table_with(app, "exposure")) == len(listing.floorPlans)  # the filter did not outlive the visit


@pytest.mark.usefixtures("embedded_dashboard")
def test_the_units_of_a_listing_what_is_left_on_which_floor_at_what_price() -> None:
    """The sales team's question: counts by status and the units table, against the listing the API gives."""
    open_page(LISTING)
    client = api.connection().client
    listing = next(
        found
        for found in client.search_listings(per_page=100, filter='sellingStatus:"Selling Now"').results
        if any(plan.available_units for plan in found.floorPlans or [])
        and any(unit.status == "Sold" for plan in found.floorPlans or [] for unit in plan.units)
    )
    units = [(plan, unit) for plan in listing.floorPlans or [] for unit in plan.units]
    app = open_page(LISTING, {"id": listing.id})
    assert not app.exception, [e.value for e in app.exception]
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Units"] == f"{len(units):,}"
    for status in ("Available", "Reserved", "Sold"):
        assert metrics[status] == f"{sum(1 for _, unit in units if unit.status == status):,}"
    shown = table_with(app, "unit")
    available = sorted(unit.unitNumber for _, unit in units if unit.status == "Available")
    assert sorted(shown["unit"]) == available and set(shown["status"]) == {"Available"}
    assert list(shown["floor"]) == sorted(shown["floor"])
    plans = table_with(app, "exposure")
    left = {
        plan.name: (len(plan.available_units), sum(u.status == "Sold" for u in plan.units))
        for plan in listing.floorPlans or []
    }
    assert dict(zip(plans["name"], zip(plans["available"], plans["sold"], strict=True), strict=True)) == left

    app = app.multiselect(key=f"units:{listing.id}_status").set_value(["Sold"]).run()
    assert not app.exception, [e.value for e in app.exception]
    sold = table_with(app, "unit")
    assert sorted(sold["unit"]) == sorted(unit.unitNumber for _, unit in units if unit.status == "Sold")


@pytest.mark.usefixtures("embedded_dashboard")
def test_without_an_id_a_finder_opens_the_listing_picked() -> None:
    app = open_page(LISTING)
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error
    assert "Find a listing" in page_text(app)
    wanted = api.connection().client.search_listings(per_page=1).results[0]
    word = (wanted.name or "").split()[0]

    app = app.text_input(key="listing_finder").input(word).run()
    assert not app.exception, [e.value for e in app.exception]
    matches = api.connection().client.search_listings(word, per_page=20).results
    picker = app.selectbox(key=f"listing_finder_pick:{word}")
    assert picker.value == matches[0].id
    last = matches[-1]
    app = picker.set_value(last.id).run()
    app = app.button(key="listing_finder_open").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.query_params["id"] == last.id
    assert markdown_text(last.name) in [t.value for t in app.title]


@pytest.mark.usefixtures("embedded_dashboard")
def test_an_unknown_id_reads_as_not_found() -> None:
    app = open_page(LISTING, {"id": "NO5UCH"})
    assert not app.exception, [e.value for e in app.exception]
    assert "Listing not found" in [t.value for t in app.title]
    shown = "\n".join(e.value for e in app.error)
    assert "NO5UCH" in shown and "search below" in shown
    # In one province, the message suggests looking in all of them (the sidebar keeps its choice in the session).
    app = AppTest.from_file(APP, default_timeout=TIMEOUT_S)
    app.session_state["province"] = "on"
    app.query_params["province"] = "on"
    app.query_params["id"] = "NO5UCH"
    app.switch_page(LISTING).run()
    assert not app.exception, [e.value for e in app.exception]
    assert "Ontario" in app.error[0].value and "All provinces" in app.error[0].value
    assert app.text_input(key="listing_finder")  # and a way to find the right one


@pytest.mark.usefixtures("quick_retries")
@pytest.mark.parametrize(
    ("status", "fragment"),
    [(403, "Access refused"), (500, "The listings service failed"), (None, "cannot be reached")],
)
def test_failures_read_as_messages(status: int | None, fragment: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with failing_service(status, monkeypatch):
        app = open_page(LISTING, {"id": "ABC123"})
        assert_readable_failure(app, fragment)
        app = open_page(LISTING)
        assert_readable_failure(app, fragment)


@pytest.mark.usefixtures("embedded_dashboard")
def test_the_listings_videos_are_linked_as_the_urls_the_api_gives() -> None:
    client = api.connection().client
    listing = next(
        lst for lst in client.iter_listings(per_page=1000, retrieve_attributes=["listingId", "videos"]) if lst.videos
    )
    app = open_page(LISTING, {"id": listing.id})
    assert not app.exception, [e.value for e in app.exception]
    text = page_text(app)
    for url in listing.videos:
        assert isinstance(url, str) and url.startswith("http")
        assert f"]({url})" in text, url


@pytest.mark.usefixtures("embedded_dashboard")
def test_the_location_map_draws_the_bundled_outline_under_the_listing_named_at_its_dot() -> None:
    client = api.connection().client
    listing = next(
        lst
        for lst in client.iter_listings(per_page=1000, retrieve_attributes=["listingId", "name", "_geoloc"])
        if lst.geoloc is not None
    )
    app = open_page(LISTING, {"id": listing.id})
    assert not app.exception, [e.value for e in app.exception]
    charts = app.get("deck_gl_json_chart")
    assert len(charts) == 1
    spec = json.loads(charts[0].proto.json)
    ids = [item["id"] for item in spec["layers"]]
    assert ids[:3] == ["basemap-water", "basemap-shapes", "basemap-lakes"]  # under everything
    shapes = next(item for item in spec["layers"] if item["id"] == "basemap-shapes")
    assert shapes["filled"] is True and shapes["data"] == "app/static/basemap/land.json"
    label = next(item for item in spec["layers"] if item["id"] == "basemap-cities")
    assert label["data"] == [{"name": listing.name, "lat": listing.geoloc.lat, "lng": listing.geoloc.lng, "count": 1}]
    assert "mapProvider" not in spec  # nothing from the network until the street basemap is asked for
    app.toggle(key=f"listing_basemap:{listing.id}").set_value(True).run()
    spec = json.loads(app.get("deck_gl_json_chart")[0].proto.json)
    assert spec["mapProvider"] == "carto"
    assert [item["filled"] for item in spec["layers"] if item["id"].startswith("basemap-s")] == [False]


def a_listing_with_contradictions() -> tuple[Listing, list[Contradiction]]:
    """A listing whose incentives contradict both its fees and its deposits, with priced floor plans; scanned
    without counting views."""
    client = api.connection().client
    fallback: tuple[Listing, list[Contradiction]] | None = None
    for listing in client.iter_listings(per_page=1000):
        found = contradictions(listing)
        if not found or len(priced_plans(listing.floorPlans)) < 2 or not listing.paymentStructures:
            continue
        if {c.section for c in found} == {"pricing", "deposits"}:
            return listing, found
        fallback = fallback or (listing, found)
    assert fallback is not None, "no listing in the catalogue has a contradiction"
    return fallback


def deposit_tables(app: AppTest) -> list[pd.DataFrame]:
    return [frame.value for frame in app.dataframe if "running" in frame.value.columns]


@pytest.mark.usefixtures("embedded_dashboard")
def test_the_deposit_schedule_in_dollars_for_a_chosen_plan_and_the_contradictions_flagged() -> None:
    open_page(LISTING)  # starts the embedded service
    listing, found = a_listing_with_contradictions()
    app = open_page(LISTING, {"id": listing.id})
    assert not app.exception, [e.value for e in app.exception]

    # The contradictions, as warnings next to the facts they concern, and marked on the incentives.
    warnings = "\n".join(w.value for w in app.warning)
    for contradiction in found:
        assert markdown_text(contradiction.message) in warnings, (contradiction.message, warnings)
    assert "contradicted: see" in page_text(app)

    # Choosing the dearest plan: each structure's schedule in its dollars, each step once, adding up.
    plans = priced_plans(listing.floorPlans)
    picker = app.selectbox(key=f"deposits:{listing.id}_plan")
    assert picker.options == [plan_label(plan) for plan in plans]
    assert all(cad(plan.startPrice) in label for plan, label in zip(plans, picker.options, strict=True))
    app = picker.set_value(str(len(plans) - 1)).run()
    assert not app.exception, [e.value for e in app.exception]
    price = plans[-1].startPrice
    assert price
    today = date.today()
    tables = deposit_tables(app)
    assert len(tables) == len(listing.paymentStructures)
    for structure, table in zip(listing.paymentStructures, tables, strict=True):
        total = (total_percent(structure) or 0) * price / 100
        expected = dollar_steps(structure, price)
        assert list(table["step"]) == list(range(1, len(expected) + 1))  # each step once
        assert list(table["payment"]) == [step.payment for step in expected]
        assert abs(table["amount"].sum() - total) < 0.01
        assert abs(table["running"].iloc[-1] - total) < 0.01
        for step, due in zip(expected, table["due"], strict=True):
            if step.days is None:
                assert pd.isna(due)
            else:
                assert due.date() == today + timedelta(days=step.days), (step, due)
        assert markdown_text(cad(total)) in page_text(app)
    assert any(step.days for structure in listing.paymentStructures for step in dollar_steps(structure, price))
    assert "counted from today" in page_text(app)

    # A signing date picked: the dates move with it, and the page says so.
    signing = today + timedelta(days=45)
    app = app.date_input(key=f"deposits:{listing.id}_signing").set_value(signing).run()
    assert not app.exception, [e.value for e in app.exception]
    assert "signing date you picked" in page_text(app)
    first = listing.paymentStructures[0]
    steps_after = dollar_steps(first, price)
    dated = [(step, due) for step, due in zip(steps_after, deposit_tables(app)[0]["due"], strict=True) if step.days]
    assert dated and all(due.date() == signing + timedelta(days=step.days or 0) for step, due in dated)

    # Money and sizes formatted: the price slider and the key facts.
    slider = app.slider(key=f"plans:{listing.id}_max_price")
    assert slider.proto.format == "$%,d"
    if listing.minSize:
        assert markdown_text(size_text(listing.minSize, listing.maxSize)) in page_text(app)
        assert "sq ft" in size_text(listing.minSize, listing.maxSize)


# -- inventory, history and "Add to compare" ----------------------------------------------------------------


def a_selling_tower() -> Listing:
    """A listing selling by the unit, with units in more than one status and a deposit structure."""
    client = api.connection().client
    return next(
        found
        for found in client.search_listings(per_page=100, filter='sellingStatus:"Selling Now"').results
        if any(plan.available_units for plan in found.floorPlans or [])
        and any(unit.status == "Sold" for plan in found.floorPlans or [] for unit in plan.units)
        and found.paymentStructures
    )


@pytest.mark.usefixtures("embedded_dashboard")
def test_the_inventory_counts_lowest_price_and_a_picked_unit_are_the_listings_units() -> None:
    open_page(LISTING)
    listing = a_selling_tower()
    plans = listing.floorPlans or []
    units = [(plan, unit) for plan in plans for unit in plan.units]
    available = [unit.price for _, unit in units if unit.status == "Available" and unit.price is not None]
    app = open_page(LISTING, {"id": listing.id})
    assert not app.exception, [e.value for e in app.exception]
    metrics = {metric.label: metric.value for metric in app.metric}
    assert metrics["Lowest available (CAD)"] == cad(min(available))
    for status in ("Available", "Reserved", "Sold"):
        assert metrics[status] == f"{sum(1 for _, unit in units if unit.status == status):,}"

    # Per plan: the counts and the lowest available price, in the listing's order.
    summary = table_with(app, "lowest")
    with_units = [plan for plan in plans if plan.units]
    assert list(summary["plan"]) == [plan.name for plan in with_units]
    for plan, (_, row) in zip(with_units, summary.iterrows(), strict=True):
        assert row["units"] == len(plan.units)
        for status in ("Available", "Reserved", "Sold"):
            assert row[status.lower()] == sum(1 for unit in plan.units if unit.status == status)
        prices = [unit.price for unit in plan.available_units if unit.price is not None]
        expected = cad(min(prices)) if prices else "Not published" if plan.available_units else "—"
        assert row["lowest"] == expected
    assert not re.search(r"\bNone\b|\bnan\b", summary.astype(str).to_string())

    # The grid is drawn; picking a unit (as a click on it does) shows it and its deposits in its dollars.
    assert app.get("vega_lite_chart"), "the inventory grid"
    plan, unit = max(units, key=lambda pair: float(pair[1].floor or 0))
    assert unit.price is not None
    label = f"{unit.unitNumber} · {plan.name} · {unit.status} · {cad(unit.price)}"
    picker = app.selectbox(key=f"units:{listing.id}_grid_unit")
    app = picker.set_value(label).run()
    assert not app.exception, [e.value for e in app.exception]
    metrics = {metric.label: metric.value for metric in app.metric}
    assert (metrics["Plan"], metrics["Floor"], metrics["Price (CAD)"], metrics["Status"]) == (
        plan.name, unit.floor, cad(unit.price), unit.status,
    )  # fmt: skip
    schedules = deposit_tables(app)[: len(listing.paymentStructures)]
    for structure, table in zip(listing.paymentStructures, schedules, strict=True):
        assert list(table["amount"].fillna(-1)) == [
            -1 if step.amount is None else step.amount for step in dollar_steps(structure, unit.price)
        ]


@pytest.mark.usefixtures("embedded_dashboard")
def test_a_listing_whose_plans_list_no_units_says_so() -> None:
    open_page(LISTING)
    client = api.connection().client
    listing = next(
        found
        for found in client.iter_listings(per_page=500, retrieve_attributes=["listingId", "floorPlans"])
        if found.floorPlans and not any(plan.units for plan in found.floorPlans)
    )
    app = open_page(LISTING, {"id": listing.id})
    assert not app.exception, [e.value for e in app.exception]
    assert "This listing's floor plans list no units" in page_text(app)
    assert not app.get("vega_lite_chart") or "lowest" not in [c for f in app.dataframe for c in f.value.columns]


def all_history(listing_id: str) -> list[Any]:
    client = api.connection().client
    entries, page = [], 0
    while True:
        answer = client.listing_history(listing_id, page=page, per_page=1000)
        entries += answer.results
        page += 1
        if page >= answer.pages:
            return entries


@pytest.mark.usefixtures("history_dashboard")
def test_the_history_table_and_price_chart_are_the_listings_history() -> None:
    from components.listing_history import TABLE_ROWS

    open_page(LISTING)
    client = api.connection().client
    candidates = client.search_listings(per_page=100, filter='sellingStatus:"Selling Now"').results
    totals = {found.id: client.listing_history(found.id or "", per_page=0).total for found in candidates}
    listing_id = max(totals, key=lambda i: totals[i])
    assert listing_id and totals[listing_id] > TABLE_ROWS
    expected = all_history(listing_id)

    def same(cell: Any, value: Any) -> bool:
        """A cell against the entry's value as the API gave it: blank for none, numbers read back from the text."""
        if value is None:
            return cell is None or pd.isna(cell)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(str(cell).replace("$", "").replace(",", "")) == value
        if isinstance(value, list | dict):
            return json.loads(cell) == value
        return bool(cell == str(value))

    def check(frame: pd.DataFrame, entries: list[Any]) -> None:
        assert len(frame) == len(entries)
        assert list(frame["field"].fillna("")) == [labels.field_label(e.field) for e in entries]
        assert list(frame["change"]) == [labels.change_label(e.change) for e in entries]
        assert list(frame["scope"]) == [labels.scope_label(e.scope) for e in entries]
        assert set(frame["scope"]) <= {"Listing", "Floor plan", "Unit"} and "updated" not in set(frame["change"])
        assert list(frame["unit_number"].fillna("")) == [e.unit or "" for e in entries]
        for (_, row), entry in zip(frame.iterrows(), entries, strict=True):
            assert same(row["from"], entry.before) and same(row["to"], entry.after), (row, entry)
        assert [t.to_pydatetime() for t in frame["when"]] == [e.at.replace(tzinfo=None) for e in entries]

    app = open_page(LISTING, {"id": listing_id})
    assert not app.exception, [e.value for e in app.exception]
    check(table_with(app, "unit_number"), expected[:TABLE_ROWS])
    assert f"{len(expected):,} changes recorded" in page_text(app)
    app = app.toggle(key=f"history:{listing_id}_all").set_value(True).run()
    assert not app.exception, [e.value for e in app.exception]
    check(table_with(app, "unit_number"), expected)

    # The start price's changes, counted on the chart's caption; a plan's too.
    listing = client.multiple_listings([listing_id])[0]
    changes = [e for e in expected if e.scope == "listing" and e.field == "startPrice" and e.change == "updated"]
    assert f"{len(changes):,} price change" in page_text(app) or not changes
    plans = [plan for plan in listing.floorPlans or [] if plan.id]
    picker = app.selectbox(key=f"history:{listing_id}_plan")
    assert len(picker.options) == len(plans) + 1
    by_plan = {p.id: sum(1 for e in expected if e.plan == p.id and e.field == "startPrice") for p in plans}
    busiest = max(plans, key=lambda p: by_plan[p.id])
    app = picker.set_value(busiest.id).run()
    assert not app.exception, [e.value for e in app.exception]
    assert f"{by_plan[busiest.id]:,} price change" in page_text(app)
    assert app.get("vega_lite_chart")


@pytest.mark.usefixtures("embedded_dashboard")
def test_history_against_a_deployment_without_it_says_what_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    from precon.client import Client
    from precon.client.errors import NotFound

    def missing(self: Client, *args: Any, **kwargs: Any) -> Any:
        raise NotFound("Not Found", status=404)

    monkeypatch.setattr(Client, "listing_history", missing)
    open_page(LISTING)
    listing = a_selling_tower()
    app = open_page(LISTING, {"id": listing.id})
    assert not app.exception, [e.value for e in app.exception]
    assert not app.error
    assert "History needs a deployment of ours" in page_text(app)
    assert "precon catalogue mirror" in page_text(app)
    assert markdown_text(listing.name) in [t.value for t in app.title]  # the rest of the page is there


@pytest.mark.usefixtures("embedded_dashboard")
def test_add_to_compare_keeps_at_most_four_and_links_to_the_compare_page() -> None:
    open_page(LISTING)
    ids = [found.id for found in api.connection().client.search_listings(per_page=5).results]
    app = open_page(LISTING, {"id": ids[0]})
    app = app.button(key="compare_add").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.session_state["compare_ids"] == [ids[0]]
    links = [(link.proto.page, link.proto.label) for link in app.get("page_link")]
    assert any("compare" in page and ids[0] in label for page, label in links), links

    app.session_state["compare_ids"] = ids[1:5]
    app = app.run().button(key="compare_add").click().run()
    assert not app.exception, [e.value for e in app.exception]
    assert app.session_state["compare_ids"] == ids[1:5]
    assert "at most 4 listings" in "\n".join(w.value for w in app.warning)
