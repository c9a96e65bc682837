"""The listing operations over real HTTP, checked against oracles computed here from the stored records."""

from __future__ import annotations

import math
from typing import Any

import pytest

from precon import filters
from precon.schema import LITE_FIELDS
from tests.conftest import KEY_ALL, KEY_LITE, KEY_ONTARIO, XSS_NAME, Api

SEARCH = "/v1/all/search_listings"


def haversine_m(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    """Great-circle distance, written out independently of the service's."""
    r = 6_371_000.0
    phi1, phi2 = math.radians(lat1), math.radians(lat2)
    a = (
        math.sin((phi2 - phi1) / 2) ** 2
        + math.cos(phi1) * math.cos(phi2) * math.sin(math.radians(lng2 - lng1) / 2) ** 2
    )
    return 2 * r * math.asin(math.sqrt(a))


def default_order(records: list[dict[str, Any]]) -> list[str]:
    ordered = sorted(records, key=lambda r: r["listingId"])
    ordered.sort(key=lambda r: r.get("updatedAt") or "", reverse=True)
    ordered.sort(key=lambda r: r.get("isFeatured") is True, reverse=True)
    return [r["listingId"] for r in ordered]


def ids(body: dict[str, Any]) -> list[str]:
    return [r["listingId"] for r in body["results"]]


def every_id(api: Api, path: str = SEARCH, **params: Any) -> list[str]:
    body = api.ok(path, product_id="everything", perPage=1000, **params)
    assert body["total"] <= 1000
    return ids(body)


# -- the envelope, paging and order ----------------------------------------------------------------------------


def test_search_envelope_and_default_order(api: Api) -> None:
    records = api.all_listings()
    body = api.ok(SEARCH, product_id="everything", perPage=5)
    assert set(body) == {"results", "total", "page", "pages", "perPage"}
    assert body["total"] == len(records)
    assert body["page"] == 0
    assert body["perPage"] == 5
    assert body["pages"] == math.ceil(len(records) / 5)
    assert ids(body) == default_order(records)[:5]
    for result in body["results"]:
        assert result["objectID"] == result["listingId"]
        assert "_score" not in result


def test_pages_cover_everything_once_in_order(api: Api) -> None:
    records = api.all_listings()
    seen: list[str] = []
    for page in range(math.ceil(len(records) / 150)):
        seen += ids(api.ok(SEARCH, product_id="everything", perPage=150, page=page))
    assert seen == default_order(records)


def test_per_page_zero_returns_only_the_total(api: Api) -> None:
    body = api.ok(SEARCH, product_id="everything", perPage=0, facets="sellingStatus")
    assert body["results"] == []
    assert body["total"] == len(api.all_listings())
    assert body["pages"] == 0
    assert sum(body["facets"]["sellingStatus"].values()) == body["total"]


def test_page_past_the_end_is_empty_not_an_error(api: Api) -> None:
    body = api.ok(SEARCH, product_id="everything", perPage=50, page=999)
    assert body["results"] == []
    assert body["page"] == 999
    assert body["total"] == len(api.all_listings())


def test_aliases_and_trailing_slash(api: Api) -> None:
    body = api.ok(SEARCH + "/", product_Id="everything", perpage=3)
    assert body["perPage"] == 3 and len(body["results"]) == 3


# -- text search -----------------------------------------------------------------------------------------------


def test_text_search_requires_every_word_and_scores_results(api: Api) -> None:
    record = api.all_listings()[7]
    city = record["cityOrDistrict"]
    word = record["name"].split()[0]
    body = api.ok(SEARCH, product_id="everything", search=f"{word} {city}", perPage=1000)
    assert record["listingId"] in ids(body)
    scores = [r["_score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True)
    for result in body["results"]:
        text = " ".join(str(result.get(f) or "") for f in ("name", "summary", "cityOrDistrict", "fullAddress"))
        text += " " + " ".join(result.get("amenities") or []) + " " + " ".join(result.get("neighbourhood") or [])
        assert city.split()[0].lower() in text.lower()


def test_last_word_matches_as_a_prefix(api: Api) -> None:
    city = api.all_listings()[3]["cityOrDistrict"]
    full = set(every_id(api, search=city))
    prefix = set(every_id(api, search=city[: max(3, len(city) - 2)]))
    assert full and full <= prefix


def test_matching_ignores_case_and_accents(api: Api) -> None:
    records = api.all_listings()
    record = records[0]
    city = record["cityOrDistrict"]
    upper = every_id(api, search=city.upper())
    assert record["listingId"] in upper
    assert set(upper) == set(every_id(api, search=city.lower()))


def test_one_typo_matches_when_nothing_matches_exactly(api: Api) -> None:
    city = next(r["cityOrDistrict"] for r in api.all_listings() if len(r["cityOrDistrict"]) >= 7)
    word = city.split()[0]
    typo = word[0] + word[2] + word[1] + word[3:]  # two neighbours swapped
    exact = set(every_id(api, search=word))
    fuzzy = set(every_id(api, search=typo + " "))
    assert exact and exact <= fuzzy


def test_search_over_512_characters_is_a_400(api: Api) -> None:
    response = api.get(SEARCH, product_id="everything", search="a" * 513)
    assert response.status_code == 400
    assert "512" in response.json()["message"]


# -- highlighting ----------------------------------------------------------------------------------------------


def test_highlight_wraps_matches_and_escapes_everything_else(api: Api) -> None:
    body = api.ok(SEARCH, product_id="everything", search="script alert", highlightResults="true")
    result = next(r for r in body["results"] if r["listingId"] == "XSS0A1")
    assert result["name"] == XSS_NAME
    name = result["_highlightResult"]["name"]
    assert name == {
        "value": "&lt;<em>script</em>&gt;<em>alert</em>(1)&lt;/<em>script</em>&gt; Lofts",
        "matchLevel": "full",
        "matchedWords": ["script", "alert"],
    }
    assert "<script>" not in str(result["_highlightResult"])


def test_highlight_of_array_attributes_and_unmatched_fields(api: Api) -> None:
    record = next(r for r in api.all_listings() if r.get("amenities"))
    amenity = record["amenities"][0]
    body = api.ok(
        SEARCH,
        product_id="everything",
        search=amenity,
        highlightResults="true",
        filterQuery=f'listingId:"{record["listingId"]}"',
    )
    highlight = body["results"][0]["_highlightResult"]
    assert isinstance(highlight["amenities"], list)
    assert any(item["matchLevel"] == "full" for item in highlight["amenities"])
    assert highlight["country"]["matchLevel"] in ("none", "partial", "full")
    assert set(highlight) <= {
        "name",
        "summary",
        "amenities",
        "cityOrDistrict",
        "streetName",
        "country",
        "neighbourhood",
        "fullAddress",
    }


# -- filters ---------------------------------------------------------------------------------------------------

CLIENT_CHAINS = [
    'startPrice >= 400000  AND startPrice <= 900000 AND type:"Condo" OR type:"Townhouse" AND minBeds >= 1',
    "constructionStatus:Pre-Construction",
    'constructionStatus:"Pre Construction"',
    "constructionStartedTBD:true",
    "floorPlans.startPrice > 1000000",
    "startPrice:500000 TO 750000",
    'NOT sellingStatus:"Sold Out" AND (type:Condo OR type:Loft)',
    "amenities:gym AND amenities:pool",
    "isFeatured:true OR completionYear >= 2029",
    "floorPlans.numberOfBedrooms >= 3 AND floorPlans.status:Available",
    "maxBaths != 2",
    "minBeds = 1.5",
    'floorPlans.floorPlanType:"1 Bed + Den"',
    "numberOfUnits > 300",
    "photos.tags:exterior",
]


@pytest.mark.parametrize("chain", CLIENT_CHAINS)
def test_filter_query_matches_the_reference_evaluator(api: Api, chain: str) -> None:
    expr = filters.parse(chain)
    expected = sorted(r["listingId"] for r in api.all_listings() if filters.evaluate(expr, r))
    assert sorted(every_id(api, filterQuery=chain)) == expected


def test_filter_on_builder_path(api: Api) -> None:
    record = next(r for r in api.all_listings() if r.get("builders"))
    builder = record["builders"][0]
    found = every_id(api, filterQuery=f'builders:"{builder}"')
    assert record["listingId"] in found
    assert all(builder in r["builders"] for r in api.all_listings() if r["listingId"] in found)


def test_bad_filter_query_names_the_position(api: Api) -> None:
    response = api.get(SEARCH, product_id="everything", filterQuery="type:Condo AND (minBeds >= 2")
    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"requestId", "message"}
    assert "position 28" in body["message"]
    assert response.headers["x-request-id"] == body["requestId"]


# -- geography -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("radius", [2_000, 15_000, 120_000])
def test_radius_matches_haversine_and_orders_nearest_first(api: Api, radius: int) -> None:
    centre = api.all_listings()[0]["_geoloc"]
    lat, lng = centre["lat"] + 0.01, centre["lng"] - 0.01
    distances = {
        r["listingId"]: haversine_m(lat, lng, r["_geoloc"]["lat"], r["_geoloc"]["lng"]) for r in api.all_listings()
    }
    expected = {i for i, d in distances.items() if d <= radius}
    found = every_id(api, nearby=f"{lat},{lng}", radius=radius)
    assert set(found) == expected
    assert [distances[i] for i in found] == sorted(distances[i] for i in found)


def test_nearby_default_radius_is_ten_kilometres(api: Api) -> None:
    centre = api.all_listings()[5]["_geoloc"]
    near = f"{centre['lat']},{centre['lng']}"
    assert every_id(api, nearby=near) == every_id(api, nearby=near, radius=10000)


@pytest.mark.parametrize("nearby", ["43.6", "abc,def", "91,0", "0,181", "1,2,3"])
def test_bad_nearby_is_a_400(api: Api, nearby: str) -> None:
    response = api.get(SEARCH, product_id="everything", nearby=nearby)
    assert response.status_code == 400
    assert "nearby" in response.json()["message"]


# -- facets ----------------------------------------------------------------------------------------------------


def test_facets_count_the_whole_result_set_highest_first(api: Api) -> None:
    chain = "startPrice > 600000"
    expr = filters.parse(chain)
    matching = [r for r in api.all_listings() if filters.evaluate(expr, r)]
    body = api.ok(SEARCH, product_id="everything", filterQuery=chain, facets="type,sellingStatus,builders", perPage=2)
    expected_types: dict[str, int] = {}
    for record in matching:
        for value in set(record["type"]):
            expected_types[value] = expected_types.get(value, 0) + 1
    assert body["facets"]["type"] == dict(sorted(expected_types.items(), key=lambda kv: (-kv[1], kv[0])))
    assert list(body["facets"]["type"].values()) == sorted(body["facets"]["type"].values(), reverse=True)
    assert all(key.startswith("Builders/") for key in body["facets"]["builders"])
    assert sum(body["facets"]["sellingStatus"].values()) == len(matching)


def test_facet_counts_operation_object_and_list(api: Api) -> None:
    as_object = api.ok("/v1/all/facet_counts", facets="sellingStatus,amenities")
    as_list = api.ok("/v1/all/facet_counts", facets="sellingStatus,amenities", format="list")
    for name in ("sellingStatus", "amenities"):
        assert [{"value": k, "count": v} for k, v in as_object[name].items()] == as_list[name]
    everything = api.ok("/v1/all/facet_counts", facets="*")
    assert {"type", "sellingStatus", "constructionStatus", "cityOrDistrict", "amenities", "builders"} <= set(everything)
    prices = api.ok("/v1/all/facet_counts", facets="startPrice")["startPrice"]
    assert all(float(key) > 0 for key in prices)
    assert len(prices) <= 100


def test_unknown_facet_is_a_400(api: Api) -> None:
    response = api.get("/v1/all/facet_counts", facets="colour")
    assert response.status_code == 400
    assert "colour" in response.json()["message"]


# -- fields ----------------------------------------------------------------------------------------------------


def test_retrieve_attributes_keeps_object_id(api: Api) -> None:
    body = api.ok(SEARCH, product_id="everything", retrieveAttributes="name,startPrice", perPage=3)
    for result in body["results"]:
        assert set(result) == {"objectID", "name", "startPrice"}


def test_unknown_retrieve_attribute_is_a_400(api: Api) -> None:
    response = api.get(SEARCH, product_id="everything", retrieveAttributes="name,colour")
    assert response.status_code == 400
    assert "colour" in response.json()["message"]


def test_retrieve_attributes_star_is_every_attribute(api: Api) -> None:
    every = api.ok(SEARCH, perPage=5)
    assert api.ok(SEARCH, retrieveAttributes="*", perPage=5) == every
    assert api.ok(SEARCH, retrieveAttributes="name,*", perPage=5) == every
    lite = api.ok("/v1-lite/all/search_listings", KEY_LITE, retrieveAttributes="*", perPage=5)
    assert lite == api.ok("/v1-lite/all/search_listings", KEY_LITE, perPage=5)
    profiles = api.ok("/v1/all/search_profiles", retrieveAttributes="*", perPage=5)
    assert profiles == api.ok("/v1/all/search_profiles", perPage=5)


def test_unknown_referrences_names_are_ignored(api: Api) -> None:
    record = next(r for r in api.all_listings() if r.get("builders"))
    only = f"listingId:{record['listingId']}"
    body = api.ok(SEARCH, filterQuery=only, referrences="neighbourhood,cityOrDistrict,builders,plumbers")
    result = body["results"][0]
    assert result["neighbourhood"] == record.get("neighbourhood")
    assert result["cityOrDistrict"] == record.get("cityOrDistrict")
    assert [b["path"] for b in result["builders"]] == record["builders"]
    assert all(isinstance(b, dict) and b["name"] for b in result["builders"])
    plain = api.ok(SEARCH, filterQuery=only, referrences="neighbourhood,cityOrDistrict")["results"][0]
    assert plain["builders"] == record["builders"]
    single = api.ok("/v1/all/listing", id=record["listingId"], referrences="neighbourhood,builders")
    assert single["builders"][0]["path"] == record["builders"][0]
    of_listing = api.ok("/v1/all/profiles_of_listing", id=record["listingId"], referrences="neighbourhood")
    assert of_listing["builders"] == record["builders"]


def test_referrences_with_retrieve_attributes(api: Api) -> None:
    record = next(r for r in api.all_listings() if r.get("builders") and r.get("architects"))
    body = api.ok(
        SEARCH,
        product_id="everything",
        filterQuery=f"listingId:{record['listingId']}",
        retrieveAttributes="name,builders,architects",
        referrences="builders",
    )
    result = body["results"][0]
    assert set(result) == {"objectID", "name", "builders", "architects"}
    assert result["architects"] == record["architects"]
    profiles = {p["path"]: p for p in api.all_profiles()}
    for path, builder in zip(record["builders"], result["builders"], strict=True):
        assert builder["path"] == path
        assert builder["name"] == profiles[path]["name"]
        assert builder["id"] == path.split("/")[1]


def test_v1_lite_drops_the_heavy_fields(api: Api) -> None:
    body = api.ok("/v1-lite/all/search_listings", KEY_LITE, product_id="lite", perPage=5)
    for result in body["results"]:
        assert set(result) <= LITE_FIELDS
        assert "floorPlans" not in result and "photos" not in result and "paymentStructures" not in result
        assert {"listingId", "name", "startPrice", "_geoloc", "builders"} <= set(result)
    response = api.get("/v1-lite/all/search_listings", KEY_LITE, product_id="lite", retrieveAttributes="floorPlans")
    assert response.status_code == 400


def test_media_urls_are_absolute_and_served(api: Api) -> None:
    record = api.ok("/v1/all/listing", id=api.all_listings()[0]["listingId"])
    url = record["coverPhoto"]["url"]
    assert url.startswith(api.url + "/media/")
    image = api.http.get(url)
    assert image.status_code == 200 and image.headers["content-type"].startswith("image/svg+xml")


# -- provinces -------------------------------------------------------------------------------------------------


def test_province_scoping(api: Api) -> None:
    records = api.all_listings()
    ontario = sorted(r["listingId"] for r in records if r["state"] == "Ontario")
    assert sorted(every_id(api, "/v1/on/search_listings")) == ontario
    outside = next(r for r in records if r["state"] != "Ontario")
    response = api.get("/v1/on/listing", id=outside["listingId"])
    assert response.status_code == 404
    assert api.ok("/v1/on/facet_counts", facets="sellingStatus")["sellingStatus"]
    assert sum(api.ok("/v1/on/facet_counts", facets="sellingStatus")["sellingStatus"].values()) == len(ontario)


def test_a_province_key_reads_its_province_only(api: Api) -> None:
    assert api.get("/v1/on/search_listings", KEY_ONTARIO, product_id="ontario").status_code == 200
    assert api.get("/v1/bc/search_listings", KEY_ONTARIO, product_id="ontario").json()["message"] == "Forbidden"
    assert api.get("/v1/all/search_listings", KEY_ONTARIO, product_id="ontario").status_code == 403
    assert api.get("/v1-lite/on/search_listings", KEY_ONTARIO, product_id="ontario").status_code == 403


# -- single listings, multiple, similar, trending ----------------------------------------------------------------


def test_get_listing_returns_the_bare_record(api: Api) -> None:
    record = api.all_listings()[2]
    body = api.ok("/v1/all/listing", id=record["listingId"])
    assert body["listingId"] == record["listingId"]
    assert (
        body["floorPlans"]
        == [
            {**plan, "image": {**plan["image"], "url": api.url + plan["image"]["url"]}} if plan.get("image") else plan
            for plan in record["floorPlans"] or []
        ]
        or body["floorPlans"] is None
    )
    assert isinstance(body["lat"], str) and isinstance(body["_geoloc"]["lat"], float)


def test_unknown_listing_is_a_404_and_missing_id_a_400(api: Api) -> None:
    missing = api.get("/v1/all/listing", id="ZZZZZZ")
    assert missing.status_code == 404
    assert set(missing.json()) == {"requestId", "message"}
    assert api.get("/v1/all/listing").status_code == 400


def test_multiple_listings_in_the_order_asked(api: Api) -> None:
    chosen = [r["listingId"] for r in api.all_listings()[10:15]][::-1]
    body = api.ok("/v1/all/multiple_listings", ids=",".join([*chosen, "NOPE00"]), retrieveAttributes="name")
    assert [r["objectID"] for r in body["results"]] == chosen
    too_many = ",".join(r["listingId"] for r in api.all_listings()[:101])
    assert api.get("/v1/all/multiple_listings", ids=too_many).status_code == 400
    assert api.get("/v1/all/multiple_listings").status_code == 400


def test_similar_listings_are_scored_and_exclude_the_listing(api: Api) -> None:
    record = api.all_listings()[20]
    body = api.ok("/v1/all/similar_listings", id=record["listingId"], maxRecommendations=8)
    assert set(body) == {"results", "total", "page", "pages", "perPage"}
    assert 0 < len(body["results"]) <= 8
    assert record["listingId"] not in ids(body)
    scores = [r["_score"] for r in body["results"]]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    high = api.ok("/v1/all/similar_listings", id=record["listingId"], minScore=scores[0])
    assert all(r["_score"] >= scores[0] for r in high["results"])
    assert api.get("/v1/all/similar_listings", id=record["listingId"], maxRecommendations=51).status_code == 400
    assert api.get("/v1/all/similar_listings", id="ZZZZZZ").status_code == 404


def test_similar_listings_prefer_the_same_type_nearby(api: Api) -> None:
    records = {r["listingId"]: r for r in api.all_listings()}
    record = next(r for r in records.values() if r["cityOrDistrict"] == "Toronto" and "Condo" in r["type"])
    body = api.ok("/v1/all/similar_listings", id=record["listingId"], maxRecommendations=5)
    top = [records[i] for i in ids(body)]
    assert sum("Condo" in r["type"] for r in top) >= 3
    assert all(r["state"] == "Ontario" for r in top)


def test_trending_ranks_by_recorded_views(api: Api) -> None:
    quiet = api.ok("/v1/pe/trending_listings", perPage=1000)
    pe_records = [r for r in api.all_listings() if r["state"] == "Prince Edward Island"]
    assert ids(quiet) == default_order(pe_records)
    popular, runner_up = pe_records[-1]["listingId"], pe_records[-2]["listingId"]
    for _ in range(3):
        api.ok("/v1/pe/listing", id=popular)
    api.ok("/v1/pe/listing", id=runner_up)
    ranked = ids(api.ok("/v1/pe/trending_listings", perPage=1000))
    assert ranked[:2] == [popular, runner_up]
    assert sorted(ranked) == sorted(r["listingId"] for r in pe_records)


# -- caching and ids -------------------------------------------------------------------------------------------


def test_etag_and_not_modified(api: Api) -> None:
    first = api.get(SEARCH, product_id="everything", perPage=2)
    assert first.headers["cache-control"] == "private, max-age=60"
    etag = first.headers["etag"]
    again = api.http.get(
        api.url + SEARCH,
        params={"product_id": "everything", "perPage": 2},
        headers={"x-api-key": KEY_ALL, "If-None-Match": etag},
    )
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    other = api.http.get(
        api.url + SEARCH,
        params={"product_id": "everything", "perPage": 3},
        headers={"x-api-key": KEY_ALL, "If-None-Match": etag},
    )
    assert other.status_code == 200


def test_every_answer_carries_a_request_id(api: Api) -> None:
    for response in (api.get(SEARCH, product_id="everything"), api.get(SEARCH, key=None), api.get("/nowhere")):
        assert len(response.headers["x-request-id"]) == 32


def test_openapi_lists_every_read_operation(api: Api) -> None:
    spec = api.http.get(api.url + "/openapi.json").json()
    operations = {path.rsplit("/", 1)[-1] for path in spec["paths"]}
    assert {
        "search_listings",
        "listing",
        "similar_listings",
        "trending_listings",
        "multiple_listings",
        "search_profiles",
        "profile",
        "profiles_of_listing",
        "facet_counts",
    } <= operations


def test_pre_construction_spelled_as_clients_spell_it(api: Api) -> None:
    quoted = every_id(api, filterQuery='constructionStatus:"Pre Construction"')
    assert quoted
    for spelling in ("Pre-Construction", "pre-construction", '"PRE CONSTRUCTION"', "Pre_Construction"):
        assert every_id(api, filterQuery=f"constructionStatus:{spelling}") == quoted


# -- units (contract.md, "Units of a floor plan") ----------------------------------------------------------------


def test_filters_and_facets_reach_the_units_of_the_floor_plans(api: Api) -> None:
    """``floorPlans.units.status`` filters as any nested path and counts listings as every nested facet does."""
    records = api.all_listings()
    statuses = {
        record["listingId"]: {u["status"] for p in record.get("floorPlans") or [] for u in p.get("units") or []}
        for record in records
    }
    assert any(statuses.values()), "the generated catalogue lists units"
    body = api.ok(
        SEARCH, product_id="everything", perPage=1000, filterQuery="floorPlans.units.status:Sold",
        facets="floorPlans.units.status",
    )  # fmt: skip
    expected = sorted(lid for lid, found in statuses.items() if "Sold" in found)
    assert sorted(ids(body)) == expected and body["total"] == len(expected)
    counts = body["facets"]["floorPlans.units.status"]
    assert counts["Sold"] == len(expected)
    assert counts.get("Available", 0) == sum(1 for lid in expected if "Available" in statuses[lid])


def test_lite_hides_the_units_with_the_floor_plans(api: Api) -> None:
    lite = "/v1-lite/all/search_listings"
    body = api.ok(lite, key=KEY_LITE, perPage=5)
    assert body["results"] and all("floorPlans" not in result for result in body["results"])
    error = api.get(lite, KEY_LITE, filterQuery="floorPlans.units.status:Sold")
    assert error.status_code == 400 and "floorPlans" in error.json()["message"]
