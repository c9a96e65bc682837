"""Webhook subscriptions, events, the delivery outbox and the attempt log in PostgreSQL:
:class:`PostgresWebhookStore`, answering as :class:`precon.service.webhooks.sqlite.WebhookStore` does (the tables of
the migrations ``0002`` and ``0003``, the SQL of :mod:`precon.service.webhooks.sql`).

Several replicas, each running a :class:`~precon.service.webhooks.delivery.DeliveryWorker`, share the outbox. A claim
is one statement: the due deliveries are taken ``FOR UPDATE SKIP LOCKED`` (a delivery another sender is claiming is
skipped, not waited for, nor taken twice) and leased: their ``next_attempt_at`` moves to the lease's end and
``claimed_by`` names the claimant. A sender that dies mid-send (its replica killed) leaves its deliveries leased:
when the lease runs out (:data:`~precon.service.webhooks.model.CLAIM_LEASE_S`) they are due again and the next poll of
any worker takes them (at least once; receivers deduplicate on ``webhook-id``). Times are the database's clock,
so replicas whose clocks differ agree on what is due. Workers poll every
:data:`~precon.service.webhooks.model.POLL_S`: a delivery stored by another replica is sent within that of being due.
"""

from __future__ import annotations

from typing import Any, Protocol

from psycopg_pool import ConnectionPool

from precon.service.sql_stores import POSTGRES, Connection, PostgresPoolStore
from precon.service.stores.postgres.migrations import upgrade
from precon.service.stores.postgres.pools import open_pool
from precon.service.webhooks.model import CLAIM_LEASE_S, CLAIMANT, Due, IdempotencyKey
from precon.service.webhooks.sql import OutboxStatements, SqlOutbox

NOW = POSTGRES.clock
"""The database's clock, in epoch seconds (what ``next_attempt_at`` holds)."""
SUBSCRIBE_LOCK = 0x70726568
"""With a key's id, the advisory lock its subscription creates hold: the count and the insert see one another."""


class Journal(Protocol):
    """A journal of catalogue changes whose events this outbox publishes (see
    :class:`~precon.service.webhooks.journal.ChangeJournal`)."""

    def sweep(self) -> int: ...


class PostgresWebhookStore(PostgresPoolStore, SqlOutbox):
    """The webhook outbox in a PostgreSQL database (migrated first when ``migrate``), shared by replicas."""

    shared = True
    """Replicas on other machines use it too: every process's worker sends, claims keeping each delivery to one."""
    statements = OutboxStatements(POSTGRES, prefix="webhook_")

    def __init__(self, conninfo: str, *, min_size: int = 2, max_size: int = 8, migrate: bool = True) -> None:
        if migrate:
            upgrade(conninfo)
        self.conninfo = conninfo
        self.pool: ConnectionPool[Any] = open_pool(conninfo, "precon-webhooks", min_size, max_size)
        self.journals: list[Journal] = []
        """The journals of the catalogues in this database whose changes become events here: the delivery worker
        sweeps them (:meth:`sweep_journals`)."""

    def _lock_subscriptions(self, db: Connection, key_id: int) -> None:
        db.execute("SELECT pg_advisory_xact_lock(%s, %s)", (SUBSCRIBE_LOCK & 0x7FFFFFFF, key_id & 0x7FFFFFFF))

    def _lock_idempotency_key(self, db: Connection, idempotency: IdempotencyKey) -> None:
        db.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, %s))", (idempotency.key, idempotency.key_id))

    def sweep_journals(self) -> int:
        """Publishes what the journals of catalogue changes hold that no living process is publishing (left by one
        that died between a write's commit and the publishing of its events): the number of changes published."""
        return sum(journal.sweep() for journal in list(self.journals))

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
                "RETURNING due.next_attempt_at, d.id, d.event_id, d.target_url, d.secret, d.attempts, e.body, "
                "d.subscription_id, e.type",
                (limit, lease_s, CLAIMANT),
            ).fetchall()
        return [Due(*row[1:6], bytes(row[6]), *row[7:9]) for row in sorted(rows, key=lambda row: (row[0], row[1]))]
