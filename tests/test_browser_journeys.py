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


def click_cell(page: Any, table: Any, x: float, y: float) -> None:
    table.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # the grid draws on a canvas a moment after it is placed
    box = table.bounding_box()
    page.mouse.click(box["x"] + x, box["y"] + y)


def test_a_click_on_a_name_in_search_opens_that_listing_in_this_tab(
    dashboard: Dashboard, screen: Any, oracle: Client
) -> None:
    screen.goto(f"{dashboard.url}/search")
    settle(screen, "results in")
    expect(screen.get_by_text("Click a name to open the listing")).to_be_visible()
    third = oracle.search_listings(per_page=25).results[2]  # the page's first page, in the service's order
    table = screen.locator(".st-key-search_table")
    click_cell(screen, table, 110, 38 + 35 * 2 + 17)  # the third row's name (right of the row's box)
    expect(screen).to_have_url(re.compile(rf"/listing\?id={third.id}"))
    settle(screen, "Floor plans")
    assert_no_exception(screen)
    assert len(screen.context.pages) == 1, "the listing opened in the same tab"
    expect(screen.get_by_role("heading", name=third.name or "", exact=True).first).to_be_visible()


def test_a_click_on_a_company_name_in_the_directory_opens_its_profile(
    dashboard: Dashboard, screen: Any, oracle: Client
) -> None:
    screen.goto(f"{dashboard.url}/profiles?collection=Builders")
    settle(screen, "Page 1 of")
    expect(screen.get_by_text("click a name to open the company's profile")).to_be_visible()
    second = oracle.search_profiles(collection="Builders", sort_by_name="asc", per_page=25).results[1]
    click_cell(screen, screen.locator(".st-key-profiles_table"), 200, 40 + 44 + 22)  # the second row's name
    collection, _, profile_id = (second.path or "").partition("/")
    expect(screen).to_have_url(re.compile(rf"/profile\?collection={collection}&id={profile_id}"))
    settle(screen, second.name or "")
    assert_no_exception(screen)
    assert len(screen.context.pages) == 1, "the profile opened in the same tab"
