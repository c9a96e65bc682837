"""The SQLite store's profile reads: lookups by path and id, and profile searches (FTS5 for the text, the reference
evaluator for a filter through ``precon_match``: profiles are a few thousand), with their typo index.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from precon.schema import SEARCHABLE_PROFILE_WEIGHTS
from precon.service.search.sql_filter import FILTER_KEYS
from precon.service.search.text import TextQuery, TypoIndex, bm25_join
from precon.service.stores.records import (
    count_profile_facets,
    decode_document,
    profile_lookup,
    profile_order,
    with_typo_retry,
)
from precon.service.stores.sqlite.catalogue import SQLiteCatalogueBase
from precon.service.stores.types import ProfileQuery, SearchHits


class SQLiteProfiles(SQLiteCatalogueBase):
    """Questions about the directory's profiles."""

    def _profile_typos(self) -> TypoIndex:
        """The profiles' typo index of this generation: the one before where its words are the same (a write of
        listings leaves them as they were). Built when a profile search first needs it (and at start)."""

        def read() -> TypoIndex:
            words = [r[0] for r in self._db().execute("SELECT term FROM profile_vocab")]
            return TypoIndex.kept_or_built(words, self._profile_typo_cache.latest())

        return self._profile_typo_cache.get(self.generation(), read)

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
        in_province = "p.id IN (SELECT profile FROM profile_provinces WHERE province = ?)"
        sql, params = profile_lookup("p.doc", "?", in_province, profile_id, collection, province)
        row = self._db().execute(sql, params).fetchone()
        return decode_document(row[0]) if row else None

    def search_profiles(self, query: ProfileQuery) -> SearchHits:
        def search(text: TextQuery | None) -> SearchHits:
            with self._reading():
                return self._search_profiles(query, text)

        return with_typo_retry(search, query.text, self._profile_typos)

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
            params.append(FILTER_KEYS.key(query.filter))
        if text is not None:
            clauses.append("p.id IN (SELECT rowid FROM profile_fts WHERE profile_fts MATCH ?)")
            params.append(text.fts_expression())
        where = " AND ".join(clauses) or "1"
        total = db.execute(f"SELECT count(*) FROM profiles p WHERE {where}", params).fetchone()[0]
        documents: list[dict[str, Any]] = []
        scores: list[float | None] = []
        if query.limit > 0 and query.offset < total:
            joins, join_params, score = "", [], "NULL"
            order, order_params = profile_order(query)
            if text is not None:
                joins = bm25_join("profile_fts", SEARCHABLE_PROFILE_WEIGHTS, "p")
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
