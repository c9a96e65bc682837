"""Version and province scoping (precon/service/api/scope.py), over real HTTP.

Under ``v1-lite`` a request may name only lite fields in ``filterQuery``, ``facets``, ``facet`` and
``retrieveAttributes``, and no ``unitFilter``; a hidden name is a 400 that names the parameter and the field.
A profile's ``listings`` (inline, expanded, or inside profiles a listing's ``referrences`` expand) hold only the
listings the call may see; a single object outside the province is a 404.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precon import filters
from precon.client.models import PROVINCES
from precon.filters import Compare, Expr, Match, Range
from precon.schema import LISTING_ATTRIBUTES, LITE_FIELDS, LITE_LEFT_OUT, SEARCHABLE_LISTING_FIELDS
from precon.service.search.text import within_one_typo
from precon.service.stores.records import province_of
from precon.words import words as search_words
from tests.conftest import KEY_ALL, KEY_LITE, KEY_ONTARIO, Api

LITE_SEARCHABLE = [name for name in SEARCHABLE_LISTING_FIELDS if name in LITE_FIELDS]

LITE = "/v1-lite/all/"
FULL = "/v1/all/"
PROPERTY_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def message(response: Any) -> str:
    text: str = response.json()["message"]
    return text


def refused(api: Api, operation: str, name: str, where: str, **params: Any) -> None:
    response = api.get(LITE + operation, KEY_LITE, **params)
    assert response.status_code == 400, response.text
    assert message(response) == f"{where}: {name!r} is not an attribute of a v1-lite listing"


# -- oracle -----------------------------------------------------------------------------------------------


_PROVINCES: dict[str, dict[str, str | None]] = {}


def listing_provinces(api: Api) -> dict[str, str | None]:
    """Every stored listing's province, by id (read once per service)."""
    if api.url not in _PROVINCES:
        _PROVINCES[api.url] = {r["listingId"]: province_of(r.get("state")) for r in api.all_listings()}
    return _PROVINCES[api.url]


def readable(api: Api, province: str) -> Callable[[str], bool]:
    """Whether a ``Listings/<id>`` path names a listing a call on ``province`` (path segment) may see."""
    provinces = listing_provinces(api)

    def sees(path: str) -> bool:
        listing_id = path.removeprefix("Listings/")
        return listing_id in provinces and (province == "all" or provinces[listing_id] == province)

    return sees


def spanning_profile(api: Api, collection: str = "Builders") -> dict[str, Any]:
    """A profile with listings in Ontario and elsewhere."""
    provinces = listing_provinces(api)
    for profile in api.all_profiles():
        where = {provinces.get(p.removeprefix("Listings/")) for p in profile.get("listings") or []}
        if profile["path"].startswith(collection + "/") and "on" in where and len(where) > 1:
            return profile
    raise AssertionError("the test catalogue has no profile spanning provinces")


def ontario_listing(api: Api) -> dict[str, Any]:
    provinces = listing_provinces(api)
    spanning = {p for p in spanning_profile(api)["listings"]}
    return next(r for r in api.all_listings() if provinces[r["listingId"]] == "on" and r["path"] in spanning)


# -- finding 1: v1-lite names only lite fields -------------------------------------------------------------


def test_unit_filter_was_and_is_refused_on_v1_lite(api: Api) -> None:
    for operation in ("search_listings", "trending_listings", "facet_counts"):
        extra = {"facets": "type"} if operation == "facet_counts" else {}
        response = api.get(LITE + operation, KEY_LITE, unitFilter="status:Available", **extra)
        assert response.status_code == 400
        assert message(response).startswith("unitFilter: v1-lite has no floor plans")


@pytest.mark.parametrize("operation", ["search_listings", "trending_listings", "facet_counts", "search_facet_values"])
def test_filter_query_on_a_hidden_field_is_refused_on_v1_lite(api: Api, operation: str) -> None:
    extra = (
        {"facets": "type"} if operation == "facet_counts" else {"facet": "type"} if "facet_values" in operation else {}
    )
    for query, name in [
        ("floorPlans.startPrice > 0", "floorPlans.startPrice"),
        ('"floorPlans.squareFeet" >= 100', "floorPlans.squareFeet"),
        ("paymentStructures.totalDeposit:0 TO 1000000", "paymentStructures.totalDeposit"),
        ("type:Condo OR NOT (amenities:Gym)", "amenities"),
        ("startPrice > 0 AND (minBeds >= 1 OR hasParking:true)", "hasParking"),
        ("floorPlans:x", "floorPlans"),
    ]:
        refused(api, operation, name, "filterQuery", filterQuery=query, **extra)
        assert api.get(FULL + operation, KEY_ALL, filterQuery=query, **extra).status_code == 200


