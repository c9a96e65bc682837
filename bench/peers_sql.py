"""The peer bench's Datasette side (``bench/peers.py``): the SQLite database Datasette serves, laid out as one would
for these questions, and each request of the mix translated into one read-only SQL statement on it."""

from __future__ import annotations

import math
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from precon import filters
from precon.filters import And, Compare, Expr, Match, Not, Or, Range
from precon.schema import SEARCHABLE_LISTING_FIELDS, SEARCHABLE_LISTING_WEIGHTS
from precon.service.search.sql_filter import as_number
from precon.service.search.text import TextQuery, searchable_text
from precon.service.stores.records import geo_point, province_of

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mix import PER_PAGE, BenchRequest, JsonDict
from naive import EARTH_RADIUS_M, MAX_FACET_VALUES

# -- the database Datasette serves ----------------------------------------------------------------------------

SCALAR_TEXT = ("sellingStatus", "constructionStatus", "cityOrDistrict")
SCALAR_NUMBERS = ("startPrice", "minBeds", "completionYear")
JUNCTIONS = {"type": "listing_type", "amenities": "listing_amenities", "builders": "listing_builders"}
PLAN_PRICES = "floorPlans.startPrice"
FTS_COLUMNS = ", ".join(SEARCHABLE_LISTING_FIELDS)
LAYOUT = 2
"""The peer database's layout (its ``user_version``): a file of another layout is rebuilt."""

JUNCTION_TABLE = "CREATE TABLE {}(listing INTEGER NOT NULL, value INTEGER NOT NULL);"
SCHEMA = f"""
CREATE TABLE listings(
  id INTEGER PRIMARY KEY,
  listing_id TEXT NOT NULL,
  name TEXT,
  province TEXT,
  featured INTEGER NOT NULL,
  updated_at TEXT NOT NULL,
  {", ".join(f"{c} TEXT, {c}_id INTEGER" for c in SCALAR_TEXT)},
  {", ".join(f"{c} TEXT" for c in JUNCTIONS)},
  {", ".join(f"{c} REAL" for c in SCALAR_NUMBERS)},
  lat REAL,
  lng REAL
);
CREATE TABLE docs(id INTEGER PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE facet_values(
  id INTEGER PRIMARY KEY, attr TEXT NOT NULL, key TEXT NOT NULL, label TEXT NOT NULL, UNIQUE(attr, key));
{"".join(JUNCTION_TABLE.format(t) for t in JUNCTIONS.values())}
CREATE TABLE listing_plan_prices(listing INTEGER NOT NULL, price REAL NOT NULL);
CREATE VIRTUAL TABLE listings_fts USING fts5({FTS_COLUMNS}, tokenize='unicode61 remove_diacritics 2', prefix='2 3');
"""
INDEXES = [
    "CREATE INDEX listings_in_order ON listings(featured DESC, updated_at DESC, listing_id)",
    "CREATE INDEX listings_by_province ON listings(province, featured DESC, updated_at DESC, listing_id)",
    *(f"CREATE INDEX listings_by_{c} ON listings({c}_id)" for c in SCALAR_TEXT),
    *(f"CREATE INDEX listings_by_{c} ON listings({c})" for c in SCALAR_NUMBERS),
    "CREATE INDEX listings_by_position ON listings(lat, lng)",
    *(f"CREATE INDEX {t}_lookup ON {t}(value, listing)" for t in JUNCTIONS.values()),
    *(f"CREATE INDEX {t}_by_listing ON {t}(listing, value)" for t in JUNCTIONS.values()),
    "CREATE INDEX listing_plan_prices_lookup ON listing_plan_prices(price, listing)",
    "CREATE INDEX listing_plan_prices_by_listing ON listing_plan_prices(listing, price)",
]


def _strings(value: Any) -> list[str]:
    return [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str)]


