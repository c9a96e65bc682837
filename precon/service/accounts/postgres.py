"""API keys, products and grants in PostgreSQL: :class:`PostgresAccountStore`, answering as
:class:`precon.service.accounts.sqlite.AccountStore` does (the tables of the migration ``0002``, the SQL of
:mod:`precon.service.accounts.sql`), and keeping for half a second what it found of each key.
"""

from __future__ import annotations

import time
from typing import Any

from psycopg_pool import ConnectionPool

from precon.service.accounts.model import ApiKey, digest
from precon.service.accounts.sql import AccountStatements, SqlAccounts
from precon.service.sql_stores import POSTGRES, PostgresPoolStore
from precon.service.stores.postgres.migrations import upgrade
from precon.service.stores.postgres.pools import open_pool

KEY_CACHE_S = 0.5
"""How long a replica takes a known key's grants as read: a revoked key is refused everywhere within this."""
KEY_CACHE_ENTRIES = 10_000
"""The most keys a replica keeps answers for."""


class PostgresAccountStore(PostgresPoolStore, SqlAccounts):
    """Keys and products in a PostgreSQL database (migrated first when ``migrate``)."""

    statements = AccountStatements(POSTGRES)

    def __init__(self, conninfo: str, *, min_size: int = 1, max_size: int = 4, migrate: bool = True) -> None:
        if migrate:
            upgrade(conninfo)
        self.conninfo = conninfo
        self.pool: ConnectionPool[Any] = open_pool(conninfo, "precon-accounts", min_size, max_size)
        self._known: dict[str, tuple[float, ApiKey]] = {}
        """Keys recently found, by digest: (until when the answer holds, monotonic; the answer)."""

    def _forget(self, hashed: str) -> None:
        """This process answers the key from the database again at once; other replicas within
        :data:`KEY_CACHE_S`."""
        self._known.pop(hashed, None)

    def authenticate(self, key: str | None) -> ApiKey | None:
        """The key and its grants, the oldest product first. A known key's answer is kept for
        :data:`KEY_CACHE_S` (a request costs the database nothing then): a key revoked, or a grant changed, is
        refused everywhere within that time. An unknown key is asked every time (a new key works at once)."""
        if not key:
            return None
        hashed = digest(key)
        now = time.monotonic()
        cached = self._known.get(hashed)
        if cached is not None and cached[0] > now:
            return cached[1]
        found = self._find(hashed)
        if found is not None:
            if len(self._known) >= KEY_CACHE_ENTRIES:
                self._known = {h: entry for h, entry in self._known.items() if entry[0] > now}
                if len(self._known) >= KEY_CACHE_ENTRIES:
                    self._known.clear()
            self._known[hashed] = (now + KEY_CACHE_S, found)
        else:
            self._known.pop(hashed, None)
        return found

    def remembers(self, key: str | None) -> bool:
        """Whether :meth:`authenticate` answers this key from memory now (a valid key looked up in the last
        :data:`KEY_CACHE_S`): no round trip to PostgreSQL."""
        cached = self._known.get(digest(key)) if key else None
        return cached is not None and cached[0] > time.monotonic()
