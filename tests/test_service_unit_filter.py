"""unitFilter (ours): both store engines against the reference evaluator run per floor plan, then over HTTP."""

from __future__ import annotations

import copy
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precon import filters
from precon.filters import UNIT_FIELDS
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import generated_catalogue
from tests.conftest import KEY_ALL, KEY_LITE, Api
from tests.store_support import every_id, reference_facets, reference_order, stored_store

SEED = 5
COUNT = 300
SEARCH = "/v1/all/search_listings"


def plans_of(record: dict[str, Any]) -> list[dict[str, Any]]:
    return record.get("floorPlans") or []


def unit_oracle(expr: filters.Expr, record: dict[str, Any]) -> bool:
    """The contract's definition: one floor plan for which the whole expression holds (with one of its units,
    where the expression names units: every unit tried, written out here from the contract's words)."""
    for plan in plans_of(record):
        units = (
            [u for u in plan.get("units") or [] if isinstance(u, dict)] if isinstance(plan.get("units"), list) else []
        )
        typed = [
            {
                "status": u.get("status") if isinstance(u.get("status"), str) else None,
                "price": float_reading(u.get("price")),
                "floor": float_reading(u.get("floor")),
            }
            for u in units
        ]
        if any(filters.evaluate(expr, {**plan, "units": unit}) for unit in typed or [None]):
            return True
    return False


def float_reading(value: Any) -> float | None:
    """A number, or numeric text, as a finite float (``float`` of it); anything else None: the oracle's reading."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def odd_listings(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Floor plans in every shape a store may be given: text numbers, scalar arrays, missing fields, no plans."""
    base = next(r for r in records if len(plans_of(r)) >= 3)
    odd = copy.deepcopy(base)
    odd.update(listingId="ODD001", path="Listings/ODD001", name="Odd Plans")
    odd["floorPlans"] = [
        {"name": "Bare"},
        {
            "name": "Texts",
            "startPrice": "815000",
            "squareFeet": 700,
            "numberOfBedrooms": "2",
            "floorPlanType": "2 Bed",
            "exposure": [],
            "contactForPricing": "true",
            "status": "sold-out",
        },
        {"name": "Both ways", "exposure": ["N", "S", "n"], "startPrice": 0, "numberOfBathrooms": 2.5},
        {
            "name": "Odd units",
            "numberOfBedrooms": 2,
            "units": [
                {"unitNumber": "1", "floor": 6, "status": "available", "price": "815000"},
                {"unitNumber": "2", "floor": "12", "status": "Sold", "price": None},
                {"unitNumber": "3", "status": 7, "price": True},
                "not a unit",
            ],
        },
        {"name": "No units", "numberOfBedrooms": 2, "units": None},
        {"name": "Empty units", "numberOfBedrooms": 1, "units": []},
    ]
    none = copy.deepcopy(base)
    none.update(listingId="ODD002", path="Listings/ODD002", name="No Plans", floorPlans=None)
    empty = copy.deepcopy(base)
    empty.update(listingId="ODD003", path="Listings/ODD003", name="Empty Plans", floorPlans=[])
    return [odd, none, empty]


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    generated = generated_catalogue(COUNT, SEED).listings
    return generated + odd_listings(generated)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Iterator[SQLiteStore]:
    path = tmp_path_factory.mktemp("units") / "catalogue.sqlite3"
    with stored_store(path, records, generated_catalogue(COUNT, SEED).profiles) as opened:
        yield opened


