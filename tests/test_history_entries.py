"""A listing's history entries between two of its records (contract.md, "History"), against the generated
catalogue's records and hand-made changes."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from precon.service.stores.history import listing_changes
from tests.catalogues import generated_catalogue

AT = "2026-11-27T00:00:00.000Z"


@pytest.fixture(scope="module")
def listing() -> dict[str, Any]:
    return next(
        record
        for record in generated_catalogue(60, seed=4).listings
        if record["floorPlans"] and any(plan.get("units") for plan in record["floorPlans"])
    )


def brief(entries: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["scope"], e["plan"], e["unit"], e["field"], e["change"], e["from"], e["to"]) for e in entries]


def test_a_listing_created_and_deleted_is_one_entry_each(listing: dict[str, Any]) -> None:
    assert brief(listing_changes(None, listing, AT)) == [("listing", None, None, None, "created", None, None)]
    assert brief(listing_changes(listing, None, AT)) == [("listing", None, None, None, "deleted", None, None)]
    [entry] = listing_changes(None, listing, AT)
    assert entry["at"] == AT and entry["listingId"] == listing["listingId"]
    assert listing_changes(None, None, AT) == []


def test_the_same_record_and_a_new_updated_at_are_no_change(listing: dict[str, Any]) -> None:
    later = copy.deepcopy(listing)
    later["updatedAt"] = "2030-01-01T00:00:00.000Z"
    for plan in later["floorPlans"]:
        plan["lastUpdated"] = "2030-01-01T00:00:00.000Z"
    assert listing_changes(listing, copy.deepcopy(listing), AT) == []
    assert listing_changes(listing, later, AT) == []


def test_fields_plans_and_units_each_say_what_changed(listing: dict[str, Any]) -> None:
    after = copy.deepcopy(listing)
    after["startPrice"] = (listing["startPrice"] or 0) + 10_000
    after["amenities"] = [*reversed(listing["amenities"]), "Sauna"]  # an array compared whole
    plan = after["floorPlans"][0]
    plan["status"] = "Sold Out"
    unit = plan["units"][0]
    unit["status"], unit["price"] = "Sold", (unit["price"] or 0) + 5_000
    gone = after["floorPlans"].pop()
    after["floorPlans"].append({"id": "NEW-PLAN", "name": "New"})
    del plan["units"][-1]
    found = brief(listing_changes(listing, after, AT))
    old_plan, old_unit = listing["floorPlans"][0], listing["floorPlans"][0]["units"][0]
    expected = [
        ("listing", None, None, "startPrice", "updated", listing["startPrice"], after["startPrice"]),
        ("listing", None, None, "amenities", "updated", listing["amenities"], after["amenities"]),
        ("floorPlan", plan["id"], None, "status", "updated", old_plan["status"], "Sold Out"),
        ("unit", plan["id"], old_unit["unitNumber"], "status", "updated", old_unit["status"], "Sold"),
        ("unit", plan["id"], old_unit["unitNumber"], "price", "updated", old_unit["price"], unit["price"]),
        ("unit", plan["id"], old_plan["units"][-1]["unitNumber"], None, "deleted", None, None),
        ("floorPlan", "NEW-PLAN", None, None, "created", None, None),
        ("floorPlan", gone["id"], None, None, "deleted", None, None),
    ]
    if old_plan["status"] == "Sold Out":
        expected.remove(("floorPlan", plan["id"], None, "status", "updated", old_plan["status"], "Sold Out"))
    if old_unit["status"] == "Sold":
        expected.remove(("unit", plan["id"], old_unit["unitNumber"], "status", "updated", "Sold", "Sold"))
    assert sorted(found, key=repr) == sorted(expected, key=repr)


def test_a_boolean_for_a_number_is_a_change_records_without_ids_are_known_by_position() -> None:
    before = {"listingId": "A", "isFeatured": 1, "floorPlans": [{"name": "x", "units": [{"price": 1}]}]}
    after = {"listingId": "A", "isFeatured": True, "floorPlans": [{"name": "x", "units": [{"price": 2}]}]}
    assert brief(listing_changes(before, after, AT)) == [
        ("listing", None, None, "isFeatured", "updated", 1, True),
        ("unit", "#0", "#0", "price", "updated", 1, 2),
    ]
