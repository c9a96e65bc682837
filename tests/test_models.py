"""precon.client.models: records as the production service sends them, loose fields and all."""

from __future__ import annotations

import pickle
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precon import schema
from precon.client.models import (
    ErrorBody,
    FacetCountsResponse,
    FacetHit,
    FacetValueHits,
    FloorPlan,
    GeoPoint,
    Listing,
    MatchedFloorPlans,
    Page,
    Profile,
    ProfilesOfListing,
)

API_DOCS = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def test_absent_fields_are_defaults() -> None:
    listing = Listing.model_validate({"listingId": "ABC123"})
    assert listing.id == "ABC123"
    assert listing.name is None and listing.startPrice is None and listing.numberOfUnits is None
    assert listing.type == [] and listing.amenities == [] and listing.photos == [] and listing.builders == []
    assert listing.floorPlans is None and listing.geoloc is None and listing.score is None
    assert listing.model_extra == {}


def test_explicit_nulls_are_accepted() -> None:
    record = {
        "listingId": "ABC123",
        "constructionStatus": None,
        "streetNumber": None,
        "startPrice": None,
        "numberOfUnits": None,
        "type": None,
        "amenities": None,
        "neighbourhood": None,
        "floorPlans": None,
        "logo": None,
        "_geoloc": None,
        "createdAt": None,
    }
    listing = Listing.model_validate(record)
    assert listing.constructionStatus is None and listing.streetNumber is None and listing.startPrice is None
    assert listing.type == [] and listing.amenities == [] and listing.neighbourhood == []
    assert listing.floorPlans is None and listing.logo is None and listing.geoloc is None and listing.createdAt is None


@pytest.mark.parametrize(
    ("field", "sent", "read"),
    [
        ("numberOfUnits", "312", 312),
        ("numberOfUnits", " 312 ", 312),
        ("numberOfUnits", "1,204", 1204),
        ("numberOfUnits", 45, 45),
        ("numberOfFloors", "38", 38),
        ("numberOfFloors", "38.0", 38),
        ("numberOfFloors", "", None),
        ("streetNumber", "100", 100),
        ("startPrice", "1,250,000", 1_250_000.0),
        ("startPrice", 499900, 499_900.0),
        ("startPrice", "", None),
        ("startPrice", "   ", None),
        ("startPrice", "call us", None),
        ("startPrice", "NaN", None),
        ("startPrice", "1e999", None),
        ("lat", "43.6532000", 43.6532),
        ("long", "-79.3832", -79.3832),
        ("minBeds", 1.5, 1.5),
        ("maxBaths", "2.5", 2.5),
    ],
)
def test_listing_numbers_from_text(field: str, sent: Any, read: Any) -> None:
    value = getattr(Listing.model_validate({field: sent}), field)
    assert value == read
    assert type(value) is type(read)


def test_integer_text_with_a_fraction_is_a_validation_error() -> None:
    with pytest.raises(pydantic.ValidationError) as raised:
        Listing.model_validate({"numberOfUnits": "312.5"})
    assert [e["loc"] for e in raised.value.errors()] == [("numberOfUnits",)]


@pytest.mark.parametrize(
    ("plan", "expected"),
    [
        ({"squareFeet": "742", "startPrice": ""}, (742.0, None)),
        ({"squareFeet": "742", "startPrice": "1,250,000"}, (742.0, 1_250_000.0)),
        ({"squareFeet": 600, "startPrice": 599900}, (600.0, 599_900.0)),
        ({"squareFeet": "", "startPrice": "649,900.50"}, (None, 649_900.5)),
        ({}, (None, None)),
    ],
)
def test_floor_plan_numbers(plan: dict[str, Any], expected: tuple[float | None, float | None]) -> None:
    parsed = Listing.model_validate({"floorPlans": [plan]}).floorPlans
    assert parsed is not None and len(parsed) == 1
    assert (parsed[0].squareFeet, parsed[0].startPrice) == expected


def test_floor_plan_price_per_square_foot() -> None:
    assert FloorPlan.model_validate({"squareFeet": "500", "startPrice": "600,000"}).price_per_square_foot == 1200.0
    assert FloorPlan.model_validate({"squareFeet": "500", "startPrice": ""}).price_per_square_foot is None
    assert FloorPlan.model_validate({"squareFeet": "", "startPrice": 500000}).price_per_square_foot is None


