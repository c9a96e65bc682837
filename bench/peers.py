"""Peer baseline: the listings service against Datasette 0.65.5 on the same catalogue and the same query mix.

What it measures, in one run:

1. A catalogue of ``--listings`` listings (``precon catalogue generate``, kept in ``bench/out/data-<listings>-
   <seed>`` and reused when there, as ``bench/service.py --reuse`` does), read back from its ``listing_docs``.
2. The same listings as an SQLite database laid out for Datasette the way one would for these questions
   (``bench/out/peers-<listings>-<seed>.db``): a flat ``listings`` table of the attributes the mix filters,
   sorts and facets on (array attributes as JSON arrays) with an index on each; text values as integer ids
   into ``facet_values`` (the value folded as the service compares it, and a label), in ``*_id`` columns and
   in junction tables ``listing_type``, ``listing_amenities`` and ``listing_builders``, with
   ``listing_plan_prices`` (``floorPlans.startPrice``), each indexed both ways for filters and fair facet
   counts; ``lat``/``lng`` with an index for the bounding box; an FTS5 table over the
   service's searchable fields (``SEARCHABLE_LISTING_FIELDS``, the same text, tokenizer and prefix indexes);
   the listing documents in ``docs`` for the page.
3. ``precon serve --rate-limit 0`` (its default number of worker processes, or ``--workers N`` passed through
   when it offers that option) and ``datasette serve -i`` on that database (one process, its default three
   SQL threads, a page cache that holds the database), side by side, answering the mix
   that ``bench/mix.py`` builds (its ``build_mix``, same seed: text, facets, filters, geo). Each request
   is one HTTP call on each side: ours is ``search_listings``; Datasette's is one read-only SQL statement
   through its JSON API (``/peers.json?sql=…&_shape=array``, values as named parameters) that returns the
   total (``count(*)``), the page of 20 documents in the service's order (bm25 with the service's field
   weights for text, haversine distance for geo, featured/updatedAt/listingId otherwise) and, for the facets
   class, the top 100 values of each of the six facets (grouped over the matching ids, materialized once in a
   CTE). The count and the page are written as one would for SQLite alone (the page in the default order walks
   the order index and stops once the page is full). ``filterQuery`` is translated from the parsed expression
   (``precon.filters``) to SQL over the columns and junction tables; ``nearby``/``radius`` to a bounding box
   on the lat/lng index plus the haversine formula in SQL; ``search`` to the FTS5 expression the service
   itself builds (every word, the last as a prefix).
4. Interleaved, so machine noise hits both: per concurrency (1 and 16) and per class, six rounds a side in
   the order ours, Datasette's, Datasette's, ours, and so on. In a round, each of the ``concurrency`` clients
   sends the class's next request as soon as its last is answered, for a second; a side's throughput in a
   class is its answers over the sum of its rounds' wall times (each until its last answer came). The ratio
   (ours / Datasette) is the headline; absolute figures on a shared 2-core machine are noisy. The clients
   are :mod:`lean_http` connections, which cost a fraction of what ``httpx`` does per request: on two cores
   shared with the services, a heavier client would be what is measured.
5. Totals agreement, request by request: each side's ``total`` for the same request (text: the service also
   tolerates one typo, but only when nothing matches exactly, which a word taken from a listing never does).

Targets (printed, never failing the run): ours at least 5 times Datasette's throughput on text and geo, at
least 20 times on filters and facets. The process exits non-zero only when a side fails to start.

Datasette is a bench-only tool: it lives in its own virtual environment, ``bench/.peers-venv``, created with
uv on first use, so it never touches the project's pins.

Run (from the project root)::

    make bench-peers                                     # 50,000 listings
    make bench-peers LISTINGS=5000                       # a quick run
    .venv/bin/python bench/peers.py --listings 5000 --requests 200
    .venv/bin/python bench/peers.py --workers 1          # ours in one process, as Datasette is

Figures go to stdout and, as JSON, to ``bench/out/peers-<listings>.json``.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson

from precon import filters
from precon.filters import And, Compare, Expr, Match, Not, Or, Range
from precon.schema import SEARCHABLE_LISTING_FIELDS, SEARCHABLE_LISTING_WEIGHTS
from precon.service.config import ServiceSettings
from precon.service.search.sql_filter import as_number
from precon.service.search.text import TextQuery, searchable_text
from precon.service.stores.records import province_of

sys.path.insert(0, str(Path(__file__).resolve().parent))

from lean_http import LeanClient
from load import percentiles
from mix import CATEGORIES, PER_PAGE, BenchRequest, JsonDict, Vocabulary, build_mix
from naive import EARTH_RADIUS_M, MAX_FACET_VALUES
from serving import (
    OUT_DIR,
    Service,
    ServiceFailed,
    build_catalogue,
    create_key,
    free_port,
    process_tree,
    read_listings,
    serve_offers_workers,
)

BENCH_DIR = Path(__file__).resolve().parent
PEERS_VENV = BENCH_DIR / ".peers-venv"
DATASETTE_VERSION = "0.65.5"
DATASETTE = PEERS_VENV / "bin" / "datasette"

DEFAULT_LISTINGS = 50_000
DEFAULT_SEED = 1
DEFAULT_REQUESTS = 400
WARMUP_REQUESTS = 20
CONCURRENCY_LEVELS = (1, 16)
ROUNDS = 6
"""Interleaved rounds per side, class and concurrency."""
ROUND_S = 1.0
"""How long a side keeps sending in a round (its last answers may take longer to come): long enough for 16
clients to reach a steady state, for ours as for Datasette's."""
REQUEST_TIMEOUT_S = 120.0
START_TIMEOUT_S = 300.0
SQL_TIME_LIMIT_MS = 20_000
CACHE_SIZE_KB = 65_536
"""Datasette's SQLite page cache per connection: the whole database stays in memory, as our index does."""
SQL_THREADS = 3
"""Datasette's default ``num_sql_threads``."""