# Unit expressions drawn from the catalogue's own values, in the spellings a client may use.
TEXT_VALUES = {
    "status": ["Available", "Sold Out", "sold-out", "available"],
    "floorPlanType": ["1 Bed", "2 Bed + Den", "Townhouse", "studio", "Semi-Detached", "semi detached"],
    "exposure": ["N", "SE", "sw", "W"],
    "squareFeet": ["650", "700", "1200.0"],
    "startPrice": ["", "815000", "0"],
    "numberOfBedrooms": ["2", "1.5", "2.0", "0"],
    "contactForPricing": ["true", "false", "1", "0", "TRUE"],
    "units.status": ["Available", "Sold", "reserved", "sold"],
    "units.floor": ["6", "12", "6.0", "x"],
    "units.price": ["815000", "0", "abc"],
}
NUMBER_RANGES: dict[str, list[float]] = {
    "numberOfBedrooms": [0, 1, 1.5, 2, 2.5, 3, 4, 5],
    "numberOfBathrooms": [1, 1.5, 2, 2.5, 3.5],
    "squareFeet": [0, 450, 650, 700, 900, 1500, 3000],
    "startPrice": [0, 350_000, 600_000, 800_000, 815_000, 1_200_000, 3_000_000],
    "status": [1],
    "units.price": [0, 400_000, 650_000, 815_000, 1_000_000],
    "units.floor": [1, 2, 6, 10, 12, 30],
    "units.status": [1],
}


def unit_atoms() -> st.SearchStrategy[filters.Expr]:
    matches = st.sampled_from(sorted(TEXT_VALUES)).flatmap(
        lambda a: st.sampled_from(TEXT_VALUES[a]).map(lambda v: filters.Match(a, v))
    )

    def numeric(attribute: str) -> st.SearchStrategy[filters.Expr]:
        number = st.sampled_from(NUMBER_RANGES[attribute])
        return st.one_of(
            st.tuples(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), number).map(
                lambda t: filters.Compare(attribute, t[0], t[1])
            ),
            st.tuples(number, number).map(lambda t: filters.Range(attribute, min(t), max(t))),
        )

    numbers = st.sampled_from(sorted(NUMBER_RANGES)).flatmap(numeric)
    return st.one_of(matches, numbers)


unit_expressions = st.recursive(
    unit_atoms(),
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda items: filters.And(tuple(items))),
        st.lists(inner, min_size=2, max_size=3).map(lambda items: filters.Or(tuple(items))),
        inner.map(filters.Not),
    ),
    max_leaves=6,
)


def test_the_unit_fields_are_the_floor_plan_fields_the_contract_names() -> None:
    assert UNIT_FIELDS == (
        "numberOfBedrooms",
        "numberOfBathrooms",
        "squareFeet",
        "startPrice",
        "status",
        "floorPlanType",
        "exposure",
        "contactForPricing",
        "units.price",
        "units.floor",
        "units.status",
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=unit_expressions)
def test_unit_filters_agree_with_the_evaluator_per_floor_plan(
    store: SQLiteStore, records: list[dict[str, Any]], expr: filters.Expr
) -> None:
    expected = sorted(r["listingId"] for r in records if unit_oracle(expr, r))
    found = every_id(store, unit_filter=expr)
    assert sorted(found) == expected
    assert found == reference_order(store, found, ListingQuery())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=unit_expressions, province=st.sampled_from([None, "on", "bc"]))
def test_unit_filter_is_anded_with_the_rest_and_scopes_the_facets(
    store: SQLiteStore, records: list[dict[str, Any]], expr: filters.Expr, province: str | None
) -> None:
    listing_filter = filters.parse("type:Condo OR sellingStatus:Pending")
    facets = ("type", "sellingStatus", "builders", "floorPlans.numberOfBedrooms")
    asked = ListingQuery(province=province, filter=listing_filter, unit_filter=expr, facets=facets, limit=10_000)
    hits = store.search_listings(asked)
    states = {"on": "Ontario", "bc": "British Columbia"}
    expected = [
        r
        for r in records
        if (province is None or r["state"] == states[province])
        and filters.evaluate(listing_filter, r)
        and unit_oracle(expr, r)
    ]
    assert hits.total == len(expected)
    found = [d["listingId"] for d in hits.documents]
    assert sorted(found) == sorted(r["listingId"] for r in expected)
    assert hits.facets == reference_facets(store, found, facets, asked.max_facet_values)
    assert dict(hits.facets["sellingStatus"]) == dict(Counter(r["sellingStatus"] for r in expected))


