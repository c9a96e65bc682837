"""At most 100 webhook subscriptions a key, even when they are created at once from many threads."""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from precon.service.webhooks.model import (
    MAX_SUBSCRIPTIONS_PER_KEY,
    Subscription,
    SubscriptionLimitReached,
)
from precon.service.webhooks.sqlite import WebhookStore

if TYPE_CHECKING:
    pass
from tests.webhook_support import KEY_A, KEY_B, Running

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
