"""Requests exactly as public clients of the production API send them, replayed against the running service.

Each request is a raw query string (a trailing slash before it, comma-separated lists, double spaces in filter
chains, no ``product_id``), sent with httpx as those clients encode it; each test asserts that the fields such
clients read exist with the types they expect.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, quote_plus

import httpx

from tests.conftest import KEY_ALL, KEY_ONTARIO, Api

CHAIN = 'startPrice >= 400000  AND startPrice <= 900000 AND type:"Condo" OR type:"Townhouse" AND minBeds >= 1'
REFERENCES = "neighbourhood,cityOrDistrict,builders"


def replay(api: Api, path_and_query: str, key: str = KEY_ALL) -> dict[str, Any]:
    """GET exactly this path and query string (no re-encoding of the parameters by httpx)."""
    response = api.http.send(httpx.Request("GET", api.url + path_and_query, headers={"x-api-key": key}))
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, dict)
    return body


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def assert_listing_as_clients_read_it(listing: dict[str, Any], *, builders_expanded: bool = False) -> None:
    assert isinstance(listing["listingId"], str) and listing["objectID"] == listing["listingId"]
    assert isinstance(listing["name"], str)
    assert type(listing["sellingStatusUpdateTimestamp"]) is int
    for plan in listing.get("floorPlans") or []:
        assert isinstance(plan["id"], str) and plan["id"]
        assert plan["startPrice"] == "" or is_number(plan["startPrice"])
    videos = listing.get("videos") or []
    assert isinstance(videos, list)
    if videos:
        assert isinstance(videos[0], str) and videos[0].startswith(("https://", "http://"))
    if builders_expanded:
        for builder in listing.get("builders") or []:
            assert isinstance(builder, dict) and isinstance(builder["name"], str) and builder["path"]


def chain_holds(listing: dict[str, Any]) -> bool:
    """The chain as the service reads it: AND binds tighter than OR."""
    price, beds, types = listing.get("startPrice"), listing.get("minBeds"), listing.get("type") or []
    first = is_number(price) and 400000 <= price <= 900000 and "Condo" in types
    return first or ("Townhouse" in types and is_number(beds) and beds >= 1)


def test_python_package_search_with_a_filter_chain(api: Api) -> None:
    # requests/urllib encoding: spaces as '+', commas and quotes escaped; a trailing slash before the query.
    # It asks for 1000 with builders expanded; the contract allows 100 then, so the answer says perPage 100 and
    # the client reads on through `pages`, as it does for any result larger than a page.
    seen: list[dict[str, Any]] = []
    page = pages = 0
    while page == 0 or page < pages:
        query = f"filterQuery={quote_plus(CHAIN)}&perPage=1000&page={page}&referrences={quote_plus(REFERENCES)}"
        body = replay(api, f"/v1/all/search_listings/?{query}")
        assert set(body) >= {"results", "total", "page", "pages", "perPage"} and body["perPage"] == 100
        seen += body["results"]
        page, pages = page + 1, body["pages"]
    assert seen and len(seen) == body["total"]
    for listing in seen:
        assert chain_holds(listing)
        assert_listing_as_clients_read_it(listing, builders_expanded=True)
    expected = sorted(r["listingId"] for r in api.all_listings() if chain_holds(r))
    assert sorted(r["listingId"] for r in seen) == expected


def test_web_site_page_load_with_retrieve_all_and_unknown_references(api: Api) -> None:
    # encodeURIComponent style: spaces as %20, commas left raw.
    query = f"retrieveAttributes=*&referrences={REFERENCES}&perPage=24&page=0&filterQuery={quote(CHAIN, safe='')}"
    body = replay(api, f"/v1/on/search_listings/?{query}", KEY_ONTARIO)
    assert body["results"] and body["perPage"] == 24
    for listing in body["results"]:
        assert listing["state"] == "Ontario"
        assert_listing_as_clients_read_it(listing, builders_expanded=True)
        assert "floorPlans" in listing and "paymentStructures" in listing  # '*' is every attribute
        assert isinstance(listing["neighbourhood"], list)  # not a reference field: left as it is


def test_plugin_reads_one_listing_and_its_floor_plans(api: Api) -> None:
    record = next(r for r in api.all_listings() if r.get("floorPlans") and r.get("videos"))
    body = replay(api, f"/v1/all/listing/?id={record['listingId']}&retrieveAttributes=*&referrences={REFERENCES}")
    assert_listing_as_clients_read_it(body, builders_expanded=True)
    assert [plan["id"] for plan in body["floorPlans"]] == [plan["id"] for plan in record["floorPlans"]]
    assert body["videos"] == record["videos"]
    again = replay(api, f"/v1/all/listing/?id={record['listingId']}")
    assert [plan["id"] for plan in again["floorPlans"]] == [plan["id"] for plan in body["floorPlans"]]


def test_incremental_sync_by_selling_status_update_timestamp(api: Api) -> None:
    every = api.all_listings()
    since = sorted(r["sellingStatusUpdateTimestamp"] for r in every)[len(every) * 3 // 4]
    expected = sorted(r["listingId"] for r in every if r["sellingStatusUpdateTimestamp"] > since)
    seen: list[str] = []
    page = 0
    while True:
        body = replay(
            api,
            "/v1/all/search_listings/?filterQuery="
            + quote_plus(f"sellingStatusUpdateTimestamp > {since}")
            + f"&retrieveAttributes=*&perPage=50&page={page}",
        )
        for listing in body["results"]:
            assert listing["sellingStatusUpdateTimestamp"] > since
            assert_listing_as_clients_read_it(listing)
        seen += [r["listingId"] for r in body["results"]]
        page += 1
        if page >= body["pages"]:
            break
    assert expected and sorted(seen) == expected


def test_facets_and_multiple_listings_as_sent_by_clients(api: Api) -> None:
    body = replay(api, "/v1/all/facet_counts/?facets=sellingStatus,type,sellingStatusUpdateTimestamp&format=object")
    assert sum(body["sellingStatus"].values()) > 0
    assert all(key.isdigit() for key in body["sellingStatusUpdateTimestamp"])
    ids = ",".join(r["listingId"] for r in api.all_listings()[:5])
    many = replay(api, f"/v1/all/multiple_listings/?ids={ids}&retrieveAttributes=*&referrences={REFERENCES}")
    assert len(many["results"]) == 5
    for listing in many["results"]:
        assert_listing_as_clients_read_it(listing, builders_expanded=True)
    trending = replay(api, f"/v1/all/trending_listings/?perPage=5&retrieveAttributes=*&referrences={REFERENCES}")
    for listing in trending["results"]:
        assert_listing_as_clients_read_it(listing, builders_expanded=True)
