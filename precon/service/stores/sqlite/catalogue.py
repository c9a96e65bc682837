"""The SQLite catalogue file: its layout, its connections and its generation.

Everything of :class:`~precon.service.stores.sqlite.store.SQLiteStore` that both its write path
(:mod:`precon.service.stores.sqlite.writes`) and its read path (:mod:`precon.service.stores.sqlite.reads`) stand on: the
schema and its version, the functions each connection is given, and :class:`SQLiteCatalogueBase`, which holds
the connections, the write transaction and the catalogue's generation (what the caches of the read path follow).
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from precon.schema import SCALAR_ATTRIBUTES, SEARCHABLE_LISTING_FIELDS, SEARCHABLE_PROFILE_FIELDS
from precon.service.search.column_patch import WRITES_SCHEMA
from precon.service.search.columns import ColumnIndex, FloatArray
from precon.service.search.held_values import HeldValues
from precon.service.search.path_values import VALUE_SCHEMA, VALUE_TABLES
from precon.service.search.plan_layers import Plans
from precon.service.search.plans import PLAN_SCHEMA, PLAN_TABLES
from precon.service.search.shared import GenerationSignal, SharedIndexes
from precon.service.search.sql_filter import FILTER_KEYS
from precon.service.search.text import FTS_OPTIONS, TypoIndex
from precon.service.sqlite_files import Connections
from precon.service.stores.records import PerGeneration, decode_document
from precon.service.stores.types import CatalogueChange

GENERATION_RECHECK_S = 1.0
"""The longest a store trusts its last reading of the generation when nothing signalled a change."""

_SQL_TYPES = {"text": "TEXT", "number": "REAL", "bool": "INTEGER"}
_INDEXED_COLUMNS = [
    "sellingStatus",
    "constructionStatus",
    "cityOrDistrict",
    "startPrice",
    "endPrice",
    "minBeds",
    "maxBeds",
    "minBaths",
    "maxBaths",
    "minSize",
    "maxSize",
    "completionYear",
    "averagePricePerSqFeet",
]


def _listing_schema() -> str:
    columns = ",\n  ".join(f"{a.column} {_SQL_TYPES[a.kind]}" for a in SCALAR_ATTRIBUTES)
    column_indexes = "\n".join(
        f"CREATE INDEX IF NOT EXISTS listings_by_{name} ON listings(c_{name}, province);" for name in _INDEXED_COLUMNS
    )
    listing_fts = ", ".join(SEARCHABLE_LISTING_FIELDS)
    return f"""
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS listings(
  id INTEGER PRIMARY KEY,
  listing_id TEXT NOT NULL UNIQUE,
  province TEXT,
  featured INTEGER NOT NULL DEFAULT 0,
  updated_at TEXT NOT NULL DEFAULT '',
  geo_lat REAL,
  geo_lng REAL,
  {columns}
);
CREATE TABLE IF NOT EXISTS listing_docs(id INTEGER PRIMARY KEY, doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS listings_in_order ON listings(featured DESC, updated_at DESC, listing_id);
CREATE INDEX IF NOT EXISTS listings_by_province ON listings(province, featured DESC, updated_at DESC, listing_id);
{column_indexes}
CREATE TABLE IF NOT EXISTS listing_terms(attr TEXT NOT NULL, term TEXT NOT NULL, listing INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS listing_terms_lookup ON listing_terms(attr, term, listing);
CREATE INDEX IF NOT EXISTS listing_terms_by_listing ON listing_terms(listing, attr, term);
CREATE TABLE IF NOT EXISTS listing_numbers(attr TEXT NOT NULL, num REAL NOT NULL, listing INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS listing_numbers_lookup ON listing_numbers(attr, num, listing);
CREATE INDEX IF NOT EXISTS listing_numbers_by_listing ON listing_numbers(listing, attr);
CREATE TABLE IF NOT EXISTS labels(
  attr TEXT NOT NULL, term TEXT NOT NULL, label TEXT NOT NULL, PRIMARY KEY(attr, term)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS listing_attributes(name TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS listing_fts USING fts5(
  {listing_fts}, {FTS_OPTIONS});
CREATE VIRTUAL TABLE IF NOT EXISTS listing_vocab USING fts5vocab(listing_fts, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS listing_geo USING rtree(id, min_lat, max_lat, min_lng, max_lng);
CREATE TABLE IF NOT EXISTS listing_history(
  seq INTEGER PRIMARY KEY, at TEXT NOT NULL, listing_id TEXT NOT NULL, province TEXT, scope TEXT NOT NULL,
  plan TEXT, unit TEXT, field TEXT, change TEXT NOT NULL, from_value BLOB, to_value BLOB);
DROP INDEX IF EXISTS history_by_listing;
CREATE INDEX IF NOT EXISTS history_by_listing_time ON listing_history(listing_id, at);
CREATE INDEX IF NOT EXISTS history_by_time ON listing_history(at);
CREATE TABLE IF NOT EXISTS deleted_listings(listing_id TEXT PRIMARY KEY, province TEXT, doc BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS listing_views(
  listing_id TEXT PRIMARY KEY, rank REAL NOT NULL, views INTEGER NOT NULL, last_view REAL NOT NULL)
  WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS listing_views_by_rank ON listing_views(rank DESC);
{WRITES_SCHEMA}"""


def _profile_schema() -> str:
    profile_fts = ", ".join(SEARCHABLE_PROFILE_FIELDS)
    return f"""CREATE TABLE IF NOT EXISTS profiles(
  id INTEGER PRIMARY KEY,
  profile_id TEXT NOT NULL,
  collection TEXT NOT NULL,
  path TEXT NOT NULL UNIQUE,
  path_key TEXT NOT NULL,
  name_key TEXT NOT NULL DEFAULT '',
  listing_count INTEGER NOT NULL DEFAULT 0,
  doc BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS profiles_by_id ON profiles(profile_id);
CREATE INDEX IF NOT EXISTS profiles_by_path_key ON profiles(path_key);
CREATE INDEX IF NOT EXISTS profiles_by_collection ON profiles(collection, name_key, path);
CREATE INDEX IF NOT EXISTS profiles_by_name ON profiles(name_key, path);
CREATE INDEX IF NOT EXISTS profiles_by_listing_count ON profiles(listing_count, name_key, path);
CREATE TABLE IF NOT EXISTS profile_provinces(
  province TEXT NOT NULL, profile INTEGER NOT NULL, listings INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY(province, profile)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS profile_provinces_by_profile ON profile_provinces(profile);
CREATE VIRTUAL TABLE IF NOT EXISTS profile_fts USING fts5(
  {profile_fts}, {FTS_OPTIONS});
CREATE VIRTUAL TABLE IF NOT EXISTS profile_vocab USING fts5vocab(profile_fts, 'row');
CREATE TABLE IF NOT EXISTS plan_ids(
  plan_id TEXT NOT NULL, listing INTEGER NOT NULL, PRIMARY KEY(plan_id, listing)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS plan_ids_by_listing ON plan_ids(listing);
{PLAN_SCHEMA}
{VALUE_SCHEMA}"""


def _schema() -> str:
    return _listing_schema() + "\n" + _profile_schema()


SCHEMA_VERSION = 12
"""The layout of the derived tables; a file of another layout has them rebuilt from its records on open.
4: sellingStatusUpdateTimestamp is an indexed number (and records written before get it and floor-plan ids).
5: plan_ids finds the listings holding a floor-plan id (the importer keeps ids unique across listings).
6: profiles sort by name accent- and case-insensitively (``name_key`` is folded as search folds words), and by
their number of listings (``listing_count``, and per province ``profile_provinces.listings``).
7: ``floorPlans.units.status`` is an indexed term (filters and facets on a unit's status).
8: ``listing_plan_units``: each unit of a plan, what a ``unitFilter`` on ``units.*`` tests.
9: ``listing_plan_units`` keeps each unit's number and floor whole (what :mod:`~precon.service.search.held_values`
answers filters on them from).
10: ``listing_values`` keeps a listing's values at the paths the column index does not answer
(:mod:`~precon.service.search.path_values`): filters on them read no document.
11: ``listing_plan_units`` keeps a unit's price whole where its number column does not (text among them), and a
status that is not text; ``listing_values`` the numeric readings of the text attributes the column index holds
folded: every filter is answered from rows.
12: ``listing_values`` keeps the values of the column index's attributes that it does not hold as the evaluator
reads them (:func:`~precon.service.search.path_values.kept_at_attribute`): a value of another kind, a list where one
value is expected."""
_DERIVED_TABLES = [
    "listing_vocab",
    "listing_fts",
    "listing_geo",
    "listing_terms",
    "listing_numbers",
    "labels",
    "listing_attributes",
    "listings",
    "listing_docs",
    *PLAN_TABLES,
    *VALUE_TABLES,
    "plan_ids",
    "profile_vocab",
    "profile_fts",
    "profile_provinces",
    "profiles",
]
_SELECT_LISTING_DOC = "SELECT l.id, d.doc FROM listings l JOIN listing_docs d ON d.id = l.id WHERE l.listing_id = ?"
_LISTING_SECONDARY_INDEXES = re.findall(
    r"CREATE INDEX IF NOT EXISTS (\w+) ON listing(?:s|_terms|_numbers|_plan_values|_plan_units|_values)\(", _schema()
)


def _prepare_connection(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("PRAGMA cache_size=-4000")
    db.execute("PRAGMA temp_store=MEMORY")
    db.create_function("precon_match", 2, _precon_match, deterministic=True)
    try:
        db.execute("SELECT sin(0), acos(0), radians(0), ln(1), exp(0)")
    except sqlite3.OperationalError:  # SQLite built without its math functions
        for name, arity, fn in (
            ("sin", 1, math.sin),
            ("cos", 1, math.cos),
            ("asin", 1, math.asin),
            ("acos", 1, math.acos),
            ("sqrt", 1, math.sqrt),
            ("radians", 1, math.radians),
            ("pow", 2, math.pow),
            ("ln", 1, math.log),
            ("exp", 1, math.exp),
        ):
            db.create_function(name, arity, fn, deterministic=True)


def _precon_match(blob: bytes | None, filter_key: int) -> int:
    """Whether a stored document meets the filter of this key (see :class:`FilterKeys`)."""
    if blob is None:
        return 0
    return int(FILTER_KEYS.predicate(filter_key)(decode_document(blob)))


class SQLiteCatalogueBase:
    """A catalogue in one SQLite file (WAL): one connection per thread, writes serialised by SQLite. What every part
    of :class:`~precon.service.stores.sqlite.store.SQLiteStore` shares; its ``__init__`` sets these."""

    path: Path
    engine: Literal["sqlite"] = "sqlite"
    """Which kind of store this is (PostgreSQL's is ``postgres``)."""
    listeners: list[Callable[[list[CatalogueChange]], None]]
    """Called with the changes of every write, after it is committed (webhook events hang here)."""
    _connections: Connections
    _write_lock: threading.Lock
    _signal: GenerationSignal
    _shared: SharedIndexes | None
    _known_generation: tuple[tuple[int, int] | None, int, float] | None
    _bumped: bool
    _bulk: bool
    _recording: bool
    _atomic: threading.local
    _column_index: ColumnIndex | None
    _plan_index: Plans | None
    _index_lock: threading.Lock
    _held_values: HeldValues
    _text_cache: OrderedDict[tuple[int, str], FloatArray]
    background_index: bool = False
    """Whether a new generation's column index is built on a thread while searches use the one before (a replica's
    copy, which follows every write: see :meth:`~precon.service.stores.sqlite.reads.SQLiteReads._index_to_search`)."""
    _index_thread: threading.Thread | None = None
    _typo_cache: PerGeneration[TypoIndex]
    _profile_typo_cache: PerGeneration[TypoIndex]
    _label_cache: PerGeneration[dict[tuple[str, str], str]]
    _attribute_cache: PerGeneration[frozenset[str]]

    def _db(self) -> sqlite3.Connection:
        return self._connections.get()

    def checkpoint(self) -> None:
        """Everything in the log (WAL) copied into the file and the log emptied: the file alone holds the
        catalogue (raises if a reader held the log back)."""
        busy, _, _ = self._db().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise sqlite3.OperationalError(f"{self.path}: the log could not be emptied while a reader holds it")

    def close(self) -> None:
        builder = self._index_thread
        if builder is not None:  # it reads through a connection of its own, which closing would pull away
            builder.join(timeout=60)
        self._connections.close()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A read transaction (inside one of this thread's, that one): the statements inside see one state of the
        catalogue, whatever is written meanwhile (a count, its page and its facets agree)."""
        db = self._db()
        if db.in_transaction:
            yield db
            return
        db.execute("BEGIN")
        try:
            yield db
        finally:
            db.execute("COMMIT")

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (inside one of this thread's, part of it): the generation it raised is signalled to
        the other processes once the outermost one commits."""
        outermost = not self._connections.writing()
        with self._connections.transaction() as db:
            yield db
        if outermost and self._bumped:
            self._bumped = False
            self._known_generation = None
            self._signal.touch(self._read_generation())

    def _bump_generation(self, db: sqlite3.Connection) -> None:
        db.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'generation'")
        self._bumped = True

    def _read_generation(self) -> int:
        return int(self._db().execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])

    def generation(self) -> int:
        """The catalogue's generation, raised by every write. Read from SQLite only when a write may have happened
        since the last read: one in this process, one in another (which replaced the signal file beside the
        catalogue: a ``stat`` tells), or :data:`GENERATION_RECHECK_S` passed (a writer that is not a store)."""
        stamp = self._signal.stamp()
        known = self._known_generation
        now = time.monotonic()
        if known is not None and known[0] == stamp and now - known[2] < GENERATION_RECHECK_S:
            return known[1]
        generation = self._read_generation()
        self._known_generation = (stamp, generation, now)
        return generation

    def _index_key(self, generation: int) -> str:
        """Names an index of this file's generation (the inode: a catalogue replaced whole starts counting again)."""
        return f"{os.stat(self.path).st_ino}-{generation}"

    # -- what a copy of another catalogue compares with (a mirror run) ---------------------------------------

    def stored_keys(self, kind: Literal["listings", "profiles"]) -> list[str]:
        """The keys of every stored listing (its id) or profile (its path), in order."""
        sql = "SELECT listing_id FROM listings ORDER BY listing_id" if kind == "listings" else (
            "SELECT path FROM profiles ORDER BY path"
        )  # fmt: skip
        return [row[0] for row in self._db().execute(sql)]

    def stored_documents(self, kind: Literal["listings", "profiles"], keys: Sequence[str]) -> dict[str, bytes]:
        """The stored documents, as stored (JSON bytes), of the listings or profiles ``keys`` that are stored."""
        select = (
            "SELECT l.listing_id, d.doc FROM listings l JOIN listing_docs d ON d.id = l.id WHERE l.listing_id IN"
            if kind == "listings"
            else "SELECT path, doc FROM profiles WHERE path IN"
        )
        found: dict[str, bytes] = {}
        db = self._db()
        for start in range(0, len(keys), 500):
            some = keys[start : start + 500]
            found.update((key, bytes(doc)) for key, doc in db.execute(f"{select} ({', '.join('?' * len(some))})", some))
        return found

    def meta_value(self, key: str) -> str | None:
        """A value the catalogue keeps about itself (``meta``), or None."""
        row = self._db().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta_value(self, key: str, value: str) -> None:
        """Keeps ``value`` under ``key`` (in this thread's write transaction, if it is in one)."""
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
