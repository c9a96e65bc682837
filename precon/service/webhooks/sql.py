"""The webhook outbox's SQL, written once for SQLite and PostgreSQL.

:class:`SqlOutbox` answers every call of :class:`~precon.service.webhooks.model.Outbox` but one with the statements
of :class:`OutboxStatements`, rendered for its adapter's dialect when the adapter's class is made. The adapters
(:mod:`.sqlite`, :mod:`.postgres`) give it connections and transactions, the locks a PostgreSQL transaction takes
where SQLite's already holds the file, and the claim of due deliveries, which each database does its own way.
"""

from __future__ import annotations

import itertools
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import orjson

from precon.service.sql_stores import Connection, Dialect, SqlStore, execute_many
from precon.service.webhooks.model import (
    CLAIM_LEASE_S,
    CLAIMANT,
    IDEMPOTENCY_TTL_S,
    MAX_SUBSCRIPTIONS_PER_KEY,
    AnswerOf,
    Due,
    Event,
    IdempotencyKey,
    RetrySchedule,
    Selection,
    StoredAnswer,
    Subscription,
    SubscriptionLimitReached,
    abandoned,
    attempt_outcome,
    claims_of_host,
    delivery_view,
    new_delivery_id,
    new_event_id,
    now_iso,
)

TABLES = ("subscriptions", "events", "deliveries", "attempts", "idempotency_keys")
SUBSCRIPTION_FILTERS = ("key_id", "event", "env")
SUBSCRIPTION_COLUMNS = "id, key_id, env, event, target_url, secret, created_at, filter_query, unit_filter, fields"
"""A subscription's row: :class:`~precon.service.webhooks.model.Subscription`'s fields, its selection in three."""
DELIVERY_FILTERS = ("d.subscription_id", "d.id")
DELIVERY_COLUMNS = (
    "d.id, d.event_id, e.type, e.env, d.subscription_id, d.target_url, d.status, d.attempts, "
    "d.next_attempt_at, d.created_at, d.updated_at"
)
"""What :func:`~precon.service.webhooks.model.delivery_view` is made of, from ``deliveries d JOIN events e``."""
ATTEMPT_ITEMS = "a.attempted_at, a.status_code, a.latency_ms, a.error, a.response_excerpt"

Claim = Callable[[Connection], Sequence[Event]]
"""Called in the transaction that stores events, before they are stored: the events to store (of those given)."""


def _subsets(names: Sequence[str]) -> list[tuple[str, ...]]:
    return [chosen for size in range(len(names) + 1) for chosen in itertools.combinations(names, size)]


def _where(columns: Sequence[str]) -> str:
    return " AND ".join(f"{column} = ?" for column in columns)


