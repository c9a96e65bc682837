"""The write path of the PostgreSQL store: records in, with the rows that find them, one transaction a write.

:class:`PostgresWrites` is the part of :class:`~precon.service.postgres.store.PostgresCatalogueStore` that changes
the catalogue: listing upserts (copied in with ``COPY``), profile upserts, deletes (a listing's other rows go with
it: ``ON DELETE CASCADE``), the provinces of the profiles a write touches, recorded views. How a record becomes
its rows is the SQLite store's (:mod:`precon.service.catalogue_records`); what is PostgreSQL's is here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from precon.filters import fold_text
from precon.service.catalogue_records import (
    ListingIndexRows,
    _geo_point,
    _last_of_each,
    as_stored_listing,
    listing_columns,
    listing_key,
    reference_keys,
    stored_profile,
)
from precon.service.catalogue_types import TRENDING_DECAY_PER_S, TRENDING_EPOCH_S, CatalogueChange
from precon.service.derived import complete_listing
from precon.service.postgres.catalogue_base import PostgresCatalogueBase, _document, _json
from precon.service.postgres.text_search import _field_words, tsvector, word_counts, words_copy_lines
from precon.service.schema import (
    LISTING_REFERENCE_FIELDS,
    SCALAR_ATTRIBUTES,
    SEARCHABLE_LISTING_FIELDS,
    SEARCHABLE_LISTING_WEIGHTS,
    SEARCHABLE_PROFILE_FIELDS,
    SEARCHABLE_PROFILE_WEIGHTS,
)

_SCALAR_COLUMNS = ", ".join(f'"{a.column}"' for a in SCALAR_ATTRIBUTES)
_LISTING_SEARCH_COLUMNS = ", ".join(f'"s_{name}"' for name in SEARCHABLE_LISTING_FIELDS)
_PROFILE_SEARCH_COLUMNS = ", ".join(f'"s_{name}"' for name in SEARCHABLE_PROFILE_FIELDS)
_REFERENCE_ATTRIBUTES = sorted(set(LISTING_REFERENCE_FIELDS.values()))
_VECTOR = "array_to_tsvector(%s::text[])"
_COPY_LISTINGS = (
    "COPY listings(id, listing_id, province, featured, updated_at, geo_lat, geo_lng, "
    f"{_SCALAR_COLUMNS}, {_LISTING_SEARCH_COLUMNS}, s_all, text_length, text_tokens, doc) FROM STDIN"
)


class PostgresWrites(PostgresCatalogueBase):
    """Writes to the catalogue: each in one write transaction that raises the generation; listeners hear after
    commit (after the :meth:`atomic` block's, in one)."""

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """For loading a whole catalogue: statistics are gathered once at the end (of :meth:`atomic` when in one)."""
        yield
        with self._write() as connection:
            connection.execute("ANALYZE")

    def upsert_listings(self, records: Iterable[dict[str, Any]]) -> list[CatalogueChange]:
        changes: list[CatalogueChange] = []
        batch = [as_stored_listing(record) for record in _last_of_each(records, listing_key)]
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
            index = ListingIndexRows()
            rows: list[list[Any]] = []
            words: list[str] = []
            for (listing_id, record), rowid in zip(batch, new_ids, strict=True):
                found = existing.get(listing_id)
                old = None if found is None else found[1]
                if old is not None:
                    index.touched_profiles.update(reference_keys(old))
                rows.append(self._listing_row(listing_id, complete_listing(record, old, now), rowid, index, words))
                changes.append(CatalogueChange("listing", "created" if found is None else "updated", listing_id))
            self._copy_listing_rows(db, rows, index, words)
            self._refresh_profile_provinces(db, index.touched_profiles)
            self._bump_generation(db)
        return self._notify(changes)

    @staticmethod
    def _listing_row(
        listing_id: str, record: dict[str, Any], rowid: int, index: ListingIndexRows, words: list[str]
    ) -> list[Any]:
        """The listing's row of ``listings`` (as :data:`_COPY_LISTINGS` names its columns); its other rows are
        gathered in ``index``, its ``listing_words`` rows in ``words`` (as ``COPY`` text)."""
        lat, lng = _geo_point(record)
        values: list[Any] = [rowid, listing_id, *listing_columns(record, lat, lng, index.labels)]
        field_words = _field_words(record, SEARCHABLE_LISTING_FIELDS)
        counts = word_counts(field_words, SEARCHABLE_LISTING_WEIGHTS)
        words.append(words_copy_lines(counts, rowid, length=True))
        values += [tsvector(ws) for ws in field_words]
        values += [tsvector([w for ws in field_words for w in ws]), counts.weighted_length, counts.tokens]
        values.append(_json(record))
        index.add(record, rowid)
        return values

    @staticmethod
    def _copy_listing_rows(
        db: psycopg.Connection[Any], rows: list[list[Any]], index: ListingIndexRows, words: list[str]
    ) -> None:
        with db.cursor() as cursor:
            with cursor.copy(_COPY_LISTINGS) as copy:
                for listing_row in rows:
                    copy.write_row(listing_row)
            for table, table_rows in (
                ("listing_terms", sorted(index.terms)),
                ("listing_numbers", sorted(index.numbers)),
                ("listing_plans", index.plans),
                ("listing_plan_values", index.plan_values),
                ("plan_ids", sorted(index.plan_ids)),
            ):
                with cursor.copy(f"COPY {table} FROM STDIN") as copy:  # table: a fixed name
                    for table_row in table_rows:
                        copy.write_row(table_row)
            _copy_lines(cursor, "listing_words", words)
            cursor.executemany(
                "INSERT INTO labels VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(a, t, label) for (a, t), label in sorted(index.labels.items())],
            )
            cursor.executemany(
                "INSERT INTO listing_attributes VALUES (%s) ON CONFLICT DO NOTHING",
                [(name,) for name in sorted(index.attribute_names)],
            )

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
            f"profile_id, collection, path, path_key, name_key, listing_count, {_PROFILE_SEARCH_COLUMNS}, s_all, "
            "text_tokens, doc"
        )
        batch = _last_of_each(records, lambda r: str(r.get("path") or "").strip())
        words: list[str] = []
        with self._write() as db:
            for record in batch:
                profile = stored_profile(record)
                path = profile.path
                field_words = _field_words(profile.record, SEARCHABLE_PROFILE_FIELDS)
                counts = word_counts(field_words, SEARCHABLE_PROFILE_WEIGHTS)
                values = [
                    *profile.columns(),
                    *field_words,
                    [w for ws in field_words for w in ws],
                    counts.tokens,
                    _json(profile.record),
                ]
                row = db.execute("SELECT id FROM profiles WHERE path = %s", (path,)).fetchone()
                if row is None:
                    inserted = db.execute(
                        f"INSERT INTO profiles({columns}) VALUES (%s, %s, %s, %s, %s, %s, {vectors}, %s, %s::json) "
                        "RETURNING id",
                        values,
                    ).fetchone()
                    assert inserted is not None
                    rowid = int(inserted[0])
                else:
                    # A rewrite keeps the profile's row: its profile_provinces rows stay its own.
                    rowid = int(row[0])
                    db.execute(
                        f"UPDATE profiles SET ({columns}) = (%s, %s, %s, %s, %s, %s, {vectors}, %s, %s::json) "
                        "WHERE id = %s",
                        [*values, rowid],
                    )
                    db.execute("DELETE FROM profile_words WHERE profile = %s", (rowid,))
                words.append(words_copy_lines(counts, rowid, length=False))
                touched.add(fold_text(path))
                changes.append(CatalogueChange("profile", "updated" if row else "created", path))
            with db.cursor() as cursor:
                _copy_lines(cursor, "profile_words", words)
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


def _copy_lines(cursor: psycopg.Cursor[Any], table: str, lines: list[str]) -> None:
    """Rows already in ``COPY`` text (:func:`~precon.service.postgres.text_search.words_copy_lines`) into
    ``table``, in pieces of about a megabyte."""
    with cursor.copy(f"COPY {table} FROM STDIN") as copy:  # table: a fixed name
        for start in range(0, len(lines), 500):
            copy.write("".join(lines[start : start + 500]))
