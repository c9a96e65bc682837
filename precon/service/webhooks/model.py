"""Webhook subscriptions and their deliveries: a durable outbox, signed posts, retries, and the attempt log.

A delivery is written to the outbox (a SQLite file, :class:`precon.service.webhooks.sqlite.WebhookStore`, or with a
database URL PostgreSQL, :class:`precon.service.webhooks.postgres.PostgresWebhookStore`: both are :class:`Outbox`)
in the same transaction as its event, before anything is sent. The worker (:mod:`precon.service.webhooks.delivery`)
claims due deliveries for a lease and posts them signed per the Standard Webhooks scheme; the store records every
attempt and schedules the next after a growing, jittered wait, until the schedule is spent and the delivery is
marked failed. A service killed mid-send finds its claimed deliveries due again when the lease runs out: delivery is
at least once, and receivers deduplicate on ``webhook-id``.

This module is what the outbox is, whichever database holds it: its types, limits and schedules, and the rules that
are not SQL (what an attempt comes to, which claims were abandoned, what the log shows). The SQL is
:mod:`precon.service.webhooks.sql`, written once for both.
"""

from __future__ import annotations

import base64
import os
import random
import secrets
import socket
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import orjson

from precon.service.errors import ApiError

PRODUCTION_SCHEDULE_S: tuple[float, ...] = (5, 5 * 60, 30 * 60, 2 * 3600, 5 * 3600, 10 * 3600, 10 * 3600)
"""Waits before each retry: an attempt, then these; when they are spent the delivery has failed."""
DELIVERY_TIMEOUT_S = 15.0
CLAIM_LEASE_S = 2 * DELIVERY_TIMEOUT_S
"""A claimed delivery not finished in this time (its sender died) is due again."""
RESPONSE_EXCERPT_CHARS = 500
JITTER = 0.1
"""Each wait varies by up to ±10%, so retries of many deliveries do not arrive together."""
SECRET_PREFIX = "whsec_"
SENDERS = 4
ELECTION_S = 1.0
"""How often a worker process that does not send deliveries tries to become the one that does."""
POLL_S = 0.5
MAX_SUBSCRIPTIONS_PER_KEY = 100
"""The most webhook subscriptions one key may hold: one event fans out to at most this many deliveries a key."""
IDEMPOTENCY_TTL_S = 24 * 3600
"""How long an ``Idempotency-Key``'s stored answer is kept (older ones are purged as new ones are stored)."""

CLAIMANT = f"{socket.gethostname()}:{os.getpid()}"
"""Who claims deliveries in this process: a claim of a process that died is released when a worker starts."""


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def abandoned(claims: Iterable[tuple[Any, str]]) -> list[tuple[Any, str]]:
    """Of ``(row, host:pid)`` claims made on this host, those of another process that no longer runs."""
    dead = []
    for row, claimant in claims:
        pid = int(claimant.rsplit(":", 1)[1])
        if pid != os.getpid() and not process_alive(pid):
            dead.append((row, claimant))
    return dead


def claims_of_host(claimant: str) -> str:
    """A ``LIKE`` pattern (``ESCAPE '\\'``) of the claims made on the host of ``claimant`` (``host:pid``)."""
    host = claimant.rsplit(":", 1)[0]
    return host.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ":%"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


def new_event_id() -> str:
    return "evt_" + uuid.uuid4().hex


def new_delivery_id() -> str:
    """A delivery's id, which receivers see as ``webhook-id`` (the same on every attempt)."""
    return "msg_" + uuid.uuid4().hex


class SubscriptionLimitReached(ApiError, ValueError):
    """A key that already holds the most subscriptions allowed asked for another: a 400 saying so."""

    def __init__(self, limit: int) -> None:
        super().__init__(400, f"this key already has {limit} webhook subscriptions, the most allowed; delete one first")
        self.limit = limit


