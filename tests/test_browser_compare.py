"""The listing's inventory and history and the Compare page in a real browser, over a catalogue with a simulated
past: the numbers on the page against the service's own answers, and screenshots at 1440x900."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from components.formatting import cad
from precon.client import Client
from precon.client.models import Listing
from precon.service.embedded import EmbeddedService
from tests.browser_support import (
    READY,
    SCREENSHOTS,
    Dashboard,
    assert_no_exception,
    chromium_path,
    page_of,
    running_dashboard,
    settle,
)
from tests.history_support import HISTORY_DAYS, HISTORY_LISTINGS, make_history_catalogue

VIEWPORT = {"width": 1440, "height": 900}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    chromium_path()
    catalogue = make_history_catalogue(tmp_path_factory.mktemp("browser-history-data"))
    days = {"PRECON_SERVICE_DEFAULT_HISTORY_DAYS": str(HISTORY_DAYS)}
    with running_dashboard(catalogue.data_dir, HISTORY_LISTINGS, **days) as started:
        yield started


@pytest.fixture(scope="module")
def oracle(site: Dashboard) -> Iterator[Client]:
    with EmbeddedService(site.data_dir, listings=HISTORY_LISTINGS) as service:
        yield service.client


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with page_of(browser, VIEWPORT["width"], VIEWPORT["height"]) as opened:
        yield opened


def shot(page: Any, name: str, anchor: Any | None = None) -> Path:
    """What a 1440x900 screen shows, scrolled to ``anchor`` (a locator) if given."""
    if anchor is not None:
        anchor.scroll_into_view_if_needed()
        anchor.evaluate("el => el.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(800)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path))
    return path


def metrics(page: Any, *labels: str) -> dict[str, str]:
    """Every metric on the page, label to value (the first of a label), once those of ``labels`` are drawn (a
    moment after the run ends, on a loaded machine)."""
    for label in labels:
        expect(page.locator('[data-testid="stMetricLabel"]').filter(has_text=label).first).to_be_visible()
    read = """els => els.map(el => [
        el.querySelector('[data-testid="stMetricLabel"]').innerText.trim(),
        el.querySelector('[data-testid="stMetricValue"]').innerText.trim()])"""
    found: dict[str, str] = {}
    for label, value in page.locator('[data-testid="stMetric"]').evaluate_all(read):
        found.setdefault(label, value)
    return found


def a_selling_tower(oracle: Client) -> Listing:
    """A listing selling units, the one whose own start price changed most (for a chart worth looking at)."""
    towers = []
    for listing in oracle.search_listings(per_page=100, filter='sellingStatus:"Selling Now"').results:
        units = [unit for plan in listing.floorPlans or [] for unit in plan.units]
        if any(u.status == "Available" and u.price for u in units) and any(u.status == "Sold" for u in units):
            changes = oracle.listing_history(listing.id or "", fields=["startPrice"], scope="listing", per_page=0)
            towers.append((changes.total, listing))
    assert towers, "no selling tower"
    return max(towers, key=lambda pair: pair[0])[1]


def test_a_listings_inventory_and_history(site: Dashboard, page: Any, oracle: Client) -> None:
    listing = a_selling_tower(oracle)
    units = [unit for plan in listing.floorPlans or [] for unit in plan.units]
    page.goto(f"{site.url}/listing?id={listing.id}")
    settle(page, "Inventory", "History")
    assert_no_exception(page)
    shown = metrics(page, "Available", "Reserved", "Sold", "Lowest available (CAD)", "Units")
    for status in ("Available", "Reserved", "Sold"):
        assert shown[status] == f"{sum(1 for unit in units if unit.status == status):,}", status
    lowest = min(u.price for u in units if u.status == "Available" and u.price is not None)
    assert shown["Lowest available (CAD)"] == cad(lowest)
    assert shown["Units"] == f"{len(units):,}"

    inventory = page.get_by_role("heading", name="Inventory")
    shot(page, "compare-listing-inventory", inventory)
    grid = page.locator('[data-testid="stVegaLiteChart"]').nth(1)  # the floor plans' chart is the first
    grid.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)
    box = grid.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.35, box["y"] + box["height"] * 0.6)  # a unit in the grid
    settle(page, "Deposits for this unit")
    assert_no_exception(page)
    picked = metrics(page, "Status", "Floor", "Price (CAD)")
    assert picked["Status"] in {"Available", "Reserved", "Sold"}
    assert any(unit.floor == picked["Floor"] and cad(unit.price) == picked["Price (CAD)"] for unit in units)
    shot(page, "compare-listing-unit-picked", grid)

    history = page.get_by_role("heading", name="History")
    shot(page, "compare-listing-history", history)
    total = oracle.listing_history(listing.id or "", per_page=0).total
    expect(page.get_by_text(f"{total:,} changes recorded")).to_have_count(1)


def test_compare_three_rows_picked_on_search(site: Dashboard, page: Any, oracle: Client) -> None:
    page.goto(f"{site.url}/search?selling=Selling%20Now")
    settle(page, "results in")
    page.get_by_text("Pick listings to compare").click()
    settle(page, "Select 2 to 4 rows")
    table = page.locator('[data-testid="stDataFrame"]').first
    table.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # the grid draws on a canvas a moment after it is placed
    box = table.bounding_box()
    for row in range(3):
        page.mouse.click(box["x"] + 15, box["y"] + 55 + 35 * row)  # the row's selection cell
        page.wait_for_timeout(300)
        page.wait_for_selector(READY)
    button = page.get_by_role("button", name="Compare selected (3)")
    expect(button).to_be_enabled()
    button.click()
    expect(page).to_have_url(re.compile(r"/compare\?.*ids="))
    settle(page, "Distances")
    assert_no_exception(page)
    ids = re.search(r"ids=([^&]+)", page.url).group(1).replace("%2C", ",").split(",")  # type: ignore[union-attr]
    assert len(ids) == 3
    listings = {listing.id: listing for listing in oracle.multiple_listings(ids)}

    table = page.locator('[data-testid="stTable"]').first
    expect(table.locator("thead th")).to_have_count(len(ids) + 1)  # drawn a moment after the run ends, when loaded
    headers = [h.strip() for h in table.locator("thead th").all_inner_texts()][1:]
    rows = {
        row.locator("th").inner_text().strip(): [c.strip() for c in row.locator("td").all_inner_texts()]
        for row in table.locator("tbody tr").all()
    }
    assert headers == [listings[i].name for i in ids]
    for column, listing_id in enumerate(ids):
        listing = listings[listing_id]
        left = sum(1 for plan in listing.floorPlans or [] for unit in plan.available_units)
        assert rows["Start price"][column].removesuffix(" ★") == cad(listing.startPrice)
        assert rows["Units available"][column].removesuffix(" ★") == f"{left:,}"
    shot(page, "compare-page")
    shot(page, "compare-page-distances", page.get_by_role("heading", name="Distances"))
