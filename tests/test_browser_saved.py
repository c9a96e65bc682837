"""Saved searches and alerts in a real browser, each step checked against the API: save a search on Search, move
the catalogue 30 days forward (``precon catalogue simulate``) under the running dashboard, see on Saved searches
what changed (equal to what ``changes`` answers for its filters since it was last opened), turn on an alert to a
loopback receiver, simulate again, and receive the signed deliveries with their changes."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from precon.client import Client
from precon.dashboard.listing_search import all_matching
from precon.dashboard.saved_searches import Answer, Match, SavedSearches, compare, iso, now
from precon.service.embedded import EmbeddedService
from tests.browser_support import (
    PAGE_TIMEOUT_MS,
    READY,
    SCREENSHOTS,
    assert_no_exception,
    chromium_path,
    page_of,
    running_dashboard,
    settle,
)
from tests.dashboard_support import make_catalogue
from tests.waiting import wait_until
from tests.webhook_support import Receiver, verified

LISTINGS = 300
WIDE = {"width": 1440, "height": 900}
SEARCH = {"type": "Condo"}
PRECON = str(Path(sys.executable).with_name("precon"))

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chromium_path()
    return make_catalogue(tmp_path_factory.mktemp("saved-browser-data"), LISTINGS)


@pytest.fixture(scope="module")
def dashboard(data_dir: Path) -> Iterator[str]:
    """``streamlit run app.py`` on the embedded service over ``data_dir``; its saved searches there too."""
    with running_dashboard(data_dir, LISTINGS) as started:
        yield started.url


@pytest.fixture(scope="module")
def oracle(dashboard: str, data_dir: Path) -> Iterator[Client]:
    with EmbeddedService(data_dir, listings=LISTINGS) as service:
        yield service.client


@pytest.fixture(scope="module")
def page(dashboard: str, browser: Any) -> Iterator[Any]:
    with page_of(browser, WIDE["width"], WIDE["height"], expect_ms=PAGE_TIMEOUT_MS) as opened:
        yield opened


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


def shot(page: Any, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.wait_for_timeout(600)
    page.screenshot(path=str(path))
    return path


def simulate(data_dir: Path, days: int) -> None:
    done = subprocess.run(
        [PRECON, "catalogue", "simulate", "--days", str(days), "--data", str(data_dir)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def answer_of(oracle: Client, saved: Any) -> Answer:
    """What the saved search answers now, by the API."""
    found, total = all_matching(
        oracle, saved.text, saved.listing_filter(), saved.unit_filter(), ["listingId", "name", "startPrice",
        "sellingStatus"],
    )  # fmt: skip
    return Answer(now(), {x.id: Match(x.name, x.startPrice, x.sellingStatus) for x in found if x.id}, total)


def test_save_simulate_see_what_changed_alert_and_receive(
    dashboard: str, data_dir: Path, oracle: Client, page: Any, receiver: Receiver
) -> None:
    store = SavedSearches(data_dir / "dashboard.sqlite3")
    # 1. Save a search on Search.
    page.goto(f"{dashboard}/search?type=Condo")
    settle(page, "results in")
    page.get_by_role("button", name=re.compile("Save this search")).click()
    page.get_by_label("Name", exact=True).fill("Condos <b>everywhere</b>")
    page.get_by_label("Saved by (optional)").fill("Browser test")
    shot(page, "saved-save-dialog")
    page.get_by_role("button", name="Save", exact=True).click()
    settle(page, "matching now")
    assert_no_exception(page)
    [saved] = store.all()
    assert (saved.name, saved.saved_by, dict(saved.params)) == ("Condos <b>everywhere</b>", "Browser test", SEARCH)
    total = oracle.search_listings(per_page=0, filter="type:Condo").total
    assert saved.answer is not None and saved.answer.total == total

    # 2. The catalogue moves 30 days; the Saved searches page says what changed, as the API does.
    simulate(data_dir, 30)
    page.goto(f"{dashboard}/saved")
    settle(page, "Since last opened", "History:")
    assert_no_exception(page)
    expected = oracle.changes(
        since=iso(saved.changes_since), filter=saved.listing_filter(), unit_filter=saved.unit_filter(), per_page=1
    ).total
    assert expected > 0, "30 simulated days changed some condo"
    history = page.get_by_text(re.compile(r"History: [\d,]+ changes?")).first.inner_text()
    assert int(re.search(r"([\d,]+) change", history).group(1).replace(",", "")) == expected, history  # type: ignore[union-attr]
    assert iso(saved.changes_since) in history
    summary = compare(saved.answer, answer_of(oracle, saved)).summary()
    expect(page.get_by_text(f"its matches: {summary}").first).to_be_visible()
    expect(page.get_by_text("Condos <b>everywhere</b>").first).to_be_visible()  # the markup shown as text
    shot(page, "saved-page")

    # 3. Turn on an alert to a loopback receiver.
    page.get_by_role("button", name=re.compile("Alert me")).click()
    page.get_by_label("Target URL").fill(receiver.url)
    shot(page, "saved-alert-form")
    page.get_by_role("button", name="Turn alerts on").click()
    settle(page, "Alerts on: 2 subscriptions")
    assert_no_exception(page)
    shown_secrets = page.locator('[data-testid="stCode"] code').filter(has_text="whsec_")
    expect(shown_secrets).to_have_count(2)  # drawn a moment after the run ends, on a loaded machine
    secrets = [t.strip() for t in shown_secrets.all_inner_texts()]
    expect(page.locator('[data-testid="stPopoverBody"]')).to_have_count(0)  # the form closed: it covered them
    for code in shown_secrets.all():  # each secret whole and uncovered: what is at its centre is inside it
        code.scroll_into_view_if_needed()
        assert code.evaluate(
            """element => { const box = element.getBoundingClientRect();
                const at = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
                return element.contains(at) && element.scrollWidth <= element.clientWidth + 1; }"""
        ), "a secret is covered or cut"
    shot(page, "saved-alert-secrets")
    subscriptions = {s.id: s for s in oracle.list_webhooks()}
    assert {s.event for s in subscriptions.values()} == {"listing.matched", "listing.updated"} and len(secrets) == 2
    assert {a.subscription_id for a in store.alerts()} == set(subscriptions)
    for subscription in subscriptions.values():
        assert subscription.filterQuery == "type:Condo"
        assert subscription.fields == ["startPrice", "price", "sellingStatus", "status"]

    # 4. Simulate again: the receiver gets signed deliveries whose changes are the catalogue's.
    started = iso(now())
    newest = oracle.changes(per_page=1).results[0].at
    simulate(data_dir, 30)
    wait_until(lambda: any(_payloads(receiver, secrets)), timeout=90, every=0.25)
    payloads = _payloads(receiver, secrets)
    updated = [p for p in payloads if p["type"] == "listing.updated" and p["data"].get("changes")]
    assert updated, [p["type"] for p in payloads]
    recorded = {
        (e.listingId, e.scope, e.plan, e.unit, e.field, e.change)
        for e in oracle.iter_changes(since=iso(newest) if newest else started, filter="type:Condo")
    }
    for payload in updated:
        for entry in payload["data"]["changes"]:
            assert entry["field"] in {"startPrice", "price", "sellingStatus", "status"}, entry
            key = (entry["listingId"], entry["scope"], entry["plan"], entry["unit"], entry["field"], entry["change"])
            assert key in recorded, entry


def _payloads(receiver: Receiver, secrets: list[str]) -> list[dict[str, Any]]:
    found = []
    for headers, body in list(receiver.received):
        for secret in secrets:
            try:
                found.append(verified(secret, headers, body))
                break
            except Exception:  # the other subscription's delivery
                continue
    return found


def test_a_bad_name_in_the_browser_says_why(dashboard: str, data_dir: Path, page: Any) -> None:
    store = SavedSearches(data_dir / "dashboard.sqlite3")
    before = [s.id for s in store.all()]
    page.goto(f"{dashboard}/search")
    settle(page, "results in")
    page.get_by_role("button", name=re.compile("Save this search")).click()
    page.get_by_label("Name", exact=True).fill("n" * 10_000)
    page.get_by_role("button", name="Save", exact=True).click()
    page.wait_for_selector(READY)
    expect(page.get_by_text(re.compile("this one has 10,000")).first).to_be_visible()
    assert [s.id for s in store.all()] == before