@dataclass(frozen=True)
class Selection:
    """What a subscription to listing events hears of, beyond its event (contract.md, "Filtered subscriptions"):
    listings matching ``filter_query`` and ``unit_filter`` (the search grammars, as given) before or after a write,
    and changes to ``fields``. Empty, it hears of everything, as subscriptions always did."""

    filter_query: str | None = None
    unit_filter: str | None = None
    fields: tuple[str, ...] | None = None

    @property
    def filtered(self) -> bool:
        return bool(self.filter_query or self.unit_filter)

    def __bool__(self) -> bool:
        return self.filtered or self.fields is not None

    def stored(self) -> tuple[str | None, str | None, str | None]:
        """The three columns that keep it (``fields`` as a JSON array)."""
        fields = None if self.fields is None else orjson.dumps(list(self.fields)).decode()
        return self.filter_query, self.unit_filter, fields

    @classmethod
    def of_columns(cls, filter_query: str | None, unit_filter: str | None, fields: str | None) -> Selection:
        return cls(filter_query, unit_filter, None if fields is None else tuple(orjson.loads(fields)))

    def public(self) -> dict[str, Any]:
        """Only what is set: a subscription without a selection is shown as it always was."""
        shown: dict[str, Any] = {"filterQuery": self.filter_query, "unitFilter": self.unit_filter}
        shown = {name: value for name, value in shown.items() if value}
        if self.fields is not None:
            shown["fields"] = list(self.fields)
        return shown


@dataclass(frozen=True)
class Subscription:
    id: str
    key_id: int
    env: str
    event: str
    target_url: str
    secret: str
    created_at: str
    selection: Selection = Selection()

    @classmethod
    def new(
        cls, key_id: int, env: str, event: str, target_url: str, selection: Selection | None = None
    ) -> Subscription:
        """A subscription not yet stored: its id, secret and creation time made here."""
        made = ("wh_" + uuid.uuid4().hex[:20], key_id, env, event, target_url, new_secret(), now_iso())
        return cls(*made, selection or Selection())

    def public(self, with_secret: bool = False) -> dict[str, Any]:
        body = {
            "id": self.id,
            "env": self.env,
            "targetUrl": self.target_url,
            "event": self.event,
            "createdAt": self.created_at,
            **self.selection.public(),
        }
        if with_secret:
            body["secret"] = self.secret
        return body


@dataclass
class Event:
    type: str
    env: str
    data: dict[str, Any]
    subscribers: Sequence[Subscription]

    def body(self, event_id: str, created: str) -> bytes:
        """What every delivery of the event posts, stored once with the event."""
        return orjson.dumps(
            {"id": event_id, "type": self.type, "createdAt": created, "env": self.env, "data": self.data}
        )


@dataclass(frozen=True)
class IdempotencyKey:
    """A request's ``Idempotency-Key``, with whose it is (the caller's API key id) and what was asked (a digest of
    the operation and its body: the same key sent with another request is refused, not answered with this one's)."""

    key_id: int
    key: str
    fingerprint: str


@dataclass(frozen=True)
class StoredAnswer:
    """The answer stored with an ``Idempotency-Key``; ``replayed`` when it was stored by an earlier request."""

    status: int
    body: bytes
    fingerprint: str
    replayed: bool


AnswerOf = Callable[[list[tuple[str, int]]], bytes]
"""Makes the answer's body from what :meth:`Outbox.publish` answers (each event's id and deliveries)."""


@dataclass
class Due:
    id: str
    event_id: str
    target_url: str
    secret: str
    attempts: int
    body: bytes
    subscription_id: str = ""
    event: str = ""
    """The event's type (``listing.updated``): for the attempt's log line and metrics."""


@dataclass
class RetrySchedule:
    waits: tuple[float, ...] = PRODUCTION_SCHEDULE_S
    first_delay: float = 0.0
    """Seconds between storing a delivery and its first attempt (0: at once)."""

    def next_wait(self, attempts_made: int) -> float | None:
        """Seconds until the next attempt after ``attempts_made`` attempts; None when the schedule is spent."""
        if attempts_made > len(self.waits):
            return None
        base = self.waits[attempts_made - 1]
        return base * random.uniform(1 - JITTER, 1 + JITTER)


