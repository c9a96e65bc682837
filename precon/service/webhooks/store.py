"""Webhook subscriptions and their deliveries: a durable outbox, signed posts, retries, and the attempt log.

A delivery is written to the outbox (this SQLite file, or with a database URL PostgreSQL:
:class:`precon.service.webhooks.postgres.PostgresWebhookStore`) in the same transaction as its event, before
anything is sent. The worker (:mod:`precon.service.webhooks.delivery`) claims due deliveries for a lease and posts them
signed per the Standard Webhooks scheme; the store records every attempt and schedules the next after a growing,
jittered wait, until the schedule is spent and the delivery is marked failed. A service killed mid-send finds its
claimed deliveries due again when the lease runs out: delivery is at least once, and receivers deduplicate on
``webhook-id``.
"""

from __future__ import annotations

import base64
import logging
import os
import random
import secrets
import socket
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from precon.service.errors import ApiError
from precon.service.sqlite_files import Connections

log = logging.getLogger("precon.webhooks")

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
IDEMPOTENCY_TTL_S = 24 * 3600
"""How long an ``Idempotency-Key``'s stored answer is kept (older ones are purged as new ones are stored)."""
"""The most webhook subscriptions one key may hold: one event fans out to at most this many deliveries a key."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS subscriptions(
  id TEXT PRIMARY KEY,
  key_id INTEGER NOT NULL,
  env TEXT NOT NULL,
  event TEXT NOT NULL,
  target_url TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS subscriptions_by_key ON subscriptions(key_id, created_at);
CREATE INDEX IF NOT EXISTS subscriptions_by_event ON subscriptions(event, env);
CREATE TABLE IF NOT EXISTS events(
  id TEXT PRIMARY KEY, type TEXT NOT NULL, env TEXT NOT NULL, created_at TEXT NOT NULL, body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS deliveries(
  id TEXT PRIMARY KEY,
  event_id TEXT NOT NULL REFERENCES events(id),
  subscription_id TEXT NOT NULL,
  key_id INTEGER NOT NULL,
  target_url TEXT NOT NULL,
  secret TEXT NOT NULL,
  status TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at REAL,
  claimed_by TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries(status, next_attempt_at);
CREATE INDEX IF NOT EXISTS deliveries_by_key ON deliveries(key_id, created_at);
CREATE TABLE IF NOT EXISTS attempts(
  id INTEGER PRIMARY KEY,
  delivery_id TEXT NOT NULL REFERENCES deliveries(id),
  attempted_at TEXT NOT NULL,
  status_code INTEGER,
  latency_ms REAL NOT NULL,
  error TEXT,
  response_excerpt TEXT);
CREATE INDEX IF NOT EXISTS attempts_by_delivery ON attempts(delivery_id, id);
CREATE TABLE IF NOT EXISTS idempotency_keys(
  key_id INTEGER NOT NULL,
  idempotency_key TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  status INTEGER NOT NULL,
  body BLOB NOT NULL,
  created_at REAL NOT NULL,
  PRIMARY KEY(key_id, idempotency_key));
CREATE INDEX IF NOT EXISTS idempotency_keys_by_age ON idempotency_keys(created_at);
"""


def _prepare_connection(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA synchronous=FULL")  # a stored delivery survives the machine, not only the process


CLAIMANT = f"{socket.gethostname()}:{os.getpid()}"
"""Who claims deliveries in this process: a claim of a process that died is released when a worker starts."""


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(24)).decode()


class SubscriptionLimitReached(ApiError, ValueError):
    """A key that already holds the most subscriptions allowed asked for another: a 400 saying so."""

    def __init__(self, limit: int) -> None:
        super().__init__(400, f"this key already has {limit} webhook subscriptions, the most allowed; delete one first")
        self.limit = limit


