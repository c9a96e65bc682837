"""The OpenAPI document tells the truth: typed parameters with their enums, a schema for every answer, every error
status and none that never happens, the key's security scheme; and the service behaves as it says (405 with
``Allow``, HEAD beside GET, a 400 in the API's words for a parameter of the wrong type)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from precon.client.models import COLLECTIONS, PROVINCES, VERSIONS, WEBHOOK_EVENTS
from tests.conftest import KEY_ALL, Api

API = "/{version}/{province}/"
SINGLE_RECORD = ("listing", "similar_listings", "profile", "profiles_of_listing")


@pytest.fixture(scope="module")
def spec(api: Api) -> dict[str, Any]:
    document: dict[str, Any] = api.get("/openapi.json", key=None).json()
    return document


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method, path.removeprefix(API), details)
        for path, methods in spec["paths"].items()
        for method, details in methods.items()
    ]


def resolve(spec: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = spec["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


def parameter(details: dict[str, Any], name: str) -> dict[str, Any]:
    return next(p for p in details["parameters"] if p["name"] == name)


def enum_of(spec: dict[str, Any], schema: dict[str, Any]) -> set[str]:
    options = schema.get("anyOf", [schema])
    values: set[str] = set()
    for option in options:
        values |= set(resolve(spec, option).get("enum", []))
    return values - {""}


def test_every_error_status_is_documented_and_422_never(spec: dict[str, Any]) -> None:
    assert len(operations(spec)) >= 28
    for method, name, details in operations(spec):
        statuses = set(details["responses"])
        assert "422" not in statuses, (method, name)
        assert {"200", "400", "403", "413", "429", "500"} <= statuses, (method, name, statuses)
        if name in SINGLE_RECORD:
            assert "404" in statuses, (method, name)
    assert "HTTPValidationError" not in spec["components"]["schemas"]


def test_every_answer_has_a_schema(spec: dict[str, Any]) -> None:
    for method, name, details in operations(spec):
        if method == "head":
            assert "content" not in details["responses"]["200"], "a HEAD answer has no body"
            continue
        for status in ("200", "400", "403", "500"):
            schema = details["responses"][status]["content"]["application/json"]["schema"]
            assert schema and schema != {}, (method, name, status)
        listing_page = resolve(
            spec,
            spec["paths"][API + "search_listings"]["get"]["responses"]["200"]["content"]["application/json"]["schema"],
        )
        assert set(listing_page["required"]) == {"results", "total", "page", "pages", "perPage"}


def test_enums_for_version_province_collection_format_and_event(spec: dict[str, Any]) -> None:
    search = spec["paths"][API + "search_listings"]["get"]
    assert enum_of(spec, parameter(search, "version")["schema"]) == set(VERSIONS)
    assert enum_of(spec, parameter(search, "province")["schema"]) == {"all", *PROVINCES}
    profiles = spec["paths"][API + "search_profiles"]["get"]
    assert enum_of(spec, parameter(profiles, "collection")["schema"]) == {*COLLECTIONS, "Owners"}
    assert enum_of(spec, parameter(profiles, "sortByName")["schema"]) == {"asc", "dsc"}
    counts = spec["paths"][API + "facet_counts"]["get"]
    assert enum_of(spec, parameter(counts, "format")["schema"]) == {"object", "list"}
    body = spec["paths"][API + "webhooks"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    properties = resolve(spec, body)["properties"]
    assert enum_of(spec, properties["event"]) == set(WEBHOOK_EVENTS)
    assert enum_of(spec, properties["env"]) == {"live", "sandbox"}


def test_numbers_are_typed_with_their_bounds(spec: dict[str, Any]) -> None:
    search = spec["paths"][API + "search_listings"]["get"]
    per_page = parameter(search, "perPage")["schema"]["anyOf"][0]
    assert per_page == {"type": "integer", "minimum": 0, "maximum": 1000}
    assert parameter(search, "search")["schema"]["maxLength"] == 512
    assert parameter(search, "highlightResults")["schema"]["anyOf"][0] == {"type": "boolean"}


def test_the_key_is_a_security_scheme_on_every_operation(spec: dict[str, Any]) -> None:
    schemes = spec["components"]["securitySchemes"]
    [(name, scheme)] = schemes.items()
    assert scheme == {"type": "apiKey", "in": "header", "name": "x-api-key", "description": scheme["description"]}
    for method, operation, details in operations(spec):
        assert details["security"] == [{name: []}], (method, operation)


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("PUT", "/v1/all/listing", "GET, HEAD"),
        ("POST", "/v1/on/search_listings/", "GET, HEAD"),
        ("PATCH", "/v1/all/webhooks", "DELETE, GET, HEAD, POST"),
        ("GET", "/v1/all/trigger_profile_webhook", "POST"),
    ],
)
def test_a_wrong_method_is_a_405_that_names_the_right_ones(api: Api, method: str, path: str, allowed: str) -> None:
    response = api.http.request(method, api.url + path, headers={"x-api-key": KEY_ALL})
    assert response.status_code == 405
    assert response.headers["allow"] == allowed
    assert response.json()["requestId"] == response.headers["x-request-id"]


def test_head_answers_as_get_without_a_body(api: Api) -> None:
    params = {"perPage": "3", "facets": "type"}
    get = api.http.get(api.url + "/v1/all/search_listings", params=params, headers={"x-api-key": KEY_ALL})
    head = api.http.head(api.url + "/v1/all/search_listings", params=params, headers={"x-api-key": KEY_ALL})
    assert head.status_code == 200 and head.content == b""
    assert head.headers["etag"] == get.headers["etag"]
    assert head.headers["content-length"] == str(len(get.content))
    again = api.http.head(
        api.url + "/v1/all/search_listings",
        params=params,
        headers={"x-api-key": KEY_ALL, "if-none-match": get.headers["etag"]},
    )
    assert again.status_code == 304


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"page": "two"}, "page must be a whole number, got 'two'"),
        ({"perPage": "1001"}, "perPage must be at most 1000, got '1001'"),
        ({"highlightResults": "yes"}, "highlightResults must be true or false (or 1 or 0), got 'yes'"),
        ({"nearby": "1e1,2"}, "nearby must be 'latitude,longitude' in decimal degrees, got '1e1,2'"),
        ({"page": "x", "perPage": "-1"}, "page must be a whole number, got 'x'; perPage must be at least 0, got '-1'"),
    ],
)
def test_a_parameter_of_the_wrong_type_is_a_400_in_the_apis_words(
    api: Api, params: dict[str, str], message: str
) -> None:
    response = api.get("/v1/all/search_listings", **params)
    assert response.status_code == 400
    assert response.json() == {"requestId": response.headers["x-request-id"], "message": message}


def test_an_empty_value_counts_as_left_out(api: Api) -> None:
    body = api.ok("/v1/all/search_listings", page="", perPage="", highlightResults="", radius="")
    assert body["page"] == 0 and body["perPage"] == 20
    assert api.ok("/v1/all/search_profiles", collection="", sortByName="")["total"] > 0


def test_the_key_is_checked_before_any_parameter(api: Api) -> None:
    response = api.get("/v9/xx/search_listings", key=None, page="x")
    assert response.status_code == 403 and response.json()["message"] == "Forbidden"


def test_a_body_that_is_not_json_is_a_400(api: Api) -> None:
    response = api.http.post(
        api.url + "/v1/all/webhooks",
        content=b"{nope",
        headers={"x-api-key": KEY_ALL, "content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["message"] == "the request body is not valid JSON"


def test_a_request_line_over_64_kib_gets_a_json_400(api: Api) -> None:
    address = urlparse(api.url)
    request = f"GET /v1/all/search_listings?search={'a' * 70_000} HTTP/1.1\r\nhost: x\r\nx-api-key: {KEY_ALL}\r\n\r\n"
    with socket.create_connection((address.hostname, address.port), timeout=10) as connection:
        connection.sendall(request.encode())
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400")
    assert b"content-type: application/json" in head and b"x-request-id: " in head
    assert b"longer than 64 KiB" in body


def test_docs_openapi_json_is_the_document_the_service_serves(spec: dict[str, Any]) -> None:
    """docs/openapi.json, beside docs/api.md, for readers without a running service; `UPDATE_OPENAPI=1 make test`
    writes it anew after a change to the API."""
    kept = Path(__file__).parent.parent / "docs" / "openapi.json"
    served = json.dumps(spec, indent=2, sort_keys=True) + "\n"
    if os.environ.get("UPDATE_OPENAPI") == "1":
        kept.write_text(served)
    assert kept.exists() and kept.read_text() == served, "run UPDATE_OPENAPI=1 make test to refresh docs/openapi.json"
