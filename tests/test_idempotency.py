"""``Idempotency-Key`` on POST trigger_profile_webhook: the first request's event and answer are stored together, a
repeat with the same key from the same API key gets that answer (``Idempotent-Replayed: true``) and publishes
nothing again. tests/test_pg_suite_idempotency.py runs these again with the outbox in PostgreSQL."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import httpx
import pytest

from tests.webhook_support import KEY_A, KEY_B, Receiver, Running, a_profile

TRIGGER = "/v1/all/trigger_profile_webhook"


def trigger(running: Running, body: dict[str, str], key: str | bytes | None, api_key: str = KEY_A) -> httpx.Response:
    headers: dict[str, Any] = {"x-api-key": api_key}
    if key is not None:
        headers["Idempotency-Key"] = key
    return httpx.post(running.url + TRIGGER, json=body, headers=headers, timeout=30)


def subscribed(running: Running, receiver: Receiver, api_key: str = KEY_A) -> dict[str, str]:
    """Subscribes the key's receiver to profile.updated; the trigger body of a profile."""
    with running.client(api_key) as client:
        client.create_webhook(receiver.url, "profile.updated", "live")
    profile_id, collection = a_profile(running)
    return {"id": profile_id, "collection": collection}


def deliveries_of(running: Running, api_key: str = KEY_A) -> int:
    with running.client(api_key) as client:
        total: int = client.call("GET", "webhooks/deliveries", {})[0]["total"]
    return total


def settled(receiver: Receiver, count: int) -> None:
    """``count`` deliveries arrived, and no more within a second after."""
    receiver.wait_for(count)
    time.sleep(1.0)
    assert len(receiver.received) == count


def test_the_same_key_twice_is_one_event_and_the_same_answer(service: Running, receiver: Receiver) -> None:
    body = subscribed(service, receiver)
    key = str(uuid.uuid4())
    first = trigger(service, body, key)
    second = trigger(service, body, key)
    assert first.status_code == second.status_code == 200
    assert "idempotent-replayed" not in first.headers
    assert second.headers["idempotent-replayed"] == "true"
    assert second.content == first.content
    assert first.json()["deliveries"] == 1
    settled(receiver, 1)
    assert deliveries_of(service) == 1
    third = trigger(service, body, str(uuid.uuid4()))
    assert third.status_code == 200 and third.json()["eventId"] != first.json()["eventId"], "a new key: a new event"
    settled(receiver, 2)


def test_without_the_header_every_trigger_is_an_event(service: Running, receiver: Receiver) -> None:
    body = subscribed(service, receiver)
    first, second = trigger(service, body, None), trigger(service, body, None)
    assert first.status_code == second.status_code == 200
    assert "idempotent-replayed" not in second.headers
    assert first.json()["eventId"] != second.json()["eventId"]
    settled(receiver, 2)


def test_keys_of_different_api_keys_are_independent(service: Running) -> None:
    receivers = [Receiver().start(), Receiver().start()]
    try:
        body = subscribed(service, receivers[0], KEY_A)
        subscribed(service, receivers[1], KEY_B)
        a = trigger(service, body, "order-1", KEY_A)
        b = trigger(service, body, "order-1", KEY_B)
        assert a.status_code == b.status_code == 200
        assert "idempotent-replayed" not in a.headers and "idempotent-replayed" not in b.headers
        assert a.json()["eventId"] != b.json()["eventId"]
        settled(receivers[0], 1)
        settled(receivers[1], 1)
        again = trigger(service, body, "order-1", KEY_B)
        assert again.headers["idempotent-replayed"] == "true" and again.content == b.content
    finally:
        for started in receivers:
            started.stop()


@pytest.mark.parametrize(
    ("key", "fragment"),
    [
        ("", "it is empty"),
        ("k" * 256, "256 characters long, over the 255 allowed"),
        ("caf\u00e9".encode(), "only printable ASCII"),
    ],
)
def test_a_bad_key_is_a_400_that_says_what_is_wrong(service: Running, key: str | bytes, fragment: str) -> None:
    body = {"id": a_profile(service)[0], "collection": "Builders"}
    response = trigger(service, body, key)
    assert response.status_code == 400
    message = response.json()["message"]
    assert message.startswith("Idempotency-Key: ") and fragment in message, message
    assert trigger(service, body, "k" * 255).status_code == 200, "255 characters are allowed"


def test_the_same_key_for_another_request_is_a_400(service: Running, receiver: Receiver) -> None:
    body = subscribed(service, receiver)
    assert trigger(service, body, "reused").status_code == 200
    other = trigger(service, {**body, "collection": "Architects"}, "reused")
    assert other.status_code == 400 and "another request" in other.json()["message"]
    settled(receiver, 1)


def test_concurrent_requests_with_the_same_key_have_one_effect(service: Running, receiver: Receiver) -> None:
    body = subscribed(service, receiver)
    key = str(uuid.uuid4())
    answers: list[httpx.Response] = []
    start = threading.Barrier(8)

    def send() -> None:
        start.wait()
        answers.append(trigger(service, body, key))

    threads = [threading.Thread(target=send) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [r.status_code for r in answers] == [200] * 8
    assert len({r.content for r in answers}) == 1, "every request gets the one answer"
    assert sum(r.headers.get("idempotent-replayed") != "true" for r in answers) == 1
    settled(receiver, 1)
    assert deliveries_of(service) == 1


def test_a_key_older_than_a_day_is_purged_and_free_again(tmp_path: Any) -> None:
    from precon.service.webhooks.model import IdempotencyKey
    from precon.service.webhooks.sqlite import WebhookStore

    store = WebhookStore(tmp_path / "webhooks.sqlite3")
    key = IdempotencyKey(1, "k", "f")
    first = store.publish_once([], 0.0, key, lambda published: b"first")
    assert not first.replayed and store.publish_once([], 0.0, key, lambda published: b"second").replayed
    store._db().execute("UPDATE idempotency_keys SET created_at = created_at - 86401")
    assert store.stored_answer(key) is None
    again = store.publish_once([], 0.0, key, lambda published: b"second")
    assert not again.replayed and again.body == b"second"
    assert store._db().execute("SELECT count(*) FROM idempotency_keys").fetchone()[0] == 1
    store.close()
