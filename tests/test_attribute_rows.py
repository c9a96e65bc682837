"""Filters on the column index's own attributes whose listings hold values of another kind than the attribute's
(``"ceilingHeights": 10``, ``"startPrice": "500000"``, a list where one value is expected, a unit's status ``5``):
answered by the index from the rows it holds beside its columns (precon/service/search/attribute_rows.py), as the
reference evaluator answers them over the records, with no stored document read, before and after writes (the
index patched as a whole build makes it), and in a file of the layout before, once opened."""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client import REGISTRY

from precon import filters
from precon.schema import LISTING_ATTRIBUTES
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.search.attribute_rows import UNIT_STATUS
from precon.service.search.index_tests import left_to_fallback
from precon.service.server import ServerThread
from precon.service.stores.simulation import day_time
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import stored_catalogue
from tests.test_column_patch import decoded, whole
from tests.test_held_values import no_document_read

START = date(2025, 6, 1)

ODD: list[dict[str, Any]] = [
    # A text attribute holding a number, a list, a flag; a number attribute holding text, a list, a flag.
    {"ceilingHeights": 10, "cityOrDistrict": ["Oakville", "Milton"], "startPrice": "512345", "isFeatured": "true",
     "completionYear": ["2027", 2028], "amenities": ["Pool", 5, True], "hasParking": 1},
    {"ceilingHeights": ["9'", "12"], "sellingStatus": 3, "startPrice": [412345, "450000"], "hasLocker": ["false"],
     "numberOfFloors": True, "streetName": "-12", "type": "Loft"},
    {"ceilingHeights": True, "mode": "", "minBeds": "3", "contactForPricing": "yes", "postalCode": 90210,
     "maxBaths": ["2.5", "x"], "lat": "43.7"},
    {"ceilingHeights": "9.5", "sellingStatus": ["Selling Now"], "endPrice": " 999999 ", "hasParking": [True, 0],
     "country": False, "architects": "Studio One"},
]  # fmt: skip
PLAN_ODD: list[dict[str, Any]] = [
    {"exposure": 3, "numberOfBedrooms": "7", "contactForPricing": "no", "squareFeet": "755"},
    {"floorPlanType": ["Penthouse", 12], "squareFeet": True, "startPrice": ["611111", 622222]},
    {"status": 4, "numberOfBathrooms": "x1", "contactForPricing": 1},
    {"planCategory": False, "numberOfBedrooms": [9, "9"]},
]
UNIT_STATUSES: list[Any] = [5, ["Sold", 1], True, "6"]

