"""The SQLite store's history: the entries its writes record (:mod:`.writes`), read back newest first, and what a
simulation needs of them (the newest change, entries of a simulated past written in bulk)."""

from __future__ import annotations

import sqlite3
import threading
from typing import Any

import orjson

from precon.schema import SEARCHABLE_LISTING_FIELDS
from precon.service.search.documents import DocumentFilter
from precon.service.stores.history import entry_of
from precon.service.stores.records import decode_document
from precon.service.stores.sqlite.catalogue import SQLiteCatalogueBase
from precon.service.stores.sqlite.history_columns import COLUMNS_VERSION, HistoryColumns
from precon.service.stores.types import HistoryPage, HistoryQuery, ListingQuery

_ENTRY_COLUMNS = "at, listing_id, province, scope, plan, unit, field, change, from_value, to_value"
INSERT_HISTORY = (
    "INSERT INTO listing_history(at, listing_id, province, scope, plan, unit, field, change, from_value, to_value) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class SQLiteHistory(SQLiteCatalogueBase):
    """Reading the catalogue's history, and writing a simulated past's."""

    _history_lock: threading.Lock
    _history_held: tuple[int, HistoryColumns] | None

    def listing_history(self, query: HistoryQuery) -> HistoryPage:
        """A page of history entries, newest first, and the provinces the listing stood in."""
        if query.listing_id is None and (page := self._catalogue_history(query)) is not None:
            return page
        return self._sql_history(query)

    def _sql_history(self, query: HistoryQuery) -> HistoryPage:
        where, params = _history_where(query)
        with self._reading() as db:
            total = db.execute(f"SELECT count(*) FROM listing_history WHERE {where}", params).fetchone()[0]
            rows = db.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM listing_history WHERE {where} ORDER BY seq DESC LIMIT ? OFFSET ?",
                [*params, query.limit, query.offset],
            ).fetchall()
            provinces: set[str | None] = set()
            if query.listing_id is not None:
                held = db.execute(
                    "SELECT DISTINCT province FROM listing_history WHERE listing_id = ?", [query.listing_id]
                )
                provinces = {row[0] for row in held}
        return HistoryPage(total, [entry_of(row) for row in rows], provinces)

    def _catalogue_history(self, query: HistoryQuery) -> HistoryPage | None:
        """A page of the catalogue's entries, chosen over the history's columns (None where they cannot be read:
        SQL answers)."""
        with self._reading() as db:
            columns = self._history_columns(db)
            if columns is None:
                return None
            total, seqs = columns.matching(query)
            return self._entries_page(db, total, seqs)

    @staticmethod
    def _entries_page(db: sqlite3.Connection, total: int, seqs: list[int]) -> HistoryPage:
        """The page of the entries numbered ``seqs``, newest first, of ``total`` that matched."""
        rows = []
        if seqs:
            rows = db.execute(
                f"SELECT {_ENTRY_COLUMNS} FROM listing_history WHERE seq IN ({', '.join('?' * len(seqs))}) "
                "ORDER BY seq DESC",
                seqs,
            ).fetchall()
        return HistoryPage(total, [entry_of(row) for row in rows], set())

    def _history_columns(self, db: sqlite3.Connection) -> HistoryColumns | None:
        """The history's columns as of this generation (the entries written since the last ones read appended)."""
        generation = self.generation()
        with self._history_lock:
            held = self._history_held
            if held is not None and held[0] == generation:
                return held[1]
            start = HistoryColumns() if held is None else held[1]
            if held is None and self._shared is not None:
                start = self._shared_history(db)
            columns = None if start is None else start.caught_up(db)
            self._history_held = None if columns is None else (generation, columns)
            return columns

    def _shared_history(self, db: sqlite3.Connection) -> HistoryColumns | None:
        """The history's columns as one process read them, mapped from the files it wrote (see
        :class:`~precon.service.search.shared.SharedIndexes`): the processes serving one data directory share one
        copy, and only one of them reads the history (the entries written since are appended by each)."""
        assert self._shared is not None

        def key(generation: int) -> str:
            return f"{COLUMNS_VERSION}-{self._index_key(generation)}"

        def build() -> tuple[str, HistoryColumns | None]:
            return key(self._read_generation()), HistoryColumns().caught_up(db)

        columns: HistoryColumns | None = self._shared.get("history", lambda: key(self.generation()), build)
        return columns

    def newest_change(self) -> str | None:
        """The time of the catalogue's newest entry (None without history)."""
        with self._reading() as db:
            row = db.execute("SELECT at FROM listing_history ORDER BY seq DESC LIMIT 1").fetchone()
        return None if row is None else str(row[0])

    def listing_ids(self) -> list[str]:
        """Every stored listing's id, in order."""
        with self._reading() as db:
            return [str(row[0]) for row in db.execute("SELECT listing_id FROM listings ORDER BY listing_id")]

    def deleted_matching(self, query: ListingQuery) -> list[str]:
        """The ids of the deleted listings whose last document matches the query's filters and words (in its
        province, when it names one): what a ``changes`` feed keeps of them."""
        judged = DocumentFilter(
            query.filter,
            query.unit_filter,
            tuple(query.text.words) if query.text is not None else (),
            (query.text.columns if query.text is not None else ()) or SEARCHABLE_LISTING_FIELDS,
        )
        sql, params = "SELECT listing_id, doc FROM deleted_listings", []
        if query.province is not None:
            sql, params = sql + " WHERE province = ?", [query.province]
        with self._reading() as db:
            rows = db.execute(sql + " ORDER BY listing_id", params).fetchall()
        return [str(listing_id) for listing_id, doc in rows if judged.matches(decode_document(doc))]


def _history_where(query: HistoryQuery) -> tuple[str, list[Any]]:
    """The WHERE clause (and its parameters) of the history entries a query asks for."""
    clauses, params = ["1"], []
    if query.listing_id is not None:
        clauses.append("listing_id = ?")
        params.append(query.listing_id)
    if query.scopes:
        clauses.append(f"scope IN ({', '.join('?' * len(query.scopes))})")
        params += query.scopes
    if query.fields:
        named = f"field IN ({', '.join('?' * len(query.fields))})"
        clauses.append(f"({named} OR field IS NULL)" if query.records else named)
        params += query.fields
    for value, test in ((query.since, "at >= ?"), (query.until, "at <= ?")):
        if value is not None:
            clauses.append(test)
            params.append(value)
    sets = ((query.changes or None, "change"), (query.listing_ids, "listing_id"), (query.provinces, "province"))
    for values, column in sets:
        if values is not None:  # a list of any length, as one parameter
            clauses.append(f"{column} IN (SELECT value FROM json_each(?))")
            params.append(orjson.dumps(list(values)).decode())
    return " AND ".join(clauses), params
