"""Send now and replay: a pending delivery attempted at once, a failed one keeping its schedule, any one sent again."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from precon.client import errors
from precon.service.webhooks.model import (
    Event,
    RetrySchedule,
)
from precon.service.webhooks.sqlite import WebhookStore
from tests.waiting import wait_until

if TYPE_CHECKING:
    pass
from tests.webhook_support import KEY_A, KEY_B, QUEUED, Receiver, Running, a_profile, verified


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
