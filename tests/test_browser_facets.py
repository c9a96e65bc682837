"""The Facets page in a real browser: its filters and choices rerun the page's fragment alone, and what it shows
after each must be the service's count for the address, and what a fresh load of that address shows."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlparse

import pytest
from playwright.sync_api import expect

from precon.client import Client
from precon.dashboard.filter_state import PARAMS, FilterState
from tests.browser_support import Dashboard, assert_no_exception, page_of, settle


@pytest.fixture
def screen(browser: Any) -> Iterator[Any]:
    with page_of(browser, 1400, 1000) as opened:
        yield opened


def in_view(page: Any, oracle: Client) -> int:
    """The page's "N listings in view", checked against the service's count for the filters in the address."""
    settle(page, "in view")
    assert_no_exception(page)
    text = page.get_by_text(re.compile(r"[\d,]+ listings? in view")).first.inner_text()
    shown = int(re.search(r"([\d,]+) listings? in view", text).group(1).replace(",", ""))  # type: ignore[union-attr]
    state, problems = FilterState.from_params({k: v for k, v in parse_qsl(urlparse(page.url).query) if k in PARAMS})
    assert problems == [], problems
    expected = oracle.search_listings(
        state.text or None, per_page=0, filter=state.listing_expression(), unit_filter=state.unit_expression()
    ).total
    assert shown == expected, (page.url, shown, expected)
    return shown


def test_a_pill_a_choice_and_a_chip_on_facets_keep_the_address_and_the_count(
    dashboard: Dashboard, screen: Any, oracle: Client
) -> None:
    screen.goto(f"{dashboard.url}/facets")
    everything = in_view(screen, oracle)
    screen.locator('[data-testid="stButtonGroup"]').get_by_role("button", name="Condo", exact=True).first.click()
    expect(screen).to_have_url(re.compile(r"type=Condo"))
    condos = in_view(screen, oracle)
    assert 0 < condos < everything
    handle = (
        screen.locator('[data-testid="stSlider"]').filter(has_text="Values per facet").locator('input[type="range"]')
    )
    handle.first.focus()
    handle.first.press("ArrowRight")
    expect(screen).to_have_url(re.compile(r"top=16"))
    assert in_view(screen, oracle) == condos
    expect(screen).to_have_url(re.compile(r"type=Condo"))

    fresh = screen.context.browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    try:
        fresh.goto(screen.url)
        assert in_view(fresh, oracle) == condos, "a fresh load of the address shows the same count"
    finally:
        fresh.context.close()

    screen.locator(".st-key-facets_chips").get_by_role("button", name=re.compile(r"^Type: Condo")).click()
    expect(screen).not_to_have_url(re.compile(r"type="))
    assert in_view(screen, oracle) == everything
    expect(screen).to_have_url(re.compile(r"top=16"))
