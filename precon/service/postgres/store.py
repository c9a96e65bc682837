"""The catalogue in PostgreSQL: :class:`PostgresCatalogueStore`, answering as the SQLite store's SQL engine does.

Records are JSON documents (``json``: as written, key order kept) beside the columns that find them (see the
migration ``0001_catalogue``). The answers are the SQLite store's (the tests compare the two over one generated
catalogue): the same filter semantics (the SQLite compiler, with ``%s`` placeholders; unindexed paths through the
reference evaluator), the same order (``featured DESC, updated_at DESC, listing_id`` in byte order), the same
facet counts and labels, the same haversine distance (candidates found through earthdistance's GiST index), the
same trending rank.

Text: each searchable field's words, folded as the SQLite store's FTS5 tokenizer folds them (case and accents
ignored: :func:`precon.service.search.words`), are a ``tsvector`` of their own, and all of them together one
more, under a GIN index. A query is a ``tsquery`` of the same words (every word required, the last also as a
prefix); when nothing matches, words one typo away from a query word that the catalogue holds are tried too,
from the vocabulary (``ts_stat``), as the SQLite store does. Relevance is a field-weighted ``ts_rank`` of the
query's words: the matching listings are the SQLite store's, the order among them may differ where its BM25
would rank otherwise.

Connections come from a :class:`psycopg_pool.ConnectionPool`. Writes take a transaction-scoped advisory lock
(one writer at a time across replicas, as SQLite has one), raise the catalogue's generation and ``NOTIFY``
:data:`CHANNEL` with it, so that a replica's caches (typo vocabulary, labels, fallback filters) follow.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import orjson
import psycopg
from psycopg_pool import ConnectionPool

from precon import filters
from precon.filters import Expr, fold_text
from precon.service.catalogue_records import (
    BOX_MARGIN_DEG,
    _bounding_box,
    _facet_key,
    _geo_point,
    _last_of_each,
    _scalar_value,
    count_profile_facets,
    index_multi,
    province_of,
    reference_keys,
)
from precon.service.catalogue_types import (
    EARTH_RADIUS_M,
    MAX_FACET_VALUES,
    TRENDING_DECAY_PER_S,
    TRENDING_EPOCH_S,
    CatalogueChange,
    GeoCircle,
    ListingQuery,
    ProfileQuery,
    SearchHits,
    SimilarityFeatures,
)
from precon.service.derived import complete_listing
from precon.service.plans import floor_plans, plan_rows
from precon.service.postgres.migrations import schema_options, upgrade
from precon.service.postgres.sql import PostgresFilterCompiler, unit_clause
from precon.service.schema import (
    LISTING_ATTRIBUTES,
    LISTING_REFERENCE_FIELDS,
    SCALAR_ATTRIBUTES,
    SEARCHABLE_LISTING_FIELDS,
    SEARCHABLE_LISTING_WEIGHTS,
    SEARCHABLE_PROFILE_FIELDS,
    SEARCHABLE_PROFILE_WEIGHTS,
)
from precon.service.search import MIN_PREFIX_LENGTH, TextQuery, TypoIndex, fold, searchable_text, words
from precon.service.sql_filter import canonical_path

log = logging.getLogger("precon.store.postgres")

CHANNEL = "precon_catalogue"
"""Every committed write notifies it, with the catalogue's schema and new generation as the payload."""
WRITE_LOCK = 0x70726563
"""The advisory lock that serialises catalogue writes ('prec')."""
FALLBACK_CACHE_ENTRIES = 64
TIE_BREAK = "l.featured DESC, l.updated_at DESC, l.listing_id"
_SCALAR_COLUMNS = ", ".join(f'"{a.column}"' for a in SCALAR_ATTRIBUTES)
_LISTING_SEARCH_COLUMNS = ", ".join(f'"s_{name}"' for name in SEARCHABLE_LISTING_FIELDS)
_PROFILE_SEARCH_COLUMNS = ", ".join(f'"s_{name}"' for name in SEARCHABLE_PROFILE_FIELDS)
_REFERENCE_ATTRIBUTES = sorted(set(LISTING_REFERENCE_FIELDS.values()))
_VECTOR = "array_to_tsvector(%s::text[])"