def build_peer_db(docs: Sequence[JsonDict], path: Path) -> None:
    """The database Datasette serves (see the module docstring), written to a temporary file then renamed."""
    partial = path.with_suffix(".partial")
    partial.unlink(missing_ok=True)
    db = sqlite3.connect(partial)
    try:
        db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;" + SCHEMA)
        rows, doc_rows, fts_rows, plan_rows = [], [], [], []
        junction_rows: dict[str, list[tuple[int, int]]] = {t: [] for t in JUNCTIONS.values()}
        value_ids: dict[tuple[str, str], int] = {}
        labels: list[tuple[int, str, str, str]] = []

        def value_id(attr: str, value: str) -> int:
            key = (attr, filters.fold_text(value))
            found = value_ids.get(key)
            if found is None:
                found = value_ids[key] = len(value_ids) + 1
                labels.append((found, attr, key[1], value))
            return found

        for rowid, doc in enumerate(docs, start=1):
            lat, lng = geo_point(doc)
            scalar_text: list[Any] = []
            for column in SCALAR_TEXT:
                value = doc.get(column)
                value = value if isinstance(value, str) else None
                scalar_text += [value, None if value is None else value_id(column, value)]
            arrays = [orjson.dumps(_strings(doc.get(name))).decode() for name in JUNCTIONS]
            numbers = [as_number(doc.get(name)) for name in SCALAR_NUMBERS]
            rows.append(
                (
                    rowid,
                    str(doc.get("listingId")),
                    doc.get("name") if isinstance(doc.get("name"), str) else None,
                    province_of(doc.get("state")),
                    int(doc.get("isFeatured") is True),
                    str(doc.get("updatedAt") or ""),
                    *scalar_text,
                    *arrays,
                    *numbers,
                    lat,
                    lng,
                )
            )
            doc_rows.append((rowid, orjson.dumps(doc).decode()))
            fts_rows.append((rowid, *searchable_text(doc, SEARCHABLE_LISTING_FIELDS)))
            for name, table in JUNCTIONS.items():
                ids = {value_id(name, v) for v in _strings(doc.get(name))}
                junction_rows[table] += [(rowid, i) for i in sorted(ids)]
            plans = doc.get("floorPlans") if isinstance(doc.get("floorPlans"), list) else []
            prices = {as_number(p.get("startPrice")) for p in plans if isinstance(p, dict)} - {None}
            plan_rows += [(rowid, price) for price in prices]
        marks = ", ".join("?" * len(rows[0])) if rows else ""
        db.executemany(f"INSERT INTO listings VALUES ({marks})", rows)
        db.executemany("INSERT INTO docs VALUES (?, ?)", doc_rows)
        fts_marks = ", ".join("?" * (1 + len(SEARCHABLE_LISTING_FIELDS)))
        db.executemany(f"INSERT INTO listings_fts(rowid, {FTS_COLUMNS}) VALUES ({fts_marks})", fts_rows)
        for table, table_rows in junction_rows.items():
            db.executemany(f"INSERT INTO {table} VALUES (?, ?)", table_rows)
        db.executemany("INSERT INTO facet_values VALUES (?, ?, ?, ?)", labels)
        db.executemany("INSERT INTO listing_plan_prices VALUES (?, ?)", plan_rows)
        for statement in INDEXES:
            db.execute(statement)
        db.execute("INSERT INTO listings_fts(listings_fts) VALUES ('optimize')")
        db.commit()
        db.execute("ANALYZE")
        db.execute(f"PRAGMA user_version = {LAYOUT}")
        db.commit()
    finally:
        db.close()
    partial.replace(path)


def layout(path: Path) -> int:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        found: int = db.execute("PRAGMA user_version").fetchone()[0]
        return found
    finally:
        db.close()


# -- translating a request into Datasette SQL -----------------------------------------------------------------


class NotTranslated(ValueError):
    """A filter on an attribute the peer database does not hold."""


def _number(value: float) -> str:
    """A finite number as an SQL literal (numbers are inlined; strings are bound)."""
    if not math.isfinite(value):
        raise NotTranslated(f"not a finite number: {value}")
    return repr(float(value))


