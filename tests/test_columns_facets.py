"""Facet counts of array attributes: through a bitmap per value (many postings, few values: amenities, type) they
equal the counts from the postings themselves, for any filter, whatever the catalogue's size modulo 64."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from precon.service import catalogue
from precon.service.columns import ColumnIndex
from precon.service.runtime import load
from precon.service.store import SQLiteStore


@pytest.fixture(scope="module", params=[130, 193])  # neither a multiple of 64
def index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ColumnIndex:
    built = catalogue.generate(request.param, 5)
    store = SQLiteStore(tmp_path_factory.mktemp("facets") / "catalogue.sqlite3")
    load(store, built.listings, built.profiles)
    columns = store._columns()
    store.close()
    return columns


def counted_from_postings(index: ColumnIndex, path: str, mask: np.ndarray) -> Counter[str]:
    postings = index.terms[path]
    counts: Counter[str] = Counter()
    for code, term in enumerate(postings.vocabulary):
        held = int(mask[postings.holders(code)].sum())
        if held:
            counts[index.labels.get((path, term), term)] = held
    return counts


@pytest.mark.parametrize("seed", range(6))
def test_bitmap_counts_equal_the_postings_counts_for_any_filter(index: ColumnIndex, seed: int) -> None:
    rng = np.random.default_rng(seed)
    masks = [
        np.ones(index.size, dtype=bool),
        np.zeros(index.size, dtype=bool),
        rng.random(index.size) < rng.random(),
        np.arange(index.size) == index.size - 1,  # the last listing alone: the partly filled last word
    ]
    assert index._term_bitmaps("amenities") is not None  # the path under test is the bitmap one
    for path in ("amenities", "type", "builders"):
        for mask in masks:
            assert Counter(dict(index.facet(path, mask, limit=None))) == counted_from_postings(index, path, mask)


def test_an_index_is_pickled_without_its_bitmaps(index: ColumnIndex) -> None:
    import pickle

    index._term_bitmaps("amenities")
    again = pickle.loads(pickle.dumps(index))
    assert "_bitmaps" not in again.__dict__ and "_bitmaps" in index.__dict__
    mask = np.ones(index.size, dtype=bool)
    assert again.facet("amenities", mask) == index.facet("amenities", mask)
