"""An in-memory, columnar copy of the listing index: filters, distance and order in numpy, and what facets count
(counted by :mod:`precon.service.search.facets`).

SQLite keeps every record and every index; scanning tens of thousands of rows per query in it costs
hundreds of milliseconds when a filter or facet touches most of the catalogue. This copy holds only what
queries test (a column per single-valued attribute, postings per array attribute), a few tens of megabytes
for 50,000 listings, and answers those scans in a few milliseconds. When the store's generation changes it is
patched by the listings the writes wrote (:mod:`.column_patch`), or rebuilt from the store where a patch cannot
be, and gives the same answers as the SQL it replaces (the tests compare them).
"""

from __future__ import annotations

import functools
import hashlib
import math
import sqlite3
import time
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from precon.filters import And, Compare, Expr, Match, Not, Or, Range, fold_text, numeric_bounds
from precon.filters.parsing import parse_number
from precon.schema import (
    LISTING_ATTRIBUTES,
    MULTI_ATTRIBUTES,
    SCALAR_ATTRIBUTES,
    SEARCHABLE_LISTING_FIELDS,
    SEARCHABLE_LISTING_WEIGHTS,
    IndexedAttribute,
)
from precon.service import metrics
from precon.service.search.attribute_rows import AttributeRows, attribute_rows, read_attribute_rows
from precon.service.search.index_tests import index_answers
from precon.service.search.sql_filter import BOOLEAN_WORDS, canonical_path
from precon.service.search.text import MIN_PREFIX_LENGTH, TextQuery

Mask = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Fallback = Callable[[Expr, Mask | None], Mask]
"""What answers a test the column index does not hold: the test, and the listings it is asked about (None: all)."""
EARTH_RADIUS_M = 6_371_000.0


class Vocabulary:
    """Strings by code, and codes by string, held as arrays of UTF-8 bytes (by code, and sorted with the codes in
    that order) rather than a list and a dict of Python strings: a tenth of the memory for 50,000 names, and
    arrays that processes can share by mapping one file (see :mod:`precon.service.search.shared`)."""

    def __init__(self, values: Sequence[str]) -> None:
        encoded = [value.encode() for value in values]
        width = max((len(value) for value in encoded), default=1) or 1
        self.values: npt.NDArray[np.bytes_] = np.array(encoded, dtype=f"S{width}")
        self.order: npt.NDArray[np.int32] = np.argsort(self.values, kind="stable").astype(np.int32)
        self.sorted: npt.NDArray[np.bytes_] = self.values[self.order]

    def extended(self, more: Sequence[str]) -> Vocabulary:
        """This vocabulary with ``more`` coded after its own values (as one made of both would code them), without
        decoding its own."""
        if not more:
            return self
        added = [value.encode() for value in more]
        width = max(self.values.dtype.itemsize, *(len(value) for value in added)) or 1
        grown = Vocabulary.__new__(Vocabulary)
        grown.values = np.concatenate([self.values.astype(f"S{width}"), np.array(added, dtype=f"S{width}")])
        grown.order = np.argsort(grown.values, kind="stable").astype(np.int32)
        grown.sorted = grown.values[grown.order]
        return grown

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, code: int) -> str:
        return bytes(self.values[code]).decode()

    def __iter__(self) -> Iterator[str]:
        return (value.decode() for value in self.values.tolist())

    def get(self, value: str) -> int | None:
        """The code of ``value``, None when the vocabulary does not hold it."""
        key = value.encode()
        if len(key) > self.values.dtype.itemsize or not len(self.values):
            return None
        found = int(np.searchsorted(self.sorted, key))
        if found < len(self.sorted) and self.sorted[found] == key:
            return int(self.order[found])
        return None

    def codes_of(self, values: Sequence[str]) -> IntArray:
        """The code of each value, -1 for those it does not hold."""
        if not values or not len(self.values):
            return np.full(len(values), -1, dtype=np.int64)
        keys = np.array([value.encode() for value in values], dtype=np.bytes_)
        found = np.clip(np.searchsorted(self.sorted, keys), 0, len(self.sorted) - 1)
        held = (self.sorted[found] == keys) & (np.char.str_len(keys) <= self.values.dtype.itemsize)
        return np.where(held, self.order[found].astype(np.int64), -1)


@dataclass
class TextColumn:
    codes: npt.NDArray[np.int32]
    """Per listing, the code of its folded value; -1 where it has none."""
    vocabulary: Vocabulary


