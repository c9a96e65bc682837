"""Journeys of several steps in a real browser at 1440x900, as a new user takes them: a choice carried across pages
and reloads, a click on a name that opens its record. Each checked against the service's own answers."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from precon.client import Client
from tests.browser_support import Dashboard, assert_no_exception, page_of, settle

VIEWPORT = {"width": 1440, "height": 900}


@pytest.fixture
def screen(browser: Any) -> Iterator[Any]:
    with page_of(browser, VIEWPORT["width"], VIEWPORT["height"]) as opened:
        yield opened


def compare_link(page: Any) -> Any:
    return page.locator(".st-key-compare_actions").get_by_role("link")


def test_the_compare_list_outlives_listings_opened_by_address_and_a_reload(
    dashboard: Dashboard, screen: Any, oracle: Client
) -> None:
    chosen = [found for found in oracle.search_listings(per_page=3).results if found.id]
    assert len(chosen) == 3
    for count, listing in enumerate(chosen, start=1):
        screen.goto(f"{dashboard.url}/listing?id={listing.id}")  # typed in the address bar: a new session each
        settle(screen)
        screen.locator(".st-key-compare_actions").get_by_role("button", name="Add to compare").click()
        settle(screen)
        expect(compare_link(screen)).to_contain_text(f"Compare ({count} of 4")
        assert_no_exception(screen)
    expect(screen).to_have_url(re.compile(r"compare=" + ",".join(f.id or "" for f in chosen).replace(",", "(,|%2C)")))

    screen.reload()
    settle(screen)
    expect(compare_link(screen)).to_contain_text("Compare (3 of 4")

    screen.goto(f"{dashboard.url}/compare")  # no ids in the address: the list kept for this browser
    settle(screen)
    assert_no_exception(screen)
    links = screen.locator(".st-key-compare_links")
    for listing in chosen:
        expect(links.get_by_role("link", name=listing.name or listing.id, exact=True)).to_be_visible()
    expect(screen.get_by_text("to compare: Compare needs")).to_have_count(0)

