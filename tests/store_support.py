"""A SQLite store over given records, and oracles that read its stored rows without its indexes: facet counts and
the default order in SQL over the tables the column index is built from (the filter's oracle is the reference
evaluator, ``precon.filters.evaluate``, over the records)."""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from precon.facet_keys import bool_key, number_key, top
from precon.schema import LISTING_ATTRIBUTES
from precon.service.runtime import load
from precon.service.search.facets import NestedFacet, facet_for
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import GeoCircle, ListingQuery

DEFAULT_ORDER = "l.featured DESC, l.updated_at DESC, l.listing_id"
"""The order listings are shown in without text, trending or a circle (featured first, then the newest)."""


@contextmanager
def stored_store(path: Path, records: list[dict[str, Any]], profiles: list[dict[str, Any]]) -> Iterator[SQLiteStore]:
    """A store over one catalogue file holding ``records`` and ``profiles``."""
    store = SQLiteStore(path)
    load(store, records, profiles)
    try:
        yield store
    finally:
        store.close()


def every_id(store: SQLiteStore, **query: Any) -> list[str]:
    """The ids of every listing a query matches, in the store's order."""
    hits = store.search_listings(ListingQuery(limit=10_000, **query))
    assert hits.total == len(hits.documents)
    return [d["listingId"] for d in hits.documents]


def _rows(store: SQLiteStore) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{store.path}?mode=ro", uri=True)


def reference_facets(
    store: SQLiteStore, listing_ids: Iterable[str], names: Iterable[str], limit: int | None
) -> dict[str, list[tuple[str, int]]]:
    """Each facet's counts over these listings, from the stored rows in SQL: a single value's column, a list's rows
    of ``listing_terms`` or ``listing_numbers``; text shown by its label (its first spelling, ``labels``), numbers
    and booleans by their keys; ranked by ``precon.facet_keys.top``."""
    with closing(_rows(store)) as db:
        db.execute("CREATE TEMP TABLE chosen(listing_id TEXT PRIMARY KEY)")
        db.executemany("INSERT INTO chosen VALUES (?)", [(i,) for i in listing_ids])
        where = "l.listing_id IN (SELECT listing_id FROM chosen)"
        labels = {(a, t): label for a, t, label in db.execute("SELECT attr, term, label FROM labels")}
        counted: dict[str, list[tuple[str, int]]] = {}
        for name in names:
            facet = facet_for(name)
            attribute = LISTING_ATTRIBUTES[facet.path]
            if not attribute.multi:
                column = "l." + attribute.column
                sql = f"SELECT {column}, count(*) FROM listings l WHERE {where} AND {column} IS NOT NULL GROUP BY 1"
                params: list[Any] = []
            else:
                table, value = ("listing_numbers", "num") if attribute.kind == "number" else ("listing_terms", "term")
                sql = (
                    f"SELECT {value}, count(*) FROM {table} WHERE attr = ? "
                    f"AND listing IN (SELECT l.id FROM listings l WHERE {where}) GROUP BY {value}"
                )
                params = [attribute.path]
            rows = db.execute(sql, params).fetchall()
            counted[name] = top([(_key(facet, value, labels), int(count)) for value, count in rows], limit)
        return counted


def _key(facet: Any, stored: Any, labels: dict[tuple[str, str], str]) -> str:
    attribute = facet.attribute
    if attribute.kind == "number":
        return number_key(stored)
    if attribute.kind == "bool" and not attribute.multi:
        return bool_key(stored)
    if isinstance(facet, NestedFacet) and attribute.kind != "text":
        return str(stored)
    return labels.get((facet.path, stored), stored)


def reference_order(store: SQLiteStore, listing_ids: Iterable[str], query: ListingQuery) -> list[str]:
    """These listings in the order a search without text shows them, from the stored rows: trending by views'
    rank, a circle by distance, else the default order; ties in the default order."""
    with closing(_rows(store)) as db:
        db.execute("CREATE TEMP TABLE chosen(listing_id TEXT PRIMARY KEY)")
        db.executemany("INSERT INTO chosen VALUES (?)", [(i,) for i in listing_ids])
        rows = db.execute(
            "SELECT l.listing_id, l.geo_lat, l.geo_lng, v.rank FROM listings l "
            "LEFT JOIN listing_views v ON v.listing_id = l.listing_id "
            f"WHERE l.listing_id IN (SELECT listing_id FROM chosen) ORDER BY {DEFAULT_ORDER}"
        ).fetchall()
    if query.order == "trending":
        rows.sort(key=lambda row: (row[3] is None, -(row[3] or 0.0)))
    elif query.circle is not None:
        circle = query.circle
        rows.sort(key=lambda row: _distance_m(circle, row[1], row[2]))
    return [row[0] for row in rows]


def _distance_m(circle: GeoCircle, lat: float | None, lng: float | None) -> float:
    if lat is None or lng is None:
        return math.inf
    p1, p2 = math.radians(circle.lat), math.radians(lat)
    h = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lng - circle.lng) / 2) ** 2
    return 2 * 6_371_000.0 * math.asin(min(1.0, math.sqrt(h)))
