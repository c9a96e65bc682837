"""The write path of the PostgreSQL store: records in, one transaction a write, each logged for the replicas.

:class:`PostgresWrites` is the part of :class:`~precon.service.stores.postgres.store.PostgresCatalogueStore` that
changes the catalogue: listing upserts (a new listing copied in with ``COPY``; a stored one updated in place, under
its id, with only the rows of the plans and references it gained or lost written), profile upserts, deletes (a
listing's other rows go with it: ``ON DELETE CASCADE``), recorded views. PostgreSQL keeps each record's document and
what writes themselves need (a listing's province, its floor plans' ids, the profiles it refers to); every question
is answered by a replica's local copy (:mod:`.replica`), which each write's entries in ``catalogue_log`` keep
current. How a record is completed and stored is the SQLite store's (:mod:`precon.service.stores.records`), and so
is what a write changed in a listing (:mod:`precon.service.stores.history`): recorded in ``listing_history`` in the
write's transaction, under the generation it raised, whence the copies take it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Literal

import psycopg

from precon.service.search.plans import floor_plans
from precon.service.stores.derived import complete_listing
from precon.service.stores.history import HistoryRow, history_rows, iso_time, listing_changes
from precon.service.stores.postgres.catalogue_base import PostgresCatalogueBase, _document, _json
from precon.service.stores.records import (
    _last_of_each,
    as_stored_listing,
    indexed_reference_keys,
    listing_key,
    province_of,
    stored_profile,
)
from precon.service.stores.types import TRENDING_DECAY_PER_S, TRENDING_EPOCH_S, CatalogueChange, before_wanted

_COPY_LISTINGS = "COPY listings(id, listing_id, province, doc) FROM STDIN"
_COPY_HISTORY = (
    "COPY listing_history(generation, at, listing_id, province, scope, plan, unit, field, change, from_value, "
    "to_value) FROM STDIN"
)


class PostgresWrites(PostgresCatalogueBase):
    """Writes to the catalogue: each in one write transaction that raises the generation and logs its keys;
    listeners hear after commit (after the :meth:`atomic` block's, in one)."""

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """For loading a whole catalogue: statistics are gathered once at the end (of :meth:`atomic` when in one)."""
        yield
        with self._write() as connection:
            connection.execute("ANALYZE")

    def upsert_listings(self, records: Iterable[dict[str, Any]], at: float | None = None) -> list[CatalogueChange]:
        """``at``: the time of the write (a simulated one's), now when None: the listings are completed as of it
        and what changed in each is recorded at it, in the write's transaction."""
        changes: list[CatalogueChange] = []
        batch = [as_stored_listing(record) for record in _last_of_each(records, listing_key)]
        if not batch:
            return self._notify(changes)
        now = time.time() if at is None else at
        with self._write() as db:
            keep_before = self._wants_before()
            texts: dict[str, str] = {}
            existing = {
                listing_id: (rowid, _document(texts.setdefault(listing_id, text) if keep_before else text))
                for listing_id, rowid, text in db.execute(
                    "SELECT listing_id, id, doc::text FROM listings WHERE listing_id = ANY(%s)",
                    ([listing_id for listing_id, _ in batch],),
                )
            }
            ids = self._row_ids(db, [listing_id for listing_id, _ in batch], existing)
            inserted: list[tuple[int, str, str | None, str]] = []
            updated: list[tuple[int, str | None, str]] = []
            keys = _KeyRows()
            history: list[HistoryRow] = []
            for listing_id, record in batch:
                rowid = ids[listing_id]
                found = existing.get(listing_id)
                old = None if found is None else found[1]
                stored = complete_listing(record, old, now)
                province = province_of(stored.get("state"))
                if old is None:
                    inserted.append((rowid, listing_id, province, _json(stored)))
                else:
                    updated.append((rowid, province, _json(stored)))
                keys.compare(rowid, old, stored)
                entries = listing_changes(old, stored, iso_time(now))
                history += history_rows(entries, province)
                before = texts[listing_id].encode() if listing_id in texts else None
                action: Literal["created", "updated"] = "created" if old is None else "updated"
                changes.append(CatalogueChange("listing", action, listing_id, entries, before))
            _write_listings(db, inserted, updated)
            keys.write(db)
            _record_history(db, self._bump_generation(db, changes), history)
        return self._notify(changes)

    @staticmethod
    def _row_ids(
        db: psycopg.Connection[Any], listing_ids: list[str], existing: dict[str, tuple[int, Any]]
    ) -> dict[str, int]:
        """Each listing's row id: a stored listing keeps its own (and the rows of its plans and references that it
        still has); a new one takes the next (and is no longer among the deleted)."""
        created = [listing_id for listing_id in listing_ids if listing_id not in existing]
        if created:
            db.execute("DELETE FROM deleted_listings WHERE listing_id = ANY(%s)", (created,))
        new_ids = [
            int(r[0])
            for r in db.execute(
                "SELECT nextval(pg_get_serial_sequence('listings', 'id')) FROM generate_series(1, %s)", (len(created),)
            )
        ]
        return {listing_id: rowid for listing_id, (rowid, _) in existing.items()} | dict(
            zip(created, new_ids, strict=True)
        )

    def _wants_before(self) -> bool:
        """Whether a listener, or the journal's reader, wants each change's earlier document."""
        return before_wanted([*self.listeners, *([self.journal] if self.journal is not None else [])])

    def delete_listing(self, listing_id: str, at: float | None = None) -> list[CatalogueChange]:
        """``at``: the time of the write (a simulated one's), now when None; the listing's ``deleted`` entry keeps
        the province it stood in, where a key may still read its history."""
        now = time.time() if at is None else at
        with self._write() as db:
            row = db.execute(
                "DELETE FROM listings WHERE listing_id = %s RETURNING province, doc::text", (listing_id,)
            ).fetchone()
            if row is None:
                return []
            db.execute(
                "INSERT INTO deleted_listings VALUES (%s, %s, %s::json) ON CONFLICT (listing_id) DO UPDATE "
                "SET province = excluded.province, doc = excluded.doc",
                (listing_id, row[0], row[1]),
            )
            entries = listing_changes(_document(row[1]), None, iso_time(now))
            before = row[1].encode() if self._wants_before() else None
            changes = [CatalogueChange("listing", "deleted", listing_id, entries, before)]
            db.execute("DELETE FROM listing_views WHERE listing_id = %s", (listing_id,))
            _record_history(db, self._bump_generation(db, changes), history_rows(entries, row[0]))
        return self._notify(changes)

    def upsert_profiles(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]:
        changes: list[CatalogueChange] = []
        latest = _last_of_each(records, lambda r: str(r.get("path") or "").strip())
        batch = [stored_profile(record) for record in latest]
        if not batch:
            return self._notify(changes)
        with self._write() as db:
            paths = [profile.path for profile in batch]
            known = {row[0] for row in db.execute("SELECT path FROM profiles WHERE path = ANY(%s)", (paths,))}
            with db.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO profiles(profile_id, collection, path, path_key, doc) VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (path) DO UPDATE SET profile_id = excluded.profile_id, "
                    "collection = excluded.collection, path_key = excluded.path_key, doc = excluded.doc",
                    [(*profile.columns()[:4], _json(profile.record)) for profile in batch],
                )
            changes = [
                CatalogueChange("profile", "updated" if profile.path in known else "created", profile.path)
                for profile in batch
            ]
            self._bump_generation(db, changes)
        return self._notify(changes)

    def delete_profile(self, path: str) -> list[CatalogueChange]:
        changes = [CatalogueChange("profile", "deleted", path)]
        with self._write() as db:
            if db.execute("DELETE FROM profiles WHERE path = %s RETURNING id", (path,)).fetchone() is None:
                return []
            self._bump_generation(db, changes)
        return self._notify(changes)

    def record_view(self, listing_id: str, at: float | None = None) -> None:
        """Counts one view of a listing in its trending rank: a sum of views, each decayed by its age."""
        now = time.time() if at is None else at
        self.add_views({listing_id: (TRENDING_DECAY_PER_S * (now - TRENDING_EPOCH_S), 1, now)})

    def add_views(self, views: dict[str, tuple[float, int, float]]) -> None:
        """Adds batches of views to the listings' trending ranks in one statement: per listing id, the batch's
        rank (the log of its decayed views' sum: :func:`combined_rank`), its number of views and its last one."""
        if not views:
            return
        rows = sorted((listing_id, rank, count, last) for listing_id, (rank, count, last) in views.items())
        # ln(1 + e^-d) is 0 in doubles long before exp() underflows (which PostgreSQL reports as an error).
        with self.pool.connection() as db, db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO listing_views AS v(listing_id, rank, views, last_view, touched_at) "
                "VALUES (%s, %s, %s, %s, extract(epoch from clock_timestamp())) "
                "ON CONFLICT(listing_id) DO UPDATE SET "
                "rank = greatest(v.rank, excluded.rank) + CASE WHEN abs(v.rank - excluded.rank) > 700 THEN 0 "
                "ELSE ln(1 + exp(-abs(v.rank - excluded.rank))) END, "
                "views = v.views + excluded.views, last_view = greatest(v.last_view, excluded.last_view), "
                "touched_at = excluded.touched_at",
                rows,
            )

    def views_since(self, since: float) -> tuple[float, list[tuple[str, float, int, float]]]:
        """The view counts changed at or after ``since`` (the database's clock), with that clock's reading now."""
        with self.pool.connection() as db:
            row = db.execute("SELECT extract(epoch from clock_timestamp())::float8").fetchone()
            assert row is not None
            found = db.execute(
                "SELECT listing_id, rank, views, last_view FROM listing_views WHERE touched_at >= %s", (since,)
            ).fetchall()
        return float(row[0]), [(str(r[0]), float(r[1]), int(r[2]), float(r[3])) for r in found]