@dataclass
class SqlBuilder:
    """Collects named parameters (``:p0``, ``:p1`` …) for Datasette's query string."""

    params: dict[str, str] = field(default_factory=dict)

    def bind(self, value: str) -> str:
        name = f"p{len(self.params)}"
        self.params[name] = value
        return ":" + name

    def filter(self, expr: Expr) -> str:
        """The service's semantics (``precon.service.search.sql_filter``): text folded, any element of an array, a
        missing value never matching (``coalesce(…, 0)``), ``!=`` as ``NOT =``."""
        if isinstance(expr, And):
            return " AND ".join(f"({self.filter(item)})" for item in expr.items)
        if isinstance(expr, Or):
            return " OR ".join(f"({self.filter(item)})" for item in expr.items)
        if isinstance(expr, Not):
            return f"NOT ({self.filter(expr.expr)})"
        if isinstance(expr, Match):
            if expr.attr in SCALAR_TEXT or expr.attr in JUNCTIONS:
                attr = self.bind(expr.attr)
                key = self.bind(filters.fold_text(expr.value))
                value = f"(SELECT id FROM facet_values WHERE attr = {attr} AND key = {key})"
                if expr.attr in SCALAR_TEXT:
                    return f"coalesce(l.{expr.attr}_id = {value}, 0)"
                return f"l.id IN (SELECT listing FROM {JUNCTIONS[expr.attr]} WHERE value = {value})"
            number = as_number(expr.value.strip())
            if number is None:
                return "0"
            return self._numeric(expr.attr, f"= {_number(number)}")
        if isinstance(expr, Compare):
            if expr.op == "!=":
                return f"NOT ({self.filter(Compare(expr.attr, '=', expr.value))})"
            return self._numeric(expr.attr, f"{expr.op} {_number(float(expr.value))}")
        if isinstance(expr, Range):
            return self._numeric(expr.attr, f"BETWEEN {_number(float(expr.low))} AND {_number(float(expr.high))}")
        raise NotTranslated(f"no translation for {expr!r}")

    def _numeric(self, attr: str, test: str) -> str:
        if attr in SCALAR_NUMBERS:
            return f"coalesce(l.{attr} {test}, 0)"
        if attr == PLAN_PRICES:
            return f"l.id IN (SELECT listing FROM listing_plan_prices WHERE price {test})"
        raise NotTranslated(f"no numeric column for {attr}")


TIE_BREAK = "featured DESC, updated_at DESC, listing_id"


def _bounding_box(lat: float, lng: float, radius_m: float) -> tuple[float, float, float, float]:
    """A box holding the circle (the service's own bounds, so nothing inside the radius is left out)."""
    lat_span = math.degrees(radius_m / EARTH_RADIUS_M)
    min_lat, max_lat = max(-90.0, lat - lat_span), min(90.0, lat + lat_span)
    cos_lat = min(math.cos(math.radians(min_lat)), math.cos(math.radians(max_lat)))
    if cos_lat < 1e-6 or lat_span * 2 >= 180:
        return min_lat, max_lat, -180.0, 180.0
    lng_span = min(180.0, lat_span / cos_lat)
    return min_lat, max_lat, lng - lng_span, lng + lng_span


def _haversine_sql(lat: float, lng: float) -> str:
    phi, lam = _number(math.radians(lat)), _number(math.radians(lng))
    cos_phi = _number(math.cos(math.radians(lat)))
    half_dlat = f"sin((radians(l.lat) - {phi}) / 2)"
    half_dlng = f"sin((radians(l.lng) - {lam}) / 2)"
    h = f"{half_dlat} * {half_dlat} + {cos_phi} * cos(radians(l.lat)) * {half_dlng} * {half_dlng}"
    return f"2 * {_number(EARTH_RADIUS_M)} * asin(min(1.0, sqrt({h})))"


