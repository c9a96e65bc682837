"""SQLite files in WAL mode, switched safely when several connections open a new file at once.

At the top of precon, beside neither room, because both use it: the service's files
(:mod:`precon.service.sqlite_files`) and the dashboard's stores (:mod:`precon.dashboard.saved_searches`,
:mod:`precon.dashboard.compare_lists`).
"""

from __future__ import annotations

import sqlite3

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_fixed

RETRY_S = 0.02


def _locked(error: BaseException) -> bool:
    return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)


def use_wal(db: sqlite3.Connection, timeout_s: float) -> None:
    """The file of ``db`` in WAL mode (a new one is switched by its first connection). Switching needs the file to
    itself, and SQLite answers "locked" at once, without the connection's busy timeout, while another connection
    holds it (two dashboards, or two threads, opening a new file at the same moment): the switch is tried again until
    ``timeout_s`` has passed, then the last error is raised."""
    retrying = Retrying(
        retry=retry_if_exception(_locked), stop=stop_after_delay(timeout_s), wait=wait_fixed(RETRY_S), reraise=True
    )
    retrying(db.execute, "PRAGMA journal_mode=WAL")
