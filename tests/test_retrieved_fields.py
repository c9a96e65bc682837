"""A page that retrieves a few attributes (``retrieveAttributes``) reads only those of each stored document
(``stores/sqlite/fields.py``): in the store, the records are the whole documents narrowed to them, in their order;
over HTTP, the answer is byte for byte the one the whole documents give."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from precon.service.stores.sqlite import fields, reads
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import stored_catalogue
from tests.conftest import KEY_LITE, Api

SEARCH = "/v1/all/search_listings"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = stored_catalogue(tmp_path / "fields.sqlite3", 30, 3, date(2025, 6, 1))
    template = next(iter(opened.get_listings(opened.listing_ids()[:1], None).values()))
    odd = copy.deepcopy(template)
    odd.update(listingId="ODD001", path="Listings/ODD001", startPrice=612_345.5, name='Ünïcode "quoted" \\ name')
    odd["averagePricePerSqFeet"] = 1e-7
    sparse = {"listingId": "SPARSE1", "path": "Listings/SPARSE1", "name": "Only A Name"}
    opened.upsert_listings([odd, sparse])
    yield opened
    opened.close()


def narrowed(record: dict[str, Any], wanted: frozenset[str]) -> list[tuple[str, Any]]:
    return [(key, value) for key, value in record.items() if key in wanted]


@pytest.mark.parametrize(
    "wanted",
    [
        {"startPrice", "cityOrDistrict", "averagePricePerSqFeet", "listingId"},
        {"name", "floorPlans", "listingId"},
        {"builders", "amenities", "photos", "startPrice"},
        {"noSuchAttribute"},
    ],
)
def test_the_store_reads_the_attributes_asked_as_the_whole_documents_hold_them(
    store: SQLiteStore, wanted: set[str]
) -> None:
    asked = frozenset(wanted)
    whole = store.search_listings(ListingQuery(limit=100))
    partial = store.search_listings(ListingQuery(limit=100, fields=asked))
    assert partial.total == whole.total == 32
    assert [list(record.items()) for record in partial.documents] == [
        narrowed(record, asked) for record in whole.documents
    ]


def test_a_page_past_a_listing_deleted_since_the_index_is_read_again(store: SQLiteStore) -> None:
    store.search_listings(ListingQuery(limit=100, fields=frozenset({"name"})))
    store.delete_listing("SPARSE1")
    found = store.search_listings(ListingQuery(limit=100, fields=frozenset({"name", "listingId"})))
    assert found.total == 31 and "SPARSE1" not in {record.get("listingId") for record in found.documents}


CASES = {
    "the charts' attributes, every listing": (SEARCH, None, {"retrieveAttributes": "startPrice,cityOrDistrict,"
                                                             "averagePricePerSqFeet", "perPage": 1000}),
    "plans and media": (SEARCH, None, {"retrieveAttributes": "name,floorPlans,photos,coverPhoto,logo", "perPage": 40}),
    "text, highlighted, a filter": (SEARCH, None, {"retrieveAttributes": "name,cityOrDistrict", "search": "condo",
                                                   "highlightResults": "true", "filterQuery": "startPrice > 400000"}),
    "references expanded": (SEARCH, None, {"retrieveAttributes": "name,builders", "referrences": "builders"}),
    "v1-lite": ("/v1-lite/all/search_listings", KEY_LITE, {"retrieveAttributes": "name,startPrice", "perPage": 60}),
    "trending": ("/v1/all/trending_listings", None, {"retrieveAttributes": "name,startPrice"}),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_an_answer_of_a_few_attributes_is_the_whole_documents_answer(
    api: Api, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    path, key, params = CASES[case]
    read: list[int] = []

    def counted(*args: Any) -> Any:
        read.append(1)
        return fields.read_fields(*args)

    monkeypatch.setattr(reads, "read_fields", counted)
    few = api.get(path, **({"key": key} if key else {}), **params)
    assert few.status_code == 200, few.text
    assert read, "the page was read for its attributes"
    monkeypatch.setattr(fields, "READS_FIELDS", False)
    whole = api.get(path, **({"key": key} if key else {}), **params)
    assert whole.status_code == 200
    assert few.content == whole.content and len(few.json()["results"]) > 0
