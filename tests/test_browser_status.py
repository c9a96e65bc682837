"""The Status page in a real browser: a subscription to a receiver that always answers 500 and one to a receiver that
answers 204, events triggered, then /status lists the failing one first with the success rate, last failure and
pending retries the delivery log gives, and its link opens the Webhooks page on its deliveries."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from components.status import failure_text, rate_text
from components.webhook_log import subscription_label
from precon.client import Client
from precon.client.models import WebhookSubscription
from precon.dashboard.delivery_health import RECENT_DELIVERIES, health_of
from precon.service.embedded import EmbeddedService
from tests.browser_support import (
    PAGE_TIMEOUT_MS,
    assert_no_exception,
    chromium_path,
    page_of,
    running_dashboard,
    screenshot,
    settle,
)
from tests.dashboard_support import make_catalogue
from tests.webhook_support import Receiver

LISTINGS = 300
SLOW_RETRIES = "[3600, 3600]"
"""A refused delivery waits an hour for its retry: it stays pending, with its one failed attempt."""

playwright_api = pytest.importorskip("playwright.sync_api")


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    chromium_path()
    return make_catalogue(tmp_path_factory.mktemp("status-browser-data"), LISTINGS)


@pytest.fixture(scope="module")
def dashboard(data_dir: Path) -> Iterator[str]:
    with running_dashboard(data_dir, LISTINGS, PRECON_SERVICE_WEBHOOK_RETRY_SCHEDULE=SLOW_RETRIES) as started:
        yield started.url


@pytest.fixture(scope="module")
def oracle(dashboard: str, data_dir: Path) -> Iterator[Client]:
    """A service over the dashboard's data directory that sends nothing (the dashboard's own service does): the same
    subscriptions and delivery log, read as the client reads them."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PRECON_SERVICE_WEBHOOK_WORKER", "false")
        service = EmbeddedService(data_dir, listings=LISTINGS)
    with service, Client(service.url, service.api_key, service.product_id, cache=False) as client:
        yield client


def attempted(oracle: Client, subscription: WebhookSubscription, count: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        log = oracle.webhook_deliveries(subscription=subscription.id).results
        if len(log) == count and all(d.attempts for d in log):
            return
        time.sleep(0.2)
    raise AssertionError(f"{subscription.id}: not every delivery attempted")


def test_the_failing_subscription_comes_first_as_its_log_says_and_links_to_its_deliveries(
    dashboard: str, oracle: Client, browser: Any
) -> None:
    good, bad = Receiver().start(), Receiver(status=500).start()
    try:
        with page_of(browser, 1400, 1000, expect_ms=PAGE_TIMEOUT_MS) as page:
            page.goto(dashboard + "/status")  # starts the dashboard's service (which sends) and its first reading
            settle(page, "Webhook subscriptions", "no webhook subscriptions")
            healthy = oracle.create_webhook(good.url, "profile.updated")
            failing = oracle.create_webhook(bad.url, "profile.updated")
            builder = oracle.search_profiles(collection="Builders", per_page=1).results[0].profile_id or ""
            for _ in range(2):
                oracle.trigger_profile_webhook(builder, "Builders")
            attempted(oracle, failing, 2)
            attempted(oracle, healthy, 2)
            figures = {
                s.id: health_of(s, oracle.webhook_deliveries(subscription=s.id, per_page=RECENT_DELIVERIES).results)
                for s in (failing, healthy)
            }
            page.reload()  # a second reading: requests per minute since the first
            settle(page, "Webhook subscriptions", "95th percentile of latency")
            assert_no_exception(page)
            rows = page.locator("[class*='st-key-status_sub_']")
            expect(rows).to_have_count(2)
            first, second = rows.nth(0).inner_text(), rows.nth(1).inner_text()
            assert failing.id in first and healthy.id in second, "the failing one first"
            for shown, subscription in ((first, failing), (second, healthy)):
                health = figures[subscription.id]
                assert f"Success rate {rate_text(health)}" in shown, shown
                assert f"Pending retries {health.pending_retries}" in shown, shown
                assert f"Last failure {failure_text(health).split(' (')[0]}" in shown, shown
            assert "0% (0 of 2 attempts)" in first and "Pending retries 2" in first and "HTTP 500" in first
            assert "100% (2 of 2 attempts)" in second and "Last failure none" in second
            screenshot(page, "status")

            rows.nth(0).get_by_role("link", name=re.compile("Deliveries")).click()
            expect(page).to_have_url(re.compile(rf"/webhooks\?subscription={failing.id}$"))
            try:
                settle(page, "Delivery log", "2 deliveries, newest first")
            except Exception:
                screenshot(page, "status-webhooks-link-failed")
                raise
            assert_no_exception(page)
            expect(page.locator(".st-key-wh_log_subscription input")).to_have_value(subscription_label(failing))
            screenshot(page, "status-webhooks-link")
    finally:
        good.stop()
        bad.stop()
