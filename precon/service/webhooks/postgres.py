"""Webhook subscriptions, events, the delivery outbox and the attempt log in PostgreSQL:
:class:`PostgresWebhookStore`, answering as :class:`precon.service.webhooks.store.WebhookStore` does (the tables of the
migrations ``0002`` and ``0003``).

Several replicas, each running a :class:`~precon.service.webhooks.delivery.DeliveryWorker`, share the outbox. A claim
is one
statement: the due deliveries are taken ``FOR UPDATE SKIP LOCKED`` (a delivery another sender is claiming is
skipped, not waited for, nor taken twice) and leased: their ``next_attempt_at`` moves to the lease's end and
``claimed_by`` names the claimant. A sender that dies mid-send (its replica killed) leaves its deliveries leased:
when the lease runs out (:data:`~precon.service.webhooks.store.CLAIM_LEASE_S`) they are due again and the next poll of
any worker takes them (at least once; receivers deduplicate on ``webhook-id``). Times are the database's clock,
so replicas whose clocks differ agree on what is due. Workers poll every
:data:`~precon.service.webhooks.store.POLL_S`: a delivery stored by another replica is sent within that of being due.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import orjson
import psycopg
from psycopg_pool import ConnectionPool

from precon.service.stores.postgres.migrations import upgrade
from precon.service.stores.postgres.pools import open_pool
from precon.service.webhooks.store import (
    CLAIM_LEASE_S,
    CLAIMANT,
    DELIVERY_COLUMNS,
    IDEMPOTENCY_TTL_S,
    MAX_SUBSCRIPTIONS_PER_KEY,
    AnswerOf,
    Due,
    Event,
    IdempotencyKey,
    RetrySchedule,
    StoredAnswer,
    Subscription,
    SubscriptionLimitReached,
    _process_alive,
    attempt_outcome,
    delivery_view,
    new_secret,
    now_iso,
)

NOW = "extract(epoch FROM clock_timestamp())::float8"
"""The database's clock, in epoch seconds (what ``next_attempt_at`` holds)."""
SUBSCRIBE_LOCK = 0x70726568
"""With a key's id, the advisory lock its subscription creates hold: the count and the insert see one another."""
_DELIVERIES = "webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id"
_ATTEMPTS = (
    "SELECT coalesce(json_agg(json_build_array(a.attempted_at, a.status_code, a.latency_ms, a.error, "
    "a.response_excerpt) ORDER BY a.id), '[]') FROM webhook_attempts a WHERE a.delivery_id = d.id"
)
"""A delivery's attempts, the oldest first, as one JSON array (read in the same statement as the delivery)."""


Claim = Callable[[psycopg.Connection[Any]], Sequence[Event]]
"""Called in the transaction that stores events, before they are stored: the events to store (of those given)."""


class Journal(Protocol):
    """A journal of catalogue changes whose events this outbox publishes (see
    :class:`~precon.service.stores.postgres.change_journal.ChangeJournal`)."""

    def sweep(self) -> int: ...


def _attempt(
    attempted_at: str, status_code: int | None, latency_ms: float, error: str | None, excerpt: str | None
) -> tuple[Any, ...]:
    """An attempt read back from JSON, its latency a float again (JSON writes ``3.0`` as ``3``)."""
    return attempted_at, status_code, float(latency_ms), error, excerpt


