"""The words of a text as the service folds them equal the words SQLite's FTS5 tokenizer (``unicode61
remove_diacritics 2``) makes of it: the SQLite store matches the tokenizer's words, the PostgreSQL store stores and
matches the service's, and the highlighter marks the service's. Checked with the tokenizer itself as the oracle."""

from __future__ import annotations

import random
import sqlite3
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from precon.service.runtime import load
from precon.service.search.text import TextQuery
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from precon.words import words
from tests.catalogues import generated_catalogue

SYMBOLS = "²³¹⁴½€™–—‘’“”«»°ﬁﬂⅫⅠǄǅǆẞ"
LATIN = [
    chr(code)
    for code in range(0x20, 0x180)  # ASCII, Latin-1 and Latin Extended-A
    if unicodedata.category(chr(code))[0] in "LNMPZS"
] + list(SYMBOLS)


@pytest.fixture(scope="module")
def tokenizer() -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    yield db
    db.close()


def fts5_words(db: sqlite3.Connection, text: str) -> list[str]:
    db.execute("DELETE FROM t")
    db.execute("INSERT INTO t(rowid, x) VALUES (1, ?)", (text,))
    return [row[0] for row in db.execute("SELECT term FROM v ORDER BY offset")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Québec ÉCOLE naïve", ["quebec", "ecole", "naive"]),
        ("Straße", ["straße"]),
        ("ﬁne m² Ⅻ", ["ﬁne", "m²", "ⅻ"]),
        ("Łódź Øresund", ["łodz", "øresund"]),
        ("µ ſ", ["μ", "s"]),
        ("한국 İstanbul", ["한국", "istanbul"]),
    ],
)
def test_known_words_fold_as_the_tokenizer_folds_them(
    tokenizer: sqlite3.Connection, text: str, expected: list[str]
) -> None:
    assert words(text) == fts5_words(tokenizer, text) == expected


@pytest.mark.parametrize("seed", range(4))
def test_random_latin_text_folds_as_the_tokenizer_folds_it(tokenizer: sqlite3.Connection, seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(2_500):
        text = "".join(rng.choice(LATIN) for _ in range(rng.randint(1, 14)))
        assert words(text) == fts5_words(tokenizer, text), repr(text)


def test_a_word_the_compatibility_forms_would_change_is_found(tmp_path: Path) -> None:
    """``Straße`` once became ``strasse`` in the query while FTS5 indexed ``straße``: nothing was found."""
    listing = {**generated_catalogue(1, 2).listings[0], "name": "Straße Lofts m²"}
    store = SQLiteStore(tmp_path / "catalogue.sqlite3")
    try:
        load(store, [listing], [])
        for search in ("Straße", "STRAẞE", "m²", "lofts straß"):
            hits = store.search_listings(ListingQuery(text=TextQuery.parse(search)))
            assert hits.total == 1, search
    finally:
        store.close()
