"""The Market page in a real browser at 1440 x 900: its charts drawn, its state in the address, and a section's CSV,
downloaded as a person would, equal to what the service's ``market_stats`` answers for the same request, step after
step (a grouping, quarters, a filter)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlparse

import pytest

from precon.client import Client
from precon.dashboard import labels as words
from precon.dashboard import market_view as mv
from precon.dashboard.filter_state import PARAMS, FilterState
from precon.service.embedded import EmbeddedService
from tests.browser_support import (
    READY,
    Dashboard,
    assert_no_exception,
    dashboard_over_new_catalogue,
    page_of,
    screenshot,
    settle,
)

playwright_api = pytest.importorskip("playwright.sync_api")

LISTINGS = 300
HISTORY_DAYS = 200
WIDTH, HEIGHT = 1440, 900
CHARTS = 7
"""Units sold; available and sell-through; launches; median price and per sq ft; price changes."""


@pytest.fixture(scope="module")
def market_dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    with dashboard_over_new_catalogue(tmp_path_factory.mktemp("browser-market"), LISTINGS, HISTORY_DAYS) as started:
        yield started


@pytest.fixture(scope="module")
def market_oracle(market_dashboard: Dashboard) -> Iterator[Client]:
    with EmbeddedService(market_dashboard.data_dir, listings=LISTINGS) as service:
        yield service.client


@pytest.fixture
def screen(browser: Any) -> Iterator[Any]:
    with page_of(browser, WIDTH, HEIGHT) as opened:
        yield opened


def request_of(page: Any) -> tuple[mv.MarketRequest, FilterState]:
    params = dict(parse_qsl(urlparse(page.url).query))
    request, problems = mv.request_from_params(params, datetime.now(UTC).date())
    state, state_problems = FilterState.from_params({k: v for k, v in params.items() if k in PARAMS})
    assert problems == [] and state_problems == [], page.url
    return request, state


def downloaded_units_sold(page: Any) -> list[dict[str, str]]:
    with page.expect_download() as download:
        page.locator(".st-key-market_sold_csv button").click()
    return list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text())))


def check(page: Any, oracle: Client) -> None:
    """The page settled, its charts drawn, and its units-sold CSV the service's figures for the address's request."""
    settle(page, "Units sold")
    page.wait_for_selector(READY)
    assert_no_exception(page)
    playwright_api.expect(page.locator('[data-testid="stVegaLiteChart"]')).to_have_count(CHARTS)
    request, state = request_of(page)
    asked = {
        "filter": state.listing_expression(), "unit_filter": state.unit_expression(), "search": state.text or None,
        "interval": request.interval, "since": request.since(), "until": request.until(),
    }  # fmt: skip
    total = oracle.market_stats(**asked)  # type: ignore[arg-type]
    rows = downloaded_units_sold(page)
    labels = [mv.interval_label(date.fromisoformat(p.start[:10]), request.interval) for p in total.series[0].points]
    assert [row["Interval"] for row in rows] == labels
    total_column = "Units sold" if request.group_by is None else "Units sold · All matching listings"
    assert [int(row[total_column]) for row in rows] == [p.unitsSold for p in total.series[0].points]
    if request.group_by:
        grouped = oracle.market_stats(group_by=request.group_by, **asked)  # type: ignore[arg-type]
        for series in grouped.series:
            group = words.group_label(request.group_by, series.group)
            shown = [int(row[f"Units sold · {group}"]) for row in rows]
            assert shown == [p.unitsSold for p in series.points], series.group


def test_a_journey_through_the_market(market_dashboard: Dashboard, screen: Any, market_oracle: Client) -> None:
    expect = playwright_api.expect
    screen.goto(f"{market_dashboard.url}/market")
    check(screen, market_oracle)
    screenshot(screen, "market-first-screen")

    screen.get_by_text("Quarters", exact=True).first.click()
    expect(screen).to_have_url(re.compile(r"interval=quarter"))
    check(screen, market_oracle)

    screen.locator(".st-key-market_group").click()
    screen.get_by_role("option", name="Building type").click()
    expect(screen).to_have_url(re.compile(r"groupBy=type"))
    check(screen, market_oracle)
    screen.set_viewport_size({"width": WIDTH, "height": 2400})
    screenshot(screen, "market-by-type-quarters")
    screen.set_viewport_size({"width": WIDTH, "height": HEIGHT})

    screen.locator(".st-key-market_filters details summary").click()
    boxes = screen.locator(".st-key-rf_list_type").locator('[data-testid="stCheckbox"]')
    boxes.first.wait_for(state="visible")
    condo = boxes.filter(has_text="Condo").first
    condo.locator("label").click()
    if not condo.locator("input").is_checked():  # the click came while the page was drawn again: not taken
        screen.wait_for_selector(READY)
        condo.locator("label").click()
    expect(screen).to_have_url(re.compile(r"type=Condo"))
    check(screen, market_oracle)
    expect(screen).to_have_url(re.compile(r"interval=quarter"))

    screen.goto(f"{market_dashboard.url}/market?interval=week&groupBy=city")
    settle(screen, "not one of month or quarter")
    assert_no_exception(screen)
    check(screen, market_oracle)
