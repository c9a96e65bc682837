"""The profile operations over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from precon.words import fold
from tests.conftest import Api

SEARCH = "/v1/all/search_profiles"


def paths(body: dict[str, Any]) -> list[str]:
    return [r["path"] for r in body["results"]]


def name_order(profiles: list[dict[str, Any]], reverse: bool = False) -> list[str]:
    ordered = sorted(profiles, key=lambda p: (fold(p["name"]), p["path"]), reverse=reverse)
    return [p["path"] for p in ordered]


def test_search_profiles_by_collection_sorted_by_name_both_ways(api: Api) -> None:
    builders = [p for p in api.all_profiles() if p["path"].startswith("Builders/")]
    ascending = api.ok(SEARCH, collection="Builders", sortByName="asc", perPage=1000)
    assert set(ascending) == {"results", "total", "page", "pages", "perPage"}
    assert ascending["total"] == len(builders)
    assert paths(ascending) == name_order(builders)
    descending = api.ok(SEARCH, collection="Builders", sortByName="dsc", perPage=1000)
    assert paths(descending) == name_order(builders, reverse=True)
    for result in ascending["results"]:
        assert result["objectID"] == result["path"].split("/")[1]
        assert "id" not in result


def test_search_profiles_pages(api: Api) -> None:
    everything = paths(api.ok(SEARCH, sortByName="asc", perPage=1000))
    first = api.ok(SEARCH, sortByName="asc", perPage=7, page=0)
    second = api.ok(SEARCH, sortByName="asc", perPage=7, page=1)
    assert paths(first) + paths(second) == everything[:14]
    assert first["pages"] == -(-first["total"] // 7)


def test_search_profiles_by_text(api: Api) -> None:
    profile = next(p for p in api.all_profiles() if p["path"].startswith("Architects/"))
    word = max(profile["name"].split(), key=len)
    body = api.ok(SEARCH, search=word, perPage=1000)
    assert profile["path"] in paths(body)
    assert all("_score" in r for r in body["results"])
    scoped = api.ok(SEARCH, search=word, collection="Builders", perPage=1000)
    assert all(p.startswith("Builders/") for p in paths(scoped))


def test_search_profiles_filter_and_facets(api: Api) -> None:
    builder = next(p for p in api.all_profiles() if p["path"].startswith("Builders/"))
    body = api.ok(SEARCH, filterQuery=f'name:"{builder["name"]}"', facets="collection")
    assert builder["path"] in paths(body)
    assert body["facets"]["collection"] == {"Builders": body["total"]} or "Builders" in body["facets"]["collection"]


def test_search_profiles_rejects_bad_collection_and_sort(api: Api) -> None:
    assert api.get(SEARCH, collection="Plumbers").status_code == 400
    assert api.get(SEARCH, sortByName="up").status_code == 400


def test_profiles_are_scoped_by_their_listings_provinces(api: Api) -> None:
    ontario_listings = {r["path"] for r in api.all_listings() if r["state"] == "Ontario"}
    expected = sorted(p["path"] for p in api.all_profiles() if ontario_listings & set(p.get("listings") or []))
    assert sorted(paths(api.ok("/v1/on/search_profiles", perPage=1000))) == expected


def test_get_profile(api: Api) -> None:
    profile = next(p for p in api.all_profiles() if p["path"].startswith("Builders/") and p.get("listings"))
    profile_id = profile["path"].split("/")[1]
    body = api.ok("/v1/all/profile", id=profile_id, collection="Builders")
    assert body["id"] == profile_id
    assert body["name"] == profile["name"]
    assert body["listings"] == profile["listings"]
    assert body["logo"].startswith(api.url + "/media/")
    assert "objectID" not in body
    assert api.ok("/v1/all/profile", id=profile_id)["path"] == profile["path"]
    assert api.get("/v1/all/profile", id=profile_id, collection="Architects").status_code == 404


def test_get_profile_expands_its_listings(api: Api) -> None:
    profile = next(p for p in api.all_profiles() if p.get("listings"))
    body = api.ok("/v1/all/profile", id=profile["path"].split("/")[1], referrences="listings")
    assert [item["path"] for item in body["listings"]] == profile["listings"]


def test_profile_without_id_is_the_production_error(api: Api) -> None:
    response = api.get("/v1/all/profile")
    assert response.status_code == 400
    assert response.json() == {"error": "Id cannnot be blank"}


def test_profiles_of_listing(api: Api) -> None:
    record = next(r for r in api.all_listings() if r.get("builders"))
    body = api.ok("/v1/all/profiles_of_listing", id=record["listingId"])
    assert body == {
        "owners": record.get("owners") or [],
        "builders": record["builders"],
        "marketingCompanies": record.get("marketingCompanies") or [],
        "salesCompanies": record.get("salesCompanies") or [],
        "architects": record.get("architects") or [],
        "interiorDesigners": record.get("interiorDesigners") or [],
        "id": record["listingId"],
    }
    expanded = api.ok("/v1/all/profiles_of_listing", id=record["listingId"], referrences="builders,architects")
    assert [b["path"] for b in expanded["builders"]] == record["builders"]
    assert expanded["owners"] == (record.get("owners") or [])
    assert api.get("/v1/all/profiles_of_listing", id="ZZZZZZ").status_code == 404


def test_references_are_consistent_both_ways(api: Api) -> None:
    profiles = {p["path"]: p for p in api.all_profiles()}
    for record in api.all_listings()[:100]:
        for field in ("builders", "architects", "interiorDesigners", "marketingCompanies", "salesCompanies", "owners"):
            for path in record.get(field) or []:
                assert record["path"] in profiles[path]["listings"]


# -- the order of names, and sorting by listings (ours) --------------------------------------------------------

ACCENTED = ("Bélanger Homes", "brightwater Communities", "Baker Group", "Émile Design", "ELM Developments")


@pytest.fixture(scope="module")
def accented_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, httpx.Client]]:
    """A small catalogue of its own, with builders whose names start with accents and capitals."""
    settings = ServiceSettings(
        data_dir=tmp_path_factory.mktemp("accents"), default_listings=30, rate_limit=0, webhook_worker=False
    )
    directory = DataDirectory.open(settings)
    directory.live.upsert_profiles(
        [{"path": f"Builders/accent-{n}", "name": name, "listings": []} for n, name in enumerate(ACCENTED)]
    )
    directory.accounts.create_key("everything", key="accents-key-0123456789")
    headers = {"x-api-key": "accents-key-0123456789"}
    with ServerThread(directory.app()) as server, httpx.Client(base_url=server.url, headers=headers) as http:
        yield server.url, http
    directory.close()


def names_in(http: httpx.Client, **params: Any) -> list[str]:
    response = http.get(SEARCH, params={"collection": "Builders", "perPage": 1000, **params})
    assert response.status_code == 200, response.text
    return [r["name"] for r in response.json()["results"]]


def test_names_sort_without_regard_to_accents_or_case(accented_api: tuple[str, httpx.Client]) -> None:
    _, http = accented_api
    ascending = [name for name in names_in(http, sortByName="asc") if name in ACCENTED]
    assert ascending == [
        "Baker Group",
        "Bélanger Homes",
        "brightwater Communities",
        "ELM Developments",
        "Émile Design",
    ]
    descending = [name for name in names_in(http, sortByName="dsc") if name in ACCENTED]
    assert descending == ascending[::-1]
    everything = names_in(http, sortByName="asc")
    assert everything == sorted(everything, key=fold)


def listing_counts(body: dict[str, Any]) -> list[int]:
    return [len(r.get("listings") or []) for r in body["results"]]


def test_sort_by_listings_most_or_fewest_first_then_by_name(api: Api) -> None:
    most = api.ok(SEARCH, collection="Builders", sortByListings="desc", perPage=1000)
    counts = listing_counts(most)
    assert counts == sorted(counts, reverse=True) and counts[0] > counts[-1]
    for count in set(counts):
        tied = [fold(r["name"]) for r in most["results"] if len(r.get("listings") or []) == count]
        assert tied == sorted(tied), "ties by name, A to Z"
    fewest = api.ok(SEARCH, collection="Builders", sortByListings="asc", sortByName="dsc", perPage=1000)
    assert listing_counts(fewest) == sorted(counts)
    first_page = api.ok(SEARCH, collection="Builders", sortByListings="desc", perPage=5, page=0)
    assert paths(first_page) == paths(most)[:5]


def test_sort_by_listings_counts_the_listings_of_the_province(api: Api) -> None:
    body = api.ok("/v1/on/search_profiles", sortByListings="desc", perPage=1000)
    counts = listing_counts(body)  # trimmed to the Ontario listings the call sees
    assert counts and counts == sorted(counts, reverse=True)


def test_sort_by_listings_with_words_and_bad_values(api: Api) -> None:
    builder = max(
        (p for p in api.all_profiles() if p["path"].startswith("Builders/")), key=lambda p: len(p["listings"])
    )
    word = max(builder["name"].split(), key=len)
    body = api.ok(SEARCH, search=word, sortByListings="desc", perPage=1000)
    assert listing_counts(body) == sorted(listing_counts(body), reverse=True)
    response = api.get(SEARCH, sortByListings="most")
    assert response.status_code == 400 and "sortByListings" in response.text
