"""The write path of the SQLite store: records in, with everything that finds them, in one transaction each.

:class:`SQLiteWrites` is the part of :class:`~precon.service.stores.sqlite.store.SQLiteStore` that changes the
catalogue:
listing and profile upserts and deletes (each record's document, typed columns, term/number/plan rows, text and
place, and the provinces of the profiles it refers to), bulk loads, recorded views. How a record becomes those
rows is shared with the PostgreSQL store (:mod:`precon.service.stores.records`); what is SQLite's is here.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from precon.filters import fold_text
from precon.schema import (
    LISTING_REFERENCE_FIELDS,
    SCALAR_ATTRIBUTES,
    SEARCHABLE_LISTING_FIELDS,
    SEARCHABLE_PROFILE_FIELDS,
)
from precon.service.search.path_values import DELETE_LISTING_VALUES, insert_values
from precon.service.search.plans import delete_plan_rows
from precon.service.search.text import searchable_text
from precon.service.stores.derived import complete_listing
from precon.service.stores.history import HistoryRow, history_rows, iso_time, listing_changes
from precon.service.stores.loading import batched
from precon.service.stores.records import (
    _last_of_each,
    as_stored_listing,
    decode_document,
    encode_document,
    geo_point,
    indexed_reference_keys,
    listing_columns,
    listing_key,
    province_of,
    province_pairs,
    stored_profile,
)
from precon.service.stores.sqlite.catalogue import (
    _SELECT_LISTING_DOC,
    SQLiteCatalogueBase,
)
from precon.service.stores.sqlite.history import INSERT_HISTORY
from precon.service.stores.sqlite.rewrites import ListingBatch, rewrite_in_place
from precon.service.stores.types import (
    TRENDING_DECAY_PER_S,
    TRENDING_EPOCH_S,
    CatalogueChange,
    before_wanted,
    notify_listeners,
)

_SCALAR_COLUMNS = [a.column for a in SCALAR_ATTRIBUTES]
READ_BATCH = 500
"""The most listings an update reads in one statement."""
MANY_WRITES_CHECKPOINT_PAGES = 100_000
"""The pages (4 KB) the log holds before it is copied into the file during :meth:`SQLiteWrites.many_writes`."""
Update = Callable[[str, dict[str, Any]], dict[str, Any] | None]
"""What :meth:`SQLiteWrites.update_listings` makes of a listing's document (None: nothing)."""
ONE_BY_ONE_MOST = 200
"""The most profiles whose provinces a write recounts one by one (each a lookup in the terms index); more, as a
set (a bulk load's thousands)."""
_LISTING_ROW = ["listing_id", "province", "featured", "updated_at", "geo_lat", "geo_lng", *_SCALAR_COLUMNS]
_INSERT_LISTING = f"INSERT INTO listings({', '.join(_LISTING_ROW)}) VALUES ({', '.join('?' * len(_LISTING_ROW))})"
_INSERT_LISTING_AT = (  # a new listing given its row id (one a forked copy made its rows for)
    f"INSERT INTO listings(id, {', '.join(_LISTING_ROW)}) VALUES (?{', ?' * len(_LISTING_ROW)})"
)
_INSERT_LISTING_FTS = (
    f"INSERT INTO listing_fts(rowid, {', '.join(SEARCHABLE_LISTING_FIELDS)}) "
    f"VALUES (?{', ?' * len(SEARCHABLE_LISTING_FIELDS)})"
)
_INSERT_PROFILE_FTS = (
    f"INSERT INTO profile_fts(rowid, {', '.join(SEARCHABLE_PROFILE_FIELDS)}) "
    f"VALUES (?{', ?' * len(SEARCHABLE_PROFILE_FIELDS)})"
)


class StaleUpdate(RuntimeError):
    """A prepared update refused: one of its listings was written after it was read."""


@dataclass
class PreparedUpdate:
    """An update of listings decided on a read of the catalogue (:meth:`SQLiteWrites.prepare_update`), not yet
    written: its rows, its changes, and the version of each listing it read (row id, ``updatedAt``, the document's
    length in bytes)."""

    batch: ListingBatch
    changes: list[CatalogueChange] = field(default_factory=list)
    read: list[tuple[int, str, int]] = field(default_factory=list)


