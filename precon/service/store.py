"""The catalogue store: listings and profiles in one SQLite file, behind a narrow interface.

What the service needs of a store is :class:`CatalogueStore`; :class:`SQLiteStore` is the implementation.
The file holds each record whole (a compressed JSON document) next to what makes it fast to find: typed
columns and term/number tables for filters and facets, FTS5 tables for text, an R*Tree for distance.

The query and result types and the protocol are in :mod:`precon.service.catalogue_types`, what both stores do
with records in :mod:`precon.service.catalogue_records`; they are re-exported here, where the rest of the
service has always imported them from.
"""

from __future__ import annotations

import logging
import math
import os
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np

from precon import filters
from precon.filters import Expr, fold_text
from precon.service.catalogue_records import (
    BOX_MARGIN_DEG,
    _bounding_box,
    _collect,
    _facet_key,
    _geo_point,
    _last_of_each,
    _scalar_value,
    count_profile_facets,
    decode_document,
    encode_document,
    index_multi,
    province_of,
    province_pairs,
    reference_keys,
)
from precon.service.catalogue_types import (
    EARTH_RADIUS_M,
    MAX_FACET_VALUES,
    TRENDING_DECAY_PER_S,
    TRENDING_EPOCH_S,
    TRENDING_HALF_LIFE_S,
    CatalogueChange,
    CatalogueStore,
    GeoCircle,
    ListingQuery,
    ProfileQuery,
    SearchHits,
    SimilarityFeatures,
    notify_listeners,
)
from precon.service.columns import ColumnIndex, FloatArray, IntArray, Mask
from precon.service.derived import complete_listing
from precon.service.plans import (
    PLAN_SCHEMA,
    PLAN_TABLES,
    PlanIndex,
    UnitFilterCompiler,
    delete_plan_rows,
    floor_plans,
    plan_rows,
)
from precon.service.schema import (
    LISTING_ATTRIBUTES,
    LISTING_REFERENCE_FIELDS,
    SCALAR_ATTRIBUTES,
    SEARCHABLE_LISTING_FIELDS,
    SEARCHABLE_LISTING_WEIGHTS,
    SEARCHABLE_PROFILE_FIELDS,
    SEARCHABLE_PROFILE_WEIGHTS,
)
from precon.service.search import TextQuery, TypoIndex, fold, searchable_text
from precon.service.shared import GenerationSignal, SharedIndexes
from precon.service.sql_filter import ListingFilterCompiler, canonical_path
from precon.service.sqlite import Connections

__all__ = [
    "BOX_MARGIN_DEG",
    "EARTH_RADIUS_M",
    "GENERATION_RECHECK_S",
    "MAX_FACET_VALUES",
    "SCHEMA_VERSION",
    "TEXT_CACHE_ENTRIES",
    "TRENDING_DECAY_PER_S",
    "TRENDING_EPOCH_S",
    "TRENDING_HALF_LIFE_S",
    "CatalogueChange",
    "CatalogueStore",
    "GeoCircle",
    "ListingQuery",
    "ProfileQuery",
    "SQLiteStore",
    "SearchHits",
    "SimilarityFeatures",
    "_bounding_box",
    "_collect",
    "_facet_key",
    "_first_in_order",
    "_geo_point",
    "_last_of_each",
    "_scalar_value",
    "_schema",
    "count_profile_facets",
    "decode_document",
    "encode_document",
    "province_of",
]

log = logging.getLogger("precon.store")

GENERATION_RECHECK_S = 1.0
"""The longest a store trusts its last reading of the generation when nothing signalled a change."""

# ----------------------------------------------------------------------------------------------------------
# SQLite
# ----------------------------------------------------------------------------------------------------------

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


def _schema() -> str:
    columns = ",\n  ".join(f"{a.column} {_SQL_TYPES[a.kind]}" for a in SCALAR_ATTRIBUTES)
    column_indexes = "\n".join(
        f"CREATE INDEX IF NOT EXISTS listings_by_{name} ON listings(c_{name}, province);" for name in _INDEXED_COLUMNS
    )
    listing_fts = ", ".join(SEARCHABLE_LISTING_FIELDS)
    profile_fts = ", ".join(SEARCHABLE_PROFILE_FIELDS)
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
  {listing_fts}, tokenize='unicode61 remove_diacritics 2', prefix='2 3');
CREATE VIRTUAL TABLE IF NOT EXISTS listing_vocab USING fts5vocab(listing_fts, 'row');
CREATE VIRTUAL TABLE IF NOT EXISTS listing_geo USING rtree(id, min_lat, max_lat, min_lng, max_lng);
CREATE TABLE IF NOT EXISTS listing_views(
  listing_id TEXT PRIMARY KEY, rank REAL NOT NULL, views INTEGER NOT NULL, last_view REAL NOT NULL)
  WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS listing_views_by_rank ON listing_views(rank DESC);
CREATE TABLE IF NOT EXISTS profiles(
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
  {profile_fts}, tokenize='unicode61 remove_diacritics 2', prefix='2 3');
