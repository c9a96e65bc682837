"""The column index after a write: moved to the new generation by the listings the write wrote
(precon/service/search/column_patch.py) where it can be, built whole where it cannot (a listing created or deleted,
a value or term it never held, a listing's searchable text changed). Either way, it is the index a whole build
makes, array by array, and searches answer the same as a store that builds its index whole."""

from __future__ import annotations

import contextlib
import copy
import math
import random
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from prometheus_client import REGISTRY

from precon.filters import parse
from precon.schema import LISTING_ATTRIBUTES
from precon.service.search.columns import ColumnIndex
from precon.service.search.text import TextQuery, TypoIndex
from precon.service.stores.simulation import day_time, simulate
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import stored_catalogue

START = date(2025, 6, 1)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = stored_catalogue(tmp_path / "patched.sqlite3", 80, 11, START)
    opened.search_listings(ListingQuery())  # the index held, as a serving store holds it
    yield opened
    opened.close()


def counted(name: str) -> float:
    return REGISTRY.get_sample_value(name, {"catalogue": "patched"}) or 0.0


def decoded(index: ColumnIndex) -> dict[str, Any]:
    """What an index holds, position by position, whatever codes its vocabularies gave."""

    def text(column: Any) -> list[str | None]:
        return [None if code < 0 else column.vocabulary[int(code)] for code in column.codes]

    def same_nan(values: np.ndarray) -> list[float | None]:
        return [None if math.isnan(v) else v for v in values.tolist()]

    return {
        "rowids": index.rowids.tolist(),
        "ids": list(index.listing_ids),
        "province": text(index.province),
        "lat": same_nan(index.lat),
        "lng": same_nan(index.lng),
        "order": index.default_order.tolist(),
        "rank": index.order_rank.tolist(),
        "text": {path: text(column) for path, column in index.text.items()},
        "numbers": {path: same_nan(values) for path, values in index.numbers.items()},
        "terms": {
            path: sorted((p.vocabulary[int(code)], int(owner)) for code, owner in zip(p.codes, p.owners, strict=True))
            for path, p in index.terms.items()
        },
        "term offsets": {
            path: all((p.codes[p.offsets[c] : p.offsets[c + 1]] == c).all() for c in range(len(p.vocabulary)))
            for path, p in index.terms.items()
        },
        "numbers posted": {path: (p.values.tolist(), p.owners.tolist()) for path, p in index.number_postings.items()},
        "words": (
            index.search_text.words,
            index.search_text.owners.tolist(),
            index.search_text.counts.tolist(),
            index.search_text.lengths.tolist(),
            index.search_text.average_length,
        ),
        "digests": index.text_digests.tolist(),
        "labels": index.labels,
        "attribute rows": {path: sorted(rows.pairs()) for path, rows in index.attribute_rows.items()},
    }


def whole(store: SQLiteStore) -> ColumnIndex:
    db = store._db()
    db.execute("BEGIN")
    try:
        return ColumnIndex(db, store._read_generation())
    finally:
        db.execute("COMMIT")


QUERIES = [
    ListingQuery(facets=tuple(LISTING_ATTRIBUTES), max_facet_values=None, limit=50),
    ListingQuery(filter=parse('sellingStatus:"Selling Now" AND minPrice < 900000'), facets=("type",), limit=50),
    ListingQuery(filter=parse("floorPlans.units.status:Sold"), facets=("cityOrDistrict",), limit=50),
    ListingQuery(text=TextQuery.parse("park"), limit=50),
    ListingQuery(filter=parse("floorPlans.numberOfBedrooms >= 2"), offset=20, limit=20),
]


def answers(store: SQLiteStore) -> list[Any]:
    found = []
    for query in QUERIES:
        page = store.search_listings(query)
        found.append((page.total, [doc["listingId"] for doc in page.documents], page.scores, page.facets))
    return found


def assert_as_built_whole(store: SQLiteStore, path: Path) -> None:
    held = store._columns()
    assert held.generation == store._read_generation()
    assert decoded(held) == decoded(whole(store))
    alone = SQLiteStore(path)  # a store of its own, which builds its index whole
    try:
        assert answers(store) == answers(alone)
    finally:
        alone.close()