class SQLiteWrites(SQLiteCatalogueBase):
    """Writes to the catalogue: each in one transaction that raises the generation; listeners hear after commit."""

    @contextmanager
    def many_writes(self) -> Iterator[None]:
        """For a long run of writes by this thread (a simulation's days): the log (WAL) is copied into the file
        every :data:`MANY_WRITES_CHECKPOINT_PAGES` pages written rather than SQLite's 1,000 (each write of
        hundreds of listings passes those, and the copy syncs the file), and once at the end. A page written again
        before the copy (an index's, a reused page of a document) is copied once. The pages a rewrite frees (a
        24 KB document's, replaced) are not overwritten with zeros (``secure_delete``, on in Debian's SQLite): each
        would be one more page logged and copied, for a catalogue of public listings (at 50,000 listings, 9 %
        less time and a fifth less system time)."""
        db = self._db()
        db.execute(f"PRAGMA wal_autocheckpoint={MANY_WRITES_CHECKPOINT_PAGES}")
        secure_delete = int(db.execute("PRAGMA secure_delete").fetchone()[0])
        db.execute("PRAGMA secure_delete=OFF")
        try:
            yield
        finally:
            db.execute(f"PRAGMA secure_delete={secure_delete}")
            db.execute("PRAGMA wal_autocheckpoint=1000")
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def upsert_listings(
        self, records: Iterable[dict[str, Any]], as_stored: bool = False, at: float | None = None
    ) -> list[CatalogueChange]:
        """``as_stored``: the records are documents another store completed (a replica's copy of PostgreSQL's),
        stored as they are. ``at``: the time of the write (a simulated one's), now when None."""
        changes: list[CatalogueChange] = []
        records = _last_of_each(records, listing_key)
        now = None if as_stored else (time.time() if at is None else at)
        with self._transaction() as db:
            batch = ListingBatch(keep_before=before_wanted(self.listeners))
            for record in records:
                changes.append(self._add_listing(db, record, batch, now))
            self._finish_listings(db, batch)
        self._notify(changes)
        return changes

    def update_listings(self, ids: Sequence[str], update: Update, at: float | None = None) -> list[CatalogueChange]:
        """A read-modify-write of the listings ``ids`` (in that order; those not stored are skipped), in one
        transaction: ``update(listing_id, document)`` is given each stored document, read and parsed once, and
        what it answers (None: left as it is) is written as :meth:`upsert_listings` writes it at ``at``, with the
        same history, changes and events. The answer may share with the document what did not change (it must
        not change the document itself): what it shares is known to be unchanged without being compared."""
        now = time.time() if at is None else at
        with self._transaction() as db:
            prepared = self._prepare(db, ids, update, now, before_wanted(self.listeners))
            if prepared.changes:
                self._finish_listings(db, prepared.batch)
        return self._notify(prepared.changes) if prepared.changes else []

    def prepare_update(
        self, ids: Sequence[str], update: Update, at: float, keep_before: bool = False
    ) -> PreparedUpdate:
        """What :meth:`update_listings` would write, decided on reads of the catalogue and not written: given to
        :meth:`apply_update` (in this process or another's store of the same file). ``keep_before``: whether the
        changes carry the documents they replace (as they do for a store whose listeners want them).

        Each statement reads on its own, not all in one read transaction: a reader that holds one while writes go on
        keeps the log (WAL) from being copied into the file and started again, and the log grows by each write.
        What was read of a listing is the same all along unless the listing was written meanwhile, and then
        :meth:`apply_update` refuses the update (a write by a simulation always moves a listing's ``updatedAt``;
        another writer's, an import's, moves it or its document's length, or waits: it holds the data directory's
        lock a simulation holds)."""
        if self._bulk:  # a bulk load rewrites a listing by deleting and adding its rows, not by comparing them
            raise RuntimeError("an update cannot be prepared during a bulk load")
        return self._prepare(self._db(), ids, update, at, keep_before)

    def apply_update(self, prepared: PreparedUpdate) -> list[CatalogueChange]:
        """A prepared update written in one transaction, with its history, changes and events; refused
        (:class:`StaleUpdate`, nothing written) when one of its listings is not as it was read: its ``updatedAt``
        or its document's length changed (a length read from the record's header, not the document)."""
        if not prepared.changes:
            return []
        with self._transaction() as db:
            for some in batched(prepared.read, READ_BATCH):
                marks = ", ".join("?" * len(some))
                stored = {
                    rowid: (updated, size)
                    for rowid, updated, size in db.execute(
                        "SELECT l.id, l.updated_at, length(d.doc) FROM listings l JOIN listing_docs d ON d.id = l.id "
                        f"WHERE l.id IN ({marks})",
                        [version[0] for version in some],
                    )
                }
                if any(stored.get(rowid) != (updated, size) for rowid, updated, size in some):
                    raise StaleUpdate("a listing of this update was written after it was read; nothing was written")
            self._finish_listings(db, prepared.batch)
        return self._notify(prepared.changes)

    def _prepare(
        self, db: sqlite3.Connection, ids: Sequence[str], update: Update, now: float, keep_before: bool
    ) -> PreparedUpdate:
        prepared = PreparedUpdate(ListingBatch(keep_before=keep_before))
        for some in batched(list(dict.fromkeys(ids)), READ_BATCH):
            marks = ", ".join("?" * len(some))
            rows = {
                listing_id: (rowid, blob, updated)
                for rowid, listing_id, updated, blob in db.execute(
                    "SELECT l.id, l.listing_id, l.updated_at, d.doc FROM listings l "
                    f"JOIN listing_docs d ON d.id = l.id WHERE l.listing_id IN ({marks})",
                    some,
                )
            }
            for listing_id in some:
                if (row := rows.get(listing_id)) is None:
                    continue
                rowid, blob, updated = row
                old = decode_document(blob)
                record = update(listing_id, old)
                if record is not None:
                    if listing_key(record) != listing_id:
                        raise ValueError(f"an update of {listing_id} answered another listing")
                    change = self._add_listing(db, record, prepared.batch, now, ((rowid, blob), old))
                    prepared.changes.append(change)
                    prepared.read.append((rowid, updated, len(blob)))
        return prepared

    def _finish_listings(self, db: sqlite3.Connection, batch: ListingBatch) -> None:
        """A batch's rows written, its profiles' provinces counted again, the generation raised."""
        batch.run_statements(db)
        self._insert_listing_rows(db, batch)
        if self._bulk and not batch.replaced:
            # Only listings added: their provinces are added to their profiles' without the dropped indexes.
            db.executemany(
                "INSERT OR IGNORE INTO profile_provinces(province, profile) SELECT ?, id FROM profiles "
                "WHERE path_key = ?",
                sorted(batch.province_pairs),
            )
        else:
            self._refresh_profile_provinces(db, batch.touched_profiles)
        generation = self._read_generation() + 1  # the one this write raises (read on this thread's connection, db)
        db.executemany(
            "INSERT OR REPLACE INTO listing_writes VALUES (?, ?)",
            [(row[0], generation) for row in batch.existing.values() if row is not None],
        )
        self._bump_generation(db)

    def _add_listing(
        self,
        db: sqlite3.Connection,
        record: dict[str, Any],
        batch: ListingBatch,
        now: float | None,
        stored: tuple[tuple[int, bytes], dict[str, Any]] | None = None,
        rowid: int | None = None,
    ) -> CatalogueChange:
        """Writes one listing's row (replacing the stored one's rows) and gathers the rest of its rows in ``batch``;
        completed as of ``now`` (None: stored as it is). ``stored``: its stored row and document, already read.
        ``rowid``: the row id a new listing takes (one a forked copy made its rows for: :meth:`add_new_listings`)."""
        listing_id, record = as_stored_listing(record)
        row, old = stored if stored is not None else self._stored_listing(db, listing_id, batch)
        if row is not None:
            batch.replaced = True
        changed: list[dict[str, Any]] | None = None
        if now is not None:
            record = complete_listing(record, old, now)
            if self._recording:
                changed = listing_changes(old, record, iso_time(now))
                batch.history += history_rows(changed, province_of(record.get("state")))
        before = row[1] if row is not None and batch.keep_before else None
        if row is not None and old is not None and not self._bulk:
            batch.existing[listing_id] = (row[0], rewrite_in_place(db, row[0], old, record, batch))
            return CatalogueChange("listing", "updated", listing_id, changed, before)
        if row is not None:
            batch.touched_profiles.update(indexed_reference_keys(old))
            self._delete_listing_rows(db, row[0])
        else:
            batch.created.append(listing_id)
        lat, lng = geo_point(record)
        columns = [listing_id, *listing_columns(record, lat, lng, batch.labels)]
        if rowid is None:
            rowid = db.execute(_INSERT_LISTING, columns).lastrowid
            assert rowid is not None
        else:
            db.execute(_INSERT_LISTING_AT, [rowid, *columns])
        document = encode_document(record)
        batch.docs.append((rowid, document))
        batch.existing[listing_id] = (rowid, document)
        if batch.index_rows_until is None or rowid <= batch.index_rows_until:
            batch.add(record, rowid)
        else:  # its index rows are made elsewhere (add_new_listings)
            batch.touched_profiles.update(indexed_reference_keys(record))
        batch.fts_rows.append((rowid, *searchable_text(record, SEARCHABLE_LISTING_FIELDS)))
        if lat is not None and lng is not None:
            batch.geo_rows.append((rowid, lat, lat, lng, lng))
        batch.province_pairs.update(province_pairs(record))
        return CatalogueChange("listing", "updated" if row else "created", listing_id, changed, before)

    @staticmethod
    def _stored_listing(
        db: sqlite3.Connection, listing_id: str, batch: ListingBatch
    ) -> tuple[tuple[int, bytes] | None, dict[str, Any] | None]:
        """A listing's stored row (row id, document bytes) as this batch leaves it, and its document."""
        if listing_id not in batch.existing:
            batch.existing[listing_id] = db.execute(_SELECT_LISTING_DOC, (listing_id,)).fetchone()
        row = batch.existing[listing_id]
        return row, None if row is None else decode_document(row[1])

    @staticmethod
    def _insert_listing_rows(db: sqlite3.Connection, batch: ListingBatch) -> None:
        db.executemany("DELETE FROM deleted_listings WHERE listing_id = ?", [(i,) for i in batch.created])
        db.executemany("INSERT INTO listing_docs VALUES (?, ?)", batch.docs)
        db.executemany("INSERT INTO listing_terms VALUES (?, ?, ?)", sorted(batch.terms))
        db.executemany("INSERT INTO listing_numbers VALUES (?, ?, ?)", sorted(batch.numbers))
        db.executemany(_INSERT_LISTING_FTS, batch.fts_rows)
        db.executemany("INSERT INTO listing_geo VALUES (?, ?, ?, ?, ?)", batch.geo_rows)
        db.executemany("INSERT INTO listing_plans VALUES (?, ?)", batch.plans)
        db.executemany("INSERT INTO listing_plan_values VALUES (?, ?, ?, ?, ?, ?)", batch.plan_values)
        db.executemany("INSERT INTO listing_plan_units VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", batch.plan_units)
        db.executemany("INSERT INTO plan_ids VALUES (?, ?)", sorted(batch.plan_ids))
        insert_values(db, batch.values)
        db.executemany(INSERT_HISTORY, batch.history)
        db.executemany(
            "INSERT OR IGNORE INTO labels VALUES (?, ?, ?)",
            [(a, t, lbl) for (a, t), lbl in batch.labels.items()],
        )
        db.executemany("INSERT OR IGNORE INTO listing_attributes VALUES (?)", [(n,) for n in batch.attribute_names])

    @staticmethod
    def _delete_listing_rows(db: sqlite3.Connection, rowid: int) -> None:
        db.execute("DELETE FROM listings WHERE id = ?", (rowid,))
        db.execute("DELETE FROM listing_docs WHERE id = ?", (rowid,))
        db.execute("DELETE FROM listing_terms WHERE listing = ?", (rowid,))
        db.execute("DELETE FROM listing_numbers WHERE listing = ?", (rowid,))
        db.execute("DELETE FROM listing_fts WHERE rowid = ?", (rowid,))
        db.execute("DELETE FROM listing_geo WHERE id = ?", (rowid,))
        db.execute("DELETE FROM plan_ids WHERE listing = ?", (rowid,))
        db.execute(DELETE_LISTING_VALUES, (rowid,))
        db.execute("DELETE FROM listing_writes WHERE id = ?", (rowid,))
        delete_plan_rows(db, rowid)

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """The writes made inside (by this thread) are one transaction: all of them are committed or none is, and
        the listeners hear of them once, after the commit (a mirror run's differences). Nested: part of the outer."""
        if getattr(self._atomic, "pending", None) is not None:
            yield
            return
        pending: list[CatalogueChange] = []
        self._atomic.pending = pending
        try:
            with self._transaction():
                yield
        finally:
            self._atomic.pending = None
        if pending:
            notify_listeners(self.listeners, pending)

    def _notify(self, changes: list[CatalogueChange]) -> list[CatalogueChange]:
        pending: list[CatalogueChange] | None = getattr(self._atomic, "pending", None)
        if pending is not None:  # inside atomic(): heard of after its commit
            pending.extend(changes)
            return changes
        return notify_listeners(self.listeners, changes)

    def delete_listing(
        self, listing_id: str, at: float | None = None, as_stored: bool = False
    ) -> list[CatalogueChange]:
        """``as_stored``: another store's delete, applied to a replica's copy of it (whose history is the other
        store's, copied: none is recorded here)."""
        with self._transaction() as db:
            row = db.execute(_SELECT_LISTING_DOC, (listing_id,)).fetchone()
            if row is None:
                return []
            old = decode_document(row[1])
            touched = indexed_reference_keys(old)
            self._delete_listing_rows(db, row[0])
            # What it last was: a changes feed filtered after it went still judges it on that.
            db.execute(
                "INSERT OR REPLACE INTO deleted_listings VALUES (?, ?, ?)",
                (listing_id, province_of(old.get("state")), row[1]),
            )
            if self._recording and not as_stored:
                gone = listing_changes(old, None, iso_time(time.time() if at is None else at))
                db.executemany(INSERT_HISTORY, history_rows(gone, province_of(old.get("state"))))
            db.execute("DELETE FROM listing_views WHERE listing_id = ?", (listing_id,))
            self._refresh_profile_provinces(db, touched)
            self._bump_generation(db)
        before = row[1] if before_wanted(self.listeners) else None
        return self._notify([CatalogueChange("listing", "deleted", listing_id, before=before)])

    def upsert_profiles(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]:
        changes = []
        touched: set[str] = set()
        added: set[str] = set()
        records = _last_of_each(records, lambda r: str(r.get("path") or "").strip())
        with self._transaction() as db:
            fts_rows = []
            for record in records:
                profile = stored_profile(record)
                path = profile.path
                row = db.execute("SELECT id FROM profiles WHERE path = ?", (path,)).fetchone()
                if row is not None:
                    db.execute("DELETE FROM profiles WHERE id = ?", (row[0],))
                    db.execute("DELETE FROM profile_fts WHERE rowid = ?", (row[0],))
                else:
                    added.add(fold_text(path))
                # A rewrite keeps the profile's rowid: its profile_provinces rows stay its own (and are replaced
                # below), never orphans beside a new row.
                rowid = db.execute(
                    "INSERT INTO profiles(id, profile_id, collection, path, path_key, name_key, listing_count, doc) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (row[0] if row is not None else None, *profile.columns(), encode_document(profile.record)),
                ).lastrowid
                fts_rows.append((rowid, *searchable_text(profile.record, SEARCHABLE_PROFILE_FIELDS)))
                touched.add(fold_text(path))
                changes.append(CatalogueChange("profile", "updated" if row else "created", path))
            db.executemany(_INSERT_PROFILE_FTS, fts_rows)
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
        without its provinces. A few profiles (a write of some listings) are counted one by one, each through the
        terms index; many (a bulk load) in one statement over a table of them."""
        if not path_keys:
            return
        reference_attrs = sorted(set(LISTING_REFERENCE_FIELDS.values()))
        attr_marks = ", ".join("?" * len(reference_attrs))
        if len(path_keys) <= ONE_BY_ONE_MOST:
            for key in sorted(path_keys):
                mine = "SELECT id FROM profiles WHERE path_key = ?"
                db.execute(f"DELETE FROM profile_provinces WHERE profile IN ({mine})", (key,))
                counts = db.execute(
                    "SELECT l.province, count(DISTINCT l.id) FROM listing_terms lt "
                    f"JOIN listings l ON l.id = lt.listing WHERE lt.attr IN ({attr_marks}) AND lt.term = ? "
                    "AND l.province IS NOT NULL GROUP BY l.province",
                    [*reference_attrs, key],
                ).fetchall()
                db.executemany(
                    "INSERT OR IGNORE INTO profile_provinces(province, profile, listings) "
                    "SELECT ?, id, ? FROM profiles WHERE path_key = ?",
                    [(province, count, key) for province, count in counts],
                )
            return
        db.execute("CREATE TEMP TABLE IF NOT EXISTS touched_profiles(path_key TEXT PRIMARY KEY)")
        db.execute("DELETE FROM touched_profiles")
        db.executemany("INSERT OR IGNORE INTO touched_profiles VALUES (?)", [(k,) for k in path_keys])
        # CROSS JOIN keeps the order written: the touched profiles first (the planner has no statistics of them).
        db.execute(
            "DELETE FROM profile_provinces WHERE profile IN "
            "(SELECT p.id FROM touched_profiles t CROSS JOIN profiles p ON t.path_key = p.path_key)"
        )
        db.execute(
            "INSERT OR IGNORE INTO profile_provinces(province, profile, listings) "
            "SELECT l.province, p.id, count(DISTINCT l.id) FROM touched_profiles t "
            "JOIN profiles p ON p.path_key = t.path_key "
            f"JOIN listing_terms lt ON lt.term = t.path_key AND lt.attr IN ({attr_marks}) "
            "JOIN listings l ON l.id = lt.listing WHERE l.province IS NOT NULL GROUP BY l.province, p.id",
            reference_attrs,
        )

    def copy_position(self) -> tuple[str, int] | None:
        """Where this file, a replica's copy, stands: (the source it copies, the source's generation it holds), or
        None when it copies nothing yet."""
        rows = dict(self._db().execute("SELECT key, value FROM meta WHERE key IN ('copy_source', 'copy_generation')"))
        if "copy_source" not in rows:
            return None
        return rows["copy_source"], int(rows.get("copy_generation", 0))

    def apply_copy(
        self,
        source: str,
        generation: int,
        listings: dict[str, dict[str, Any] | None],
        profiles: dict[str, dict[str, Any] | None],
        history: Iterable[Sequence[HistoryRow]] = (),
    ) -> bool:
        """Makes this copy of ``source`` hold its catalogue at ``generation``, given what changed since the
        generation it holds (the documents by key, None for a record deleted) and the history the source recorded
        meanwhile (pages of rows, in its order), in one transaction that records the position reached: a process
        killed meanwhile leaves the copy as it was. Answers False when the copy already stood there (another
        process applied it). The copy records no history of its own: the source's is the history."""
        with self._transaction():
            position = self.copy_position()  # read in the transaction: another process may have applied it
            if position is None or position[0] != source:
                raise ValueError(f"{self.path} copies {position and position[0]!r}, not {source!r}")
            if position[1] >= generation:
                return False
            for listing_id, document in listings.items():
                if document is None:
                    self.delete_listing(listing_id, as_stored=True)
            for path, document in profiles.items():
                if document is None:
                    self.delete_profile(path)
            if written_profiles := [document for document in profiles.values() if document is not None]:
                self.upsert_profiles(written_profiles)
            if written_listings := [document for document in listings.values() if document is not None]:
                self.upsert_listings(written_listings, as_stored=True)
            for rows in history:
                self.copy_history(rows)
            self.mark_copy(source, generation)
        return True

    def copy_history(self, rows: Sequence[HistoryRow]) -> None:
        """Adds history rows recorded elsewhere after those held: a replica's copy of PostgreSQL's, or a new
        catalogue's simulated past (:func:`precon.service.stores.loading.load_past`)."""
        with self._transaction() as db:
            db.executemany(INSERT_HISTORY, rows)

    def copy_deleted(self, rows: Sequence[tuple[str, str | None, bytes]]) -> None:
        """Adds what deleted listings last were, as another store kept them (id, province, document bytes)."""
        with self._transaction() as db:
            db.executemany("INSERT OR REPLACE INTO deleted_listings VALUES (?, ?, ?)", rows)

    def mark_copy(self, source: str, generation: int) -> None:
        """Records that this file holds ``source``'s catalogue at ``generation`` (in the current transaction)."""
        with self._transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                [("copy_source", source), ("copy_generation", str(generation))],
            )
            self._bump_generation(db)

    def set_views(self, views: Iterable[tuple[str, float, int, float]]) -> None:
        """Sets the trending ranks of listings as the source's counts give them: (id, rank, views, last view)."""
        with self._transaction() as db:
            db.executemany(
                "INSERT OR REPLACE INTO listing_views(listing_id, rank, views, last_view) VALUES (?, ?, ?, ?)",
                list(views),
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
