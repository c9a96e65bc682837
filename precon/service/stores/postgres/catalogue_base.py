"""The PostgreSQL catalogue's connections, write transactions and generation.

:class:`PostgresCatalogueBase` is what both halves of
:class:`~precon.service.stores.postgres.store.PostgresCatalogueStore`
stand on: its :class:`psycopg_pool.ConnectionPool`, the read transaction (repeatable read: a count and its page
see one catalogue), the write transaction (an advisory lock: one writer at a time across replicas), the
:meth:`~PostgresCatalogueBase.atomic` block, and the generation every write raises and announces
(``NOTIFY`` on :data:`CHANNEL`). The write path is :mod:`.writes`, the read path :mod:`.reads`.

Each write (:data:`JOURNALED_WRITES`) runs in an :meth:`~PostgresCatalogueBase.atomic` block, its own or its
caller's: with a :attr:`~PostgresCatalogueBase.journal` (a :class:`Journal`, set by the webhooks when a notifier's
outbox is in this database: :mod:`precon.service.webhooks.journal`), the block's changes are recorded in the journal
in its transaction and published from there after the commit, so that a process dying in between loses none.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

import orjson
import psycopg

from precon.service.stores.postgres.migrations import schema_options, upgrade
from precon.service.stores.postgres.pools import open_pool
from precon.service.stores.types import CatalogueChange, notify_listeners

log = logging.getLogger("precon.store.postgres")

CHANNEL = "precon_catalogue"
"""Every committed write notifies it, with the catalogue's schema and new generation as the payload."""
WRITE_LOCK = 0x70726563
"""The advisory lock that serialises catalogue writes ('prec')."""
JOURNALED_WRITES = ("upsert_listings", "upsert_profiles", "delete_listing", "delete_profile")
"""The writes that each run in an :meth:`~PostgresCatalogueBase.atomic` block of their own when not in one: their
changes are then recorded in the journal in their transaction."""

Entry = tuple[int, CatalogueChange]
"""A change recorded in a journal, and its row's id there."""


class Journal(Protocol):
    """Where the changes of every write are recorded, in the write's transaction, and published from after its
    commit (by this process, or by whoever sweeps the journal if this one dies first)."""

    def record(self, db: psycopg.Connection[Any], changes: Sequence[CatalogueChange]) -> list[Entry]:
        """Records ``changes`` in the write transaction of ``db``: their entries, to publish after the commit."""
        ...

    def publish(self, entries: Sequence[Entry]) -> int:
        """Publishes what the entries recorded (those nobody published first): how many were."""
        ...


def _document(text: str) -> dict[str, Any]:
    result: dict[str, Any] = orjson.loads(text)
    return result


def _json(record: dict[str, Any]) -> str:
    return orjson.dumps(record).decode()


def _in_atomic(write: Callable[..., list[CatalogueChange]]) -> Callable[..., list[CatalogueChange]]:
    @functools.wraps(write)
    def atomically(self: PostgresCatalogueBase, *args: Any, **kwargs: Any) -> list[CatalogueChange]:
        with self.atomic():
            return write(self, *args, **kwargs)

    return atomically


