"""Filters on a unit's number and floor, a unit's price matched, a unit's status or a text attribute compared as a
number, and on every path the column index lacks (a plan's name, photos' tags, deposits' milestones:
precon/service/search/held_values.py, path_values.py): answered from the rows holding their values, with no stored
document read, the same as the reference evaluator over the records as they stand, whatever the type of the value
(text, a number, numeric text, a boolean, in lists and lists of objects), before and after writes."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import REGISTRY

from precon import filters
from precon.service.search import column_patch
from precon.service.search.held_values import value_source
from precon.service.stores.simulation import day_time
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import stored_catalogue

START = date(2025, 6, 1)
CATALOGUE = "unitvalues"
QUESTIONS = [
    "floorPlans.units.unitNumber:201",
    'floorPlans.units.unitNumber:"90305"',
    "floorPlans.units.unitNumber:90907",
    "floorPlans.units.unitNumber = 90907",
    "floorPlans.units.unitNumber > 1500",
    "floorPlans.units.unitNumber:100 TO 199",
    "floorPlans.units.unitNumber != 201",
    "NOT floorPlans.units.unitNumber:201",
    "floorPlans.units.floor:PH",
    "floorPlans.units.floor:ph",
    "floorPlans.units.floor:12",
    "floorPlans.units.floor:2 OR floorPlans.units.unitNumber:PH-1",
    "floorPlans.units.unitNumber:201 AND floorPlans.numberOfBedrooms = 2",
    "floorPlans.units.floor:3 AND NOT floorPlans.units.status:Sold",
    "floorPlans.units.unitNumber:true",
    "floorPlans.units.floor:true",
    "floorPlans.units.unitNumber:92001",
    "floorPlans.units.price:500000",
    'floorPlans.units.price:"500000.0"',
    "floorPlans.units.price:499999.5",
    "floorPlans.units.price:600000",
    "floorPlans.units.price:true",
    'floorPlans.units.price:"$500,000"',
    "NOT floorPlans.units.price:500000",
    "floorPlans.units.status > 1",
    "floorPlans.units.status < 0",
    "floorPlans.units.status:1 TO 3",
    "floorPlans.units.status = 2",
    "floorPlans.units.status != 2",
    "floorPlans.units.status > 1 AND floorPlans.units.status:Available",
    "floorPlans.units.price < 500000",
    "floorPlans.units.price < 2",
    "floorPlans.units.floor > 95",
    "floorPlans.units.price:600000 TO 700000 AND NOT floorPlans.units.floor > 20",
    "floorPlans.units.price != 477990",
    "floorPlans.units.floor = 2 OR floorPlans.numberOfBedrooms = 3",
]
PATH_QUESTIONS = [
    'floorPlans.name:"Suite 1B"',
    "floorPlans.name:suite-2a",
    "photos.tags:exterior",
    "NOT photos.tags:lobby",
    "paymentStructures.milestones.amount != 5",
    'photos.tags:amenities OR incentives.title:"Extended deposit structure"',
    "paymentStructures.milestones.amount > 4",
    "paymentStructures.milestones.amount:5",
    "paymentStructures.milestones.amount:5 TO 10 AND floorPlans.numberOfBedrooms = 2",
    "_geoloc.lat > 44",
    "extras.code:12",
    "extras.code = 12",
    "extras.code:true",
    "extras.code:x-1",
    "extras.code > 11",
    "extras:1",
    "extras.deep.er:yes",
    "extras.dotted.key:1",
    "photos:exterior",
    "nowhere.at.all:1",
    'floorPlans.name:"Suite 1A" AND NOT floorPlans.units.unitNumber:201',
    "ceilingHeights > 9",
    "ceilingHeights < 0",
    "ceilingHeights:0 TO 11",
    "ceilingHeights = 10",
    "ceilingHeights != 10",
    "NOT ceilingHeights > 9",
    "ceilingHeights:9.5 AND ceilingHeights > 9",
    "amenities = 5",
    "floorPlans.exposure < 0",
    "name > 0",
]
"""Paths ``listing_values`` holds: generated ones, odd ones of every type (``extras``, below), and the text
attributes of the column index compared as numbers (their odd values below, which the index holds as rows of its
own: tests/test_attribute_rows.py)."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SQLiteStore]:
    opened = stored_catalogue(tmp_path / f"{CATALOGUE}.sqlite3", 120, 21, START)
    odd = [copy.deepcopy(record) for record in records(opened)[:4]]
    # Values of every type a writer may store: a number, numeric text, text that folds, a list, a bool.
    kinds: list[dict[str, Any]] = [
        {"unitNumber": 90305, "floor": 12, "price": "500000", "status": 2},
        {"unitNumber": "090907", "floor": "PH", "price": 499999.5, "status": "3"},
        {"unitNumber": "PH-1", "floor": "Ph", "price": ["600000", True], "status": ["Sold", 1]},
        {"unitNumber": ["91999", "92001"], "floor": True, "price": "$500,000", "status": "-5"},
    ]
    # Text attributes that read as numbers, or do not ("9'"), in a list, nested in plans, folded ("-5" to "5").
    heights: list[Any] = ["9.5", "-5", ["9'", "12"], 10]
    extras: list[Any] = [
        [{"code": 12}, {"code": "12.0"}, {"code": [True, "X_1"]}],
        {"code": "12", "deep": [{"er": "Yes"}, {"er": None}], "dotted.key": 1},
        [[1, 2], 1, {"code": False}],
        {"code": 11.5, "deep": {"er": ["no", ["yes"]]}},
    ]
    for record, unit, extra, height in zip(odd, kinds, extras, heights, strict=True):
        record["floorPlans"][0].setdefault("units", []).append(unit)
        record["floorPlans"][0]["units"][0]["price"] = 500000
        record["extras"] = extra
        record["ceilingHeights"] = height
    odd[0]["floorPlans"][0]["units"].append({"unitNumber": "L1", "floor": ["97", "Ph2"], "price": [600001, 1]})
    odd[0]["amenities"] = ["5", "Pool"]
    odd[1]["floorPlans"][0]["exposure"] = "-2"
    odd[2]["name"] = "1_000"
    opened.upsert_listings(odd, at=day_time(START) + 60)
    yield opened
    opened.close()


