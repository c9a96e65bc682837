"""The catalogue store: listings and profiles in one SQLite file, behind a narrow interface.

What the service needs of a store is :class:`CatalogueStore`; :class:`SQLiteStore` is the implementation.
The file holds each record whole (a compressed JSON document) next to what makes it fast to find: typed
columns and term/number tables for filters and facets, FTS5 tables for text, an R*Tree for distance.

This module opens the file (and rebuilds an older layout's indexes); the rest lives by what it does, and the
store's public types are re-exported from here:

* :mod:`precon.service.stores.types`: the query and result types and :class:`CatalogueStore`;
* :mod:`precon.service.stores.records`: what every store does with records (documents, columns, terms,
  facet counting, the geometry of a circle), shared with the PostgreSQL store;
* :mod:`precon.service.stores.sqlite.catalogue`: the SQLite layout, connections and generation;
* :mod:`precon.service.stores.sqlite.writes`: upserts, deletes, profile provinces, views;
* :mod:`precon.service.stores.sqlite.reads`: searches (column index and SQL), facets, profiles, similarity.
* :mod:`precon.service.stores.sqlite.changes`: the history's ``changes`` feed narrowed by a search.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from precon.service.search.held_values import HeldValues
from precon.service.search.shared import GenerationSignal, SharedIndexes
from precon.service.sqlite_files import Connections
from precon.service.stores.records import (
    PerGeneration,
    decode_document,
    province_of,
)
from precon.service.stores.sqlite.bulk import SQLiteBulkLoads
from precon.service.stores.sqlite.catalogue import (
    _DERIVED_TABLES,
    SCHEMA_VERSION,
    _prepare_connection,
    _schema,
)
from precon.service.stores.sqlite.changes import SQLiteChanges
from precon.service.stores.sqlite.generation_held import GenerationHeld
from precon.service.stores.sqlite.market_columns import MARKET_VERSION, SQLiteMarket
from precon.service.stores.sqlite.market_patch import ledger_patched, market_patched, whole_ledger, whole_market
from precon.service.stores.sqlite.market_units import LEDGER_VERSION
from precon.service.stores.types import (
    MAX_FACET_VALUES,
    CatalogueChange,
    CatalogueStore,
    GeoCircle,
    ListingQuery,
    ProfileQuery,
    SearchHits,
)

__all__ = [
    "MAX_FACET_VALUES",
    "SCHEMA_VERSION",
    "CatalogueChange",
    "CatalogueStore",
    "GeoCircle",
    "ListingQuery",
    "ProfileQuery",
    "SQLiteStore",
    "SearchHits",
    "decode_document",
    "province_of",
]

log = logging.getLogger("precon.store")


class SQLiteStore(SQLiteBulkLoads, SQLiteChanges, SQLiteMarket):
    """A catalogue in one SQLite file (WAL): one connection per thread, writes serialised by SQLite. Listing searches
    run on the in-memory column index (:mod:`precon.service.stores.sqlite.reads`)."""

    def __init__(self, path: str | Path, shared_indexes: bool = False) -> None:
        """``shared_indexes``: the in-memory indexes are files beside the catalogue, built by one process and mapped
        by every process that serves it (see :class:`SharedIndexes`), instead of a copy built in each."""
        self._column_index = None
        self._plan_index = None
        self._index_lock = threading.Lock()
        self._held_values = HeldValues()
        self._text_cache = OrderedDict()
        self.path = Path(path)
        self._shared = SharedIndexes(self.path) if shared_indexes else None
        self._signal = GenerationSignal(self.path)
        self._known_generation = None
        """(the signal file's stamp, the generation read, when): see :meth:`generation`."""
        self._bumped = False
        self._connections = Connections(self.path, _prepare_connection)
        self._write_lock = self._connections.write_lock
        self._typo_cache = PerGeneration()
        self._profile_typo_cache = PerGeneration()
        self._label_cache = PerGeneration()
        self._attribute_cache = PerGeneration()
        self._bulk = False
        self._history_lock = threading.Lock()
        self._history_held = None
        """The history's columns and the generation they are of (see :mod:`.history_columns`)."""
        self._positions_lock = threading.Lock()
        self._positions = None
        """Each history listing's position in the column index (see :mod:`.changes`)."""
        self._market = GenerationHeld("market", MARKET_VERSION, whole_market, market_patched)
        """The market columns (see :mod:`.market_columns`)."""
        self._ledger = GenerationHeld("ledger", LEDGER_VERSION, whole_ledger, ledger_patched)
        """The unit ledger, once a request named a unitFilter (see :mod:`.market_units`)."""
        self._atomic = threading.local()
        """``pending``: the changes of this thread's :meth:`atomic` block, heard of after its commit."""
        self._recording = True
        """Whether writes record their changes in ``listing_history`` (not while a layout upgrade rewrites records)."""
        self.listeners = []
        """Called with the changes of every write, after it is committed (webhook events hang here)."""
        with self._write_lock:
            db = self._db()
            try:
                db.executescript(
                    "BEGIN IMMEDIATE;" + _schema() + "INSERT OR IGNORE INTO meta VALUES ('generation', '0');COMMIT;"
                )
            except sqlite3.OperationalError:
                # A file of an older layout, whose tables lack a column a new index names: _upgrade rebuilds them.
                if db.in_transaction:
                    db.execute("ROLLBACK")
                if not self._older_layout(db):
                    raise
        self._upgrade()

    def opener(self) -> functools.partial[SQLiteStore]:
        """How another process opens this catalogue: a store of its own over the same file (a simulation's helper
        process reads through one)."""
        return functools.partial(SQLiteStore, self.path)

    def warm(self, now: bool = False) -> None:
        """The indexes and the history's columns (:meth:`SQLiteChanges.warm`); where indexes are shared between
        processes, the market columns and the unit ledger too, the first time: built once, by the process that warms
        the data directory before the workers start, and mapped by each worker (not built on a user's first
        ``market_stats``, nor on the first that names a ``unitFilter``: 45 s at 50,000 listings)."""
        super().warm(now)
        if self._shared is not None:
            if self._market.held is None:
                self.market_columns()
            if self._ledger.held is None:
                self.unit_ledger()

    @staticmethod
    def _older_layout(db: sqlite3.Connection) -> bool:
        try:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.OperationalError:
            return False
        return row is not None and int(row[0]) < SCHEMA_VERSION

    def _upgrade(self) -> None:
        """Rebuilds what finds records (indexes, text, columns) when the file was written by an older layout.

        The records themselves, and the recorded views, are kept as they are; they are read back in batches.
        """
        db = self._db()
        row = db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is not None and int(row[0]) == SCHEMA_VERSION:
            return
        count = db.execute("SELECT (SELECT count(*) FROM listing_docs) + (SELECT count(*) FROM profiles)").fetchone()
        if count[0]:
            log.warning("rebuilding the indexes of %s for layout %d", self.path, SCHEMA_VERSION)
            with self._write_lock:
                db.execute("BEGIN IMMEDIATE")
                db.execute("DROP TABLE IF EXISTS upgrade_listings")
                db.execute("DROP TABLE IF EXISTS upgrade_profiles")
                db.execute("CREATE TABLE upgrade_listings AS SELECT id, doc FROM listing_docs")
                db.execute("CREATE TABLE upgrade_profiles AS SELECT id, doc FROM profiles")
                for table in _DERIVED_TABLES:
                    db.execute(f"DROP TABLE IF EXISTS {table}")
                db.execute("COMMIT")
                db.executescript("BEGIN IMMEDIATE;" + _schema() + "COMMIT;")
            self._recording = False
            with self.bulk_load():
                for table, upsert in (
                    ("upgrade_profiles", self.upsert_profiles),
                    ("upgrade_listings", self.upsert_listings),
                ):
                    last = 0
                    while batch := db.execute(
                        f"SELECT id, doc FROM {table} WHERE id > ? ORDER BY id LIMIT 2000", (last,)
                    ).fetchall():
                        upsert([decode_document(blob) for _, blob in batch])
                        last = batch[-1][0]
            self._recording = True
            with self._write_lock:
                db.execute("DROP TABLE upgrade_listings")
                db.execute("DROP TABLE upgrade_profiles")
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))


def write_whole(target: Path, fill: Callable[[SQLiteStore], object]) -> None:
    """The catalogue file at ``target`` made (or replaced) whole: ``fill`` writes a new store beside it, which is
    moved into place once complete, so that a process stopped midway leaves ``target`` as it was (a new data
    directory's first start, ``precon catalogue generate``). The caller keeps others from writing ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fresh = target.with_name(f"{target.name}.new")
    for leftover in (fresh, *_log_files(fresh)):
        leftover.unlink(missing_ok=True)
    store = SQLiteStore(fresh)
    try:
        fill(store)
        store.checkpoint()
    finally:
        store.close()
    # The logs: the new file's emptied by the checkpoint, the old file's belonging to what it replaces.
    for leftover in (*_log_files(fresh), *_log_files(target)):
        leftover.unlink(missing_ok=True)
    fresh.replace(target)
    signal = GenerationSignal(fresh).path
    if signal.exists():  # a new file (inode) where processes reading ``target`` look: they see the change
        signal.replace(GenerationSignal(target).path)


def _log_files(path: Path) -> tuple[Path, Path]:
    return path.with_name(f"{path.name}-wal"), path.with_name(f"{path.name}-shm")
