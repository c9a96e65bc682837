"""The journal of catalogue changes in PostgreSQL: a write's webhook events are not lost when the process that
made it dies after its commit, and each is published once, whichever process publishes it.

A catalogue write records its changes in the catalogue's ``catalogue_changes`` table (migration ``0005``) in its
own transaction, claimed by the writing process for a lease (:data:`JOURNAL_LEASE_S`). After the commit, that
process turns them into events and publishes them; the transaction that stores the events in the outbox also
deletes the changes' rows, and stores only the events of the rows it deleted. So an event is stored once: if two
processes publish the same change, the second finds its row gone (a delete waits for the other's to commit, then
skips the row it removed).

A process killed between the commit and the publishing leaves its rows. Any replica's delivery worker sweeps the
journals (every :data:`~precon.service.webhooks.delivery.JOURNAL_SWEEP_S`, :meth:`ChangeJournal.sweep`): it claims
the rows
whose lease ran out (``FOR UPDATE SKIP LOCKED``: two sweepers take different rows), or whose claimant was a process
of this host that no longer runs (at once), and publishes them as the writer would have. The subscribers are those
of the moment they are published, the records as they are then (a deleted record's event carries only its id and
path, as always).

Only for an outbox in the catalogue's own database (:func:`same_database`): the rows and the events are then in
one transaction. Otherwise the store's listeners hear of the changes after the commit, as before. Which it is
:func:`journal_changes` decides, when a notifier attaches to a store: the catalogue itself knows nothing of webhooks,
only of a journal it records into and publishes from (:class:`~precon.service.stores.postgres.catalogue_base.Journal`).
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import psycopg
from psycopg_pool import ConnectionPool

from precon.service.sql_stores import Connection
from precon.service.stores.postgres.catalogue_base import Entry, PostgresCatalogueBase
from precon.service.stores.replica import ReplicaCatalogue
from precon.service.stores.types import CatalogueChange, before_wanted
from precon.service.webhooks.model import CLAIM_LEASE_S, Event, claims_of_host, process_alive
from precon.service.webhooks.postgres import NOW, PostgresWebhookStore

log = logging.getLogger("precon.store.postgres")

JOURNAL_LEASE_S = CLAIM_LEASE_S
"""How long a change's row is its claimant's to publish: after that, any replica's sweep may take it."""
SWEEP_BATCH = 500
"""The most changes a sweep claims, and publishes, at a time."""
SWEEP_ROUNDS = 100
"""The most batches one sweep publishes (the next sweep carries on)."""


class ChangeReader(Protocol):
    """What turns changes into events (a :class:`~precon.service.webhooks.notify.CatalogueNotifier`)."""

    first_delay: float

    def events_of(self, changes: Sequence[CatalogueChange]) -> list[list[Event]]:
        """Each change's events, in the order of the changes."""
        ...


def claimant() -> str:
    """``host:pid`` of this process (computed each time: a forked worker is not its parent)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def database_identity(pool: ConnectionPool[Any]) -> tuple[Any, ...]:
    """What tells one database from another: its name and oid, and its server's start time."""
    with pool.connection() as db:
        row = db.execute(
            "SELECT current_database(), (SELECT oid FROM pg_database WHERE datname = current_database()), "
            "pg_postmaster_start_time(), inet_server_addr(), inet_server_port()"
        ).fetchone()
    assert row is not None
    return tuple(row)


def same_database(one: ConnectionPool[Any], other: ConnectionPool[Any]) -> bool:
    """Whether both pools connect to the same database (of the same server)."""
    return database_identity(one) == database_identity(other)


