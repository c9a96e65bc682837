"""The dashboard in a real browser: every page loads clean, and the journeys users make work end to end."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser_support import Dashboard, assert_no_exception, screenshot, settle

PAGES = [
    ("", "Home", "Listings by province"),
    ("search", "Search", "results in"),
    ("map", "Map", "listings within"),
    ("facets", "Facets", "Facets"),
    ("listing", "Listing", "Listing"),
    ("profiles", "Profiles", "Page 1 of"),
    ("profile", "Profile", "Profile"),
    ("webhooks", "Webhooks", "Subscriptions"),
]


def results_total(page: Any) -> int:
    """The N of the search page's "N results in X ms"."""
    text = page.get_by_text(re.compile(r"[\d,]+ results? in")).first.inner_text()
    return int(re.search(r"([\d,]+) results? in", text).group(1).replace(",", ""))  # type: ignore[union-attr]


@pytest.mark.parametrize(("path", "name", "expected"), PAGES)
def test_every_page_loads_without_an_exception(
    dashboard: Dashboard, page: Any, path: str, name: str, expected: str
) -> None:
    page.goto(f"{dashboard.url}/{path}")
    settle(page, "Reachable", expected)
    assert_no_exception(page)
    assert page.get_by_text("Embedded service (local catalogue)").count() == 1, "the shared sidebar is there"
    screenshot(page, f"page-{name.lower()}")


def test_search_filter_and_a_copied_link(dashboard: Dashboard, page: Any, browser: Any) -> None:
    page.goto(f"{dashboard.url}/search")
    settle(page, "results in")
    everything = results_total(page)
    box = page.get_by_placeholder(re.compile("Words in the name"))
    box.fill("condos")
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"q=condos"))
    settle(page, "results in")
    searched = results_total(page)
    assert 0 < searched < everything
    page.locator('[data-testid="stMultiSelect"]').filter(has_text="Type").first.click()
    page.get_by_role("option", name=re.compile(r"^Condo \(")).first.click()
    page.keyboard.press("Escape")
    expect(page).to_have_url(re.compile(r"type=Condo"))
    settle(page, "results in")
    filtered = results_total(page)
    assert 0 < filtered <= searched
    assert page.get_by_text(re.compile(r"Type: Condo")).count() >= 1, "a chip for the active filter"
    assert_no_exception(page)
    screenshot(page, "journey-search-filtered")

    copied = page.url
    other = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    other.goto(copied)
    settle(other, "results in")
    assert results_total(other) == filtered
    expect(other.get_by_placeholder(re.compile("Words in the name"))).to_have_value("condos")
    screenshot(other, "journey-search-copied-link")
    other.context.close()


def test_open_a_listing_then_follow_its_builder(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/search?view=cards&sort=newest")
    settle(page, "results in")
    link = page.locator('a[href*="listing?id="]').first
    name = link.inner_text().strip()
    link.click()
    expect(page).to_have_url(re.compile(r"/listing\?id="))
    settle(page, "Floor plans")
    assert page.get_by_role("heading", name=re.compile(re.escape(name[:20]))).count() >= 1
    assert_no_exception(page)
    screenshot(page, "journey-listing")
    builder = page.locator('a[href*="profile?collection=Builders"]').first
    builder_name = builder.inner_text().strip()
    if builder.get_attribute("target") == "_blank":  # markdown links open beside the listing
        with page.context.expect_page() as opened:
            builder.click()
        profile = opened.value
    else:
        builder.click()
        profile = page
    expect(profile).to_have_url(re.compile(r"/profile\?collection=Builders"))
    settle(profile, builder_name)
    assert profile.get_by_text(re.compile(r"\d+ listings?")).count() >= 1
    assert_no_exception(profile)
    screenshot(profile, "journey-profile")


def test_set_a_map_centre_and_radius(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/map")
    settle(page, "listings within")
    centre = page.get_by_role("textbox", name="Centre (lat,lng)")
    centre.fill("43.6532, -79.3832")
    centre.press("Enter")
    expect(page).to_have_url(re.compile(r"center=43\.65"))
    settle(page, "listings within")
    before = page.get_by_text(re.compile(r"\d+ listings? within")).first.inner_text()
    slider = page.get_by_role("slider").first
    slider.focus()
    slider.press("End")  # one key, one value: the largest radius, 100 km
    expect(page).to_have_url(re.compile(r"radius=100"))
    expect(page.get_by_text(re.compile(r"\d+ listings? within 100 km")).first).to_be_visible()
    settle(page, "listings within 100 km")
    after = page.get_by_text(re.compile(r"\d+ listings? within")).first.inner_text()
    assert before != after
    assert int(re.match(r"(\d+)", after).group(1)) >= int(re.match(r"(\d+)", before).group(1))  # type: ignore[union-attr]
    assert page.locator('[data-testid="stDataFrame"]').count() >= 1, "the in-radius table"
    assert page.locator("canvas").count() >= 1, "the map draws"
    assert_no_exception(page)
    screenshot(page, "journey-map")


def test_manage_a_webhook_from_creation_to_deletion(dashboard: Dashboard, page: Any) -> None:
    from standardwebhooks import Webhook

    from precon.client import Client
    from tests.test_webhooks import Receiver

    receiver = Receiver().start()
    try:
        page.goto(f"{dashboard.url}/webhooks")
        settle(page, "Subscriptions", "Reachable")
        service_url = page.get_by_text(re.compile(r"^http://127\.0\.0\.1:\d+$")).first.inner_text().strip()
        page.get_by_role("textbox", name="Target URL").fill(receiver.url)
        page.get_by_role("button", name=re.compile("Create subscription")).click()
        settle(page, "Subscribed")
        secret = page.get_by_text(re.compile(r"^whsec_")).first.inner_text().strip()
        with Client(service_url, "precon-dev-key", cache=False) as client:
            [subscription] = [s for s in client.list_webhooks() if s.targetUrl == receiver.url]
        screenshot(page, "journey-webhooks-created")

        page.locator('[data-testid="stSelectbox"]').filter(has_text="Profile").last.click()
        page.get_by_role("option").first.click()
        page.get_by_role("button", name=re.compile("Trigger profile webhook")).click()
        settle(page, "queued to 1 subscription")
        headers, body = receiver.wait_for(1)[0]
        assert Webhook(secret).verify(body, headers)["type"] == "profile.updated"
        page.get_by_role("button", name=re.compile("Refresh")).click()
        settle(page, "Delivery log")
        with Client(service_url, "precon-dev-key", cache=False) as client:
            deadline = 20
            while client.webhook_deliveries(subscription=subscription.id).results[0].status != "delivered":
                page.wait_for_timeout(250)
                deadline -= 0.25
                assert deadline > 0, "the delivery was not marked delivered"
        assert page.get_by_text(re.compile("delivered")).count() >= 1
        screenshot(page, "journey-webhooks-delivered")

        page.locator('[data-testid="stSelectbox"]').filter(has_text="Subscription").first.click()
        page.get_by_role("option").filter(has_text=receiver.url).first.click()
        page.get_by_text(re.compile("I understand deliveries stop")).click()
        page.get_by_role("button", name=re.compile("Delete subscription")).click()
        settle(page)
        with Client(service_url, "precon-dev-key", cache=False) as client:
            assert all(s.id != subscription.id for s in client.list_webhooks())
        assert_no_exception(page)
        screenshot(page, "journey-webhooks-deleted")
    finally:
        receiver.stop()