@contextmanager
def no_document_read(store: SQLiteStore) -> Iterator[None]:
    """Fails unless what runs meanwhile reads no stored document (no statement of the store's names
    ``listing_docs``)."""
    statements: list[str] = []
    db = store._db()
    db.set_trace_callback(statements.append)
    try:
        yield
    finally:
        db.set_trace_callback(None)
    assert [s for s in statements if "listing_docs" in s] == []


def assert_answered_from_rows(store: SQLiteStore) -> None:
    """Every question answered as the evaluator answers it, its count found with no stored document read."""
    everything = records(store)
    for question in [*QUESTIONS, *PATH_QUESTIONS]:
        expr = filters.parse(question)
        with no_document_read(store):
            total = store.search_listings(ListingQuery(filter=expr, limit=0)).total
        assert total == sum(1 for r in everything if filters.evaluate(expr, r)), question


def unit_value_reads(kind: str, rows: str = "units") -> float:
    labels = {"catalogue": CATALOGUE, "kind": kind, "rows": rows}
    return REGISTRY.get_sample_value("precon_value_reads_total", labels) or 0.0


def records(store: SQLiteStore) -> list[dict[str, Any]]:
    return store.search_listings(ListingQuery(limit=10_000)).documents


def found(store: SQLiteStore, text: str) -> list[str]:
    hits = store.search_listings(ListingQuery(filter=filters.parse(text), limit=10_000))
    return sorted(d["listingId"] for d in hits.documents)


