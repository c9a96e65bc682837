"""The generated catalogue: identifiers, counts and shapes per docs/api.md (tests/test_catalogue_consistency.py:
consistency, geography, determinism, the sandbox)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from precon.schema import LISTING_FIELDS
from precon.service.catalogue import (
    FLOOR_PLAN_FIELDS,
    PROFILE_COLLECTIONS,
    PROFILE_FIELDS,
    REFERENCE_DATE,
    REFERENCE_FIELDS,
    Catalogue,
    default_profile_count,
    generate,
)
from precon.service.catalogue.canada import (
    CITY_BY_NAME,
    FSA_LETTERS,
    PROVINCE_BY_NAME,
    PROVINCE_CODES,
    PROVINCE_SHARES,
)
from precon.service.catalogue.land import bundled_mask
from precon.service.catalogue.units import SOLD_BY_THE_UNIT
from tests import catalogues
from tests.catalogues import is_number

default = catalogues.default
small = catalogues.small
box = catalogues.box
catalogue = catalogues.catalogue

LISTING_ID = re.compile(r"^[A-Z0-9]{6}$")
PROFILE_ID = re.compile(r"^[A-Za-z0-9]{20}$")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
POSTAL_CODE = re.compile(r"^[A-Z]\d[A-Z] \d[A-Z]\d$")
COORDINATE = re.compile(r"^-?\d{1,3}\.\d{6,7}$")
NUMERIC_TEXT = re.compile(r"^\d+$")
COMPASS = {"N", "NE", "E", "SE", "S", "SW", "W", "NW"}

STR = (str,)
OPT_STR = (str, type(None))
NUM = (int, float)
OPT_NUM = (int, float, type(None))
OPT_INT = (int, type(None))
BOOL = (bool,)
LIST = (list,)
DICT = (dict,)

LISTING_TYPES: dict[str, tuple[type, ...]] = {
    "listingId": STR,
    "objectID": STR,
    "path": STR,
    "name": STR,
    "summary": STR,
    "mode": STR,
    "sellingStatus": STR,
    "sellingStatusUpdateTimestamp": (int,),
    "constructionStatus": OPT_STR,
    "type": LIST,
    "isFeatured": BOOL,
    "createdAt": STR,
    "updatedAt": STR,
    "country": OPT_STR,
    "state": OPT_STR,
    "region": OPT_STR,
    "cityOrDistrict": OPT_STR,
    "streetName": OPT_STR,
    "streetNumber": OPT_INT,
    "postalCode": OPT_STR,
    "neighbourhood": LIST,
    "municipalities": LIST,
    "fullAddress": STR,
    "geographicAddress": STR,
    "lat": STR,
    "long": STR,
    "_geoloc": DICT,
    **dict.fromkeys(
        ["completionDate", "estimatedCompletionDate", "firstOccupancyDate", "constructionStarted", "salesStarted"],
        OPT_STR,
    ),
    **dict.fromkeys(
        [
            "completionDateTBD",
            "estimatedCompletionDateTBD",
            "firstOccupancyDateTBD",
            "constructionStartedTBD",
            "salesStartedTBD",
        ],
        BOOL,
    ),
    **dict.fromkeys(
        [
            "completionYear",
            "estimatedCompletionYear",
            "firstOccupancyYear",
            "constructionStartedYear",
            "salesStartedYear",
        ],
        OPT_INT,
    ),
    "startPrice": OPT_NUM,
    "endPrice": OPT_NUM,
    "averagePricePerSqFeet": NUM,
    "endPricePerSqFeet": NUM,
    "contactForPricing": BOOL,
    "assignmentFee": OPT_NUM,
    "assignmentFeeFree": BOOL,
    "ccOrMaintFee": OPT_NUM,
    "ccOrMaintFeeIncluded": BOOL,
    "developmentLevies": OPT_STR,
    "developmentLeviesIncluded": BOOL,
    **dict.fromkeys(["parkingCost", "parkingMaintainance", "storageCost", "lockerMaintainance"], OPT_NUM),
    **dict.fromkeys(
        [
            "parkingCostIncluded",
            "parkingMaintainanceIncluded",
            "storageCostIncluded",
            "lockerMaintainanceIncluded",
        ],
        BOOL,
    ),
    "parkingRestriction": STR,
    "storageRestriction": STR,
    "hasParking": BOOL,
    "hasLocker": BOOL,
    "metering": STR,
    "meteringIncluded": BOOL,
    **dict.fromkeys(["minBeds", "maxBeds", "minBaths", "maxBaths", "minSize", "maxSize"], OPT_NUM),
    "numberOfUnits": STR,
    "numberOfFloors": STR,
    "numberOfFloorPlans": (int,),
    "numberOfIncentives": (int,),
    "ceilingHeights": STR,
    "finishes": STR,
    "virtualShowing": STR,
    "exposures": LIST,
    "amenities": LIST,
    "incentives": LIST,
    "brokerages": LIST,
    "videos": LIST,
    "logo": DICT,
    "coverPhoto": DICT,
    "photos": LIST,
    "paymentStructures": LIST,
    **dict.fromkeys(REFERENCE_FIELDS, LIST),
    "floorPlans": (list, type(None)),
}

FLOOR_PLAN_TYPES: dict[str, tuple[type, ...]] = {
    "id": STR,
    "name": STR,
    "planCategory": STR,
    "floorPlanType": LIST,
    "squareFeet": STR,
    "startPrice": (str, int, float),
    "contactForPricing": BOOL,
    "status": STR,
    "numberOfBedrooms": NUM,
    "numberOfBathrooms": NUM,
    "exposure": LIST,
    "image": DICT,
    "createdAt": STR,
    "lastUpdated": STR,
}


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    """isinstance, except that a bool is not a number here (JSON tells them apart)."""
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


def _timestamp_ok(value: str) -> bool:
    return bool(TIMESTAMP.match(value)) and "2021-01-01T00:00:00.000Z" <= value < REFERENCE_DATE


# ---------------------------------------------------------------------------------------------- identifiers


def test_listing_ids_are_unique_and_well_formed(catalogue: Catalogue) -> None:
    ids = [listing["listingId"] for listing in catalogue.listings]
    assert len(set(ids)) == len(ids)
    for listing in catalogue.listings:
        assert LISTING_ID.match(listing["listingId"])
        assert listing["objectID"] == listing["listingId"]
        assert listing["path"] == f"Listings/{listing['listingId']}"


def test_profile_ids_are_unique_and_well_formed(catalogue: Catalogue) -> None:
    ids = [profile["id"] for profile in catalogue.profiles]
    assert len(set(ids)) == len(ids), "profile ids are unique across collections"
    for profile in catalogue.profiles:
        collection, _, pid = profile["path"].partition("/")
        assert collection in PROFILE_COLLECTIONS
        assert pid == profile["id"]
        assert PROFILE_ID.match(pid)
        assert profile["logo"] == f"/media/profiles/{pid}/logo.svg"


def test_profile_names_are_unique_within_a_collection(default: Catalogue) -> None:
    names = Counter((p["path"].split("/")[0], p["name"].lower()) for p in default.profiles)
    assert max(names.values()) == 1


# ---------------------------------------------------------------------------------------------- counts


def test_default_sizes(default: Catalogue) -> None:
    assert len(default.listings) == 2500
    assert len(default.profiles) == 1000 == default_profile_count(2500)
    collections = Counter(p["path"].split("/")[0] for p in default.profiles)
    assert set(collections) == set(PROFILE_COLLECTIONS)
    assert collections.most_common(1)[0][0] == "Builders"


def test_profile_count_scales_with_listings() -> None:
    assert default_profile_count(10) == 70
    assert default_profile_count(2500) == 1000
    assert default_profile_count(50_000) == 8000
    assert len(generate(120, seed=3, profiles=25).profiles) == 25
    empty = generate(0)
    assert empty.listings == [] and len(empty.profiles) == 70
    assert all(profile["listings"] == [] for profile in empty.profiles)


def test_every_province_present_and_weighted_like_the_market(default: Catalogue) -> None:
    states = Counter(listing["state"] for listing in default.listings)
    assert set(states) == set(PROVINCE_CODES.values())
    ranked = [state for state, _ in states.most_common()]
    assert ranked[:2] == ["Ontario", "British Columbia"]
    for code, share in PROVINCE_SHARES.items():
        assert states[PROVINCE_CODES[code]] == pytest.approx(share * 2500, rel=0.1, abs=2)


def test_every_province_present_in_a_small_catalogue() -> None:
    states = {listing["state"] for listing in generate(30, seed=11).listings}
    assert states == set(PROVINCE_CODES.values())


def test_status_mix(default: Catalogue) -> None:
    selling = Counter(listing["sellingStatus"] for listing in default.listings)
    assert set(selling) == {"Selling Now", "Pending", "Sold Out"}
    assert 0.45 < selling["Selling Now"] / 2500 < 0.65
    construction = Counter(listing["constructionStatus"] for listing in default.listings)
    assert set(construction) == {"Pre Construction", "Complete", None}
    assert 0.6 < construction["Pre Construction"] / 2500 < 0.8
    assert 0.01 < sum(listing["isFeatured"] for listing in default.listings) / 2500 < 0.1
    no_plans = sum(listing["floorPlans"] is None for listing in default.listings)
    assert 0 < no_plans < 0.05 * 2500


# ---------------------------------------------------------------------------------------------- shapes


def test_listing_fields_and_types(catalogue: Catalogue) -> None:
    for listing in catalogue.listings:
        assert tuple(listing) == LISTING_FIELDS
        for field, kinds in LISTING_TYPES.items():
            assert _is(listing[field], kinds), (listing["listingId"], field, listing[field])
        assert listing["mode"] == "live"
        assert listing["sellingStatus"] in {"Selling Now", "Pending", "Sold Out"}
        assert listing["constructionStatus"] in {"Pre Construction", "Complete", None}
        assert listing["country"] == "Canada"
        assert 1 <= len(listing["type"]) <= 2
        assert len(listing["neighbourhood"]) == 1 and listing["municipalities"]
        assert 3 <= len(listing["amenities"]) <= 14
        assert listing["exposures"] and set(listing["exposures"]) <= COMPASS
        assert 3 <= len(listing["photos"]) <= 12
        assert NUMERIC_TEXT.match(listing["numberOfUnits"]) and NUMERIC_TEXT.match(listing["numberOfFloors"])
        assert listing["numberOfIncentives"] == len(listing["incentives"])
        for item in listing["incentives"]:
            assert isinstance(item["title"], str) and isinstance(item["description"], str)


def test_listing_timestamps(catalogue: Catalogue) -> None:
    for listing in catalogue.listings:
        assert _timestamp_ok(listing["createdAt"]) and _timestamp_ok(listing["updatedAt"])
        assert listing["updatedAt"] >= listing["createdAt"]
        for photo in listing["photos"]:
            assert _timestamp_ok(photo["createdAt"])
        for plan in listing["floorPlans"] or []:
            assert _timestamp_ok(plan["createdAt"]) and _timestamp_ok(plan["lastUpdated"])
            assert listing["createdAt"] <= plan["createdAt"] <= plan["lastUpdated"] <= listing["updatedAt"]


def test_dates_text_years_and_tbd_agree(catalogue: Catalogue) -> None:
    pairs = (
        ("completionDate", "completionYear", "completionDateTBD"),
        ("estimatedCompletionDate", "estimatedCompletionYear", "estimatedCompletionDateTBD"),
        ("firstOccupancyDate", "firstOccupancyYear", "firstOccupancyDateTBD"),
        ("constructionStarted", "constructionStartedYear", "constructionStartedTBD"),
        ("salesStarted", "salesStartedYear", "salesStartedTBD"),
    )
    for listing in catalogue.listings:
        for text, year, tbd in pairs:
            if listing[tbd]:
                assert listing[text] is None and listing[year] is None
            else:
                assert str(listing[year]) in listing[text]
                assert 2010 <= listing[year] <= 2035


def test_location_fields(catalogue: Catalogue) -> None:
    for listing in catalogue.listings:
        code = PROVINCE_BY_NAME[listing["state"]]
        city = CITY_BY_NAME[(code, listing["cityOrDistrict"])]
        assert listing["region"] == city.region
        assert listing["streetName"] in city.streets
        assert listing["neighbourhood"][0] in {hood.name for hood in city.neighbourhoods}
        postal = listing["postalCode"]
        assert POSTAL_CODE.match(postal) and postal[0] in FSA_LETTERS[code] and postal[:3] in city.fsas
        assert listing["fullAddress"].endswith(f"{city.name}, {code.upper()} {postal}, Canada")
        if listing["streetNumber"] is not None:
            assert listing["fullAddress"].startswith(f"{listing['streetNumber']} {listing['streetName']},")
        assert COORDINATE.match(listing["lat"]) and COORDINATE.match(listing["long"])
        geoloc = listing["_geoloc"]
        assert set(geoloc) == {"lat", "lng"}
        assert isinstance(geoloc["lat"], float) and isinstance(geoloc["lng"], float)
        assert geoloc["lat"] == float(listing["lat"]) and geoloc["lng"] == float(listing["long"])
        assert abs(geoloc["lat"] - city.lat) < 0.25 and abs(geoloc["lng"] - city.lng) < 0.35


def test_floor_plan_fields_and_types(catalogue: Catalogue) -> None:
    plans = 0
    for listing in catalogue.listings:
        if listing["floorPlans"] is None:
            assert listing["numberOfFloorPlans"] == 0
            continue
        assert 2 <= len(listing["floorPlans"]) <= 40
        assert listing["numberOfFloorPlans"] == len(listing["floorPlans"])
        for index, plan in enumerate(listing["floorPlans"], start=1):
            plans += 1
            assert tuple(name for name in plan if name != "units") == FLOOR_PLAN_FIELDS
            for field, kinds in FLOOR_PLAN_TYPES.items():
                assert _is(plan[field], kinds), (listing["listingId"], field, plan[field])
            assert plan["planCategory"] == "floorPlan"
            assert plan["status"] in {"Available", "Sold Out"}
            assert NUMERIC_TEXT.match(plan["squareFeet"])
            assert plan["startPrice"] == "" or is_number(plan["startPrice"])
            assert (plan["startPrice"] == "") == plan["contactForPricing"]
            assert plan["numberOfBedrooms"] * 2 == int(plan["numberOfBedrooms"] * 2)
            assert plan["numberOfBathrooms"] * 2 == int(plan["numberOfBathrooms"] * 2)
            assert plan["exposure"] and set(plan["exposure"]) <= set(listing["exposures"])
            assert plan["image"]["url"] == f"/media/listings/{listing['listingId']}/plans/{index}.svg"
            assert isinstance(plan["image"]["name"], str)
            if listing["sellingStatus"] == "Sold Out":
                assert plan["status"] == "Sold Out"
    assert plans


def test_buildings_sold_by_the_unit_list_their_units_consistently(catalogue: Catalogue) -> None:
    """contract.md, "Units of a floor plan": units by floor and stack within the building; the plan's status and
    start price from its units; the listing's numberOfUnits counts them and its prices stay its plans'."""
    listed = 0
    for listing in catalogue.listings:
        plans = listing["floorPlans"] or []
        if listing["type"][0] not in SOLD_BY_THE_UNIT or not plans:
            assert all("units" not in plan for plan in plans)
            continue
        floors = int(listing["numberOfFloors"])
        assert int(listing["numberOfUnits"]) == sum(len(plan["units"]) for plan in plans)
        highest = max(int(unit["floor"]) for plan in plans for unit in plan["units"])
        if listing["type"][0] != "Townhouse":  # a tower as high as its highest unit ("Floors 60" beside floor 22)
            assert floors == highest, (listing["listingId"], floors, highest)
            assert f"across {floors} storeys" in listing["summary"] or "storeys" not in listing["summary"]
        numbers = [unit["unitNumber"] for plan in plans for unit in plan["units"]]
        assert len(numbers) == len(set(numbers)), listing["listingId"]
        for plan in plans:
            units = plan["units"]
            assert units, (listing["listingId"], plan["name"])
            listed += len(units)
            for unit in units:
                assert set(unit) == {"unitNumber", "floor", "status", "price"}
                assert isinstance(unit["unitNumber"], str) and 1 <= int(unit["floor"]) <= max(floors, 1)
                assert unit["status"] in {"Available", "Reserved", "Sold"}
                assert (unit["price"] is None) == (plan["startPrice"] == "")
            available = [u["price"] for u in units if u["status"] == "Available"]
            assert plan["status"] == ("Available" if available else "Sold Out")
            if plan["startPrice"] != "":
                assert plan["startPrice"] == min(available or [u["price"] for u in units])
            if listing["sellingStatus"] == "Sold Out":
                assert all(unit["status"] == "Sold" for unit in units)
    assert listed


def test_unit_prices_rise_with_the_floor_and_sales_took_the_cheaper_units(default: Catalogue) -> None:
    rises = falls = 0
    sold_rank: list[float] = []
    for listing in default.listings:
        units = [u for plan in listing["floorPlans"] or [] for u in plan.get("units", []) if u["price"] is not None]
        for plan in listing["floorPlans"] or []:
            priced = [u for u in plan.get("units", []) if u["price"] is not None]
            if len(priced) >= 2:
                low, high = min(priced, key=lambda u: int(u["floor"])), max(priced, key=lambda u: int(u["floor"]))
                rises += high["price"] > low["price"]
                falls += high["price"] < low["price"]
        if listing["sellingStatus"] == "Selling Now" and len(units) >= 10:
            order = sorted(u["price"] for u in units)
            sold_rank += [order.index(u["price"]) / (len(order) - 1) for u in units if u["status"] == "Sold"]
    assert rises > 5 * falls
    assert sold_rank and sum(sold_rank) / len(sold_rank) < 0.45


def test_every_listing_stands_on_land_as_the_map_draws_it(default: Catalogue, box: Catalogue) -> None:
    """No listing in Lake Ontario: the dashboard map's own outline is the mask (lakes out, provinces in)."""
    mask = bundled_mask()
    assert mask is not None
    assert not mask.on_land(43.60, -79.35) and not mask.on_land(49.29, -123.17)  # Lake Ontario, English Bay
    assert mask.on_land(43.77, -79.41) and mask.on_land(45.50, -73.57)  # North York, Montreal
    for listing in [*default.listings, *box.listings]:
        point = listing["_geoloc"]
        assert mask.on_land(point["lat"], point["lng"]), (listing["listingId"], listing["cityOrDistrict"], point)


