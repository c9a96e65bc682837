"""The read path of the SQLite store: listing searches, facets, lookups and similarity (the profiles':
:mod:`.profile_reads`).

:class:`SQLiteReads` is the part of :class:`~precon.service.stores.sqlite.store.SQLiteStore` that answers questions.
A listing search runs on the in-memory column index (:class:`~precon.service.search.columns.ColumnIndex`, with
the floor plans' :class:`~precon.service.search.plan_index.PlanIndex` and, for paths neither holds, the
rows that hold their values: :mod:`precon.service.search.held_values`), its facets counted by
:mod:`precon.service.search.facets`; text matched in some fields only (v1-lite's) is found and ranked by FTS5. The
caches here (text relevance, typo vocabulary, labels, the held values) follow the catalogue's generation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from precon.filters import Compare, Expr, Match, Range
from precon.schema import SEARCHABLE_LISTING_WEIGHTS
from precon.service.search.column_patch import patched, too_many_written, written_count
from precon.service.search.columns import ColumnIndex, FloatArray, IntArray, Mask
from precon.service.search.facets import facet_for
from precon.service.search.held_values import answered_by
from precon.service.search.index_tests import left_to_fallback
from precon.service.search.plan_index import PlanIndex
from precon.service.search.plan_layers import Plans, base_of, layered
from precon.service.search.plan_patch import plans_patched
from precon.service.search.text import TextQuery, TypoIndex
from precon.service.stores.records import (
    BOX_MARGIN_DEG,
    _bounding_box,
    add_similarity_terms,
    decode_documents,
    similarity_rows,
    with_typo_retry,
)
from precon.service.stores.sqlite.fields import read_fields
from precon.service.stores.sqlite.profile_reads import SQLiteProfiles
from precon.service.stores.types import (
    GeoCircle,
    ListingQuery,
    SearchHits,
    SimilarityFeatures,
)

TEXT_CACHE_ENTRIES = 16
"""Text questions whose relevance arrays are kept: 16 × 8 bytes × listings (6.4 MB at 50,000)."""


log = logging.getLogger("precon.store")


class SQLiteReads(SQLiteProfiles):
    """Questions to the catalogue: each answered from one catalogue generation's indexes."""

    # -- cached per generation -----------------------------------------------------------------------------

    def _current_index(self) -> ColumnIndex | None:
        """The column index held, where it is of the current generation (what follows from it need not be read)."""
        index = self._column_index
        return index if index is not None and index.generation == self.generation() else None

    def _listing_typos_to_search(self) -> TypoIndex:
        """The listings' words typos are looked up in: with :attr:`background_index`, those of the generation before
        while the current one's are built on the index's thread (a search is not held up building them)."""
        if self.background_index and not self._typo_cache.holds(self.generation()):
            held = self._typo_cache.latest()
            if held is not None:
                self._index_to_search()
                return held
        return self._listing_typos()

    def _listing_typos(self) -> TypoIndex:
        """The listings' typo index of this generation: the words of its column index where that is held (reading
        FTS5's vocabulary scans its whole index: 90 ms at 50,000 listings), kept from the generation before where they
        are the same (a day's sales and prices change no word)."""

        def read() -> TypoIndex:
            index = self._current_index()
            if index is not None:
                words: Iterable[str] = index.search_text.words
            else:
                words = [r[0] for r in self._db().execute("SELECT term FROM listing_vocab")]
            return TypoIndex.kept_or_built(words, self._typo_cache.latest())

        return self._typo_cache.get(self.generation(), read)

    def _labels(self) -> dict[tuple[str, str], str]:
        """Each facet value's display form: the column index's where it is of this generation (it keeps them across
        a patch), else read."""

        def read() -> dict[tuple[str, str], str]:
            index = self._current_index()
            if index is not None:
                return index.labels
            rows = self._db().execute("SELECT attr, term, label FROM labels")
            return {(a, t): label for a, t, label in rows}

        return self._label_cache.get(self.generation(), read)

    def listing_attribute_names(self) -> frozenset[str]:
        def read() -> frozenset[str]:
            return frozenset(r[0] for r in self._db().execute("SELECT name FROM listing_attributes"))

        return self._attribute_cache.get(self.generation(), read)

    def search_listings(self, query: ListingQuery) -> SearchHits:
        index = self._index_to_search()

        def search(text: TextQuery | None) -> SearchHits:
            return self._search_columns(query, text, index)

        return with_typo_retry(search, query.text, self._listing_typos_to_search)

    def answers_from_memory(
        self, text_in_some_fields: bool, unit_filter: bool, filter_expr: Expr | None = None
    ) -> bool:
        """Whether a listing search would be answered from indexes this process already holds for the current
        generation (with :attr:`background_index`, the one it searches while the current one is built): CPU for a
        few milliseconds and a read of the page's records, no index to build, no FTS5 query; for a filter on a path
        the column index lacks, the floor plans' index or that path's values held too, and few enough
        (:meth:`HeldValues.answers_at_once`; never the documents). Such a search may run on the event loop (see
        :meth:`precon.service.api.calls.Service.run_listing_search`)."""
        if text_in_some_fields:
            return False
        index = self._column_index
        if index is None:
            return False
        if not self.background_index:
            generation = self.generation()
            if self._index_thread is not None or index.generation != generation:
                return False
            if not (self._typo_cache.holds(generation) and self._label_cache.holds(generation)):
                return False
        plans = self._plan_index
        plans_held = plans is not None and plans.generation == index.generation
        if unit_filter and not plans_held:
            return False
        return filter_expr is None or all(
            self._held_for(test, index, plans_held) for test in left_to_fallback(filter_expr)
        )

    def _held_for(self, test: Expr, index: ColumnIndex, plans_held: bool) -> bool:
        """Whether what answers ``test`` (one the column index leaves to :meth:`_unindexed`) is held for ``index``'s
        generation."""
        unit_test, source = answered_by(test)
        return (unit_test is None or plans_held) and self._held_values.answers_at_once(source, index.generation)

    def warm(self, now: bool = False) -> None:
        """Builds the in-memory indexes now rather than on the first query. With :attr:`background_index`, the
        column index is built on its thread (the one before serves meanwhile), unless ``now``: a replica starting,
        or one that has just written through itself and reads its writes."""
        if self.background_index and not now:
            self._index_to_search()
        else:
            self._columns()
        self._listing_typos()
        self._labels()
        if self._profile_typo_cache.latest() is None:  # at start; later, when a profile search needs it
            self._profile_typos()

    def refresh(self) -> bool:
        """The indexes this process holds moved to the current generation (:mod:`.refresher`): the column index
        with its typo index and labels, and the floor plans' index where one is held; nothing it does not hold, and
        nothing after a write of more listings than a patch takes (an import of thousands commits batch after batch:
        the index is built whole once a request asks, not after each batch). Whether it refreshed."""
        index = self._column_index
        if index is None:
            return False
        if too_many_written(written_count(self._db(), index.generation), index.size):
            return False
        self.warm()
        if self._plan_index is not None:
            self._plans(self._index_to_search())
        return True

    def _index_to_search(self) -> ColumnIndex:
        """The column index a listing search uses now: the current generation's, built first if need be. With
        :attr:`background_index` (a replica's copy, which follows every write), a new generation's index is built on
        a thread instead, and until it is ready searches use the index of the generation before: they answer as the
        catalogue stood then, whole (a page holding a record deleted since is answered again on the current one).
        Before any index was built, the current one is built first."""
        index = self._column_index
        if not self.background_index or index is None:
            return self._columns()
        if index.generation == self.generation():
            return index
        with self._index_lock:
            if self._index_thread is None:
                self._index_thread = threading.Thread(target=self._build_behind, name="precon-index", daemon=True)
                self._index_thread.start()
        return index

    def _build_behind(self) -> None:
        """Builds the column index (and the floor plans', if one was in use) of the newest generation, until the
        index built is of the newest."""
        try:
            while True:
                generation = self.generation()
                index = self._build_columns(generation)
                plans = None if self._plan_index is None else self._plan_rows(index)
                with self._index_lock:
                    self._column_index = index
                    if plans is not None:
                        self._plan_index = plans
                self._listing_typos()
                self._labels()
                if self.generation() == index.generation:
                    return
        except Exception:  # the next search tries again; until then the index before answers
            log.exception("building the column index of %s failed", self.path)
        finally:
            with self._index_lock:
                self._index_thread = None

    def _columns(self) -> ColumnIndex:
        generation = self.generation()
        index = self._column_index
        if index is None or index.generation != generation:
            with self._index_lock:
                index = self._column_index
                if index is None or index.generation != generation:
                    index = self._build_columns(generation)
                    self._column_index = index
        return index

    def _build_columns(self, generation: int) -> ColumnIndex:
        """The column index of this generation: the one held moved to it by the listings written since
        (:mod:`~precon.service.search.column_patch`), else built whole."""
        if self._shared is None:
            return self._read_columns(self._column_index)[1]

        def build() -> tuple[str, ColumnIndex]:
            current, index = self._read_columns(self._column_index)
            return self._index_key(current), index

        index: ColumnIndex = self._shared.get("columns", lambda: self._index_key(self.generation()), build)
        return index

    def _read_columns(self, held: ColumnIndex | None = None) -> tuple[int, ColumnIndex]:
        """The column index of the catalogue as it stands, read in one transaction (a write committed meanwhile is
        not half in it), and its generation: ``held`` patched where it can be, else read whole."""
        db = self._db()
        db.execute("PRAGMA temp_store=FILE")  # where the text postings sort: it cannot change inside a transaction
        db.execute("BEGIN")
        try:
            generation = self._read_generation()
            found = None if held is None else patched(held, db, generation)
            return generation, found if found is not None else ColumnIndex(db, generation)
        finally:
            db.execute("COMMIT")
            db.execute("PRAGMA temp_store=MEMORY")

    def _plans(self, index: ColumnIndex) -> Plans:
        """The floor plans in columns, for ``unitFilter``: built on the first such query of a generation."""
        plans = self._plan_index
        if plans is None or plans.generation != index.generation:
            with self._index_lock:
                plans = self._plan_index
                if plans is None or plans.generation != index.generation:
                    plans = self._plan_rows(index)
                    self._plan_index = plans
        return plans

    def _plan_rows(self, index: ColumnIndex) -> Plans:
        """The floor plans of ``index``'s listings in columns (mapped, when another process built them): the ones
        held with a layer of the listings written since (:mod:`~precon.service.search.plan_layers`), or moved to
        its generation by them (:mod:`~precon.service.search.plan_patch`) once too many were, else read whole."""

        def build() -> Plans:
            held = self._plan_index
            if held is None:
                return PlanIndex(self._db(), index.rowids, index.generation)
            found = layered(held, self._db(), index) or plans_patched(base_of(held), self._db(), index)
            return found if found is not None else PlanIndex(self._db(), index.rowids, index.generation)

        if self._shared is None:
            return build()
        key = self._index_key(index.generation)
        plans: Plans = self._shared.get("plans", lambda: key, lambda: (key, build()))
        return plans

    def _unindexed(self, index: ColumnIndex, expr: Expr, among: Mask | None) -> Mask:
        """Listings matching a test the column index leaves to rows: a unit's price or floor compared from the
        floor plans' index (and the rows holding the values it cannot, lists), any other from the rows that hold the
        path's values (:class:`HeldValues`)."""
        unit_test, source = answered_by(expr)
        assert isinstance(expr, Match | Compare | Range)
        found = self._held_values.mask(self._db(), index, expr, source)
        if unit_test is not None:
            found |= self._plans(index).listings_matching(unit_test, among=among)
        return found

    def _text_scores(self, index: ColumnIndex, text: TextQuery) -> FloatArray:
        """Per listing, its relevance to the text (NaN where it does not match), kept for repeated questions:
        paging through a search, or changing its filters and facets, asks the same again."""
        expression = text.fts_expression()
        key = (index.generation, expression)
        cached = self._text_cache.get(key)
        if cached is not None:
            self._text_cache.move_to_end(key)
            return cached
        score = self._fields_scores(index, text) if text.columns else index.search_text.scores(text, index.size)
        with self._index_lock:
            self._text_cache[key] = score
            while len(self._text_cache) > TEXT_CACHE_ENTRIES:
                self._text_cache.popitem(last=False)
        return score

    def _fields_scores(self, index: ColumnIndex, text: TextQuery) -> FloatArray:
        """Per listing its relevance to text matched in some fields only (v1-lite's): FTS5's column filter finds
        them and its bm25() ranks them (the in-memory postings weigh every field together)."""
        weights = ", ".join(str(w) for w in SEARCHABLE_LISTING_WEIGHTS)
        found = self._db().execute(
            f"SELECT rowid, bm25(listing_fts, {weights}) FROM listing_fts WHERE listing_fts MATCH ?",
            (text.fts_expression(),),
        )
        rows = found.fetchall()
        rowids = np.array([row[0] for row in rows], dtype=np.int64)
        # Rounded as FTS5's rank always was here (Python's round, which numpy's differs from in the last digit).
        ranks = np.array([round(-row[1], 6) for row in rows], dtype=np.float64)
        positions = np.searchsorted(index.rowids, rowids)
        held = positions < index.size  # not a listing written since the index was built
        held[held] = index.rowids[positions[held]] == rowids[held]
        score = np.full(index.size, np.nan)
        score[positions[held]] = ranks[held]
        return score

    def _search_columns(self, query: ListingQuery, text: TextQuery | None, index: ColumnIndex) -> SearchHits:
        mask, score, distance = self._matching(query, text, index)
        total = int(np.count_nonzero(mask))
        facets = {name: facet_for(name).count_columns(index, mask, query.max_facet_values) for name in query.facets}
        if not (query.limit > 0 and query.offset < total):
            return SearchHits(total, [], [], facets, text)
        page = self._ordered(query, index, mask, score, distance)[query.offset : query.offset + query.limit]
        page_rowids = [int(r) for r in index.rowids[page]]
        partial = None if query.fields is None or query.raw else read_fields(self._db(), page_rowids, query.fields)
        if partial is None:
            sql = f"SELECT id, doc FROM listing_docs WHERE id IN ({', '.join('?' * len(page_rowids))})"
            blobs = dict(self._db().execute(sql, page_rowids).fetchall())
        stored = blobs if partial is None else partial
        if len(stored) < len(page_rowids):  # deleted since the index was built (a replica's copy follows writes)
            current = self._columns()
            if current.generation != index.generation:
                return self._search_columns(query, text, current)
        page = np.array([p for p, r in zip(page.tolist(), page_rowids, strict=True) if r in stored], dtype=np.int64)
        page_rowids = [r for r in page_rowids if r in stored]
        scores = [None if score is None else float(score[p]) for p in page]
        matched = None if query.unit_filter is None else self._plans(index).page_matches(query.unit_filter, page)
        if partial is not None:
            return SearchHits(total, [partial[r] for r in page_rowids], scores, facets, text, matched=matched)
        if query.raw:
            source = f"{self.path}:{index.generation}"
            raw = [(r, blobs[r]) for r in page_rowids]
            return SearchHits(total, [], scores, facets, text, blobs=raw, source=source, matched=matched)
        documents = decode_documents(blobs[r] for r in page_rowids)
        return SearchHits(total, documents, scores, facets, text, matched=matched)

    def _matching(
        self, query: ListingQuery, text: TextQuery | None, index: ColumnIndex
    ) -> tuple[Mask, FloatArray | None, FloatArray | None]:
        """The listings the query matches; with text, each listing's relevance (NaN where it does not match); with
        a circle, each listing's distance from its centre (infinite where not measured)."""
        mask = index.everything() if query.province is None else index.in_province(query.province)
        if query.filter is not None:
            mask &= index.filter(query.filter, lambda expr, among: self._unindexed(index, expr, among), mask)
        if query.unit_filter is not None:
            mask = self._plans(index).listings_matching(query.unit_filter, among=mask)
        score = None
        if text is not None:
            score = self._text_scores(index, text)
            mask &= ~np.isnan(score)
        distance = None
        if query.circle is not None:
            min_lat, max_lat, min_lng, max_lng = _bounding_box(query.circle)
            if min_lng >= -180.0 and max_lng <= 180.0:  # a box across the antimeridian would leave some out
                # Two comparisons a listing instead of the haversine for all: only those in the box are measured.
                mask &= index.in_box(min_lat - BOX_MARGIN_DEG, max_lat + BOX_MARGIN_DEG, min_lng - BOX_MARGIN_DEG,
                                     max_lng + BOX_MARGIN_DEG)  # fmt: skip
            candidates = np.flatnonzero(mask)
            distance = np.full(index.size, np.inf)
            distance[candidates] = index.distances(query.circle.lat, query.circle.lng, candidates)
            mask &= distance <= query.circle.radius_m
        return mask, score, distance

    def _ordered(
        self,
        query: ListingQuery,
        index: ColumnIndex,
        mask: Mask,
        score: FloatArray | None,
        distance: FloatArray | None,
    ) -> IntArray:
        """The matches in the query's order, as far as the end of its page at least: by relevance, views, distance
        or the default order (ties in the default order)."""
        wanted = query.offset + query.limit

        def first_by(key: FloatArray, descending: bool = False) -> IntArray:
            """The first ``wanted`` matches by ``key`` (per listing), ties in the default order."""
            matched = np.flatnonzero(mask)
            values = key[matched]
            return _first_in_order(matched, -values if descending else values, index.order_rank[matched], wanted)

        if score is not None:
            return first_by(score, descending=True)
        if query.order == "trending":
            views = np.full(index.size, -np.inf)
            viewed = self._db().execute("SELECT listing_id, rank FROM listing_views").fetchall()
            if viewed:
                positions = index.listing_ids.codes_of([row[0] for row in viewed])
                ranks = np.array([row[1] for row in viewed], dtype=np.float64)
                held = positions >= 0
                views[positions[held]] = ranks[held]
            return first_by(views, descending=True)
        if distance is not None:
            return first_by(distance)
        return index.in_default_order(mask, wanted)

    def get_listings(self, ids: Sequence[str], province: str | None) -> dict[str, dict[str, Any]]:
        if not ids:
            return {}
        db = self._db()
        marks = ", ".join("?" * len(ids))
        sql = (
            "SELECT l.listing_id, d.doc FROM listings l JOIN listing_docs d ON d.id = l.id "
            f"WHERE l.listing_id IN ({marks})"
        )
        params: list[Any] = list(ids)
        if province is not None:
            sql += " AND l.province = ?"
            params.append(province)
        rows = db.execute(sql, params).fetchall()
        documents = decode_documents(blob for _, blob in rows)
        return {listing_id: document for (listing_id, _), document in zip(rows, documents, strict=True)}

    def matching_listing_ids(self, query: ListingQuery) -> list[str]:
        """The ids of every listing the query matches now (a changes feed keeps their entries)."""
        index = self._index_to_search()
        mask, _, _ = self._matching(query, query.text, index)
        return [index.listing_ids[int(position)] for position in np.flatnonzero(mask)]

    def listings_holding_plans(self, plan_ids: Iterable[str]) -> dict[str, list[str]]:
        """For each of ``plan_ids`` that a stored floor plan carries, the ids of the listings holding it."""
        wanted = sorted(set(plan_ids))
        holders: dict[str, list[str]] = {}
        db = self._db()
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = db.execute(
                "SELECT p.plan_id, l.listing_id FROM plan_ids p JOIN listings l ON l.id = p.listing "
                f"WHERE p.plan_id IN ({', '.join('?' * len(chunk))}) ORDER BY p.plan_id, l.listing_id",
                chunk,
            )
            for plan_id, listing_id in rows:
                holders.setdefault(plan_id, []).append(listing_id)
        return holders

    def similarity_features(
        self, listing_id: str, province: str | None, radius_m: float, limit: int
    ) -> tuple[SimilarityFeatures | None, list[SimilarityFeatures]]:
        """The listing's features and those of up to ``limit`` others: nearby first, then the province."""
        db = self._db()
        columns = "l.id, l.listing_id, l.geo_lat, l.geo_lng, l.c_startPrice, l.c_minBeds, l.c_maxBeds"
        scope, scope_params = ("AND l.province = ?", [province]) if province else ("", [])
        target = db.execute(
            f"SELECT {columns} FROM listings l WHERE l.listing_id = ? {scope}", [listing_id, *scope_params]
        ).fetchone()
        if target is None:
            return None, []
        rows: list[tuple[Any, ...]] = []
        if target[2] is not None:
            circle = GeoCircle(target[2], target[3], radius_m)
            box = _bounding_box(circle)
            rows = db.execute(
                f"SELECT {columns} FROM listings l WHERE l.id IN (SELECT id FROM listing_geo WHERE max_lat >= ? "
                f"AND min_lat <= ? AND max_lng >= ? AND min_lng <= ?) AND l.id != ? {scope} LIMIT ?",
                [box[0], box[1], box[2], box[3], target[0], *scope_params, limit],
            ).fetchall()
        if len(rows) < limit:
            seen = [r[0] for r in rows] + [target[0]]
            marks = ", ".join("?" * len(seen))
            rows += db.execute(
                f"SELECT {columns} FROM listings l WHERE l.id NOT IN ({marks}) {scope} "
                "ORDER BY l.featured DESC, l.updated_at DESC, l.listing_id LIMIT ?",
                [*seen, *scope_params, limit - len(rows)],
            ).fetchall()
        features = similarity_rows([target, *rows])
        ids = list(features)
        for start in range(0, len(ids), 900):
            chunk = ids[start : start + 900]
            marks = ", ".join("?" * len(chunk))
            terms = db.execute(
                f"SELECT listing, attr, term FROM listing_terms WHERE listing IN ({marks}) "
                "AND attr IN ('type', 'amenities')",
                chunk,
            )
            add_similarity_terms(features, terms)
        target_features = features.pop(target[0])
        return target_features, list(features.values())

    def health(self) -> dict[str, Any]:
        """What ``/healthz`` says of the catalogue: its counts."""
        return dict(self.counts())

    def counts(self) -> dict[str, int]:
        db = self._db()
        return {
            "listings": db.execute("SELECT count(*) FROM listings").fetchone()[0],
            "profiles": db.execute("SELECT count(*) FROM profiles").fetchone()[0],
        }


def _first_in_order(matched: IntArray, primary: FloatArray, rank: IntArray, count: int) -> IntArray:
    """``matched`` ordered by ``primary``, ties by ``rank`` (distinct), as far as its first ``count`` at least: what
    a whole sort gives for those, at the cost of a partition and a sort of the few that can be among them (a whole
    sort of 50,000 costs more than the rest of a search)."""
    if count < len(matched):
        threshold = np.partition(primary, count - 1)[count - 1]
        if not np.isnan(threshold):
            kept = primary <= threshold
            matched, primary, rank = matched[kept], primary[kept], rank[kept]
    ordered: IntArray = matched[np.lexsort((rank, primary))]
    return ordered
