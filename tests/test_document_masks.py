"""A filterQuery test that no index or rows answer (precon/service/stores/sqlite/document_masks.py: a unit's price
matched as text, a unit's status or a text attribute compared as a number): answered from the stored documents,
but only those still in question, once each, and after a write only the written ones again. Units' prices and
floors compared as numbers come from the floor plans' index, no document read (any test of a unit's number or
floor, or of a path the column index lacks: tests/test_held_values.py). Every answer is held to the reference
evaluator over the records as they stand."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from precon import filters
from precon.service.stores.simulation import day_time
from precon.service.stores.sqlite.document_masks import WHOLE_SHARE
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import stored_catalogue

START = date(2025, 6, 1)
PRICE = 477990
ODD = f'floorPlans.units.price:"{PRICE}"'
"""A test only the documents answer: a unit's price matched (as text, or as a number)."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = stored_catalogue(tmp_path / "odd.sqlite3", 120, 21, START)
    yield opened
    opened.close()


def documents_read() -> float:
    return REGISTRY.get_sample_value("precon_documents_filtered_total", {"catalogue": "odd"}) or 0.0


def records(store: SQLiteStore) -> list[dict[str, Any]]:
    hits = store.search_listings(ListingQuery(limit=10_000))
    return hits.documents


def found(store: SQLiteStore, text: str, **query: Any) -> list[str]:
    hits = store.search_listings(ListingQuery(filter=filters.parse(text), limit=10_000, **query))
    return sorted(d["listingId"] for d in hits.documents)


def expected(store: SQLiteStore, text: str) -> list[str]:
    expr = filters.parse(text)
    return sorted(r["listingId"] for r in records(store) if filters.evaluate(expr, r))


def test_an_and_reads_only_the_documents_its_indexed_tests_leave(store: SQLiteStore) -> None:
    city = records(store)[0]["cityOrDistrict"]
    in_city = len(found(store, f'cityOrDistrict:"{city}"'))
    question = f'{ODD} AND cityOrDistrict:"{city}"'  # the indexed test first, wherever it stands
    before = documents_read()
    assert found(store, question) == expected(store, question)
    assert documents_read() - before == in_city
    before = documents_read()
    assert found(store, question) == expected(store, question)  # the same again: decided, nothing read
    assert documents_read() == before
    # Asked of every listing, the ones decided are not read again (unless nearly all are undecided: one scan).
    before, listings = documents_read(), len(records(store))
    assert found(store, ODD) == expected(store, ODD)
    undecided = listings - in_city
    assert documents_read() - before == (listings if undecided > WHOLE_SHARE * listings else undecided)
    # The same test in other questions: decided for every listing now, nothing read.
    before = documents_read()
    for other in (f"NOT {ODD}", f"{ODD} OR floorPlans.numberOfBedrooms = 3", f"({ODD})"):
        assert found(store, other) == expected(store, other)
    assert documents_read() == before


def test_after_a_write_only_the_written_listings_are_read_again(store: SQLiteStore) -> None:
    assert found(store, ODD) == expected(store, ODD)
    everything = records(store)
    holders = [r for r in everything if filters.evaluate(filters.parse(ODD), r)]
    others = [r for r in everything if r not in holders]
    assert holders and others
    # One holder loses its units of that price, one other listing gains one; a listing is deleted and one created.
    lost, gained = copy.deepcopy(holders[0]), copy.deepcopy(others[0])
    for plan in lost["floorPlans"]:
        for unit in plan.get("units") or []:
            if unit.get("price") == PRICE:
                unit["price"] = PRICE + 1
    gained["floorPlans"][0].setdefault("units", []).append(
        {"unitNumber": "4401", "price": PRICE, "status": "Available"}
    )
    created = copy.deepcopy(holders[-1])
    created["listingId"] = created["objectID"] = "created-with-price"
    created["path"] = created["path"] + "-created"
    store.upsert_listings([lost, gained, created], at=day_time(START) + 3600)
    store.delete_listing(others[1]["listingId"])
    before = documents_read()
    assert found(store, ODD) == expected(store, ODD)
    assert documents_read() - before == 3
    assert lost["listingId"] not in found(store, ODD)
    assert {gained["listingId"], "created-with-price"} <= set(found(store, ODD))


def test_past_an_eighth_of_the_catalogue_written_the_answers_start_again(store: SQLiteStore) -> None:
    from precon.service.search import column_patch

    assert found(store, ODD) == expected(store, ODD)
    everything = records(store)
    written = everything[: max(column_patch.LEAST, len(everything) // column_patch.MOST_SHARE) + 1]
    if len(written) > len(everything):
        pytest.skip("the catalogue is smaller than a patch's least")
    store.upsert_listings(copy.deepcopy(written), at=day_time(START) + 3600)
    before = documents_read()
    assert found(store, ODD) == expected(store, ODD)
    assert documents_read() - before == len(everything)


def test_units_prices_and_floors_compared_read_no_document(store: SQLiteStore) -> None:
    questions = [
        "floorPlans.units.price < 500000",
        "floorPlans.units.floor >= 10",
        "floorPlans.units.price:600000 TO 700000 AND NOT floorPlans.units.floor > 20",
        "floorPlans.units.price != 477990",
        "floorPlans.units.floor = 2 OR floorPlans.numberOfBedrooms = 3",
    ]
    before = documents_read()
    for question in questions:
        assert found(store, question) == expected(store, question), question
    assert documents_read() == before


def test_a_province_narrows_what_is_read(store: SQLiteStore) -> None:
    province = "on"
    in_province = store.search_listings(ListingQuery(province=province, limit=0)).total
    assert 0 < in_province < len(records(store))
    before = documents_read()
    hits = store.search_listings(ListingQuery(province=province, filter=filters.parse(ODD), limit=10_000))
    assert documents_read() - before == in_province
    expr = filters.parse(ODD)
    in_it = store.search_listings(ListingQuery(province=province, limit=10_000)).documents
    assert sorted(d["listingId"] for d in hits.documents) == sorted(
        r["listingId"] for r in in_it if filters.evaluate(expr, r)
    )
