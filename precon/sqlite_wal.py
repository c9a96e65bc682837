"""SQLite files in WAL mode, switched safely when several connections open a new file at once."""

from __future__ import annotations

import sqlite3
import time

RETRY_S = 0.02


def use_wal(db: sqlite3.Connection, timeout_s: float) -> None:
    """The file of ``db`` in WAL mode (a new one is switched by its first connection). Switching needs the file to
    itself, and SQLite answers "locked" at once, without the connection's busy timeout, while another connection
    holds it (two dashboards, or two threads, opening a new file at the same moment): the switch is tried again until
    ``timeout_s`` has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            if "locked" not in str(error) or time.monotonic() >= deadline:
                raise
            time.sleep(RETRY_S)