def test_a_filter_on_lite_fields_and_aliases_still_works_on_v1_lite(api: Api) -> None:
    query = "startPrice >= 0 AND NOT type:Nothing AND marketers:x OR objectID:y OR cityOrDistrict:Toronto"
    lite = api.ok(LITE + "search_listings", KEY_LITE, filterQuery=query, retrieveAttributes="listingId")
    full = api.ok(FULL + "search_listings", KEY_ALL, filterQuery=query, retrieveAttributes="listingId")
    assert lite["total"] == full["total"] > 0


def test_a_hidden_filter_was_an_oracle_on_v1_lite(api: Api) -> None:
    """On v1 a filter on floor-plan prices tells listings apart; on v1-lite it is not answered at all."""
    low = api.ok(FULL + "search_listings", KEY_ALL, filterQuery="floorPlans.startPrice < 500000", perPage=0)
    everything = api.ok(FULL + "search_listings", KEY_ALL, perPage=0)
    assert 0 < low["total"] < everything["total"]
    refused(
        api, "search_listings", "floorPlans.startPrice", "filterQuery", filterQuery="floorPlans.startPrice < 500000"
    )


@pytest.mark.parametrize("operation", ["search_listings", "facet_counts"])
def test_facets_on_a_hidden_field_are_refused_on_v1_lite(api: Api, operation: str) -> None:
    for name in ("floorPlans.startPrice", "paymentStructures.totalDeposit", "amenities", "hasParking"):
        refused(api, operation, name, "facets", facets=f"type,{name}")
        assert api.get(FULL + operation, KEY_ALL, facets=f"type,{name}").status_code == 200


def test_every_facet_on_v1_lite_is_the_lite_ones(api: Api) -> None:
    lite = api.ok(LITE + "facet_counts", KEY_LITE, facets="*")
    full = api.ok(FULL + "facet_counts", KEY_ALL, facets="*")
    assert set(lite) == {name for name in full if name in LITE_FIELDS}
    assert set(full) - set(lite) >= {"amenities", "hasParking"}
    assert lite == {name: counts for name, counts in full.items() if name in lite}
    searched = api.ok(LITE + "search_listings", KEY_LITE, facets="*", perPage=0)["facets"]
    assert set(searched) == set(lite)


def test_facet_of_search_facet_values_was_and_is_refused_on_v1_lite(api: Api) -> None:
    refused(api, "search_facet_values", "floorPlans.status", "facet", facet="floorPlans.status")
    refused(api, "search_facet_values", "amenities", "facet", facet="amenities")


def test_retrieve_attributes_names_only_lite_fields_on_v1_lite(api: Api) -> None:
    refused(api, "search_listings", "floorPlans", "retrieveAttributes", retrieveAttributes="name,floorPlans")
    refused(api, "listing", "photos", "retrieveAttributes", retrieveAttributes="photos", id="XSS0A1")


# -- finding 2: a profile's listings are the call's --------------------------------------------------------


def test_a_profile_lists_only_the_listings_of_the_province(api: Api) -> None:
    profile = spanning_profile(api)
    sees = readable(api, "on")
    expected = [p for p in profile["listings"] if sees(p)]
    assert 0 < len(expected) < len(profile["listings"])
    profile_id = profile["path"].split("/", 1)[1]
    for key, path in [(KEY_ONTARIO, "/v1/on/"), (KEY_LITE, "/v1-lite/on/"), (KEY_ALL, "/v1/on/")]:
        assert api.ok(path + "profile", key, id=profile_id)["listings"] == expected
        expanded = api.ok(path + "profile", key, id=profile_id, referrences="listings")["listings"]
        assert [item["path"] for item in expanded] == expected
        found = api.ok(path + "search_profiles", key, filterQuery=filters.to_query(Match("path", profile["path"])))
        assert [hit["listings"] for hit in found["results"]] == [expected]
    # Unchanged for a key granted every province, on all.
    assert api.ok(FULL + "profile", KEY_ALL, id=profile_id)["listings"] == profile["listings"]
    assert api.ok(LITE + "profile", KEY_LITE, id=profile_id)["listings"] == profile["listings"]


def test_profiles_that_references_expand_list_only_the_listings_of_the_province(api: Api) -> None:
    record = ontario_listing(api)
    sees = readable(api, "on")
    answers = [
        *[api.ok("/v1/on/listing", KEY_ONTARIO, id=record["listingId"], referrences="builders")["builders"]],
        api.ok("/v1-lite/on/listing", KEY_LITE, id=record["listingId"], referrences="builders")["builders"],
        api.ok("/v1/on/profiles_of_listing", KEY_ONTARIO, id=record["listingId"], referrences="builders")["builders"],
        *[
            hit["builders"]
            for hit in api.ok(
                "/v1/on/search_listings",
                KEY_ONTARIO,
                filterQuery=filters.to_query(Match("listingId", record["listingId"])),
                referrences="builders",
            )["results"]
        ],
    ]
    assert len(answers) == 4
    for builders in answers:
        assert builders and all(isinstance(b, dict) for b in builders)
        for builder in builders:
            assert all(sees(path) for path in builder["listings"])
    untrimmed = api.ok(FULL + "listing", KEY_ALL, id=record["listingId"], referrences="builders")["builders"]
    assert any(not all(sees(path) for path in builder["listings"]) for builder in untrimmed)


