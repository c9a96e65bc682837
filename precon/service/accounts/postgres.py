"""API keys, products and grants in PostgreSQL: :class:`PostgresAccountStore`, answering as
:class:`precon.service.accounts.keys.AccountStore` does (the tables of the migration ``0002``).

Only a SHA-256 digest of each key is stored. Creating a key is one transaction of upserts, so replicas that start
together and each register the development key end with one key holding one grant of the product.
"""

from __future__ import annotations

import time
from typing import Any

from psycopg_pool import ConnectionPool

from precon.service.accounts.keys import ApiKey, allows_any, digest, grant_of, key_hint, new_key, normalised_grant
from precon.service.stores.postgres.migrations import upgrade
from precon.service.stores.postgres.pools import open_pool

KEY_CACHE_S = 0.5
"""How long a replica takes a known key's grants as read: a revoked key is refused everywhere within this."""
KEY_CACHE_ENTRIES = 10_000
"""The most keys a replica keeps answers for."""


class PostgresAccountStore:
    """Keys and products in a PostgreSQL database (migrated first when ``migrate``)."""

    def __init__(self, conninfo: str, *, min_size: int = 1, max_size: int = 4, migrate: bool = True) -> None:
        if migrate:
            upgrade(conninfo)
        self.conninfo = conninfo
        self.pool: ConnectionPool[Any] = open_pool(conninfo, "precon-accounts", min_size, max_size)
        self._known: dict[str, tuple[float, ApiKey]] = {}
        """Keys recently found, by digest: (until when the answer holds, monotonic; the answer)."""

    def close(self) -> None:
        self.pool.close()

    def create_key(
        self,
        product_id: str,
        versions: list[str] | tuple[str, ...] | None = None,
        provinces: list[str] | tuple[str, ...] | None = None,
        *,
        label: str = "",
        key: str | None = None,
    ) -> str:
        """Grants ``product_id`` (created if new) to a new key and returns the key, the only time it is seen.

        Every version and province is granted unless narrowed; a given ``key`` is registered as it is (the
        development key), and granted the product again if it already exists.
        """
        product_id, granted_versions, granted_provinces = normalised_grant(product_id, versions, provinces)
        raw = key or new_key()
        hashed = digest(raw)
        self._known.pop(hashed, None)  # granted anew: this process reads the grants again at once
        now = time.time()
        with self.pool.connection() as db, db.transaction():
            db.execute("INSERT INTO products VALUES (%s, %s) ON CONFLICT (id) DO NOTHING", (product_id, now))
            # Looked up before inserting, so that registering a known key again uses no identity value.
            row = db.execute("SELECT id FROM api_keys WHERE digest = %s", (hashed,)).fetchone()
            if row is None:
                row = db.execute(
                    "INSERT INTO api_keys(digest, hint, label, created_at) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT (digest) DO NOTHING RETURNING id",
                    (hashed, key_hint(raw), label, now),
                ).fetchone()
            if row is None:  # another replica registered it meanwhile (committed: read committed sees it)
                row = db.execute("SELECT id FROM api_keys WHERE digest = %s", (hashed,)).fetchone()
            assert row is not None
            db.execute(
                "INSERT INTO grants VALUES (%s, %s, %s, %s) ON CONFLICT (key_id, product_id) "
                "DO UPDATE SET versions = excluded.versions, provinces = excluded.provinces",
                (row[0], product_id, granted_versions, granted_provinces),
            )
        return raw

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
        found = self._authenticate(hashed)
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

    def _authenticate(self, hashed: str) -> ApiKey | None:
        """The key of this digest and its grants: one statement."""
        with self.pool.connection() as db:
            rows = db.execute(
                "SELECT k.id, k.hint, g.product_id, g.versions, g.provinces FROM api_keys k "
                "LEFT JOIN (grants g JOIN products p ON p.id = g.product_id) ON g.key_id = k.id "
                "WHERE k.digest = %s ORDER BY p.created_at, g.product_id",
                (hashed,),
            ).fetchall()
        if not rows:
            return None
        grants = tuple(grant_of(product, v, p) for _, _, product, v, p in rows if product is not None)
        return ApiKey(int(rows[0][0]), str(rows[0][1]), grants)

    def key_ids_allowing(self, versions: set[str], province: str | None) -> set[int]:
        """The keys granted any of ``versions`` in ``province`` (any province when None)."""
        with self.pool.connection() as db:
            rows = db.execute("SELECT key_id, versions, provinces FROM grants").fetchall()
        return {int(key_id) for key_id, v, p in rows if allows_any(versions, province, v, p)}

    def revoke_key(self, key: str) -> bool:
        """Removes the key and its grants: this process refuses it at once, every other replica within
        :data:`KEY_CACHE_S`."""
        hashed = digest(key)
        self._known.pop(hashed, None)
        with self.pool.connection() as db, db.transaction():
            row = db.execute("SELECT id FROM api_keys WHERE digest = %s FOR UPDATE", (hashed,)).fetchone()
            if row is None:
                return False
            db.execute("DELETE FROM grants WHERE key_id = %s", (row[0],))
            db.execute("DELETE FROM api_keys WHERE id = %s", (row[0],))
        return True

    def products(self) -> list[str]:
        with self.pool.connection() as db:
            return [str(r[0]) for r in db.execute("SELECT id FROM products ORDER BY id")]