def expected(store: SQLiteStore, text: str) -> list[str]:
    expr = filters.parse(text)
    return sorted(r["listingId"] for r in records(store) if filters.evaluate(expr, r))


def assert_as_the_evaluator(store: SQLiteStore) -> None:
    for question in [*QUESTIONS, *PATH_QUESTIONS]:
        assert found(store, question) == expected(store, question), question


def test_every_test_of_a_units_number_or_floor_is_the_evaluators_and_reads_no_document(store: SQLiteStore) -> None:
    assert_answered_from_rows(store)
    assert_as_the_evaluator(store)
    # Each type answered as the evaluator reads it: the number 90305 matches "90305"; the text "090907" equals 90907 but
    # does not match it; a list's elements are each a value.
    assert len(found(store, "floorPlans.units.unitNumber:90305")) == 1
    assert found(store, "floorPlans.units.unitNumber:90907") == []
    assert len(found(store, "floorPlans.units.unitNumber = 90907")) == 1
    assert len(found(store, "floorPlans.units.floor:PH")) == 2  # "PH" and "Ph"
    assert len(found(store, "floorPlans.units.unitNumber:92001")) == 1
    assert len(found(store, "floorPlans.units.floor:true")) == 1


def paths_asked() -> set[str]:
    """The paths of ``listing_values`` that :data:`PATH_QUESTIONS` test."""

    def leaves(expr: filters.Expr) -> list[filters.Expr]:
        inner = getattr(expr, "items", None) or ([expr.expr] if isinstance(expr, filters.Not) else None)
        return [leaf for item in inner for leaf in leaves(item)] if inner else [expr]

    tests = [leaf for question in PATH_QUESTIONS for leaf in leaves(filters.parse(question))]
    return {s.path for s in map(value_source, tests) if s is not None and s.column is None}


def test_the_units_values_are_read_once_then_only_the_written_listings(store: SQLiteStore) -> None:
    whole, written = unit_value_reads("whole"), unit_value_reads("written")
    paths_whole, paths_written = unit_value_reads("whole", "listings"), unit_value_reads("written", "listings")
    assert_as_the_evaluator(store)
    # Each once, for every question: number, floor, price, and the prices and floors beside the plans index (a
    # unit's status, and the column index's attributes, are the index's own rows: attribute_rows.py).
    assert unit_value_reads("whole") - whole == 5
    assert unit_value_reads("whole", "listings") - paths_whole == len(paths_asked()) == 11
    everything = records(store)
    holders = [r for r in everything if filters.evaluate(filters.parse("floorPlans.units.unitNumber:201"), r)]
    others = [r for r in everything if r not in holders]
    # One holder's unit 201 renumbered, another listing gains one, one listing created and one deleted.
    lost, gained = copy.deepcopy(holders[0]), copy.deepcopy(others[0])
    for plan in lost["floorPlans"]:
        for unit in plan.get("units") or []:
            if unit.get("unitNumber") == "201":
                unit["unitNumber"] = "2010"
                unit["floor"] = "PH"
    gained["floorPlans"][0].setdefault("units", []).append({"unitNumber": "201", "floor": 2, "status": "Available"})
    # Paths of listing_values: photos gone, an incentive and a plan's name gained, an odd value changed.
    lost["photos"] = []
    gained["incentives"] = [{"title": "Extended deposit structure", "description": "new"}]
    gained["floorPlans"][0]["name"] = "Suite 1B"
    gained["extras"] = {"code": "12"}
    created = copy.deepcopy(holders[-1])
    created["listingId"] = created["objectID"] = "created-with-201"
    created["path"] = created["path"] + "-created"
    store.upsert_listings([lost, gained, created], at=day_time(START) + 3600)
    store.delete_listing(holders[1]["listingId"])
    whole, paths_whole = unit_value_reads("whole"), unit_value_reads("whole", "listings")
    assert_answered_from_rows(store)
    assert unit_value_reads("whole") == whole
    assert unit_value_reads("written") - written == 5
    assert unit_value_reads("whole", "listings") == paths_whole
    assert unit_value_reads("written", "listings") - paths_written == len(paths_asked())
    assert gained["listingId"] in found(store, 'incentives.title:"Extended deposit structure"')
    assert lost["listingId"] in found(store, "NOT photos.tags:exterior")
    now = found(store, "floorPlans.units.unitNumber:201")
    assert lost["listingId"] not in now and holders[1]["listingId"] not in now
    assert {gained["listingId"], "created-with-201"} <= set(now)
    # Written again: the listing that gained unit 201 loses it, the one that lost it has it back.
    gained["floorPlans"][0]["units"].pop()
    store.upsert_listings([holders[0], gained], at=day_time(START) + 7200)
    assert_as_the_evaluator(store)
    now = found(store, "floorPlans.units.unitNumber:201")
    assert holders[0]["listingId"] in now and gained["listingId"] not in now
    assert_answered_from_rows(store)
    assert unit_value_reads("whole") == whole


