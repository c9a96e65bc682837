"""Text relevance on PostgreSQL equals the SQLite store's: the same matches, in the same order, with the same scores.

One generated catalogue (with some accented and repeated words added) is loaded into the SQLite store (its default
column engine: listings ranked by the column index's BM25, profiles and field-restricted listing searches by
FTS5's ``bm25()``) and into the PostgreSQL store. Seeded random text queries drawn from the catalogue's own words
(whole words, prefixes, accented and capitalised spellings, one-typo forms, one to three words, restricted to some
fields, with filters, several pages) are asked of both, and the answers compared in full: totals, ids in order,
scores to the last bit.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from precon import filters
from precon.service import catalogue
from precon.service.postgres import migrations
from precon.service.postgres.store import PostgresCatalogueStore
from precon.service.postgres.text_search import word_counts, words_copy_lines
from precon.service.runtime import load
from precon.service.schema import SEARCHABLE_LISTING_FIELDS, SEARCHABLE_PROFILE_FIELDS
from precon.service.search import WORD, TextQuery, fold, searchable_text
from precon.service.store import ListingQuery, ProfileQuery, SearchHits, SQLiteStore
from tests import pg_support

pg_cluster = pg_support.pg_cluster

SEED = 11
COUNT = 400
QUERIES = 120
PAGES = ((0, 20), (20, 20), (3, 7))
LISTING_FILTERS: tuple[dict[str, Any], ...] = (
    {},
    {"province": "on"},
    {"filter": filters.parse("type:Condo")},
    {"filter": filters.parse("startPrice > 500000")},
)
ACCENTED = ("Québec", "Montréal", "Lévis", "Trois-Rivières", "Gatineau Élan", "Château", "café")


def _with_accents(built: catalogue.Catalogue) -> list[dict[str, Any]]:
    """The catalogue's listings, some renamed with accented words and some with a word said twice (frequencies
    above one, in names and summaries)."""
    rng = random.Random(SEED)
    listings = []
    for record in built.listings:
        record = dict(record)
        roll = rng.random()
        if roll < 0.15:
            record["name"] = f"{record.get('name', '')} {rng.choice(ACCENTED)}"
        elif roll < 0.25:
            word = rng.choice(WORD.findall(str(record.get("summary", ""))) or ["Lofts"])
            record["summary"] = f"{record.get('summary', '')} {word} {word.upper()}"
        listings.append(record)
    return listings


@pytest.fixture(scope="module")
def built() -> catalogue.Catalogue:
    return catalogue.generate(COUNT, SEED)


@pytest.fixture(scope="module")
def stores(
    pg_cluster: pg_support.Cluster, tmp_path_factory: pytest.TempPathFactory, built: catalogue.Catalogue
) -> Iterator[tuple[SQLiteStore, PostgresCatalogueStore]]:
    """(the SQLite store, as it runs by default: the column engine; the PostgreSQL store) over one catalogue."""
    name = pg_cluster.database(pg_support.migrate)
    sqlite = SQLiteStore(tmp_path_factory.mktemp("text-rank") / "catalogue.sqlite3")
    postgres = PostgresCatalogueStore(pg_cluster.conninfo(name), migrate=False)
    listings = _with_accents(built)
    for store in (sqlite, postgres):
        load(store, listings, built.profiles)
    try:
        yield sqlite, postgres
    finally:
        sqlite.close()
        postgres.close()
        pg_cluster.drop(name)


def _spellings(records: list[dict[str, Any]], fields: tuple[str, ...]) -> list[list[str]]:
    """Per record, the words of its searchable fields as written (case and accents kept), each once."""
    return [
        list(dict.fromkeys(word for text in searchable_text(record, fields) for word in WORD.findall(text)))
        for record in records
    ]


def _typo(rng: random.Random, word: str) -> str:
    """``word`` with one letter deleted, replaced, inserted, or two neighbours swapped."""
    i = rng.randrange(len(word) - 1)
    letter = rng.choice("aeioustrn")
    return rng.choice(
        [
            word[:i] + word[i + 1 :],
            word[:i] + letter + word[i + 1 :],
            word[:i] + letter + word[i:],
            word[:i] + word[i + 1] + word[i] + word[i + 2 :],
        ]
    )


def _query_text(rng: random.Random, spellings: list[list[str]]) -> str:
    """A search string of one to three words of a record (or, one time in five, of the whole catalogue): as
    written, folded, upper-cased, one of them with a typo, the last cut to a prefix."""
    record = rng.choice(spellings)
    if rng.random() < 0.2:
        record = [rng.choice(rng.choice(spellings)) for _ in range(3)]
    chosen = [rng.choice(record) for _ in range(rng.choice((1, 1, 2, 2, 3)))]
    chosen = [rng.choice((word, fold(word), word.upper())) for word in chosen]
    roll = rng.random()
    if roll < 0.25:
        position = rng.randrange(len(chosen))
        if len(chosen[position]) >= 4:
            chosen[position] = _typo(rng, chosen[position])
    elif roll < 0.6 and len(chosen[-1]) > 1:
        chosen[-1] = chosen[-1][: rng.randint(1, len(chosen[-1]) - 1)]
    return " ".join(chosen)


def _texts(records: list[dict[str, Any]], fields: tuple[str, ...], salt: int) -> list[TextQuery]:
    rng = random.Random(SEED * 1000 + salt)
    spellings = _spellings(records, fields)
    texts = []
    for _ in range(QUERIES):
        text = TextQuery.parse(_query_text(rng, spellings))
        if text is None:
            continue
        if rng.random() < 0.3:
            named = tuple(name for name in fields if rng.random() < 0.5) or (fields[0],)
            text = replace(text, columns=named)
        texts.append(text)
    return texts


def _answer(hits: SearchHits, key: str) -> tuple[int, list[tuple[str, float | None]]]:
    return hits.total, [(document[key], score) for document, score in zip(hits.documents, hits.scores, strict=True)]


def test_listing_searches_rank_alike(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], built: catalogue.Catalogue
) -> None:
    sqlite, postgres = stores
    rng = random.Random(SEED)
    matched = 0
    for text in _texts(_with_accents(built), SEARCHABLE_LISTING_FIELDS, 1):
        extra = rng.choice(LISTING_FILTERS)
        for offset, limit in PAGES:
            query = ListingQuery(text=text, offset=offset, limit=limit, **extra)
            expected = _answer(sqlite.search_listings(query), "listingId")
            assert _answer(postgres.search_listings(query), "listingId") == expected, (text, extra, offset)
        matched += expected[0] > 0
    assert matched > QUERIES // 2  # most questions match something: the comparison is not of empty answers


def test_profile_searches_rank_alike(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], built: catalogue.Catalogue
) -> None:
    sqlite, postgres = stores
    rng = random.Random(SEED + 1)
    matched = 0
    for text in _texts(built.profiles, SEARCHABLE_PROFILE_FIELDS, 2):
        extra = rng.choice(({}, {"province": "on"}, {"sort_by_name": "dsc"}, {"collection": "Builders"}))
        for offset, limit in PAGES:
            query = ProfileQuery(text=text, offset=offset, limit=limit, **extra)
            expected = _answer(sqlite.search_profiles(query), "path")
            assert _answer(postgres.search_profiles(query), "path") == expected, (text, extra, offset)
        matched += expected[0] > 0
    assert matched > QUERIES // 2


def test_typo_forms_and_common_words_rank_alike(stores: tuple[SQLiteStore, PostgresCatalogueStore]) -> None:
    """Words in most listings (idf near zero, and under it for FTS5), and misspellings matched through their
    typo variants (each variant a phrase of its own for FTS5), in all fields and in some."""
    sqlite, postgres = stores
    for search in ("condo", "condominium toronto", "Torotno", "condominum", "resdences park", "the"):
        for columns in ((), ("name", "summary"), ("summary",)):
            text = TextQuery.parse(search)
            assert text is not None
            text = replace(text, columns=columns)
            query = ListingQuery(text=text, limit=50)
            hits = sqlite.search_listings(query)
            expected = _answer(hits, "listingId")
            assert _answer(postgres.search_listings(query), "listingId") == expected, (search, columns)
            if search == "Torotno" and not columns:  # found through its typo variants (toronto)
                assert hits.total > 0 and hits.text is not None and any(hits.text.typo_variants.values())
        profile_query = ProfileQuery(text=TextQuery.parse(search), limit=50)
        assert _answer(postgres.search_profiles(profile_query), "path") == _answer(
            sqlite.search_profiles(profile_query), "path"
        )


def test_writes_keep_the_ranking_alike(stores: tuple[SQLiteStore, PostgresCatalogueStore]) -> None:
    """A rewritten and a deleted listing and profile change the words, lengths and counts the scores use."""
    sqlite, postgres = stores
    first = sqlite.search_listings(ListingQuery(limit=2)).documents
    profile = sqlite.search_profiles(ProfileQuery(limit=1)).documents[0]
    for store in (sqlite, postgres):
        store.upsert_listings([{**first[0], "name": "Québec Harbour Québec Lofts"}])
        store.delete_listing(first[1]["listingId"])
        store.upsert_profiles([{**profile, "summary": "Harbour homes in Québec, harbour views"}])
    for search in ("quebec harbour", "harb", "lofts"):
        query = ListingQuery(text=TextQuery.parse(search), limit=30)
        assert _answer(postgres.search_listings(query), "listingId") == _answer(
            sqlite.search_listings(query), "listingId"
        )
        profile_query = ProfileQuery(text=TextQuery.parse(search), limit=30)
        assert _answer(postgres.search_profiles(profile_query), "path") == _answer(
            sqlite.search_profiles(profile_query), "path"
        )


def test_the_migration_gives_a_stored_catalogue_the_rows_its_writes_would(
    pg_cluster: pg_support.Cluster, built: catalogue.Catalogue
) -> None:
    """A catalogue stored before revision 0004 has no words rows: the migration makes them from the documents,
    and its searches answer as those of a catalogue written since."""
    name = pg_cluster.database(pg_support.migrate)
    conninfo = pg_cluster.conninfo(name)
    listings = _with_accents(built)[:150]
    searches = [TextQuery.parse(search) for search in ("quebec", "condo toronto", "harb", "residences park")]
    listing_queries = [ListingQuery(text=text, limit=30) for text in searches if text is not None]
    listing_queries += [replace(query, text=replace(query.text, columns=("name",))) for query in listing_queries]  # type: ignore[type-var]
    profile_queries = [ProfileQuery(text=text, limit=30) for text in searches]
    try:
        store = PostgresCatalogueStore(conninfo, migrate=False)
        load(store, listings, built.profiles)
        written = [store.search_listings(q) for q in listing_queries] + [
            store.search_profiles(q) for q in profile_queries
        ]
        store.close()
        migrations.downgrade(conninfo, "0003")
        migrations.upgrade(conninfo)
        store = PostgresCatalogueStore(conninfo, migrate=False)
        migrated = [store.search_listings(q) for q in listing_queries] + [
            store.search_profiles(q) for q in profile_queries
        ]
        store.close()
    finally:
        pg_cluster.drop(name)
    assert [(h.total, h.scores, [d.get("path") for d in h.documents]) for h in migrated] == [
        (h.total, h.scores, [d.get("path") for d in h.documents]) for h in written
    ]
    assert any(h.total > 0 for h in written)


def test_words_rows_are_copy_text_with_every_count() -> None:
    counts = word_counts([["quebec", "lofts"], [], ["quebec"]], (10.0, 1.0, 0.5))
    assert (counts.weighted_length, counts.tokens) == (20.5, 3)
    assert (
        words_copy_lines(counts, 7, length=True)
        == "quebec\t7\t10.5\t20.5\t3\t{1,0,1}\nlofts\t7\t10.0\t20.5\t3\t{1,0,0}\n"
    )
    assert words_copy_lines(counts, 7, length=False).startswith("quebec\t7\t10.5\t3\t{1,0,1}\n")
    odd = word_counts([["a\\b\tc"]], (1.0,))
    assert words_copy_lines(odd, 1, length=False) == "a\\\\b\\tc\t1\t1.0\t1\t{1}\n"
