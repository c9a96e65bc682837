"""The dashboard in a real browser: every page loads clean, and the journeys users make work end to end."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlparse

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from precon.dashboard.filter_state import PARAMS, FilterState
from tests.browser_support import READY, Dashboard, assert_no_exception, screenshot, settle

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


def address_params(page: Any) -> dict[str, str]:
    return dict(parse_qsl(urlparse(page.url).query, keep_blank_values=True))


def check_step(page: Any, oracle: Any) -> FilterState:
    """After a step: the address holds clean values, and the count shown is the service's for those filters."""
    settle(page, "results in")
    assert_no_exception(page)
    params = {k: v for k, v in address_params(page).items() if k in PARAMS}
    state, problems = FilterState.from_params(params)
    assert problems == [], problems
    for values in state.facets.values():
        assert not any(re.search(r"\(\d|·", value) for value in values), values
    expected = oracle.search_listings(
        state.text or None, per_page=0, filter=state.listing_expression(), unit_filter=state.unit_expression()
    ).total
    assert results_total(page) == expected, (page.url, results_total(page), expected)
    return state


def refinement_labels(page: Any, param: str) -> list[tuple[str, bool]]:
    """A facet's refinement list as (label, ticked), once the same list has been read twice in a row.

    Streamlit draws the list a moment after a run ends, element by element, so a single read can catch
    a half-drawn list (one label twice, another missing); two equal reads apart in time are a settled one.
    """
    boxes = page.locator(f".st-key-rf_list_{param}").locator('[data-testid="stCheckbox"]')
    read = "els => els.map(el => [el.innerText.split(/\\s+/).join(' ').trim(), el.querySelector('input').checked])"
    previous: list[tuple[str, bool]] | None = None
    for _ in range(60):
        page.wait_for_selector(READY)
        current = [tuple(pair) for pair in boxes.evaluate_all(read)]
        if current and current == previous and len({label for label, _ in current}) == len(current):
            return current  # type: ignore[return-value]
        previous = current  # type: ignore[assignment]
        page.wait_for_timeout(250)
    raise AssertionError(f"the refinement list of {param} never settled: {previous}")


def open_filters(page: Any) -> None:
    """Opens Search's "Filters" panel, closed at first so that the results fill the first screen."""
    details = page.locator(".st-key-search_filters details")
    if details.count() and details.first.get_attribute("open") is None:
        details.first.locator("summary").click()
        page.locator(".st-key-rf_list_type").first.wait_for(state="visible")


def tick(page: Any, param: str, value: str | None = None) -> str:
    """Ticks a value in a facet's refinement list (the first unticked one when ``value`` is None); its value."""
    open_filters(page)
    seen = refinement_labels(page, param)
    for index, (label, ticked) in enumerate(seen):
        name = label.rpartition(" · ")[0]
        if ticked or (value is not None and name != value):
            continue
        page.locator(f".st-key-rf_list_{param}").locator('[data-testid="stCheckbox"]').nth(index).locator(
            "label"
        ).click()
        page.wait_for_function(  # the pick reached the address: the rerun it causes is under way or done
            "([param, value]) => new URLSearchParams(location.search).get(param)?.includes(value)", arg=[param, name]
        )
        return name
    raise AssertionError(f"nothing to tick under {param}: {seen}")