def test_past_an_eighth_of_the_catalogue_written_the_values_are_read_whole(
    store: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(column_patch, "LEAST", 8)  # the catalogue is smaller than a patch's least
    assert_as_the_evaluator(store)
    everything = records(store)
    written = copy.deepcopy(everything[: len(everything) // column_patch.MOST_SHARE + 1])
    for record in written:
        for plan in record.get("floorPlans") or []:
            for unit in plan.get("units") or []:
                unit["unitNumber"] = f"{unit.get('unitNumber')}A"
    # Written in three days, each fewer than an eighth: the layer holds the first two, the third is one too many.
    thirds = [written[: len(written) // 2], written[len(written) // 2 : -1], written[-1:]]
    for day, listings in enumerate(thirds, start=1):
        store.upsert_listings(listings, at=day_time(START) + 3600 * day)
        whole = unit_value_reads("whole")
        assert_as_the_evaluator(store)
        assert unit_value_reads("whole") - whole == (5 if day == 3 else 0)


def test_a_file_of_the_layout_before_gets_the_units_values_on_open(store: SQLiteStore) -> None:
    path = store.path
    with store._transaction() as db:
        db.execute("UPDATE meta SET value = '8' WHERE key = 'schema'")
        db.execute("DROP TABLE listing_plan_units")  # layout 8: the units' rows without their number and floor
        db.execute(
            "CREATE TABLE listing_plan_units(listing INTEGER NOT NULL, idx INTEGER NOT NULL, status TEXT, "
            "status_num REAL, price REAL, floor REAL)"
        )
    store.close()
    reopened = SQLiteStore(path)
    try:
        assert_as_the_evaluator(reopened)
        assert found(reopened, "floorPlans.units.unitNumber:201") != []
    finally:
        reopened.close()


def test_a_listing_created_then_deleted_leaves_no_trace(store: SQLiteStore) -> None:
    assert_as_the_evaluator(store)
    created = copy.deepcopy(records(store)[0])
    created["listingId"] = created["objectID"] = "created-then-deleted"
    created["path"] = created["path"] + "-created-then-deleted"
    created["floorPlans"][0].setdefault("units", []).append({"unitNumber": "77777", "floor": "Roof"})
    store.upsert_listings([created], at=day_time(START) + 3600)
    assert found(store, "floorPlans.units.unitNumber:77777") == ["created-then-deleted"]
    assert found(store, "floorPlans.units.floor:roof") == ["created-then-deleted"]
    store.delete_listing("created-then-deleted")  # the catalogue's last row id, now gone
    assert found(store, "floorPlans.units.unitNumber:77777") == []
    assert found(store, "floorPlans.units.floor:roof") == []
    assert_as_the_evaluator(store)


def test_a_whole_read_in_runs_of_listings_answers_the_same(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from precon.service.search import held_values

    monkeypatch.setattr(held_values, "LISTING_RUN", 7)  # runs of 7 listings: 18 runs over the catalogue
    assert_as_the_evaluator(store)


def test_a_file_of_layout_9_gets_the_listings_values_on_open(store: SQLiteStore) -> None:
    path = store.path
    with store._transaction() as db:
        db.execute("UPDATE meta SET value = '9' WHERE key = 'schema'")
        db.execute("DROP TABLE listing_values")  # layout 9: no rows of the values the column index lacks
        db.execute("DROP TABLE value_paths")
    store.close()
    reopened = SQLiteStore(path)
    try:
        assert_answered_from_rows(reopened)
        assert found(reopened, "extras.deep.er:yes") != []
    finally:
        reopened.close()


def test_paths_of_many_values_are_let_go_past_the_budget(store: SQLiteStore, monkeypatch: pytest.MonkeyPatch) -> None:
    from precon.service.search.held_values import HeldValues

    monkeypatch.setattr(store, "_held_values", HeldValues(most=1))  # every path but the one just asked let go
    whole = unit_value_reads("whole", "listings")
    for question in ("photos.tags:exterior", 'floorPlans.name:"Suite 1B"', "photos.tags:lobby", "photos.tags:pool"):
        assert found(store, question) == expected(store, question), question
    # Read whole: photos' tags, the plans' names (letting the tags go), the tags again; the last asked again held.
    assert unit_value_reads("whole", "listings") - whole == 3
    assert found(store, "floorPlans.units.unitNumber:201") == expected(store, "floorPlans.units.unitNumber:201")
    assert found(store, "photos.tags:exterior") == expected(store, "photos.tags:exterior")
    assert unit_value_reads("whole", "listings") - whole == 3  # a unit's values are not counted against the budget


def test_the_least_recently_asked_path_is_let_go_first(store: SQLiteStore) -> None:
    held = store._held_values
    asked = ["photos.tags:exterior", 'floorPlans.name:"Suite 1B"', 'incentives.title:"Extended deposit structure"']
    for question in asked:
        found(store, question)
    sizes = {source.path: values.size for source, values in held._held.items() if source.column is None}
    # Room for all but one of the three: tags asked again, then a fourth path; the plans' names go, not the tags.
    held._most = sum(sizes.values()) - 1
    whole = unit_value_reads("whole", "listings")
    found(store, "photos.tags:lobby")
    found(store, "paymentStructures.type:Condo")
    kept = {source.path for source in held._held if source.column is None}
    assert "floorPlans.name" not in kept and "photos.tags" in kept
    found(store, "photos.tags:pool")
    assert unit_value_reads("whole", "listings") - whole == 1  # only the fourth path was read
    assert found(store, 'floorPlans.name:"Suite 1B"') == expected(store, 'floorPlans.name:"Suite 1B"')
    assert unit_value_reads("whole", "listings") - whole == 2  # the names read again


def test_a_file_of_layout_10_gets_the_units_odd_values_and_the_attributes_numbers_on_open(store: SQLiteStore) -> None:
    path = store.path
    with store._transaction() as db:
        db.execute("UPDATE meta SET value = '10' WHERE key = 'schema'")
        db.execute("DROP INDEX listing_plan_units_odd")
        for column in ("price_value", "status_value"):  # layout 10: a unit's price and status by their readings alone
            db.execute(f"ALTER TABLE listing_plan_units DROP COLUMN {column}")
        db.execute(  # nor the text attributes' numbers
            "DELETE FROM listing_values WHERE path IN (SELECT code FROM value_paths WHERE path IN "
            "('ceilingHeights', 'amenities', 'name', 'floorPlans.exposure'))"
        )
    store.close()
    reopened = SQLiteStore(path)
    try:
        assert_answered_from_rows(reopened)
        assert found(reopened, "ceilingHeights < 0") != [] and found(reopened, "floorPlans.units.status = 2") != []
    finally:
        reopened.close()
