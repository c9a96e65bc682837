"""The Status page under AppTest, against the embedded service: requests per operation from its /metrics, a
deployment without /metrics, and each subscription's figures from the delivery log, failing first."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from components import api
from components.status import ScrapeRing, duration
from precon.client import Client
from precon.client.metrics_view import NoMetrics, Scrape, quantile, window
from precon.dashboard.delivery_health import RECENT_DELIVERIES, failing_first, health_of
from precon.service.config import DEV_API_KEY
from tests.dashboard_support import (  # noqa: F401
    dashboard_data,
    embedded_dashboard,
    open_page,
    page_text,
    reset_caches,
)
from tests.test_page_auth import ADMIN, VIEWER, auth, open_as, provider, said, signed_in  # noqa: F401
from tests.webhook_support import Receiver

PAGE = "views/status.py"
SLOW_RETRIES = "[3600, 3600]"
"""A refused delivery waits an hour for its retry: it stays pending, one failed attempt made."""


@pytest.fixture
def service(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    """The dashboard on an embedded service of its own, and a client (no HTTP cache) to check the page against."""
    request.getfixturevalue("embedded_dashboard")
    monkeypatch.setenv("PRECON_SERVICE_DATA_DIR", str(tmp_path / "status-data"))
    monkeypatch.setenv("PRECON_SERVICE_WEBHOOK_RETRY_SCHEDULE", SLOW_RETRIES)
    reset_caches()
    with Client(api.connection().url, DEV_API_KEY, cache=False, max_retries=0) as client:
        yield client


def ok(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    return app


def operations(app: AppTest) -> pd.DataFrame:
    (found,) = [frame.value for frame in app.dataframe if "per_minute" in frame.value.columns]
    return found


def test_requests_per_operation_are_what_was_sent_since_the_last_reading(service: Client) -> None:
    app = ok(open_page(PAGE))
    assert "Collecting" in page_text(app), "one reading gives no rate yet"
    assert "Health" in [m.label for m in app.metric]
    for _ in range(7):
        service.trending_listings()
    for _ in range(3):
        service.facet_counts(["type"])
    ok(app.run())
    table = operations(app).set_index("operation")
    assert table.loc["trending_listings", "requests"] == 7
    assert table.loc["facet_counts", "requests"] == 3
    assert "over the last " in page_text(app) and "over the last hour" not in page_text(app)
    assert [m.value for m in app.metric if m.label == "Outbox: deliveries waiting"] == ["0"]
    assert [m.value for m in app.metric if m.label == "Health"] == ["OK"]


def test_a_deployment_without_metrics_says_so_and_still_shows_health_and_subscriptions(
    service: Client, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PRECON_SERVICE_METRICS", "false")
    monkeypatch.setenv("PRECON_SERVICE_DATA_DIR", str(tmp_path / "no-metrics"))
    reset_caches()
    with Client(api.connection().url, DEV_API_KEY, cache=False) as client:
        assert client.metrics() == NoMetrics("this deployment serves no /metrics here (HTTP 404)", 404)
        created = client.create_webhook("http://127.0.0.1:9/hooks", "profile.updated")
    app = ok(open_page(PAGE))
    text = page_text(app)
    assert "No metrics from this deployment" in text and "HTTP 404" in text
    assert [m.value for m in app.metric if m.label == "Health"] == ["OK"]
    assert created.id in text and "no attempts yet" in text
    assert not [frame for frame in app.dataframe if "per_minute" in frame.value.columns]


def test_subscriptions_read_as_the_delivery_log_says_failing_first(service: Client) -> None:
    good, bad = Receiver().start(), Receiver(status=500).start()
    try:
        healthy = service.create_webhook(good.url, "profile.updated")
        failing = service.create_webhook(bad.url, "profile.updated")
        builder = service.search_profiles(collection="Builders", per_page=1).results[0].profile_id or ""
        for _ in range(2):
            service.trigger_profile_webhook(builder, "Builders")
        good.wait_for(2)
        bad.wait_for(2)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            log = service.webhook_deliveries(subscription=failing.id).results
            if len(log) == 2 and all(d.attempts for d in log):
                break
            time.sleep(0.1)
        app = ok(open_page(PAGE))
    finally:
        good.stop()
        bad.stop()
    expected = failing_first(
        health_of(s, service.webhook_deliveries(subscription=s.id, per_page=RECENT_DELIVERIES).results)
        for s in (healthy, failing)
    )
    assert [h.subscription.id for h in expected] == [failing.id, healthy.id]
    assert (expected[0].pending_retries, expected[0].accepted, expected[0].attempts) == (2, 0, 2)
    rows = [m.value for m in app.markdown if "**Success rate**" in m.value]
    assert [failing.id in rows[0], healthy.id in rows[1]] == [True, True], "the failing one first"
    assert (
        ":red-badge[:material/error: failing]" in rows[0]
        and "0% (0 of 2 attempts)" in rows[0]
        and "**Pending retries** 2" in rows[0]
    )
    assert "HTTP 500" in rows[0]
    assert (
        ":green-badge[:material/check_circle: healthy]" in rows[1]
        and "100% (2 of 2 attempts)" in rows[1]
        and "**Last failure** none" in rows[1]
    )


def test_p95_interpolates_inside_its_bucket_as_histogram_quantile_does() -> None:
    buckets = {0.1: 50.0, 0.2: 90.0, 0.4: 100.0, float("inf"): 100.0}
    assert quantile(0.95, buckets) == pytest.approx(0.3)  # rank 95: halfway through the (0.2, 0.4] bucket
    assert quantile(0.5, buckets) == pytest.approx(0.1)
    assert quantile(0.99, {0.1: 1.0, float("inf"): 10.0}) == 0.1, "in +Inf: the highest finite bound"
    assert quantile(0.95, {float("inf"): 0.0}) is None
    first = Scrape(0.0, {("precon_requests_total", frozenset({("operation", "x")})): 5.0})
    reset = Scrape(60.0, {("precon_requests_total", frozenset({("operation", "x")})): 2.0})
    assert window(first, reset).operations[0].requests == 2, "a counter that went down was reset"


def test_the_status_page_is_for_admins_only(service: Client, request: pytest.FixtureRequest) -> None:
    metadata_url = request.getfixturevalue("provider")
    viewer = open_as(PAGE, signed_in(VIEWER), auth(metadata_url))
    assert "Admins only" in said(viewer) and "Webhook subscriptions" not in said(viewer)
    assert not viewer.metric, "no figure of the service for a viewer"
    admin = open_as(PAGE, signed_in(ADMIN), auth(metadata_url))
    assert "Admins only" not in said(admin) and "Webhook subscriptions" in said(admin)


def test_the_sampler_reads_metrics_by_itself_until_released(service: Client) -> None:
    sampler = ScrapeRing(service, None, None, every=0.05).start()
    try:
        deadline = time.monotonic() + 10
        while len(sampler) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(sampler) >= 3, "a reading every 0.05 s with no page view"
    finally:
        sampler.stop()
    time.sleep(0.2)
    stopped = len(sampler)
    time.sleep(0.3)
    assert len(sampler) == stopped, "stopped: no more readings"
    assert [duration(40), duration(60 * 12), duration(60), duration(3600)] == [
        "40 s",
        "12 minutes",
        "60 s",
        "an hour",
    ]


def test_the_webhooks_page_opens_on_the_subscription_its_address_names(service: Client) -> None:
    first = service.create_webhook("http://127.0.0.1:9/a", "profile.updated")
    second = service.create_webhook("http://127.0.0.1:9/b", "profile.updated")
    app = ok(open_page("views/webhooks.py", {"subscription": second.id}))
    assert app.selectbox(key="wh_log_subscription").value == second.id
    ok(app.selectbox(key="wh_log_subscription").set_value(first.id).run())
    assert app.query_params["subscription"] == first.id, "the address follows the log's subscription"
    ok(app.selectbox(key="wh_log_subscription").set_value("").run())
    assert "subscription" not in app.query_params
    unknown = ok(open_page("views/webhooks.py", {"subscription": "wh_gone"}))
    assert unknown.selectbox(key="wh_log_subscription").value == "" and "subscription" not in unknown.query_params


def test_a_deployment_with_neither_health_check_nor_metrics_shows_what_it_can(monkeypatch: pytest.MonkeyPatch) -> None:
    from precon.service.server import ServerThread
    from tests.test_page_webhooks import _service_without

    monkeypatch.setenv("PRECON_API_KEY", "some-key")
    monkeypatch.setenv("PRECON_PRODUCT_ID", "some-product")
    monkeypatch.setenv("PRECON_CACHE_URL", "memory:")
    with ServerThread(_service_without("webhooks", "search_listings")) as server:
        monkeypatch.setenv("PRECON_API_URL", server.url)
        reset_caches()
        try:
            app = ok(open_page(PAGE))
        finally:
            reset_caches()
    text = page_text(app)
    assert [m.value for m in app.metric if m.label == "Health"] == ["No check"]
    assert "This deployment has no health check" in text and "No metrics from this deployment" in text
    assert "This key has no webhook subscriptions" in text and not app.error