class PostgresWebhookStore:
    """The webhook outbox in a PostgreSQL database (migrated first when ``migrate``), shared by replicas."""

    shared = True
    """Replicas on other machines use it too: every process's worker sends, claims keeping each delivery to one."""

    def __init__(self, conninfo: str, *, min_size: int = 2, max_size: int = 8, migrate: bool = True) -> None:
        if migrate:
            upgrade(conninfo)
        self.conninfo = conninfo
        self.pool: ConnectionPool[Any] = open_pool(conninfo, "precon-webhooks", min_size, max_size)
        self.journals: list[Journal] = []
        """The journals of the catalogues in this database whose changes become events here: the delivery worker
        sweeps them (:meth:`sweep_journals`)."""

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self.pool.connection() as db, db.transaction():
            yield db

    # -- subscriptions -------------------------------------------------------------------------------------

    def subscribe(
        self, key_id: int, env: str, event: str, target_url: str, limit: int = MAX_SUBSCRIPTIONS_PER_KEY
    ) -> Subscription:
        """A new subscription of the key; :class:`SubscriptionLimitReached` if it already holds ``limit``.

        The key's creates take an advisory lock for their transaction, so that creates at the same time, from any
        replica, count one another and cannot take a key past the limit.
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
            db.execute("SELECT pg_advisory_xact_lock(%s, %s)", (SUBSCRIBE_LOCK & 0x7FFFFFFF, key_id & 0x7FFFFFFF))
            inserted = db.execute(
                "INSERT INTO webhook_subscriptions SELECT %s, %s, %s, %s, %s, %s, %s "
                "WHERE (SELECT count(*) FROM webhook_subscriptions WHERE key_id = %s) < %s",
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
                clauses.append(f"{column} = %s")
                params.append(value)
        where = " AND ".join(clauses) or "true"
        with self.pool.connection() as db:
            rows = db.execute(
                "SELECT id, key_id, env, event, target_url, secret, created_at FROM webhook_subscriptions "
                f"WHERE {where} ORDER BY created_at, id",
                params,
            ).fetchall()
        return [Subscription(*row) for row in rows]

    def unsubscribe(self, key_id: int, subscription_id: str) -> bool:
        """Removes a subscription; its deliveries still waiting are cancelled (the log keeps them)."""
        with self._transaction() as db:
            removed = (
                db.execute(
                    "DELETE FROM webhook_subscriptions WHERE id = %s AND key_id = %s", (subscription_id, key_id)
                ).rowcount
                > 0
            )
            if removed:
                db.execute(
                    "UPDATE webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, updated_at = %s "
                    "WHERE subscription_id = %s AND status = 'pending'",
                    (now_iso(), subscription_id),
                )
            return removed

    # -- events and the outbox -----------------------------------------------------------------------------

    def publish(
        self, events: Sequence[Event], first_delay: float = 0.0, claim: Claim | None = None
    ) -> list[tuple[str, int]]:
        """Stores events and one delivery per subscriber, in one transaction, before anything is sent.

        An event nobody subscribed to is not stored. Answers each event's id and its number of deliveries. With
        ``claim``, only the events it answers, in the same transaction (it may take what they come from, such as the
        rows of a journal of changes: an event is then stored once, by whoever took its row).
        """
        with self._transaction() as db:
            return self._publish(db, events if claim is None else claim(db), first_delay)

    def sweep_journals(self) -> int:
        """Publishes what the journals of catalogue changes hold that no living process is publishing (left by one
        that died between a write's commit and the publishing of its events): the number of changes published."""
        return sum(journal.sweep() for journal in list(self.journals))

    def _publish(
        self, db: psycopg.Connection[Any], events: Sequence[Event], first_delay: float
    ) -> list[tuple[str, int]]:
        published = []
        with db.cursor() as cursor:
            for event in events:
                event_id = "evt_" + uuid.uuid4().hex
                published.append((event_id, len(event.subscribers)))
                if not event.subscribers:
                    continue
                created = now_iso()
                body = orjson.dumps(
                    {"id": event_id, "type": event.type, "createdAt": created, "env": event.env, "data": event.data}
                )
                cursor.execute(
                    "INSERT INTO webhook_events VALUES (%s, %s, %s, %s, %s)",
                    (event_id, event.type, event.env, created, body),
                )
                cursor.executemany(
                    "INSERT INTO webhook_deliveries(id, event_id, subscription_id, key_id, target_url, secret, "
                    f"status, next_attempt_at, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, 'pending', "
                    f"{NOW} + %s, %s, %s)",
                    [
                        (
                            "msg_" + uuid.uuid4().hex,
                            event_id,
                            s.id,
                            s.key_id,
                            s.target_url,
                            s.secret,
                            first_delay,
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
        with self.pool.connection() as db:
            row = db.execute(
                "SELECT status, body, fingerprint FROM webhook_idempotency_keys "
                f"WHERE key_id = %s AND idempotency_key = %s AND created_at > {NOW} - %s",
                (idempotency.key_id, idempotency.key, IDEMPOTENCY_TTL_S),
            ).fetchone()
        return None if row is None else StoredAnswer(row[0], bytes(row[1]), row[2], replayed=True)

    def publish_once(
        self, events: Sequence[Event], first_delay: float, idempotency: IdempotencyKey, answer: AnswerOf
    ) -> StoredAnswer:
        """:meth:`publish`, and the answer made of it (a 200) stored with the ``Idempotency-Key``, in one
        transaction; unless the key already holds an answer (stored by another request, on any replica), which is
        then answered and nothing is published. Requests with the same key at the same time take the key's advisory
        lock for their transaction: the second waits for the first to commit, then finds its answer. Answers older
        than :data:`IDEMPOTENCY_TTL_S` are purged on the way."""
        with self._transaction() as db:
            db.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))",
                (idempotency.key, idempotency.key_id),
            )
            db.execute(f"DELETE FROM webhook_idempotency_keys WHERE created_at <= {NOW} - %s", (IDEMPOTENCY_TTL_S,))
            row = db.execute(
                "SELECT status, body, fingerprint FROM webhook_idempotency_keys "
                "WHERE key_id = %s AND idempotency_key = %s",
                (idempotency.key_id, idempotency.key),
            ).fetchone()
            if row is not None:
                return StoredAnswer(row[0], bytes(row[1]), row[2], replayed=True)
            body = answer(self._publish(db, events, first_delay))
            db.execute(
                "INSERT INTO webhook_idempotency_keys(key_id, idempotency_key, fingerprint, status, body, created_at) "
                f"VALUES (%s, %s, %s, 200, %s, {NOW})",
                (idempotency.key_id, idempotency.key, idempotency.fingerprint, body),
            )
        return StoredAnswer(200, body, idempotency.fingerprint, replayed=False)

    def claim_due(self, limit: int, lease_s: float = CLAIM_LEASE_S) -> list[Due]:
        """Takes up to ``limit`` due deliveries for a lease: they are due again if not finished by then. Deliveries
        that another sender is claiming at the same moment are skipped (``SKIP LOCKED``): none is taken twice."""
        with self.pool.connection() as db:
            rows = db.execute(
                "WITH due AS (SELECT id, next_attempt_at FROM webhook_deliveries "
                f"WHERE status = 'pending' AND next_attempt_at <= {NOW} "
                "ORDER BY next_attempt_at LIMIT %s FOR UPDATE SKIP LOCKED) "
                f"UPDATE webhook_deliveries d SET next_attempt_at = {NOW} + %s, claimed_by = %s "
                "FROM due, webhook_events e WHERE d.id = due.id AND e.id = d.event_id "
                "RETURNING due.next_attempt_at, d.id, d.event_id, d.target_url, d.secret, d.attempts, e.body",
                (limit, lease_s, CLAIMANT),
            ).fetchall()
        return [Due(*row[1:6], bytes(row[6])) for row in sorted(rows, key=lambda row: (row[0], row[1]))]

    def release_abandoned_claims(self) -> int:
        """Deliveries claimed by a process of this host that no longer runs are due at once, not after the lease.
        (A claim of another machine's process runs out with its lease.)"""
        host = CLAIMANT.rsplit(":", 1)[0]
        with self.pool.connection() as db:
            claims = db.execute(
                "SELECT id, claimed_by FROM webhook_deliveries WHERE status = 'pending' AND claimed_by LIKE %s",
                (host.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + ":%",),
            ).fetchall()
            abandoned = []
            for delivery_id, claimant in claims:
                pid = int(claimant.rsplit(":", 1)[1])
                if pid != os.getpid() and not _process_alive(pid):
                    abandoned.append((delivery_id, claimant))
            with db.transaction(), db.cursor() as cursor:
                cursor.executemany(
                    f"UPDATE webhook_deliveries SET next_attempt_at = {NOW}, claimed_by = NULL "
                    "WHERE id = %s AND claimed_by = %s AND status = 'pending'",
                    abandoned,
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
                "INSERT INTO webhook_attempts(delivery_id, attempted_at, status_code, latency_ms, error, "
                "response_excerpt) VALUES (%s, %s, %s, %s, %s, %s)",
                (delivery.id, stamp, status_code, round(latency_ms, 1), error, excerpt),
            )
            db.execute(
                f"UPDATE webhook_deliveries SET attempts = %s, status = %s, next_attempt_at = {NOW} + %s::float8, "
                "claimed_by = NULL, updated_at = %s WHERE id = %s",
                (attempts, status, wait, stamp, delivery.id),
            )
        return status

    def send_now(self, key_id: int, delivery_id: str) -> str | None:
        """A pending delivery is attempted at once instead of at its next scheduled retry; if that attempt fails,
        the retries carry on from where the schedule was. Answers what came of it: ``due`` (it is due now),
        ``sending`` (a sender is posting it already: nothing to do), the status of a delivery that is not
        pending (``delivered``, ``failed``, ``cancelled``: nothing is sent), or None for no such delivery of the key.
        """
        with self._transaction() as db:
            row = db.execute(
                f"SELECT status, claimed_by IS NOT NULL AND next_attempt_at > {NOW} FROM webhook_deliveries "
                "WHERE id = %s AND key_id = %s FOR UPDATE",
                (delivery_id, key_id),
            ).fetchone()
            if row is None:
                return None
            status: str = row[0]
            if status != "pending":
                return status
            if row[1]:
                return "sending"
            db.execute(
                f"UPDATE webhook_deliveries SET next_attempt_at = {NOW}, updated_at = %s WHERE id = %s",
                (now_iso(), delivery_id),
            )
            return "due"

    def replay(self, key_id: int, delivery_id: str) -> bool:
        """Sends any delivery again, at once: a delivered or failed one is pending again, a pending one is attempted
        now rather than at its next retry (as :meth:`send_now`; one a sender is posting already is left to it).
        Its earlier attempts stay in the log. A delivery of a deleted subscription is not sent again (the
        subscription is locked: a delete at the same time comes before or after, and cancels it then).
        """
        with self._transaction() as db:
            row = db.execute(
                f"SELECT d.status = 'pending' AND d.claimed_by IS NOT NULL AND d.next_attempt_at > {NOW} "
                "FROM webhook_deliveries d JOIN webhook_subscriptions s ON s.id = d.subscription_id "
                "WHERE d.id = %s AND d.key_id = %s FOR UPDATE OF d FOR SHARE OF s",
                (delivery_id, key_id),
            ).fetchone()
            if row is None:
                return False
            if row[0]:
                return True
            db.execute(
                f"UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = {NOW}, claimed_by = NULL, "
                "updated_at = %s WHERE id = %s",
                (now_iso(), delivery_id),
            )
            return True

    def deliveries(
        self, key_id: int, subscription_id: str | None, offset: int, limit: int, delivery_id: str | None = None
    ) -> tuple[int, list[dict[str, Any]]]:
        """The key's deliveries, newest first, each with its event and every attempt."""
        where, params = "d.key_id = %s", [key_id]
        for column, value in (("d.subscription_id", subscription_id), ("d.id", delivery_id)):
            if value:
                where += f" AND {column} = %s"
                params.append(value)
        with self.pool.connection() as db:  # one statement, one snapshot: the rows, their attempts, the total
            rows = db.execute(
                f"SELECT {DELIVERY_COLUMNS}, ({_ATTEMPTS}), count(*) OVER () FROM {_DELIVERIES} WHERE {where} "
                "ORDER BY d.created_at DESC, d.id DESC LIMIT %s OFFSET %s",
                [*params, limit, offset],
            ).fetchall()
            if rows or not offset:
                total = int(rows[0][-1]) if rows else 0
            else:  # a page past the end: only the total
                count = db.execute(f"SELECT count(*) FROM webhook_deliveries d WHERE {where}", params).fetchone()
                total = int(count[0]) if count else 0
        return total, [delivery_view(row, [_attempt(*a) for a in row[-2]]) for row in rows]

    def close(self) -> None:
        self.pool.close()
