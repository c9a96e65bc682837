"""Compare lists kept by the dashboard: each owner's listing ids (a signed-in person, or a browser), in the dashboard's
own SQLite file beside its saved searches, so that a list outlives a reload and a listing opened by its address.

A table of its own (``compare_lists``), made on first write; the saved searches' layout is not touched.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import closing
from pathlib import Path

from precon.dashboard.saved_searches import BUSY_TIMEOUT_S, Unavailable, iso, now
from precon.sqlite_wal import use_wal

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS compare_lists (owner TEXT PRIMARY KEY, ids TEXT NOT NULL, updated_at TEXT NOT NULL)"
)
SEPARATOR = ","


class CompareLists:
    def __init__(self, path: Path) -> None:
        self.path = path

    def get(self, owner: str) -> list[str]:
        """The owner's list, oldest first; empty when there is none (or no file yet).

        Raises :class:`~precon.dashboard.saved_searches.Unavailable` when the file cannot be read."""
        if not self.path.exists():
            return []
        try:
            with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)) as db:
                row = db.execute("SELECT ids FROM compare_lists WHERE owner = ?", (owner,)).fetchone()
        except sqlite3.OperationalError as error:
            if "no such table" in str(error):
                return []
            raise Unavailable(f"The compare list could not be read from {self.path}: {error}") from error
        except sqlite3.Error as error:
            raise Unavailable(f"The compare list could not be read from {self.path}: {error}") from error
        return [i for i in (row[0] if row else "").split(SEPARATOR) if i]

    def put(self, owner: str, ids: Sequence[str]) -> None:
        """Keeps ``ids`` as the owner's list (none: forgets it).

        Raises :class:`~precon.dashboard.saved_searches.Unavailable` when the file cannot be written."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)) as db:
                use_wal(db, BUSY_TIMEOUT_S)
                db.execute(SCHEMA)
                if ids:
                    db.execute(
                        "INSERT INTO compare_lists (owner, ids, updated_at) VALUES (?, ?, ?) ON CONFLICT (owner) "
                        "DO UPDATE SET ids = excluded.ids, updated_at = excluded.updated_at",
                        (owner, SEPARATOR.join(ids), iso(now())),
                    )
                else:
                    db.execute("DELETE FROM compare_lists WHERE owner = ?", (owner,))
        except (sqlite3.Error, OSError) as error:
            raise Unavailable(f"The compare list could not be kept in {self.path}: {error}") from error