TARGET_RATIOS = {"text": 5.0, "geo": 5.0, "filters": 20.0, "facets": 20.0}

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


def _geo_point(doc: JsonDict) -> tuple[float | None, float | None]:
    """The position the service indexes: ``_geoloc``, else ``lat``/``long``."""
    geoloc = doc.get("_geoloc")
    if isinstance(geoloc, dict):
        lat, lng = as_number(geoloc.get("lat")), as_number(geoloc.get("lng"))
    else:
        lat, lng = as_number(doc.get("lat")), as_number(doc.get("long"))
    if lat is None or lng is None or not (-90 <= lat <= 90 and -180 <= lng <= 180):
        return None, None
    return lat, lng


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
            lat, lng = _geo_point(doc)
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


# -- the two sides --------------------------------------------------------------------------------------------


def ensure_datasette() -> Path:
    """Datasette in ``bench/.peers-venv`` (made with uv on first use), never in the project's environment."""
    if DATASETTE.exists():
        return DATASETTE
    uv = shutil.which("uv")
    base = [uv] if uv else [sys.executable, "-m", "uv"]
    print(f"installing datasette {DATASETTE_VERSION} into {PEERS_VENV} (first use)")
    subprocess.run([*base, "venv", "--quiet", "--python", "3.11", str(PEERS_VENV)], check=True)
    subprocess.run(
        [*base, "pip", "install", "--quiet", "--python", str(PEERS_VENV), f"datasette=={DATASETTE_VERSION}"],
        check=True,
    )
    return DATASETTE


@dataclass
class Datasette:
    process: subprocess.Popen[bytes]
    base_url: str
    log_path: Path
    started_s: float

    @classmethod
    def start(cls, db_path: Path, log_path: Path) -> Datasette:
        port = free_port()
        settings = {
            "sql_time_limit_ms": SQL_TIME_LIMIT_MS,
            "max_returned_rows": 1000,
            "cache_size_kb": CACHE_SIZE_KB,
            "num_sql_threads": SQL_THREADS,
            "default_cache_ttl": 0,
            "suggest_facets": "off",
        }
        command = [str(DATASETTE), "serve", "-i", str(db_path), "--host", "127.0.0.1", "--port", str(port)]
        for name, value in settings.items():
            command += ["--setting", name, str(value)]
        started = time.perf_counter()
        with log_path.open("wb") as log:
            process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        peer = cls(process, f"http://127.0.0.1:{port}", log_path, 0.0)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ServiceFailed(f"datasette exited with {process.returncode}; see {log_path}")
            try:
                if httpx.get(peer.base_url + "/-/versions.json", timeout=2.0).status_code == 200:
                    peer.started_s = time.perf_counter() - started
                    return peer
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        peer.stop()
        raise ServiceFailed(f"no answer from datasette within {START_TIMEOUT_S:.0f} s; see {log_path}")

    def version(self) -> str:
        body = httpx.get(self.base_url + "/-/versions.json", timeout=5.0).json()
        return str(body.get("datasette", {}).get("version"))

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Answer:
    side: str
    category: str
    index: int
    latency_ms: float
    status: int
    total: int | None = None
    error: str | None = None