CREATE VIRTUAL TABLE IF NOT EXISTS profile_vocab USING fts5vocab(profile_fts, 'row');
CREATE TABLE IF NOT EXISTS plan_ids(
  plan_id TEXT NOT NULL, listing INTEGER NOT NULL, PRIMARY KEY(plan_id, listing)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS plan_ids_by_listing ON plan_ids(listing);
{PLAN_SCHEMA}"""


TEXT_CACHE_ENTRIES = 16
"""Text questions whose relevance arrays are kept: 16 × 8 bytes × listings (6.4 MB at 50,000)."""
SCHEMA_VERSION = 6
"""The layout of the derived tables; a file of another layout has them rebuilt from its records on open.
4: sellingStatusUpdateTimestamp is an indexed number (and records written before get it and floor-plan ids).
5: plan_ids finds the listings holding a floor-plan id (the importer keeps ids unique across listings).
6: profiles sort by name accent- and case-insensitively (``name_key`` is folded as search folds words), and by
their number of listings (``listing_count``, and per province ``profile_provinces.listings``)."""
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
    "plan_ids",
    "profile_vocab",
    "profile_fts",
    "profile_provinces",
    "profiles",
]
_SELECT_LISTING_DOC = "SELECT l.id, d.doc FROM listings l JOIN listing_docs d ON d.id = l.id WHERE l.listing_id = ?"
_LISTING_SECONDARY_INDEXES = re.findall(
    r"CREATE INDEX IF NOT EXISTS (\w+) ON listing(?:s|_terms|_numbers|_plan_values)\(", _schema()
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


@lru_cache(maxsize=512)
def _fallback_predicate(expression: str) -> Callable[[Any], bool]:
    return filters.compile_predicate(filters.parse(expression))


def _precon_match(blob: bytes | None, expression: str) -> int:
    if blob is None:
        return 0
    return int(_fallback_predicate(expression)(decode_document(blob)))


class SQLiteStore:
    """A catalogue in one SQLite file (WAL): one connection per thread, writes serialised by SQLite.

    Listing searches run on the in-memory column index (``engine="columns"``, the default) or on SQL alone
    (``engine="sql"``); both give the same answers.
    """

    def __init__(
        self, path: str | Path, engine: Literal["columns", "sql"] = "columns", shared_indexes: bool = False
    ) -> None:
        """``shared_indexes``: the in-memory indexes are files beside the catalogue, built by one process and mapped
        by every process that serves it (see :class:`SharedIndexes`), instead of a copy built in each."""
        self.engine = engine
        self._column_index: ColumnIndex | None = None
        self._plan_index: PlanIndex | None = None
        self._index_lock = threading.Lock()
        self._fallback_masks: dict[tuple[int, str], Mask] = {}
        self._text_cache: OrderedDict[tuple[int, str], FloatArray] = OrderedDict()
        self.path = Path(path)
        self._shared = SharedIndexes(self.path) if shared_indexes else None
        self._signal = GenerationSignal(self.path)
        self._known_generation: tuple[tuple[int, int] | None, int, float] | None = None
        """(the signal file's stamp, the generation read, when): see :meth:`generation`."""
        self._bumped = False
        self._connections = Connections(self.path, _prepare_connection)
        self._write_lock = self._connections.write_lock
        self._typo_cache: tuple[int, TypoIndex, TypoIndex] | None = None
        self._label_cache: tuple[int, dict[tuple[str, str], str]] | None = None
        self._attribute_cache: tuple[int, frozenset[str]] | None = None
        self._bulk = False
        self.listeners: list[Callable[[list[CatalogueChange]], None]] = []
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
            with self._write_lock:
                db.execute("DROP TABLE upgrade_listings")
                db.execute("DROP TABLE upgrade_profiles")
        with self._transaction() as db:
            db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))

    # -- connections ---------------------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        return self._connections.get()

    def close(self) -> None:
        self._connections.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connections.transaction() as db:
            yield db
        if self._bumped:
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

    # -- writing -------------------------------------------------------------------------------------------

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """For loading a whole catalogue: the listing indexes are built once at the end, not row by row."""
        db = self._db()
        with self._write_lock:
            for name in _LISTING_SECONDARY_INDEXES:
                db.execute(f"DROP INDEX IF EXISTS {name}")
        db.execute("PRAGMA synchronous=OFF")
        self._bulk = True
        try:
            yield
        finally:
            self._bulk = False
            db.execute("PRAGMA synchronous=NORMAL")
            with self._write_lock:
                db.executescript("BEGIN IMMEDIATE;" + _schema() + "COMMIT;")
            with self._transaction() as db:
                keys = {row[0] for row in db.execute("SELECT path_key FROM profiles")}
                self._refresh_profile_provinces(db, keys)
                self._bump_generation(db)
            db.execute("ANALYZE")

    def upsert_listings(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]:
        changes: list[CatalogueChange] = []
        touched_profiles: set[str] = set()
        scalar_columns = [a.column for a in SCALAR_ATTRIBUTES]
        insert_listing = (
            "INSERT INTO listings(listing_id, province, featured, updated_at, geo_lat, geo_lng, "
            + ", ".join(scalar_columns)
            + ") VALUES ("
            + ", ".join("?" * (6 + len(scalar_columns)))
            + ")"
        )
        fts_columns = ", ".join(SEARCHABLE_LISTING_FIELDS)
        insert_fts = f"INSERT INTO listing_fts(rowid, {fts_columns}) VALUES (?{', ?' * len(SEARCHABLE_LISTING_FIELDS)})"
        records = _last_of_each(records, lambda r: str(r.get("listingId") or r.get("objectID") or "").strip())
        now = time.time()
        with self._transaction() as db:
            existing = {}
            province_pairs: set[tuple[str, str]] = set()
            replaced = False
            labels: dict[tuple[str, str], str] = {}
            attribute_names: set[str] = set()
            terms: set[tuple[str, str, int]] = set()
            numbers: set[tuple[str, float, int]] = set()
            fts_rows: list[tuple[Any, ...]] = []
            docs: list[tuple[int, bytes]] = []
            geo_rows: list[tuple[int, float, float, float, float]] = []
            plans: list[tuple[int, int]] = []
            plan_values: list[tuple[int, int, int, int, str | None, float | None]] = []
            plan_ids: set[tuple[str, int]] = set()
            for record in records:
                listing_id = str(record.get("listingId") or record.get("objectID") or "").strip()
                if not listing_id:
                    raise ValueError("a listing needs a listingId")
                record = {**record, "listingId": listing_id}
                record.pop("objectID", None)
                record.setdefault("path", f"Listings/{listing_id}")
                if listing_id not in existing:
                    row = db.execute(_SELECT_LISTING_DOC, (listing_id,)).fetchone()
                    existing[listing_id] = row
                else:
                    row = existing[listing_id]
                old = None
                if row is not None:
                    old = decode_document(row[1])
                    touched_profiles.update(self._reference_keys(old))
                    self._delete_listing_rows(db, row[0])
                    replaced = True
                record = complete_listing(record, old, now)
                lat, lng = _geo_point(record)
                values = [
                    listing_id,
                    province_of(record.get("state")),
                    int(record.get("isFeatured") is True),
                    str(record.get("updatedAt") or ""),
                    lat,
                    lng,
                ]
                for attribute in SCALAR_ATTRIBUTES:
                    raw = record.get(attribute.path)
                    values.append(_scalar_value(attribute, raw))
                    if attribute.kind == "text" and isinstance(raw, str) and attribute.facet_by_default:
                        labels.setdefault((attribute.path, fold_text(raw)), raw)
                rowid = db.execute(insert_listing, values).lastrowid
                assert rowid is not None
                document = encode_document(record)
                docs.append((rowid, document))
                existing[listing_id] = (rowid, document)
                self._index_multi(record, rowid, terms, numbers, labels)
                fts_rows.append((rowid, *searchable_text(record, SEARCHABLE_LISTING_FIELDS)))
                record_plans, record_plan_values = plan_rows(record, rowid)
                plans += record_plans
                plan_values += record_plan_values
                plan_ids.update((plan["id"], rowid) for plan in floor_plans(record) if isinstance(plan.get("id"), str))
                if lat is not None and lng is not None:
                    geo_rows.append((rowid, lat, lat, lng, lng))
                attribute_names.update(record)
                touched_profiles.update(self._reference_keys(record))
                province_pairs.update(self._province_pairs(record))
                changes.append(CatalogueChange("listing", "updated" if row else "created", listing_id))
            db.executemany("INSERT INTO listing_docs VALUES (?, ?)", docs)
            db.executemany("INSERT INTO listing_terms VALUES (?, ?, ?)", sorted(terms))
            db.executemany("INSERT INTO listing_numbers VALUES (?, ?, ?)", sorted(numbers))
            db.executemany(insert_fts, fts_rows)
            db.executemany("INSERT INTO listing_geo VALUES (?, ?, ?, ?, ?)", geo_rows)
            db.executemany("INSERT INTO listing_plans VALUES (?, ?)", plans)
            db.executemany("INSERT INTO listing_plan_values VALUES (?, ?, ?, ?, ?, ?)", plan_values)
            db.executemany("INSERT INTO plan_ids VALUES (?, ?)", sorted(plan_ids))
            db.executemany(
                "INSERT OR IGNORE INTO labels VALUES (?, ?, ?)",
                [(a, t, lbl) for (a, t), lbl in labels.items()],
            )
            db.executemany("INSERT OR IGNORE INTO listing_attributes VALUES (?)", [(n,) for n in attribute_names])
            if self._bulk and not replaced:
                # Only listings added: their provinces are added to their profiles' without the dropped indexes.
                db.executemany(
                    "INSERT OR IGNORE INTO profile_provinces(province, profile) SELECT ?, id FROM profiles "
                    "WHERE path_key = ?",
                    sorted(province_pairs),
                )
            else:
                self._refresh_profile_provinces(db, touched_profiles)
            self._bump_generation(db)
        self._notify(changes)
        return changes

    _index_multi = staticmethod(index_multi)
    _reference_keys = staticmethod(reference_keys)
    _province_pairs = staticmethod(province_pairs)

    @staticmethod
    def _delete_listing_rows(db: sqlite3.Connection, rowid: int) -> None:
        db.execute("DELETE FROM listings WHERE id = ?", (rowid,))
        db.execute("DELETE FROM listing_docs WHERE id = ?", (rowid,))
        db.execute("DELETE FROM listing_terms WHERE listing = ?", (rowid,))
        db.execute("DELETE FROM listing_numbers WHERE listing = ?", (rowid,))
        db.execute("DELETE FROM listing_fts WHERE rowid = ?", (rowid,))
        db.execute("DELETE FROM listing_geo WHERE id = ?", (rowid,))
        db.execute("DELETE FROM plan_ids WHERE listing = ?", (rowid,))
        delete_plan_rows(db, rowid)

    def listings_holding_plans(self, plan_ids: Iterable[str]) -> dict[str, list[str]]:
        """For each of ``plan_ids`` that a stored floor plan carries, the ids of the listings holding it."""
        wanted = sorted(set(plan_ids))
        holders: dict[str, list[str]] = {}
        db = self._db()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = db.execute(
                "SELECT p.plan_id, l.listing_id FROM plan_ids p JOIN listings l ON l.id = p.listing "
                f"WHERE p.plan_id IN ({', '.join('?' * len(chunk))}) ORDER BY p.plan_id, l.listing_id",
                chunk,
            )
            for plan_id, listing_id in rows:
                holders.setdefault(plan_id, []).append(listing_id)
        return holders

    def _notify(self, changes: list[CatalogueChange]) -> list[CatalogueChange]:
        return notify_listeners(self.listeners, changes)

    def delete_listing(self, listing_id: str) -> list[CatalogueChange]:
        with self._transaction() as db:
            row = db.execute(_SELECT_LISTING_DOC, (listing_id,)).fetchone()
            if row is None:
                return []
            touched = self._reference_keys(decode_document(row[1]))
            self._delete_listing_rows(db, row[0])
            db.execute("DELETE FROM listing_views WHERE listing_id = ?", (listing_id,))
            self._refresh_profile_provinces(db, touched)
            self._bump_generation(db)
        return self._notify([CatalogueChange("listing", "deleted", listing_id)])

    def upsert_profiles(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]:
        changes = []
        fts_columns = ", ".join(SEARCHABLE_PROFILE_FIELDS)
        insert_fts = f"INSERT INTO profile_fts(rowid, {fts_columns}) VALUES (?{', ?' * len(SEARCHABLE_PROFILE_FIELDS)})"
        touched: set[str] = set()
        added: set[str] = set()
        records = _last_of_each(records, lambda r: str(r.get("path") or "").strip())
        with self._transaction() as db:
            fts_rows = []
            for record in records:
                path = str(record.get("path") or "").strip()
                if "/" not in path:
                    raise ValueError("a profile needs a path '<Collection>/<id>'")
                collection, profile_id = path.split("/", 1)
                record = {k: v for k, v in record.items() if k not in ("objectID", "id")}
                record = {"id": profile_id, **record}
                row = db.execute("SELECT id FROM profiles WHERE path = ?", (path,)).fetchone()
                if row is not None:
                    db.execute("DELETE FROM profiles WHERE id = ?", (row[0],))
                    db.execute("DELETE FROM profile_fts WHERE rowid = ?", (row[0],))
                else:
                    added.add(fold_text(path))
                name, listings = record.get("name"), record.get("listings")
                # A rewrite keeps the profile's rowid: its profile_provinces rows stay its own (and are replaced
                # below), never orphans beside a new row.
                rowid = db.execute(
                    "INSERT INTO profiles(id, profile_id, collection, path, path_key, name_key, listing_count, doc) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        row[0] if row is not None else None,
                        profile_id,
                        collection,
                        path,
                        fold_text(path),
                        fold(name) if isinstance(name, str) else "",
                        len(listings) if isinstance(listings, list) else 0,
                        encode_document(record),
                    ),
                ).lastrowid
                fts_rows.append((rowid, *searchable_text(record, SEARCHABLE_PROFILE_FIELDS)))
                touched.add(fold_text(path))
                changes.append(CatalogueChange("profile", "updated" if row else "created", path))
            db.executemany(insert_fts, fts_rows)
            if not self._bulk:
                self._refresh_profile_provinces(db, touched)
            elif added and db.execute("SELECT 1 FROM listings LIMIT 1").fetchone():
                # A bulk load keeps a rewritten profile's rows (its listings did not change); a new profile gets
                # the provinces of listings loaded before it, in this same transaction.
                self._refresh_profile_provinces(db, added)
            self._bump_generation(db)
        self._notify(changes)
        return changes

    def delete_profile(self, path: str) -> list[CatalogueChange]:
        with self._transaction() as db:
            row = db.execute("SELECT id FROM profiles WHERE path = ?", (path,)).fetchone()
            if row is None:
                return []
            db.execute("DELETE FROM profiles WHERE id = ?", (row[0],))
            db.execute("DELETE FROM profile_fts WHERE rowid = ?", (row[0],))
            db.execute("DELETE FROM profile_provinces WHERE profile = ?", (row[0],))
            self._bump_generation(db)
        return self._notify([CatalogueChange("profile", "deleted", path)])

    def _refresh_profile_provinces(self, db: sqlite3.Connection, path_keys: set[str]) -> None:
        """A profile is in a province when one of the listings referring to it is: its rows, recomputed.

        Called inside the transaction that writes the listings or profiles, so a profile is never committed
        without its provinces."""
        if not path_keys:
            return
        reference_attrs = sorted(set(LISTING_REFERENCE_FIELDS.values()))
        attr_marks = ", ".join("?" * len(reference_attrs))
        db.execute("CREATE TEMP TABLE IF NOT EXISTS touched_profiles(path_key TEXT PRIMARY KEY)")
        db.execute("DELETE FROM touched_profiles")
        db.executemany("INSERT OR IGNORE INTO touched_profiles VALUES (?)", [(k,) for k in path_keys])
        db.execute(
            "DELETE FROM profile_provinces WHERE profile IN "
            "(SELECT p.id FROM profiles p JOIN touched_profiles t ON t.path_key = p.path_key)"
        )
        db.execute(
            "INSERT OR IGNORE INTO profile_provinces(province, profile, listings) "
            "SELECT l.province, p.id, count(DISTINCT l.id) FROM touched_profiles t "
            "JOIN profiles p ON p.path_key = t.path_key "
            f"JOIN listing_terms lt ON lt.term = t.path_key AND lt.attr IN ({attr_marks}) "
            "JOIN listings l ON l.id = lt.listing WHERE l.province IS NOT NULL GROUP BY l.province, p.id",
            reference_attrs,
        )

    def record_view(self, listing_id: str, at: float | None = None) -> None:
        """Counts one view of a listing in its trending rank: a sum of views, each decayed by its age."""
        now = time.time() if at is None else at
        # ln(sum of e^(-λ(now - t_i))) + λ(now - epoch) does not depend on now: rank by it, forever.
        weight = TRENDING_DECAY_PER_S * (now - TRENDING_EPOCH_S)
        with self._transaction() as db:
            db.execute(
                "INSERT INTO listing_views(listing_id, rank, views, last_view) VALUES (?, ?, 1, ?) "
                "ON CONFLICT(listing_id) DO UPDATE SET "
                "rank = max(rank, excluded.rank) + ln(1 + exp(-abs(rank - excluded.rank))), "
                "views = views + 1, last_view = excluded.last_view",
                (listing_id, weight, now),
            )

    # -- reading listings ----------------------------------------------------------------------------------

    def _typo_indexes(self) -> tuple[TypoIndex, TypoIndex]:
        generation = self.generation()
        cached = self._typo_cache
        if cached is None or cached[0] != generation:
            db = self._db()
            listing_words = [r[0] for r in db.execute("SELECT term FROM listing_vocab")]
            profile_words = [r[0] for r in db.execute("SELECT term FROM profile_vocab")]
            cached = (generation, TypoIndex(listing_words), TypoIndex(profile_words))
            self._typo_cache = cached
        return cached[1], cached[2]

    def _labels(self) -> dict[tuple[str, str], str]:
        generation = self.generation()
        cached = self._label_cache
        if cached is None or cached[0] != generation:
            rows = self._db().execute("SELECT attr, term, label FROM labels")
            cached = (generation, {(a, t): label for a, t, label in rows})
            self._label_cache = cached
        return cached[1]

    def listing_attribute_names(self) -> frozenset[str]:
        generation = self.generation()
        cached = self._attribute_cache
        if cached is None or cached[0] != generation:
            names = frozenset(r[0] for r in self._db().execute("SELECT name FROM listing_attributes"))
            cached = (generation, names)
            self._attribute_cache = cached
        return cached[1]

    def _listing_where(self, query: ListingQuery, text: TextQuery | None) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if query.province is not None:
            clauses.append("l.province = ?")
            params.append(query.province)
        if query.filter is not None:
            sql, filter_params = ListingFilterCompiler().compile(query.filter)
            clauses.append(f"({sql})")
            params += filter_params
        if query.unit_filter is not None:
            sql, unit_params = UnitFilterCompiler().listing_clause(query.unit_filter)
            clauses.append(sql)
            params += unit_params
        if query.circle is not None:
            min_lat, max_lat, min_lng, max_lng = _bounding_box(query.circle)
            clauses.append(
                "l.id IN (SELECT id FROM listing_geo WHERE max_lat >= ? AND min_lat <= ? "
                "AND max_lng >= ? AND min_lng <= ?)"
            )
            params += [min_lat, max_lat, min_lng, max_lng]
            sql, distance_params = _distance_sql(query.circle)
            clauses.append(f"{sql} <= ?")
            params += [*distance_params, query.circle.radius_m]
        if text is not None:
            clauses.append("l.id IN (SELECT rowid FROM listing_fts WHERE listing_fts MATCH ?)")
            params.append(text.fts_expression())
        return clauses, params

    def search_listings(self, query: ListingQuery) -> SearchHits:
        text = query.text
        # Text matched in some fields only (v1-lite) is FTS5's column filter: the in-memory postings weigh every
        # field together, so such a question goes to SQL.
        in_memory = self.engine == "columns" and not (text is not None and text.columns)
        search = self._search_columns if in_memory else self._search_sql
        hits = search(query, text)
        if text is not None and hits.total == 0:
            listing_typos, _ = self._typo_indexes()
            expanded = listing_typos.expand(text)
            if any(expanded.typo_variants.values()):
                hits = search(query, expanded)
        return hits

    def warm(self) -> None:
        """Builds the in-memory indexes now rather than on the first query."""
        if self.engine == "columns":
            self._columns()
        self._typo_indexes()

    # The column engine: the default.

    def _columns(self) -> ColumnIndex:
        generation = self.generation()
        index = self._column_index
        if index is None or index.generation != generation:
            with self._index_lock:
                index = self._column_index
                if index is None or index.generation != generation:
                    index = self._build_columns(generation)
                    self._column_index = index
                    self._fallback_masks.clear()
        return index

    def _build_columns(self, generation: int) -> ColumnIndex:
        if self._shared is None:
            return ColumnIndex(self._db(), generation)

        def build() -> tuple[str, ColumnIndex]:
            current = self.generation()
            return self._index_key(current), ColumnIndex(self._db(), current)

        index: ColumnIndex = self._shared.get("columns", lambda: self._index_key(self.generation()), build)
        return index

    def _plans(self, index: ColumnIndex) -> PlanIndex:
        """The floor plans in columns, for ``unitFilter``: built on the first such query of a generation."""
        plans = self._plan_index
        if plans is None or plans.generation != index.generation:
            with self._index_lock:
                plans = self._plan_index
                if plans is None or plans.generation != index.generation:
                    if self._shared is None:
                        plans = PlanIndex(self._db(), index.rowids, index.generation)
                    else:
                        key = self._index_key(index.generation)
                        plans = self._shared.get(
                            "plans", lambda: key, lambda: (key, PlanIndex(self._db(), index.rowids, index.generation))
                        )
                    self._plan_index = plans
        return plans

    def _fallback_mask(self, index: ColumnIndex, expr: Expr) -> Mask:
        """Listings matching a filter on a path the index does not hold: the evaluator over each document."""
        expression = filters.to_query(expr)
        cached = self._fallback_masks.get((index.generation, expression))
        if cached is None:
            rowids = np.array(
                [
                    row[0]
                    for row in self._db().execute(
                        "SELECT id FROM listing_docs WHERE precon_match(doc, ?) ORDER BY id", (expression,)
                    )
                ],
                dtype=np.int64,
            )
            cached = index.none()
            cached[index.positions_of_rowids(rowids)] = True
            if len(self._fallback_masks) >= 64:
                self._fallback_masks.pop(next(iter(self._fallback_masks)))
            self._fallback_masks[(index.generation, expression)] = cached
        return cached.copy()

    def _text_scores(self, index: ColumnIndex, text: TextQuery) -> FloatArray:
        """Per listing, its relevance to the text (NaN where it does not match), kept for repeated questions:
        paging through a search, or changing its filters and facets, asks the same again."""
        expression = text.fts_expression()
        key = (index.generation, expression)
        cached = self._text_cache.get(key)
        if cached is not None:
            self._text_cache.move_to_end(key)
            return cached
        score = index.search_text.scores(text, index.size)
        with self._index_lock:
            self._text_cache[key] = score
            while len(self._text_cache) > TEXT_CACHE_ENTRIES:
                self._text_cache.popitem(last=False)
        return score

    def _search_columns(self, query: ListingQuery, text: TextQuery | None) -> SearchHits:
        db = self._db()
        index = self._columns()
        mask = index.everything() if query.province is None else index.in_province(query.province)
        if query.filter is not None:
            mask &= index.filter(query.filter, lambda expr: self._fallback_mask(index, expr))
        if query.unit_filter is not None:
            mask &= self._plans(index).listings_matching(query.unit_filter)
        score = None
        if text is not None:
            score = self._text_scores(index, text)
            mask &= ~np.isnan(score)
        distance = None
        if query.circle is not None:
            min_lat, max_lat, min_lng, max_lng = _bounding_box(query.circle)
            if min_lng >= -180.0 and max_lng <= 180.0:  # a box across the antimeridian would leave some out
                # Two comparisons a listing instead of the haversine for all: only those in the box are measured.
                mask &= index.in_box(min_lat - BOX_MARGIN_DEG, max_lat + BOX_MARGIN_DEG, min_lng - BOX_MARGIN_DEG,
                                     max_lng + BOX_MARGIN_DEG)  # fmt: skip
            candidates = np.flatnonzero(mask)
            distance = np.full(index.size, np.inf)
            distance[candidates] = index.distances(query.circle.lat, query.circle.lng, candidates)
            mask &= distance <= query.circle.radius_m
        total = int(mask.sum())
        facets = {name: index.facet(name, mask, query.max_facet_values) for name in query.facets}
        documents: list[dict[str, Any]] = []
        scores: list[float | None] = []
        if query.limit > 0 and query.offset < total:
            matched = np.flatnonzero(mask)
            rank = index.order_rank[matched]
            wanted = query.offset + query.limit
            if score is not None:
                ordered = _first_in_order(matched, -score[matched], rank, wanted)
            elif query.order == "trending":
                views = np.full(index.size, -np.inf)
                viewed = db.execute("SELECT listing_id, rank FROM listing_views").fetchall()
                if viewed:
                    positions = index.listing_ids.codes_of([row[0] for row in viewed])
                    ranks = np.array([row[1] for row in viewed], dtype=np.float64)
                    held = positions >= 0
                    views[positions[held]] = ranks[held]
                ordered = _first_in_order(matched, -views[matched], rank, wanted)
            elif distance is not None:
                ordered = _first_in_order(matched, distance[matched], rank, wanted)
            else:
                ordered = index.in_default_order(mask)
            page = ordered[query.offset : query.offset + query.limit]
            page_rowids = [int(r) for r in index.rowids[page]]
            marks = ", ".join("?" * len(page_rowids))
            blobs = dict(db.execute(f"SELECT id, doc FROM listing_docs WHERE id IN ({marks})", page_rowids).fetchall())
            scores = [None if score is None else float(score[p]) for p in page]
            if query.raw:
                source = f"{self.path}:{index.generation}"
                raw = [(r, blobs[r]) for r in page_rowids]
                return SearchHits(total, documents, scores, facets, text, blobs=raw, source=source)
            documents = [decode_document(blobs[r]) for r in page_rowids]
        return SearchHits(total, documents, scores, facets, text)

    # The SQL engine: the same answers from SQLite alone, slower on broad queries; kept as the cross-check.

    def _search_sql(self, query: ListingQuery, text: TextQuery | None) -> SearchHits:
        db = self._db()
        clauses, params = self._listing_where(query, text)
        where = " AND ".join(clauses) or "1"
        total = db.execute(f"SELECT count(*) FROM listings l WHERE {where}", params).fetchone()[0]
        documents: list[dict[str, Any]] = []
        scores: list[float | None] = []
        if query.limit > 0 and query.offset < total:
            rows = self._page(db, query, text, where, params)
            for blob, score in rows:
                documents.append(decode_document(blob))
                scores.append(None if score is None else round(-score, 6))
        facets = {name: self._facet(db, name, where, params, query.max_facet_values) for name in query.facets}
        return SearchHits(total, documents, scores, facets, text)

    def _page(
        self,
        db: sqlite3.Connection,
        query: ListingQuery,
        text: TextQuery | None,
        where: str,
        params: list[Any],
    ) -> list[tuple[bytes, float | None]]:
        tie_break = "l.featured DESC, l.updated_at DESC, l.listing_id"
        joins = ""
        join_params: list[Any] = []
        score = "NULL"
        if text is not None:
            weights = ", ".join(str(w) for w in SEARCHABLE_LISTING_WEIGHTS)
            joins = (
                f"JOIN (SELECT rowid AS fts_id, bm25(listing_fts, {weights}) AS rank FROM listing_fts "
                "WHERE listing_fts MATCH ?) f ON f.fts_id = l.id"
            )
            join_params = [text.fts_expression()]
            score = "f.rank"
            order = f"f.rank, {tie_break}"
        elif query.order == "trending":
            joins = "LEFT JOIN listing_views v ON v.listing_id = l.listing_id"
            order = f"v.rank IS NULL, v.rank DESC, {tie_break}"
        elif query.circle is not None:
            distance, distance_params = _distance_sql(query.circle)
            order = f"{distance}, {tie_break}"
            join_params = []
            params = [*params, *distance_params]
        else:
            order = tie_break
        sql = (
            f"SELECT d.doc, {score} FROM listings l {joins} JOIN listing_docs d ON d.id = l.id "
            f"WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?"
        )
        return db.execute(sql, [*join_params, *params, query.limit, query.offset]).fetchall()

    def _facet(
        self, db: sqlite3.Connection, name: str, where: str, params: list[Any], limit: int | None = MAX_FACET_VALUES
    ) -> list[tuple[str, int]]:
        attribute = LISTING_ATTRIBUTES[canonical_path(name)]
        if attribute.multi:
            table, value = ("listing_numbers", "num") if attribute.kind == "number" else ("listing_terms", "term")
            sql = (
                f"SELECT {value}, count(*) FROM {table} WHERE attr = ? "
                f"AND listing IN (SELECT l.id FROM listings l WHERE {where}) GROUP BY {value}"
            )
            rows = db.execute(sql, [attribute.path, *params]).fetchall()
        else:
            column = "l." + attribute.column
            sql = f"SELECT {column}, count(*) FROM listings l WHERE {where} AND {column} IS NOT NULL GROUP BY 1"
            rows = db.execute(sql, params).fetchall()
        labels = self._labels() if attribute.kind == "text" else {}
        counted = []
        for value, count in rows:
            if attribute.kind == "text":
                key = labels.get((attribute.path, value), value)
            elif attribute.kind == "bool" and attribute.multi:
                key = value
            else:
                key = _facet_key(attribute.kind, value)
            counted.append((key, count))
        counted.sort(key=lambda item: (-item[1], item[0]))
        return counted if limit is None else counted[:limit]

    def get_listings(self, ids: Sequence[str], province: str | None) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        db = self._db()
        marks = ", ".join("?" * len(ids))
        sql = (
            "SELECT l.listing_id, d.doc FROM listings l JOIN listing_docs d ON d.id = l.id "
            f"WHERE l.listing_id IN ({marks})"
        )
        params: list[Any] = list(ids)
        if province is not None:
            sql += " AND l.province = ?"
            params.append(province)
        return {listing_id: decode_document(blob) for listing_id, blob in db.execute(sql, params)}

    def similarity_features(
        self, listing_id: str, province: str | None, radius_m: float, limit: int
    ) -> tuple[SimilarityFeatures | None, list[SimilarityFeatures]]:
        """The listing's features and those of up to ``limit`` others: nearby first, then the province."""
        db = self._db()
        columns = "l.id, l.listing_id, l.geo_lat, l.geo_lng, l.c_startPrice, l.c_minBeds, l.c_maxBeds"
        scope, scope_params = ("AND l.province = ?", [province]) if province else ("", [])
        target = db.execute(
            f"SELECT {columns} FROM listings l WHERE l.listing_id = ? {scope}", [listing_id, *scope_params]
        ).fetchone()
        if target is None:
            return None, []
        rows: list[tuple[Any, ...]] = []
        if target[2] is not None:
            circle = GeoCircle(target[2], target[3], radius_m)
            box = _bounding_box(circle)
            rows = db.execute(
                f"SELECT {columns} FROM listings l WHERE l.id IN (SELECT id FROM listing_geo WHERE max_lat >= ? "
                f"AND min_lat <= ? AND max_lng >= ? AND min_lng <= ?) AND l.id != ? {scope} LIMIT ?",
                [box[0], box[1], box[2], box[3], target[0], *scope_params, limit],
            ).fetchall()
        if len(rows) < limit:
            seen = [r[0] for r in rows] + [target[0]]
            marks = ", ".join("?" * len(seen))
            rows += db.execute(
                f"SELECT {columns} FROM listings l WHERE l.id NOT IN ({marks}) {scope} "
                "ORDER BY l.featured DESC, l.updated_at DESC, l.listing_id LIMIT ?",
                [*seen, *scope_params, limit - len(rows)],
            ).fetchall()
        features = {
            row[0]: SimilarityFeatures(row[1], row[2], row[3], row[4], row[5], row[6]) for row in [target, *rows]
        }
        ids = list(features)
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            marks = ", ".join("?" * len(chunk))
            for listing, attr, term in db.execute(
                f"SELECT listing, attr, term FROM listing_terms WHERE listing IN ({marks}) "
                "AND attr IN ('type', 'amenities')",
                chunk,
            ):
                feature = features[listing]
                (feature.types if attr == "type" else feature.amenities).add(term)
        target_features = features.pop(target[0])
        return target_features, list(features.values())

    # -- reading profiles ----------------------------------------------------------------------------------

    def get_profiles(self, paths: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not paths:
            return {}
        db = self._db()
        found: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(paths))
        for start in range(0, len(unique), 900):
            chunk = unique[start : start + 900]
            marks = ", ".join("?" * len(chunk))
            for path, blob in db.execute(f"SELECT path, doc FROM profiles WHERE path IN ({marks})", chunk):
                found[path] = decode_document(blob)
        return found

    def find_profile(self, profile_id: str, collection: str | None, province: str | None) -> dict[str, Any] | None:
        sql = "SELECT p.doc FROM profiles p WHERE p.profile_id = ?"
        params: list[Any] = [profile_id]
        if collection:
            sql += " AND p.collection = ?"
            params.append(collection)
        if province is not None:
            sql += " AND p.id IN (SELECT profile FROM profile_provinces WHERE province = ?)"
            params.append(province)
        row = self._db().execute(sql + " ORDER BY p.path LIMIT 1", params).fetchone()
        return decode_document(row[0]) if row else None

    def search_profiles(self, query: ProfileQuery) -> SearchHits:
        hits = self._search_profiles(query, query.text)
        if query.text is not None and hits.total == 0:
            _, profile_typos = self._typo_indexes()
            expanded = profile_typos.expand(query.text)
            if any(expanded.typo_variants.values()):
                hits = self._search_profiles(query, expanded)
        return hits

    def _search_profiles(self, query: ProfileQuery, text: TextQuery | None) -> SearchHits:
        db = self._db()
        clauses: list[str] = []
        params: list[Any] = []
        if query.province is not None:
            clauses.append("p.id IN (SELECT profile FROM profile_provinces WHERE province = ?)")
            params.append(query.province)
        if query.collection:
            clauses.append("p.collection = ?")
            params.append(query.collection)
        if query.filter is not None:
            clauses.append("precon_match(p.doc, ?)")
            params.append(filters.to_query(query.filter))
        if text is not None:
            clauses.append("p.id IN (SELECT rowid FROM profile_fts WHERE profile_fts MATCH ?)")
            params.append(text.fts_expression())
        where = " AND ".join(clauses) or "1"
        total = db.execute(f"SELECT count(*) FROM profiles p WHERE {where}", params).fetchone()[0]
        documents: list[dict[str, Any]] = []
        scores: list[float | None] = []
        if query.limit > 0 and query.offset < total:
            joins, join_params, score = "", [], "NULL"
            if query.sort_by_name:
                direction = "DESC" if query.sort_by_name == "dsc" else "ASC"
                order = f"p.name_key {direction}, p.path {direction}"
            else:
                order = "p.name_key, p.path"
            order_params: list[Any] = []
            if query.sort_by_listings:
                direction = "DESC" if query.sort_by_listings == "desc" else "ASC"
                if query.province is None:
                    order = f"p.listing_count {direction}, {order}"
                else:
                    count = "(SELECT pp.listings FROM profile_provinces pp WHERE pp.province = ? AND pp.profile = p.id)"
                    order = f"{count} {direction}, {order}"
                    order_params.append(query.province)
            if text is not None:
                weights = ", ".join(str(w) for w in SEARCHABLE_PROFILE_WEIGHTS)
                joins = (
                    f"JOIN (SELECT rowid AS fts_id, bm25(profile_fts, {weights}) AS rank FROM profile_fts "
                    "WHERE profile_fts MATCH ?) f ON f.fts_id = p.id"
                )
                join_params = [text.fts_expression()]
                score = "f.rank"
                if not query.sort_by_name and not query.sort_by_listings:
                    order = f"f.rank, {order}"
            rows = db.execute(
                f"SELECT p.doc, {score} FROM profiles p {joins} WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
                [*join_params, *params, *order_params, query.limit, query.offset],
            ).fetchall()
            for blob, rank in rows:
                documents.append(decode_document(blob))
                scores.append(None if rank is None else round(-rank, 6))
        facets: dict[str, list[tuple[str, int]]] = {}
        if query.facets:
            facets = self._profile_facets(db, where, params, query.facets)
        return SearchHits(total, documents, scores, facets, text)

    @staticmethod
    def _profile_facets(
        db: sqlite3.Connection, where: str, params: list[Any], names: Sequence[str]
    ) -> dict[str, list[tuple[str, int]]]:
        rows = db.execute(f"SELECT p.collection, p.doc FROM profiles p WHERE {where}", params)
        return count_profile_facets(((collection, decode_document(blob)) for collection, blob in rows), names)

    def counts(self) -> dict[str, int]:
        db = self._db()
        return {
            "listings": db.execute("SELECT count(*) FROM listings").fetchone()[0],
            "profiles": db.execute("SELECT count(*) FROM profiles").fetchone()[0],
        }