def _document(text: str) -> dict[str, Any]:
    result: dict[str, Any] = orjson.loads(text)
    return result


def _json(record: dict[str, Any]) -> str:
    return orjson.dumps(record).decode()


def _lexeme(word: str, prefix: bool = False) -> str:
    quoted = "'" + word.replace("\\", "\\\\").replace("'", "''") + "'"
    return quoted + ":*" if prefix else quoted


def tsquery(text: TextQuery, any_word: bool = False) -> str:
    """The ``tsquery`` of a text query: every word required, the last also as a prefix, typo variants as ORs.

    ``any_word``: any of them (what relevance is measured with: ``ts_rank`` of an AND needs word positions).
    Each word is a quoted lexeme, so no user text can change the query's structure."""
    terms = []
    last = len(text.words) - 1
    for position, word in enumerate(text.words):
        alternatives = [_lexeme(word, position == last and len(word) >= MIN_PREFIX_LENGTH)]
        alternatives += [_lexeme(variant) for variant in sorted(text.typo_variants.get(word, ()))]
        terms.append(alternatives[0] if len(alternatives) == 1 else "(" + " | ".join(alternatives) + ")")
    return (" | " if any_word else " & ").join(terms)


def tsvector(lexemes: Iterable[str]) -> str:
    """A ``tsvector``'s text of words taken as they are (no parser, no stemming): each one a quoted lexeme."""
    return " ".join(_lexeme(word) for word in dict.fromkeys(lexemes))


def _field_words(record: dict[str, Any], fields: Sequence[str]) -> list[list[str]]:
    return [words(text) for text in searchable_text(record, fields)]


def _text_match(text: TextQuery, alias: str, fields: Sequence[str]) -> tuple[str, list[Any]]:
    """The test of a row's text against the query: in all fields, or in those the query names (none of them a
    searchable field: no row)."""
    if not text.columns:
        return f"{alias}.s_all @@ %s::tsquery", [tsquery(text)]
    named = [f'{alias}."s_{name}"' for name in text.columns if name in fields]
    if not named:
        return "false", []
    return f"({' || '.join(named)}) @@ %s::tsquery", [tsquery(text)]


def _rank(alias: str, fields: Sequence[str], weights: Sequence[float]) -> str:
    parts = [f'{weight} * ts_rank({alias}."s_{name}", q.query)' for name, weight in zip(fields, weights, strict=True)]
    return "(" + " + ".join(parts) + ")"


def _distance_sql(circle: GeoCircle) -> tuple[str, list[float]]:
    """Great-circle distance in metres from the circle's centre (haversine): the SQLite store's formula."""
    lat, lng = math.radians(circle.lat), math.radians(circle.lng)
    sql = (
        f"({2 * EARTH_RADIUS_M} * asin(least(1.0, sqrt("
        "power(sin((radians(l.geo_lat) - %s) / 2), 2) + "
        "%s * cos(radians(l.geo_lat)) * power(sin((radians(l.geo_lng) - %s) / 2), 2)))))"
    )
    return sql, [lat, math.cos(lat), lng]


