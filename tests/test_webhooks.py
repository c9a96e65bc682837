"""Webhooks that really deliver: a real receiver on loopback verifies every delivery with Standard Webhooks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from standardwebhooks import Webhook

from precon import errors
from precon.client import Client
from precon.models import PROVINCES
from precon.service.accounts.model import Accounts
from precon.service.accounts.sqlite import AccountStore
from precon.service.config import DEV_API_KEY, DEV_PRODUCT_ID, ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import CatalogueChange
from precon.service.webhooks import targets as webhook_targets
from precon.service.webhooks.delivery import DeliveryWorker
from precon.service.webhooks.model import (
    MAX_SUBSCRIPTIONS_PER_KEY,
    Event,
    Outbox,
    RetrySchedule,
    Subscription,
    SubscriptionLimitReached,
)
from precon.service.webhooks.notify import CatalogueNotifier
from precon.service.webhooks.sqlite import WebhookStore
from precon.service.webhooks.targets import TargetPolicy, TargetRefused
from tests.waiting import wait_until

if TYPE_CHECKING:
    from precon.service.stores.postgres.store import PostgresCatalogueStore

KEY_A = "webhook-key-a"
KEY_B = "webhook-key-b"
KEY_BC = "webhook-key-bc"
FAST_SCHEDULE = [0.3, 0.6, 1.0, 1.0, 1.0, 1.0]
QUEUED = ("pending", "delivered")
"""What replay and send now answer to a receiver that accepts: the delivery queued (pending), or delivered when the
worker, woken before the answer is read, sent it first (often so with the outbox in PostgreSQL)."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Receiver:
    """An HTTP receiver on loopback that records what arrives and answers with ``status``."""

    port: int = field(default_factory=free_port)
    status: int = 204
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(receiver.status)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._server.allow_reuse_address = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def wait_for(self, count: int, timeout: float = 15) -> list[tuple[dict[str, str], bytes]]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(self.received) >= count, f"{len(self.received)} deliveries arrived, {count} expected"
        return self.received


