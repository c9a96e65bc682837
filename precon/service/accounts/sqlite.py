"""API keys, products and grants in one SQLite file of the data directory (``accounts.sqlite3``):
:class:`AccountStore`, the SQL of :mod:`precon.service.accounts.sql` over the file's connections.
"""

from __future__ import annotations

from pathlib import Path

from precon.service.accounts.sql import AccountStatements, SqlAccounts
from precon.service.sql_stores import SQLITE, SQLiteFileStore
from precon.service.sqlite_files import Connections

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


class AccountStore(SQLiteFileStore, SqlAccounts):
    """Keys and products in a SQLite file, read afresh on every request (a read costs no round trip)."""

    statements = AccountStatements(SQLITE)

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._connections = Connections(self.path)
        self._db().executescript(_SCHEMA)

    def _forget(self, hashed: str) -> None:
        """Nothing to forget: this store keeps nothing of a key between requests."""
