"""The SQL engine of a listing search: the column engine's answers from SQLite alone.

It scans on disk what the column index holds in memory, so it is slower on broad questions; it answers where the
column index cannot: before one is built, text matched in some fields only (FTS5's column filter), a page holding a
record written after the index was built; and it is ``engine="sql"``, the cross-check the tests hold the column
engine to. Its facets are counted by the same classes as the column engine's (:mod:`precon.service.search.facets`).
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from precon.schema import SEARCHABLE_LISTING_WEIGHTS
from precon.service.search.columns import EARTH_RADIUS_M
from precon.service.search.facets import Labels, facet_for
from precon.service.search.plans import UnitFilterCompiler
from precon.service.search.sql_filter import ListingFilterCompiler
from precon.service.search.text import TextQuery
from precon.service.stores.records import _bounding_box, decode_documents
from precon.service.stores.types import GeoCircle, ListingQuery, SearchHits


def search_listings_sql(
    db: sqlite3.Connection, query: ListingQuery, text: TextQuery | None, labels: Callable[[], Labels]
) -> SearchHits:
    """The answer to ``query`` (``text``: its words, maybe widened by typos) read in ``db``'s read transaction, so
    that its count, page and facets agree; ``labels``: the generation's labels of text values, read if a facet
    shows them."""
    clauses, params = listing_where(query, text)
    where = " AND ".join(clauses) or "1"
    total = db.execute(f"SELECT count(*) FROM listings l WHERE {where}", params).fetchone()[0]
    documents: list[dict[str, Any]] = []
    scores: list[float | None] = []
    if query.limit > 0 and query.offset < total:
        rows = _page(db, query, text, where, params)
        documents = decode_documents(blob for blob, _ in rows)
        scores = [None if score is None else round(-score, 6) for _, score in rows]
    limit = query.max_facet_values
    facets = {name: facet_for(name).count_sql(db, where, params, labels, limit) for name in query.facets}
    return SearchHits(total, documents, scores, facets, text)


def listing_where(query: ListingQuery, text: TextQuery | None) -> tuple[list[str], list[Any]]:
    """The conditions over ``listings l`` a listing must meet, and their parameters."""
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
            "l.id IN (SELECT id FROM listing_geo WHERE max_lat >= ? AND min_lat <= ? AND max_lng >= ? AND min_lng <= ?)"
        )
        params += [min_lat, max_lat, min_lng, max_lng]
        sql, distance_params = distance_sql(query.circle)
        clauses.append(f"{sql} <= ?")
        params += [*distance_params, query.circle.radius_m]
    if text is not None:
        clauses.append("l.id IN (SELECT rowid FROM listing_fts WHERE listing_fts MATCH ?)")
        params.append(text.fts_expression())
    return clauses, params


def _page(
    db: sqlite3.Connection, query: ListingQuery, text: TextQuery | None, where: str, params: list[Any]
) -> list[tuple[bytes, float | None]]:
    tie_break = "l.featured DESC, l.updated_at DESC, l.listing_id"
    joins = ""
    join_params: list[Any] = []
    score = "NULL"
    if text is not None:
        joins = bm25_join("listing_fts", SEARCHABLE_LISTING_WEIGHTS, "l")
        join_params = [text.fts_expression()]
        score = "f.rank"
        order = f"f.rank, {tie_break}"
    elif query.order == "trending":
        joins = "LEFT JOIN listing_views v ON v.listing_id = l.listing_id"
        order = f"v.rank IS NULL, v.rank DESC, {tie_break}"
    elif query.circle is not None:
        distance, distance_params = distance_sql(query.circle)
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


def distance_sql(circle: GeoCircle) -> tuple[str, list[float]]:
    """Great-circle distance in metres from the circle's centre to a listing's ``_geoloc`` (haversine)."""
    lat, lng = math.radians(circle.lat), math.radians(circle.lng)
    sql = (
        f"({2 * EARTH_RADIUS_M} * asin(min(1.0, sqrt("
        "pow(sin((radians(l.geo_lat) - ?) / 2), 2) + "
        "? * cos(radians(l.geo_lat)) * pow(sin((radians(l.geo_lng) - ?) / 2), 2)))))"
    )
    return sql, [lat, math.cos(lat), lng]


def bm25_join(table: str, weights: Sequence[float], alias: str) -> str:
    """Joins the rows of ``alias`` to their matches in the FTS5 ``table`` (one ``?``: the match expression), each
    with its field-weighted BM25 rank as ``f.rank`` (lower is better)."""
    return (
        f"JOIN (SELECT rowid AS fts_id, bm25({table}, {', '.join(str(w) for w in weights)}) AS rank FROM {table} "
        f"WHERE {table} MATCH ?) f ON f.fts_id = {alias}.id"
    )