class PostgresCatalogueBase:
    """A catalogue in a PostgreSQL 15 database (made or upgraded by the migrations when ``migrate``): the pool."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """The :data:`JOURNALED_WRITES` a subclass defines each run in an :meth:`atomic` block (nested in the
        caller's, if any): a write's changes are recorded in its own transaction, and heard of after its commit."""
        super().__init_subclass__(**kwargs)
        for name in JOURNALED_WRITES:
            if name in cls.__dict__:
                setattr(cls, name, _in_atomic(cls.__dict__[name]))

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "public",
        min_size: int = 1,
        max_size: int = 8,
        migrate: bool = True,
    ) -> None:
        """``conninfo``: a libpq connection string or ``postgresql://`` URL; ``schema``: where the catalogue's tables
        are (one database holds the live catalogue in ``public`` and the sandbox in ``sandbox``, say)."""
        if migrate:
            upgrade(conninfo, schema=schema)
        self.conninfo = conninfo
        self.schema = schema
        self.pool = open_pool(conninfo, f"precon-{schema}", min_size, max_size, **schema_options(schema))
        self.listeners: list[Callable[[list[CatalogueChange]], None]] = []
        """Called with the changes of every write, after it is committed."""
        self.journal: Journal | None = None
        """Where each write's changes are recorded in its transaction (see
        :func:`precon.service.webhooks.journal.journal_changes`, which sets it)."""
        self._local = threading.local()
        """``connection`` and ``pending`` (changes) of this thread's :meth:`atomic` block, when in one."""

    def close(self) -> None:
        self.pool.close()

    # -- connections ---------------------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection in a read-only repeatable-read transaction: a count and its page see one catalogue."""
        with self.pool.connection() as connection:
            with connection.transaction():
                connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield connection

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[Any]]:
        """A write transaction, one at a time across every process on this database; inside :meth:`atomic`, that
        one's."""
        shared: psycopg.Connection[Any] | None = getattr(self._local, "connection", None)
        if shared is not None:
            yield shared
            return
        with self.pool.connection() as connection:
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield connection

    def _in_atomic(self) -> bool:
        """Whether this thread is inside an :meth:`atomic` block."""
        return getattr(self._local, "connection", None) is not None

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """The writes made inside (by this thread) are one transaction: all of them are committed or none is, and
        the listeners hear of them once, after the commit (an import, a mirror page). Nested: part of the outer.

        With a :attr:`journal`, the changes are recorded in it in that transaction, and published from it after
        the commit (by whoever sweeps the journal, if this process dies first)."""
        if getattr(self._local, "connection", None) is not None:
            yield
            return
        pending: list[CatalogueChange] = []
        entries: list[Entry] = []
        journal = self.journal
        with self.pool.connection() as connection:
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                self._local.connection, self._local.pending = connection, pending
                try:
                    yield
                finally:
                    self._local.connection = self._local.pending = None
                if journal is not None:
                    entries = journal.record(connection, pending)
        if pending:
            self._committed(pending, journal, entries)

    def _committed(self, changes: list[CatalogueChange], journal: Journal | None, entries: list[Entry]) -> None:
        """After a commit: the journal's entries published (a failure leaves them to a sweep), the listeners told."""
        if journal is not None:
            try:
                journal.publish(entries)
            except Exception:  # the rows stay in the journal: a sweep publishes them once the lease runs out
                log.exception("the events of %d catalogue changes are left to the journal's sweep", len(entries))
        notify_listeners(self.listeners, changes, log)

    def _bump_generation(self, connection: psycopg.Connection[Any], changes: list[CatalogueChange]) -> int:
        """Raises the generation and logs the keys ``changes`` wrote under it (``catalogue_log``, which the
        replicas' copies follow); at commit, every replica hears ``<schema> <generation>`` on :data:`CHANNEL`.
        Writes hold :data:`WRITE_LOCK` until they commit, so generations are committed in their order. Answers the
        generation, under which the write records its history."""
        row = connection.execute(
            "UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation' RETURNING value"
        ).fetchone()
        assert row is not None
        generation = int(row[0])
        with connection.cursor() as cursor:
            with cursor.copy("COPY catalogue_log(generation, kind, key) FROM STDIN") as copy:
                for change in changes:
                    copy.write_row((generation, change.kind, change.key))
        connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{self.schema} {generation}"))
        return generation

    def generation(self) -> int:
        """The catalogue's generation, raised by every write (of any replica)."""
        with self.pool.connection() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _notify(self, changes: list[CatalogueChange]) -> list[CatalogueChange]:
        pending: list[CatalogueChange] | None = getattr(self._local, "pending", None)
        if pending is not None:  # inside atomic() (every journaled write is): recorded, and heard after its commit
            pending.extend(changes)
            return changes
        return notify_listeners(self.listeners, changes, log)

    @staticmethod
    def _generation_in(db: psycopg.Connection[Any]) -> int:
        row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0