class Sides:
    """Sends a request to either side; each worker thread keeps one keep-alive connection per side."""

    def __init__(self, ours_url: str, key: str, peer_url: str, db_name: str) -> None:
        self.urls = {"ours": ours_url, "datasette": peer_url}
        self.db_name = db_name
        self.key = key
        self.local = threading.local()

    def client(self, side: str) -> LeanClient:
        clients: dict[str, LeanClient] | None = getattr(self.local, "clients", None)
        if clients is None:
            clients = self.local.clients = {}
        if side not in clients:
            headers = {"x-api-key": self.key} if side == "ours" else {}
            clients[side] = LeanClient(self.urls[side], headers, timeout=REQUEST_TIMEOUT_S)
        return clients[side]

    def send(
        self, side: str, index: int, request: BenchRequest, translated: tuple[str, dict[str, str]]
    ) -> tuple[Answer, bytes]:
        """The answer, its total not read yet, and the body it is in (see :meth:`read_total`)."""
        client = self.client(side)
        if side == "ours":
            path, query = request.path, request.query()
        else:
            path, query = f"/{self.db_name}.json", {"sql": translated[0], "_shape": "array", **translated[1]}
        started = time.perf_counter()
        status, content = client.get(path, query)
        latency_ms = (time.perf_counter() - started) * 1000
        return Answer(side, request.category, index, latency_ms, status), content

    @staticmethod
    def read_total(answer: Answer, content: bytes) -> Answer:
        """The answer with the total its body states (or the error it is). Done after a round, not in it: decoding
        a page of 20 listings (about 150 KB) costs the client half a millisecond, a third of one of our requests."""
        if answer.status != 200:
            answer.error = content[:300].decode(errors="replace")
            return answer
        body = orjson.loads(content)
        if answer.side == "ours":
            answer.total = body["total"]
        else:
            answer.total = next((row["n"] for row in body if row["part"] == "total"), None)
        return answer

    def send_and_read(
        self, side: str, index: int, request: BenchRequest, translated: tuple[str, dict[str, str]]
    ) -> Answer:
        return self.read_total(*self.send(side, index, request, translated))


# -- the interleaved run --------------------------------------------------------------------------------------


@dataclass
class ClassRun:
    category: str
    concurrency: int
    wall_s: dict[str, float] = field(default_factory=lambda: {"ours": 0.0, "datasette": 0.0})
    answers: dict[str, list[Answer]] = field(default_factory=lambda: {"ours": [], "datasette": []})
    next_request: dict[str, int] = field(default_factory=lambda: {"ours": 0, "datasette": 0})
    """Where each side's next round starts in the class's requests: rounds go on through them, cyclically."""