@dataclass
class ChangeJournal:
    """The journal of the catalogue in ``schema``, whose events ``reader`` makes and ``outbox`` (in the same
    database) stores."""

    schema: str
    reader: ChangeReader
    outbox: PostgresWebhookStore

    @property
    def table(self) -> str:
        """The journal's table, qualified: the outbox's connections have no catalogue's schema on their path."""
        return f'"{self.schema}".catalogue_changes'  # a schema name checked by schema_options

    def wants_before(self) -> bool:
        """Whether the events' reader judges a listing on what it was before a write (a filtered subscription)."""
        return before_wanted([self.reader])

    def record(self, db: psycopg.Connection[Any], changes: Sequence[CatalogueChange]) -> list[Entry]:
        """Records ``changes`` in the write transaction of ``db``, claimed by this process: their entries."""
        if not changes:
            return []
        ids = [
            int(row[0])
            for row in db.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)",
                (self.table, len(changes)),
            )
        ]
        row = db.execute(f"SELECT {NOW}").fetchone()
        assert row is not None
        now, who = float(row[0]), claimant()
        with db.cursor() as cursor:
            copy_rows = f"COPY {self.table}(id, kind, action, key, created_at, claimed_until, claimed_by) FROM STDIN"
            with cursor.copy(copy_rows) as copy:
                for entry_id, change in zip(ids, changes, strict=True):
                    copy.write_row((entry_id, change.kind, change.action, change.key, now, now + JOURNAL_LEASE_S, who))
        return list(zip(ids, changes, strict=True))

    def publish(self, entries: Sequence[Entry]) -> int:
        """Publishes the entries' events and removes their rows, in one transaction of the outbox; an entry whose
        row another process removed (and published) first is not published again. Answers how many were."""
        if not entries:
            return 0
        groups = self.reader.events_of([change for _, change in entries])
        by_id = {entry_id: events for (entry_id, _), events in zip(entries, groups, strict=True)}
        taken: set[int] = set()

        def take(db: Connection) -> list[Event]:
            rows = db.execute(  # locked in id order: two takers of the same rows wait, not deadlock
                f"DELETE FROM {self.table} WHERE id IN (SELECT id FROM {self.table} WHERE id = ANY(%s) ORDER BY id "
                "FOR UPDATE) RETURNING id",
                (list(by_id),),
            )
            taken.update(int(row[0]) for row in rows)
            return [event for entry_id, events in by_id.items() if entry_id in taken for event in events]

        if any(groups):
            self.outbox.publish([event for events in groups for event in events], self.reader.first_delay, take)
        else:  # nothing to publish: the rows only go
            with self.outbox.pool.connection() as db, db.transaction():
                take(db)
        return len(taken)

    def sweep(self) -> int:
        """Publishes the changes no living process is publishing (their claimant died, or its lease ran out),
        :data:`SWEEP_BATCH` at a time, the oldest first: how many were published."""
        self.release_abandoned()
        published = 0
        for _ in range(SWEEP_ROUNDS):
            entries = self.claim(SWEEP_BATCH)
            if not entries:
                break
            published += self.publish(entries)
            if len(entries) < SWEEP_BATCH:
                break
        if published:
            log.warning("%d catalogue changes of %s left by a process that died were published", published, self.schema)
        return published

    def claim(self, limit: int) -> list[Entry]:
        """Takes up to ``limit`` rows whose claim ran out for a new lease, the oldest first (rows another sweeper is
        claiming at the same moment are skipped: none is taken twice)."""
        with self.outbox.pool.connection() as db:
            rows = db.execute(
                f"WITH due AS (SELECT id FROM {self.table} WHERE claimed_until <= {NOW} "
                "ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) "
                f"UPDATE {self.table} c SET claimed_until = {NOW} + %s, claimed_by = %s FROM due WHERE c.id = due.id "
                "RETURNING c.id, c.kind, c.action, c.key",
                (limit, JOURNAL_LEASE_S, claimant()),
            ).fetchall()
        return [(int(row[0]), CatalogueChange(row[1], row[2], row[3])) for row in sorted(rows)]

    def release_abandoned(self) -> int:
        """Rows claimed by a process of this host that no longer runs may be taken at once, not after the lease.
        (A claim of another machine's process runs out with its lease.)"""
        with self.outbox.pool.connection() as db:
            claims = db.execute(
                f"SELECT DISTINCT claimed_by FROM {self.table} WHERE claimed_until > {NOW} AND claimed_by LIKE %s",
                (claims_of_host(claimant()),),
            ).fetchall()
            dead = [
                who
                for (who,) in claims
                if (pid := int(who.rsplit(":", 1)[1])) != os.getpid() and not process_alive(pid)
            ]
            if not dead:
                return 0
            released = db.execute(
                f"UPDATE {self.table} SET claimed_until = {NOW}, claimed_by = NULL "
                f"WHERE claimed_by = ANY(%s) AND claimed_until > {NOW}",
                (dead,),
            ).rowcount
        return released


def journal_changes(store: object, reader: ChangeReader, outbox: object) -> bool:
    """Records every write's changes of ``store`` in its catalogue's journal, for ``reader`` to turn into events that
    ``outbox`` publishes, if ``store`` is a PostgreSQL catalogue (a replica's, whose writes are its primary's) and
    ``outbox`` the PostgreSQL one in the same database (which then sweeps the journal); answers whether it is so.
    One reader per catalogue: False for another."""
    catalogue = store.primary if isinstance(store, ReplicaCatalogue) else store
    if not isinstance(catalogue, PostgresCatalogueBase) or not isinstance(outbox, PostgresWebhookStore):
        return False
    if catalogue.journal is not None or not same_database(catalogue.pool, outbox.pool):
        return False
    journal = ChangeJournal(catalogue.schema, reader, outbox)
    catalogue.journal = journal
    outbox.journals.append(journal)
    return True