def sold_one(listing_id: str, doc: dict[str, Any]) -> dict[str, Any] | None:
    """A unit sold and another's price raised: what a day of the market does to a listing."""
    changed = copy.deepcopy(doc)
    units = [u for plan in changed.get("floorPlans") or [] for u in plan.get("units") or []]
    if len(units) < 2:
        return None
    units[0]["status"] = "Sold"
    units[1]["price"] = (units[1].get("price") or 500_000) + 10_000
    return changed


def test_a_day_of_sales_and_price_moves_patches_the_index(store: SQLiteStore) -> None:
    ids = store.listing_ids()[:12]
    patches, builds = counted("precon_index_patches_total"), counted("precon_index_builds_total")
    store.update_listings(ids, sold_one, at=day_time(START) + 86_400)
    store.search_listings(ListingQuery())
    assert counted("precon_index_patches_total") == patches + 1
    assert counted("precon_index_builds_total") == builds, "nothing built whole for it"
    assert_as_built_whole(store, store.path)


def test_a_status_and_a_position_change_patch_it_and_move_the_order(store: SQLiteStore) -> None:
    listing_id = store.listing_ids()[-1]
    doc = store.get_listings([listing_id], None)[listing_id]
    moved = {**copy.deepcopy(doc), "sellingStatus": "Sold Out", "isFeatured": True}
    moved["_geoloc"] = {"lat": 49.28, "lng": -123.12}
    patches = counted("precon_index_patches_total")
    store.upsert_listings([moved], at=day_time(START) + 2 * 86_400)
    store.search_listings(ListingQuery())
    assert counted("precon_index_patches_total") == patches + 1
    assert_as_built_whole(store, store.path)
    first = store.search_listings(ListingQuery(limit=1)).documents[0]["listingId"]
    assert first == listing_id or store.get_listings([first], None)[first].get("isFeatured")


def test_listings_created_are_patched_in_with_their_new_words_values_and_terms(store: SQLiteStore) -> None:
    """An import of new listings: they take the positions after the others, a new city, amenity and words with them;
    a search finds them by those at once."""
    listing_id = store.listing_ids()[5]
    doc = copy.deepcopy(store.get_listings([listing_id], None)[listing_id])
    created = [
        {**doc, "listingId": "PATCH-NEW-1", "name": "Zanzibar Quays", "cityOrDistrict": "Nowhere Bay",
         "amenities": [*(doc.get("amenities") or []), "Rooftop Observatory"]},
        {**copy.deepcopy(doc), "listingId": "PATCH-NEW-2", "name": "Second Patch Towers"},
    ]  # fmt: skip
    patches, builds = counted("precon_index_patches_total"), counted("precon_index_builds_total")
    store.upsert_listings(created, at=day_time(START) + 4 * 86_400)
    found = store.search_listings(ListingQuery(text=TextQuery.parse("zanzibar"), facets=("cityOrDistrict",)))
    assert [d["listingId"] for d in found.documents] == ["PATCH-NEW-1"] and found.facets["cityOrDistrict"]
    assert counted("precon_index_patches_total") == patches + 1 and counted("precon_index_builds_total") == builds
    assert store.search_listings(ListingQuery(filter=parse('amenities:"Rooftop Observatory"'))).total == 1
    assert_as_built_whole(store, store.path)
    store.update_listings(["PATCH-NEW-2", listing_id], sold_one, at=day_time(START) + 5 * 86_400)
    assert_as_built_whole(store, store.path)


@contextlib.contextmanager
def sql_watched(store: SQLiteStore) -> Iterator[list[str]]:
    """The statements this thread's connection to the store runs meanwhile."""
    statements: list[str] = []
    store._db().set_trace_callback(statements.append)
    try:
        yield statements
    finally:
        store._db().set_trace_callback(None)