@dataclass
class TermPostings:
    """For an array attribute: per value (code), the listings holding it, contiguous."""

    owners: npt.NDArray[np.int32]
    codes: npt.NDArray[np.int32]
    offsets: IntArray
    vocabulary: list[str]
    lookup: dict[str, int]

    def holders(self, code: int) -> npt.NDArray[np.int32]:
        return self.owners[self.offsets[code] : self.offsets[code + 1]]


@dataclass
class NumberPostings:
    """For a numeric array attribute: every (value, listing) pair, sorted by value."""

    values: FloatArray
    owners: npt.NDArray[np.int32]


FIRST_RUN = 512
"""The shortest run of the default order read for a page (see :meth:`ColumnIndex.in_default_order`)."""

TEXT_K1 = 1.2
TEXT_B = 0.75
"""BM25's term-frequency saturation and length normalisation, the values FTS5's own bm25() uses."""


WEIGHT_SQL = (
    "CASE col "
    + " ".join(
        f"WHEN '{name}' THEN {w}" for name, w in zip(SEARCHABLE_LISTING_FIELDS, SEARCHABLE_LISTING_WEIGHTS, strict=True)
    )
    + " ELSE 0 END"
)
"""A word instance's weight by the field it is in (an fts5vocab ``instance`` row's ``col``)."""


@dataclass
class TextPostings:
    """Per indexed word, the listings holding it with a field-weighted count, read from FTS5's own index.

    Ranking with FTS5's bm25() costs a few microseconds per match, tens of milliseconds for a common word; over
    these arrays a query's BM25 (fields weighted as in ``SEARCHABLE_LISTING_WEIGHTS``) takes a few milliseconds.
    Words are sorted, so the words a prefix matches are one contiguous run of postings.
    """

    words: list[str]
    offsets: IntArray
    owners: npt.NDArray[np.int32]
    counts: npt.NDArray[np.float32]
    lengths: FloatArray
    average_length: float

    @classmethod
    def build(cls, db: sqlite3.Connection, rowids: IntArray) -> TextPostings:
        weight = WEIGHT_SQL
        # Grouping millions of word instances sorts them: on disk, not in this process's memory. (Changing where
        # temporary data lives empties the temp schema, so this comes first; in a transaction, whoever began it set
        # it, as it cannot be changed there.)
        within = db.in_transaction
        if not within:
            db.execute("PRAGMA temp_store=FILE")
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.listing_instances USING fts5vocab(main, listing_fts, 'instance')"
        )
        words: list[str] = []
        offsets, docs, counts = array("q", [0]), array("q"), array("d")
        previous = None
        for word, doc, count in db.execute(
            f"SELECT term, doc, sum({weight}) FROM temp.listing_instances GROUP BY term, doc ORDER BY term, doc"
        ):
            if word != previous:
                if previous is not None:
                    offsets.append(len(docs))
                words.append(word)
                previous = word
            docs.append(doc)
            counts.append(count)
        if words:
            offsets.append(len(docs))
        size = len(rowids)
        doc_ids = np.frombuffer(docs, dtype=np.int64) if docs else np.empty(0, np.int64)
        weights = np.frombuffer(counts, dtype=np.float64) if counts else np.empty(0, np.float64)
        owners = np.searchsorted(rowids, doc_ids)
        # A listing's length is the sum of its words' weighted counts (the weights are halves: exact in any order),
        # summed here rather than read in a second scan of the vocabulary.
        held = owners < size
        held[held] = rowids[owners[held]] == doc_ids[held]
        lengths = np.bincount(owners[held], weights=weights[held], minlength=size).astype(np.float64)
        if not within:
            db.execute("PRAGMA temp_store=MEMORY")
        average = float(lengths.mean()) if size and lengths.any() else 1.0
        return cls(
            words,
            np.frombuffer(offsets, dtype=np.int64),
            owners.astype(np.int32),
            weights.astype(np.float32),
            lengths,
            average,
        )

    def _runs(self, word: str, prefix: bool) -> list[tuple[int, int]]:
        start = bisect_left(self.words, word)
        if prefix:
            end = bisect_left(self.words, word + "\U0010ffff")
        else:
            end = start + 1 if start < len(self.words) and self.words[start] == word else start
        return [(int(self.offsets[start]), int(self.offsets[end]))] if end > start else []

    def scores(self, query: TextQuery, size: int) -> FloatArray:
        """Per listing its BM25 for the query, NaN where a word of the query is missing from it."""
        total = np.zeros(size)
        matched = np.ones(size, dtype=np.bool_)
        normaliser = TEXT_K1 * (1 - TEXT_B + TEXT_B * self.lengths / self.average_length)
        last = len(query.words) - 1
        for position, word in enumerate(query.words):
            runs = self._runs(word, position == last and len(word) >= MIN_PREFIX_LENGTH)
            for variant in sorted(query.typo_variants.get(word, ())):
                runs += self._runs(variant, False)
            if not runs:
                return np.full(size, np.nan)
            owners = np.concatenate([self.owners[a:b] for a, b in runs])
            weights = np.concatenate([self.counts[a:b] for a, b in runs])
            frequency = np.bincount(owners, weights=weights, minlength=size)
            present = frequency > 0
            matched &= present
            holders = int(np.count_nonzero(present))
            idf = math.log(1 + (size - holders + 0.5) / (holders + 0.5))
            total += idf * frequency * (TEXT_K1 + 1) / (frequency + normaliser)
        return np.where(matched, np.round(total, 6), np.nan)


