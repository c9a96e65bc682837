"""The read path of the PostgreSQL store: listing and profile searches, facets, lookups and similarity.

:class:`PostgresReads` is the part of :class:`~precon.service.postgres.store.PostgresCatalogueStore` that answers
questions, as the SQLite store's SQL engine does: the same filters (the SQLite compiler with ``%s``
placeholders, unindexed paths through the reference evaluator: :meth:`~PostgresReads._matching_ids`), the same
order, facets, labels and haversine distance (candidates through earthdistance's GiST index). Each question is
answered in one repeatable-read transaction; the caches (typo vocabulary, labels, fallback filters) follow the
catalogue's generation.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import psycopg

from precon import filters
from precon.filters import Expr
from precon.service.catalogue_records import (
    BOX_MARGIN_DEG,
    PerGeneration,
    _bounding_box,
    add_similarity_terms,
    count_profile_facets,
    facet_counts,
    profile_order,
    similarity_rows,
    with_typo_retry,
)
from precon.service.catalogue_types import (
    EARTH_RADIUS_M,
    MAX_FACET_VALUES,
    GeoCircle,
    ListingQuery,
    ProfileQuery,
    SearchHits,
    SimilarityFeatures,
)
from precon.service.postgres.catalogue_base import PostgresCatalogueBase, _document
from precon.service.postgres.relevance import Corpus, Ranking, column_postings, fts5_bm25, ranked_page
from precon.service.postgres.sql import PostgresFilterCompiler, unit_clause
from precon.service.postgres.text_search import _text_match
from precon.service.schema import (
    LISTING_ATTRIBUTES,
    SEARCHABLE_LISTING_FIELDS,
    SEARCHABLE_LISTING_WEIGHTS,
    SEARCHABLE_PROFILE_FIELDS,
    SEARCHABLE_PROFILE_WEIGHTS,
)
from precon.service.search import TextQuery, TypoIndex
from precon.service.sql_filter import canonical_path

FALLBACK_CACHE_ENTRIES = 64
TIE_BREAK = "l.featured DESC, l.updated_at DESC, l.listing_id"


def _distance_sql(circle: GeoCircle) -> tuple[str, list[float]]:
    """Great-circle distance in metres from the circle's centre (haversine): the SQLite store's formula."""
    lat, lng = math.radians(circle.lat), math.radians(circle.lng)
    sql = (
        f"({2 * EARTH_RADIUS_M} * asin(least(1.0, sqrt("
        "power(sin((radians(l.geo_lat) - %s) / 2), 2) + "
        "%s * cos(radians(l.geo_lat)) * power(sin((radians(l.geo_lng) - %s) / 2), 2)))))"
    )
    return sql, [lat, math.cos(lat), lng]


class PostgresReads(PostgresCatalogueBase):
    """Questions to the catalogue, each seeing one catalogue: a count and its page agree."""

    _cache_lock: threading.Lock
    _typo_cache: PerGeneration[tuple[TypoIndex, TypoIndex]]
    _label_cache: PerGeneration[dict[tuple[str, str], str]]
    _attribute_cache: PerGeneration[frozenset[str]]
    _fallbacks: OrderedDict[tuple[str, int, str], list[int]]

    # -- cached per generation -----------------------------------------------------------------------------

    def _typo_indexes(self) -> tuple[TypoIndex, TypoIndex]:
        def read() -> tuple[TypoIndex, TypoIndex]:
            with self._read() as db:
                listing_words = [r[0] for r in db.execute("SELECT word FROM ts_stat('SELECT s_all FROM listings')")]
                profile_words = [r[0] for r in db.execute("SELECT word FROM ts_stat('SELECT s_all FROM profiles')")]
            return TypoIndex(listing_words), TypoIndex(profile_words)

        return self._typo_cache.get(self.generation(), read)

    def _labels(self, db: psycopg.Connection[Any]) -> dict[tuple[str, str], str]:
        """The facet labels (the first spelling written of each folded value), read on the caller's connection."""

        def read() -> dict[tuple[str, str], str]:
            rows = db.execute("SELECT attr, term, label FROM labels").fetchall()
            return {(a, t): label for a, t, label in rows}

        return self._label_cache.get(self._generation_in(db), read)

    def listing_attribute_names(self) -> frozenset[str]:
        def read() -> frozenset[str]:
            with self._read() as db:
                return frozenset(r[0] for r in db.execute("SELECT name FROM listing_attributes"))

        return self._attribute_cache.get(self.generation(), read)

    def _matching_ids(self, db: psycopg.Connection[Any], table: str, expr: Expr) -> list[int]:
        """The rows of ``table`` whose document the reference evaluator holds ``expr`` for: a filter on a path
        the index does not hold (the SQLite store's ``precon_match``), kept per generation."""
        expression = filters.to_query(expr)
        key = (table, self._generation_in(db), expression)
        with self._cache_lock:
            cached = self._fallbacks.get(key)
            if cached is not None:
                self._fallbacks.move_to_end(key)
                return cached
        predicate = filters.compile_predicate(filters.parse(expression))
        found: list[int] = []
        with db.cursor(name=f"scan_{table}") as cursor:
            cursor.itersize = 2000
            cursor.execute(f"SELECT id, doc::text FROM {table} ORDER BY id")  # table: a fixed name
            for rowid, text in cursor:
                if predicate(_document(text)):
                    found.append(int(rowid))
        with self._cache_lock:
            self._fallbacks[key] = found
            while len(self._fallbacks) > FALLBACK_CACHE_ENTRIES:
                self._fallbacks.popitem(last=False)
        return found

    def _corpus(self, db: psycopg.Connection[Any], table: str) -> Corpus:
        """The size and text lengths of the whole of ``table`` (``listings`` or ``profiles``) as ``db`` sees it,
        kept per catalogue generation."""
        key = (table, self._generation_in(db))
        with self._cache_lock:
            corpora: dict[tuple[str, int], Corpus] = self.__dict__.setdefault("_corpora", {})
            found = corpora.get(key)
        if found is not None:
            return found
        length = "text_length" if table == "listings" else "0"
        row = db.execute(  # table: a fixed name
            f"SELECT count(*), coalesce(sum({length}), 0)::float8, coalesce(sum(text_tokens), 0) FROM {table}"
        ).fetchone()
        assert row is not None
        corpus = Corpus(int(row[0]), float(row[1]), int(row[2]))
        with self._cache_lock:
            for old in [k for k in corpora if k[0] == table and k[1] != key[1]]:
                del corpora[old]
            corpora[key] = corpus
        return corpus

    def _listing_ranking(self, db: psycopg.Connection[Any], text: TextQuery) -> Ranking:
        """The SQLite store's relevance of a listing: its column index's BM25, or FTS5's ``bm25()`` when the query
        names fields (the SQLite store answers those with SQL)."""
        corpus = self._corpus(db, "listings")
        if text.columns:
            return fts5_bm25("listings", "l", text, corpus, SEARCHABLE_LISTING_FIELDS, SEARCHABLE_LISTING_WEIGHTS)
        return column_postings("listings", "l", text, corpus)

    # -- reading listings ----------------------------------------------------------------------------------

    def search_listings(self, query: ListingQuery) -> SearchHits:
        return with_typo_retry(lambda t: self._search(query, t), query.text, lambda: self._typo_indexes()[0])

    def warm(self) -> None:
        self._typo_indexes()

    def _listing_where(
        self, db: psycopg.Connection[Any], query: ListingQuery, text: TextQuery | None
    ) -> tuple[list[str], list[Any]]:
        clauses: list[str] = []
        params: list[Any] = []
        if query.province is not None:
            clauses.append("l.province = %s")
            params.append(query.province)
        if query.filter is not None:
            compiler = PostgresFilterCompiler(lambda expr: self._matching_ids(db, "listings", expr))
            sql, filter_params = compiler.compile(query.filter)
            clauses.append(f"({sql})")
            params += filter_params
        if query.unit_filter is not None:
            sql, unit_params = unit_clause(query.unit_filter)
            clauses.append(sql)
            params += unit_params
        if query.circle is not None:
            # earthdistance's cube around the circle finds the candidates through the GiST index (it holds every
            # point of the circle: its half-side is the arc, longer than the chord); the latitude/longitude box
            # (as the SQLite store's column engine has it) and the haversine distance then keep what it keeps.
            clauses.append(
                "l.geo_lat IS NOT NULL "
                "AND earth_box(ll_to_earth(%s, %s), %s * earth()) @> ll_to_earth(l.geo_lat, l.geo_lng)"
            )
            params += [query.circle.lat, query.circle.lng, query.circle.radius_m / EARTH_RADIUS_M * (1 + 1e-9)]
            min_lat, max_lat, min_lng, max_lng = _bounding_box(query.circle)
            if min_lng >= -180.0 and max_lng <= 180.0:  # a box across the antimeridian would leave some out
                clauses.append("l.geo_lat BETWEEN %s AND %s AND l.geo_lng BETWEEN %s AND %s")
                margin = BOX_MARGIN_DEG
                params += [min_lat - margin, max_lat + margin, min_lng - margin, max_lng + margin]
            sql, distance_params = _distance_sql(query.circle)
            clauses.append(f"{sql} <= %s")
            params += [*distance_params, query.circle.radius_m]
        if text is not None:
            sql, text_params = _text_match(text, "l", SEARCHABLE_LISTING_FIELDS)
            clauses.append(sql)
            params += text_params
        return clauses, params

    def _search(self, query: ListingQuery, text: TextQuery | None) -> SearchHits:
        with self._read() as db:
            clauses, params = self._listing_where(db, query, None)
            documents: list[dict[str, Any]] = []
            scores: list[float | None] = []
            if text is not None:
                ranking = self._listing_ranking(db, text)
                total, page = self._ranked(db, "listings", ranking, " AND ".join(clauses) or "true", params,
                                           f"m.score DESC, {TIE_BREAK}", [], True, query)  # fmt: skip
                documents, scores = self._documents(db, "listings", page)
                text_sql, text_params = _text_match(text, "l", SEARCHABLE_LISTING_FIELDS)
                clauses, params = [*clauses, text_sql], [*params, *text_params]
            where = " AND ".join(clauses) or "true"
            if text is None:
                count = db.execute(f"SELECT count(*) FROM listings l WHERE {where}", params).fetchone()
                total = int(count[0]) if count else 0
                if query.limit > 0 and query.offset < total:
                    for text_doc in self._page(db, query, where, params):
                        documents.append(_document(text_doc))
                        scores.append(None)
            facets = {name: self._facet(db, name, where, params, query.max_facet_values) for name in query.facets}
        return SearchHits(total, documents, scores, facets, text)

    @staticmethod
    def _ranked(
        db: psycopg.Connection[Any],
        table: str,
        ranking: Ranking,
        where: str,
        params: list[Any],
        order: str,
        order_params: list[Any],
        by_score: bool,
        query: ListingQuery | ProfileQuery,
    ) -> tuple[int, list[tuple[int, float]]]:
        """The number of ``table``'s records (``l``: listings, ``p``: profiles) matching a text search and
        ``where``, and the query's page of their ids and scores in order
        (:func:`~precon.service.postgres.relevance.ranked_page`)."""
        sql = ranked_page(ranking, table, table[0], where, order, by_score)
        # The planner's guesses of these joins' sizes are rough: past its cost threshold it would compile the
        # query (JIT), tens of milliseconds for a query that takes fewer.
        db.execute("SET LOCAL jit = off")
        best = [query.offset + query.limit] if by_score else []
        rows = db.execute(sql, [*ranking.params, *params, *best, *order_params, query.limit, query.offset]).fetchall()
        total = int(rows[0][0]) if rows else 0
        return total, [(int(rowid), float(score)) for _, rowid, score in rows if rowid is not None]

    @staticmethod
    def _documents(
        db: psycopg.Connection[Any], table: str, page: list[tuple[int, float]]
    ) -> tuple[list[dict[str, Any]], list[float | None]]:
        """The page's documents, in its order, and its scores (to 6 places, as the SQLite store shows them)."""
        if not page:
            return [], []
        rows = db.execute(f"SELECT id, doc::text FROM {table} WHERE id = ANY(%s)", ([rowid for rowid, _ in page],))
        texts = dict(rows.fetchall())  # table: a fixed name
        return [_document(texts[rowid]) for rowid, _ in page], [round(score, 6) for _, score in page]

    def _page(self, db: psycopg.Connection[Any], query: ListingQuery, where: str, params: list[Any]) -> list[str]:
        """The documents of a page of a search without text, in its order."""
        joins = ""
        tail: list[Any] = []
        if query.order == "trending":
            joins = "LEFT JOIN listing_views v ON v.listing_id = l.listing_id"
            order = f"v.rank IS NULL, v.rank DESC, {TIE_BREAK}"
        elif query.circle is not None:
            distance, tail = _distance_sql(query.circle)
            order = f"{distance}, {TIE_BREAK}"
        else:
            order = TIE_BREAK
        sql = f"SELECT l.doc::text FROM listings l {joins} WHERE {where} ORDER BY {order} LIMIT %s OFFSET %s"
        return [row[0] for row in db.execute(sql, [*params, *tail, query.limit, query.offset])]

    def _facet(
        self,
        db: psycopg.Connection[Any],
        name: str,
        where: str,
        params: list[Any],
        limit: int | None = MAX_FACET_VALUES,
    ) -> list[tuple[str, int]]:
        attribute = LISTING_ATTRIBUTES[canonical_path(name)]
        if attribute.multi:
            table, value = ("listing_numbers", "num") if attribute.kind == "number" else ("listing_terms", "term")
            sql = (
                f"SELECT {value}, count(*) FROM {table} WHERE attr = %s "
                f"AND listing IN (SELECT l.id FROM listings l WHERE {where}) GROUP BY {value}"
            )
            rows = db.execute(sql, [attribute.path, *params]).fetchall()
        else:
            column = f'l."{attribute.column}"'
            sql = f"SELECT {column}, count(*) FROM listings l WHERE {where} AND {column} IS NOT NULL GROUP BY 1"
            rows = db.execute(sql, params).fetchall()
        return facet_counts(attribute, rows, self._labels(db) if attribute.kind == "text" else {}, limit)

    def get_listings(self, ids: Sequence[str], province: str | None) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        sql = "SELECT listing_id, doc::text FROM listings WHERE listing_id = ANY(%s)"
        params: list[Any] = [list(ids)]
        if province is not None:
            sql += " AND province = %s"
            params.append(province)
        with self._read() as db:
            return {listing_id: _document(text) for listing_id, text in db.execute(sql, params)}

    def listings_holding_plans(self, plan_ids: Iterable[str]) -> dict[str, list[str]]:
        """For each of ``plan_ids`` that a stored floor plan carries, the ids of the listings holding it."""
        wanted = sorted(set(plan_ids))
        holders: dict[str, list[str]] = {}
        if not wanted:
            return holders
        with self._read() as db:
            rows = db.execute(
                "SELECT p.plan_id, l.listing_id FROM plan_ids p JOIN listings l ON l.id = p.listing "
                "WHERE p.plan_id = ANY(%s) ORDER BY p.plan_id, l.listing_id",
                (wanted,),
            )
            for plan_id, listing_id in rows:
                holders.setdefault(plan_id, []).append(listing_id)
        return holders

    def similarity_features(
        self, listing_id: str, province: str | None, radius_m: float, limit: int
    ) -> tuple[SimilarityFeatures | None, list[SimilarityFeatures]]:
        """The listing's features and those of up to ``limit`` others: nearby first, then the province."""
        columns = 'l.id, l.listing_id, l.geo_lat, l.geo_lng, l."c_startPrice", l."c_minBeds", l."c_maxBeds"'
        scope, scope_params = ("AND l.province = %s", [province]) if province else ("", [])
        with self._read() as db:
            target = db.execute(
                f"SELECT {columns} FROM listings l WHERE l.listing_id = %s {scope}", [listing_id, *scope_params]
            ).fetchone()
            if target is None:
                return None, []
            rows: list[tuple[Any, ...]] = []
            if target[2] is not None:
                box = _bounding_box(GeoCircle(target[2], target[3], radius_m))
                rows = db.execute(
                    f"SELECT {columns} FROM listings l WHERE l.geo_lat BETWEEN %s AND %s "
                    f"AND l.geo_lng BETWEEN %s AND %s AND l.id != %s {scope} ORDER BY l.id LIMIT %s",
                    [box[0], box[1], box[2], box[3], target[0], *scope_params, limit],
                ).fetchall()
            if len(rows) < limit:
                seen = [r[0] for r in rows] + [target[0]]
                rows += db.execute(
                    f"SELECT {columns} FROM listings l WHERE l.id != ALL(%s) {scope} ORDER BY {TIE_BREAK} LIMIT %s",
                    [seen, *scope_params, limit - len(rows)],
                ).fetchall()
            features = similarity_rows([target, *rows])
            terms = db.execute(
                "SELECT listing, attr, term FROM listing_terms WHERE listing = ANY(%s) "
                "AND attr IN ('type', 'amenities')",
                (list(features),),
            )
            add_similarity_terms(features, terms)
        target_features = features.pop(target[0])
        return target_features, list(features.values())

    # -- reading profiles ----------------------------------------------------------------------------------

    def get_profiles(self, paths: Sequence[str]) -> dict[str, dict[str, Any]]:
        if not paths:
            return {}
        with self._read() as db:
            rows = db.execute(
                "SELECT path, doc::text FROM profiles WHERE path = ANY(%s)", (list(dict.fromkeys(paths)),)
            )
            return {path: _document(text) for path, text in rows}

    def find_profile(self, profile_id: str, collection: str | None, province: str | None) -> dict[str, Any] | None:
        sql = "SELECT p.doc::text FROM profiles p WHERE p.profile_id = %s"
        params: list[Any] = [profile_id]
        if collection:
            sql += " AND p.collection = %s"
            params.append(collection)
        if province is not None:
            sql += " AND p.id IN (SELECT profile FROM profile_provinces WHERE province = %s)"
            params.append(province)
        with self._read() as db:
            row = db.execute(sql + " ORDER BY p.path LIMIT 1", params).fetchone()
        return _document(row[0]) if row else None

    def search_profiles(self, query: ProfileQuery) -> SearchHits:
        return with_typo_retry(lambda t: self._search_profiles(query, t), query.text, lambda: self._typo_indexes()[1])

    def _search_profiles(self, query: ProfileQuery, text: TextQuery | None) -> SearchHits:
        with self._read() as db:
            clauses: list[str] = []
            params: list[Any] = []
            if query.province is not None:
                clauses.append("p.id IN (SELECT profile FROM profile_provinces WHERE province = %s)")
                params.append(query.province)
            if query.collection:
                clauses.append("p.collection = %s")
                params.append(query.collection)
            if query.filter is not None:
                clauses.append("p.id = ANY(%s)")
                params.append(self._matching_ids(db, "profiles", query.filter))
            documents: list[dict[str, Any]] = []
            scores: list[float | None] = []
            # SQLite puts NULL first in ascending order, last in descending: so here too.
            order, order_params = profile_order(query, "%s", ("DESC NULLS LAST", "ASC NULLS FIRST"))
            if text is not None:
                ranking = fts5_bm25(
                    "profiles", "p", text, self._corpus(db, "profiles"), SEARCHABLE_PROFILE_FIELDS,
                    SEARCHABLE_PROFILE_WEIGHTS,
                )  # fmt: skip
                by_score = not query.sort_by_name and not query.sort_by_listings
                order = f"m.score DESC, {order}" if by_score else order
                total, page = self._ranked(db, "profiles", ranking, " AND ".join(clauses) or "true", params, order,
                                           order_params, by_score, query)  # fmt: skip
                documents, scores = self._documents(db, "profiles", page)
                text_sql, text_params = _text_match(text, "p", SEARCHABLE_PROFILE_FIELDS)
                clauses, params = [*clauses, text_sql], [*params, *text_params]
            where = " AND ".join(clauses) or "true"
            if text is None:
                count = db.execute(f"SELECT count(*) FROM profiles p WHERE {where}", params).fetchone()
                total = int(count[0]) if count else 0
                if query.limit > 0 and query.offset < total:
                    rows = db.execute(
                        f"SELECT p.doc::text FROM profiles p WHERE {where} ORDER BY {order} LIMIT %s OFFSET %s",
                        [*params, *order_params, query.limit, query.offset],
                    )
                    documents = [_document(row[0]) for row in rows]
                    scores = [None] * len(documents)
            facets: dict[str, list[tuple[str, int]]] = {}
            if query.facets:
                facets = self._profile_facets(db, where, params, query.facets)
        return SearchHits(total, documents, scores, facets, text)

    @staticmethod
    def _profile_facets(
        db: psycopg.Connection[Any], where: str, params: list[Any], names: Sequence[str]
    ) -> dict[str, list[tuple[str, int]]]:
        rows = db.execute(f"SELECT p.collection, p.doc::text FROM profiles p WHERE {where}", params)
        return count_profile_facets(((collection, _document(text)) for collection, text in rows), names)

    def counts(self) -> dict[str, int]:
        with self._read() as db:
            row = db.execute("SELECT (SELECT count(*) FROM listings), (SELECT count(*) FROM profiles)").fetchone()
        assert row is not None
        return {"listings": int(row[0]), "profiles": int(row[1])}
