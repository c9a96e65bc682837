"""One SQLite file shared by threads: a connection per thread, writes one at a time, WAL so reads never wait."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

BUSY_TIMEOUT_S = 30


class Connections:
    """Per-thread connections to ``path``; ``prepare`` runs on each new one (pragmas, functions)."""

    def __init__(self, path: Path, prepare: Callable[[sqlite3.Connection], None] | None = None) -> None:
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._prepare = prepare
        self._local = threading.local()
        self._opened: list[sqlite3.Connection] = []
        self._opened_lock = threading.Lock()
        self.write_lock = threading.Lock()
        """Held for every write transaction, so this process's writers queue instead of meeting SQLITE_BUSY."""

    def get(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
            db.execute("PRAGMA journal_mode=WAL")
            if self._prepare is not None:
                self._prepare(db)
            self._local.db = db
            with self._opened_lock:
                self._opened.append(db)
        return db

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        db = self.get()
        with self.write_lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def close(self) -> None:
        with self._opened_lock:
            for db in self._opened:
                db.close()
            self._opened.clear()
        self._local = threading.local()
