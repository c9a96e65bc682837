"""What the PostgreSQL store reads: records by key, for writes, webhook events and the replicas' copies.

PostgreSQL answers no search: every question a client asks is answered by a replica's local SQLite copy
(:mod:`.replica`). What is read here is what those copies are made of (a consistent snapshot of every document, or
the documents the log names since a generation, with the history recorded up to it) and what a writing process
needs without a copy of its own (an import checks floor-plan ids; a webhook event carries the record and goes to the
keys of its provinces).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import psycopg

from precon.service.stores.history import HistoryRow
from precon.service.stores.postgres.catalogue_base import PostgresCatalogueBase, _document
from precon.service.stores.records import profile_lookup

SNAPSHOT_BATCH = 2000
"""Documents a snapshot hands over at a time."""
LOG_BATCH_MOST = 5000
"""The most records a catch-up reads from the log at once; past that, a copy is rebuilt from a snapshot."""
HISTORY_PAGE = 10_000
"""History rows read at a time: a write may record many more than the records it wrote (an entry per unit)."""
_SELECT_HISTORY = (
    "SELECT at, listing_id, province, scope, plan, unit, field, change, from_value, to_value FROM listing_history"
)


@dataclass
class LogBatch:
    """The catalogue at ``generation`` as a change from ``after``: the documents of every key written since (a key
    absent from ``listings`` or ``profiles`` was deleted), read in one snapshot, and the history the writes
    recorded, in pages in the order it was written."""

    after: int
    generation: int
    listings: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    profiles: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    history: Iterable[list[HistoryRow]] = ()
    """Read as it is iterated, past the first page: a batch of keys may hold far more rows than memory should."""

    def __len__(self) -> int:
        return len(self.listings) + len(self.profiles)


class RebuildCopy(Exception):
    """A copy is better rebuilt from a snapshot than patched from the log."""


class LogTrimmed(RebuildCopy):
    """The log no longer holds every entry after a copy's generation: the copy is rebuilt from a snapshot."""


class LogTooLong(RebuildCopy):
    """More records changed since a copy's generation than a batch holds in memory (a whole catalogue imported
    again, say): the copy is rebuilt from a snapshot, which streams."""