def test_a_listings_facet_of_profiles_counts_only_the_listings_of_the_province(api: Api) -> None:
    sees = readable(api, "on")
    facets = api.ok("/v1/on/search_profiles", KEY_ONTARIO, facets="listings", perPage=0)["facets"]["listings"]
    assert facets and all(sees(value) for value in facets)
    everywhere = api.ok(FULL + "search_profiles", KEY_ALL, facets="listings", perPage=0)["facets"]["listings"]
    assert not all(sees(value) for value in everywhere)


# -- finding 3: single objects outside the province are 404 -------------------------------------------------


def test_single_objects_outside_the_province_are_not_found(api: Api) -> None:
    provinces = listing_provinces(api)
    elsewhere = next(i for i, p in provinces.items() if p not in ("on", None))
    for operation in ("listing", "similar_listings", "profiles_of_listing"):
        assert api.get("/v1/on/" + operation, KEY_ONTARIO, id=elsewhere).status_code == 404
        assert api.get("/v1-lite/on/" + operation, KEY_LITE, id=elsewhere).status_code == 404
        assert api.get(FULL + operation, KEY_ALL, id=elsewhere).status_code == 200
    found = api.ok("/v1/on/multiple_listings", KEY_ONTARIO, ids=f"{elsewhere},{ontario_listing(api)['listingId']}")
    assert [r["listingId"] for r in found["results"]] == [ontario_listing(api)["listingId"]]
    outside = next(
        p
        for p in api.all_profiles()
        if p.get("listings") and all(provinces.get(i.removeprefix("Listings/")) != "on" for i in p["listings"])
    )
    profile_id = outside["path"].split("/", 1)[1]
    assert api.get("/v1/on/profile", KEY_ONTARIO, id=profile_id).status_code == 404
    assert api.get(FULL + "profile", KEY_ALL, id=profile_id).status_code == 200


# -- properties ---------------------------------------------------------------------------------------------

_identifier = st.from_regex(r"[a-z][A-Za-z0-9_]{0,10}", fullmatch=True)
hidden_names = st.one_of(
    st.sampled_from(sorted(LITE_LEFT_OUT)),
    st.sampled_from(sorted(name for name in LISTING_ATTRIBUTES if name.split(".")[0] in LITE_LEFT_OUT)),
    st.builds(lambda leaf: "floorPlans." + leaf, _identifier),
    st.builds(lambda leaf: "paymentStructures." + leaf, _identifier),
)
lite_names = st.sampled_from(["type", "startPrice", "minBeds", "cityOrDistrict", "sellingStatus", "marketers"])
_values = st.sampled_from(["Condo", "Toronto", "x", "Selling now", "true", "12"])


def atoms(names: st.SearchStrategy[str]) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.builds(Match, names, _values),
        st.builds(Compare, names, st.sampled_from([">", ">=", "<", "<=", "=", "!="]), st.integers(0, 10**6)),
        st.builds(lambda name, low: Range(name, low, low + 500_000), names, st.integers(0, 10**6)),
    )


@st.composite
def with_hidden(draw: st.DrawFn) -> tuple[str, Expr]:
    """A filter expression of lite attributes with one hidden attribute somewhere in it."""
    hidden = draw(hidden_names)
    expr: Expr = draw(atoms(st.just(hidden)))
    for _ in range(draw(st.integers(0, 4))):
        other = draw(atoms(lite_names))
        combine = draw(st.sampled_from([filters.and_, filters.or_, lambda a, b: filters.and_(b, a)]))
        combined = combine(expr, other)
        assert combined is not None
        expr = filters.not_(combined) if draw(st.booleans()) else combined
    return hidden, expr


@st.composite
def hidden_requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str]]:
    """(hidden name, operation, parameters) of a request that names a hidden field in one place."""
    where = draw(st.sampled_from(["filterQuery", "facets", "retrieveAttributes"]))
    if where == "filterQuery":
        name, expr = draw(with_hidden())
        operation = draw(
            st.sampled_from(["search_listings", "facet_counts", "search_facet_values", "trending_listings"])
        )
        params = {"filterQuery": filters.to_query(expr)}
        if operation == "facet_counts":
            params["facets"] = "type"
        if operation == "search_facet_values":
            params["facet"] = "type"
        return name, operation, params
    name = draw(hidden_names)
    others = draw(st.lists(st.sampled_from(["type", "startPrice", "cityOrDistrict", "builders"]), max_size=3))
    names = [*others]
    names.insert(draw(st.integers(0, len(names))), name)
    if where == "facets":
        return name, draw(st.sampled_from(["search_listings", "facet_counts"])), {"facets": ",".join(names)}
    return name, "search_listings", {"retrieveAttributes": ",".join(names), "perPage": "3"}


