"""Webhooks that really deliver: a real receiver on loopback verifies every delivery with Standard Webhooks
(subscriptions, triggers, retries, replays, restarts; tests/webhook_support.py has the receiver and the service)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import orjson
import pytest

from precon.client import Client, errors
from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID
from precon.service.webhooks import targets as webhook_targets
from precon.service.webhooks.delivery import DeliveryWorker
from precon.service.webhooks.model import (
    Event,
    RetrySchedule,
)
from precon.service.webhooks.sqlite import WebhookStore
from precon.service.webhooks.targets import TargetPolicy, TargetRefused
from tests.ports import free_port
from tests.waiting import START_TIMEOUT_S, wait_until

if TYPE_CHECKING:
    pass
from tests.webhook_support import FAST_SCHEDULE, KEY_A, KEY_B, KEY_BC, QUEUED, Receiver, Running, a_profile, verified


def test_a_trigger_arrives_signed_and_well_formed(service: Running, receiver: Receiver) -> None:
    with service.client() as client:
        subscription = client.create_webhook(receiver.url, "profile.updated", "live")
        assert subscription.secret and subscription.secret.startswith("whsec_")
        assert [s.id for s in client.list_webhooks()] == [subscription.id]
        assert client.list_webhooks()[0].secret is None, "the secret is shown only at creation"
        profile_id, collection = a_profile(service)
        fired = client.trigger_profile_webhook(profile_id, collection)
    assert fired.deliveries == 1
    headers, body = receiver.wait_for(1)[0]
    payload = verified(subscription.secret, headers, body)
    assert set(payload) == {"id", "type", "createdAt", "env", "data"}
    assert payload["id"] == fired.eventId and payload["type"] == "profile.updated" and payload["env"] == "live"
    assert payload["data"]["collection"] == "Builders"
    assert payload["data"]["profile"]["id"] == profile_id
    assert headers["webhook-id"].startswith("msg_")
    with pytest.raises(Exception, match="signature"):
        verified("whsec_" + "A" * 32, headers, body)


def test_sandbox_triggers_go_to_sandbox_subscriptions(service: Running, receiver: Receiver) -> None:
    with service.client() as client:
        live = client.create_webhook(receiver.url, "profile.updated", "live")
        sandbox = client.create_webhook(receiver.url + "?sandbox", "profile.updated", "sandbox")
        profile = client.search_profiles(per_page=1, version="v1-sandbox").results[0]
        fired = client.trigger_profile_webhook(profile.profile_id or "", profile.collection or "", version="v1-sandbox")
    assert fired.deliveries == 1
    headers, body = receiver.wait_for(1)[0]
    assert verified(sandbox.secret or "", headers, body)["env"] == "sandbox"
    assert live.id != sandbox.id


def test_a_receiver_down_then_back_gets_the_delivery_and_the_log_shows_the_failures(
    service: Running, receiver: Receiver
) -> None:
    receiver.stop()
    with service.client() as client:
        subscription = client.create_webhook(receiver.url, "profile.updated")
        client.trigger_profile_webhook(*a_profile(service))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            log = client.call("GET", "webhooks/deliveries", {"subscription": subscription.id})[0]
            if len(log["results"][0]["attempts"]) >= 2:
                break
            time.sleep(0.1)
        receiver.start()
        headers, body = receiver.wait_for(1)[0]
        assert verified(subscription.secret or "", headers, body)["type"] == "profile.updated"
        time.sleep(0.3)
        log = client.call("GET", "webhooks/deliveries", {"subscription": subscription.id})[0]
    [delivery] = log["results"]
    assert delivery["status"] == "delivered"
    attempts = delivery["attempts"]
    assert len(attempts) >= 3
    assert all(a["status"] is None and "refused" in (a["error"] or "").lower() for a in attempts[:-1])
    assert attempts[-1]["status"] == 204 and attempts[-1]["error"] is None and attempts[-1]["latencyMs"] >= 0
    assert len(receiver.received) == 1


def test_non_2xx_answers_are_retried_then_failed_and_can_be_replayed(service: Running, receiver: Receiver) -> None:
    receiver.status = 500
    with service.client() as client:
        subscription = client.create_webhook(receiver.url, "profile.updated")
        client.trigger_profile_webhook(*a_profile(service))
        deadline = time.monotonic() + 20
        delivery: dict[str, Any] = {}
        while time.monotonic() < deadline:
            delivery = client.call("GET", "webhooks/deliveries", {"subscription": subscription.id})[0]["results"][0]
            if delivery["status"] == "failed":
                break
            time.sleep(0.2)
        assert delivery["status"] == "failed"
        assert len(delivery["attempts"]) == len(FAST_SCHEDULE) + 1
        assert all(a["status"] == 500 and a["response"] == "ok" for a in delivery["attempts"])
        assert len(receiver.received) == len(FAST_SCHEDULE) + 1
        receiver.status = 200
        replayed = client.call("POST", "webhooks/deliveries/replay", body={"id": delivery["id"]})[0]
        assert replayed["status"] in QUEUED
        receiver.wait_for(len(FAST_SCHEDULE) + 2)
        time.sleep(0.3)
        delivery = client.call("GET", "webhooks/deliveries", {"subscription": subscription.id})[0]["results"][0]
    assert delivery["status"] == "delivered"
    ids = {headers["webhook-id"] for headers, _ in receiver.received}
    assert ids == {delivery["id"]}, "every attempt of one delivery carries the same webhook-id"


def test_catalogue_changes_fire_listing_and_profile_events(service: Running, receiver: Receiver) -> None:
    store = service.directory.live
    record = next(
        iter(
            store.get_listings(
                [store._db().execute("SELECT listing_id FROM listings LIMIT 1").fetchone()[0]], None
            ).values()
        )
    )
    with service.client() as client:
        updated = client.create_webhook(receiver.url + "?updated", "listing.updated")
        deleted = client.create_webhook(receiver.url + "?deleted", "listing.deleted")
    with service.client(KEY_BC, province="bc") as bc_only:
        bc_updates = bc_only.create_webhook(receiver.url + "?bc", "listing.updated")
    store.upsert_listings([{**record, "name": "Renamed Towers"}])
    store.delete_listing(record["listingId"])
    arrived = receiver.wait_for(2)
    time.sleep(0.5)
    by_secret = {}
    for headers, body in arrived:
        for subscription in (updated, deleted, bc_updates):
            try:
                by_secret[subscription.id] = verified(subscription.secret or "", headers, body)
            except Exception:
                continue
    assert by_secret[updated.id]["type"] == "listing.updated"
    assert by_secret[updated.id]["data"]["listing"]["name"] == "Renamed Towers"
    if type(store).__name__ == "ReplicaCatalogue":  # PostgreSQL records no history yet (docs/api.md)
        assert "changes" not in by_secret[updated.id]["data"]
    else:  # the write's entries for the listing (docs/api.md, "History")
        [entry] = by_secret[updated.id]["data"]["changes"]
        assert (entry["scope"], entry["field"], entry["change"]) == ("listing", "name", "updated")
        assert (entry["from"], entry["to"], entry["listingId"]) == (
            record["name"],
            "Renamed Towers",
            record["listingId"],
        )
    assert by_secret[deleted.id]["data"]["listing"]["listingId"] == record["listingId"]
    assert (bc_updates.id in by_secret) == (record["state"] == "British Columbia"), "only keys granted the province"


def test_key_b_can_neither_list_nor_delete_key_a_subscriptions(service: Running, receiver: Receiver) -> None:
    with service.client(KEY_A) as a, service.client(KEY_B) as b:
        mine = a.create_webhook(receiver.url, "listing.created")
        assert b.list_webhooks() == []
        with pytest.raises(errors.NotFound):
            b.delete_webhook(mine.id)
        assert [s.id for s in a.list_webhooks()] == [mine.id]
        assert b.call("GET", "webhooks/deliveries", {})[0]["total"] == 0
        assert a.delete_webhook(mine.id).deleted
        assert a.list_webhooks() == []
        with pytest.raises(errors.NotFound):
            a.delete_webhook(mine.id)


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ({"env": "live", "event": "profile.updated"}, "targetUrl is required"),
        ({"env": "prod", "event": "profile.updated", "targetUrl": "https://1.1.1.1/h"}, "env must be one of"),
        ({"env": "live", "event": "profile.renamed", "targetUrl": "https://1.1.1.1/h"}, "event must be one of"),
        ({"env": "live", "event": "profile.updated", "targetUrl": "ftp://1.1.1.1/h"}, "must be an https"),
        ({"env": "live", "event": "profile.updated", "targetUrl": "https://10.0.0.7/h"}, "private address"),
        ({"env": "live", "event": "profile.updated", "targetUrl": "https://192.168.1.1/h"}, "private address"),
        ({"env": "live", "event": "profile.updated", "targetUrl": "https://169.254.169.254/latest"}, "metadata"),
        ({"env": "live", "event": "profile.updated", "targetUrl": "https://169.254.10.1/h"}, "link-local"),
        ({"env": "live", "event": "profile.updated", "targetUrl": "https://[fe80::1]/h"}, "link-local"),
        ({"env": "live", "event": "profile.updated", "targetUrl": "https://user:pw@1.1.1.1/h"}, "user name"),
        ({"env": "live", "event": "profile.updated", "targetUrl": "https://0.0.0.0/h"}, "not a public"),
    ],
)
def test_bad_subscriptions_are_refused_with_a_clear_400(service: Running, body: dict[str, str], fragment: str) -> None:
    response = httpx.post(service.url + "/v1/all/webhooks", json=body, headers={"x-api-key": KEY_A})
    assert response.status_code == 400
    assert fragment in response.json()["message"]
    assert response.json()["requestId"] == response.headers["x-request-id"]


def test_bodies_that_are_not_json_objects(service: Running) -> None:
    for content in (b"not json", b"[1, 2]", b""):
        response = httpx.post(service.url + "/v1/all/webhooks", content=content, headers={"x-api-key": KEY_A})
        assert response.status_code == 400, content
    too_big = httpx.post(
        service.url + "/v1/all/webhooks", content=b"{" + b" " * 70_000 + b"}", headers={"x-api-key": KEY_A}
    )
    assert too_big.status_code == 413


def test_outside_development_loopback_and_http_are_refused() -> None:
    strict = TargetPolicy()
    for url, reason in (
        ("https://127.0.0.1/h", "loopback"),
        ("https://[::1]/h", "loopback"),
        ("https://localhost/h", "loopback"),
        ("http://1.1.1.1/h", "must be an https"),
        ("https://2130706433/h", "loopback"),
        ("https://[::ffff:127.0.0.1]/h", "loopback"),
    ):
        with pytest.raises(TargetRefused, match=reason):
            strict.check_url(url)
    assert strict.check_url("https://1.1.1.1/hooks") == "https://1.1.1.1/hooks"
    relaxed = TargetPolicy(allow_http=True, allow_loopback=True)
    assert relaxed.check_url("http://127.0.0.1:9/h")
    with pytest.raises(TargetRefused, match="private"):
        relaxed.check_url("http://10.1.2.3/h")


def test_a_dns_answer_that_turns_private_is_refused_at_connect_time(
    tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name resolved to a public address when subscribed; when the delivery connects it says loopback."""
    real = socket.getaddrinfo
    answers: dict[str, str] = {"hooks.example.test": "93.184.216.34"}

    def lying_resolver(host: str, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host in answers:
            return real(answers[host], port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(webhook_targets.socket, "getaddrinfo", lying_resolver)
    policy = TargetPolicy(allow_http=True)  # http, so the receiver need not speak TLS; loopback stays refused
    url = policy.check_url(f"http://hooks.example.test:{receiver.port}/hooks")
    store = WebhookStore(tmp_path / "w.sqlite3")
    subscription = store.subscribe(1, "live", "profile.updated", url)
    answers["hooks.example.test"] = "127.0.0.1"  # the rebinding
    store.publish([Event("profile.updated", "live", {"collection": "Builders", "profile": {}}, [subscription])])
    worker = DeliveryWorker(store, policy, RetrySchedule((60.0,)))
    worker.start()
    try:
        deadline = time.monotonic() + 5
        attempts: list[dict[str, Any]] = []
        while time.monotonic() < deadline and not attempts:
            attempts = store.deliveries(1, None, 0, 10)[1][0]["attempts"]
            time.sleep(0.05)
    finally:
        worker.stop()
    assert attempts and "loopback" in (attempts[0]["error"] or "")
    assert receiver.received == []


def test_a_delivery_stored_before_a_hard_kill_is_sent_after_the_restart(tmp_path: Path, receiver: Receiver) -> None:
    data = tmp_path / "data"
    port = free_port()
    env = {
        **os.environ,
        "PRECON_SERVICE_DEFAULT_LISTINGS": "80",
        "PRECON_SERVICE_WEBHOOK_FIRST_DELAY": "4",
        "PRECON_SERVICE_WEBHOOK_RETRY_SCHEDULE": "[0.3, 0.5]",
    }
    command = [sys.executable, "-m", "precon.cli", "serve", "--dev", "--port", str(port), "--data", str(data)]

    def start() -> subprocess.Popen[bytes]:
        log = tmp_path / f"serve-{len(list(tmp_path.glob('serve-*.log')))}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text(errors="replace")[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    return process
            except httpx.TransportError:
                time.sleep(0.1)
        process.kill()
        raise AssertionError(f"the service did not start: {log.read_text(errors='replace')[-3000:]}")

    first = start()
    try:
        with Client(f"http://127.0.0.1:{port}", DEV_API_KEY, DEV_PRODUCT_ID, cache=False) as client:
            subscription = client.create_webhook(receiver.url, "profile.updated")
            profile = client.search_profiles(per_page=1).results[0]
            fired = client.trigger_profile_webhook(profile.profile_id or "", profile.collection or "")
        assert fired.deliveries == 1
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert receiver.received == [], "killed before the first attempt was due"
    second = start()
    try:
        headers, body = receiver.wait_for(1, timeout=20)[0]
        payload = verified(subscription.secret or "", headers, body)
        assert payload["id"] == fired.eventId
        with Client(f"http://127.0.0.1:{port}", DEV_API_KEY, cache=False) as client:
            assert [s.id for s in client.list_webhooks()] == [subscription.id]
    finally:
        second.terminate()
        second.wait(timeout=20)


def test_the_delivery_body_is_the_stored_event(tmp_path: Path) -> None:
    store = WebhookStore(tmp_path / "w.sqlite3")
    subscription = store.subscribe(7, "live", "profile.created", "https://1.1.1.1/h")
    [(event_id, count)] = store.publish([Event("profile.created", "live", {"x": 1}, [subscription])])
    [due] = store.claim_due(10)
    assert count == 1 and orjson.loads(due.body)["id"] == event_id
    assert store.claim_due(10) == [], "a claimed delivery is leased, not handed out twice"
    [(_, nobody)] = store.publish([Event("profile.created", "live", {}, [])])
    assert nobody == 0


def test_the_client_reads_the_delivery_log_and_replays(service: Running, receiver: Receiver) -> None:
    receiver.status = 503
    with service.client() as client:
        subscription = client.create_webhook(receiver.url, "profile.updated")
        client.trigger_profile_webhook(*a_profile(service))
        wait_until(lambda: client.webhook_deliveries().results[0].status == "failed", timeout=20)
        log = client.webhook_deliveries(subscription=subscription.id)
        [delivery] = log.results
        assert log.total == 1 and delivery.event == "profile.updated" and delivery.targetUrl == receiver.url
        assert [a.status for a in delivery.attempts] == [503] * (len(FAST_SCHEDULE) + 1)
        receiver.status = 200
        assert client.replay_delivery(delivery.id).status in QUEUED
        wait_until(lambda: client.webhook_deliveries().results[0].status == "delivered")
        with pytest.raises(errors.NotFound):
            client.replay_delivery("msg_nope")


def test_deleting_a_subscription_cancels_what_it_still_had_to_send(service: Running, receiver: Receiver) -> None:
    receiver.status = 500
    with service.client() as client:
        subscription = client.create_webhook(receiver.url, "profile.updated")
        client.trigger_profile_webhook(*a_profile(service))
        receiver.wait_for(1)
        client.delete_webhook(subscription.id)
        [delivery] = client.webhook_deliveries().results
        assert delivery.status == "cancelled"
        arrived = len(receiver.received)
        time.sleep(1.5)
        assert len(receiver.received) == arrived, "no retry after the subscription is gone"
        with pytest.raises(errors.NotFound):
            client.replay_delivery(delivery.id)


def test_webhook_answers_are_never_cached(service: Running, receiver: Receiver) -> None:
    response = httpx.get(service.url + "/v1/all/webhooks", headers={"x-api-key": KEY_A})
    assert response.headers["cache-control"] == "no-store"
    cached = Client(service.url, KEY_A, cache=None)
    try:
        assert cached.list_webhooks() == []
        cached.create_webhook(receiver.url, "listing.created")
        assert len(cached.list_webhooks()) == 1
    finally:
        cached.close()


def test_a_bad_target_url_says_what_to_write(service: Running) -> None:
    def refused(url: str) -> str:
        response = httpx.post(
            service.url + "/v1/all/webhooks",
            headers={"x-api-key": KEY_A},
            json={"env": "live", "event": "profile.updated", "targetUrl": url},
        )
        assert response.status_code == 400
        message: str = response.json()["message"]
        return message

    assert refused("example.com/hooks") == (
        "targetUrl: 'example.com/hooks' is not a whole URL: start it with https:// or http:// "
        "(e.g. https://example.com/hooks)"
    )
    assert refused("  ") == "targetUrl: enter the URL that receives the deliveries (https://...)"
    assert "none" not in refused("example.com/hooks")
    assert refused("ftp://1.1.1.1/h") == "targetUrl: must be an https or http URL, got 'ftp'"