def test_floor_plan_units_as_the_production_service_sends_them() -> None:
    """contract.md: ``floor`` and ``unitNumber`` are strings, ``price`` a number or null, ``description`` optional;
    ``exposure`` may be one string; ``units: null`` or none at all is no units."""
    plan = FloorPlan.model_validate(
        {
            "exposure": "North",
            "units": [
                {"unitNumber": "203", "floor": "6", "status": "Available", "price": 520000, "description": ""},
                {"unitNumber": "1204", "floor": "12", "status": "Sold", "price": None},
            ],
        }
    )
    assert plan.exposure == ["North"]
    assert [unit.unitNumber for unit in plan.units] == ["203", "1204"]
    assert [unit.floor_number for unit in plan.units] == [6.0, 12.0]
    assert plan.units[0].price == 520000 and plan.units[1].price is None
    assert [unit.unitNumber for unit in plan.available_units] == ["203"]
    assert FloorPlan.model_validate({"units": None}).units == [] == FloorPlan.model_validate({}).units


def test_unknown_fields_are_kept() -> None:
    record = {
        "listingId": "ABC123",
        "developerNotes": "phase 2",
        "priceHistory": [{"at": "2024-01-01", "price": 1}],
        "_rankingInfo": {"nbTypos": 0},
    }
    listing = Listing.model_validate(record)
    extras = {
        "developerNotes": "phase 2",
        "priceHistory": [{"at": "2024-01-01", "price": 1}],
        "_rankingInfo": {"nbTypos": 0},
    }
    assert listing.model_extra == extras
    dumped = listing.model_dump()
    assert {k: dumped[k] for k in extras} == extras
    assert listing.model_dump(exclude_unset=True) == record
    assert Listing.model_validate(dumped) == listing


def test_floor_plan_and_profile_extras_are_kept() -> None:
    listing = Listing.model_validate({"floorPlans": [{"name": "A", "balcony": "60 sq ft"}]})
    assert listing.floorPlans is not None
    assert listing.floorPlans[0].model_extra == {"balcony": "60 sq ft"}
    assert Profile.model_validate({"path": "Builders/b", "founded": 1987}).model_extra == {"founded": 1987}


def test_aliased_fields() -> None:
    highlight = {"name": {"value": "<em>Harbour</em> Tower", "matchLevel": "full", "matchedWords": ["harbour"]}}
    record = {
        "listingId": "ABC123",
        "_geoloc": {"lat": 43.64, "lng": -79.38},
        "_score": 7.25,
        "_highlightResult": highlight,
    }
    listing = Listing.model_validate(record)
    assert listing.geoloc == GeoPoint(lat=43.64, lng=-79.38)
    assert listing.score == 7.25
    assert listing.highlight == highlight
    assert listing.model_extra == {}
    dumped = listing.model_dump(by_alias=True, exclude_unset=True)
    assert dumped == record
    # Filled by name too.
    assert Listing(geoloc=GeoPoint(lat=1, lng=2), score=1.0).model_dump(by_alias=True, exclude_unset=True) == {
        "_geoloc": {"lat": 1.0, "lng": 2.0},
        "_score": 1.0,
    }


def test_geoloc_without_coordinates_is_a_validation_error() -> None:
    with pytest.raises(pydantic.ValidationError):
        Listing.model_validate({"_geoloc": {"lat": 43.6}})


def test_references_hold_paths_or_expanded_profiles() -> None:
    record = {
        "listingId": "ABC123",
        "builders": [
            "Builders/aaa",
            {"path": "Builders/bbb", "id": "bbb", "name": "Brick Co", "website": "https://brick.example"},
        ],
        "architects": [{"path": "Architects/ccc", "name": "Lines", "listings": ["Listings/ABC123"]}],
        "owners": ["Owners/ddd"],
        "salesCentres": [],
    }
    listing = Listing.model_validate(record)
    assert listing.builders[0] == "Builders/aaa"
    expanded = listing.builders[1]
    assert isinstance(expanded, Profile)
    assert (expanded.collection, expanded.profile_id, expanded.name) == ("Builders", "bbb", "Brick Co")
    architect = listing.architects[0]
    assert isinstance(architect, Profile)
    assert architect.listings == ["Listings/ABC123"]
    assert architect.profile_id == "ccc"
    assert listing.owners == ["Owners/ddd"]
    assert listing.model_dump(exclude_unset=True)["builders"] == [
        "Builders/aaa",
        {"path": "Builders/bbb", "id": "bbb", "name": "Brick Co", "website": "https://brick.example"},
    ]
    of_listing = ProfilesOfListing.model_validate({"id": "ABC123", "owners": [{"path": "Owners/o1"}], "builders": []})
    assert isinstance(of_listing.owners[0], Profile) and of_listing.owners[0].collection == "Owners"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T12:30:00.123Z", datetime(2024, 5, 1, 12, 30, 0, 123000, tzinfo=UTC)),
        ("2024-05-01T12:30:00Z", datetime(2024, 5, 1, 12, 30, tzinfo=UTC)),
        (
            "2024-05-01T08:30:00-04:00",
            datetime(2024, 5, 1, 8, 30, tzinfo=timezone(timedelta(hours=-4))),
        ),
    ],
)
def test_timestamps_are_parsed_aware(text: str, expected: datetime) -> None:
    listing = Listing.model_validate({"createdAt": text, "updatedAt": text})
    assert listing.createdAt == expected
    assert listing.createdAt is not None and listing.createdAt.utcoffset() == expected.utcoffset()
    assert listing.updatedAt == expected
    photo = Listing.model_validate({"photos": [{"createdAt": text, "tags": "exterior"}]}).photos[0]
    assert photo.createdAt == expected
    assert photo.tags == ["exterior"]