class OutboxStatements:
    """The outbox's statements in one dialect, its tables named with ``prefix``; those that filter on what a call
    gives, once for every choice of filters."""

    def __init__(self, dialect: Dialect, prefix: str) -> None:
        names = {table: prefix + table for table in TABLES}

        def sql(template: str) -> str:
            return dialect.sql(template, **names)

        self.subscribe = sql(
            f"INSERT INTO {{subscriptions}}({SUBSCRIPTION_COLUMNS}) SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ? "
            "WHERE (SELECT count(*) FROM {subscriptions} WHERE key_id = ?) < ?"
        )
        self.filtering = sql(
            "SELECT 1 FROM {subscriptions} WHERE env = ? AND (filter_query IS NOT NULL OR unit_filter IS NOT NULL) "
            "LIMIT 1"
        )
        self.subscriptions = {
            chosen: sql(
                f"SELECT {SUBSCRIPTION_COLUMNS} FROM {{subscriptions}}"
                + (" WHERE " + _where(chosen) if chosen else "")
                + " ORDER BY created_at, id"
            )
            for chosen in _subsets(SUBSCRIPTION_FILTERS)
        }
        self.unsubscribe = sql("DELETE FROM {subscriptions} WHERE id = ? AND key_id = ?")
        self.cancel = sql(
            "UPDATE {deliveries} SET status = 'cancelled', next_attempt_at = NULL, updated_at = ? "
            "WHERE subscription_id = ? AND status = 'pending'"
        )
        self.add_event = sql("INSERT INTO {events} VALUES (?, ?, ?, ?, ?)")
        self.add_deliveries = sql(
            "INSERT INTO {deliveries}(id, event_id, subscription_id, key_id, target_url, secret, status, "
            "next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', {now} + ?, ?, ?)"
        )
        self._answers(sql)
        self._attempts(dialect, sql)
        self._log(dialect, sql)

    def _answers(self, sql: Callable[[str], str]) -> None:
        answer = "SELECT status, body, fingerprint FROM {idempotency_keys} WHERE key_id = ? AND idempotency_key = ?"
        self.stored_answer = sql(answer + " AND created_at > {now} - ?")
        self.answer = sql(answer)
        self.purge_answers = sql("DELETE FROM {idempotency_keys} WHERE created_at <= {now} - ?")
        self.store_answer = sql(
            "INSERT INTO {idempotency_keys}(key_id, idempotency_key, fingerprint, status, body, created_at) "
            "VALUES (?, ?, ?, 200, ?, {now})"
        )

    def _attempts(self, dialect: Dialect, sql: Callable[[str], str]) -> None:
        self.host_claims = sql(
            "SELECT id, claimed_by FROM {deliveries} WHERE status = 'pending' AND claimed_by LIKE ? ESCAPE '\\'"
        )
        self.release = sql(
            "UPDATE {deliveries} SET next_attempt_at = {now}, claimed_by = NULL "
            "WHERE id = ? AND claimed_by = ? AND status = 'pending'"
        )
        self.pending = sql(
            "SELECT count(*), min(created_at), min(next_attempt_at) FROM {deliveries} WHERE status = 'pending'"
        )
        self.add_attempt = sql(
            "INSERT INTO {attempts}(delivery_id, attempted_at, status_code, latency_ms, error, response_excerpt) "
            "VALUES (?, ?, ?, ?, ?, ?)"
        )
        self.attempted = sql(
            "UPDATE {deliveries} SET attempts = ?, status = ?, next_attempt_at = {now} + CAST(? AS DOUBLE PRECISION), "
            "claimed_by = NULL, updated_at = ? WHERE id = ?"
        )
        self.state = sql(  # a delivery being sent: claimed, its lease not yet run out
            "SELECT status, claimed_by IS NOT NULL AND next_attempt_at > {now} FROM {deliveries} "
            "WHERE id = ? AND key_id = ?" + dialect.locking(" FOR UPDATE")
        )
        self.due_now = sql("UPDATE {deliveries} SET next_attempt_at = {now}, updated_at = ? WHERE id = ?")
        self.being_sent = sql(  # only of a subscription that still exists, which is locked: a delete waits
            "SELECT d.status = 'pending' AND d.claimed_by IS NOT NULL AND d.next_attempt_at > {now} "
            "FROM {deliveries} d JOIN {subscriptions} s ON s.id = d.subscription_id "
            "WHERE d.id = ? AND d.key_id = ?" + dialect.locking(" FOR UPDATE OF d FOR SHARE OF s")
        )
        self.replay = sql(
            "UPDATE {deliveries} SET status = 'pending', next_attempt_at = {now}, claimed_by = NULL, updated_at = ? "
            "WHERE id = ?"
        )

    def _log(self, dialect: Dialect, sql: Callable[[str], str]) -> None:
        """A page of the log is one statement, one snapshot: its rows, their attempts and the total (counted once,
        on the key's index, and the attempts read for the page's rows only)."""
        attempts = dialect.json_rows(ATTEMPT_ITEMS, "{attempts} a WHERE a.delivery_id = d.id", "a.id")
        self.delivery_pages: dict[tuple[str, ...], str] = {}
        self.delivery_counts: dict[tuple[str, ...], str] = {}
        for chosen in _subsets(DELIVERY_FILTERS):
            where = _where(("d.key_id", *chosen))
            count = f"SELECT count(*) FROM {{deliveries}} d WHERE {where}"
            self.delivery_counts[chosen] = sql(count)
            self.delivery_pages[chosen] = sql(
                f"SELECT {DELIVERY_COLUMNS}, {attempts}, ({count}) "
                f"FROM {{deliveries}} d JOIN {{events}} e ON e.id = d.event_id WHERE {where} "
                "ORDER BY d.created_at DESC, d.id DESC LIMIT ? OFFSET ?"
            )