def test_the_typo_indexes_are_kept_until_their_words_change(store: SQLiteStore) -> None:
    """A day's sales bring no new word: both typo indexes stay, and the listings' is not read from FTS5's vocabulary
    again (the column index holds the words); a listing named with a new word makes the listings' again, which finds
    it by a typo; the profiles' stays, and answers as one built whole."""

    def both() -> tuple[TypoIndex, TypoIndex]:
        store.search_listings(ListingQuery())  # the column index of the generation
        return store._listing_typos(), store._profile_typos()

    listings, profiles = both()
    store.update_listings(store.listing_ids()[:6], sold_one, at=day_time(START) + 86_400)
    with sql_watched(store) as statements:
        assert both() == (listings, profiles) and both()[0] is listings
    assert not [sql for sql in statements if "listing_vocab" in sql]
    listing_id = store.listing_ids()[3]
    doc = copy.deepcopy(store.get_listings([listing_id], None)[listing_id])
    store.upsert_listings([{**doc, "listingId": "TYPO-NEW-1", "name": "Quillothorpe Gardens"}], at=day_time(START))
    new_listings, same_profiles = both()
    assert new_listings is not listings and same_profiles is profiles
    assert "quillothorpe" in new_listings.variants("quilothorpe")
    found = store.search_listings(ListingQuery(text=TextQuery.parse("quilothorpe")))
    assert [d["listingId"] for d in found.documents] == ["TYPO-NEW-1"]
    alone = SQLiteStore(store.path)
    try:
        built = (alone._listing_typos(), alone._profile_typos())  # no column index held: read from FTS5
        assert [i.words for i in built] == [new_listings.words, profiles.words]
        assert built[1].variants("tornto") == profiles.variants("tornto")
    finally:
        alone.close()


@pytest.mark.parametrize("change", ["deleted", "renamed", "a new city", "two days simulated"])
def test_what_cannot_be_patched_is_built_whole(store: SQLiteStore, change: str) -> None:
    listing_id = store.listing_ids()[3]
    doc = copy.deepcopy(store.get_listings([listing_id], None)[listing_id])
    builds = counted("precon_index_builds_total")
    at = day_time(START) + 3 * 86_400
    if change == "deleted":
        store.delete_listing(listing_id, at=at)
    elif change == "renamed":
        store.upsert_listings([{**doc, "name": "Quite Another Name"}], at=at)
    elif change == "a new city":
        store.upsert_listings([{**doc, "cityOrDistrict": "Nowhere Bay"}], at=at)
    else:
        simulate(store, 2, seed=5)
    store.search_listings(ListingQuery())
    if change != "two days simulated":
        assert counted("precon_index_builds_total") == builds + 1
    assert_as_built_whole(store, store.path)


def test_random_updates_one_after_another_stay_as_built_whole(store: SQLiteStore) -> None:
    """Writes of the kinds a patch takes (selling and unit statuses, prices, sizes, plan types taken off and put on,
    listings launched), and amenities (searched as text: built whole), one after another: each generation's index is
    the whole build's."""
    rng = random.Random(7)
    ids = store.listing_ids()
    statuses = sorted({doc.get("sellingStatus") for doc in store.get_listings(ids, None).values()} - {None})
    amenities = sorted({a for doc in store.get_listings(ids, None).values() for a in doc.get("amenities") or []})
    plan_types = sorted(
        {t for doc in store.get_listings(ids, None).values() for p in doc.get("floorPlans") or []
         for t in (p.get("floorPlanType") or [])}
    )  # fmt: skip

    def moved(_: str, doc: dict[str, Any]) -> dict[str, Any]:
        changed = copy.deepcopy(doc)
        changed["sellingStatus"] = rng.choice(statuses)
        if rng.random() < 0.2:
            changed["amenities"] = rng.sample(amenities, k=rng.randint(1, min(6, len(amenities))))
        for plan in changed.get("floorPlans") or []:
            if rng.random() < 0.3:
                plan["floorPlanType"] = rng.sample(plan_types, k=rng.randint(1, len(plan_types)))
            plan["squareFeet"] = rng.choice([str(rng.randint(400, 1500)), plan.get("squareFeet")])
            for unit in plan.get("units") or []:
                if rng.random() < 0.2:
                    unit["status"] = rng.choice(["Available", "Sold", "Reserved"])
                    unit["price"] = rng.choice([unit.get("price"), rng.randint(400_000, 2_000_000)])
        return changed

    patches = counted("precon_index_patches_total")
    for day in range(10):
        at = day_time(START) + (day + 5) * 86_400
        store.update_listings(rng.sample(ids, k=rng.randint(1, 8)), moved, at=at)
        if rng.random() < 0.4:  # a launch beside them, named in words of its own
            template = store.get_listings([rng.choice(ids)], None)
            launched = moved("", next(iter(template.values())))
            launched.update(listingId=f"LAUNCH-{day}", name=f"Launch {rng.choice(['Quay', 'Grove', 'Wharf'])} {day}x")
            store.upsert_listings([launched], at=at + 60)
        assert_as_built_whole(store, store.path)
    assert counted("precon_index_patches_total") >= patches + 5, "most of them patched"