@dataclass(frozen=True)
class Subscription:
    id: str
    key_id: int
    env: str
    event: str
    target_url: str
    secret: str
    created_at: str

    def public(self, with_secret: bool = False) -> dict[str, Any]:
        body = {
            "id": self.id,
            "env": self.env,
            "targetUrl": self.target_url,
            "event": self.event,
            "createdAt": self.created_at,
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
"""Makes the answer's body from what :meth:`WebhookStore.publish` answers (each event's id and deliveries)."""


@dataclass
class Due:
    id: str
    event_id: str
    target_url: str
    secret: str
    attempts: int
    body: bytes


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


class WebhookStore:
    """Subscriptions, events, the delivery outbox and the attempt log, in one SQLite file."""

    shared = False
    """Only the processes of this machine use the file (one of them sends: see :attr:`DeliveryWorker.exclusive`)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._connections = Connections(self.path, _prepare_connection)
        db = self._db()
        db.executescript(_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(deliveries)")}
        if "claimed_by" not in columns:  # an outbox written before claims were recorded
            db.execute("ALTER TABLE deliveries ADD COLUMN claimed_by TEXT")

    def _db(self) -> sqlite3.Connection:
        return self._connections.get()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connections.transaction() as db:
            yield db

    # -- subscriptions -------------------------------------------------------------------------------------

    def subscribe(
        self, key_id: int, env: str, event: str, target_url: str, limit: int = MAX_SUBSCRIPTIONS_PER_KEY
    ) -> Subscription:
        """A new subscription of the key; :class:`SubscriptionLimitReached` if it already holds ``limit``.

        The count and the insert are one statement in one write transaction: creates at the same time, from
        any thread or process, cannot take a key past the limit.
        """
        subscription = Subscription(
            id="wh_" + uuid.uuid4().hex[:20],
            key_id=key_id,
            env=env,
            event=event,
            target_url=target_url,
            secret=new_secret(),
            created_at=now_iso(),
        )
        with self._transaction() as db:
            inserted = db.execute(
                "INSERT INTO subscriptions SELECT ?, ?, ?, ?, ?, ?, ? "
                "WHERE (SELECT count(*) FROM subscriptions WHERE key_id = ?) < ?",
                (
                    subscription.id,
                    key_id,
                    env,
                    event,
                    target_url,
                    subscription.secret,
                    subscription.created_at,
                    key_id,
                    limit,
                ),
            ).rowcount
        if inserted != 1:
            raise SubscriptionLimitReached(limit)
        return subscription

    def subscriptions(
        self, key_id: int | None = None, event: str | None = None, env: str | None = None
    ) -> list[Subscription]:
        clauses, params = [], []
        for column, value in (("key_id", key_id), ("event", event), ("env", env)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        where = " AND ".join(clauses) or "1"
        rows = self._db().execute(f"SELECT * FROM subscriptions WHERE {where} ORDER BY created_at, id", params)
        return [Subscription(*row) for row in rows]

    def unsubscribe(self, key_id: int, subscription_id: str) -> bool:
        """Removes a subscription; its deliveries still waiting are cancelled (the log keeps them)."""
        with self._transaction() as db:
            removed = (
                db.execute("DELETE FROM subscriptions WHERE id = ? AND key_id = ?", (subscription_id, key_id)).rowcount
                > 0
            )
            if removed:
                db.execute(
                    "UPDATE deliveries SET status = 'cancelled', next_attempt_at = NULL, updated_at = ? "
                    "WHERE subscription_id = ? AND status = 'pending'",
                    (now_iso(), subscription_id),
                )
            return removed

    # -- events and the outbox -----------------------------------------------------------------------------

    def publish(self, events: Sequence[Event], first_delay: float = 0.0) -> list[tuple[str, int]]:
        """Stores events and one delivery per subscriber, in one transaction, before anything is sent.

        An event nobody subscribed to is not stored. Answers each event's id and its number of deliveries.
        """
        with self._transaction() as db:
            return self._publish(db, events, first_delay)

    def _publish(self, db: sqlite3.Connection, events: Sequence[Event], first_delay: float) -> list[tuple[str, int]]:
        due = time.time() + first_delay
        published = []
        for event in events:
            event_id = "evt_" + uuid.uuid4().hex
            published.append((event_id, len(event.subscribers)))
            if not event.subscribers:
                continue
            created = now_iso()
            body = orjson.dumps(
                {"id": event_id, "type": event.type, "createdAt": created, "env": event.env, "data": event.data}
            )
            db.execute("INSERT INTO events VALUES (?, ?, ?, ?, ?)", (event_id, event.type, event.env, created, body))
            db.executemany(
                "INSERT INTO deliveries(id, event_id, subscription_id, key_id, target_url, secret, status, "
                "next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
                [
                    (
                        "msg_" + uuid.uuid4().hex,
                        event_id,
                        s.id,
                        s.key_id,
                        s.target_url,
                        s.secret,
                        due,
                        created,
                        created,
                    )
                    for s in event.subscribers
                ],
            )
        return published

    # -- Idempotency-Key -------------------------------------------------------------------------------------

    def stored_answer(self, idempotency: IdempotencyKey) -> StoredAnswer | None:
        """The answer stored with this key by the caller within :data:`IDEMPOTENCY_TTL_S`, if any."""
        row = (
            self._db()
            .execute(
                "SELECT status, body, fingerprint FROM idempotency_keys "
                "WHERE key_id = ? AND idempotency_key = ? AND created_at > ?",
                (idempotency.key_id, idempotency.key, time.time() - IDEMPOTENCY_TTL_S),
            )
            .fetchone()
        )
        return None if row is None else StoredAnswer(row[0], bytes(row[1]), row[2], replayed=True)

    def publish_once(
        self, events: Sequence[Event], first_delay: float, idempotency: IdempotencyKey, answer: AnswerOf
    ) -> StoredAnswer:
        """:meth:`publish`, and the answer made of it (a 200) stored with the ``Idempotency-Key``, in one
        transaction; unless the key already holds an answer (stored by another request, on any process, even one
        that ran at the same time: the write transaction is taken first), which is then answered and nothing is
        published. Answers older than :data:`IDEMPOTENCY_TTL_S` are purged on the way."""
        now = time.time()
        with self._transaction() as db:
            db.execute("DELETE FROM idempotency_keys WHERE created_at <= ?", (now - IDEMPOTENCY_TTL_S,))
            row = db.execute(
                "SELECT status, body, fingerprint FROM idempotency_keys WHERE key_id = ? AND idempotency_key = ?",
                (idempotency.key_id, idempotency.key),
            ).fetchone()
            if row is not None:
                return StoredAnswer(row[0], bytes(row[1]), row[2], replayed=True)
            body = answer(self._publish(db, events, first_delay))
            db.execute(
                "INSERT INTO idempotency_keys VALUES (?, ?, ?, 200, ?, ?)",
                (idempotency.key_id, idempotency.key, idempotency.fingerprint, body, now),
            )
        return StoredAnswer(200, body, idempotency.fingerprint, replayed=False)

    def claim_due(self, limit: int, lease_s: float = CLAIM_LEASE_S) -> list[Due]:
        """Takes up to ``limit`` due deliveries for a lease: they are due again if not finished by then."""
        now = time.time()
        with self._transaction() as db:
            rows = db.execute(
                "SELECT d.id, d.event_id, d.target_url, d.secret, d.attempts, e.body FROM deliveries d "
                "JOIN events e ON e.id = d.event_id WHERE d.status = 'pending' AND d.next_attempt_at <= ? "
                "ORDER BY d.next_attempt_at LIMIT ?",
                (now, limit),
            ).fetchall()
            db.executemany(
                "UPDATE deliveries SET next_attempt_at = ?, claimed_by = ? WHERE id = ?",
                [(now + lease_s, CLAIMANT, row[0]) for row in rows],
            )
        return [Due(*row) for row in rows]

    def release_abandoned_claims(self) -> int:
        """Deliveries claimed by a process of this host that no longer runs are due at once, not after the lease."""
        host = CLAIMANT.rsplit(":", 1)[0]
        abandoned = []
        for delivery_id, claimant in self._db().execute(
            "SELECT id, claimed_by FROM deliveries WHERE status = 'pending' AND claimed_by LIKE ?", (host + ":%",)
        ):
            pid = int(claimant.rsplit(":", 1)[1])
            if pid != os.getpid() and not _process_alive(pid):
                abandoned.append(delivery_id)
        with self._transaction() as db:
            db.executemany(
                "UPDATE deliveries SET next_attempt_at = ?, claimed_by = NULL WHERE id = ? AND status = 'pending'",
                [(time.time(), delivery_id) for delivery_id in abandoned],
            )
        return len(abandoned)

    def record_attempt(
        self,
        delivery: Due,
        *,
        status_code: int | None,
        latency_ms: float,
        error: str | None,
        excerpt: str | None,
        schedule: RetrySchedule,
    ) -> str:
        """Logs an attempt and moves the delivery on: delivered, due again later, or failed."""
        attempts, status, wait = attempt_outcome(delivery, status_code, schedule)
        stamp = now_iso()
        with self._transaction() as db:
            db.execute(
                "INSERT INTO attempts(delivery_id, attempted_at, status_code, latency_ms, error, response_excerpt) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (delivery.id, stamp, status_code, round(latency_ms, 1), error, excerpt),
            )
            db.execute(
                "UPDATE deliveries SET attempts = ?, status = ?, next_attempt_at = ?, claimed_by = NULL, "
                "updated_at = ? WHERE id = ?",
                (attempts, status, None if wait is None else time.time() + wait, stamp, delivery.id),
            )
        return status

    def _being_sent(self, db: sqlite3.Connection, delivery_id: str, now: float) -> bool:
        """Whether a sender holds the delivery right now (claimed, its lease not yet run out): it is being posted."""
        row = db.execute(
            "SELECT 1 FROM deliveries WHERE id = ? AND status = 'pending' AND claimed_by IS NOT NULL "
            "AND next_attempt_at > ?",
            (delivery_id, now),
        ).fetchone()
        return row is not None

    def send_now(self, key_id: int, delivery_id: str) -> str | None:
        """A pending delivery is attempted at once instead of at its next scheduled retry; if that attempt fails,
        the retries carry on from where the schedule was. Answers what came of it: ``due`` (it is due now),
        ``sending`` (a sender is posting it already: nothing to do), the status of a delivery that is not
        pending (``delivered``, ``failed``, ``cancelled``: nothing is sent), or None for no such delivery of the key.
        """
        now = time.time()
        with self._transaction() as db:
            row = db.execute(
                "SELECT status FROM deliveries WHERE id = ? AND key_id = ?", (delivery_id, key_id)
            ).fetchone()
            if row is None:
                return None
            status: str = row[0]
            if status != "pending":
                return status
            if self._being_sent(db, delivery_id, now):
                return "sending"
            db.execute(
                "UPDATE deliveries SET next_attempt_at = ?, updated_at = ? WHERE id = ?", (now, now_iso(), delivery_id)
            )
            return "due"

    def replay(self, key_id: int, delivery_id: str) -> bool:
        """Sends any delivery again, at once: a delivered or failed one is pending again, a pending one is attempted
        now rather than at its next retry (as :meth:`send_now`; one a sender is posting already is left to it).
        Its earlier attempts stay in the log. A delivery of a deleted subscription is not sent again.
        """
        now = time.time()
        with self._transaction() as db:
            row = db.execute(
                "SELECT status FROM deliveries WHERE id = ? AND key_id = ? "
                "AND subscription_id IN (SELECT id FROM subscriptions)",
                (delivery_id, key_id),
            ).fetchone()
            if row is None:
                return False
            if self._being_sent(db, delivery_id, now):
                return True
            db.execute(
                "UPDATE deliveries SET status = 'pending', next_attempt_at = ?, claimed_by = NULL, updated_at = ? "
                "WHERE id = ?",
                (now, now_iso(), delivery_id),
            )
            return True

    def deliveries(
        self, key_id: int, subscription_id: str | None, offset: int, limit: int, delivery_id: str | None = None
    ) -> tuple[int, list[dict[str, Any]]]:
        """The key's deliveries, newest first, each with its event and every attempt."""
        db = self._db()
        where, params = "d.key_id = ?", [key_id]
        for column, value in (("d.subscription_id", subscription_id), ("d.id", delivery_id)):
            if value:
                where += f" AND {column} = ?"
                params.append(value)
        total = db.execute(f"SELECT count(*) FROM deliveries d WHERE {where}", params).fetchone()[0]
        rows = db.execute(
            f"SELECT {DELIVERY_COLUMNS} FROM deliveries d JOIN events e ON e.id = d.event_id "
            f"WHERE {where} ORDER BY d.created_at DESC, d.id DESC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        ).fetchall()
        results = []
        for row in rows:
            attempts = db.execute(
                "SELECT attempted_at, status_code, latency_ms, error, response_excerpt FROM attempts "
                "WHERE delivery_id = ? ORDER BY id",
                (row[0],),
            ).fetchall()
            results.append(delivery_view(row, attempts))
        return total, results

    def close(self) -> None:
        self._connections.close()


DELIVERY_COLUMNS = (
    "d.id, d.event_id, e.type, e.env, d.subscription_id, d.target_url, d.status, d.attempts, "
    "d.next_attempt_at, d.created_at, d.updated_at"
)
"""What :func:`delivery_view` is made of, from ``deliveries d JOIN events e``."""


def delivery_view(row: Sequence[Any], attempts: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """A delivery as the log shows it: a row of :data:`DELIVERY_COLUMNS` and its attempts (``attempted_at,
    status_code, latency_ms, error, response_excerpt``, the oldest first)."""
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
            {"attemptedAt": a[0], "status": a[1], "latencyMs": a[2], "error": a[3], "response": a[4]} for a in attempts
        ],
        "nextAttemptAt": None
        if next_at is None or row[6] != "pending"
        else datetime.fromtimestamp(next_at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "createdAt": row[9],
        "updatedAt": row[10],
    }
