"""One SQLite file shared by threads: a connection per thread, writes one at a time, WAL so reads never wait.

A thread's connection lives as long as the thread. Worker threads come and go (anyio's pool and uvicorn
retire a thread after about 10 s idle), so a connection is closed when its thread ends: it sits in the
thread's ``threading.local`` slot, whose finalizer closes it when the thread is gone, and before a new
connection is opened any registered one whose thread is no longer alive is closed too. Open connections
are therefore bounded by the threads alive that have used the file, however many have come and gone.
"""

from __future__ import annotations

import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path

from precon.sqlite_wal import use_wal

BUSY_TIMEOUT_S = 30

_Registry = dict[int, tuple[weakref.ref[threading.Thread], sqlite3.Connection]]


class _Slot:
    """What a thread keeps in its ``threading.local``: dropped, and so finalized, when the thread ends."""

    __slots__ = ("__weakref__", "db", "token")

    def __init__(self, db: sqlite3.Connection, token: int) -> None:
        self.db = db
        self.token = token


def _retire(registry: _Registry, lock: threading.RLock, token: int) -> None:
    """Closes the connection registered under ``token``, once, from whichever thread gets here first."""
    with lock:
        entry = registry.pop(token, None)
    if entry is not None:
        entry[1].close()


class Connections:
    """Per-thread connections to ``path``; ``prepare`` runs on each new one (pragmas, functions).

    A thread's connection is closed when the thread ends; ``close()`` closes every one still open, and
    ``open_count()`` says how many are open.
    """

    def __init__(self, path: Path, prepare: Callable[[sqlite3.Connection], None] | None = None) -> None:
        self.path = path
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._prepare = prepare
        self._local = threading.local()
        self._open: _Registry = {}
        """Every open connection, by token: the thread that opened it (weakly) and the connection."""
        self._open_lock = threading.RLock()
        """Re-entrant: dropping a ``threading.local`` runs slot finalizers in the thread that drops it."""
        self._tokens = count()
        self.write_lock = threading.Lock()
        """Held for every write transaction, so this process's writers queue instead of meeting SQLITE_BUSY."""

    def get(self) -> sqlite3.Connection:
        """This thread's connection, opened on first use."""
        slot: _Slot | None = getattr(self._local, "slot", None)
        if slot is not None:
            return slot.db
        self._close_dead()
        db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=BUSY_TIMEOUT_S)
        try:
            use_wal(db, BUSY_TIMEOUT_S)
            if self._prepare is not None:
                self._prepare(db)
        except BaseException:
            db.close()
            raise
        token = next(self._tokens)
        with self._open_lock:
            self._open[token] = (weakref.ref(threading.current_thread()), db)
        slot = _Slot(db, token)
        # The finalizer holds the registry and its lock, not ``self``: a live thread does not keep this alive.
        weakref.finalize(slot, _retire, self._open, self._open_lock, token).atexit = False
        self._local.slot = slot
        return db

    def _close_dead(self) -> None:
        """Closes the connections of threads that have ended (their slot's finalizer normally got there first)."""
        with self._open_lock:
            dead = [token for token, (thread, _) in self._open.items() if not _alive(thread())]
        for token in dead:
            _retire(self._open, self._open_lock, token)

    def open_count(self) -> int:
        """How many connections to the file are open, after closing those of threads that have ended."""
        self._close_dead()
        with self._open_lock:
            return len(self._open)

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction; inside one of this thread's, part of it (committed or rolled back with it)."""
        db = self.get()
        if db.in_transaction and getattr(self._local, "writing", False):
            yield db
            return
        with self.write_lock:
            db.execute("BEGIN IMMEDIATE")
            self._local.writing = True
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            finally:
                self._local.writing = False
            db.execute("COMMIT")

    def writing(self) -> bool:
        """Whether this thread is inside one of its write transactions."""
        return bool(getattr(self._local, "writing", False))

    def close(self) -> None:
        """Closes every connection; a thread that uses this again afterwards opens a new one."""
        with self._open_lock:
            entries = list(self._open.values())
            self._open.clear()
            self._local = threading.local()
        for _, db in entries:
            db.close()


def _alive(thread: threading.Thread | None) -> bool:
    return thread is not None and thread.is_alive()
