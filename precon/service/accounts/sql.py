"""The keys' and products' SQL, written once for SQLite and PostgreSQL (the same tables in both: the SQLite file
``accounts.sqlite3`` and PostgreSQL's migration ``0002``).

:class:`SqlAccounts` answers every call of :class:`~precon.service.accounts.model.Accounts` with the statements of
:class:`AccountStatements`, rendered for its adapter's dialect when the adapter's class is made: a key is
authenticated on every request, in one statement. The adapters (:mod:`.sqlite`, :mod:`.postgres`) give it
connections and transactions, and PostgreSQL's a memory of the keys it found.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from typing import ClassVar

from precon.service.accounts.model import ApiKey, allows_any, digest, grant_of, key_hint, new_key, normalised_grant
from precon.service.sql_stores import Dialect, SqlStore


class AccountStatements:
    """The statements of the keys and products in one dialect. Creating a key is a transaction of upserts, so that
    replicas that start together and each register the development key end with one key holding one grant."""

    def __init__(self, dialect: Dialect) -> None:
        sql = dialect.sql
        self.add_product = sql("INSERT INTO products VALUES (?, ?) ON CONFLICT (id) DO NOTHING")
        self.key_id = sql("SELECT id FROM api_keys WHERE digest = ?")
        self.add_key = sql(
            "INSERT INTO api_keys(digest, hint, label, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (digest) DO NOTHING RETURNING id"
        )
        self.grant = sql(
            "INSERT INTO grants VALUES (?, ?, ?, ?) ON CONFLICT (key_id, product_id) "
            "DO UPDATE SET versions = excluded.versions, provinces = excluded.provinces"
        )
        # A grant whose product is missing is no grant: its row answers no product (p.id is NULL) and is skipped.
        self.key = sql(
            "SELECT k.id, k.hint, p.id, g.versions, g.provinces FROM api_keys k "
            "LEFT JOIN grants g ON g.key_id = k.id LEFT JOIN products p ON p.id = g.product_id "
            "WHERE k.digest = ? ORDER BY p.created_at, g.product_id"
        )
        self.grants = sql("SELECT key_id, versions, provinces FROM grants")
        self.key_to_revoke = sql("SELECT id FROM api_keys WHERE digest = ?" + dialect.locking(" FOR UPDATE"))
        self.revoke_grants = sql("DELETE FROM grants WHERE key_id = ?")
        self.revoke_key = sql("DELETE FROM api_keys WHERE id = ?")
        self.products = sql("SELECT id FROM products ORDER BY id")


class SqlAccounts(SqlStore):
    """Keys, products and grants in the tables of :attr:`statements`."""

    statements: ClassVar[AccountStatements]

    @abstractmethod
    def _forget(self, hashed: str) -> None:
        """The key of this digest is granted anew or revoked: whatever this process remembers of it must go."""

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
        self._forget(hashed)  # granted anew: this process reads the grants again at once
        now = time.time()
        with self._transaction() as db:
            db.execute(self.statements.add_product, (product_id, now))
            # Looked up before inserting, so that registering a known key again uses no identity value.
            row = db.execute(self.statements.key_id, (hashed,)).fetchone()
            if row is None:
                added = db.execute(self.statements.add_key, (hashed, key_hint(raw), label, now)).fetchall()
                row = added[0] if added else None
            if row is None:  # another replica registered it meanwhile (committed: read committed sees it)
                row = db.execute(self.statements.key_id, (hashed,)).fetchone()
            assert row is not None
            db.execute(self.statements.grant, (row[0], product_id, granted_versions, granted_provinces))
        return raw

    def authenticate(self, key: str | None) -> ApiKey | None:
        """The key and its grants, the oldest product first; None for no key or an unknown one."""
        return self._find(digest(key)) if key else None

    def _find(self, hashed: str) -> ApiKey | None:
        """The key of this digest and its grants: one statement."""
        rows = self._rows(self.statements.key, (hashed,))
        if not rows:
            return None
        grants = tuple(grant_of(product, v, p) for _, _, product, v, p in rows if product is not None)
        return ApiKey(int(rows[0][0]), str(rows[0][1]), grants)

    def key_ids_allowing(self, versions: set[str], province: str | None) -> set[int]:
        """The keys granted any of ``versions`` in ``province`` (any province when None)."""
        rows = self._rows(self.statements.grants, ())
        return {int(key_id) for key_id, v, p in rows if allows_any(versions, province, v, p)}

    def revoke_key(self, key: str) -> bool:
        """Removes the key and its grants (it is refused from then on); answers whether there was one."""
        hashed = digest(key)
        self._forget(hashed)
        with self._transaction() as db:
            row = db.execute(self.statements.key_to_revoke, (hashed,)).fetchone()
            if row is None:
                return False
            db.execute(self.statements.revoke_grants, (row[0],))
            db.execute(self.statements.revoke_key, (row[0],))
        return True

    def products(self) -> list[str]:
        return [str(row[0]) for row in self._rows(self.statements.products, ())]