@pytest.mark.parametrize("garbage", ["not a date", "", "Spring 2026", "2024-13-45T99:00:00Z", "yesterday"])
def test_timestamp_garbage_is_none(garbage: str) -> None:
    listing = Listing.model_validate({"createdAt": garbage, "floorPlans": [{"lastUpdated": garbage}]})
    assert listing.createdAt is None
    assert listing.floorPlans is not None and listing.floorPlans[0].lastUpdated is None


def test_page_of_listings_without_facets() -> None:
    page = Page[Listing].model_validate(
        {
            "results": [{"listingId": "A1", "numberOfUnits": "10"}, {"objectID": "B2", "_score": 1.5}],
            "total": 42,
            "page": 1,
            "pages": 21,
            "perPage": 2,
        }
    )
    assert [r.id for r in page.results] == ["A1", "B2"]
    assert all(isinstance(r, Listing) for r in page.results)
    assert page.results[0].numberOfUnits == 10 and page.results[1].score == 1.5
    assert (page.total, page.page, page.pages, page.perPage, page.facets) == (42, 1, 21, 2, None)


def test_page_of_listings_with_facets() -> None:
    facets = {"type": {"Condo": 30, "Townhouse": 12}, "cityOrDistrict": {"Toronto": 40, "Ottawa": 2}}
    page = Page[Listing].model_validate(
        {"results": [], "total": 42, "page": 0, "pages": 3, "perPage": 20, "facets": facets}
    )
    assert page.results == []
    assert page.facets == facets
    assert list(page.facets["type"]) == ["Condo", "Townhouse"]


def test_page_of_profiles_and_defaults() -> None:
    page = Page[Profile].model_validate({"results": [{"objectID": "p1", "path": "Marketers/p1"}]})
    assert page.results[0].profile_id == "p1" and page.results[0].collection == "Marketers"
    assert (page.total, page.page, page.pages, page.perPage, page.facets) == (0, 0, 0, 20, None)


def test_facet_counts_object_and_list_formats_agree() -> None:
    as_object = FacetCountsResponse.model_validate(
        {"amenities": {"Gym": 12, "Pool": 7}, "builders": {"Builders/x": 3}, "empty": {}}
    )
    as_list = FacetCountsResponse.model_validate(
        {
            "amenities": [{"value": "Gym", "count": 12}, {"value": "Pool", "count": 7}],
            "builders": [{"value": "Builders/x", "count": 3}],
            "empty": [],
        }
    )
    expected = {"amenities": {"Gym": 12, "Pool": 7}, "builders": {"Builders/x": 3}, "empty": {}}
    assert as_object.as_counts() == expected
    assert as_list.as_counts() == expected
    assert list(as_list.as_counts()["amenities"]) == ["Gym", "Pool"]


def test_facet_counts_reject_a_non_count() -> None:
    with pytest.raises(pydantic.ValidationError):
        FacetCountsResponse.model_validate({"amenities": {"Gym": "many"}})


@pytest.mark.parametrize(
    ("record", "collection", "profile_id"),
    [
        ({"path": "Builders/5fH9abc"}, "Builders", "5fH9abc"),
        ({"path": "SalesCentres/s/with/slash"}, "SalesCentres", "s/with/slash"),
        ({"path": "Owners/o1", "id": "explicit"}, "Owners", "explicit"),
        ({"path": "Marketers/m1", "objectID": "obj"}, "Marketers", "obj"),
        ({"id": "only-id"}, None, "only-id"),
        ({"path": "NoSlash"}, None, None),
        ({}, None, None),
    ],
)
def test_profile_collection_and_id(record: dict[str, Any], collection: str | None, profile_id: str | None) -> None:
    profile = Profile.model_validate(record)
    assert (profile.collection, profile.profile_id) == (collection, profile_id)