QUESTIONS = [
    "ceilingHeights:10",
    "ceilingHeights:10.0",
    "ceilingHeights:12",
    'ceilingHeights:"9\'"',
    "ceilingHeights:true",
    "ceilingHeights:9.5",
    "ceilingHeights > 9",
    "ceilingHeights:9 TO 11",
    "ceilingHeights != 10",
    "NOT ceilingHeights:12",
    "cityOrDistrict:Milton",
    "cityOrDistrict:oakville",
    "sellingStatus:3",
    "sellingStatus > 2",
    'sellingStatus:"Selling Now"',
    "NOT sellingStatus:3",
    "startPrice:512345",
    'startPrice:"512345.0"',
    "startPrice:412345",
    "startPrice:450000",
    "startPrice:450000.0",
    "startPrice > 500000",
    "startPrice:400000 TO 460000",
    "startPrice != 512345",
    "isFeatured:true",
    "NOT isFeatured:true",
    "completionYear:2027",
    "completionYear:2028",
    "completionYear >= 2027",
    "amenities:5",
    "amenities:true",
    "amenities:pool",
    "amenities > 4",
    "hasParking:1",
    "hasParking:true",
    "hasParking:false",
    "hasParking:0",
    "hasParking > 0",
    "hasLocker:false",
    "numberOfFloors:true",
    "numberOfFloors > 0",
    "streetName:-12",
    "streetName:12",
    "streetName < -11",
    "type:loft",
    'mode:""',
    "minBeds:3",
    "minBeds:3.0",
    "minBeds = 3",
    "contactForPricing:yes",
    "contactForPricing:true",
    "postalCode:90210",
    "postalCode > 90000",
    'maxBaths:"2.5"',
    "maxBaths:x",
    "maxBaths > 2",
    "lat:43.7",
    "lat > 43.6",
    "endPrice:999999",
    "endPrice = 999999",
    "hasParking:true AND hasParking:0",
    "country:false",
    "country:0",
    'architects:"studio one"',
    "floorPlans.exposure:3",
    "floorPlans.exposure > 2",
    "floorPlans.numberOfBedrooms:7",
    "floorPlans.numberOfBedrooms > 6",
    "floorPlans.numberOfBedrooms:9",
    "floorPlans.numberOfBedrooms:7.0",
    "floorPlans.squareFeet:755",
    "floorPlans.squareFeet:755.0",
    "floorPlans.squareFeet > 754",
    "floorPlans.contactForPricing:no",
    "floorPlans.contactForPricing:1",
    "floorPlans.contactForPricing:true",
    "floorPlans.contactForPricing = 1",
    "floorPlans.floorPlanType:12",
    "floorPlans.floorPlanType:penthouse",
    "floorPlans.squareFeet:true",
    "floorPlans.startPrice:611111",
    "floorPlans.startPrice:622222",
    "floorPlans.startPrice > 600000",
    "floorPlans.status:4",
    "floorPlans.numberOfBathrooms:x1",
    "floorPlans.planCategory:false",
    "floorPlans.units.status:5",
    "floorPlans.units.status:5.0",
    "floorPlans.units.status:1",
    "floorPlans.units.status:true",
    "floorPlans.units.status:sold",
    "floorPlans.units.status:6",
    "floorPlans.units.status > 4",
    "NOT floorPlans.units.status:5",
    "floorPlans.units.status:5 OR ceilingHeights:10",
    "ceilingHeights:12 AND startPrice > 400000",
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = stored_catalogue(tmp_path / "oddkinds.sqlite3", 120, 23, START)
    odd = [copy.deepcopy(record) for record in records(opened)[:4]]
    for record, values, plan, status in zip(odd, ODD, PLAN_ODD, UNIT_STATUSES, strict=True):
        record.update(values)
        record["floorPlans"][0].update(plan)
        record["floorPlans"][0].setdefault("units", []).append({"unitNumber": "ODD-1", "status": status})
    opened.upsert_listings(odd, at=day_time(START) + 60)
    yield opened
    opened.close()


def patched() -> float:
    return REGISTRY.get_sample_value("precon_index_patches_total", {"catalogue": "oddkinds"}) or 0.0


def records(store: SQLiteStore) -> list[dict[str, Any]]:
    return store.search_listings(ListingQuery(limit=10_000)).documents


def found(store: SQLiteStore, text: str) -> list[str]:
    """The listings a question finds, its count found with no stored document read (the page reads them)."""
    expr = filters.parse(text)
    with no_document_read(store):
        total = store.search_listings(ListingQuery(filter=expr, limit=0)).total
    ids = sorted(d["listingId"] for d in store.search_listings(ListingQuery(filter=expr, limit=10_000)).documents)
    assert len(ids) == total
    return ids


def assert_as_the_evaluator(store: SQLiteStore) -> None:
    everything = records(store)
    for question in QUESTIONS:
        expr = filters.parse(question)
        assert found(store, question) == sorted(r["listingId"] for r in everything if filters.evaluate(expr, r)), (
            question
        )


def test_every_test_of_an_attribute_is_the_evaluators_and_the_indexs_own(store: SQLiteStore) -> None:
    assert_as_the_evaluator(store)
    for question in QUESTIONS:  # nothing left to the rows of paths the index lacks
        assert left_to_fallback(filters.parse(question)) == [], question
    # Each kind as the evaluator reads it.
    assert len(found(store, "ceilingHeights:10")) == 1  # the number 10, which the index's text column lacks
    assert len(found(store, "ceilingHeights:12")) == 1  # an element of a list where one value is expected
    assert found(store, 'startPrice:"512345.0"') == []  # "512345" is text: it matches as text
    assert len(found(store, "startPrice:512345")) == 1
    assert len(found(store, "floorPlans.units.status:5")) == 1
    held = store._columns().attribute_rows
    assert {"ceilingHeights", "startPrice", "amenities", UNIT_STATUS} <= held.keys()
    assert "neighbourhood" not in held  # an attribute with no value of another kind holds no rows


def test_writes_patch_the_rows_as_a_whole_build_holds_them(store: SQLiteStore) -> None:
    assert_as_the_evaluator(store)
    everything = {r["listingId"]: r for r in records(store)}
    odd = [r for r in everything.values() if r.get("ceilingHeights") in (10, True)]
    plain = [r for r in everything.values() if r not in odd]
    mended, spoilt = copy.deepcopy(odd[0]), copy.deepcopy(plain[-1])
    # Its odd values made plain (values the index holds, searchable text kept: else it is built whole, not patched).
    mended.update(ceilingHeights=plain[0]["ceilingHeights"], startPrice=512345, hasParking=False)
    mended["floorPlans"][0]["units"][-1]["status"] = "Sold"
    spoilt.update(ceilingHeights=[11, "eleven"], sellingStatus=False, minBeds="4")  # a plain one made odd
    spoilt["floorPlans"][0].setdefault("units", []).append({"unitNumber": "ODD-2", "status": 7})
    created = copy.deepcopy(odd[1])
    created.update(listingId="created-odd", path="Listings/created-odd", ceilingHeights=13)
    patches = patched()
    store.upsert_listings([mended, spoilt, created], at=day_time(START) + 3600)
    assert decoded(store._columns()) == decoded(whole(store))
    assert patched() == patches + 1  # patched, not built whole
    assert_as_the_evaluator(store)
    assert mended["listingId"] not in found(store, "ceilingHeights:10")
    assert found(store, "ceilingHeights:11") == [spoilt["listingId"]]
    assert found(store, "ceilingHeights:13") == ["created-odd"]
    assert found(store, "floorPlans.units.status:7") == [spoilt["listingId"]]
    store.delete_listing("created-odd")
    assert decoded(store._columns()) == decoded(whole(store))
    assert_as_the_evaluator(store)


def test_a_file_of_layout_11_gets_the_attributes_rows_on_open(store: SQLiteStore) -> None:
    path = store.path
    with store._transaction() as db:
        db.execute("UPDATE meta SET value = '11' WHERE key = 'schema'")
        # Layout 11 kept a text attribute's numeric readings alone.
        db.execute(
            "DELETE FROM listing_values WHERE path IN (SELECT code FROM value_paths WHERE path IN "
            "('startPrice', 'cityOrDistrict', 'amenities', 'isFeatured'))"
        )
    store.close()
    reopened = SQLiteStore(path)
    try:
        assert_as_the_evaluator(reopened)
        assert len(found(reopened, "cityOrDistrict:Milton")) == 1
    finally:
        reopened.close()


ODD_KINDS: list[Any] = [10, 10.5, -3, "10", "-3", "x1", "9'", "", True, False, ["a", 12], ["9'", "12"], [True, 0],
                        {"k": 10}, [{"k": 1}], [[10]]]  # fmt: skip
"""Values of every kind a writer may store at any attribute."""
ASKED = ["10", "10.0", "-3", "x1", "9'", "true", "0", "a", "12", '""', "k"]


def put(record: dict[str, Any], path: str, value: Any, rng: random.Random) -> None:
    """``value`` at ``path`` of ``record``: a top-level name, or a field of one of its plans, payment structures or
    plans' units."""
    parent, _, leaf = path.rpartition(".")
    if not parent:
        record[path] = value
        return
    items = record.get(parent.split(".")[0]) or [{}]
    record[parent.split(".")[0]] = items
    item = rng.choice(items)
    if parent == "floorPlans.units":
        units = item.setdefault("units", []) or [{}]
        item["units"] = units
        item = rng.choice(units)
    item[leaf] = value


def test_values_of_any_kind_at_any_attribute_answer_as_the_evaluator(tmp_path: Path) -> None:
    """Random values of every kind at random attributes, every attribute asked with values of every kind: the index
    answers as the evaluator."""
    rng = random.Random(11)
    opened = stored_catalogue(tmp_path / "randomkinds.sqlite3", 120, 29, START)
    try:
        paths = [path for path in LISTING_ATTRIBUTES if path not in ("listingId", "path")]
        odd = [copy.deepcopy(record) for record in records(opened)[:40]]
        for record in odd:
            for _ in range(5):
                path = rng.choice(paths)
                put(record, path, rng.choice(ODD_KINDS), rng)
        opened.upsert_listings(odd, at=day_time(START) + 60)
        everything = records(opened)
        for path in paths:
            questions = [f"{path}:{value}" for value in ASKED]
            questions += [f"{path} > 9", f"{path} < 0", f"{path} = 10", f"{path}:0 TO 11", f"{path} != 10"]
            for question in questions:
                expr = filters.parse(question)
                expected = sorted(r["listingId"] for r in everything if filters.evaluate(expr, r))
                assert found(opened, question) == expected, question
    finally:
        opened.close()


def test_a_listing_naming_its_references_oddly_is_written_rewritten_and_deleted(store: SQLiteStore) -> None:
    """A reference field holding a number, a flag or one name, and a unit's status a list of lists, are stored and
    searched as any value (they once failed the write)."""
    record = copy.deepcopy(records(store)[6])
    record.update(architects=10, builders=True, owners="One Owner")
    record["floorPlans"][0].setdefault("units", []).append({"unitNumber": "ODD-3", "status": [[10], "Sold"]})
    store.upsert_listings([record], at=day_time(START) + 3600)
    assert found(store, "architects:10") == [record["listingId"]]
    assert found(store, 'owners:"one owner"') == [record["listingId"]]
    assert_as_the_evaluator(store)
    record.update(architects=["Studio Two"], builders=None)
    record["floorPlans"][0]["units"][-1]["status"] = [["x"]]
    store.upsert_listings([record], at=day_time(START) + 7200)
    assert found(store, "architects:10") == []
    assert_as_the_evaluator(store)
    store.delete_listing(record["listingId"])
    assert found(store, 'owners:"one owner"') == []


def test_the_api_answers_a_listing_whose_references_are_of_another_kind(tmp_path: Path) -> None:
    """A reference field holding a number, a flag or one path is shown, expanded and listed as the values it holds
    (it was a 500 on ``listing`` and ``profiles_of_listing``, which iterated it)."""
    settings = ServiceSettings(data_dir=tmp_path, default_listings=40, default_seed=3, default_history_days=0,
                               rate_limit=0, dev=True)  # fmt: skip
    directory = DataDirectory.open(settings)
    try:
        directory.accounts.create_key("everything", key="odd-key")
        record = copy.deepcopy(records(directory.live)[0])
        builder = next(iter(record.get("builders") or []), None)
        record.update(architects=10, interiorDesigners=True, owners=builder, salesCentres=[{"name": "x"}])
        directory.live.upsert_listings([record])
        listing_id, every = record["listingId"], "architects,interiorDesigners,owners,salesCentres,builders"
        with ServerThread(directory.app()) as server, httpx.Client(timeout=30) as http:

            def ok(operation: str, **params: str) -> Any:
                answer = http.get(f"{server.url}/v1/all/{operation}", params=params, headers={"x-api-key": "odd-key"})
                assert answer.status_code == 200, (operation, params, answer.text)
                return answer.json()

            shown = ok("listing", id=listing_id, referrences=every)
            assert shown["architects"] == 10 and shown["interiorDesigners"] is True
            assert ok("listing", id=listing_id)["owners"] == builder
            companies = ok("profiles_of_listing", id=listing_id)
            assert companies["architects"] == [10] and companies["owners"] == [builder]
            expanded = ok("profiles_of_listing", id=listing_id, referrences="owners,architects")
            assert expanded["owners"][0]["path"] == builder and expanded["architects"] == [10]
            assert ok("search_listings", filterQuery="architects:10", referrences=every)["total"] == 1
            assert ok("multiple_listings", ids=listing_id, referrences=every)
    finally:
        directory.close()
