"""The webhook outbox in PostgreSQL answers as in SQLite (the same calls on both stores), and shared by replicas it
sends each delivery once: claims from many threads of two stores never take one twice, and a claim whose sender
died (its lease run out without an attempt recorded) is taken by another and sent, never lost."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from precon.service.webhooks import model as webhooks_model
from precon.service.webhooks import postgres as pg_webhooks_module
from precon.service.webhooks import sqlite as sqlite_webhooks_module
from precon.service.webhooks.delivery import DeliveryWorker
from precon.service.webhooks.model import (
    CLAIMANT,
    Event,
    Outbox,
    RetrySchedule,
    Subscription,
    SubscriptionLimitReached,
)
from precon.service.webhooks.postgres import PostgresWebhookStore
from precon.service.webhooks.sqlite import WebhookStore
from precon.service.webhooks.targets import TargetPolicy
from tests import pg_support
from tests.waiting import wait_until
from tests.webhook_support import Receiver

pg_cluster = pg_support.pg_cluster
pg_database = pg_support.pg_database
pg_empty_database = pg_support.pg_empty_database

LOOPBACK = TargetPolicy(allow_http=True, allow_loopback=True)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Outbox]:
    opened: Outbox
    if request.param == "sqlite":
        opened = WebhookStore(tmp_path / "w.sqlite3")
    else:
        opened = PostgresWebhookStore(request.getfixturevalue("pg_database"), migrate=False)
    yield opened
    opened.close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    started = Receiver().start()
    yield started
    started.stop()


def publish_one(store: Outbox, subscription: Subscription, data: dict[str, Any] | None = None) -> str:
    [(event_id, _)] = store.publish([Event(subscription.event, subscription.env, data or {}, [subscription])])
    return event_id


def fail(store: Outbox, due: Any, schedule: RetrySchedule) -> str:
    return store.record_attempt(
        due, status_code=500, latency_ms=1.25, error="answered 500", excerpt="no", schedule=schedule
    )


def test_the_delivery_body_is_the_stored_event_and_a_claim_is_leased(store: Outbox) -> None:
    subscription = store.subscribe(7, "live", "profile.created", "https://1.1.1.1/h")
    event_id = publish_one(store, subscription, {"x": 1})
    [due] = store.claim_due(10)
    body = orjson.loads(due.body)
    assert body["id"] == event_id and body["data"] == {"x": 1} and body["type"] == "profile.created"
    assert due.target_url == "https://1.1.1.1/h" and due.secret == subscription.secret and due.attempts == 0
    assert store.claim_due(10) == [], "a claimed delivery is leased, not handed out twice"
    assert store.publish([Event("profile.created", "live", {}, [])])[0][1] == 0


def test_claims_come_in_due_order_up_to_the_limit(store: Outbox) -> None:
    subscription = store.subscribe(1, "live", "listing.updated", "https://1.1.1.1/h")
    store.publish([Event("listing.updated", "live", {"n": 0}, [subscription])], first_delay=0.2)
    store.publish([Event("listing.updated", "live", {"n": n}, [subscription]) for n in (1, 2, 3)])
    store.publish([Event("listing.updated", "live", {"n": 9}, [subscription])], first_delay=3600)
    first = [orjson.loads(d.body)["data"]["n"] for d in store.claim_due(2)]
    assert len(first) == 2 and set(first) <= {1, 2, 3}
    time.sleep(0.25)
    rest = [orjson.loads(d.body)["data"]["n"] for d in store.claim_due(10)]
    assert sorted(first + rest) == [0, 1, 2, 3], "the one an hour away is not due"


def test_subscriptions_filter_and_order_and_the_limit_holds_under_threads(store: Outbox) -> None:
    a = store.subscribe(1, "live", "listing.updated", "https://1.1.1.1/a")
    b = store.subscribe(1, "sandbox", "profile.updated", "https://1.1.1.1/b")
    c = store.subscribe(2, "live", "profile.updated", "https://1.1.1.1/c")
    in_order = lambda *made: sorted(made, key=lambda s: (s.created_at, s.id))  # noqa: E731 - ties share a millisecond
    assert store.subscriptions() == in_order(a, b, c)
    assert store.subscriptions(key_id=1) == in_order(a, b)
    assert store.subscriptions(event="profile.updated", env="live") == [c]
    made: list[Subscription] = []
    refused: list[SubscriptionLimitReached] = []
    start = threading.Barrier(8)

    def create() -> None:
        start.wait()
        for _ in range(5):
            try:
                made.append(store.subscribe(3, "live", "listing.updated", "https://1.1.1.1/x", limit=12))
            except SubscriptionLimitReached as error:
                refused.append(error)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 12 and len(refused) == 28 and len(store.subscriptions(key_id=3)) == 12
    assert refused[0].status == 400 and "already has 12 webhook subscriptions" in str(refused[0])


def test_unsubscribing_cancels_what_was_waiting_and_replay_refuses_it(store: Outbox) -> None:
    subscription = store.subscribe(7, "live", "profile.created", "https://1.1.1.1/h")
    publish_one(store, subscription)
    [(total, [delivery])] = [store.deliveries(7, None, 0, 10)]
    assert total == 1 and delivery["status"] == "pending" and delivery["nextAttemptAt"] is not None
    assert store.unsubscribe(8, subscription.id) is False, "another key's"
    assert store.unsubscribe(7, subscription.id) is True
    assert store.unsubscribe(7, subscription.id) is False
    _, [cancelled] = store.deliveries(7, None, 0, 10)
    assert cancelled["status"] == "cancelled" and cancelled["nextAttemptAt"] is None
    assert store.claim_due(10) == []
    assert store.replay(7, delivery["id"]) is False
    assert store.send_now(7, delivery["id"]) == "cancelled"


def test_attempts_retries_failure_send_now_and_replay(store: Outbox) -> None:
    schedule = RetrySchedule((0.0, 0.0))
    subscription = store.subscribe(7, "live", "profile.created", "https://1.1.1.1/h")
    publish_one(store, subscription)
    [due] = store.claim_due(10)
    assert store.send_now(7, due.id) == "sending", "being posted: not handed to a second sender"
    assert store.replay(7, due.id) is True
    assert store.claim_due(10) == [], "still leased to its sender"
    assert fail(store, due, schedule) == "pending"
    assert store.send_now(7, due.id) == "due"
    assert store.send_now(8, due.id) is None, "another key's delivery"
    [again] = store.claim_due(10)
    assert again.attempts == 1
    assert fail(store, again, schedule) == "pending"
    [third] = store.claim_due(10)
    assert fail(store, third, schedule) == "failed", "the schedule is spent"
    assert store.send_now(7, due.id) == "failed"
    total, [logged] = store.deliveries(7, subscription.id, 0, 10, delivery_id=due.id)
    assert total == 1 and logged["status"] == "failed" and logged["nextAttemptAt"] is None
    attempts = [(a["status"], a["latencyMs"], a["error"], a["response"]) for a in logged["attempts"]]
    assert attempts == [(500, round(1.25, 1), "answered 500", "no")] * 3
    assert store.replay(7, due.id) is True
    [replayed] = store.claim_due(10)
    assert (
        store.record_attempt(replayed, status_code=204, latency_ms=3, error=None, excerpt="", schedule=schedule)
        == "delivered"
    )
    _, [done] = store.deliveries(7, None, 0, 10)
    assert done["status"] == "delivered" and len(done["attempts"]) == 4
    assert repr(done["attempts"][-1]["latencyMs"]) == "3.0", "a float, as SQLite's REAL column answers"
    assert store.deliveries(7, "wh_other", 0, 10) == (0, [])
    assert store.deliveries(8, None, 0, 10) == (0, [])


def test_the_delivery_log_pages_newest_first(store: Outbox) -> None:
    subscription = store.subscribe(7, "live", "profile.created", "https://1.1.1.1/h")
    events = [publish_one(store, subscription, {"n": n}) for n in range(5)]
    total, page = store.deliveries(7, None, 1, 2)
    everything = store.deliveries(7, None, 0, 10)[1]
    assert total == 5 and page == everything[1:3]
    assert store.deliveries(7, None, 10, 2) == (5, []), "a page past the end still tells the total"
    assert sorted(d["eventId"] for d in everything) == sorted(events)
    assert [d["createdAt"] for d in everything] == sorted((d["createdAt"] for d in everything), reverse=True)
    assert set(everything[0]) == {
        "id", "eventId", "event", "env", "subscription", "targetUrl", "status", "attempts", "nextAttemptAt",
        "createdAt", "updatedAt",
    }  # fmt: skip


def test_a_claim_of_a_process_that_died_is_released_at_once(store: Outbox, monkeypatch: pytest.MonkeyPatch) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    claimant = CLAIMANT.rsplit(":", 1)[0] + ":" + dead.stdout.strip()
    subscription = store.subscribe(7, "live", "profile.created", "https://1.1.1.1/h")
    publish_one(store, subscription)
    for module in (sqlite_webhooks_module, pg_webhooks_module):
        monkeypatch.setattr(module, "CLAIMANT", claimant)
    [due] = store.claim_due(10)
    monkeypatch.undo()
    assert store.claim_due(10) == []
    assert store.release_abandoned_claims() == 1
    assert [d.id for d in store.claim_due(10)] == [due.id]
    assert store.release_abandoned_claims() == 0, "a claim of this process is its own"


# -- shared by replicas (PostgreSQL only) ----------------------------------------------------------------------


def _published(store: PostgresWebhookStore, count: int, url: str = "https://1.1.1.1/h") -> set[str]:
    subscription = store.subscribe(7, "live", "listing.updated", url)
    store.publish([Event("listing.updated", "live", {"n": n}, [subscription]) for n in range(count)])
    return {d["id"] for d in store.deliveries(7, None, 0, count)[1]}


def test_two_stores_claiming_from_many_threads_take_each_delivery_once(pg_database: str) -> None:
    stores = [PostgresWebhookStore(pg_database, migrate=False) for _ in range(2)]
    expected = _published(stores[0], 300)
    claimed: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(12)

    def sender(store: PostgresWebhookStore) -> None:
        start.wait()
        while batch := store.claim_due(limit=3):
            for due in batch:
                with lock:
                    claimed.append(due.id)
                store.record_attempt(
                    due, status_code=204, latency_ms=1, error=None, excerpt="", schedule=RetrySchedule()
                )

    threads = [threading.Thread(target=sender, args=(stores[n % 2],)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert len(claimed) == len(set(claimed)) == 300 and set(claimed) == expected
        log = stores[1].deliveries(7, None, 0, 300)[1]
        assert {d["status"] for d in log} == {"delivered"} and all(len(d["attempts"]) == 1 for d in log)
    finally:
        for store in stores:
            store.close()


def test_two_replicas_workers_send_each_delivery_once(pg_database: str, receiver: Receiver, tmp_path: Path) -> None:
    stores = [PostgresWebhookStore(pg_database, migrate=False) for _ in range(2)]
    lock = tmp_path / "webhook-sender.lock"  # as with --workers: both would elect one sender over a SQLite outbox
    workers = [DeliveryWorker(store, LOOPBACK, senders=6, exclusive=lock).start() for store in stores]
    try:
        expected = _published(stores[0], 120, receiver.url)
        for worker in workers:
            worker.wake()
        receiver.wait_for(120, timeout=30)
        wait_until(lambda: {d["status"] for d in stores[1].deliveries(7, None, 0, 200)[1]} == {"delivered"})
        time.sleep(0.5)
    finally:
        for worker in workers:
            worker.stop()
    try:
        sent = [headers["webhook-id"] for headers, _ in receiver.received]
        assert len(sent) == 120 and set(sent) == expected, "each delivery once, whichever replica sent it"
        assert all(w._threads for w in workers), "with a shared outbox every replica sends: no file-lock election"
    finally:
        for store in stores:
            store.close()


def test_a_sender_killed_mid_send_loses_nothing_another_sends_it_once(pg_database: str, receiver: Receiver) -> None:
    killed = PostgresWebhookStore(pg_database, migrate=False)
    survivor = PostgresWebhookStore(pg_database, migrate=False)
    try:
        [delivery_id] = _published(killed, 1, receiver.url)
        [due] = killed.claim_due(10, lease_s=1.0)  # then the replica dies: no attempt is ever recorded
        killed.close()
        assert survivor.claim_due(10) == [], "leased to the dead sender until the lease runs out"
        claimed_at = time.monotonic()
        worker = DeliveryWorker(survivor, LOOPBACK, RetrySchedule((60.0,)), senders=2).start()
        try:
            headers, _ = receiver.wait_for(1, timeout=10)[0]
            waited = time.monotonic() - claimed_at
            wait_until(lambda: survivor.deliveries(7, None, 0, 1)[1][0]["status"] == "delivered")
            time.sleep(0.6)
        finally:
            worker.stop()
        assert headers["webhook-id"] == due.id == delivery_id
        assert 0.8 <= waited < 1.0 + webhooks_model.POLL_S + 2, "taken when the lease ran out, within a poll"
        assert len(receiver.received) == 1, "sent once"
        assert len(survivor.deliveries(7, None, 0, 1)[1][0]["attempts"]) == 1
    finally:
        survivor.close()


def test_a_store_of_the_service_database_migrates_it_itself(pg_empty_database: str) -> None:
    store = PostgresWebhookStore(pg_empty_database)
    try:
        subscription = store.subscribe(1, "live", "listing.created", "https://1.1.1.1/h")
        assert store.subscriptions() == [subscription]
        assert store.shared and not WebhookStore.shared
    finally:
        store.close()


def test_a_claim_names_its_subscription_and_event_and_the_summary_counts_what_waits(store: Outbox) -> None:
    assert store.pending_summary() == (0, None, None)
    subscription = store.subscribe(7, "live", "profile.updated", "https://1.1.1.1/h")
    publish_one(store, subscription)
    publish_one(store, subscription)
    count, oldest, due = store.pending_summary()
    assert count == 2 and oldest is not None and due is not None and abs(due - time.time()) < 60
    [claimed] = store.claim_due(1)
    assert (claimed.subscription_id, claimed.event) == (subscription.id, "profile.updated")
    store.record_attempt(claimed, status_code=204, latency_ms=1.0, error=None, excerpt="", schedule=RetrySchedule())
    assert store.pending_summary()[0] == 1