def to_sql(request: BenchRequest) -> tuple[str, dict[str, str]]:
    """One read-only statement answering ``request`` as the service does: rows ``(part, k, n, doc)`` with
    ``part`` ``total`` (``n`` the count), ``hit`` (a page document) or ``facet:<name>`` (``k`` a value, ``n`` its
    count). The count and the page are each written as one would for SQLite alone (the page in the default
    order walks ``listings_in_order`` and stops after the page); the facets count over the matching ids,
    materialized once, grouping integer value ids."""
    sql = SqlBuilder()
    params = request.params
    where: list[str] = []
    if request.province != "all":
        where.append(f"l.province = {sql.bind(request.province)}")
    if "filterQuery" in params:
        expr = filters.parse(params["filterQuery"])
        if expr is not None:
            where.append(f"({sql.filter(expr)})")
    source = "listings l"
    rank = None
    within = ""
    text = TextQuery.parse(params.get("search"))
    if text is not None:
        weights = ", ".join(_number(w) for w in SEARCHABLE_LISTING_WEIGHTS)
        source = "listings_fts JOIN listings l ON l.id = listings_fts.rowid"
        where.append(f"listings_fts MATCH {sql.bind(text.fts_expression())}")
        rank = f"bm25(listings_fts, {weights})"
    elif "nearby" in params:
        lat, lng = (float(part) for part in params["nearby"].split(","))
        radius = float(params.get("radius", "10000"))
        min_lat, max_lat, min_lng, max_lng = _bounding_box(lat, lng, radius)
        where.append(
            f"l.lat BETWEEN {_number(min_lat)} AND {_number(max_lat)} "
            f"AND l.lng BETWEEN {_number(min_lng)} AND {_number(max_lng)}"
        )
        rank = _haversine_sql(lat, lng)
        within = f"rank <= {_number(radius)}"
    condition = " AND ".join(where) or "1"
    ranked = (
        f"SELECT l.id, l.listing_id, l.featured, l.updated_at, {rank or 'NULL'} AS rank FROM {source} WHERE {condition}"
    )
    matched = f"SELECT * FROM ({ranked}) WHERE {within}" if within else ranked
    order = f"rank, {TIE_BREAK}" if rank else TIE_BREAK
    offset = int(params.get("page", "0")) * PER_PAGE
    facets = [name for name in params.get("facets", "").split(",") if name]
    if facets:
        count = "(SELECT count(*) FROM m)"
    elif within:
        count = f"(SELECT count(*) FROM ({matched}))"
    else:
        count = f"(SELECT count(*) FROM {source} WHERE {condition})"
    page = (
        f"SELECT id, listing_id, rank, featured, updated_at FROM ({matched}) "
        f"ORDER BY {order} LIMIT {PER_PAGE} OFFSET {offset}"
    )
    if not rank and not within:
        page = (
            f"SELECT l.id, l.listing_id, NULL AS rank, l.featured, l.updated_at FROM {source} WHERE {condition} "
            f"ORDER BY l.featured DESC, l.updated_at DESC, l.listing_id LIMIT {PER_PAGE} OFFSET {offset}"
        )
    parts = [
        f"SELECT 'total' AS part, NULL AS k, {count} AS n, NULL AS doc",
        f"SELECT * FROM (SELECT 'hit', p.listing_id, NULL, d.doc FROM ({page}) p JOIN docs d ON d.id = p.id "
        f"ORDER BY {'p.rank, ' if rank else ''}p.featured DESC, p.updated_at DESC, p.listing_id)",
    ]
    for name in facets:
        if name in JUNCTIONS:
            counted = (
                f"SELECT t.value, count(*) AS n FROM m JOIN {JUNCTIONS[name]} t ON t.listing = m.id GROUP BY t.value"
            )
        elif name in SCALAR_TEXT:
            counted = (
                f"SELECT l.{name}_id AS value, count(*) AS n FROM m JOIN listings l ON l.id = m.id "
                f"WHERE l.{name}_id IS NOT NULL GROUP BY l.{name}_id"
            )
        else:
            raise NotTranslated(f"no facet column for {name}")
        parts.append(
            f"SELECT * FROM (SELECT 'facet:{name}', v.label, c.n, NULL FROM ({counted} ORDER BY n DESC "
            f"LIMIT {MAX_FACET_VALUES}) c JOIN facet_values v ON v.id = c.value ORDER BY c.n DESC, v.label)"
        )
    statement = " UNION ALL ".join(parts)
    if facets:
        statement = f"WITH m AS MATERIALIZED (SELECT id FROM ({matched})) " + statement
    return statement, sql.params