def test_half_steps_occur(default: Catalogue) -> None:
    plans = [plan for listing in default.listings for plan in listing["floorPlans"] or []]
    assert any(plan["numberOfBathrooms"] in (1.5, 2.5) for plan in plans)
    assert any(isinstance(listing["maxBaths"], float) for listing in default.listings)
    assert any(plan["startPrice"] == "" for plan in plans)


def test_media_urls(catalogue: Catalogue) -> None:
    for listing in catalogue.listings:
        media = f"/media/listings/{listing['listingId']}/"
        assert listing["coverPhoto"] == {"name": "cover.svg", "url": media + "cover.svg"}
        logo = listing["logo"]
        assert set(logo) == {"name", "url"} and (logo["url"] is None or logo["url"] == media + "logo.svg")
        for number, photo in enumerate(listing["photos"], start=1):
            assert set(photo) == {"createdAt", "name", "tags", "type", "url"}
            assert photo["url"] == f"{media}photo-{number}.svg"
            assert photo["type"] in {"image/jpeg", "image/svg+xml"}
            assert photo["tags"] and all(isinstance(tag, str) for tag in photo["tags"])


def test_profile_fields(catalogue: Catalogue) -> None:
    for profile in catalogue.profiles:
        collection = profile["path"].split("/")[0]
        extra = ("yearFounded", "provinces") if collection == "Builders" else ()
        assert tuple(profile) == PROFILE_FIELDS + extra
        for field in ("name", "address", "website", "email", "phone", "logo", "summary", "state"):
            assert isinstance(profile[field], str)
        assert profile["name"] and profile["summary"] and profile["address"]
        assert profile["website"] == "" or profile["website"].startswith("https://")
        assert _timestamp_ok(profile["createdAt"]) and _timestamp_ok(profile["updatedAt"])
        assert profile["updatedAt"] >= profile["createdAt"]
        assert profile["state"] in PROVINCE_CODES.values()
        if collection == "Builders":
            assert 1900 < profile["yearFounded"] < 2026
            assert profile["state"] in profile["provinces"]


# ---------------------------------------------------------------------------------------------- consistency