def test_profile_listings_and_aliases() -> None:
    profile = Profile.model_validate(
        {"path": "Builders/b", "listings": "Listings/A1", "_score": 2, "_highlightResult": {"name": {"value": "x"}}}
    )
    assert profile.listings == ["Listings/A1"]
    assert profile.score == 2.0
    assert profile.highlight == {"name": {"value": "x"}}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"error": "Id cannnot be blank"}, (None, None, "Id cannnot be blank")),
        ({"requestId": "r-1", "message": "Forbidden"}, ("r-1", "Forbidden", None)),
        ({"message": "Error: 500"}, (None, "Error: 500", None)),
    ],
)
def test_error_body(body: dict[str, Any], expected: tuple[str | None, str | None, str | None]) -> None:
    error = ErrorBody.model_validate(body)
    assert (error.requestId, error.message, error.error) == expected
    assert error.model_dump(exclude_none=True) == body


# ----------------------------------------------------------------------------------------------------------
# Any record built from the interface's listing fields validates or fails with a ValidationError.
# ----------------------------------------------------------------------------------------------------------


def floor_plan_fields() -> list[str]:
    """Every field of the floor plan table in docs/api.md."""
    text = API_DOCS.read_text(encoding="utf-8")
    table = text.split("A floor plan (element of `floorPlans`", 1)[1].split("\n\n", 2)[1]
    rows = [row.split("|")[1] for row in table.splitlines() if row.startswith("| ") and "Field" not in row]
    return [name.strip() for row in rows for name in row.split(",")]


LISTING_FIELDS = list(schema.LISTING_FIELDS)
NESTED_KEYS = sorted(
    {
        *floor_plan_fields(),
        "lat",
        "lng",
        "url",
        "name",
        "tags",
        "type",
        "createdAt",
        "amount",
        "milestones",
        "totalDeposit",
        "path",
        "id",
        "listings",
        "value",
        "count",
        "matchLevel",
    }
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.floats()
    | st.text(max_size=12)
    | st.sampled_from(["", "312", "1,250,000", "2024-05-01T12:00:00Z", "1e999", "NaN", "-0", "Builders/x"])
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(NESTED_KEYS), children, max_size=4)
    ),
    max_leaves=12,
)


def test_the_interface_names_the_listing_fields() -> None:
    assert len(LISTING_FIELDS) >= 90
    assert {"listingId", "_geoloc", "numberOfUnits", "floorPlans", "owners", "lockerMaintainance"} <= set(
        LISTING_FIELDS
    )
    assert all(re.fullmatch(r"_?[A-Za-z]+", name) for name in LISTING_FIELDS), LISTING_FIELDS


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(LISTING_FIELDS or ["listingId"]), json_values, max_size=12))
def test_any_listing_record_validates_or_raises_validation_error(record: dict[str, Any]) -> None:
    try:
        listing = Listing.model_validate(record)
    except pydantic.ValidationError:
        return
    assert isinstance(listing, Listing)
    listing.model_dump()  # what validated can be dumped again


def test_matched_floor_plans_and_facet_value_hits_are_lenient_and_pickle() -> None:
    listing = Listing.model_validate(
        {"listingId": "ABC123", "_matchedFloorPlans": {"count": 2, "of": "7", "minPrice": "689990", "names": None}}
    )
    assert listing.matched_floor_plans == MatchedFloorPlans(count=2, of=7, minPrice=689990.0, names=[])
    assert Listing.model_validate({"listingId": "ABC123"}).matched_floor_plans is None
    unpriced = MatchedFloorPlans.model_validate({"count": 1, "minPrice": "", "names": ["Suite A"]})
    assert (unpriced.of, unpriced.minPrice, unpriced.names) == (None, None, ["Suite A"])
    hits = FacetValueHits.model_validate(
        {
            "facetHits": [
                {"value": "Builders/X1", "count": 3, "label": "Bélanger", "highlighted": "<em>Bél</em>anger"},
                {"value": "Toronto", "count": 1, "extra": True},
            ],
            "exhaustiveFacetsCount": True,
            "total": 2,
        }
    )
    assert hits.exhaustive is True and hits.total == 2
    assert hits.hits[0] == FacetHit(value="Builders/X1", count=3, label="Bélanger", highlighted="<em>Bél</em>anger")
    assert (hits.hits[1].label, hits.hits[1].highlighted) == (None, None)
    assert pickle.loads(pickle.dumps(hits)) == hits
    assert pickle.loads(pickle.dumps(listing)) == listing
    assert FacetValueHits.model_validate({}).hits == []
