"""The webhook outbox in one SQLite file of the data directory (``webhooks.sqlite3``): :class:`WebhookStore`.

Only the processes of this machine use the file, and one of them sends (see
:attr:`~precon.service.webhooks.delivery.DeliveryWorker.exclusive`). Every write transaction holds the file
(``BEGIN IMMEDIATE``), so the limits and the ``Idempotency-Key`` answers need no lock of their own. What is said is
:mod:`precon.service.webhooks.sql`'s; this module holds the file, its tables and the claim of due deliveries.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from precon.service.sql_stores import SQLITE, Connection, SQLiteFileStore, add_clock
from precon.service.sqlite_files import Connections
from precon.service.webhooks.model import CLAIM_LEASE_S, CLAIMANT, Due, IdempotencyKey
from precon.service.webhooks.sql import OutboxStatements, SqlOutbox

SELECTION_COLUMNS = ("filter_query", "unit_filter", "fields")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS subscriptions(
  id TEXT PRIMARY KEY,
  key_id INTEGER NOT NULL,
  env TEXT NOT NULL,
  event TEXT NOT NULL,
  target_url TEXT NOT NULL,
  secret TEXT NOT NULL,
  created_at TEXT NOT NULL,
  filter_query TEXT,
  unit_filter TEXT,
  fields TEXT);
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
    add_clock(db)


class WebhookStore(SQLiteFileStore, SqlOutbox):
    """Subscriptions, events, the delivery outbox and the attempt log, in one SQLite file."""

    shared = False
    """Only the processes of this machine use the file (one of them sends: see :attr:`DeliveryWorker.exclusive`)."""
    statements = OutboxStatements(SQLITE, prefix="")

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._connections = Connections(self.path, _prepare_connection)
        db = self._db()
        db.executescript(_SCHEMA)
        columns = {row[1] for row in db.execute("PRAGMA table_info(deliveries)")}
        if "claimed_by" not in columns:  # an outbox written before claims were recorded
            db.execute("ALTER TABLE deliveries ADD COLUMN claimed_by TEXT")
        columns = {row[1] for row in db.execute("PRAGMA table_info(subscriptions)")}
        for column in SELECTION_COLUMNS:  # an outbox written before subscriptions were filtered
            if column not in columns:
                db.execute(f"ALTER TABLE subscriptions ADD COLUMN {column} TEXT")

    def _lock_subscriptions(self, db: Connection, key_id: int) -> None:
        """Nothing to take: the write transaction holds the whole file from its start (``BEGIN IMMEDIATE``)."""

    def _lock_idempotency_key(self, db: Connection, idempotency: IdempotencyKey) -> None:
        """Nothing to take, as for :meth:`_lock_subscriptions`."""

    def claim_due(self, limit: int, lease_s: float = CLAIM_LEASE_S) -> list[Due]:
        """Takes up to ``limit`` due deliveries for a lease: they are due again if not finished by then. The write
        transaction holds the file from its start, so no other claim reads the same deliveries as due."""
        now = time.time()
        with self._transaction() as db:
            rows = db.execute(
                "SELECT d.id, d.event_id, d.target_url, d.secret, d.attempts, e.body, d.subscription_id, e.type "
                "FROM deliveries d "
                "JOIN events e ON e.id = d.event_id WHERE d.status = 'pending' AND d.next_attempt_at <= ? "
                "ORDER BY d.next_attempt_at LIMIT ?",
                (now, limit),
            ).fetchall()
            db.executemany(
                "UPDATE deliveries SET next_attempt_at = ?, claimed_by = ? WHERE id = ?",
                [(now + lease_s, CLAIMANT, row[0]) for row in rows],
            )
        return [Due(*row) for row in rows]