def text_digests(db: sqlite3.Connection, rowids: IntArray, only: Sequence[int] | None = None) -> npt.NDArray[np.uint64]:
    """Per listing (of ``rowids``; with ``only``, of those rows alone, in that order), a digest of the text it is
    searched by, as FTS5 holds it (0: none)."""
    fields = ", ".join(SEARCHABLE_LISTING_FIELDS)
    if only is None:
        found = np.zeros(len(rowids), dtype=np.uint64)
        rows = db.execute(f"SELECT rowid, {fields} FROM listing_fts")
        where = {int(rowid): position for position, rowid in enumerate(rowids.tolist())}
    else:
        found = np.zeros(len(only), dtype=np.uint64)
        marks = ", ".join("?" * len(only))
        rows = db.execute(f"SELECT rowid, {fields} FROM listing_fts WHERE rowid IN ({marks})", list(only))
        where = {int(rowid): position for position, rowid in enumerate(only)}
    for rowid, *texts in rows:
        position = where.get(int(rowid))
        if position is not None:
            joined = "\x1f".join("" if text is None else str(text) for text in texts).encode()
            found[position] = int.from_bytes(hashlib.blake2b(joined, digest_size=8).digest(), "little")
    return found


def catalogue_name(db: sqlite3.Connection) -> str:
    """The name of the catalogue file ``db`` reads (``catalogue``, ``sandbox``, ``copy-public``), for the metrics."""
    for _, name, file in db.execute("PRAGMA database_list"):
        if name == "main":
            return Path(file).stem if file else "memory"
    return "memory"


