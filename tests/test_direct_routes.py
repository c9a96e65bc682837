"""Operations answered through their call's plan (``precon/service/api/pipeline.py``) answer exactly as FastAPI's
own solver would: the same status, headers and body for good and bad requests alike.

Two servers over the same data directory: the one every test uses, and one whose app holds a dependency
override, which makes every route fall back to FastAPI's solver. Each request goes to both; the answers must
be the same but for the request id."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from precon.service.api.pipeline import CallPlan, OperationRoute, operation_call
from precon.service.server import ServerThread
from tests.conftest import KEY_ALL, KEY_LITE, KEY_ONTARIO, Api

Params = list[tuple[str, str]]


def _unused_dependency() -> None:
    """Overridden in the solver's app: any override sends each route back to FastAPI's solver."""


@pytest.fixture(scope="module")
def solver_url(api: Api) -> Iterator[str]:
    app = api.directory.app()
    app.dependency_overrides[_unused_dependency] = _unused_dependency
    with ServerThread(app) as server:
        yield server.url


def _comparable(response: httpx.Response, url: str) -> tuple[int, dict[str, Any], Any]:
    """Status, headers and body, but for what differs by server: the request id, the date, and the server's own
    address in media links (so the ETag too, which only says whether it is there)."""
    headers = {k: v for k, v in response.headers.items() if k not in ("x-request-id", "date", "etag")}
    headers["etag"] = "etag" in response.headers
    content: Any = response.content.replace(url.encode(), b"http://server")
    if response.headers.get("content-type", "").startswith("application/json") and content:
        content = httpx.Response(200, content=content).json()
        if isinstance(content, dict):
            content.pop("requestId", None)
    return response.status_code, headers, content


def _both(api: Api, solver_url: str, method: str, path: str, params: Params, key: str | None = KEY_ALL) -> Any:
    headers = {"x-api-key": key} if key is not None else {}
    direct = api.http.request(method, api.url + path, params=params, headers=headers)
    solved = api.http.request(method, solver_url + path, params=params, headers=headers)
    assert _comparable(direct, api.url) == _comparable(solved, solver_url), (method, path, params, direct.text[:300])
    return direct


CASES: list[tuple[str, Params]] = [
    ("/v1/all/search_listings", []),
    ("/v1/all/search_listings", [("page", "2"), ("perPage", "5")]),
    ("/v1/all/search_listings", [("page", ""), ("perPage", "")]),
    ("/v1/all/search_listings", [("page", "-1")]),
    ("/v1/all/search_listings", [("page", "abc"), ("perPage", "1.5"), ("radius", "-3")]),
    ("/v1/all/search_listings", [("page", "1"), ("page", "3")]),
    ("/v1/all/search_listings", [("perPage", "1000")]),
    ("/v1/all/search_listings", [("nearby", "43.65,-79.38"), ("radius", "20000")]),
    ("/v1/all/search_listings", [("nearby", "toronto")]),
    ("/v1/all/search_listings", [("radius", "nan")]),
    ("/v1/all/search_listings", [("highlightResults", "yes")]),
    ("/v1/all/search_listings", [("highlightResults", "1"), ("search", "condo")]),
    ("/v1/all/search_listings", [("search", "x" * 600)]),
    ("/v1/all/search_listings", [("filterQuery", "minBeds >= 2 AND startPrice <= 800000")]),
    ("/v1/all/search_listings", [("filterQuery", "minBeds >= ")]),
    ("/v1/all/search_listings", [("facets", "*"), ("perPage", "0")]),
    ("/v1/all/search_listings", [("facets", "nope")]),
    ("/v1/all/search_listings", [("unknown", "1"), ("product_id", "everything")]),
    ("/v1/all/search_listings", [("product_id", "no-such-product")]),
    ("/v1/all/search_listings", [("unitFilter", "beds >= 2")]),
    ("/v2/all/search_listings", []),
    ("/v1/zz/search_listings", [("page", "x")]),
    ("/v1-lite/on/search_listings", [("search", "tower")]),
    ("/v1/on/search_listings/", [("perPage", "3")]),
    ("/v1/all/listing", []),
    ("/v1/all/listing", [("id", " ")]),
    ("/v1/all/listing", [("id", "NOPE")]),
    ("/v1/all/listing", [("id", "XSS0A1"), ("retrieveAttributes", "name,startPrice")]),
    ("/v1/all/multiple_listings", [("ids", "")]),
    ("/v1/all/multiple_listings", [("ids", "XSS0A1,NOPE")]),
    ("/v1/all/similar_listings", [("id", "XSS0A1"), ("minScore", "2")]),
    ("/v1/all/similar_listings", [("id", "XSS0A1"), ("maxRecommendations", "0")]),
    ("/v1/all/similar_listings", [("id", "XSS0A1"), ("maxRecommendations", "3")]),
    ("/v1/all/trending_listings", [("perPage", "4")]),
    ("/v1/all/profile", []),
    ("/v1/all/profile", [("id", "")]),
    ("/v1/all/profile", [("id", "nope"), ("collection", "wizards")]),
    ("/v1/all/search_profiles", [("sortByName", "sideways")]),
    ("/v1/all/search_profiles", [("sortByListings", "asc"), ("collection", "builders")]),
    ("/v1/all/search_profiles", [("sortByName", ""), ("search", "a")]),
    ("/v1/all/profiles_of_listing", [("id", "XSS0A1")]),
    ("/v1/all/facet_counts", []),
    ("/v1/all/facet_counts", [("facets", "type"), ("format", "table")]),
    ("/v1/all/facet_counts", [("facets", "type,cityOrDistrict"), ("format", "list")]),
    ("/v1/all/search_facet_values", [("facet", "a,b")]),
    ("/v1/all/search_facet_values", [("facet", "cityOrDistrict"), ("maxFacetHits", "0")]),
    ("/v1/all/search_facet_values", [("facet", "cityOrDistrict"), ("facetQuery", "to")]),
    ("/v1/all/webhooks", []),
    ("/v1/all/webhooks/deliveries", [("subscriptionId", "")]),
]


@pytest.mark.parametrize(("path", "params"), CASES, ids=[f"{p} {q}" for p, q in CASES])
@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_each_answer_is_the_solvers(api: Api, solver_url: str, method: str, path: str, params: Params) -> None:
    _both(api, solver_url, method, path, params)


@pytest.mark.parametrize("key", [None, "", "not-a-key"])
def test_the_key_is_checked_before_any_parameter(api: Api, solver_url: str, key: str | None) -> None:
    response = _both(api, solver_url, "GET", "/v1/bc/search_listings", [("page", "x"), ("perPage", "-1")], key)
    assert response.status_code == 403


@pytest.mark.parametrize("key", [KEY_ONTARIO, KEY_LITE])
def test_a_key_outside_its_grant_with_bad_parameters(api: Api, solver_url: str, key: str) -> None:
    """A known key learns of its bad parameters before the grant is checked, through either path."""
    for params in ([("page", "x")], [("page", "1")]):
        _both(api, solver_url, "GET", "/v1/bc/search_listings", params, key)


VALUES: dict[str, list[str]] = {
    "page": ["0", "1", "7", "", "-2", "x", "9999999"],
    "perPage": ["0", "3", "20", "", "101", "2.5"],
    "search": ["condo", "tow", "", "zzzz qqq"],
    "filterQuery": ["minBeds >= 2", 'type:"Condo" OR type:"Townhouse"', "startPrice <", ""],
    "facets": ["*", "type", "type,amenities", "bogus", ""],
    "nearby": ["43.65,-79.38", "49.28, -123.12", "north", ""],
    "radius": ["500", "25000", "-1", "inf", ""],
    "highlightResults": ["true", "false", "0", "maybe", ""],
    "retrieveAttributes": ["name", "name,startPrice", "*", ""],
    "referrences": ["builders", "developers,architects", ""],
    "unitFilter": ["beds >= 2", "price <= 900000 AND beds >= 1", "beds >="],
    "product_id": ["everything", "ontario"],
}


def test_seeded_random_requests_answer_as_the_solver(api: Api, solver_url: str) -> None:
    """Two hundred searches with random mixes of good, blank and bad values, repeated parameters included."""
    rng = random.Random(20261123)
    for _ in range(200):
        names = rng.sample(sorted(VALUES), rng.randint(0, 5))
        params = [(name, rng.choice(VALUES[name])) for name in names]
        if params and rng.random() < 0.2:
            params.append((params[0][0], rng.choice(VALUES[params[0][0]])))
        version = rng.choice(["v1", "v1", "v1-lite", "v1-sandbox"])
        province = rng.choice(["all", "on", "bc"])
        _both(api, solver_url, "GET", f"/{version}/{province}/search_listings", params)


def test_every_read_operation_has_a_plan(api: Api) -> None:
    """Every GET and HEAD of the catalogue has a plan. The webhook operations keep the solver (their store,
    policy, worker and bodies are dependencies the plan does not resolve; an admin's calls, not a hot path)."""
    app = api.directory.app()
    planned: dict[str, bool] = {}
    for route in app.router.routes:
        if isinstance(route, OperationRoute):
            planned[f"{sorted(route.methods)} {route.path}"] = operation_call(route.endpoint) is not None
    reads = {name: has for name, has in planned.items() if "webhook" not in name}
    assert len(reads) > 30 and all(reads.values()), [name for name, has in reads.items() if not has]
    assert not any(has for name, has in planned.items() if "webhook" in name)


def test_the_two_servers_take_the_two_paths(api: Api, solver_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What makes the comparisons above mean something: the plan answers one server, the solver the other."""

    async def broken(self: CallPlan, request: Any) -> Any:
        raise RuntimeError("the plan answered")

    monkeypatch.setattr(CallPlan, "resolve", broken)
    headers = {"x-api-key": KEY_ALL}
    assert api.http.get(api.url + "/v1/all/search_listings", headers=headers).status_code == 500
    assert api.http.get(solver_url + "/v1/all/search_listings", headers=headers).status_code == 200
