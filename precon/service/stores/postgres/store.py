"""The catalogue in PostgreSQL: :class:`PostgresCatalogueStore`, where every write is made and logged.

Records are JSON documents (``json``: as written, key order kept), beside what writes need: a listing's province,
its floor plans' ids and the profiles it refers to (see the migrations ``0001`` and ``0006``). PostgreSQL answers
no search: each replica keeps a SQLite copy of the catalogue in its data directory, built from a
:meth:`~.documents.PostgresDocuments.snapshot` and kept current from ``catalogue_log``
(:mod:`precon.service.stores.replica`), and answers every question from it with the single node's code.

Connections come from a :class:`psycopg_pool.ConnectionPool`. Writes take a transaction-scoped advisory lock
(one writer at a time across replicas, as SQLite has one), raise the catalogue's generation, log the keys they
changed under it and ``NOTIFY`` :data:`CHANNEL` with it, so that every replica's copy follows.

The store is made of parts by what they do: :mod:`.catalogue_base` (the pool, transactions, generation, the
journal of webhook events), :mod:`.writes` (upserts, deletes, views) and :mod:`.documents` (records by key,
snapshots and log batches).
"""

from __future__ import annotations

from typing import Literal

from precon.service.stores.postgres.catalogue_base import CHANNEL, WRITE_LOCK, PostgresCatalogueBase
from precon.service.stores.postgres.documents import PostgresDocuments
from precon.service.stores.postgres.writes import PostgresWrites

__all__ = ["CHANNEL", "WRITE_LOCK", "PostgresCatalogueBase", "PostgresCatalogueStore"]


class PostgresCatalogueStore(PostgresWrites, PostgresDocuments):
    """A catalogue in a PostgreSQL 15 database (made or upgraded by the migrations when ``migrate``)."""

    engine: Literal["postgres"] = "postgres"