class ColumnIndex:
    """The listing index of one store generation, in columns; positions are listings in ``rowid`` order."""

    def __init__(self, db: sqlite3.Connection, generation: int) -> None:
        """The index read from the catalogue ``db`` holds (in its transaction), timed and counted as a build (an
        index mapped from a shared copy is not built again: it is unpickled, not made here)."""
        started = time.perf_counter()
        self._read(db, generation)
        metrics.index_built(catalogue_name(db), time.perf_counter() - started)

    def _read(self, db: sqlite3.Connection, generation: int) -> None:
        self.generation = generation
        scalar_columns = ", ".join(a.column for a in SCALAR_ATTRIBUTES)
        rows = db.execute(
            f"SELECT id, listing_id, province, featured, updated_at, geo_lat, geo_lng, {scalar_columns} "
            "FROM listings ORDER BY id"
        ).fetchall()
        self.size = len(rows)
        self.rowids: IntArray = np.fromiter((r[0] for r in rows), dtype=np.int64, count=self.size)
        self.listing_ids = Vocabulary([r[1] for r in rows])
        """The listing ids by position, and the position of an id (``listing_ids.get(id)``)."""
        self.province = TextColumn(*self._encode([r[2] for r in rows]))
        self.lat: FloatArray = np.array([np.nan if r[5] is None else r[5] for r in rows], dtype=np.float64)
        self.lng: FloatArray = np.array([np.nan if r[6] is None else r[6] for r in rows], dtype=np.float64)
        self.featured: npt.NDArray[np.int64] = np.array([r[3] or 0 for r in rows], dtype=np.int64)
        self.updated: npt.NDArray[np.bytes_] = np.array([str(r[4] or "").encode() for r in rows], dtype=np.bytes_)
        self.order()

        self.text: dict[str, TextColumn] = {}
        self.numbers: dict[str, FloatArray] = {}
        for offset, attribute in enumerate(SCALAR_ATTRIBUTES, start=7):
            values = [r[offset] for r in rows]
            if attribute.kind == "text":
                self.text[attribute.path] = TextColumn(*self._encode(values))
            else:
                self.numbers[attribute.path] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        rows.clear()
        self.terms: dict[str, TermPostings] = {}
        self.number_postings: dict[str, NumberPostings] = {}
        position = {int(rowid): i for i, rowid in enumerate(self.rowids)}
        for attribute in MULTI_ATTRIBUTES:
            if attribute.kind == "number":
                self.number_postings[attribute.path] = self._load_numbers(db, attribute, position)
            else:
                self.terms[attribute.path] = self._load_terms(db, attribute, position)
        self.attribute_rows: dict[str, AttributeRows] = attribute_rows(read_attribute_rows(db, self.rowids))
        """Per attribute, the values its column or postings do not hold as the evaluator reads them (none, most
        often): tested beside them (:mod:`.attribute_rows`)."""
        self.search_text = TextPostings.build(db, self.rowids)
        self.text_digests = text_digests(db, self.rowids)
        """Per listing, a digest of its searchable text: a write that leaves it the same leaves the text postings so
        (see :mod:`.column_patch`)."""
        self.labels: dict[tuple[str, str], str] = {
            (a, t): label for a, t, label in db.execute("SELECT attr, term, label FROM labels")
        }

    def order(self) -> None:
        """The default order: featured first, then most recently updated, then by id."""
        by_id = self._id_ranks()
        updated = np.unique(self.updated, return_inverse=True)[1].reshape(-1) if self.size else by_id
        self._ordered(np.lexsort((by_id, -updated, -self.featured)))

    def _id_ranks(self) -> IntArray:
        """Per position, its listing id's rank among the ids (the default order's last key)."""
        by_id = np.empty(self.size, dtype=np.int64)
        by_id[self.listing_ids.order] = np.arange(self.size)
        return by_id

    def _ordered(self, default_order: npt.NDArray[np.integer]) -> None:
        """Holds the default order and each position's rank in it."""
        self.default_order: IntArray = default_order.astype(np.int64)
        self.order_rank: IntArray = np.empty(self.size, dtype=np.int64)
        self.order_rank[self.default_order] = np.arange(self.size)

    def reorder(self, moved: IntArray) -> None:
        """The default order again after the listings at ``moved`` changed their place in it (a write updates them)
        or came (created, after the others): the others keep their order, and each moved one is put where it now
        belongs, found by bisection (a whole sort of 50,000 listings is 20 ms; this, a few)."""
        by_id = self._id_ranks()
        held = self.default_order
        kept = held[~np.isin(held, moved)]
        featured, updated = self.featured, self.updated

        def key(position: Any) -> tuple[int, _Descending, int]:
            return -int(featured[position]), _Descending(bytes(updated[position])), int(by_id[position])

        placed = sorted((bisect_left(kept, key(p), key=key), key(p), p) for p in moved.tolist())
        self._ordered(np.insert(kept, [at for at, _, _ in placed], [p for _, _, p in placed]))

    @staticmethod
    def _encode(values: list[str | None]) -> tuple[npt.NDArray[np.int32], Vocabulary]:
        lookup: dict[str, int] = {}
        codes = np.fromiter(
            (-1 if v is None else lookup.setdefault(v, len(lookup)) for v in values), dtype=np.int32, count=len(values)
        )
        return codes, Vocabulary(list(lookup))

    @staticmethod
    def _load_terms(db: sqlite3.Connection, attribute: IndexedAttribute, position: dict[int, int]) -> TermPostings:
        owners, codes, offsets = array("i"), array("i"), array("q", [0])
        vocabulary: list[str] = []
        previous = None
        for term, listing in db.execute(
            "SELECT term, listing FROM listing_terms WHERE attr = ? ORDER BY term, listing", (attribute.path,)
        ):
            if term != previous:
                if previous is not None:
                    offsets.append(len(owners))
                vocabulary.append(term)
                previous = term
            owners.append(position[listing])
            codes.append(len(vocabulary) - 1)
        if vocabulary:
            offsets.append(len(owners))
        return TermPostings(
            np.frombuffer(owners, dtype=np.int32) if owners else np.empty(0, np.int32),
            np.frombuffer(codes, dtype=np.int32) if codes else np.empty(0, np.int32),
            np.frombuffer(offsets, dtype=np.int64),
            vocabulary,
            {term: code for code, term in enumerate(vocabulary)},
        )

    @staticmethod
    def _load_numbers(db: sqlite3.Connection, attribute: IndexedAttribute, position: dict[int, int]) -> NumberPostings:
        values, owners = array("d"), array("i")
        for number, listing in db.execute(
            "SELECT num, listing FROM listing_numbers WHERE attr = ? ORDER BY num, listing", (attribute.path,)
        ):
            values.append(number)
            owners.append(position[listing])
        return NumberPostings(
            np.frombuffer(values, dtype=np.float64) if values else np.empty(0, np.float64),
            np.frombuffer(owners, dtype=np.int32) if owners else np.empty(0, np.int32),
        )

    # -- filters -------------------------------------------------------------------------------------------

    def none(self) -> Mask:
        return np.zeros(self.size, dtype=np.bool_)

    def everything(self) -> Mask:
        return np.ones(self.size, dtype=np.bool_)

    def in_province(self, code: str) -> Mask:
        found = self.province.vocabulary.get(code)
        return self.none() if found is None else self.province.codes == found

    def positions_of_rowids(self, rowids: IntArray) -> IntArray:
        found = np.searchsorted(self.rowids, rowids)
        found = np.clip(found, 0, max(self.size - 1, 0))
        return found[self.rowids[found] == rowids] if self.size else np.empty(0, np.int64)

    def filter(self, expr: Expr, fallback: Fallback, among: Mask | None = None) -> Mask:
        """The listings that satisfy ``expr``, exactly among ``among`` (every listing when None; outside it, the
        caller keeps none). Tests of paths the index does not hold are answered by ``fallback``, asked only about
        the listings the province and an AND's other tests leave: those are tested first."""
        if isinstance(expr, And):
            result = among
            for item in sorted(expr.items, key=lambda item: not index_answers(item)):
                found = self.filter(item, fallback, result)
                result = found if result is None else result & found
            assert result is not None
            return result
        if isinstance(expr, Or):
            result = self.filter(expr.items[0], fallback, among)
            for item in expr.items[1:]:
                result |= self.filter(item, fallback, among)
            return result
        if isinstance(expr, Not):
            return ~self.filter(expr.expr, fallback, among)
        if isinstance(expr, Compare) and expr.op == "!=":
            return ~self.filter(Compare(expr.attr, "=", expr.value), fallback, among)
        attribute = LISTING_ATTRIBUTES.get(canonical_path(expr.attr))
        if attribute is None:
            return fallback(expr, among)
        assert isinstance(expr, Match | Compare | Range)
        return self._attribute_test(attribute, expr)

    def _attribute_test(self, attribute: IndexedAttribute, expr: Match | Compare | Range) -> Mask:
        """The listings one of whose values at ``attribute`` passes ``expr``: those its column or postings find,
        and those of its kept rows (:mod:`.attribute_rows`)."""
        if isinstance(expr, Match):
            found = self._match(attribute, expr)
        elif attribute.kind == "number":  # a comparison reads a number; text and flags' numbers are rows
            found = self._numeric(attribute, *numeric_bounds(expr))
        else:
            found = self.none()
        rows = self.attribute_rows.get(attribute.path)
        return found if rows is None else rows.beside(found, attribute, expr, self.numbers.get(attribute.path))

    def _match(self, attribute: IndexedAttribute, expr: Match) -> Mask:
        if attribute.kind == "number":
            number = parse_number(expr.value.strip())
            return self.none() if number is None else self._numeric(attribute, number, number)
        if attribute.kind == "bool":
            word = BOOLEAN_WORDS.get(fold_text(expr.value))
            if word is None:
                return self.none()
            if not attribute.multi:
                return self.numbers[attribute.path] == (1.0 if word == "true" else 0.0)
            return self._holders(self.terms[attribute.path], word)
        term = fold_text(expr.value)
        if attribute.multi:
            return self._holders(self.terms[attribute.path], term)
        column = self.text[attribute.path]
        code = column.vocabulary.get(term)
        return self.none() if code is None else column.codes == code

    def _holders(self, postings: TermPostings, term: str) -> Mask:
        result = self.none()
        code = postings.lookup.get(term)
        if code is not None:
            result[postings.holders(code)] = True
        return result

    def _numeric(self, attribute: IndexedAttribute, low: float, high: float) -> Mask:
        if not attribute.multi:
            values = self.numbers[attribute.path]
            with np.errstate(invalid="ignore"):
                return (values >= low) & (values <= high)
        postings = self.number_postings[attribute.path]
        start = int(np.searchsorted(postings.values, low, side="left"))
        end = int(np.searchsorted(postings.values, high, side="right"))
        result = self.none()
        result[postings.owners[start:end]] = True
        return result

    # -- distance and order --------------------------------------------------------------------------------

    def in_box(self, min_lat: float, max_lat: float, min_lng: float, max_lng: float) -> Mask:
        """Listings whose position is inside these bounds (none without a position)."""
        with np.errstate(invalid="ignore"):
            return (self.lat >= min_lat) & (self.lat <= max_lat) & (self.lng >= min_lng) & (self.lng <= max_lng)

    def distances(self, lat: float, lng: float, positions: IntArray) -> FloatArray:
        phi1, phi2 = math.radians(lat), np.radians(self.lat[positions])
        d_phi = phi2 - phi1
        d_lambda = np.radians(self.lng[positions]) - math.radians(lng)
        h = np.sin(d_phi / 2) ** 2 + math.cos(phi1) * np.cos(phi2) * np.sin(d_lambda / 2) ** 2
        with np.errstate(invalid="ignore"):
            return 2 * EARTH_RADIUS_M * np.arcsin(np.minimum(1.0, np.sqrt(h)))

    def in_default_order(self, mask: Mask, count: int | None = None) -> IntArray:
        """The listings of ``mask`` in the default order; only the first ``count`` when given. Those are looked
        for in growing runs of the order: the first page of a broad filter reads a few hundred entries of the
        order instead of gathering all of it (0.15-0.3 ms at 50,000 listings)."""
        if count is None or count >= self.size:
            return self.default_order[mask[self.default_order]]
        found: list[IntArray] = []
        have, start, run = 0, 0, max(FIRST_RUN, 4 * count)
        while have < count and start < self.size:
            part = self.default_order[start : start + run]
            held = part[mask[part]]
            found.append(held)
            have += len(held)
            start += run
            run *= 4
        return np.concatenate(found)[:count] if found else np.empty(0, dtype=np.int64)

    # -- for facets (counted in precon.service.search.facets) ----------------------------------------------

    def value_bitmaps(self, path: str) -> npt.NDArray[np.uint64] | None:
        """Per value of a text attribute, the listings holding it as a bitmap (a row of 64-bit words: bit *i* is listing
        *i*, the last word padded with zeros), where the bitmaps hold fewer words than the attribute has postings
        (listings with a value, for a single-valued one), else None. Amenities hold some fifteen values a listing:
        counting them over a filter by gathering every posting took a millisecond or two at 50,000 listings; ANDing each
        value's bitmap with the filter's and counting bits takes a twentieth of that. An attribute of many values and
        few postings each (builders, cities) is counted faster from its postings. Made on first use, in each process (at
        most twice the size of the postings' owners), never written with the index."""
        cache: dict[str, npt.NDArray[np.uint64] | None] = self.__dict__.setdefault("_bitmaps", {})
        if path not in cache:
            words = (self.size + 63) // 64
            if path in self.terms:
                postings = self.terms[path]
                values, holders = len(postings.vocabulary), postings.holders
                posted = len(postings.owners)
            else:
                codes = self.text[path].codes
                values, posted = len(self.text[path].vocabulary), int((codes >= 0).sum())
                holders = lambda code: np.flatnonzero(codes == code)  # noqa: E731 - once per value, on first use
            cache[path] = _bitmaps(values, holders, words) if values * words < posted else None
        return cache[path]

    def __getstate__(self) -> dict[str, object]:
        return {name: value for name, value in self.__dict__.items() if name != "_bitmaps"}


def _bitmaps(values: int, holders: Callable[[int], npt.NDArray[np.integer]], words: int) -> npt.NDArray[np.uint64]:
    """One row of ``words`` 64-bit words per value: bit *i* set where listing *i* is one of ``holders(value)``."""
    bitmaps = np.zeros((values, words), dtype=np.uint64)
    row = np.zeros(words * 64, dtype=bool)
    for code in range(values):
        row[:] = False
        row[holders(code)] = True
        bitmaps[code] = np.packbits(row, bitorder="little").view(np.uint64)
    return bitmaps


@functools.total_ordering
class _Descending:
    """A value that sorts the other way round (the most recently updated first)."""

    __slots__ = ("value",)

    def __init__(self, value: bytes) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.value == other.value

    def __lt__(self, other: _Descending) -> bool:
        return self.value > other.value

    def __hash__(self) -> int:
        return hash(self.value)