def run_round(
    sides: Sides,
    side: str,
    run: ClassRun,
    indexes: Sequence[int],
    mix: Sequence[BenchRequest],
    translated: Sequence[tuple[str, dict[str, str]]],
) -> None:
    """One side's round: ``run.concurrency`` threads each send the class's next request as soon as their last is
    answered, until :data:`ROUND_S` has passed; the round's wall time runs until the last answer is in."""
    lock = threading.Lock()
    answers: list[tuple[Answer, bytes]] = []
    deadline = time.perf_counter() + ROUND_S

    def worker() -> None:
        while time.perf_counter() < deadline:
            with lock:
                index = indexes[run.next_request[side] % len(indexes)]
                run.next_request[side] += 1
            answer = sides.send(side, index, mix[index], translated[index])
            with lock:
                answers.append(answer)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(run.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    run.wall_s[side] += time.perf_counter() - started
    run.answers[side] += [sides.read_total(answer, content) for answer, content in answers]


def run_interleaved(
    sides: Sides,
    mix: Sequence[BenchRequest],
    translated: Sequence[tuple[str, dict[str, str]]],
    concurrency: int,
    progress: Callable[[str], None],
) -> dict[str, ClassRun]:
    """Per class, :data:`ROUNDS` rounds a side, in the order ours, theirs, theirs, ours, ...: machine noise hits
    both alike."""
    runs: dict[str, ClassRun] = {}
    for category in CATEGORIES:
        run = runs[category] = ClassRun(category, concurrency)
        indexes = [i for i, r in enumerate(mix) if r.category == category]
        for number in range(ROUNDS):
            for side in ("ours", "datasette") if number % 2 == 0 else ("datasette", "ours"):
                run_round(sides, side, run, indexes, mix, translated)
        progress(
            f"  c{concurrency} {category}: ours {len(run.answers['ours'])} requests in {run.wall_s['ours']:.1f} s, "
            f"datasette {len(run.answers['datasette'])} in {run.wall_s['datasette']:.1f} s"
        )
    return runs


def class_figures(run: ClassRun) -> JsonDict:
    figures: JsonDict = {}
    for side in ("ours", "datasette"):
        answers = run.answers[side]
        wall = run.wall_s[side]
        figures[side] = {
            "requests": len(answers),
            "wall_s": round(wall, 2),
            "requests_per_s": round(len(answers) / wall, 1) if wall else None,
            "failures": sum(a.status != 200 for a in answers),
            "latency": percentiles([a.latency_ms for a in answers]),
        }
    ours, peer = figures["ours"]["requests_per_s"], figures["datasette"]["requests_per_s"]
    figures["ratio"] = round(ours / peer, 1) if ours and peer else None
    # Each request both sides answered, once (a side may have answered it in several rounds).
    theirs = {a.index: a.total for a in run.answers["datasette"] if a.total is not None}
    ours_totals = {a.index: a.total for a in run.answers["ours"] if a.total is not None}
    agreed = checked = 0
    disagreements = []
    for index in sorted(ours_totals.keys() & theirs.keys()):
        checked += 1
        if ours_totals[index] == theirs[index]:
            agreed += 1
        else:
            disagreements.append({"request": index, "ours": ours_totals[index], "datasette": theirs[index]})
    errors = [a.error for side in ("ours", "datasette") for a in run.answers[side] if a.error]
    figures["totals"] = {"checked": checked, "agreed": agreed, "disagreements": disagreements[:20]}
    figures["errors"] = errors[:5]
    return figures


# -- the run --------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--listings", type=int, default=DEFAULT_LISTINGS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS, help="Requests in the mix (each side)")
    parser.add_argument("--data", type=Path, default=None, help="Default: bench/out/data-<listings>-<seed>")
    parser.add_argument("--fresh", action="store_true", help="Generate the catalogue even when one is there")
    parser.add_argument(
        "--workers", type=int, default=None, help="Passed to precon serve when it offers --workers; else ignored"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    data_dir: Path = args.data or OUT_DIR / f"data-{args.listings}-{args.seed}"
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    print(f"Peer baseline: ours against Datasette {DATASETTE_VERSION}, {args.listings:,} listings, seed {args.seed}")
    ensure_datasette()
    workers = None
    if args.workers is not None:
        if serve_offers_workers():
            workers = args.workers
        else:
            print(f"note: the installed precon serve has no --workers; --workers {args.workers} is left out")

    reuse = not args.fresh and ServiceSettings(data_dir=data_dir).catalogue_path.exists()
    build_s = build_catalogue(args.listings, args.seed, data_dir, reuse)
    print(f"catalogue: {data_dir} " + ("(reused)" if build_s is None else f"built in {build_s:.1f} s"))

    started = time.perf_counter()
    docs = read_listings(data_dir)
    if len(docs) != args.listings:
        print(f"note: the catalogue holds {len(docs):,} listings, not {args.listings:,}")
    rng = random.Random(args.seed)
    vocabulary = Vocabulary.of(docs, rng)
    requests = build_mix(WARMUP_REQUESTS + args.requests, vocabulary, rng)
    warmup, mix = requests[:WARMUP_REQUESTS], requests[WARMUP_REQUESTS:]
    translated = [to_sql(r) for r in requests]
    db_path = OUT_DIR / f"peers-{args.listings}-{args.seed}.db"
    catalogue_path = ServiceSettings(data_dir=data_dir).catalogue_path
    if not db_path.exists() or db_path.stat().st_mtime < catalogue_path.stat().st_mtime or layout(db_path) != LAYOUT:
        db_started = time.perf_counter()
        build_peer_db(docs, db_path)
        print(f"peer database {db_path} built in {time.perf_counter() - db_started:.1f} s")
    else:
        print(f"peer database {db_path} (reused)")
    del docs
    print(f"read and prepared in {time.perf_counter() - started:.1f} s")
    shares = Counter(r.category for r in mix)
    print("mix: " + ", ".join(f"{c} {shares[c]}" for c in CATEGORIES) + f"; {WARMUP_REQUESTS} warm-up requests")

    key = create_key(data_dir)
    try:
        ours = Service.start(data_dir, OUT_DIR / f"peers-service-{args.listings}.log", workers)
    except ServiceFailed as error:
        print(f"FAILED: {error}", file=sys.stderr)
        return 2
    try:
        peer = Datasette.start(db_path, OUT_DIR / f"peers-datasette-{args.listings}.log")
    except ServiceFailed as error:
        ours.stop()
        print(f"FAILED: {error}", file=sys.stderr)
        return 2
    results: dict[str, dict[str, JsonDict]] = {}
    try:
        version = peer.version()
        processes = len(process_tree(ours.process.pid))
        print(
            f"ours at {ours.base_url} ({processes} processes, healthy after {ours.started_s:.1f} s); "
            f"datasette {version} at {peer.base_url}"
        )
        sides = Sides(ours.base_url, key, peer.base_url, db_path.stem)
        failed = [
            answer
            for i, request in enumerate(warmup)
            for side in ("ours", "datasette")
            if (answer := sides.send_and_read(side, i, request, translated[i])).status != 200
        ]
        for answer in failed[:5]:
            print(f"warm-up: {answer.side} answered {answer.status}: {answer.error}", file=sys.stderr)
        if failed:
            print(f"FAILED: {len(failed)} warm-up requests were not answered", file=sys.stderr)
            return 2
        measured = translated[WARMUP_REQUESTS:]
        for concurrency in CONCURRENCY_LEVELS:
            runs = run_interleaved(sides, mix, measured, concurrency, print)
            results[f"c{concurrency}"] = {category: class_figures(run) for category, run in runs.items()}
    finally:
        ours.stop()
        peer.stop()

    print_table(results)
    checked = check_targets(results)
    for target in checked:
        print(f"{'PASS' if target['pass'] else 'MISS'}  {target['target']}: {target['value']}")

    report = {
        "listings": args.listings,
        "seed": args.seed,
        "requests": args.requests,
        "warmup_requests": WARMUP_REQUESTS,
        "per_page": PER_PAGE,
        "cpus": os.cpu_count(),
        "workers": workers,
        "datasette": {
            "version": version,
            "num_sql_threads": SQL_THREADS,
            "cache_size_kb": CACHE_SIZE_KB,
            "sql_time_limit_ms": SQL_TIME_LIMIT_MS,
        },
        "rounds": ROUNDS,
        "round_s": ROUND_S,
        "build_s": None if build_s is None else round(build_s, 1),
        "results": results,
        "targets": checked,
    }
    out = OUT_DIR / f"peers-{args.listings}{'' if workers is None else f'-w{workers}'}.json"
    out.write_bytes(orjson.dumps(report, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS))
    print(f"figures written to {out}")
    return 0


def print_table(results: dict[str, dict[str, JsonDict]]) -> None:
    header = (
        f"\n{'conc':>4}  {'class':<8} {'ours req/s':>10} {'datasette req/s':>15} {'ratio':>7} "
        f"{'ours p50/p95 ms':>16} {'datasette p50/p95 ms':>21}  totals agree"
    )
    print(header)
    for level, classes in results.items():
        for category, row in classes.items():
            ours, peer, totals = row["ours"], row["datasette"], row["totals"]
            ratio = "-" if row["ratio"] is None else f"{row['ratio']:.1f}x"
            failures = ours["failures"] + peer["failures"]
            print(
                f"{level[1:]:>4}  {category:<8} {_rps(ours):>10} {_rps(peer):>15} {ratio:>7} "
                f"{_p(ours):>16} {_p(peer):>21}  {totals['agreed']}/{totals['checked']}"
                + (f" ({failures} failed)" if failures else "")
            )
    for level, classes in results.items():
        for category, row in classes.items():
            for miss in row["totals"]["disagreements"][:3]:
                print(
                    f"  {level} {category}: request {miss['request']}: ours {miss['ours']}, "
                    f"datasette {miss['datasette']}"
                )
            for error in row["errors"][:2]:
                print(f"  {level} {category}: error: {error}")


def _rps(side: JsonDict) -> str:
    return "-" if side["requests_per_s"] is None else f"{side['requests_per_s']:.1f}"


def _p(side: JsonDict) -> str:
    latency = side["latency"]
    return "-" if latency["p50"] is None else f"{latency['p50']:.1f}/{latency['p95']:.1f}"


def check_targets(results: dict[str, dict[str, JsonDict]]) -> list[JsonDict]:
    checked = []
    for level, classes in results.items():
        for category, least in TARGET_RATIOS.items():
            value = classes[category]["ratio"]
            checked.append(
                {
                    "target": f"{level} {category}: ours >= {least:g} x datasette's throughput",
                    "value": value,
                    "pass": value is not None and value >= least,
                }
            )
    return checked


if __name__ == "__main__":
    sys.exit(main())
