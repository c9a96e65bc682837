"""Floor-plan ids and sellingStatusUpdateTimestamp: kept on every write through the store, the importer and the
mirror; filtered and faceted as a number by the service; read leniently by the models."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from precon import filters
from precon.client.models import FloorPlan, Listing
from precon.service.stores.derived import plan_id, selling_status_timestamp, with_plan_ids
from precon.service.stores.importer import read_file
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import generated_catalogue
from tests.conftest import Api
from tests.store_support import every_id

STAMP = "sellingStatusUpdateTimestamp"


@pytest.fixture
def store(tmp_path: Path) -> Any:
    opened = SQLiteStore(tmp_path / "c.sqlite3")
    yield opened
    opened.close()


def stored(store: SQLiteStore, listing_id: str) -> dict[str, Any]:
    return store.get_listings([listing_id], None)[listing_id]


def bare(listing_id: str, status: str = "Selling Now", **extra: Any) -> dict[str, Any]:
    plans = [{"name": "A"}, {"name": "B", "id": f"given-{listing_id}"}, {"name": "A"}]
    return {"listingId": listing_id, "name": "Tower", "sellingStatus": status, "floorPlans": plans, **extra}


# -- floor-plan ids --------------------------------------------------------------------------------------------


def test_plans_without_ids_get_deterministic_unique_ones() -> None:
    plans = with_plan_ids("ABC123", [{"name": "A"}, {"name": "B", "id": "given"}, {"name": "A"}, "odd", {"id": 7}])
    ids = [plan["id"] if isinstance(plan, dict) else plan for plan in plans]
    assert ids == [plan_id("ABC123", 1, "A"), "given", plan_id("ABC123", 3, "A"), "odd", "7"]
    assert len(set(ids)) == len(ids) and all(i.startswith("ABC123-") for i in (ids[0], ids[2]))
    assert with_plan_ids("ABC123", [{"name": "A"}, {"name": "B", "id": "given"}, {"name": "A"}]) == plans[:3]
    assert with_plan_ids("ABC123", None) is None
    clash = with_plan_ids("X", [{"name": "A", "id": plan_id("X", 2, "B")}, {"name": "B"}])
    assert clash[0]["id"] != clash[1]["id"]


def test_the_store_keeps_incoming_ids_and_gives_the_same_ids_again(store: SQLiteStore) -> None:
    store.upsert_listings([bare("ABC123")])
    first = [plan["id"] for plan in stored(store, "ABC123")["floorPlans"]]
    assert first[1] == "given-ABC123" and len(set(first)) == 3 and all(isinstance(i, str) for i in first)
    store.upsert_listings([bare("ABC123")])
    assert [plan["id"] for plan in stored(store, "ABC123")["floorPlans"]] == first


def test_reimporting_a_file_gives_the_same_ids(tmp_path: Path) -> None:
    path = tmp_path / "export.ndjson"
    path.write_text("\n".join(json.dumps(bare(f"L{n:05d}")) for n in range(3)), encoding="utf-8")
    first, again = read_file(path), read_file(path)
    ids = [plan["id"] for listing in first.listings for plan in listing["floorPlans"]]
    assert ids == [plan["id"] for listing in again.listings for plan in listing["floorPlans"]]
    assert len(set(ids)) == len(ids) == 9 and "given-L00001" in ids


# -- sellingStatusUpdateTimestamp ------------------------------------------------------------------------------


def test_timestamp_rules() -> None:
    old = {"sellingStatus": "Selling Now", STAMP: 100}
    assert selling_status_timestamp({"sellingStatus": "Selling Now"}, None, 500) == 500
    assert selling_status_timestamp({"sellingStatus": "Selling Now", STAMP: 42}, None, 500) == 42
    assert selling_status_timestamp({"sellingStatus": "Selling Now"}, old, 500) == 100
    assert selling_status_timestamp({"sellingStatus": "Sold Out"}, old, 500) == 500
    assert selling_status_timestamp({"sellingStatus": "Sold Out", STAMP: 100}, old, 500) == 500  # stale copy
    assert selling_status_timestamp({"sellingStatus": "Sold Out", STAMP: 300}, old, 500) == 300
    assert selling_status_timestamp({"sellingStatus": "Selling Now", STAMP: "not a time"}, old, 500) == 100


def test_the_store_stamps_creation_and_status_changes_only(store: SQLiteStore) -> None:
    before = int(time.time())
    store.upsert_listings([bare("ABC123")])
    created = stored(store, "ABC123")[STAMP]
    assert type(created) is int and before <= created <= time.time()
    store.upsert_listings([{**bare("ABC123"), STAMP: 1_600_000_000, "sellingStatus": "Selling Now"}])
    assert stored(store, "ABC123")[STAMP] == 1_600_000_000  # the record's own value is kept
    record = stored(store, "ABC123")
    store.upsert_listings([{**{k: v for k, v in record.items() if k != STAMP}, "name": "Renamed"}])
    assert stored(store, "ABC123")[STAMP] == 1_600_000_000  # status unchanged: kept
    store.upsert_listings([{**record, "sellingStatus": "Sold Out"}])  # status changed, stale value copied
    changed = stored(store, "ABC123")[STAMP]
    assert changed >= before and changed != 1_600_000_000


def test_filtered_and_faceted_as_a_number(tmp_path: Path) -> None:
    records = generated_catalogue(60, 3).listings
    store = SQLiteStore(tmp_path / "c.sqlite3")
    store.upsert_listings(records)
    cut = sorted(r[STAMP] for r in records)[30]
    expected = sorted(r["listingId"] for r in records if r[STAMP] > cut)
    view = SQLiteStore(tmp_path / "c.sqlite3")  # another process's view of the file
    for searched in (store, view):
        assert sorted(every_id(searched, filter=filters.parse(f"{STAMP} > {cut}"))) == expected
        facets = searched.search_listings(ListingQuery(facets=(STAMP,), limit=0)).facets[STAMP]
        assert sum(count for _, count in facets) == len(records)
        assert all(float(value).is_integer() for value, _ in facets)
    view.close()
    store.close()


# -- models ----------------------------------------------------------------------------------------------------


def test_models_read_the_new_fields_leniently() -> None:
    listing = Listing.model_validate(
        {
            "listingId": "ABC123",
            STAMP: "1700000000",
            "videos": [{"name": "Tour", "url": "https://x.ca/v"}, "https://x.ca/w", {"name": "no url"}, None],
            "floorPlans": [{"id": 12, "name": "A"}, {"name": "B"}],
        }
    )
    assert listing.sellingStatusUpdateTimestamp == 1_700_000_000
    assert listing.videos == ["https://x.ca/v", "https://x.ca/w"]
    assert [plan.id for plan in listing.floorPlans or []] == ["12", None]
    assert Listing.model_validate({STAMP: "soon", "videos": None}).sellingStatusUpdateTimestamp is None
    assert Listing.model_validate({STAMP: 1.7e9}).sellingStatusUpdateTimestamp == 1_700_000_000
    assert FloorPlan.model_validate({"id": "P-1"}).id == "P-1"


# -- over the service ------------------------------------------------------------------------------------------


def test_the_service_serves_filters_and_facets_the_timestamp(api: Api) -> None:
    every = api.all_listings()
    assert all(type(r[STAMP]) is int for r in every)
    cut = sorted(r[STAMP] for r in every)[len(every) // 2]
    body = api.ok("/v1/all/search_listings", filterQuery=f"{STAMP} > {cut}", perPage=1000, facets=STAMP)
    assert sorted(r["listingId"] for r in body["results"]) == sorted(r["listingId"] for r in every if r[STAMP] > cut)
    assert all(int(value) > cut for value in body["facets"][STAMP])
    plan_ids = [plan["id"] for r in every for plan in r.get("floorPlans") or []]
    assert plan_ids and len(plan_ids) == len(set(plan_ids)) and all(isinstance(i, str) for i in plan_ids)
