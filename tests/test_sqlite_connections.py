"""Per-thread SQLite connections are closed with their thread: short-lived threads leave nothing open behind them."""

from __future__ import annotations

import os
import sqlite3
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precon.service.sqlite_files import Connections
from precon.service.stores.sqlite.store import SQLiteStore

BOUND = 2
"""Open connections allowed once a wave's threads have ended: the main thread's, and one to spare."""

# SQLite's unix VFS does not close a closed connection's descriptor while another connection of the process holds
# a lock on the file (closing it would drop that lock; in WAL every open connection holds a shared one): it keeps
# it and hands it to the next connection opened on the file. So the descriptors on the file are bounded by the
# most connections open at once (a wave's threads), not by how many threads have come and gone.


def _fds_on(path: Path) -> int:
    """File descriptors of this process open on ``path`` itself (not its -wal or -shm)."""
    target = str(path.resolve())
    found = 0
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == target:
                found += 1
        except OSError:  # closed between the listing and the readlink
            continue
    return found


def _make(path: Path) -> Connections:
    connections = Connections(path)
    with connections.transaction() as db:
        db.execute("CREATE TABLE IF NOT EXISTS hits (thread TEXT, at REAL)")
    return connections


def _use(connections: Connections) -> None:
    """A worker's request: a write and a read on this thread's connection."""
    with connections.transaction() as db:
        db.execute("INSERT INTO hits VALUES (?, ?)", (threading.current_thread().name, time.time()))
    connections.get().execute("SELECT count(*) FROM hits").fetchone()


def _wave(count: int, target: Callable[[], None]) -> None:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as error:  # reported below, in the test's thread
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def _settle(connections: Connections) -> int:
    """``open_count()`` once the threads just joined are fully gone (their locals are dropped at the very end)."""
    deadline = time.monotonic() + 2
    while connections.open_count() > BOUND and time.monotonic() < deadline:
        time.sleep(0.01)
    return connections.open_count()


def test_short_lived_threads_leave_a_bounded_number_open(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.sqlite3"
    connections = _make(path)
    fds_before = _fds_on(path)
    for _ in range(10):  # 200 threads in waves of 20
        _wave(20, lambda: _use(connections))
        assert _settle(connections) <= BOUND
        assert _fds_on(path) <= fds_before + 20
    assert connections.get().execute("SELECT count(*) FROM hits").fetchone()[0] == 200
    connections.close()


def test_a_thread_keeps_one_connection_while_it_lives(tmp_path: Path) -> None:
    connections = _make(tmp_path / "catalogue.sqlite3")
    before = connections.open_count()
    used = threading.Event()
    release = threading.Event()
    seen: list[bool] = []

    def worker() -> None:
        seen.append(connections.get() is connections.get())
        _use(connections)
        used.set()
        release.wait(5)

    thread = threading.Thread(target=worker)
    thread.start()
    assert used.wait(5)
    assert connections.open_count() == before + 1
    release.set()
    thread.join()
    assert _settle(connections) == before
    assert seen == [True]
    connections.close()


def test_a_dead_threads_connection_is_closed_even_if_its_slot_outlives_it(tmp_path: Path) -> None:
    """The sweep by thread liveness, behind the finalizer: here the slot is kept alive on purpose."""
    connections = _make(tmp_path / "catalogue.sqlite3")
    kept: list[object] = []
    opened: list[sqlite3.Connection] = []

    def worker() -> None:
        opened.append(connections.get())
        kept.append(connections._local.slot)

    _wave(1, worker)
    assert connections.open_count() == 1  # the main thread's, from _make
    with pytest.raises(sqlite3.ProgrammingError):
        opened[0].execute("SELECT 1")
    connections.close()


def test_close_closes_every_connection(tmp_path: Path) -> None:
    path = tmp_path / "catalogue.sqlite3"
    connections = _make(path)
    opened: list[sqlite3.Connection] = []
    lock = threading.Lock()
    ready = threading.Barrier(9)
    release = threading.Event()

    def worker() -> None:
        db = connections.get()
        with lock:
            opened.append(db)
        ready.wait(5)
        release.wait(5)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    ready.wait(5)
    assert connections.open_count() == 9
    assert _fds_on(path) >= 9
    connections.close()
    assert connections.open_count() == 0
    assert _fds_on(path) == 0
    for db in opened:
        with pytest.raises(sqlite3.ProgrammingError):
            db.execute("SELECT 1")
    release.set()
    for thread in threads:
        thread.join()
    # Usable again afterwards: a new connection for whoever asks.
    assert connections.get().execute("SELECT count(*) FROM hits").fetchone()[0] == 0
    assert connections.open_count() == 1
    connections.close()
    assert _fds_on(path) == 0


def test_concurrent_reads_and_writes_still_work_in_wal(tmp_path: Path) -> None:
    connections = _make(tmp_path / "catalogue.sqlite3")
    assert connections.get().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    start = threading.Barrier(16)
    counts: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        start.wait(5)
        for _ in range(25):
            _use(connections)
            seen = connections.get().execute("SELECT count(*) FROM hits").fetchone()[0]
            with lock:
                counts.append(seen)

    _wave(16, worker)
    assert connections.get().execute("SELECT count(*) FROM hits").fetchone()[0] == 16 * 25
    assert all(1 <= seen <= 16 * 25 for seen in counts)
    assert _settle(connections) <= BOUND
    connections.close()


def test_a_store_used_by_passing_threads_keeps_its_connections_bounded(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "catalogue.sqlite3")
    for _ in range(5):
        _wave(12, store.generation)
        assert _settle(store._connections) <= BOUND
    store.close()
    assert store._connections.open_count() == 0


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    waves=st.lists(
        st.tuples(st.integers(min_value=1, max_value=12), st.floats(min_value=0, max_value=0.02)),
        min_size=1,
        max_size=6,
    )
)
def test_open_connections_stay_bounded_over_random_waves(waves: list[tuple[int, float]]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "catalogue.sqlite3"
        connections = _make(path)
        fds_before = _fds_on(path)
        try:
            for count, pause in waves:
                _wave(count, lambda: _use(connections))
                assert _settle(connections) <= BOUND
                assert _fds_on(path) <= fds_before + max(count for count, _ in waves)
                time.sleep(pause)
            total = sum(count for count, _ in waves)
            assert connections.get().execute("SELECT count(*) FROM hits").fetchone()[0] == total
        finally:
            connections.close()
        assert _fds_on(path) == 0