def test_search_journey_pick_pick_pick_slide_remove_page_sort(dashboard: Dashboard, page: Any, oracle: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{dashboard.url}/search")
    check_step(page, oracle)
    tick(page, "type", "Condo")
    expect(page).to_have_url(re.compile(r"type=Condo(&|$)"))
    check_step(page, oracle)
    selling = tick(page, "selling")
    check_step(page, oracle)
    city = tick(page, "city")
    state = check_step(page, oracle)
    assert state.facets == {"type": ("Condo",), "selling": (selling,), "city": (city,)}
    open_filters(page)
    slider = page.locator('.st-key-rf_range_beds input[type="range"]').first
    slider.focus()
    slider.press("ArrowRight")
    expect(page).to_have_url(re.compile(r"beds="))
    state = check_step(page, oracle)
    assert state.facets == {"type": ("Condo",), "selling": (selling,), "city": (city,)}, "values never rewritten"
    screenshot(page, "journey-search-three-picks-and-beds")
    page.get_by_role("button", name=re.compile(r"^Type: Condo")).click()
    expect(page).not_to_have_url(re.compile(r"type="))
    state = check_step(page, oracle)
    assert state.facets == {"selling": (selling,), "city": (city,)}
    next_button = page.get_by_role("button", name="Next")
    if next_button.is_enabled():
        next_button.click()
        expect(page).to_have_url(re.compile(r"page=2"))
        check_step(page, oracle)
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Sort by").click()
    page.get_by_role("option", name="Price: low to high").click()
    expect(page).to_have_url(re.compile(r"sort=price_asc"))
    state = check_step(page, oracle)
    assert state.facets == {"selling": (selling,), "city": (city,)}
    assert_no_exception(page)
    screenshot(page, "journey-search-sorted")

    copied = page.url
    other = page.context.browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    other.goto(copied)
    assert check_step(other, oracle) == state, "a copied link reopens the same view"
    other.context.close()


def test_search_words_then_the_analyst_question_then_the_map(dashboard: Dashboard, page: Any, oracle: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(f"{dashboard.url}/search?type=Condo&beds=2..&price=..800000&per=50")
    state = check_step(page, oracle)
    box = page.get_by_placeholder(re.compile("Words in the name"))
    box.fill("park")
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"q=park"))
    state = check_step(page, oracle)
    assert state.unit_expression() is not None and state.text == "park"
    box.fill("")
    box.press("Enter")
    state = check_step(page, oracle)
    page.get_by_role("radio", name="Cards").click() if page.get_by_role("radio", name="Cards").count() else (
        page.get_by_text("Cards", exact=True).first.click()
    )
    expect(page).to_have_url(re.compile(r"view=cards"))
    check_step(page, oracle)
    shown = page.get_by_text(re.compile(r"\d+ of \d+ plans match"))
    assert shown.count() == min(results_total(page), 50)
    screenshot(page, "journey-search-unit-question")
    page.get_by_role("link", name="Show on map").click()
    expect(page).to_have_url(re.compile(r"/map\?.*beds=2"))
    settle(page, " km of ")
    assert_no_exception(page)
    screenshot(page, "journey-search-to-map")