class PostgresCatalogueStore:
    """A catalogue in a PostgreSQL 15 database (made or upgraded by the migrations when ``migrate``)."""

    engine: Literal["postgres"] = "postgres"

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "public",
        min_size: int = 1,
        max_size: int = 8,
        migrate: bool = True,
    ) -> None:
        """``conninfo``: a libpq connection string or ``postgresql://`` URL; ``schema``: where the catalogue's tables
        are (one database holds the live catalogue in ``public`` and the sandbox in ``sandbox``, say)."""
        if migrate:
            upgrade(conninfo, schema=schema)
        self.conninfo = conninfo
        self.schema = schema
        self.pool = ConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            kwargs={"autocommit": True, **schema_options(schema)},
            check=ConnectionPool.check_connection,  # a connection the server dropped (a restart) is replaced
            open=True,
            name=f"precon-{schema}",
        )
        self.listeners: list[Callable[[list[CatalogueChange]], None]] = []
        """Called with the changes of every write, after it is committed (webhook events hang here)."""
        self._cache_lock = threading.Lock()
        self._typo_cache: tuple[int, TypoIndex, TypoIndex] | None = None
        self._label_cache: tuple[int, dict[tuple[str, str], str]] | None = None
        self._attribute_cache: tuple[int, frozenset[str]] | None = None
        self._fallbacks: OrderedDict[tuple[str, int, str], list[int]] = OrderedDict()
        self._local = threading.local()
        """``connection`` and ``pending`` (changes) of this thread's :meth:`atomic` block, when in one."""

    def close(self) -> None:
        self.pool.close()

    # -- connections ---------------------------------------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection in a read-only repeatable-read transaction: a count and its page see one catalogue."""
        with self.pool.connection() as connection:
            with connection.transaction():
                connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield connection

    @contextmanager
    def _write(self) -> Iterator[psycopg.Connection[Any]]:
        """A write transaction, one at a time across every process on this database; inside :meth:`atomic`, that
        one's."""
        shared: psycopg.Connection[Any] | None = getattr(self._local, "connection", None)
        if shared is not None:
            yield shared
            return
        with self.pool.connection() as connection:
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                yield connection

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """The writes made inside (by this thread) are one transaction: all of them are committed or none is, and
        the listeners hear of them once, after the commit (an import, a mirror page). Nested: part of the outer."""
        if getattr(self._local, "connection", None) is not None:
            yield
            return
        pending: list[CatalogueChange] = []
        with self.pool.connection() as connection:
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
                self._local.connection, self._local.pending = connection, pending
                try:
                    yield
                finally:
                    self._local.connection = self._local.pending = None
        if pending:
            self._notify(pending)

    def _bump_generation(self, connection: psycopg.Connection[Any]) -> None:
        """Raises the generation; at commit, the other replicas hear ``<schema> <generation>`` on :data:`CHANNEL`."""
        row = connection.execute(
            "UPDATE meta SET value = (value::bigint + 1)::text WHERE key = 'generation' RETURNING value"
        ).fetchone()
        assert row is not None
        connection.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{self.schema} {row[0]}"))

    def generation(self) -> int:
        """The catalogue's generation, raised by every write (of any replica)."""
        with self.pool.connection() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    # -- writing -------------------------------------------------------------------------------------------

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """For loading a whole catalogue: statistics are gathered once at the end (of :meth:`atomic` when in one)."""
        yield
        with self._write() as connection:
            connection.execute("ANALYZE")

    def _notify(self, changes: list[CatalogueChange]) -> list[CatalogueChange]:
        pending: list[CatalogueChange] | None = getattr(self._local, "pending", None)
        if pending is not None:  # inside atomic(): heard after its commit
            pending.extend(changes)
            return changes
        for listener in self.listeners:
            try:
                listener(changes)
            except Exception:  # a listener's failure must not undo or hide a committed write
                log.exception("a catalogue listener failed")
        return changes

    def upsert_listings(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]:
        changes: list[CatalogueChange] = []
        touched_profiles: set[str] = set()
        copy_listings = (
            "COPY listings(id, listing_id, province, featured, updated_at, geo_lat, geo_lng, "
            f"{_SCALAR_COLUMNS}, {_LISTING_SEARCH_COLUMNS}, s_all, doc) FROM STDIN"
        )
        batch: list[tuple[str, dict[str, Any]]] = []
        for record in _last_of_each(records, lambda r: str(r.get("listingId") or r.get("objectID") or "").strip()):
            listing_id = str(record.get("listingId") or record.get("objectID") or "").strip()
            if not listing_id:
                raise ValueError("a listing needs a listingId")
            record = {**record, "listingId": listing_id}
            record.pop("objectID", None)
            record.setdefault("path", f"Listings/{listing_id}")
            batch.append((listing_id, record))
        if not batch:
            return self._notify(changes)
        now = time.time()
        with self._write() as db:
            existing = {
                listing_id: (rowid, _document(text))
                for listing_id, rowid, text in db.execute(
                    "SELECT listing_id, id, doc::text FROM listings WHERE listing_id = ANY(%s)",
                    ([listing_id for listing_id, _ in batch],),
                )
            }
            if existing:  # their rows in the other tables go with them (ON DELETE CASCADE)
                db.execute("DELETE FROM listings WHERE id = ANY(%s)", ([rowid for rowid, _ in existing.values()],))
            new_ids = [
                int(r[0])
                for r in db.execute(
                    "SELECT nextval(pg_get_serial_sequence('listings', 'id')) FROM generate_series(1, %s)",
                    (len(batch),),
                )
            ]
            labels: dict[tuple[str, str], str] = {}
            attribute_names: set[str] = set()
            terms: set[tuple[str, str, int]] = set()
            numbers: set[tuple[str, float, int]] = set()
            rows: list[list[Any]] = []
            plans: list[tuple[int, int]] = []
            plan_values: list[tuple[int, int, int, int, str | None, float | None]] = []
            plan_ids: set[tuple[str, int]] = set()
            for (listing_id, record), rowid in zip(batch, new_ids, strict=True):
                found = existing.get(listing_id)
                old = None if found is None else found[1]
                if old is not None:
                    touched_profiles.update(reference_keys(old))
                record = complete_listing(record, old, now)
                lat, lng = _geo_point(record)
                values: list[Any] = [
                    rowid,
                    listing_id,
                    province_of(record.get("state")),
                    int(record.get("isFeatured") is True),
                    str(record.get("updatedAt") or ""),
                    lat,
                    lng,
                ]
                for attribute in SCALAR_ATTRIBUTES:
                    raw = record.get(attribute.path)
                    values.append(_scalar_value(attribute, raw))
                    if attribute.kind == "text" and isinstance(raw, str) and attribute.facet_by_default:
                        labels.setdefault((attribute.path, fold_text(raw)), raw)
                field_words = _field_words(record, SEARCHABLE_LISTING_FIELDS)
                values += [tsvector(ws) for ws in field_words]
                values += [tsvector([w for ws in field_words for w in ws]), _json(record)]
                rows.append(values)
                index_multi(record, rowid, terms, numbers, labels)
                record_plans, record_plan_values = plan_rows(record, rowid)
                plans += record_plans
                plan_values += record_plan_values
                plan_ids.update((plan["id"], rowid) for plan in floor_plans(record) if isinstance(plan.get("id"), str))
                attribute_names.update(record)
                touched_profiles.update(reference_keys(record))
                changes.append(CatalogueChange("listing", "created" if found is None else "updated", listing_id))
            with db.cursor() as cursor:
                with cursor.copy(copy_listings) as copy:
                    for listing_row in rows:
                        copy.write_row(listing_row)
                for table, table_rows in (
                    ("listing_terms", sorted(terms)),
                    ("listing_numbers", sorted(numbers)),
                    ("listing_plans", plans),
                    ("listing_plan_values", plan_values),
                    ("plan_ids", sorted(plan_ids)),
                ):
                    with cursor.copy(f"COPY {table} FROM STDIN") as copy:  # table: a fixed name
                        for table_row in table_rows:
                            copy.write_row(table_row)
                cursor.executemany(
                    "INSERT INTO labels VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    [(a, t, label) for (a, t), label in sorted(labels.items())],
                )
                cursor.executemany(
                    "INSERT INTO listing_attributes VALUES (%s) ON CONFLICT DO NOTHING",
                    [(name,) for name in sorted(attribute_names)],
                )
            self._refresh_profile_provinces(db, touched_profiles)
            self._bump_generation(db)
        return self._notify(changes)

    def delete_listing(self, listing_id: str) -> list[CatalogueChange]:
        with self._write() as db:
            row = db.execute("SELECT id, doc::text FROM listings WHERE listing_id = %s", (listing_id,)).fetchone()
            if row is None:
                return []
            touched = reference_keys(_document(row[1]))
            db.execute("DELETE FROM listings WHERE id = %s", (row[0],))
            db.execute("DELETE FROM listing_views WHERE listing_id = %s", (listing_id,))
            self._refresh_profile_provinces(db, touched)
            self._bump_generation(db)
        return self._notify([CatalogueChange("listing", "deleted", listing_id)])

    def upsert_profiles(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]:
        changes: list[CatalogueChange] = []
        touched: set[str] = set()
        vectors = ", ".join([_VECTOR] * (len(SEARCHABLE_PROFILE_FIELDS) + 1))
        columns = (
            f"profile_id, collection, path, path_key, name_key, listing_count, {_PROFILE_SEARCH_COLUMNS}, s_all, doc"
        )
        batch = _last_of_each(records, lambda r: str(r.get("path") or "").strip())
        with self._write() as db:
            for record in batch:
                path = str(record.get("path") or "").strip()
                if "/" not in path:
                    raise ValueError("a profile needs a path '<Collection>/<id>'")
                collection, profile_id = path.split("/", 1)
                record = {k: v for k, v in record.items() if k not in ("objectID", "id")}
                record = {"id": profile_id, **record}
                name, listings = record.get("name"), record.get("listings")
                field_words = _field_words(record, SEARCHABLE_PROFILE_FIELDS)
                values = [
                    profile_id,
                    collection,
                    path,
                    fold_text(path),
                    fold(name) if isinstance(name, str) else "",
                    len(listings) if isinstance(listings, list) else 0,
                    *field_words,
                    [w for ws in field_words for w in ws],
                    _json(record),
                ]
                row = db.execute("SELECT id FROM profiles WHERE path = %s", (path,)).fetchone()
                if row is None:
                    db.execute(
                        f"INSERT INTO profiles({columns}) VALUES (%s, %s, %s, %s, %s, %s, {vectors}, %s::json)", values
                    )
                else:
                    # A rewrite keeps the profile's row: its profile_provinces rows stay its own.
                    db.execute(
                        f"UPDATE profiles SET ({columns}) = (%s, %s, %s, %s, %s, %s, {vectors}, %s::json) "
                        "WHERE id = %s",
                        [*values, row[0]],
                    )
                touched.add(fold_text(path))
                changes.append(CatalogueChange("profile", "updated" if row else "created", path))
            self._refresh_profile_provinces(db, touched)
            self._bump_generation(db)
        return self._notify(changes)

    def delete_profile(self, path: str) -> list[CatalogueChange]:
        with self._write() as db:
            row = db.execute("DELETE FROM profiles WHERE path = %s RETURNING id", (path,)).fetchone()
            if row is None:
                return []
            self._bump_generation(db)
        return self._notify([CatalogueChange("profile", "deleted", path)])

    @staticmethod
    def _refresh_profile_provinces(db: psycopg.Connection[Any], path_keys: set[str]) -> None:
        """A profile is in a province when one of the listings referring to it is: its rows, recomputed in the
        transaction of the write."""
        if not path_keys:
            return
        keys = sorted(path_keys)
        db.execute(
            "DELETE FROM profile_provinces WHERE profile IN (SELECT id FROM profiles WHERE path_key = ANY(%s))",
            (keys,),
        )
        db.execute(
            "INSERT INTO profile_provinces(province, profile, listings) "
            "SELECT l.province, p.id, count(DISTINCT l.id) FROM profiles p "
            "JOIN listing_terms lt ON lt.term = p.path_key AND lt.attr = ANY(%s) "
            "JOIN listings l ON l.id = lt.listing "
            "WHERE p.path_key = ANY(%s) AND l.province IS NOT NULL GROUP BY l.province, p.id "
            "ON CONFLICT DO NOTHING",
            (_REFERENCE_ATTRIBUTES, keys),
        )

    def record_view(self, listing_id: str, at: float | None = None) -> None:
        """Counts one view of a listing in its trending rank: a sum of views, each decayed by its age."""
        now = time.time() if at is None else at
        weight = TRENDING_DECAY_PER_S * (now - TRENDING_EPOCH_S)
        # ln(1 + e^-d) is 0 in doubles long before exp() underflows (which PostgreSQL reports as an error).
        with self.pool.connection() as db:
            db.execute(
                "INSERT INTO listing_views AS v(listing_id, rank, views, last_view) VALUES (%s, %s, 1, %s) "
                "ON CONFLICT(listing_id) DO UPDATE SET "
                "rank = greatest(v.rank, excluded.rank) + CASE WHEN abs(v.rank - excluded.rank) > 700 THEN 0 "
                "ELSE ln(1 + exp(-abs(v.rank - excluded.rank))) END, "
                "views = v.views + 1, last_view = excluded.last_view",
                (listing_id, weight, now),
            )

    # -- cached per generation -----------------------------------------------------------------------------

    def _typo_indexes(self) -> tuple[TypoIndex, TypoIndex]:
        generation = self.generation()
        cached = self._typo_cache
        if cached is None or cached[0] != generation:
            with self._read() as db:
                listing_words = [r[0] for r in db.execute("SELECT word FROM ts_stat('SELECT s_all FROM listings')")]
                profile_words = [r[0] for r in db.execute("SELECT word FROM ts_stat('SELECT s_all FROM profiles')")]
            cached = (generation, TypoIndex(listing_words), TypoIndex(profile_words))
            self._typo_cache = cached
        return cached[1], cached[2]

    @staticmethod
    def _generation_in(db: psycopg.Connection[Any]) -> int:
        row = db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0]) if row else 0

    def _labels(self, db: psycopg.Connection[Any]) -> dict[tuple[str, str], str]:
        """The facet labels (the first spelling written of each folded value), read on the caller's connection."""
        generation = self._generation_in(db)
        cached = self._label_cache
        if cached is None or cached[0] != generation:
            rows = db.execute("SELECT attr, term, label FROM labels").fetchall()
            cached = (generation, {(a, t): label for a, t, label in rows})
            self._label_cache = cached
        return cached[1]

    def listing_attribute_names(self) -> frozenset[str]:
        generation = self.generation()
        cached = self._attribute_cache
        if cached is None or cached[0] != generation:
            with self._read() as db:
                names = frozenset(r[0] for r in db.execute("SELECT name FROM listing_attributes"))
            cached = (generation, names)
            self._attribute_cache = cached
        return cached[1]

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

    # -- reading listings ----------------------------------------------------------------------------------

    def search_listings(self, query: ListingQuery) -> SearchHits:
        text = query.text
        hits = self._search(query, text)
        if text is not None and hits.total == 0:
            listing_typos, _ = self._typo_indexes()
            expanded = listing_typos.expand(text)
            if any(expanded.typo_variants.values()):
                hits = self._search(query, expanded)
        return hits

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
            clauses, params = self._listing_where(db, query, text)
            where = " AND ".join(clauses) or "true"
            count = db.execute(f"SELECT count(*) FROM listings l WHERE {where}", params).fetchone()
            total = int(count[0]) if count else 0
            documents: list[dict[str, Any]] = []
            scores: list[float | None] = []
            if query.limit > 0 and query.offset < total:
                for text_doc, score in self._page(db, query, text, where, params):
                    documents.append(_document(text_doc))
                    scores.append(None if score is None else round(float(score), 6))
            facets = {name: self._facet(db, name, where, params, query.max_facet_values) for name in query.facets}
        return SearchHits(total, documents, scores, facets, text)

    def _page(
        self, db: psycopg.Connection[Any], query: ListingQuery, text: TextQuery | None, where: str, params: list[Any]
    ) -> list[tuple[str, float | None]]:
        joins = ""
        head: list[Any] = []
        tail: list[Any] = []
        score = "NULL::double precision"
        if text is not None:
            joins = "CROSS JOIN (SELECT %s::tsquery AS query) q"
            head = [tsquery(text, any_word=True)]
            score = _rank("l", SEARCHABLE_LISTING_FIELDS, SEARCHABLE_LISTING_WEIGHTS)
            order = f"score DESC, {TIE_BREAK}"
        elif query.order == "trending":
            joins = "LEFT JOIN listing_views v ON v.listing_id = l.listing_id"
            order = f"v.rank IS NULL, v.rank DESC, {TIE_BREAK}"
        elif query.circle is not None:
            distance, tail = _distance_sql(query.circle)
            order = f"{distance}, {TIE_BREAK}"
        else:
            order = TIE_BREAK
        sql = (
            f"SELECT l.doc::text, {score} AS score FROM listings l {joins} "
            f"WHERE {where} ORDER BY {order} LIMIT %s OFFSET %s"
        )
        return db.execute(sql, [*head, *params, *tail, query.limit, query.offset]).fetchall()

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
        labels = self._labels(db) if attribute.kind == "text" else {}
        counted = []
        for value, count in rows:
            if attribute.kind == "text":
                key = labels.get((attribute.path, value), value)
            elif attribute.kind == "bool" and attribute.multi:
                key = value
            else:
                key = _facet_key(attribute.kind, value)
            counted.append((key, int(count)))
        counted.sort(key=lambda item: (-item[1], item[0]))
        return counted if limit is None else counted[:limit]

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
            features = {
                row[0]: SimilarityFeatures(row[1], row[2], row[3], row[4], row[5], row[6]) for row in [target, *rows]
            }
            for listing, attr, term in db.execute(
                "SELECT listing, attr, term FROM listing_terms WHERE listing = ANY(%s) "
                "AND attr IN ('type', 'amenities')",
                (list(features),),
            ):
                feature = features[listing]
                (feature.types if attr == "type" else feature.amenities).add(term)
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
        hits = self._search_profiles(query, query.text)
        if query.text is not None and hits.total == 0:
            _, profile_typos = self._typo_indexes()
            expanded = profile_typos.expand(query.text)
            if any(expanded.typo_variants.values()):
                hits = self._search_profiles(query, expanded)
        return hits

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
            if text is not None:
                sql, text_params = _text_match(text, "p", SEARCHABLE_PROFILE_FIELDS)
                clauses.append(sql)
                params += text_params
            where = " AND ".join(clauses) or "true"
            count = db.execute(f"SELECT count(*) FROM profiles p WHERE {where}", params).fetchone()
            total = int(count[0]) if count else 0
            documents: list[dict[str, Any]] = []
            scores: list[float | None] = []
            if query.limit > 0 and query.offset < total:
                joins, head, score = "", [], "NULL::double precision"
                if query.sort_by_name:
                    direction = "DESC" if query.sort_by_name == "dsc" else "ASC"
                    order = f"p.name_key {direction}, p.path {direction}"
                else:
                    order = "p.name_key, p.path"
                order_params: list[Any] = []
                if query.sort_by_listings:
                    # SQLite puts NULL first in ascending order, last in descending: so here too.
                    direction = "DESC NULLS LAST" if query.sort_by_listings == "desc" else "ASC NULLS FIRST"
                    if query.province is None:
                        order = f"p.listing_count {direction}, {order}"
                    else:
                        count_sql = (
                            "(SELECT pp.listings FROM profile_provinces pp "
                            "WHERE pp.province = %s AND pp.profile = p.id)"
                        )
                        order = f"{count_sql} {direction}, {order}"
                        order_params.append(query.province)
                if text is not None:
                    joins = "CROSS JOIN (SELECT %s::tsquery AS query) q"
                    head = [tsquery(text, any_word=True)]
                    score = _rank("p", SEARCHABLE_PROFILE_FIELDS, SEARCHABLE_PROFILE_WEIGHTS)
                    if not query.sort_by_name and not query.sort_by_listings:
                        order = f"score DESC, {order}"
                rows = db.execute(
                    f"SELECT p.doc::text, {score} AS score FROM profiles p {joins} WHERE {where} "
                    f"ORDER BY {order} LIMIT %s OFFSET %s",
                    [*head, *params, *order_params, query.limit, query.offset],
                ).fetchall()
                for text_doc, rank in rows:
                    documents.append(_document(text_doc))
                    scores.append(None if rank is None else round(float(rank), 6))
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