def _first_in_order(matched: IntArray, primary: FloatArray, rank: IntArray, count: int) -> IntArray:
    """``matched`` ordered by ``primary``, ties by ``rank`` (distinct), as far as its first ``count`` at least: what
    a whole sort gives for those, at the cost of a partition and a sort of the few that can be among them (a whole
    sort of 50,000 costs more than the rest of a search)."""
    if count < len(matched):
        threshold = np.partition(primary, count - 1)[count - 1]
        if not np.isnan(threshold):
            kept = primary <= threshold
            matched, primary, rank = matched[kept], primary[kept], rank[kept]
    ordered: IntArray = matched[np.lexsort((rank, primary))]
    return ordered


def _distance_sql(circle: GeoCircle) -> tuple[str, list[float]]:
    """Great-circle distance in metres from the circle's centre to a listing's ``_geoloc`` (haversine)."""
    lat, lng = math.radians(circle.lat), math.radians(circle.lng)
    sql = (
        f"({2 * EARTH_RADIUS_M} * asin(min(1.0, sqrt("
        "pow(sin((radians(l.geo_lat) - ?) / 2), 2) + "
        "? * cos(radians(l.geo_lat)) * pow(sin((radians(l.geo_lng) - ?) / 2), 2)))))"
    )
    return sql, [lat, math.cos(lat), lng]
