"""In a real browser at 1440 x 900: Search, Map and Facets show their results in the first screen, and the Changes
page's counts are the service's history for the window and filters chosen, step after step."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlparse

import pytest

from precon.client import Client
from precon.dashboard.filter_state import PARAMS, FilterState
from precon.service.embedded import EmbeddedService
from tests.browser_support import (
    READY,
    SCREENSHOTS,
    Dashboard,
    assert_no_exception,
    dashboard_over_new_catalogue,
    page_of,
    screenshot,
    settle,
)

playwright_api = pytest.importorskip("playwright.sync_api")

LISTINGS = 300
HISTORY_DAYS = 120
WIDTH, HEIGHT = 1440, 900
LABELS = {
    "Launches": "launch",
    "Sell-outs": "sellout",
    "Price increases": "increase",
    "Price cuts": "cut",
    "Units sold": "unitsold",
}


@pytest.fixture(scope="module")
def history_dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    """The dashboard over a catalogue with 120 days of simulated market history."""
    with dashboard_over_new_catalogue(tmp_path_factory.mktemp("browser-history"), LISTINGS, HISTORY_DAYS) as started:
        yield started


@pytest.fixture(scope="module")
def history_oracle(history_dashboard: Dashboard) -> Iterator[Client]:
    with EmbeddedService(history_dashboard.data_dir, listings=LISTINGS) as service:
        yield service.client


@pytest.fixture
def screen(browser: Any) -> Iterator[Any]:
    with page_of(browser, WIDTH, HEIGHT) as opened:
        yield opened


def first_screen(page: Any, name: str) -> Path:
    """What a person sees without scrolling."""
    page.wait_for_timeout(800)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"first-screen-{name}.png"
    page.screenshot(path=str(path))
    return path


def visible_from_top(page: Any, selector: str, pixels: float) -> dict[str, float]:
    """The element's box, after checking that its top ``pixels`` are inside the first screen (not scrolled)."""
    element = page.locator(selector).first
    element.wait_for(state="visible")
    box = element.bounding_box()
    assert box is not None, selector
    assert box["y"] >= 0 and box["y"] + pixels <= HEIGHT, (selector, box)
    return box


def test_search_map_and_facets_show_results_in_the_first_screen(history_dashboard: Dashboard, screen: Any) -> None:
    screen.goto(f"{history_dashboard.url}/search")
    settle(screen, "results in")
    # The header and the first rows of the grid (35 px each) without scrolling.
    visible_from_top(screen, '[data-testid="stDataFrame"]', 35 * 4)
    first_screen(screen, "search")

    screen.goto(f"{history_dashboard.url}/map")
    settle(screen, "listings within")
    visible_from_top(screen, '[data-testid="stDeckGlJsonChart"]', 300)
    first_screen(screen, "map")

    screen.goto(f"{history_dashboard.url}/facets")
    settle(screen, "Counts per facet")
    visible_from_top(screen, '[data-testid="stVegaLiteChart"]', 150)
    first_screen(screen, "facets")
    assert_no_exception(screen)


# -- the Changes page against the history ------------------------------------------------------------------------


def oracle_counts(client: Client, since: datetime, state: FilterState) -> dict[str, int]:
    """Every entry of the window (no narrowing by field), classified here by the definitions the page states."""
    counts = dict.fromkeys(LABELS.values(), 0)
    for entry in client.iter_changes(
        since=since.isoformat(), filter=state.listing_expression(), unit_filter=state.unit_expression(),
        search=state.text or None,
    ):  # fmt: skip
        if entry.change != "updated":
            continue
        field, before, after = (entry.scope, entry.field), entry.before, entry.after
        if field == ("listing", "sellingStatus") and (before, after) == ("Pending", "Selling Now"):
            counts["launch"] += 1
        elif field == ("listing", "sellingStatus") and after == "Sold Out" and before != "Sold Out":
            counts["sellout"] += 1
        elif field == ("listing", "startPrice") and isinstance(before, int | float) and isinstance(after, int | float):
            if before > 0 and after > 0 and before != after:
                counts["increase" if after > before else "cut"] += 1
        elif field == ("unit", "status") and after == "Sold" and before != "Sold":
            counts["unitsold"] += 1
    return counts


def shown_counts(page: Any) -> dict[str, int]:
    metrics = page.locator('[data-testid="stMetric"]')
    shown = {}
    for index in range(metrics.count()):
        label = metrics.nth(index).locator('[data-testid="stMetricLabel"]').inner_text().strip()
        value = metrics.nth(index).locator('[data-testid="stMetricValue"]').inner_text().strip()
        if label in LABELS:
            shown[LABELS[label]] = int(value.replace(",", ""))
    return shown


def check_changes(page: Any, oracle: Client, days: int) -> FilterState:
    settle(page, "changes in")
    playwright_api.expect(page.locator('[data-testid="stMetric"]')).to_have_count(len(LABELS))
    page.wait_for_selector(READY)
    assert_no_exception(page)
    params = dict(parse_qsl(urlparse(page.url).query))
    state, problems = FilterState.from_params({k: v for k, v in params.items() if k in PARAMS})
    assert problems == []
    since = datetime.combine(datetime.now(UTC).date() - timedelta(days=days), datetime.min.time(), UTC)
    assert shown_counts(page) == oracle_counts(oracle, since, state), page.url
    return state


def test_changes_follow_the_window_and_the_filters(
    history_dashboard: Dashboard, screen: Any, history_oracle: Client
) -> None:
    expect = playwright_api.expect
    screen.goto(f"{history_dashboard.url}/changes")
    check_changes(screen, history_oracle, 30)
    first_screen(screen, "changes")

    screen.get_by_text("90 days", exact=True).first.click()
    expect(screen).to_have_url(re.compile(r"window=90"))
    check_changes(screen, history_oracle, 90)

    screen.locator(".st-key-changes_filters details summary").click()
    boxes = screen.locator(".st-key-rf_list_type").locator('[data-testid="stCheckbox"]')
    boxes.first.wait_for(state="visible")
    boxes.filter(has_text="Condo").first.locator("label").click()
    expect(screen).to_have_url(re.compile(r"type=Condo"))
    screen.wait_for_selector(READY)
    state = check_changes(screen, history_oracle, 90)
    assert state.facets == {"type": ("Condo",)}
    expect(screen).to_have_url(re.compile(r"window=90"))
    screenshot(screen, "changes-condos-90-days")

    screen.goto(f"{history_dashboard.url}/changes?from=2026-13-40&window=90")
    settle(screen, "not a date")
    assert_no_exception(screen)
    expect(screen.locator('[data-testid="stMetric"]')).to_have_count(5)  # the rest of the page works