@PROPERTY_SETTINGS
@given(request=hidden_requests())
def test_property_a_hidden_field_anywhere_is_refused_on_v1_lite_only(api: Api, request: Any) -> None:
    name, operation, params = request
    lite = api.get(LITE + operation, KEY_LITE, **params)
    assert lite.status_code == 400, (params, lite.text)
    assert repr(name) in message(lite) and "v1-lite" in message(lite), (params, message(lite))
    full = api.get(FULL + operation, KEY_ALL, **params)
    assert full.status_code in (200, 400), full.text
    if full.status_code == 400:
        assert "v1-lite" not in message(full)


def listing_paths(answer: Any) -> list[str]:
    """Every ``Listings/<id>`` path, and every listing's path, anywhere in an answer."""
    found: list[str] = []
    if isinstance(answer, dict):
        if isinstance(answer.get("listingId"), str):
            found.append("Listings/" + answer["listingId"])
        for value in answer.values():
            found += listing_paths(value)
    elif isinstance(answer, list):
        for value in answer:
            found += listing_paths(value)
    elif isinstance(answer, str) and answer.startswith("Listings/"):
        found.append(answer)
    return found


_calls = st.sampled_from(
    [(KEY_ONTARIO, "v1", "on"), (KEY_LITE, "v1-lite", "on"), (KEY_ALL, "v1", "on"), (KEY_LITE, "v1-lite", "all")]
    + [(KEY_LITE, "v1-lite", code) for code in PROVINCES]
)


@PROPERTY_SETTINGS
@given(data=st.data())
def test_property_no_answer_lists_a_listing_the_key_may_not_read(api: Api, data: st.DataObject) -> None:
    profile = data.draw(st.sampled_from(api.all_profiles()), label="profile")
    key, version, province = data.draw(_calls, label="call")
    sees = readable(api, province)
    base = f"/{version}/{province}/"
    expand = data.draw(st.sampled_from(["", "listings"]), label="referrences")
    profile_id = profile["path"].split("/", 1)[1]
    answers = [
        api.get(base + "profile", key, id=profile_id, referrences=expand),
        api.get(
            base + "search_profiles",
            key,
            filterQuery=filters.to_query(Match("path", profile["path"])),
            referrences=expand,
            facets="listings",
        ),
    ]
    listed = [p for p in profile.get("listings") or [] if isinstance(p, str)]
    if listed:
        listing_id = data.draw(st.sampled_from(listed)).removeprefix("Listings/")
        references = "builders,architects,marketingCompanies,salesCompanies,owners,interiorDesigners"
        answers.append(api.get(base + "listing", key, id=listing_id, referrences=references))
        answers.append(api.get(base + "profiles_of_listing", key, id=listing_id, referrences=references))
    for response in answers:
        assert response.status_code in (200, 404), response.text
        if response.status_code == 200:
            body = response.json()
            leaked = [p for p in listing_paths(body) if not sees(p)]
            leaked += [p for p in (body.get("facets") or {}).get("listings", {}) if not sees(p)]
            assert not leaked, (key, version, province, leaked[:3])


def test_search_on_v1_lite_matches_only_the_fields_it_shows(api: Api) -> None:
    """A word found only in a hidden field (summary, amenities) finds nothing under v1-lite: search is no oracle
    for a hidden value. On v1 the same word finds the listing."""

    def text_of(value: Any) -> str:
        return " ".join(map(str, value)) if isinstance(value, list) else str(value or "")

    every = api.all_listings()
    shown = {w for r in every for name in LITE_SEARCHABLE for w in search_words(text_of(r.get(name)))}
    hidden = {w for r in every for w in search_words(text_of(r.get("summary"))) if len(w) > 5}
    hidden_only = sorted(w for w in hidden if not any(s.startswith(w) or within_one_typo(w, s) for s in shown))
    assert hidden_only, "the catalogue's summaries have words of their own"
    for word in hidden_only[:5]:
        assert api.ok("/v1/all/search_listings", search=word, perPage="0")["total"] > 0, word
        assert api.ok("/v1-lite/all/search_listings", KEY_LITE, search=word, perPage="0")["total"] == 0, word
    name_word = search_words(every[0]["name"])[0]
    assert api.ok("/v1-lite/all/search_listings", KEY_LITE, search=name_word, perPage="0")["total"] > 0
