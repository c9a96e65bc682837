"""Facet counts of text attributes: through a bitmap per value (many holders, few values: amenities, type, selling
status) they equal the counts from the holders themselves, for any filter, whatever the catalogue's size modulo 64."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from precon.facet_keys import MAX_FACET_VALUES
from precon.filters import parse
from precon.schema import LISTING_ATTRIBUTES
from precon.service.runtime import load
from precon.service.search.columns import ColumnIndex
from precon.service.search.facets import facet_for
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import generated_catalogue
from tests.store_support import reference_facets, stored_store


@pytest.fixture(scope="module", params=[130, 193])  # neither a multiple of 64
def index(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ColumnIndex:
    built = generated_catalogue(request.param, 5)
    store = SQLiteStore(tmp_path_factory.mktemp("facets") / "catalogue.sqlite3")
    load(store, built.listings, built.profiles)
    columns = store._columns()
    store.close()
    return columns


def counted_from_postings(index: ColumnIndex, path: str, mask: np.ndarray) -> Counter[str]:
    """The oracle: each value's holders (its postings, or the listings whose code it is) counted in the mask."""
    counts: Counter[str] = Counter()
    if path in index.terms:
        postings = index.terms[path]
        vocabulary, holders = list(postings.vocabulary), postings.holders
    else:
        column = index.text[path]
        vocabulary, holders = list(column.vocabulary), lambda code: np.flatnonzero(column.codes == code)
    for code, term in enumerate(vocabulary):
        held = int(mask[holders(code)].sum())
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
    paths = ("amenities", "type", "builders", "sellingStatus", "cityOrDistrict")
    assert index.value_bitmaps("amenities") is not None and index.value_bitmaps("sellingStatus") is not None
    for path in paths:
        for mask in masks:
            expected = counted_from_postings(index, path, mask)
            assert Counter(dict(facet_for(path).count_columns(index, mask, None))) == expected
    try:  # and without bitmaps, as a large catalogue counts builders and cities
        index.__dict__["_bitmaps"] = dict.fromkeys(paths)
        for path in paths:
            for mask in masks:
                counted = facet_for(path).count_columns(index, mask, None)
                assert Counter(dict(counted)) == counted_from_postings(index, path, mask)
    finally:
        index.__dict__.pop("_bitmaps")


def test_an_index_is_pickled_without_its_bitmaps(index: ColumnIndex) -> None:
    import pickle

    index.value_bitmaps("amenities")
    again = pickle.loads(pickle.dumps(index))
    assert "_bitmaps" not in again.__dict__ and "_bitmaps" in index.__dict__
    mask = np.ones(index.size, dtype=bool)
    count = facet_for("amenities").count_columns
    assert count(again, mask, MAX_FACET_VALUES) == count(index, mask, MAX_FACET_VALUES)


def test_every_facetable_attribute_counts_as_the_stored_rows_do(tmp_path: Path) -> None:
    """Each attribute a facet may name (text, numbers, booleans; single or of floor plans) counted over the column
    index equals its counts in SQL over the stored rows, unfiltered and under a filter."""
    built = generated_catalogue(150, 8)
    with stored_store(tmp_path / "catalogue.sqlite3", built.listings, built.profiles) as store:
        for where in (None, parse("minBeds >= 2")):
            names = tuple(sorted(LISTING_ATTRIBUTES))
            query = ListingQuery(limit=10_000, facets=names, filter=where)
            hits = store.search_listings(query)
            found = [d["listingId"] for d in hits.documents]
            assert hits.facets == reference_facets(store, found, names, query.max_facet_values)