def attempt_outcome(delivery: Due, status_code: int | None, schedule: RetrySchedule) -> tuple[int, str, float | None]:
    """After an attempt answered ``status_code`` (None: no answer): the delivery's attempts, its status
    (``delivered``, ``pending`` again, or ``failed`` once the schedule is spent) and the wait before the next."""
    attempts = delivery.attempts + 1
    succeeded = status_code is not None and 200 <= status_code < 300
    wait = None if succeeded else schedule.next_wait(attempts)
    return attempts, "delivered" if succeeded else ("pending" if wait is not None else "failed"), wait


def delivery_view(row: Sequence[Any], attempts: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """A delivery as the log shows it: a row of :data:`~precon.service.webhooks.sql.DELIVERY_COLUMNS` and its
    attempts (``attempted_at, status_code, latency_ms, error, response_excerpt``, the oldest first)."""
    next_at = row[8]
    return {
        "id": row[0],
        "eventId": row[1],
        "event": row[2],
        "env": row[3],
        "subscription": row[4],
        "targetUrl": row[5],
        "status": row[6],
        "attempts": [
            {"attemptedAt": a[0], "status": a[1], "latencyMs": float(a[2]), "error": a[3], "response": a[4]}
            for a in attempts
        ],
        "nextAttemptAt": None
        if next_at is None or row[6] != "pending"
        else datetime.fromtimestamp(next_at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "createdAt": row[9],
        "updatedAt": row[10],
    }


class Outbox(Protocol):
    """What the service asks of a webhook store: the SQLite file's or PostgreSQL's, which answer alike."""

    shared: bool
    """Whether replicas on other machines use it too (then every process's worker sends, claims keeping each
    delivery to one; otherwise one process of the machine sends: see :attr:`DeliveryWorker.exclusive`)."""

    def subscribe(
        self,
        key_id: int,
        env: str,
        event: str,
        target_url: str,
        limit: int = MAX_SUBSCRIPTIONS_PER_KEY,
        selection: Selection | None = None,
    ) -> Subscription:
        """A new subscription of the key; :class:`SubscriptionLimitReached` if it already holds ``limit``, however
        many are created at the same time."""
        ...

    def filtering(self, env: str) -> bool:
        """Whether a subscription in ``env`` has a filter: only then need a write keep its listings' earlier
        documents (:attr:`~precon.service.stores.types.CatalogueChange.before`)."""
        ...

    def subscriptions(
        self, key_id: int | None = None, event: str | None = None, env: str | None = None
    ) -> list[Subscription]: ...

    def unsubscribe(self, key_id: int, subscription_id: str) -> bool: ...

    def publish(self, events: Sequence[Event], first_delay: float = 0.0) -> list[tuple[str, int]]:
        """Stores events and one delivery per subscriber, in one transaction, before anything is sent: each
        event's id and its number of deliveries (an event nobody subscribed to is not stored)."""
        ...

    def stored_answer(self, idempotency: IdempotencyKey) -> StoredAnswer | None: ...

    def publish_once(
        self, events: Sequence[Event], first_delay: float, idempotency: IdempotencyKey, answer: AnswerOf
    ) -> StoredAnswer: ...

    def claim_due(self, limit: int, lease_s: float = CLAIM_LEASE_S) -> list[Due]: ...

    def pending_summary(self) -> tuple[int, Any, float | None]:
        """How many deliveries wait to be sent, when the oldest of them was stored, and the earliest time one of them
        is due (Unix seconds; None when none waits)."""
        ...

    def release_abandoned_claims(self) -> int: ...

    def record_attempt(
        self,
        delivery: Due,
        *,
        status_code: int | None,
        latency_ms: float,
        error: str | None,
        excerpt: str | None,
        schedule: RetrySchedule,
    ) -> str: ...

    def send_now(self, key_id: int, delivery_id: str) -> str | None: ...

    def replay(self, key_id: int, delivery_id: str) -> bool: ...

    def deliveries(
        self, key_id: int, subscription_id: str | None, offset: int, limit: int, delivery_id: str | None = None
    ) -> tuple[int, list[dict[str, Any]]]: ...

    def close(self) -> None: ...