def test_plans_follow_upserts_deletes_and_a_reindex(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    path = tmp_path / "c.sqlite3"
    store = SQLiteStore(path)
    store.upsert_listings(records[:30])
    two_beds = filters.parse("numberOfBedrooms = 2 AND startPrice <= 800000")
    before = sorted(r["listingId"] for r in records[:30] if unit_oracle(two_beds, r))
    assert sorted(every_id(store, unit_filter=two_beds)) == before
    target = records[0]
    cheap = copy.deepcopy(target)
    cheap["floorPlans"] = [{"name": "Cheap", "numberOfBedrooms": 2, "startPrice": 500_000}]
    store.upsert_listings([cheap])
    assert target["listingId"] in every_id(store, unit_filter=two_beds)
    cheap["floorPlans"] = [{"name": "Dear", "numberOfBedrooms": 2, "startPrice": 900_000}]
    store.upsert_listings([cheap])
    assert target["listingId"] not in every_id(store, unit_filter=two_beds)
    store.delete_listing(records[1]["listingId"])
    assert records[1]["listingId"] not in every_id(store, unit_filter=filters.parse("NOT status:nothing"))
    expected = sorted(every_id(store, unit_filter=two_beds))
    with store._transaction() as db:
        db.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
        db.execute("DROP TABLE listing_plan_values")  # a layout-2 file has no floor plan tables
        db.execute("DROP TABLE listing_plans")
    store.close()
    reopened = SQLiteStore(path)
    assert sorted(every_id(reopened, unit_filter=two_beds)) == expected
    reopened.close()


# -- over HTTP -------------------------------------------------------------------------------------------------

TORONTO = 'type:Condo AND cityOrDistrict:Toronto AND sellingStatus:"Selling Now"'
TWO_BEDS_UNDER_800K = "numberOfBedrooms >= 2 AND startPrice <= 800000"


def price(value: Any) -> float | None:
    if isinstance(value, bool) or value in ("", None):
        return None
    number = float(value)
    return number if number > 0 else None


def expected_matched(record: dict[str, Any], expr: filters.Expr) -> dict[str, Any]:
    matching = [plan for plan in plans_of(record) if filters.evaluate(expr, plan)]
    prices = [p for p in (price(plan.get("startPrice")) for plan in matching) if p is not None]
    return {
        "count": len(matching),
        "of": len(plans_of(record)),
        "minPrice": min(prices) if prices else None,
        "names": [plan["name"] for plan in matching],
    }


@pytest.mark.parametrize("budget", [800_000, 1_000_000])
def test_the_analysts_question_two_bedroom_condos_in_toronto_selling_now(api: Api, budget: int) -> None:
    records = api.all_listings()
    listing_filter = filters.parse(TORONTO)
    unit_text = f"numberOfBedrooms >= 2 AND startPrice <= {budget}"
    unit = filters.parse(unit_text)
    expected = [r for r in records if filters.evaluate(listing_filter, r) and unit_oracle(unit, r)]
    body = api.ok(SEARCH, product_id="everything", perPage=1000, filterQuery=TORONTO, unitFilter=unit_text)
    assert body["total"] == len(expected)
    assert sorted(r["listingId"] for r in body["results"]) == sorted(r["listingId"] for r in expected)
    if budget > 800_000:
        assert body["total"] > 0
    for result in body["results"]:
        assert any(
            plan["numberOfBedrooms"] >= 2 and price(plan["startPrice"]) is not None and plan["startPrice"] <= budget
            for plan in result["floorPlans"]
        )
        assert result["_matchedFloorPlans"]["count"] >= 1
    # The listing-level filter over floorPlans.* mixes plans: one plan with two bedrooms, another within budget.
    mixed = filters.parse(f"{TORONTO} AND floorPlans.numberOfBedrooms >= 2 AND floorPlans.startPrice <= {budget}")
    loose = {r["listingId"] for r in records if filters.evaluate(mixed, r)}
    strict = {r["listingId"] for r in expected}
    assert strict < loose
    assert every_listing_ids(api, filterQuery=filters.to_query(mixed)) == loose


def test_one_plan_must_hold_the_whole_expression_across_the_catalogue(api: Api) -> None:
    records = api.all_listings()
    unit = filters.parse(TWO_BEDS_UNDER_800K)
    mixed = filters.parse("floorPlans.numberOfBedrooms >= 2 AND floorPlans.startPrice <= 800000")
    loose = {r["listingId"] for r in records if filters.evaluate(mixed, r)}
    strict = {r["listingId"] for r in records if unit_oracle(unit, r)}
    assert strict and strict < loose
    assert every_listing_ids(api, filterQuery=filters.to_query(mixed)) == loose
    assert every_listing_ids(api, unitFilter=TWO_BEDS_UNDER_800K) == strict


def every_listing_ids(api: Api, **params: Any) -> set[str]:
    body = api.ok(SEARCH, product_id="everything", perPage=1000, retrieveAttributes="listingId", **params)
    assert body["total"] == len(body["results"])
    return {r["listingId"] for r in body["results"]}


def test_matched_floor_plans_name_count_and_price_the_matching_plans(api: Api) -> None:
    records = {r["listingId"]: r for r in api.all_listings()}
    for unit_text in (
        TWO_BEDS_UNDER_800K,
        "status:Available AND exposure:SE",
        "contactForPricing:true",
        "NOT startPrice > 0",
    ):
        unit = filters.parse(unit_text)
        body = api.ok(SEARCH, product_id="everything", perPage=1000, unitFilter=unit_text)
        assert body["total"] == sum(unit_oracle(unit, r) for r in records.values()) > 0
        for result in body["results"]:
            assert result["_matchedFloorPlans"] == expected_matched(records[result["listingId"]], unit)
    priceless = api.ok(SEARCH, product_id="everything", perPage=1000, unitFilter="NOT startPrice > 0")
    assert all(r["_matchedFloorPlans"]["minPrice"] is None for r in priceless["results"])


def test_matched_floor_plans_are_kept_when_retrieve_attributes_narrows_and_absent_without_unit_filter(
    api: Api,
) -> None:
    records = {r["listingId"]: r for r in api.all_listings()}
    unit = filters.parse(TWO_BEDS_UNDER_800K)
    body = api.ok(SEARCH, product_id="everything", perPage=3, retrieveAttributes="name", unitFilter=TWO_BEDS_UNDER_800K)
    assert body["results"] == [
        {
            "objectID": r["objectID"],
            "name": records[r["objectID"]]["name"],
            "_matchedFloorPlans": expected_matched(records[r["objectID"]], unit),
        }
        for r in body["results"]
    ]
    plain = api.ok(SEARCH, product_id="everything", perPage=20)
    assert all("_matchedFloorPlans" not in r for r in plain["results"])
    blank = api.ok(SEARCH, product_id="everything", perPage=20, unitFilter="  ")
    assert blank == plain


def test_facets_count_the_listings_the_unit_filter_keeps(api: Api) -> None:
    records = api.all_listings()
    unit = filters.parse(TWO_BEDS_UNDER_800K)
    kept = [r for r in records if unit_oracle(unit, r)]
    expected = {
        "sellingStatus": dict(Counter(r["sellingStatus"] for r in kept).most_common()),
        "type": dict(Counter(t for r in kept for t in r["type"]).most_common()),
    }
    counts = api.ok("/v1/all/facet_counts", facets="sellingStatus,type", unitFilter=TWO_BEDS_UNDER_800K)
    assert counts == expected
    body = api.ok(
        SEARCH, product_id="everything", perPage=0, facets="sellingStatus,type", unitFilter=TWO_BEDS_UNDER_800K
    )
    assert body["total"] == len(kept)
    assert body["facets"] == expected


def test_trending_listings_take_a_unit_filter(api: Api) -> None:
    records = api.all_listings()
    unit = filters.parse("floorPlanType:Penthouse")
    expected = {r["listingId"] for r in records if unit_oracle(unit, r)}
    body = api.ok("/v1/all/trending_listings", perPage=1000, unitFilter="floorPlanType:Penthouse")
    assert body["total"] == len(expected) > 0
    assert {r["listingId"] for r in body["results"]} == expected
    by_id = {r["listingId"]: r for r in records}
    for result in body["results"]:
        assert result["_matchedFloorPlans"] == expected_matched(by_id[result["listingId"]], unit)
        assert result["_matchedFloorPlans"]["names"]


def error(api: Api, path: str, key: str = KEY_ALL, **params: Any) -> tuple[int, dict[str, Any]]:
    response = api.get(path, key, **params)
    body = response.json()
    assert body.pop("requestId") == response.headers["x-request-id"]
    return response.status_code, body


@pytest.mark.parametrize("path", [SEARCH, "/v1/all/trending_listings", "/v1/all/facet_counts"])
def test_unit_filter_errors_say_what_and_where(api: Api, path: str) -> None:
    extra = {"facets": "type"} if path.endswith("facet_counts") else {}
    extra["product_id"] = "everything"
    assert error(api, path, unitFilter="numberOfBedrooms >= ", **extra) == (
        400,
        {"message": "unitFilter: expected a number after '>=' at position 20, found end of input"},
    )
    assert error(api, path, unitFilter="status:Available AND (exposure:N", **extra) == (
        400,
        {"message": "unitFilter: unexpected end of input at position 32; expected ')'"},
    )
    assert error(api, path, unitFilter="floorPlans.status:Available OR beds > 2", **extra) == (
        400,
        {"message": "unitFilter: 'beds', 'floorPlans.status' are not floor plan fields; use " + ", ".join(UNIT_FIELDS)},
    )
    assert error(api, path, unitFilter="name:Suite", **extra) == (
        400,
        {"message": "unitFilter: 'name' is not a floor plan field; use " + ", ".join(UNIT_FIELDS)},
    )
    lite = path.replace("/v1/", "/v1-lite/")
    extra["product_id"] = "lite"
    assert error(api, lite, KEY_LITE, unitFilter="status:Available", **extra) == (
        400,
        {
            "message": "unitFilter: v1-lite has no floor plans; a filter on them would reveal them "
            "(use v1 for unitFilter)"
        },
    )
    assert api.get(lite, KEY_LITE, unitFilter="", **extra).status_code == 200


def test_one_unit_of_one_plan_meets_the_whole_unit_question(api: Api) -> None:
    """contract.md's example: "a 2-bedroom plan with an available unit under $700,000 on floor 10 or higher" is
    one unit; ``_matchedFloorPlans.units`` counts the units that meet it."""
    question = "numberOfBedrooms >= 2 AND units.status:Available AND units.price < 700000 AND units.floor >= 10"
    body = api.ok(SEARCH, perPage=1000, unitFilter=question)
    expr = filters.parse(question)
    assert expr is not None
    expected: dict[str, int] = {}
    for record in api.all_listings():
        count = 0
        for plan in plans_of(record):
            if (plan.get("numberOfBedrooms") or 0) >= 2:
                count += sum(
                    1
                    for u in plan.get("units") or []
                    if u["status"] == "Available" and u["price"] is not None and u["price"] < 700000
                    and int(u["floor"]) >= 10
                )  # fmt: skip
        if count:
            expected[record["listingId"]] = count
    assert expected, "the catalogue has such units"
    assert {r["listingId"]: r["_matchedFloorPlans"]["units"] for r in body["results"]} == expected
    # Split across two units, the same conditions find more: a sold unit high up, a cheap one low down.
    loose = api.ok(SEARCH, perPage=1000, filterQuery="floorPlans.units.status:Available")["total"]
    assert body["total"] == len(expected) <= loose