def test_a_row_opens_its_listing_in_this_tab_and_back_returns_to_the_results(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/search?type=Condo&sort=price_asc&page=2")
    settle(page, "results in")
    results_url = page.url
    table = page.locator('[data-testid="stDataFrame"]').first
    table.scroll_into_view_if_needed()
    page.wait_for_timeout(1000)  # the grid draws on a canvas a moment after it is placed
    box = table.bounding_box()
    page.mouse.click(box["x"] + 15, box["y"] + 55)  # the first row's selection cell
    expect(page).to_have_url(re.compile(r"/listing\?id="))
    settle(page, "Floor plans")
    assert_no_exception(page)
    assert len(page.context.pages) == 1, "the listing opened in the same tab"
    page.get_by_role("link", name="Back to results").click()
    expect(page).to_have_url(re.compile(r"/search\?"))
    settle(page, "results in")
    assert address_params(page) == dict(parse_qsl(urlparse(results_url).query)), "the same results again"


def test_open_a_listing_then_follow_its_builder(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/search?view=cards&sort=newest")
    settle(page, "results in")
    titles, buttons = page.locator(".precon-card-title"), page.get_by_role("button", name="Open listing")
    expect(buttons).to_have_count(titles.count())  # every card's button drawn, so the first is the first card's
    name = titles.first.inner_text().strip()
    buttons.first.click()
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
    slider.press("End")  # one key, one value: the largest preset, 25 km
    expect(page).to_have_url(re.compile(r"radius=25"))
    expect(page.get_by_text(re.compile(r"\d+ listings? within 25 km")).first).to_be_visible()
    settle(page, "listings within 25 km")
    after = page.get_by_text(re.compile(r"\d+ listings? within")).first.inner_text()
    assert before != after
    assert int(re.match(r"(\d+)", after).group(1)) >= int(re.match(r"(\d+)", before).group(1))  # type: ignore[union-attr]
    assert page.locator('[data-testid="stDataFrame"]').count() >= 1, "the in-radius table"
    assert page.locator("canvas").count() >= 1, "the map draws"
    assert_no_exception(page)
    screenshot(page, "journey-map")


def subscribe(page: Any, dashboard: Dashboard, target: str) -> str:
    """Creates a subscription to ``target`` on the Webhooks page; the address of the service the page uses."""
    page.goto(f"{dashboard.url}/webhooks")
    settle(page, "Subscriptions", "Reachable")
    service_url: str = page.get_by_text(re.compile(r"^http://127\.0\.0\.1:\d+$")).first.inner_text().strip()
    page.get_by_role("textbox", name="Target URL").fill(target)
    page.get_by_role("button", name=re.compile("Create subscription")).click()
    settle(page, "Subscribed")
    return service_url


def test_manage_a_webhook_from_creation_to_deletion(dashboard: Dashboard, page: Any) -> None:
    from standardwebhooks import Webhook

    from precon.client import Client
    from tests.webhook_support import Receiver

    receiver = Receiver().start()
    try:
        service_url = subscribe(page, dashboard, receiver.url)
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


def choose_first_option(page: Any, select: Any) -> None:
    """Opens a select box and picks its first option, again if a rerun (the log refreshes itself) closed it."""
    for _ in range(3):
        select.click()
        try:
            page.get_by_role("option").first.click(timeout=5_000)
            return
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    raise AssertionError("the select box showed no option")


def press_in_delivery(page: Any, rows: Any, label: str, arrived: Any) -> None:
    """Presses ``label`` in the first of these rows of the delivery log (opening it first), until ``arrived()``;
    again if the log's own refresh, every few seconds, redrew the row under the click."""
    for _ in range(3):
        row = rows.first
        row.wait_for(timeout=20_000)
        button = row.get_by_role("button", name=re.compile(label))
        if not button.is_visible():
            row.locator("summary").first.click()
        try:
            button.click(timeout=5_000)
        except PlaywrightTimeout:
            continue
        settle(page)
        for _ in range(40):
            if arrived():
                return
            page.wait_for_timeout(250)
    raise AssertionError(f"{label} sent nothing")


def test_send_a_pending_delivery_now_then_replay_it(dashboard: Dashboard, page: Any) -> None:
    """A receiver that fails twice leaves its delivery pending (the next retry minutes away); once it is fixed,
    Send now delivers at once, and Replay sends the same delivery (the same webhook-id) again."""
    from precon.client import Client
    from tests.webhook_support import Receiver

    receiver = Receiver(status=500).start()
    try:
        service_url = subscribe(page, dashboard, receiver.url)
        with Client(service_url, "precon-dev-key", cache=False) as client:
            [subscription] = [s for s in client.list_webhooks() if s.targetUrl == receiver.url]
        choose_first_option(page, page.locator('[data-testid="stSelectbox"]').filter(has_text="Profile").last)
        page.get_by_role("button", name=re.compile("Trigger profile webhook")).click()
        settle(page, "queued to 1 subscription")

        def delivery() -> Any:
            with Client(service_url, "precon-dev-key", cache=False) as client:
                return client.webhook_deliveries(subscription=subscription.id).results[0]

        receiver.wait_for(2, timeout=30)  # the first attempt, then the retry 5 s later; the next is minutes away
        for _ in range(80):
            if len(delivery().attempts) == 2:
                break
            page.wait_for_timeout(250)
        pending = delivery()
        assert pending.status == "pending" and len(pending.attempts) == 2, pending
        receiver.status = 204

        # The log refreshes by itself: the pending delivery shows without a click.
        mine = page.locator('[data-testid="stExpander"]').filter(has_text=receiver.url)
        press_in_delivery(page, mine.filter(has_text="pending"), "Send now", lambda: len(receiver.received) >= 3)
        headers, _ = receiver.received[2]
        assert headers["webhook-id"] == pending.id
        for _ in range(80):
            if delivery().status == "delivered":
                break
            page.wait_for_timeout(250)
        assert delivery().status == "delivered" and len(delivery().attempts) == 3
        screenshot(page, "journey-webhooks-sent-now")

        press_in_delivery(page, mine.filter(has_text="delivered"), "Replay", lambda: len(receiver.received) >= 4)
        # The same delivery, so receivers can deduplicate.
        assert {headers["webhook-id"] for headers, _ in receiver.received[3:]} == {pending.id}
        assert_no_exception(page)
        screenshot(page, "journey-webhooks-replayed")
    finally:
        receiver.stop()


def test_delete_is_styled_as_destructive(dashboard: Dashboard, page: Any) -> None:
    subscribe(page, dashboard, "http://127.0.0.1:9/hook")
    button = page.get_by_role("button", name=re.compile("Delete subscription")).first
    assert button.is_disabled()  # nothing picked, nothing confirmed
    page.locator('[data-testid="stSelectbox"]').filter(has_text="Subscription").first.click()
    page.get_by_role("option").filter(has_text="127.0.0.1:9").first.click()
    page.get_by_text(re.compile("I understand deliveries stop")).click()
    settle(page)
    colour = button.evaluate("b => getComputedStyle(b).backgroundColor")
    assert colour == "rgb(179, 38, 30)", colour  # red, not the theme's green
    screenshot(page, "webhooks-delete-confirm")


def test_the_map_draws_an_offline_outline_of_canada_with_city_names(dashboard: Dashboard, page: Any) -> None:
    from urllib.parse import urlsplit

    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    page.set_viewport_size({"width": 1400, "height": 1900})  # the size the screenshot takes, so the map is not redrawn
    page.goto(f"{dashboard.url}/map?center=43.65,-79.38&radius=25")
    settle(page, "listings within 25 km")
    expect(page.get_by_text(re.compile("Offline map")).first).to_be_visible()
    expect(page.locator("canvas").first).to_be_attached(timeout=30_000)  # the map draws
    page.wait_for_timeout(4000)  # deck.gl draws its layers (and its labels' font atlas) after the frame is in place
    assert page.get_by_text(re.compile(r"^Error:")).count() == 0, "the map's layers are valid for deck.gl"
    assert_no_exception(page)
    elsewhere = sorted({url for url in asked if urlsplit(url).hostname not in {"127.0.0.1", "localhost"}})
    assert not elsewhere, f"the offline map asked other hosts: {elsewhere}"  # no tiles, no style, no fonts
    assert any(url.endswith("/app/static/basemap/land.json") for url in asked)  # the outline, from the dashboard
    screenshot(page, "map-offline-basemap")
    page.goto(f"{dashboard.url}/map?center=49.5,-97&radius=25")
    settle(page, "listings within 25 km")
    page.get_by_role("slider").first.focus()
    assert_no_exception(page)


def click_until(page: Any, target: tuple[float, float], done: str, attempts: int = 3) -> None:
    """Clicks the map until `done` holds. deck.gl counts a press as a click only when the button comes up within a
    quarter of a second; on a machine this loaded the browser can take longer between the two, so the map hears a
    long press and nothing is picked, as a person's slow press would. They would click again; so does this."""
    for attempt in range(attempts):
        page.mouse.click(*target)
        try:
            page.wait_for_function(done, timeout=20_000)
            return
        except PlaywrightTimeout:
            if attempt == attempts - 1:
                raise


def test_a_click_on_empty_map_moves_the_centre_there_and_names_it(dashboard: Dashboard, page: Any) -> None:
    page.set_viewport_size({"width": 1400, "height": 1300})
    page.goto(f"{dashboard.url}/map?center=43.65,-79.38&radius=10")
    settle(page, "listings within 10 km")
    canvas = page.locator('[data-testid="stDeckGlJsonChart"] canvas').first
    canvas.wait_for(state="attached")
    page.wait_for_timeout(2000)  # deck.gl draws the layers it picks from
    box = canvas.bounding_box()
    assert box is not None
    target = (box["x"] + box["width"] * 0.3, box["y"] + box["height"] * 0.3)  # up and left of the centre
    page.mouse.move(*target)
    expect(page.get_by_text("Click to centre here")).to_be_visible(timeout=10_000)  # the grid's tooltip
    click_until(page, target, "() => !new URLSearchParams(location.search).get('center').startsWith('43.65,-79.38')")
    settle(page, "listings within 10 km")
    lat, lng = (float(part) for part in page.evaluate("new URLSearchParams(location.search).get('center')").split(","))
    assert lat > 43.65 and lng < -79.38  # where the click was: north and west of the old centre
    heading = page.get_by_role("heading", name=re.compile("listings? within 10 km of")).first.inner_text()
    assert re.search(r"within 10 km of \S", heading) and f"{lat:.4f}" not in heading  # named, not coordinates
    assert_no_exception(page)
    screenshot(page, "map-clicked-centre")


# -- the listing page for a buyer: a plan's deposits in dollars, contradictions flagged --------------------------


def test_a_listings_deposits_in_dollars_for_a_chosen_plan(dashboard: Dashboard, page: Any, oracle: Any) -> None:
    from components.deposits import plan_label, priced_plans, total_percent
    from components.formatting import cad
    from precon.dashboard.listing_checks import contradictions

    listing = next(
        lst
        for lst in oracle.iter_listings(per_page=1000)
        if contradictions(lst) and len(priced_plans(lst.floorPlans)) > 1 and lst.paymentStructures
    )
    plans = priced_plans(listing.floorPlans)
    page.goto(f"{dashboard.url}/listing?id={listing.id}")
    settle(page, "Deposit structure", "counted from today")
    assert_no_exception(page)
    assert page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="contradicts").count() >= 1

    chosen = plans[-1]
    picker = page.locator('[data-testid="stSelectbox"]').filter(has_text="Floor plan")
    # The list is long, and drawn only where it shows: typed into, the box opens it narrowed to the one plan (a
    # click alone sometimes only focuses the box while the page settles).
    picker.locator("input").click()
    page.keyboard.type(plan_label(chosen))
    # Narrowed to the one plan, which the list focuses: Enter takes it, as a person typing does (a click on it
    # missed when a rerun redrew the list under the pointer).
    expect(page.get_by_role("option", name=plan_label(chosen), exact=True)).to_have_count(1)
    page.keyboard.press("Enter")
    total = (total_percent(listing.paymentStructures[0]) or 0) * (chosen.startPrice or 0) / 100
    settle(page, cad(total))
    assert_no_exception(page)
    assert page.get_by_text(re.compile(re.escape(cad(total)))).count() >= 1  # the dearest plan's total deposit
    page.get_by_text("Deposit structure").first.scroll_into_view_if_needed()
    screenshot(page, "journey-listing-deposits")


# -- Home's search box and its own address; the directory sorted by listings, to a company -----------------------


def test_home_search_box_opens_search_and_home_has_its_own_address(dashboard: Dashboard, page: Any) -> None:
    page.goto(f"{dashboard.url}/home")
    settle(page, "Listings by province")
    assert page.get_by_text("Page not found").count() == 0
    assert_no_exception(page)
    screenshot(page, "journey-home")
    box = page.get_by_placeholder(re.compile("Words to find"))
    box.fill("condo")
    box.press("Enter")
    expect(page).to_have_url(re.compile(r"/search\?.*q=condo"))
    settle(page, "results in")
    expect(page.get_by_role("textbox", name="Search", exact=True)).to_have_value("condo")
    assert_no_exception(page)
    screenshot(page, "journey-home-search")


def test_directory_sorted_by_listings_opens_a_company(dashboard: Dashboard, page: Any, oracle: Any) -> None:
    page.goto(f"{dashboard.url}/profiles?collection=Builders")
    settle(page, "Page 1 of")
    page.get_by_text("Most listings").click()
    expect(page).to_have_url(re.compile(r"sort=listings"))
    settle(page, "Page 1 of")
    assert_no_exception(page)
    screenshot(page, "journey-directory-by-listings")
    top = oracle.search_profiles(collection="Builders", sort_by_listings="desc", per_page=1).results[0]
    page.goto(f"{dashboard.url}/profile")
    settle(page, "Search a company by name")
    page.get_by_placeholder(re.compile("a builder's")).fill(top.name)
    page.get_by_placeholder(re.compile("a builder's")).press("Enter")
    settle(page, "Best matches")
    screenshot(page, "journey-profile-picker")
    page.get_by_role("button", name="Open company").click()
    expect(page).to_have_url(re.compile(r"/profile\?.*id="))
    settle(page, f"{len(top.listings):,} listings")
    assert_no_exception(page)
    screenshot(page, "journey-directory-profile")
