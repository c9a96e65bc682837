"""Every row of the error table in docs/api.md, over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from precon.service.app import create_app
from precon.service.server import ServerThread
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery, ProfileQuery, SearchHits
from tests.conftest import KEY_ALL, KEY_ONTARIO, KEY_PEI, Api

FORBIDDEN = "Forbidden"
NO_PRODUCT = "No data product found. Please contact your data provider"


def assert_error(response: httpx.Response, status: int, message: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"requestId", "message"}
    assert body["requestId"] == response.headers["x-request-id"]
    if message is not None:
        assert body["message"] == message
    return body


@pytest.mark.parametrize("key", [None, "", "not-a-key"])
def test_missing_or_unknown_key_is_forbidden(api: Api, key: str | None) -> None:
    for path in ("/v1/all/search_listings", "/v1/all/listing", "/v1/all/search_profiles", "/v1-sandbox/all/profile"):
        assert_error(api.get(path, key, product_id="everything", id="X"), 403, FORBIDDEN)


def test_version_or_province_not_granted_is_forbidden(api: Api) -> None:
    assert_error(api.get("/v1/bc/search_listings", KEY_ONTARIO, product_id="ontario"), 403, FORBIDDEN)
    assert_error(api.get("/v1-lite/on/listing", KEY_ONTARIO, id="X"), 403, FORBIDDEN)
    assert_error(api.get("/v1/on/facet_counts", KEY_PEI, facets="type"), 403, FORBIDDEN)


def test_any_valid_key_reads_the_sandbox(api: Api) -> None:
    body = api.ok("/v1-sandbox/all/search_listings", KEY_PEI, perPage=1000)
    assert 0 < body["total"] < 100
    live_ids = {r["listingId"] for r in api.all_listings()}
    assert not live_ids & {r["listingId"] for r in body["results"]}


@pytest.mark.parametrize(
    ("key", "product"),
    [(KEY_ALL, "no-such-product"), (KEY_ALL, "ontario"), (KEY_ONTARIO, "everything")],
)
def test_product_unknown_or_not_the_keys(api: Api, key: str, product: str) -> None:
    assert_error(api.get("/v1/on/search_listings", key, product_id=product), 403, NO_PRODUCT)
    assert_error(api.get("/v1/on/search_listings", key, product_Id=product), 403, NO_PRODUCT)


@pytest.mark.parametrize("path", ["/v1/on/search_listings", "/v1/on/facet_counts", "/v1/on/search_profiles"])
@pytest.mark.parametrize("params", [{}, {"product_id": ""}, {"product_id": "  "}])
def test_product_left_out_reads_through_the_keys_own(api: Api, path: str, params: dict[str, str]) -> None:
    for key in (KEY_ALL, KEY_ONTARIO):
        assert api.get(path, key, facets="type", **params).status_code == 200
    assert_error(api.get(path, KEY_PEI, facets="type", **params), 403, FORBIDDEN)


def test_unknown_product_on_other_operations(api: Api) -> None:
    for path in ("/v1/all/search_profiles", "/v1/all/facet_counts", "/v1/all/profiles_of_listing"):
        assert_error(api.get(path, product_id="nope", facets="type", id="X"), 403, NO_PRODUCT)


def test_profile_without_id(api: Api) -> None:
    for params in ({}, {"id": ""}, {"id": "  "}):
        response = api.get("/v1/all/profile", **params)
        assert response.status_code == 400
        assert response.json() == {"error": "Id cannnot be blank"}


@pytest.mark.parametrize(
    ("path", "params", "fragment"),
    [
        ("/v1/all/search_listings", {"filterQuery": "type:"}, "position 5"),
        ("/v1/all/search_listings", {"filterQuery": 'name:"open'}, "position 5"),
        ("/v1/all/search_listings", {"perPage": "1001"}, "perPage"),
        ("/v1/all/search_listings", {"perPage": "-1"}, "perPage"),
        ("/v1/all/search_listings", {"page": "two"}, "page"),
        ("/v1/all/search_listings", {"search": "x" * 513}, "512"),
        ("/v1/all/search_listings", {"facets": "type,nonsense"}, "nonsense"),
        ("/v1/all/search_listings", {"nearby": "north"}, "nearby"),
        ("/v1/all/search_listings", {"nearby": "43.6,-79.3", "radius": "2000000"}, "radius"),
        ("/v1/all/search_listings", {"highlightResults": "maybe"}, "highlightResults"),
        ("/v1/all/search_listings", {"retrieveAttributes": "name,colour"}, "colour"),
        ("/v1/all/search_listings", {"retrieveAttributes": "*,colour"}, "colour"),
        ("/v1/all/listing", {}, "id"),
        ("/v1/all/similar_listings", {}, "id"),
        ("/v1/all/similar_listings", {"id": "X", "minScore": "2"}, "minScore"),
        ("/v1/all/profiles_of_listing", {}, "id"),
        ("/v1/all/multiple_listings", {}, "ids"),
        ("/v1/all/facet_counts", {}, "facets"),
        ("/v1/all/facet_counts", {"facets": "type", "format": "table"}, "format"),
        ("/v1/all/search_profiles", {"sortByName": "random"}, "sortByName"),
        ("/v1/all/trending_listings", {"filterQuery": "a AND"}, "position"),
    ],
)
def test_bad_parameters_are_400s_that_say_what_and_where(
    api: Api, path: str, params: dict[str, str], fragment: str
) -> None:
    body = assert_error(api.get(path, product_id="everything", **params), 400)
    assert fragment in body["message"]


@pytest.mark.parametrize("path", ["/v9/all/search_listings", "/v1/xx/search_listings", "/v1/ON/listing"])
def test_unknown_version_or_province(api: Api, path: str) -> None:
    body = assert_error(api.get(path, product_id="everything", id="X"), 400)
    assert "unknown" in body["message"]


def test_unknown_ids_are_404s(api: Api) -> None:
    assert_error(api.get("/v1/all/listing", id="ZZZZZZ"), 404)
    assert_error(api.get("/v1/all/profile", id="nobody"), 404)
    assert_error(api.get("/v1/all/similar_listings", id="ZZZZZZ"), 404)
    assert_error(api.get("/v1/all/profiles_of_listing", id="ZZZZZZ"), 404)


def test_unknown_path_is_a_json_404(api: Api) -> None:
    assert_error(api.get("/v1/all/nothing_here"), 404)


# -- services started with other settings ------------------------------------------------------------------------


class BrokenStore(SQLiteStore):
    """A store that fails the way a real one can: a disk error in the middle of a query."""

    def search_listings(self, query: ListingQuery) -> SearchHits:
        raise OSError("disk I/O error at /var/lib/secret/path.sqlite3")

    def search_profiles(self, query: ProfileQuery) -> SearchHits:
        raise OSError("disk I/O error at /var/lib/secret/path.sqlite3")


@pytest.fixture(scope="module")
def limited(api: Api) -> Iterator[str]:
    settings = api.directory.settings.model_copy(update={"rate_limit": 0.5, "rate_burst": 3})
    broken = BrokenStore(api.directory.settings.catalogue_path)
    app = create_app(settings, live=broken, sandbox=api.directory.sandbox, accounts=api.directory.accounts)
    with ServerThread(app) as server:
        yield server.url
    broken.close()


def test_over_the_rate_limit_is_a_429_with_retry_after(api: Api, limited: str) -> None:
    headers = {"x-api-key": KEY_PEI}
    statuses = [
        api.http.get(limited + "/v1-sandbox/all/trending_listings", headers=headers).status_code for _ in range(4)
    ]
    assert statuses[:3] == [200, 200, 200]
    response = api.http.get(limited + "/v1-sandbox/all/trending_listings", headers=headers)
    assert_error(response, 429)
    assert int(response.headers["retry-after"]) >= 1


def test_unexpected_failure_is_a_bare_500_without_a_trace(api: Api, limited: str) -> None:
    headers = {"x-api-key": KEY_ALL}
    response = api.http.get(limited + "/v1/all/search_listings?product_id=everything", headers=headers)
    assert response.status_code == 500
    assert response.json() == {"message": "Error: 500"}
    assert "secret" not in response.text
    profiles = api.http.get(limited + "/v1/all/search_profiles", headers=headers)
    assert profiles.status_code == 500
    assert profiles.json() == {"message": "Error 500"}
    assert profiles.headers["x-request-id"]


def test_a_misspelling_the_service_accepts_is_named_as_the_parameter_in_its_errors(api: Api) -> None:
    """``perpage`` and ``product_Id`` are read as ``perPage`` and ``product_id``, and their faults said so."""
    response = api.get("/v1/all/search_listings", KEY_ALL, perpage="abc")
    assert response.status_code == 400 and response.json()["message"] == "perPage must be a whole number, got 'abc'"
    assert api.ok("/v1/all/search_listings", perpage=3)["perPage"] == 3
