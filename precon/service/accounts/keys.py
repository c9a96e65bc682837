"""API keys and the data products they grant, stored hashed in their own SQLite file (or, with a database URL, in
PostgreSQL: :class:`precon.service.accounts.postgres.PostgresAccountStore`, which answers the same).

A key belongs to an account; the account holds one or more data products; a product grant names the versions
and provinces it opens. Only a SHA-256 digest of each key is stored: keys are 256-bit random tokens, so a fast
digest is as safe as a slow one and keeps every request's look-up cheap.
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from precon.models import PROVINCES, VERSIONS
from precon.service.sqlite_files import Connections

ALL_PROVINCES = frozenset([*PROVINCES, "all"])
KEY_PREFIX = "pk_"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS products(id TEXT PRIMARY KEY, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS api_keys(
  id INTEGER PRIMARY KEY,
  digest TEXT NOT NULL UNIQUE,
  hint TEXT NOT NULL,
  label TEXT NOT NULL DEFAULT '',
  created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS grants(
  key_id INTEGER NOT NULL REFERENCES api_keys(id),
  product_id TEXT NOT NULL REFERENCES products(id),
  versions TEXT NOT NULL,
  provinces TEXT NOT NULL,
  PRIMARY KEY(key_id, product_id));
"""


@dataclass(frozen=True)
class Grant:
    product_id: str
    versions: frozenset[str]
    provinces: frozenset[str]

    def allows(self, version: str, province: str) -> bool:
        return version in self.versions and province in self.provinces


@dataclass(frozen=True)
class ApiKey:
    key_id: int
    hint: str
    grants: tuple[Grant, ...]
    """The key's products, the oldest first."""

    def grant(self, product_id: str) -> Grant | None:
        return next((g for g in self.grants if g.product_id == product_id), None)

    def allows(self, version: str, province: str) -> bool:
        return any(g.allows(version, province) for g in self.grants)

    def granting(self, version: str, province: str) -> list[Grant]:
        """The key's products that grant ``version`` and ``province``, the oldest first."""
        return [g for g in self.grants if g.allows(version, province)]


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_hint(raw: str) -> str:
    """What is shown of a key: its first characters, or only an ellipsis for a key too short to show any."""
    return raw[:6] + "…" if len(raw) >= 24 else "…"


def new_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def grant_of(product_id: str, versions: str, provinces: str) -> Grant:
    """A grant as stored: its versions and provinces comma-separated."""
    return Grant(product_id, frozenset(versions.split(",")), frozenset(provinces.split(",")))


def allows_any(versions: set[str], province: str | None, granted_versions: str, granted_provinces: str) -> bool:
    """Whether a stored grant opens any of ``versions`` in ``province`` (any province when None)."""
    return bool(versions & set(granted_versions.split(","))) and (
        province is None or province in granted_provinces.split(",")
    )


def normalised_grant(
    product_id: str, versions: list[str] | tuple[str, ...] | None, provinces: list[str] | tuple[str, ...] | None
) -> tuple[str, str, str]:
    """The product id, versions and provinces of a new grant as stored (every one unless narrowed); ValueError
    for a missing product or an unknown version or province."""
    product_id = product_id.strip()
    if not product_id:
        raise ValueError("a product id is required")
    granted_versions = _normalise(versions, frozenset(VERSIONS), "versions")
    granted_provinces = _normalise(provinces, ALL_PROVINCES, "provinces")
    return product_id, ",".join(sorted(granted_versions)), ",".join(sorted(granted_provinces))


def _normalise(values: list[str] | tuple[str, ...] | None, allowed: frozenset[str], what: str) -> frozenset[str]:
    if not values:
        return allowed
    chosen = {v.strip() for value in values for v in value.split(",") if v.strip()}
    unknown = chosen - allowed
    if unknown:
        raise ValueError(f"unknown {what}: {', '.join(sorted(unknown))} (allowed: {', '.join(sorted(allowed))})")
    if what == "provinces" and "all" in chosen:
        return allowed
    return frozenset(chosen)


class Accounts(Protocol):
    """What the service asks of the keys and products: :class:`AccountStore` (SQLite) or
    :class:`precon.service.accounts.postgres.PostgresAccountStore`."""

    def create_key(
        self,
        product_id: str,
        versions: list[str] | tuple[str, ...] | None = None,
        provinces: list[str] | tuple[str, ...] | None = None,
        *,
        label: str = "",
        key: str | None = None,
    ) -> str: ...

    def authenticate(self, key: str | None) -> ApiKey | None: ...

    def key_ids_allowing(self, versions: set[str], province: str | None) -> set[int]: ...

    def revoke_key(self, key: str) -> bool:
        """Removes the key and its grants (it is refused from then on); answers whether there was one."""
        ...

    def products(self) -> list[str]: ...

    def close(self) -> None: ...


class AccountStore:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._connections = Connections(self.path)
        self._db().executescript(_SCHEMA)

    def _db(self) -> sqlite3.Connection:
        return self._connections.get()

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
        now = time.time()
        with self._connections.transaction() as db:
            db.execute("INSERT OR IGNORE INTO products VALUES (?, ?)", (product_id, now))
            row = db.execute("SELECT id FROM api_keys WHERE digest = ?", (digest(raw),)).fetchone()
            key_id = (
                row[0]
                if row
                else db.execute(
                    "INSERT INTO api_keys(digest, hint, label, created_at) VALUES (?, ?, ?, ?)",
                    (digest(raw), key_hint(raw), label, now),
                ).lastrowid
            )
            db.execute(
                "INSERT OR REPLACE INTO grants VALUES (?, ?, ?, ?)",
                (key_id, product_id, granted_versions, granted_provinces),
            )
        return raw

    def authenticate(self, key: str | None) -> ApiKey | None:
        if not key:
            return None
        db = self._db()
        row = db.execute("SELECT id, hint FROM api_keys WHERE digest = ?", (digest(key),)).fetchone()
        if row is None:
            return None
        grants = tuple(
            grant_of(product, versions, provinces)
            for product, versions, provinces in db.execute(
                "SELECT g.product_id, g.versions, g.provinces FROM grants g JOIN products p ON p.id = g.product_id "
                "WHERE g.key_id = ? ORDER BY p.created_at, g.product_id",
                (row[0],),
            )
        )
        return ApiKey(row[0], row[1], grants)

    def key_ids_allowing(self, versions: set[str], province: str | None) -> set[int]:
        """The keys granted any of ``versions`` in ``province`` (any province when None)."""
        rows = self._db().execute("SELECT key_id, versions, provinces FROM grants")
        return {key_id for key_id, v, p in rows if allows_any(versions, province, v, p)}

    def revoke_key(self, key: str) -> bool:
        with self._connections.transaction() as db:
            row = db.execute("SELECT id FROM api_keys WHERE digest = ?", (digest(key),)).fetchone()
            if row is None:
                return False
            db.execute("DELETE FROM grants WHERE key_id = ?", (row[0],))
            db.execute("DELETE FROM api_keys WHERE id = ?", (row[0],))
        return True

    def products(self) -> list[str]:
        return [r[0] for r in self._db().execute("SELECT id FROM products ORDER BY id")]

    def close(self) -> None:
        self._connections.close()
