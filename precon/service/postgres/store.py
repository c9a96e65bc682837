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
from the vocabulary (``ts_stat``), as the SQLite store does. Relevance is the SQLite store's, computed in SQL
(:mod:`.relevance`) from each record's words and their field-weighted counts (``listing_words``,
``profile_words``): the column index's BM25 for listings, FTS5's ``bm25()`` for profiles and for text in some
fields only; the same scores, so the same order.

Connections come from a :class:`psycopg_pool.ConnectionPool`. Writes take a transaction-scoped advisory lock
(one writer at a time across replicas, as SQLite has one), raise the catalogue's generation and ``NOTIFY``
:data:`CHANNEL` with it, so that a replica's caches (typo vocabulary, labels, fallback filters) follow.

The store is made of parts by what they do: :mod:`.catalogue_base` (the pool, transactions, generation),
:mod:`.writes` (upserts, deletes, profile provinces, views), :mod:`.reads` (searches, facets, profiles,
similarity), :mod:`.text_search` (``tsvector``/``tsquery``, the words rows) and :mod:`.relevance` (the scores);
what it does with records is shared with the
SQLite store (:mod:`precon.service.catalogue_records`). The names imported from here before are re-exported.
"""

from __future__ import annotations

from typing import Literal

from precon.service.postgres.catalogue_base import CHANNEL, WRITE_LOCK, PostgresCatalogueBase, _document, _json
from precon.service.postgres.reads import FALLBACK_CACHE_ENTRIES, TIE_BREAK, PostgresReads, _distance_sql
from precon.service.postgres.text_search import _field_words, _lexeme, _text_match, tsquery, tsvector
from precon.service.postgres.writes import PostgresWrites

__all__ = [
    "CHANNEL",
    "FALLBACK_CACHE_ENTRIES",
    "TIE_BREAK",
    "WRITE_LOCK",
    "PostgresCatalogueBase",
    "PostgresCatalogueStore",
    "_distance_sql",
    "_document",
    "_field_words",
    "_json",
    "_lexeme",
    "_text_match",
    "tsquery",
    "tsvector",
]


class PostgresCatalogueStore(PostgresWrites, PostgresReads):
    """A catalogue in a PostgreSQL 15 database (made or upgraded by the migrations when ``migrate``)."""

    engine: Literal["postgres"] = "postgres"