def _write_listings(
    db: psycopg.Connection[Any],
    inserted: list[tuple[int, str, str | None, str]],
    updated: list[tuple[int, str | None, str]],
) -> None:
    """New listings copied in; stored ones updated in place, under their ids, in one statement."""
    if inserted:
        with db.cursor() as cursor, cursor.copy(_COPY_LISTINGS) as copy:
            for row in inserted:
                copy.write_row(row)
    if updated:
        db.execute(
            "UPDATE listings l SET province = u.province, doc = u.doc::json "
            "FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS u(id, province, doc) WHERE l.id = u.id",
            ([row[0] for row in updated], [row[1] for row in updated], [row[2] for row in updated]),
        )


class _KeyRows:
    """The rows of ``plan_ids`` and ``listing_references`` a batch adds and removes: those of what a listing holds
    now and did not before, and of what it held and no longer does (the rows it keeps are left as they are)."""

    def __init__(self) -> None:
        self.added: dict[str, set[tuple[str, int]]] = {"plan_ids": set(), "listing_references": set()}
        self.removed: dict[str, set[tuple[str, int]]] = {"plan_ids": set(), "listing_references": set()}

    def compare(self, rowid: int, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        for table, before, after in (
            ("plan_ids", _plan_ids(old, rowid), _plan_ids(new, rowid)),
            ("listing_references", _references(old, rowid), _references(new, rowid)),
        ):
            self.added[table] |= after - before
            self.removed[table] |= before - after

    def write(self, db: psycopg.Connection[Any]) -> None:
        for table, key in (("plan_ids", "plan_id"), ("listing_references", "path_key")):  # fixed names
            if gone := sorted(self.removed[table]):
                db.execute(
                    f"DELETE FROM {table} t USING unnest(%s::text[], %s::bigint[]) AS g(k, l) "
                    f"WHERE t.{key} = g.k AND t.listing = g.l",
                    ([k for k, _ in gone], [listing for _, listing in gone]),
                )
            if new := sorted(self.added[table]):
                with db.cursor() as cursor, cursor.copy(f"COPY {table}({key}, listing) FROM STDIN") as copy:
                    for row in new:
                        copy.write_row(row)


def _plan_ids(doc: dict[str, Any] | None, rowid: int) -> set[tuple[str, int]]:
    if doc is None:
        return set()
    return {(plan["id"], rowid) for plan in floor_plans(doc) if isinstance(plan.get("id"), str)}


def _references(doc: dict[str, Any] | None, rowid: int) -> set[tuple[str, int]]:
    return set() if doc is None else {(key, rowid) for key in indexed_reference_keys(doc)}


def _record_history(db: psycopg.Connection[Any], generation: int, rows: list[HistoryRow]) -> None:
    """Stores a write's history under the generation it raised: the replicas' copies read it back by generation
    (an import of a whole catalogue records an entry a listing: ``COPY``, not a statement each)."""
    if not rows:
        return
    with db.cursor() as cursor, cursor.copy(_COPY_HISTORY) as copy:
        for row in rows:
            copy.write_row((generation, *row))


def combined_rank(ranks: Iterable[float]) -> float:
    """The trending rank of several views together: the log of the sum of their decayed weights."""
    values = list(ranks)
    top = max(values)
    return top + math.log(sum(math.exp(value - top) for value in values))