class PostgresDocuments(PostgresCatalogueBase):
    """Records by key, and the snapshots and log batches that replicas' copies are built and kept from."""

    def get_listings(self, ids: Sequence[str], province: str | None) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        with self.pool.connection() as db:
            return _listings_by_id(db, ids, province)

    def get_profiles(self, paths: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not paths:
            return {}
        with self.pool.connection() as db:
            return _profiles_by_path(db, paths)

    def find_profile(self, profile_id: str, collection: str | None, province: str | None) -> dict[str, Any] | None:
        """The profile with this id (in ``collection``), read in ``province`` when given: one of the listings
        referring to it is there."""
        in_province = (
            "EXISTS (SELECT 1 FROM listing_references r JOIN listings l ON l.id = r.listing "
            "WHERE r.path_key = p.path_key AND l.province = %s)"
        )
        sql, params = profile_lookup("p.doc::text", "%s", in_province, profile_id, collection, province)
        with self.pool.connection() as db:
            row = db.execute(sql, params).fetchone()
        return _document(row[0]) if row else None

    def listings_holding_plans(self, plan_ids: Iterable[str]) -> dict[str, list[str]]:
        """For each of ``plan_ids`` that a stored floor plan carries, the ids of the listings holding it."""
        wanted = sorted(set(plan_ids))
        holders: dict[str, list[str]] = {}
        if not wanted:
            return holders
        with self.pool.connection() as db:
            rows = db.execute(
                "SELECT p.plan_id, l.listing_id FROM plan_ids p JOIN listings l ON l.id = p.listing "
                "WHERE p.plan_id = ANY(%s) ORDER BY p.plan_id, l.listing_id",
                (wanted,),
            )
            for plan_id, listing_id in rows:
                holders.setdefault(plan_id, []).append(listing_id)
        return holders

    def listing_ids(self) -> list[str]:
        """Every stored listing's id, in order (what a simulation moves)."""
        with self.pool.connection() as db:
            return [str(row[0]) for row in db.execute("SELECT listing_id FROM listings ORDER BY listing_id")]

    def newest_change(self) -> str | None:
        """The time of the catalogue's newest history entry (None without history)."""
        with self.pool.connection() as db:
            row = db.execute("SELECT at FROM listing_history ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def counts(self) -> dict[str, int]:
        with self.pool.connection() as db:
            row = db.execute("SELECT (SELECT count(*) FROM listings), (SELECT count(*) FROM profiles)").fetchone()
        assert row is not None
        return {"listings": int(row[0]), "profiles": int(row[1])}

    # -- what a copy of another catalogue compares with (a mirror run) ---------------------------------------

    @contextmanager
    def _current(self) -> Iterator[psycopg.Connection[Any]]:
        """This thread's :meth:`atomic` transaction (what it wrote so far is read), else a connection of the pool."""
        if self._in_atomic():
            with self._write() as db:
                yield db
            return
        with self.pool.connection() as db:
            yield db

    def stored_keys(self, kind: Literal["listings", "profiles"]) -> list[str]:
        """The keys of every stored listing (its id) or profile (its path), in order."""
        sql = "SELECT listing_id FROM listings ORDER BY listing_id" if kind == "listings" else (
            "SELECT path FROM profiles ORDER BY path"
        )  # fmt: skip
        with self._current() as db:
            return [str(row[0]) for row in db.execute(sql)]

    def stored_documents(self, kind: Literal["listings", "profiles"], keys: Sequence[str]) -> dict[str, bytes]:
        """The stored documents, as stored (JSON bytes), of the listings or profiles ``keys`` that are stored."""
        sql = (
            "SELECT listing_id, doc::text FROM listings WHERE listing_id = ANY(%s)"
            if kind == "listings"
            else "SELECT path, doc::text FROM profiles WHERE path = ANY(%s)"
        )
        with self._current() as db:
            return {str(key): str(text).encode() for key, text in db.execute(sql, (list(keys),))}

    def meta_value(self, key: str) -> str | None:
        """A value the catalogue keeps about itself (``meta``), or None."""
        with self._current() as db:
            row = db.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta_value(self, key: str, value: str) -> None:
        """Keeps ``value`` under ``key`` (in this thread's :meth:`atomic` transaction, if it is in one)."""
        with self._write() as db:
            db.execute(
                "INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value)
            )

    # -- for the replicas' copies ------------------------------------------------------------------------------

    @staticmethod
    def _meta(db: psycopg.Connection[Any], key: str) -> int:
        row = db.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return int(row[0]) if row else 0

    def read_log(self, after: int, most: int = LOG_BATCH_MOST) -> LogBatch:
        """The changes since generation ``after``, as one batch at the newest generation (PostgreSQL holds only the
        newest documents, so a batch cannot stop short of it without mixing two states). Raises
        :class:`LogTrimmed` when entries after ``after`` were trimmed, :class:`LogTooLong` when more than ``most``
        records changed."""
        with self._read() as db:
            newest = self._meta(db, "generation")
            batch = LogBatch(after, newest)
            if newest <= after:
                return batch
            if after < self._meta(db, "log_floor"):
                raise LogTrimmed(f"the log of {self.schema} starts past generation {after}")
            entries = db.execute(
                "SELECT DISTINCT kind, key FROM catalogue_log WHERE generation > %s", (after,)
            ).fetchall()
            if len(entries) > most:
                raise LogTooLong(f"{len(entries)} records of {self.schema} changed since generation {after}")
            listing_ids = sorted(str(key) for kind, key in entries if kind == "listing")
            paths = sorted(str(key) for kind, key in entries if kind == "profile")
            batch.listings = {**dict.fromkeys(listing_ids), **_listings_by_id(db, listing_ids, None)}
            batch.profiles = {**dict.fromkeys(paths), **_profiles_by_path(db, paths)}
            first, last = _history_page(db, (after, _LAST_SEQ), newest)
        batch.history = [first] if len(first) < HISTORY_PAGE else itertools.chain([first], self._history(last, newest))
        return batch

    def _history(self, since: tuple[int, int], newest: int) -> Iterator[list[HistoryRow]]:
        """The history rows after ``since`` (generation, seq) up to generation ``newest``, a page a transaction:
        the same rows one snapshot would read, since the rows of committed generations never change."""
        while True:
            with self._read() as db:
                rows, since = _history_page(db, since, newest)
            if rows:
                yield rows
            if len(rows) < HISTORY_PAGE:
                return

    def trim_log(self, keep_s: float) -> int:
        """Removes the log's entries older than ``keep_s`` seconds, whole generations at a time, and raises the
        floor past them (a copy below it rebuilds): how many entries went."""
        with self._write() as db:
            row = db.execute(
                "WITH gone AS (DELETE FROM catalogue_log WHERE logged_at < now() - make_interval(secs => %s) "
                "RETURNING generation) SELECT count(*), max(generation) FROM gone",
                (keep_s,),
            ).fetchone()
            assert row is not None
            if row[1] is not None:
                db.execute(
                    "UPDATE meta SET value = greatest(value::bigint, %s)::text WHERE key = 'log_floor'", (row[1],)
                )
        return int(row[0])

    @contextmanager
    def snapshot(self) -> Iterator[Snapshot]:
        """Every document at one generation, read in one repeatable-read transaction held while it is open."""
        with self._read() as db:
            yield Snapshot(db, self._meta(db, "generation"))


@dataclass
class Snapshot:
    """The catalogue at :attr:`generation`: its profiles, then its listings, in batches (a server-side cursor)."""

    db: psycopg.Connection[Any]
    generation: int

    def profiles(self) -> Iterator[list[dict[str, Any]]]:
        return self._documents("SELECT doc::text FROM profiles ORDER BY path")

    def listings(self) -> Iterator[list[dict[str, Any]]]:
        return self._documents("SELECT doc::text FROM listings ORDER BY listing_id")

    def deleted_listings(self) -> Iterator[list[tuple[str, str | None, bytes]]]:
        """What each deleted listing last was: (id, province, its document's JSON bytes)."""
        for rows in self._rows("SELECT listing_id, province, doc::text FROM deleted_listings", SNAPSHOT_BATCH):
            yield [(str(listing_id), province, text.encode()) for listing_id, province, text in rows]

    def history(self) -> Iterator[list[HistoryRow]]:
        """Every history row, in the order written (a copy rebuilt from the snapshot ends with PostgreSQL's)."""
        for rows in self._rows(_SELECT_HISTORY + " ORDER BY seq", HISTORY_PAGE):
            yield [tuple(row) for row in rows]

    def _documents(self, sql: str) -> Iterator[list[dict[str, Any]]]:
        for rows in self._rows(sql, SNAPSHOT_BATCH):
            yield [_document(text) for (text,) in rows]

    def _rows(self, sql: str, size: int) -> Iterator[list[tuple[Any, ...]]]:
        with self.db.cursor(name="precon_snapshot") as cursor:
            cursor.itersize = size
            cursor.execute(sql)  # one of the statements above
            while rows := cursor.fetchmany(size):
                yield rows


_LAST_SEQ = 2**63 - 1
"""The largest ``seq``: ``(after, _LAST_SEQ)`` comes after every row of generation ``after``."""


def _history_page(
    db: psycopg.Connection[Any], since: tuple[int, int], newest: int
) -> tuple[list[HistoryRow], tuple[int, int]]:
    """The rows after ``since`` (generation, seq), up to generation ``newest``: a page, and where it ends."""
    found = db.execute(
        "SELECT generation, seq, at, listing_id, province, scope, plan, unit, field, change, from_value, to_value "
        "FROM listing_history WHERE (generation, seq) > (%s, %s) AND generation <= %s ORDER BY generation, seq "
        "LIMIT %s",
        (*since, newest, HISTORY_PAGE),
    ).fetchall()
    if not found:
        return [], since
    return [tuple(row[2:]) for row in found], (found[-1][0], found[-1][1])


def _listings_by_id(db: psycopg.Connection[Any], ids: Sequence[str], province: str | None) -> dict[str, Any]:
    sql = "SELECT listing_id, doc::text FROM listings WHERE listing_id = ANY(%s)"
    params: list[Any] = [list(ids)]
    if province is not None:
        sql += " AND province = %s"
        params.append(province)
    return {str(listing_id): _document(text) for listing_id, text in db.execute(sql, params)}


def _profiles_by_path(db: psycopg.Connection[Any], paths: Sequence[str]) -> dict[str, Any]:
    rows = db.execute("SELECT path, doc::text FROM profiles WHERE path = ANY(%s)", (list(paths),))
    return {str(path): _document(text) for path, text in rows}
