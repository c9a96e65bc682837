"""What the accounts' and the webhooks' stores stand on, so that each of their statements is written once
(:mod:`precon.service.accounts.sql`, :mod:`precon.service.webhooks.sql`) and each adapter holds only its
connections and what its database does its own way.

A statement is written in the spelling both databases share, with ``?`` placeholders, ``{now}`` for the current
time in epoch seconds and ``{name}`` for a table whose name depends on the store; :meth:`Dialect.sql` renders it
for one database. Stores render their statements once, when their class is made: a key is authenticated on every
request, and rendering there would cost every request something. :class:`SqlStore` is what the written-once code
asks of an adapter; :class:`SQLiteFileStore` and :class:`PostgresPoolStore` answer it for a SQLite file and for a
PostgreSQL pool.

Imports nothing of the service's layers (only :mod:`precon.service.sqlite_files`, and psycopg for types): the
stores of every layer may use it, and a service on SQLite files loads nothing of PostgreSQL's.
"""

from __future__ import annotations

import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, closing, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from precon.service.sqlite_files import Connections

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

SQLITE_CLOCK = "precon_clock"
"""The SQL function that tells a SQLite connection the time (see :func:`add_clock`)."""


class Cursor(Protocol):
    """What the stores use of a cursor: :mod:`sqlite3`'s and psycopg's answer alike."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Any: ...

    def close(self) -> None: ...


class Connection(Protocol):
    """What the stores use of a connection, :mod:`sqlite3`'s or psycopg's."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...

    def cursor(self) -> Cursor: ...


@dataclass(frozen=True)
class Dialect:
    """How one database spells what the two spell differently."""

    name: str
    placeholder: str
    """How the driver marks a parameter: ``?`` (sqlite3) or ``%s`` (psycopg)."""
    clock: str
    """The current time in epoch seconds. PostgreSQL's is the database's clock, so that replicas whose clocks differ
    agree on what is due; SQLite's is this process's (the file is on this machine)."""
    locks_rows: bool
    """Whether a transaction must lock the rows it reads before writing from what it read: PostgreSQL's must
    (``FOR UPDATE``); SQLite's write transaction holds the whole file from its start (``BEGIN IMMEDIATE``)."""
    ordered_json: str
    """A scalar subquery: the JSON text of an array holding ``json_array({items})`` of each row ``FROM {source}``,
    ``ORDER BY {order}``. SQLite's aggregates take no ``ORDER BY`` (before 3.44): it orders a subquery instead."""

    def sql(self, template: str, **names: str) -> str:
        """``template`` in this dialect: ``{now}`` its clock, ``{name}`` as ``names`` say, ``?`` its placeholder
        (no statement holds a ``?`` or a ``%`` of its own: values are parameters)."""
        text = template.format(now=self.clock, **names)
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def locking(self, clause: str) -> str:
        """``clause`` (a ``FOR UPDATE`` or ``FOR SHARE``) where rows are locked; nothing in SQLite."""
        return clause if self.locks_rows else ""

    def json_rows(self, items: str, source: str, order: str) -> str:
        """See :attr:`ordered_json`."""
        return self.ordered_json.format(items=items, source=source, order=order)


SQLITE = Dialect(
    name="sqlite",
    placeholder="?",
    clock=f"{SQLITE_CLOCK}()",
    locks_rows=False,
    ordered_json=(
        "(SELECT json_group_array(json(item)) FROM (SELECT json_array({items}) AS item FROM {source} ORDER BY {order}))"
    ),
)
POSTGRES = Dialect(
    name="postgresql",
    placeholder="%s",
    clock="extract(epoch FROM clock_timestamp())::float8",
    locks_rows=True,
    ordered_json="(SELECT coalesce(json_agg(json_build_array({items}) ORDER BY {order}), '[]')::text FROM {source})",
)


def _now() -> float:
    return time.time()


def add_clock(db: sqlite3.Connection) -> None:
    """Gives a SQLite connection :data:`SQLITE_CLOCK` (SQLite's own clock has whole seconds only, before 3.42)."""
    db.create_function(SQLITE_CLOCK, 0, _now)


def execute_many(db: Connection, sql: str, rows: Iterable[Sequence[Any]]) -> None:
    """``sql`` once per row, in the transaction of ``db`` (psycopg's connections run many only from a cursor)."""
    with closing(db.cursor()) as cursor:
        cursor.executemany(sql, rows)


class SqlStore(ABC):
    """What the statements written once need of a store: reads, write transactions, and an end."""

    @abstractmethod
    def _rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        """The rows of one statement that writes nothing."""

    @abstractmethod
    def _transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction, committed at the end of the block (rolled back if it raises)."""

    @abstractmethod
    def close(self) -> None: ...


class SQLiteFileStore(SqlStore):
    """A store in a SQLite file: each thread reads on its own connection, writes one at a time (see
    :class:`~precon.service.sqlite_files.Connections`)."""

    _connections: Connections

    def _db(self) -> sqlite3.Connection:
        """This thread's connection."""
        return self._connections.get()

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        return self._connections.get().execute(sql, params).fetchall()

    def _transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        return self._connections.transaction()

    def close(self) -> None:
        self._connections.close()


class PostgresPoolStore(SqlStore):
    """A store in PostgreSQL: each read and each transaction on a connection of the pool (autocommit between)."""

    pool: ConnectionPool[Any]

    def _rows(self, sql: str, params: Sequence[Any]) -> list[Any]:
        with self.pool.connection() as db:
            return db.execute(sql, params).fetchall()

    @contextmanager
    def _transaction(self) -> Iterator[psycopg.Connection[Any]]:
        with self.pool.connection() as db, db.transaction():
            yield db

    def close(self) -> None:
        self.pool.close()
