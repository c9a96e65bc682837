"""The PostgreSQL catalogue's connections, write transactions and generation.

:class:`PostgresCatalogueBase` is what both halves of :class:`~precon.service.postgres.store.PostgresCatalogueStore`
stand on: its :class:`psycopg_pool.ConnectionPool`, the read transaction (repeatable read: a count and its page
see one catalogue), the write transaction (an advisory lock: one writer at a time across replicas), the
:meth:`~PostgresCatalogueBase.atomic` block, and the generation every write raises and announces
(``NOTIFY`` on :data:`CHANNEL`). The write path is :mod:`.writes`, the read path :mod:`.reads`.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import psycopg

from precon.service.catalogue_records import PerGeneration
from precon.service.catalogue_types import CatalogueChange, notify_listeners
from precon.service.postgres.migrations import schema_options, upgrade
from precon.service.postgres.pools import open_pool
from precon.service.search import TypoIndex

log = logging.getLogger("precon.store.postgres")

CHANNEL = "precon_catalogue"
"""Every committed write notifies it, with the catalogue's schema and new generation as the payload."""
WRITE_LOCK = 0x70726563
"""The advisory lock that serialises catalogue writes ('prec')."""


def _document(text: str) -> dict[str, Any]:
    result: dict[str, Any] = orjson.loads(text)
    return result


def _json(record: dict[str, Any]) -> str:
    return orjson.dumps(record).decode()


class PostgresCatalogueBase:
    """A catalogue in a PostgreSQL 15 database (made or upgraded by the migrations when ``migrate``): the pool."""

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
        """Called with the changes of every write, after it is committed (webhook events hang here)."""
        self._cache_lock = threading.Lock()
        self._typo_cache: PerGeneration[tuple[TypoIndex, TypoIndex]] = PerGeneration()
        self._label_cache: PerGeneration[dict[tuple[str, str], str]] = PerGeneration()
        self._attribute_cache: PerGeneration[frozenset[str]] = PerGeneration()
        self._fallbacks: OrderedDict[tuple[str, int, str], list[int]] = OrderedDict()
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

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """The writes made inside (by this thread) are one transaction: all of them are committed or none is, and
        the listeners hear of them once, after the commit (an import, a mirror page). Nested: part of the outer."""
        if getattr(self._local, "connection", None) is not None:
            yield
            return
        pending: list[CatalogueChange] = []
        with self.pool.connection() as connection:
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                self._local.connection, self._local.pending = connection, pending
                try:
                    yield
                finally:
                    self._local.connection = self._local.pending = None
        if pending:
            self._notify(pending)

    def _bump_generation(self, connection: psycopg.Connection[Any]) -> None:
        """Raises the generation; at commit, the other replicas hear ``<schema> <generation>`` on :data:`CHANNEL`."""
        row = connection.execute(
            "UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation' RETURNING value"
        ).fetchone()
        assert row is not None
        connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{self.schema} {row[0]}"))

    def generation(self) -> int:
        """The catalogue's generation, raised by every write (of any replica)."""
        with self.pool.connection() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _notify(self, changes: list[CatalogueChange]) -> list[CatalogueChange]:
        pending: list[CatalogueChange] | None = getattr(self._local, "pending", None)
        if pending is not None:  # inside atomic(): heard after its commit
            pending.extend(changes)
            return changes
        return notify_listeners(self.listeners, changes, log)

    @staticmethod
    def _generation_in(db: psycopg.Connection[Any]) -> int:
        row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0
