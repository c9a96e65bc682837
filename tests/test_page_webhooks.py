"""The webhook admin page under AppTest, against the embedded service and a real receiver on loopback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from streamlit.testing.v1 import AppTest

from components import api
from components.formatting import markdown_text
from precon.client import Client
from precon.client.models import WebhookDelivery, WebhookSubscription
from precon.service.config import DEV_API_KEY
from precon.service.server import ServerThread
from tests.dashboard_support import (  # noqa: F401
    assert_readable_failure,
    dashboard_data,
    embedded_dashboard,
    failing_service,
    open_page,
    page_text,
    reset_caches,
)
from tests.waiting import wait_until
from tests.webhook_support import Receiver, verified

PAGE = "views/webhooks.py"
FAST_RETRIES = "[0.2, 0.3]"
"""Two quick retries after the first attempt: a delivery to a receiver that keeps refusing fails in about 1 s."""


@pytest.fixture(scope="module")
def webhook_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory of this module's own: no service started elsewhere (with the production retry schedule)
    sends its deliveries."""
    return tmp_path_factory.mktemp("webhook-dashboard-data")


@pytest.fixture
def service(request: pytest.FixtureRequest, webhook_data: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    """The dashboard on an embedded service with quick retries, no subscriptions yet, and a client for checking
    what the page did (without the HTTP cache: the service's state, not a minute-old answer)."""
    request.getfixturevalue("embedded_dashboard")
    monkeypatch.setenv("PRECON_SERVICE_DATA_DIR", str(webhook_data))
    monkeypatch.setenv("PRECON_SERVICE_WEBHOOK_RETRY_SCHEDULE", FAST_RETRIES)
    reset_caches()
    with Client(api.connection().url, DEV_API_KEY, cache=False, max_retries=0) as client:
        for subscription in client.list_webhooks():
            client.delete_webhook(subscription.id)
        yield client


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("precon.client.retries.RETRY_INITIAL_WAIT_S", 0.01)
    monkeypatch.setattr("precon.client.retries.RETRY_MAX_WAIT_S", 0.02)


def ok(app: AppTest) -> AppTest:
    assert not app.exception, [e.value for e in app.exception]
    return app


def click(app: AppTest, key: str) -> AppTest:
    return ok(app.button(key=key).click().run())


def create(app: AppTest, url: str, event: str = "profile.updated", env: str = "live") -> AppTest:
    app.selectbox(key="wh_env").set_value(env)
    app.selectbox(key="wh_event").set_value(event)
    app.text_input(key="wh_url").input(url)
    return click(app, "wh_create_button")


def secrets_shown(app: AppTest) -> list[str]:
    return [block.value for block in app.code if block.value.startswith("whsec_")]


def table(app: AppTest, key_column: str) -> pd.DataFrame:
    """The one table on the page with this column."""
    (found,) = [frame.value for frame in app.dataframe if key_column in frame.value.columns]
    return found


def delivery_of(client: Client, subscription: WebhookSubscription, status: str) -> WebhookDelivery:
    def check() -> WebhookDelivery | None:
        found = client.webhook_deliveries(subscription=subscription.id).results
        return found[0] if found and found[0].status == status else None

    found: WebhookDelivery = wait_until(check)
    return found


def subscribe_through_page(app: AppTest, client: Client, url: str) -> tuple[WebhookSubscription, str]:
    create(app, url)
    [secret] = secrets_shown(app)
    [subscription] = [s for s in client.list_webhooks() if s.targetUrl == url]
    return subscription, secret


def trigger_for_a_builder(app: AppTest, client: Client) -> str:
    """Picks the first builder in the page's profile picker and triggers; answers the profile id."""
    ok(app.selectbox(key="wh_collection").set_value("Builders").run())
    picker = app.selectbox(key="wh_profile_Builders")
    first = client.search_profiles(collection="Builders", sort_by_name="asc", per_page=1).results[0]
    assert picker.options[0].startswith(first.name or "?"), "the picker offers the builders by name"
    assert picker.value is None, "nothing is triggered before a profile is picked"
    assert app.button(key="wh_trigger_button").disabled
    ok(picker.set_value(first.profile_id).run())
    return first.profile_id or ""


def test_create_shows_the_secret_once_refuses_a_bad_target_inline_and_deletes_after_confirming(
    service: Client, receiver: Receiver
) -> None:
    app = ok(open_page(PAGE))
    assert "This key has no subscriptions yet" in page_text(app)

    create(app, receiver.url)
    [created] = service.list_webhooks()
    assert (created.targetUrl, created.event, created.env) == (receiver.url, "profile.updated", "live")
    assert list(table(app, "target")["id"]) == [created.id]
    [secret] = secrets_shown(app)
    assert "will not be shown again" in page_text(app)
    assert "Subscribed" in "\n".join(s.value for s in app.success)
    assert secret not in str(dict(app.query_params)), "the secret never goes into the address"
    assert app.text_input(key="wh_url").value == "", "a created subscription's form starts empty again"

    ok(app.run())
    assert secrets_shown(app) == [secret], "a rerun (a Refresh, another action) keeps it until it is dismissed"
    click(app, "wh_secret_dismiss")
    assert not secrets_shown(app)
    ok(app.run())
    assert not secrets_shown(app), "once dismissed, it is gone for good"

    create(app, "https://10.0.0.1/x", event="listing.created", env="sandbox")
    errors = "\n".join(e.value for e in app.error)
    assert "Target URL: " + markdown_text("10.0.0.1 is a private address") in errors, errors
    assert app.text_input(key="wh_url").value == "https://10.0.0.1/x", "the entered values are kept"
    assert app.selectbox(key="wh_event").value == "listing.created"
    assert app.selectbox(key="wh_env").value == "sandbox"
    assert [s.id for s in service.list_webhooks()] == [created.id]
    assert not secrets_shown(app)

    ok(app.selectbox(key="wh_delete_pick").set_value(created.id).run())
    assert app.button(key="wh_delete_button").disabled, "nothing is deleted without the confirmation"
    button = app.button(key="wh_delete_button")
    assert button.proto.type == "primary" and "delete" in button.proto.icon, "styled as the destructive action"
    assert created.id in button.label, "the button names what it deletes"
    warned = "\n".join(e.value for e in app.error)
    assert f"This deletes subscription `{created.id}`" in warned and receiver.url in warned
    ok(app.checkbox(key="wh_delete_confirm").check().run())
    assert not app.button(key="wh_delete_button").disabled
    click(app, "wh_delete_button")
    assert service.list_webhooks() == []
    assert f"Deleted subscription `{created.id}`" in "\n".join(s.value for s in app.success)
    assert "This key has no subscriptions yet" in page_text(app)


def test_a_triggered_event_arrives_signed_and_the_log_shows_it_delivered(service: Client, receiver: Receiver) -> None:
    app = ok(open_page(PAGE))
    subscription, secret = subscribe_through_page(app, service, receiver.url)
    profile_id = trigger_for_a_builder(app, service)
    click(app, "wh_trigger_button")
    assert "queued to 1 subscription" in "\n".join(s.value for s in app.success)

    [(headers, body)] = receiver.wait_for(1)
    payload = verified(secret, headers, body)
    assert payload["type"] == "profile.updated" and payload["data"]["profile"]["id"] == profile_id
    delivery = delivery_of(service, subscription, "delivered")
    assert headers["webhook-id"] == delivery.id

    click(app, "wh_refresh")
    log = table(app, "last outcome")
    row = log[log["delivery"] == delivery.id].iloc[0]
    assert row["status"] == "✅ delivered" and row["attempts"] == 1
    assert row["last outcome"] == "HTTP 204 · accepted"
    attempts = table(app, "latency")
    assert list(attempts["outcome"]) == ["HTTP 204 · accepted"]
    assert any(delivery.id in e.label or "profile.updated" in e.label for e in app.expander)


def test_a_refused_delivery_fails_after_its_retries_and_a_replay_delivers_it(
    service: Client, receiver: Receiver
) -> None:
    receiver.status = 500
    app = ok(open_page(PAGE))
    subscription, secret = subscribe_through_page(app, service, receiver.url)
    trigger_for_a_builder(app, service)
    click(app, "wh_trigger_button")
    failed = delivery_of(service, subscription, "failed")
    assert len(failed.attempts) == 3 and {a.status for a in failed.attempts} == {500}

    click(app, "wh_refresh")
    row = table(app, "last outcome").iloc[0]
    assert (row["status"], row["attempts"], row["last outcome"]) == ("❌ failed", 3, "HTTP 500 · not accepted")
    assert "ok" in [block.value for block in app.code], "the receiver's answer is shown as text"

    receiver.status = 200
    click(app, f"wh_replay_{failed.id}")
    assert "is being sent again" in "\n".join(s.value for s in app.success)
    delivered = delivery_of(service, subscription, "delivered")
    assert len(delivered.attempts) == 4
    headers, body = receiver.received[-1]
    assert headers["webhook-id"] == failed.id and verified(secret, headers, body)

    click(app, "wh_refresh")
    row = table(app, "last outcome").iloc[0]
    assert (row["status"], row["attempts"], row["last outcome"]) == ("✅ delivered", 4, "HTTP 200 · accepted")
    keys = [b.key for b in app.button]
    assert f"wh_replay_{failed.id}" in keys, "a delivered one can be replayed too"
    assert f"wh_send_now_{failed.id}" not in keys, "only a pending delivery can be sent now"


@pytest.mark.usefixtures("quick_retries")
@pytest.mark.parametrize(
    ("status", "fragment"),
    [(403, "Access refused"), (500, "The listings service failed"), (None, "cannot be reached")],
)
def test_failures_read_as_messages(status: int | None, fragment: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with failing_service(status, monkeypatch):
        assert_readable_failure(open_page(PAGE), fragment)


def _service_without(*served: str) -> FastAPI:
    """A service that knows only these GET operations (answering them empty) and 404s the rest."""
    app = FastAPI()

    @app.api_route("/{version}/{province}/{operation:path}", methods=["GET", "POST", "DELETE"])
    def answer(version: str, province: str, operation: str) -> JSONResponse:
        if operation in served:
            return JSONResponse({"results": [], "total": 0, "page": 0, "pages": 0, "perPage": 20})
        return JSONResponse({"message": "Not Found"}, status_code=404)

    return app


@pytest.mark.parametrize(
    ("served", "expected"),
    [
        ((), "This service offers no webhooks"),
        (("webhooks", "search_listings", "search_profiles"), "keeps no delivery log"),
    ],
)
def test_a_service_without_webhooks_or_without_a_delivery_log_says_so(
    served: tuple[str, ...], expected: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRECON_API_KEY", "some-key")
    monkeypatch.setenv("PRECON_PRODUCT_ID", "some-product")
    monkeypatch.setenv("PRECON_CACHE_URL", "memory:")
    with ServerThread(_service_without(*served)) as server:
        monkeypatch.setenv("PRECON_API_URL", server.url)
        reset_caches()
        try:
            app = ok(open_page(PAGE))
        finally:
            reset_caches()
    assert expected in page_text(app)
    assert "Traceback" not in page_text(app)


SLOW_RETRIES = "[3600, 3600, 3600]"
"""Retries an hour apart: a delivery refused once stays pending, its next attempt far away."""


@pytest.fixture
def slow_service(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Client]:
    """The dashboard on an embedded service of its own (no worker of another test's service sends its deliveries)
    whose retries are an hour apart."""
    request.getfixturevalue("embedded_dashboard")
    monkeypatch.setenv("PRECON_SERVICE_DATA_DIR", str(tmp_path / "slow-webhooks"))
    monkeypatch.setenv("PRECON_SERVICE_WEBHOOK_RETRY_SCHEDULE", SLOW_RETRIES)
    reset_caches()
    with Client(api.connection().url, DEV_API_KEY, cache=False, max_retries=0) as client:
        yield client


def log_row(app: AppTest, delivery_id: str) -> pd.Series:
    log = table(app, "last outcome")
    return log[log["delivery"] == delivery_id].iloc[0]


def test_send_now_attempts_a_pending_delivery_and_replay_sends_any_again(
    slow_service: Client, receiver: Receiver
) -> None:
    receiver.status = 500
    app = ok(open_page(PAGE))
    subscription, secret = subscribe_through_page(app, slow_service, receiver.url)
    trigger_for_a_builder(app, slow_service)
    click(app, "wh_trigger_button")
    receiver.wait_for(1)
    pending = wait_until(
        lambda: next(
            (d for d in slow_service.webhook_deliveries(subscription=subscription.id).results if d.attempts), None
        )
    )
    assert pending.status == "pending"

    ok(app.run())  # what the log's own rerun does: it reads the log again
    row = log_row(app, pending.id)
    assert (row["status"], row["attempts"]) == ("⏳ pending", 1) and row["next attempt"].endswith(" min)")
    assert f"wh_send_now_{pending.id}" in [b.key for b in app.button]

    receiver.status = 204
    click(app, f"wh_send_now_{pending.id}")
    assert "is being sent now, instead of at its next retry" in "\n".join(s.value for s in app.success)
    receiver.wait_for(2, timeout=5)
    delivered = delivery_of(slow_service, subscription, "delivered")
    assert [a.status for a in delivered.attempts] == [500, 204]
    headers, body = receiver.received[-1]
    assert headers["webhook-id"] == pending.id and verified(secret, headers, body)

    ok(app.run())
    assert log_row(app, pending.id)["status"] == "✅ delivered"
    keys = [b.key for b in app.button]
    assert f"wh_send_now_{pending.id}" not in keys and f"wh_replay_{pending.id}" in keys

    click(app, f"wh_replay_{pending.id}")
    assert "is being sent again" in "\n".join(s.value for s in app.success)
    receiver.wait_for(3, timeout=5)
    wait_until(lambda: len(slow_service.webhook_deliveries().results[0].attempts) == 3)

    ok(app.run())
    row = log_row(app, pending.id)
    assert (row["status"], row["attempts"]) == ("✅ delivered", 3)


def test_a_url_without_a_scheme_or_none_at_all_is_explained_before_it_is_sent(service: Client) -> None:
    app = ok(open_page(PAGE))
    create(app, "")
    warned = "\n".join(w.value for w in app.warning)
    assert "Enter the URL that receives the deliveries" in warned and "https://" in warned
    create(app, "example.com/hooks")
    warned = "\n".join(w.value for w in app.warning)
    assert "`example.com/hooks` is not a whole URL" in warned and "Start it with `https://`" in warned
    assert "none" not in page_text(app).lower().replace("nonetheless", "")
    assert app.text_input(key="wh_url").value == "example.com/hooks", "what was typed stays, to be corrected"
    assert service.list_webhooks() == []


def test_the_log_refreshes_by_itself_every_few_seconds_unless_paused(
    service: Client, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    import streamlit

    intervals: list[object] = []
    real_fragment = streamlit.fragment

    def spy(func: Callable[..., Any] | None = None, *, run_every: object = None) -> Any:
        intervals.append(run_every)
        return real_fragment(func, run_every=run_every)

    monkeypatch.setattr(streamlit, "fragment", spy)
    app = ok(open_page(PAGE))
    assert intervals == [5], "the delivery log is a fragment that reruns every 5 s"
    assert app.toggle(key="wh_log_live").value is True
    ok(app.toggle(key="wh_log_live").set_value(False).run())
    assert intervals[-1] is None, "paused: no rerun by itself"
    ok(app.toggle(key="wh_log_live").set_value(True).run())
    assert intervals[-1] == 5

    subscription, _ = subscribe_through_page(app, service, receiver.url)
    service.trigger_profile_webhook(
        service.search_profiles(collection="Builders", per_page=1).results[0].profile_id or "", "Builders"
    )
    delivered = delivery_of(service, subscription, "delivered")
    ok(app.run())
    assert log_row(app, delivered.id)["status"] == "✅ delivered", "the next rerun shows the new state"
