"""Search and the company directory from the keyboard, and a slider step on Search, in a real browser.

A keyboard user Tabs into a results grid (past its toolbar, onto the first row, Tab again to its name), moves
with the arrow keys and opens the row with Shift+Space. Moving the grid's cursor opens nothing: the grids used to
open whatever row the cursor landed on in the name column (a cell selection, which the grid sends on every move).
A slider step on Search reruns only the page's search fragment; what it shows must be what a fresh load of its new
address shows, and the count the service's for that filter.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, urlparse

import pytest
from playwright.sync_api import expect

from precon.client import Client
from precon.dashboard.filter_state import PARAMS, FilterState
from tests.browser_support import READY, Dashboard, assert_no_exception, page_of, screenshot, settle

ARROWS = ["ArrowDown", "ArrowDown", "ArrowRight", "ArrowLeft", "ArrowDown", "ArrowUp", "ArrowUp", "ArrowUp"]
"""Down the name column and back: each key lands the cursor on a name cell of another row."""


@pytest.fixture
def screen(browser: Any) -> Iterator[Any]:
    with page_of(browser, 1400, 1000) as opened:
        yield opened


def active_cell(page: Any) -> str | None:
    """The grid's cell under the cursor, once the cursor has moved (``glide-cell-<column>-<row>``, rows from 0, the
    row-box column being 0)."""
    return page.evaluate("() => document.activeElement.getAttribute('data-testid')")  # type: ignore[no-any-return]


def tab_into_grid(page: Any, start: Any, column: int) -> None:
    """From ``start`` (a control above a grid), Tab past the grid's toolbar into the grid, then to ``column`` of its
    first row. The grid takes the focus on its canvas and may hand it to a cell a moment later: either is in it."""
    start.focus()
    visited: list[str | None] = []
    while not in_grid(active_cell(page)):
        assert len(visited) < 20, f"Tab never reached the grid: {visited}"
        page.keyboard.press("Tab")
        page.wait_for_timeout(150)
        visited.append(active_cell(page))
    page.wait_for_timeout(400)
    cell = active_cell(page) or ""
    at = int(cell.split("-")[2]) if cell.startswith("glide-cell-") else 1  # the canvas: its first cell's column
    for _ in range(abs(column - at)):
        page.keyboard.press("Tab" if column > at else "Shift+Tab")  # in the grid, Tab moves the cursor one cell
        page.wait_for_timeout(150)


def in_grid(cell: str | None) -> bool:
    return cell is not None and (cell == "data-grid-canvas" or cell.startswith("glide-cell-"))


def press_quietly(page: Any, keys: list[str], url: str) -> None:
    """Each key, then a wait long enough for any rerun it caused; the address must not have moved."""
    for key in keys:
        page.keyboard.press(key)
        page.wait_for_timeout(400)
        page.wait_for_selector(READY)
        assert page.url == url, f"{key} changed the page: {page.url}"


def test_a_keyboard_user_opens_the_third_result_and_arrows_alone_open_nothing(
    dashboard: Dashboard, screen: Any, oracle: Client
) -> None:
    screen.goto(f"{dashboard.url}/search")
    settle(screen, "results in")
    expect(screen.get_by_text("press Shift+Space").first).to_be_visible()
    third = oracle.search_listings(per_page=25).results[2]  # the page's first page, in the service's order
    screen.locator(".st-key-search_table").scroll_into_view_if_needed()
    screen.wait_for_timeout(1000)  # the grid draws on a canvas a moment after it is placed
    tab_into_grid(screen, screen.locator(".st-key-search_compare_mode input"), 1)  # the first row's name
    press_quietly(screen, ARROWS, screen.url)  # ends on the first row's name again
    assert active_cell(screen) == "glide-cell-1-0"
    assert_no_exception(screen)
    press_quietly(screen, ["ArrowDown", "ArrowDown"], screen.url)
    assert active_cell(screen) == "glide-cell-1-2", "on the third row's name"
    screen.keyboard.press("Shift+Space")
    expect(screen).to_have_url(re.compile(rf"/listing\?id={third.id}"))
    settle(screen, "Floor plans")
    assert_no_exception(screen)
    expect(screen.get_by_role("heading", name=third.name or "", exact=True).first).to_be_visible()


def test_a_keyboard_user_opens_the_third_company_and_arrows_alone_open_nothing(
    dashboard: Dashboard, screen: Any, oracle: Client
) -> None:
    screen.goto(f"{dashboard.url}/profiles?collection=Builders")
    settle(screen, "Page 1 of")
    expect(screen.get_by_text("press Shift+Space").first).to_be_visible()
    third = oracle.search_profiles(collection="Builders", sort_by_name="asc", per_page=25).results[2]
    screen.locator(".st-key-profiles_table").scroll_into_view_if_needed()
    screen.wait_for_timeout(1000)
    sort_choice = screen.get_by_role("radio").last  # the last control above the table
    tab_into_grid(screen, sort_choice, 2)  # the first row's name, after the logo
    press_quietly(screen, ARROWS, screen.url)
    assert active_cell(screen) == "glide-cell-2-0"
    assert_no_exception(screen)
    press_quietly(screen, ["ArrowDown", "ArrowDown"], screen.url)
    assert active_cell(screen) == "glide-cell-2-2", "on the third row's name"
    screen.keyboard.press("Shift+Space")
    collection, _, profile_id = (third.path or "").partition("/")
    expect(screen).to_have_url(re.compile(rf"/profile\?collection={collection}&id={profile_id}"))
    settle(screen, third.name or "")
    assert_no_exception(screen)


def shown(page: Any) -> dict[str, Any]:
    """What Search shows of a filter: the count, the chips, the price slider's handles and the cards' names, once
    two looks 300 ms apart agree and, where the address names filters, their chips are drawn (a run that has drawn
    the count and the cards may not have drawn the rest yet, or another run may follow it)."""
    settle(page, "results in")
    last = _looked(page)
    for _ in range(40):
        page.wait_for_timeout(300)
        page.wait_for_selector(READY)
        now = _looked(page)
        if now == last and (now["chips"] or not now["filters"]):
            return now
        last = now
    return last


def _looked(page: Any) -> dict[str, Any]:
    count = page.get_by_text(re.compile(r"[\d,]+ results? in")).first.inner_text()
    return {
        "count": int(re.search(r"([\d,]+) results? in", count).group(1).replace(",", "")),  # type: ignore[union-attr]
        "chips": page.locator(".st-key-search_chips").get_by_role("button").all_inner_texts(),
        "price": page.locator('.st-key-rf_range_price input[type="range"]').evaluate_all(
            "els => els.map(el => [el.value, el.getAttribute('aria-valuetext')])"
        ),
        "names": page.locator(".precon-card-title").all_inner_texts(),
        "filters": {k: v for k, v in parse_qsl(urlparse(page.url).query) if k in PARAMS},
    }


def open_filters(page: Any) -> None:
    details = page.locator(".st-key-search_filters details")
    if details.first.get_attribute("open") is None:
        details.first.locator("summary").click()
    page.locator(".st-key-rf_range_price").first.wait_for(state="visible")


def test_slider_steps_show_what_a_fresh_load_of_the_address_shows(
    dashboard: Dashboard, screen: Any, oracle: Client
) -> None:
    screen.goto(f"{dashboard.url}/search?view=cards&type=Condo")
    before = shown(screen)
    open_filters(screen)
    handle = screen.locator('.st-key-rf_range_price input[type="range"]').first  # the lower handle
    for step in range(1, 3):
        handle.focus()
        handle.press("ArrowRight")
        expect(screen).to_have_url(re.compile(r"price=\d+\.\."))
        after = shown(screen)
        state, problems = FilterState.from_params(after["filters"])
        assert problems == [] and state.facets == {"type": ("Condo",)}, (step, after["filters"])
        low, high = state.ranges["price"]
        assert low is not None and high is None, after["filters"]
        expected = oracle.search_listings(
            per_page=0, filter=state.listing_expression(), unit_filter=state.unit_expression()
        ).total
        assert after["count"] == expected, (step, after, expected)
        assert any(chip.startswith("Price") for chip in after["chips"]), after["chips"]
        assert after["filters"] != before["filters"] and after["names"], (before, after)
        assert_no_exception(screen)
        assert screen.get_by_text("Embedded service (local catalogue)").count() == 1, "the sidebar is still there"
        before = after
    screenshot(screen, "search-after-slider-steps")

    fresh = screen.context.browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    try:
        fresh.goto(screen.url)
        settle(fresh, "results in")
        open_filters(fresh)
        again = shown(fresh)
        if not again["price"]:  # a run after the first drew the filters closed again: open them once more
            open_filters(fresh)
            again = shown(fresh)
        assert again == before, "a fresh load of the address shows what the slider steps showed"
    finally:
        fresh.context.close()