def verified(secret: str, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    """The payload, if the Standard Webhooks verifier accepts the delivery's signature (it raises if not)."""
    payload: dict[str, Any] = Webhook(secret).verify(body, headers)
    return payload


@dataclass
class Running:
    url: str
    directory: DataDirectory

    def client(self, key: str = KEY_A, province: str = "all") -> Client:
        return Client(self.url, key, cache=False, max_retries=0, province=province)


@pytest.fixture
def service(tmp_path: Path) -> Iterator[Running]:
    settings = ServiceSettings(
        data_dir=tmp_path / "data",
        dev=True,
        rate_limit=0,
        default_listings=120,
        webhook_retry_schedule=FAST_SCHEDULE,
    )
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("a", key=KEY_A)
    directory.accounts.create_key("b", key=KEY_B)
    directory.accounts.create_key("bc-only", ["v1"], ["bc"], key=KEY_BC)
    with ServerThread(directory.app()) as server:
        yield Running(server.url, directory)
    directory.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


def a_profile(running: Running) -> tuple[str, str]:
    profile = running.client().search_profiles(collection="Builders", per_page=1).results[0]
    return profile.profile_id or "", "Builders"


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
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    return process
            except httpx.TransportError:
                time.sleep(0.1)
        process.kill()
        raise AssertionError("the service did not start")

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


# -- at most 100 subscriptions a key -------------------------------------------------------------------------


def _subscribe_from_threads(
    store: WebhookStore, key_id: int, threads: int, attempts: int, limit: int = MAX_SUBSCRIPTIONS_PER_KEY
) -> tuple[list[Subscription], list[SubscriptionLimitReached]]:
    made: list[Subscription] = []
    refused: list[SubscriptionLimitReached] = []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def create() -> None:
        start.wait()
        for _ in range(attempts):
            try:
                subscription = store.subscribe(key_id, "live", "listing.updated", "https://1.1.1.1/h", limit=limit)
            except SubscriptionLimitReached as error:
                with lock:
                    refused.append(error)
            else:
                with lock:
                    made.append(subscription)

    workers = [threading.Thread(target=create) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return made, refused


def test_a_key_holds_at_most_100_subscriptions_even_when_created_at_once(tmp_path: Path) -> None:
    assert MAX_SUBSCRIPTIONS_PER_KEY == 100
    store = WebhookStore(tmp_path / "w.sqlite3")
    other = store.subscribe(2, "live", "listing.updated", "https://1.1.1.1/other")
    made, refused = _subscribe_from_threads(store, 1, threads=8, attempts=20)
    assert len(made) == 100 and len(refused) == 60
    assert len(store.subscriptions(key_id=1)) == 100
    assert str(refused[0]) == "this key already has 100 webhook subscriptions, the most allowed; delete one first"
    assert isinstance(refused[0], ValueError) and refused[0].status == 400
    assert store.subscribe(2, "live", "listing.updated", "https://1.1.1.1/b")  # other keys are not affected
    assert store.unsubscribe(1, made[0].id)
    assert store.subscribe(1, "live", "listing.updated", "https://1.1.1.1/again")  # one deleted, one more allowed
    with pytest.raises(SubscriptionLimitReached):
        store.subscribe(1, "live", "listing.updated", "https://1.1.1.1/over")
    assert other in store.subscriptions(key_id=2)
    store.close()


def test_the_101st_subscription_is_a_400_that_says_so(service: Running) -> None:
    key = service.directory.accounts.authenticate(KEY_A)
    assert key is not None
    for number in range(MAX_SUBSCRIPTIONS_PER_KEY):
        service.directory.webhooks.subscribe(key.key_id, "live", "listing.updated", f"https://1.1.1.1/{number}")
    body = {"env": "live", "event": "profile.updated", "targetUrl": "https://1.1.1.1/h"}
    response = httpx.post(service.url + "/v1/all/webhooks", json=body, headers={"x-api-key": KEY_A})
    assert response.status_code == 400
    assert "this key already has 100 webhook subscriptions" in response.json()["message"]
    assert response.json()["requestId"] == response.headers["x-request-id"]
    other = httpx.post(service.url + "/v1/all/webhooks", json=body, headers={"x-api-key": KEY_B})
    assert other.status_code == 200


@settings(max_examples=15, deadline=None)
@given(
    limit=st.integers(1, 12),
    threads=st.integers(1, 6),
    attempts=st.integers(1, 8),
    deletes=st.integers(0, 4),
)
def test_property_concurrent_creates_and_deletes_never_pass_the_limit(
    limit: int, threads: int, attempts: int, deletes: int
) -> None:
    """Creates from many threads, with deletes among them and a reader watching: the key never holds more than
    the limit, and every create is either stored or refused."""
    with tempfile.TemporaryDirectory() as folder:
        store = WebhookStore(Path(folder) / "w.sqlite3")
        seen: list[int] = []
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                seen.append(len(store.subscriptions(key_id=7)))

        def delete_some() -> int:
            removed = 0
            for _ in range(deletes):
                mine = store.subscriptions(key_id=7)
                if mine and store.unsubscribe(7, mine[0].id):
                    removed += 1
            return removed

        watcher = threading.Thread(target=watch)
        watcher.start()
        removed: list[int] = []
        deleter = threading.Thread(target=lambda: removed.append(delete_some()))
        deleter.start()
        made, refused = _subscribe_from_threads(store, 7, threads, attempts, limit=limit)
        deleter.join()
        stop.set()
        watcher.join()
        final = len(store.subscriptions(key_id=7))
        store.close()
    assert len(made) + len(refused) == threads * attempts
    assert final == len(made) - removed[0] <= limit
    assert max(seen, default=0) <= limit
    if removed[0] == 0:
        assert final == min(limit, threads * attempts)


# -- profile events reach only keys that may read the profile ------------------------------------------------


def stored_event_bodies(webhooks: Outbox) -> list[tuple[int, bytes]]:
    """Each stored delivery's key and event body, in the order they were stored: read from the store's tables."""
    if isinstance(webhooks, WebhookStore):
        return (
            webhooks._db()
            .execute("SELECT d.key_id, e.body FROM deliveries d JOIN events e ON e.id = d.event_id ORDER BY d.rowid")
            .fetchall()
        )
    with webhooks.pool.connection() as db:
        rows = db.execute(
            "SELECT d.key_id, e.body FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id "
            "ORDER BY d.seq"
        ).fetchall()
    return [(key_id, bytes(body)) for key_id, body in rows]


def _deliveries_by_key(webhooks: Outbox) -> dict[int, list[dict[str, Any]]]:
    found: dict[int, list[dict[str, Any]]] = {}
    for key_id, body in stored_event_bodies(webhooks):
        found.setdefault(key_id, []).append(orjson.loads(body))
    return found


@dataclass
class ProfileWorld:
    store: SQLiteStore | PostgresCatalogueStore
    accounts: Accounts
    webhooks: Outbox
    keys: dict[str, int]


@pytest.fixture
def profile_world(tmp_path: Path) -> Iterator[ProfileWorld]:
    """A catalogue, keys and subscriptions in SQLite files (tests/test_pg_suite_webhooks.py: in PostgreSQL)."""
    yield from make_profile_world(
        SQLiteStore(tmp_path / "catalogue.sqlite3"),
        AccountStore(tmp_path / "accounts.sqlite3"),
        WebhookStore(tmp_path / "webhooks.sqlite3"),
    )


def make_profile_world(
    store: SQLiteStore | PostgresCatalogueStore, accounts: Accounts, webhooks: Outbox
) -> Iterator[ProfileWorld]:
    grants = {
        "on": (["v1"], ["on"]),
        "bc-lite": (["v1-lite"], ["bc"]),
        "ab": (["v1"], ["ab"]),
        "everywhere": (None, None),
        "sandbox": (["v1-sandbox"], None),
    }
    keys: dict[str, int] = {}
    for name, (versions, provinces) in grants.items():
        raw = accounts.create_key(name, versions, provinces)
        key = accounts.authenticate(raw)
        assert key is not None
        keys[name] = key.key_id
        for event in ("profile.created", "profile.updated", "profile.deleted"):
            webhooks.subscribe(key.key_id, "live", event, f"https://1.1.1.1/{name}")
    CatalogueNotifier(webhooks, accounts, store, "live").attach()
    yield ProfileWorld(store, accounts, webhooks, keys)
    store.close()
    webhooks.close()
    accounts.close()


def test_a_profile_event_reaches_only_keys_granted_one_of_its_provinces(profile_world: ProfileWorld) -> None:
    world = profile_world
    world.store.upsert_listings(
        [
            {"listingId": "L1", "state": "Ontario", "builders": ["Builders/b1"]},
            {"listingId": "L2", "state": "British Columbia", "builders": ["Builders/b1"]},
        ]
    )
    record = {"path": "Builders/b1", "name": "B One", "listings": ["Listings/L1", "Listings/L2", "Listings/Gone"]}
    world.store.upsert_profiles([record])
    world.store.upsert_profiles([{"path": "Builders/lonely", "name": "Nobody's Builder", "listings": []}])
    got = _deliveries_by_key(world.webhooks)
    keys = world.keys

    def profiles(name: str) -> list[tuple[str, str, list[str]]]:
        return [
            (e["type"], e["data"]["profile"]["id"], e["data"]["profile"].get("listings"))
            for e in got.get(keys[name], [])
        ]

    assert profiles("on") == [("profile.created", "b1", ["Listings/L1"])]
    assert profiles("bc-lite") == [("profile.created", "b1", ["Listings/L2"])]
    assert profiles("ab") == []  # granted no province the profile is in
    assert profiles("sandbox") == []  # no live grant at all
    assert profiles("everywhere") == [
        ("profile.created", "b1", ["Listings/L1", "Listings/L2"]),  # a listing not found is in no province
        ("profile.created", "lonely", []),  # a profile in no province is read under "all" only
    ]
    # A deletion says only which profile it was, to every key with a live grant.
    world.store.delete_profile("Builders/b1")
    deleted = [e for es in _deliveries_by_key(world.webhooks).values() for e in es if e["type"] == "profile.deleted"]
    assert {e["data"]["profile"]["id"] for e in deleted} == {"b1"}
    assert all(set(e["data"]["profile"]) == {"id", "path"} for e in deleted)


class _FakeCatalogue:
    """A profile named by listings in given provinces: as much of a store as the notifier reads."""

    def __init__(self, listing_provinces: dict[str, str | None]) -> None:
        self.listing_provinces = listing_provinces
        self.listeners: list[Any] = []
        self.record = {
            "id": "p1",
            "path": "Builders/p1",
            "name": "P",
            "listings": [f"Listings/{i}" for i in listing_provinces],
        }

    def get_profiles(self, paths: list[str]) -> dict[str, dict[str, Any]]:
        return {"Builders/p1": dict(self.record)} if "Builders/p1" in paths else {}

    def find_profile(self, profile_id: str, collection: str | None, province: str | None) -> dict[str, Any] | None:
        inside = province is None or province in self.listing_provinces.values()
        return dict(self.record) if inside else None

    def get_listings(self, ids: list[str], province: str | None) -> dict[str, dict[str, Any]]:
        states = {code: name for code, name in PROVINCES.items()}
        return {
            i: {"listingId": i, "state": states[p]}
            for i in ids
            if (p := self.listing_provinces.get(i)) is not None and province in (None, p)
        }


class _Outbox:
    def __init__(self, subscriptions: list[Subscription]) -> None:
        self._subscriptions = subscriptions
        self.events: list[Event] = []

    def subscriptions(self, key_id: int | None = None, event: str | None = None, env: str | None = None) -> Any:
        return [s for s in self._subscriptions if event in (None, s.event) and env in (None, s.env)]

    def publish(self, events: list[Event], first_delay: float = 0.0) -> list[tuple[str, int]]:
        self.events.extend(events)
        return [("evt", len(e.subscribers)) for e in events]


grant_strategy = st.tuples(
    st.sets(st.sampled_from(["v1", "v1-lite", "v1-sandbox"]), min_size=1),
    st.one_of(st.just(frozenset({"all"})), st.sets(st.sampled_from(sorted(PROVINCES)), min_size=1, max_size=4)),
)


@settings(max_examples=40, deadline=None)
@given(
    keys=st.lists(st.lists(grant_strategy, min_size=1, max_size=3), min_size=1, max_size=5),
    listings=st.dictionaries(
        st.sampled_from([f"L{i}" for i in range(8)]), st.one_of(st.none(), st.sampled_from(sorted(PROVINCES)))
    ),
)
def test_property_a_profile_reaches_a_key_only_through_a_grant_and_only_with_its_granted_listings(
    keys: list[list[tuple[set[str], frozenset[str]]]], listings: dict[str, str | None]
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        accounts = AccountStore(Path(folder) / "accounts.sqlite3")
        subscriptions = []
        granted: dict[int, list[tuple[set[str], frozenset[str]]]] = {}
        for number, grants in enumerate(keys):
            raw = f"pk_property_{number}"
            for index, (versions, provinces) in enumerate(grants):
                accounts.create_key(f"product-{number}-{index}", sorted(versions), sorted(provinces), key=raw)
            key = accounts.authenticate(raw)
            assert key is not None
            granted[key.key_id] = grants
            subscriptions.append(
                Subscription(f"wh_{number}", key.key_id, "live", "profile.updated", "https://1.1.1.1/", "s", "t")
            )
        catalogue = _FakeCatalogue(listings)
        outbox = _Outbox(subscriptions)
        notifier = CatalogueNotifier(outbox, accounts, catalogue, "live")  # type: ignore[arg-type]
        notifier([CatalogueChange("profile", "updated", "Builders/p1")])
    profile_provinces = {p for p in listings.values() if p is not None}
    delivered: dict[int, dict[str, Any]] = {}
    for event in outbox.events:
        for subscriber in event.subscribers:
            assert subscriber.key_id not in delivered, "one delivery per subscription"
            delivered[subscriber.key_id] = event.data["profile"]
    for key_id, grants in granted.items():
        live = [provinces for versions, provinces in grants if versions & {"v1", "v1-lite"}]
        readable = set().union(*live) if live else set()
        may_read = "all" in readable or bool(readable & profile_provinces)
        assert (key_id in delivered) == may_read, (grants, listings)
        if may_read:
            visible = set(PROVINCES) if "all" in readable else readable
            expected = [f"Listings/{i}" for i, p in listings.items() if p in visible]
            assert delivered[key_id]["listings"] == expected
            assert {k: v for k, v in delivered[key_id].items() if k != "listings"} == {
                k: v for k, v in catalogue.record.items() if k != "listings"
            }


# -- send now, and replay of any delivery --------------------------------------------------------------------------

SLOW_SCHEDULE = [3600.0] * 5
"""Retries an hour apart: a delivery that failed once stays pending, with its next attempt far away."""


@pytest.fixture
def slow_service(tmp_path: Path) -> Iterator[Running]:
    settings = ServiceSettings(
        data_dir=tmp_path / "data", dev=True, rate_limit=0, default_listings=60, webhook_retry_schedule=SLOW_SCHEDULE
    )
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("a", key=KEY_A)
    directory.accounts.create_key("b", key=KEY_B)
    with ServerThread(directory.app()) as server:
        yield Running(server.url, directory)
    directory.close()


def test_send_now_attempts_a_pending_delivery_at_once_instead_of_at_its_retry(
    slow_service: Running, receiver: Receiver
) -> None:
    receiver.status = 500
    with slow_service.client() as client:
        subscription = client.create_webhook(receiver.url, "profile.updated")
        client.trigger_profile_webhook(*a_profile(slow_service))
        receiver.wait_for(1)
        wait_until(lambda: len(client.webhook_deliveries().results[0].attempts) == 1)
        [delivery] = client.webhook_deliveries().results
        assert delivery.status == "pending" and delivery.nextAttemptAt is not None
        assert (delivery.nextAttemptAt - datetime.now(UTC)).total_seconds() > 3000, "its retry is an hour away"
        receiver.status = 204
        sent = client.send_delivery_now(delivery.id)
        assert sent.id == delivery.id and sent.status in QUEUED
        receiver.wait_for(2, timeout=5)
        wait_until(lambda: client.webhook_deliveries().results[0].status == "delivered")
        [delivery] = client.webhook_deliveries().results
        assert [a.status for a in delivery.attempts] == [500, 204]
        headers, body = receiver.received[-1]
        assert verified(subscription.secret or "", headers, body)["type"] == "profile.updated"
        assert headers["webhook-id"] == delivery.id
        with pytest.raises(errors.NotFound, match="not waiting to be sent: it is delivered; replay it"):
            client.send_delivery_now(delivery.id)
        with pytest.raises(errors.NotFound, match="not found"):
            client.send_delivery_now("msg_nope")
        with slow_service.client(KEY_B) as other:
            with pytest.raises(errors.NotFound):
                other.send_delivery_now(delivery.id)
    time.sleep(0.3)
    assert len(receiver.received) == 2, "a refused send now sends nothing"


def test_a_failed_send_now_keeps_the_retry_schedule(slow_service: Running, receiver: Receiver) -> None:
    receiver.status = 503
    with slow_service.client() as client:
        client.create_webhook(receiver.url, "profile.updated")
        client.trigger_profile_webhook(*a_profile(slow_service))
        wait_until(lambda: len(client.webhook_deliveries().results[0].attempts) == 1)
        delivery = client.webhook_deliveries().results[0]
        client.send_delivery_now(delivery.id)
        wait_until(lambda: len(client.webhook_deliveries().results[0].attempts) == 2)
        delivery = client.webhook_deliveries().results[0]
    assert delivery.status == "pending", "one early attempt failing does not fail the delivery"
    assert delivery.nextAttemptAt is not None
    assert (delivery.nextAttemptAt - datetime.now(UTC)).total_seconds() > 3000, "the next retry is scheduled again"


def test_replay_sends_any_delivery_again_delivered_or_pending(slow_service: Running, receiver: Receiver) -> None:
    with slow_service.client() as client:
        subscription = client.create_webhook(receiver.url, "profile.updated")
        client.trigger_profile_webhook(*a_profile(slow_service))
        receiver.wait_for(1)
        wait_until(lambda: client.webhook_deliveries().results[0].status == "delivered")
        delivery = client.webhook_deliveries().results[0]
        # A delivered one: sent again, with the same webhook-id.
        assert client.replay_delivery(delivery.id).status in QUEUED
        receiver.wait_for(2, timeout=5)
        wait_until(lambda: client.webhook_deliveries().results[0].status == "delivered")
        # A pending one (its first attempt refused, the retry an hour away): attempted now.
        receiver.status = 500
        client.replay_delivery(delivery.id)
        receiver.wait_for(3, timeout=5)
        wait_until(lambda: len(client.webhook_deliveries().results[0].attempts) == 3)
        assert client.webhook_deliveries().results[0].status == "pending"
        receiver.status = 200
        replayed = client.replay_delivery(delivery.id)
        assert replayed.status in QUEUED
        receiver.wait_for(4, timeout=5)
        wait_until(lambda: client.webhook_deliveries().results[0].status == "delivered")
        assert [a.status for a in client.webhook_deliveries().results[0].attempts] == [204, 204, 500, 200]
        # Over plain HTTP, as any client would send it.
        response = httpx.post(
            slow_service.url + "/v1/all/webhooks/deliveries/send_now",
            headers={"x-api-key": KEY_A},
            json={"id": delivery.id},
        )
        assert response.status_code == 404 and "it is delivered" in response.json()["message"]
        assert (
            httpx.post(
                slow_service.url + "/v1/all/webhooks/deliveries/send_now",
                headers={"x-api-key": KEY_A},
                json={"id": " "},
            ).status_code
            == 400
        )
        client.delete_webhook(subscription.id)
        with pytest.raises(errors.NotFound, match="subscription was deleted"):
            client.replay_delivery(delivery.id)
    assert {headers["webhook-id"] for headers, _ in receiver.received} == {delivery.id}


def test_send_now_leaves_a_delivery_a_sender_holds_to_it(tmp_path: Path) -> None:
    store = WebhookStore(tmp_path / "w.sqlite3")
    subscription = store.subscribe(7, "live", "profile.created", "https://1.1.1.1/h")
    store.publish([Event("profile.created", "live", {}, [subscription])])
    [due] = store.claim_due(10)
    assert store.send_now(7, due.id) == "sending", "being posted: not handed to a second sender"
    assert store.replay(7, due.id) is True
    assert store.claim_due(10) == [], "still leased to its sender"
    store.record_attempt(due, status_code=500, latency_ms=1, error="answered 500", excerpt="", schedule=RetrySchedule())
    assert store.send_now(7, due.id) == "due"
    assert [d.id for d in store.claim_due(10)] == [due.id]
    assert store.send_now(8, due.id) is None, "another key's delivery"
    store.close()


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