class SqlOutbox(SqlStore):
    """Subscriptions, events, the delivery outbox and the attempt log, in the tables of :attr:`statements`."""

    shared: ClassVar[bool]
    statements: ClassVar[OutboxStatements]

    # -- what the adapter gives, besides its connections (:class:`~precon.service.sql_stores.SqlStore`) -----------

    @abstractmethod
    def _lock_subscriptions(self, db: Connection, key_id: int) -> None:
        """Makes the key's subscription creates of every process wait for one another in ``db``'s transaction."""

    @abstractmethod
    def _lock_idempotency_key(self, db: Connection, idempotency: IdempotencyKey) -> None:
        """The same, for the requests carrying one ``Idempotency-Key``."""

    @abstractmethod
    def claim_due(self, limit: int, lease_s: float = CLAIM_LEASE_S) -> list[Due]:
        """Takes up to ``limit`` due deliveries for a lease: they are due again if not finished by then."""

    # -- subscriptions ---------------------------------------------------------------------------------------

    def subscribe(
        self,
        key_id: int,
        env: str,
        event: str,
        target_url: str,
        limit: int = MAX_SUBSCRIPTIONS_PER_KEY,
        selection: Selection | None = None,
    ) -> Subscription:
        """A new subscription of the key; :class:`SubscriptionLimitReached` if it already holds ``limit``.

        The count and the insert are one statement, in a transaction that creates of the same key on any thread,
        process or replica wait for: they count one another and cannot take a key past the limit.
        """
        s = Subscription.new(key_id, env, event, target_url, selection)
        with self._transaction() as db:
            self._lock_subscriptions(db, key_id)
            row = (s.id, key_id, env, event, target_url, s.secret, s.created_at, *s.selection.stored(), key_id, limit)
            inserted = db.execute(self.statements.subscribe, row).rowcount
        if inserted != 1:
            raise SubscriptionLimitReached(limit)
        return s

    def subscriptions(
        self, key_id: int | None = None, event: str | None = None, env: str | None = None
    ) -> list[Subscription]:
        given = {"key_id": key_id, "event": event, "env": env}
        chosen = tuple(column for column, value in given.items() if value is not None)
        rows = self._rows(self.statements.subscriptions[chosen], [given[column] for column in chosen])
        return [Subscription(*row[:7], Selection.of_columns(*row[7:])) for row in rows]

    def filtering(self, env: str) -> bool:
        return bool(self._rows(self.statements.filtering, (env,)))

    def unsubscribe(self, key_id: int, subscription_id: str) -> bool:
        """Removes a subscription; its deliveries still waiting are cancelled (the log keeps them)."""
        with self._transaction() as db:
            removed = db.execute(self.statements.unsubscribe, (subscription_id, key_id)).rowcount > 0
            if removed:
                db.execute(self.statements.cancel, (now_iso(), subscription_id))
            return removed

    # -- events and the outbox -------------------------------------------------------------------------------

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

    def _publish(self, db: Connection, events: Sequence[Event], first_delay: float) -> list[tuple[str, int]]:
        published = []
        for event in events:
            event_id = new_event_id()
            published.append((event_id, len(event.subscribers)))
            if not event.subscribers:
                continue
            created = now_iso()
            body = event.body(event_id, created)
            db.execute(self.statements.add_event, (event_id, event.type, event.env, created, body))
            execute_many(
                db,
                self.statements.add_deliveries,
                [
                    (new_delivery_id(), event_id, s.id, s.key_id, s.target_url, s.secret, first_delay, created, created)
                    for s in event.subscribers
                ],
            )
        return published

    # -- Idempotency-Key -------------------------------------------------------------------------------------

    def stored_answer(self, idempotency: IdempotencyKey) -> StoredAnswer | None:
        """The answer stored with this key by the caller within :data:`IDEMPOTENCY_TTL_S`, if any."""
        rows = self._rows(self.statements.stored_answer, (idempotency.key_id, idempotency.key, IDEMPOTENCY_TTL_S))
        return StoredAnswer(rows[0][0], bytes(rows[0][1]), rows[0][2], replayed=True) if rows else None

    def publish_once(
        self, events: Sequence[Event], first_delay: float, idempotency: IdempotencyKey, answer: AnswerOf
    ) -> StoredAnswer:
        """:meth:`publish`, and the answer made of it (a 200) stored with the ``Idempotency-Key``, in one
        transaction; unless the key already holds an answer (stored by another request, on any process or replica,
        even one that ran at the same time: requests with the same key wait for one another's transaction), which
        is then answered and nothing is published. Answers older than :data:`IDEMPOTENCY_TTL_S` are purged on the
        way."""
        with self._transaction() as db:
            self._lock_idempotency_key(db, idempotency)
            db.execute(self.statements.purge_answers, (IDEMPOTENCY_TTL_S,))
            row = db.execute(self.statements.answer, (idempotency.key_id, idempotency.key)).fetchone()
            if row is not None:
                return StoredAnswer(row[0], bytes(row[1]), row[2], replayed=True)
            body = answer(self._publish(db, events, first_delay))
            stored = (idempotency.key_id, idempotency.key, idempotency.fingerprint, body)
            db.execute(self.statements.store_answer, stored)
        return StoredAnswer(200, body, idempotency.fingerprint, replayed=False)

    # -- attempts --------------------------------------------------------------------------------------------

    def release_abandoned_claims(self) -> int:
        """Deliveries claimed by a process of this host that no longer runs are due at once, not after the lease.
        (A claim of another machine's process runs out with its lease.)"""
        claims = self._rows(self.statements.host_claims, (claims_of_host(CLAIMANT),))
        dead = abandoned(claims)
        if dead:
            with self._transaction() as db:
                execute_many(db, self.statements.release, dead)
        return len(dead)

    def pending_summary(self) -> tuple[int, Any, float | None]:
        """How many deliveries wait to be sent, when the oldest of them was stored, and the earliest time one of them
        is due (Unix seconds; None when none waits)."""
        count, oldest, due = self._rows(self.statements.pending, ())[0]
        return int(count), oldest, None if due is None else float(due)

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
            attempt = (delivery.id, stamp, status_code, round(latency_ms, 1), error, excerpt)
            db.execute(self.statements.add_attempt, attempt)
            db.execute(self.statements.attempted, (attempts, status, wait, stamp, delivery.id))
        return status

    def send_now(self, key_id: int, delivery_id: str) -> str | None:
        """A pending delivery is attempted at once instead of at its next scheduled retry; if that attempt fails,
        the retries carry on from where the schedule was. Answers what came of it: ``due`` (it is due now),
        ``sending`` (a sender is posting it already: nothing to do), the status of a delivery that is not
        pending (``delivered``, ``failed``, ``cancelled``: nothing is sent), or None for no such delivery of the key.
        """
        with self._transaction() as db:
            row = db.execute(self.statements.state, (delivery_id, key_id)).fetchone()
            if row is None:
                return None
            status: str = row[0]
            if status != "pending":
                return status
            if row[1]:
                return "sending"
            db.execute(self.statements.due_now, (now_iso(), delivery_id))
            return "due"

    def replay(self, key_id: int, delivery_id: str) -> bool:
        """Sends any delivery again, at once: a delivered or failed one is pending again, a pending one is attempted
        now rather than at its next retry (as :meth:`send_now`; one a sender is posting already is left to it).
        Its earlier attempts stay in the log. A delivery of a deleted subscription is not sent again (a delete at
        the same time comes before or after, and cancels it then).
        """
        with self._transaction() as db:
            row = db.execute(self.statements.being_sent, (delivery_id, key_id)).fetchone()
            if row is None:
                return False
            if not row[0]:
                db.execute(self.statements.replay, (now_iso(), delivery_id))
            return True

    def deliveries(
        self, key_id: int, subscription_id: str | None, offset: int, limit: int, delivery_id: str | None = None
    ) -> tuple[int, list[dict[str, Any]]]:
        """The key's deliveries, newest first, each with its event and every attempt."""
        given = {"d.subscription_id": subscription_id, "d.id": delivery_id}
        chosen = tuple(column for column, value in given.items() if value)
        params = [key_id, *(given[column] for column in chosen)]
        rows = self._rows(self.statements.delivery_pages[chosen], [*params, *params, limit, offset])
        if rows or not offset:
            total = int(rows[0][-1]) if rows else 0
        else:  # a page past the end: only the total
            total = int(self._rows(self.statements.delivery_counts[chosen], params)[0][0])
        return total, [delivery_view(row, orjson.loads(row[-2])) for row in rows]
