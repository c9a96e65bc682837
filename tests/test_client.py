"""The typed client against the real service on loopback: every method, every error, retries and the cache."""

from __future__ import annotations

import json
import pickle
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from precon import filters
from precon.client import PRODUCTION_URL, Client, ClientSettings, errors
from precon.client.cache import ResponseCache
from precon.client.models import FacetHit, FacetValueHits, Listing, MatchedFloorPlans, Page, Profile
from precon.service.app import create_app
from precon.service.server import ServerThread
from tests.conftest import KEY_ALL, KEY_ONTARIO, KEY_PEI, Api
from tests.ports import free_port
from tests.test_service_errors import BrokenStore


class CountingTransport(httpx.BaseTransport):
    """Below the cache: counts what really goes to the service, and can answer instead of it."""

    def __init__(self, inner: httpx.BaseTransport | None = None) -> None:
        self.inner = inner or httpx.HTTPTransport()
        self.requests: list[httpx.Request] = []
        self.scripted: list[Callable[[httpx.Request], httpx.Response | None]] = []
        self.rewrite: Callable[[httpx.Response], None] | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.scripted:
            answer = self.scripted.pop(0)(request)
            if answer is not None:
                return answer
        response = self.inner.handle_request(request)
        if self.rewrite is not None:
            response.read()
            self.rewrite(response)
        return response


def client_for(api: Api, key: str = KEY_ALL, product: str | None = "everything", **kwargs: Any) -> Client:
    kwargs.setdefault("cache", False)
    return Client(api.url, key, product, **kwargs)


@pytest.fixture
def client(api: Api) -> Iterator[Client]:
    with client_for(api) as made:
        yield made


# -- every method ------------------------------------------------------------------------------------------------


def test_search_listings_with_a_structured_filter(api: Api, client: Client) -> None:
    expr = filters.and_(filters.any_of("type", ["Condo", "Loft"]), filters.between("startPrice", 400_000, 900_000))
    page = client.search_listings(filter=expr, per_page=1000, facets=["type", "sellingStatus"])
    assert isinstance(page, Page) and all(isinstance(r, Listing) for r in page.results)
    expected = sorted(r["listingId"] for r in api.all_listings() if filters.evaluate(expr, r))
    assert sorted(r.listingId for r in page.results) == expected
    assert page.total == len(expected)
    assert set(page.facets or {}) == {"type", "sellingStatus"}
    raw = api.ok("/v1/all/search_listings", product_id="everything", filterQuery=filters.to_query(expr), perPage=1000)
    assert [r.listingId for r in page.results] == [r["listingId"] for r in raw["results"]]
    assert page.response_meta is not None and len(page.response_meta.request_id or "") == 32


def test_search_listings_text_geo_highlight_and_fields(api: Api, client: Client) -> None:
    record = api.all_listings()[4]
    centre = (record["_geoloc"]["lat"], record["_geoloc"]["lng"])
    page = client.search_listings(
        record["cityOrDistrict"],
        nearby=centre,
        radius=30_000,
        highlight=True,
        retrieve_attributes=["name", "cityOrDistrict", "builders"],
        references=["builders"],
    )
    assert page.total >= 1
    first = page.results[0]
    assert first.score is not None and first.highlight is not None
    assert set(first.model_extra or {}) == set()
    assert all(isinstance(b, Profile) for b in first.builders)


def test_single_listing_similar_trending_multiple(api: Api, client: Client) -> None:
    records = api.all_listings()
    listing = client.get_listing(records[0]["listingId"])
    assert listing.listingId == records[0]["listingId"] and listing.floorPlans is not None
    assert listing.numberOfUnits == int(records[0]["numberOfUnits"])
    similar = client.similar_listings(records[0]["listingId"], max_recommendations=3, min_score=0.1)
    assert 0 < len(similar.results) <= 3 and all(r.score is not None and r.score >= 0.1 for r in similar.results)
    trending = client.trending_listings(per_page=5, filter="type:Condo")
    assert len(trending.results) == 5 and all("Condo" in r.type for r in trending.results)
    ids = [r["listingId"] for r in records[5:8]]
    assert [r.id for r in client.multiple_listings(ids, retrieve_attributes="name")] == ids


def test_profiles_sorted_by_listings(api: Api, client: Client) -> None:
    most = client.search_profiles(collection="Builders", sort_by_listings="desc", per_page=50)
    counts = [len(p.listings) for p in most.results]
    assert counts == sorted(counts, reverse=True) and counts[0] > 0
    fewest = client.search_profiles(collection="Builders", sort_by_listings="asc", per_page=50)
    assert [len(p.listings) for p in fewest.results] == sorted(len(p.listings) for p in fewest.results)
    assert fewest.total == most.total


def test_profiles_and_facets(api: Api, client: Client) -> None:
    builders = client.search_profiles(collection="Builders", sort_by_name="dsc", per_page=3)
    assert [p.collection for p in builders.results] == ["Builders"] * 3
    names = [p.name or "" for p in builders.results]
    assert names == sorted(names, key=str.casefold, reverse=True)
    profile = client.get_profile(builders.results[0].profile_id or "", collection="Builders")
    assert profile.id == builders.results[0].objectID and profile.listings
    listing_id = profile.listings[0].split("/")[1]
    linked = client.profiles_of_listing(listing_id, references=["builders"])
    assert linked.id == listing_id
    assert profile.path in [b.path for b in linked.builders if isinstance(b, Profile)]
    as_object = client.facet_counts(["sellingStatus", "type"], filter="startPrice > 500000")
    as_list = client.facet_counts(["sellingStatus", "type"], filter="startPrice > 500000", format="list")
    assert as_object == as_list and list(as_object) == ["sellingStatus", "type"]


def test_unit_filter_and_facet_value_search(api: Api, client: Client) -> None:
    unit = filters.and_(filters.compare("numberOfBedrooms", ">=", 2), filters.compare("startPrice", "<=", 800_000))
    assert unit is not None
    page = client.search_listings(unit_filter=unit, per_page=5, retrieve_attributes=["name"])
    assert page.total > 0 and len(page.results) == 5
    for listing in page.results:
        matched = listing.matched_floor_plans
        assert isinstance(matched, MatchedFloorPlans) and matched.count >= 1 and matched.of is not None
        assert len(matched.names) == matched.count and (matched.minPrice or 0) <= 800_000
    assert pickle.loads(pickle.dumps(page)) == page
    as_text = client.search_listings(unit_filter=filters.to_query(unit), per_page=5, retrieve_attributes=["name"])
    assert as_text.model_dump() == page.model_dump()
    trending = client.trending_listings(unit_filter=unit, per_page=1000)
    assert trending.total == page.total
    counts = client.facet_counts(["sellingStatus"], unit_filter=unit)
    assert sum(counts["sellingStatus"].values()) == page.total
    assert client.search_listings(per_page=1).results[0].matched_floor_plans is None

    found = client.search_facet_values("builders", "dev", filter="type:Condo", unit_filter=unit, max_hits=3)
    assert isinstance(found, FacetValueHits) and found.exhaustive is True
    assert found.total is not None and found.total >= len(found.hits) and 0 < len(found.hits) <= 3
    for hit in found.hits:
        assert isinstance(hit, FacetHit) and hit.value.startswith("Builders/") and hit.label
        assert hit.highlighted is not None and "<em>" in hit.highlighted
    assert [h.count for h in found.hits] == sorted((h.count for h in found.hits), reverse=True)
    assert pickle.loads(pickle.dumps(found)) == found
    every = client.search_facet_values("sellingStatus", max_hits=1000)
    assert {h.value: h.count for h in every.hits} == client.facet_counts(["sellingStatus"])["sellingStatus"]


def test_the_client_sends_unit_filter_and_facet_value_search_parameters(api: Api) -> None:
    transport = CountingTransport()
    with client_for(api, transport=transport) as made:
        made.facet_counts("type", unit_filter=filters.eq("status", "Available"))
        made.search_facet_values("neighbourhood", "lib vill", search="condo", unit_filter="exposure:N", max_hits=50)
    assert dict(transport.requests[0].url.params) == {
        "product_id": "everything",
        "facets": "type",
        "unitFilter": "status:Available",
    }
    assert transport.requests[1].url.path == "/v1/all/search_facet_values"
    assert dict(transport.requests[1].url.params) == {
        "product_id": "everything",
        "facet": "neighbourhood",
        "facetQuery": "lib vill",
        "search": "condo",
        "unitFilter": "exposure:N",
        "maxFacetHits": "50",
    }


def test_iterating_every_page_reports_progress(api: Api, client: Client) -> None:
    seen: list[tuple[int, int]] = []
    listings = list(
        client.iter_listings(per_page=150, filter="startPrice > 0", progress=lambda d, t: seen.append((d, t)))
    )
    expected = sorted(r["listingId"] for r in api.all_listings() if (r.get("startPrice") or 0) > 0)
    assert sorted(r.listingId or "" for r in listings) == expected
    assert seen[-1] == (len(expected), len(expected))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    profiles = list(client.iter_profiles(collection="Architects", per_page=7))
    assert len(profiles) == len([p for p in api.all_profiles() if p["path"].startswith("Architects/")])


def test_settings_come_from_the_environment(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRECON_API_URL", api.url + "/")
    monkeypatch.setenv("PRECON_API_KEY", KEY_ONTARIO)
    monkeypatch.setenv("PRECON_PRODUCT_ID", "ontario")
    monkeypatch.setenv("PRECON_PROVINCE", "on")
    with Client(cache=False) as from_env:
        assert from_env.api_url == api.url
        page = from_env.search_listings(per_page=1000)
    assert {r.state for r in page.results} == {"Ontario"}


def test_base_url_names_the_service_and_the_older_names_still_work(api: Api) -> None:
    for made in (
        Client(base_url=api.url + "/", api_key=KEY_ALL, cache=False),
        Client(api.url, KEY_ALL, cache=False),
        Client(api_url=api.url, api_key=KEY_ALL, cache=False),
        Client(api.url, KEY_ALL, base_url=api.url + "/", cache=False),
    ):
        with made:
            assert made.base_url == made.api_url == api.url
            assert made.search_listings(per_page=1).total > 0
    with pytest.raises(ValueError, match="different"):
        Client(api_url=api.url, base_url="https://elsewhere.example", cache=False)


def test_empty_environment_settings_mean_not_set(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PRECON_CACHE_URL", "PRECON_PRODUCT_ID", "PRECON_VERSION", "PRECON_PROVINCE", "PRECON_API_URL"):
        monkeypatch.setenv(name, "")
    monkeypatch.setenv("PRECON_API_KEY", KEY_ALL)
    with Client(cache=False) as from_env:
        assert from_env.api_url == PRODUCTION_URL
        assert from_env.product_id is None and from_env.version == "v1" and from_env.province == "all"
    monkeypatch.setenv("PRECON_CACHE_URL", "  ")
    assert ClientSettings().cache_url is None  # the default cache, not an error


def test_no_product_id_is_sent_when_none_is_configured(api: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PRECON_PRODUCT_ID", raising=False)
    transport = CountingTransport()
    with Client(base_url=api.url, api_key=KEY_ONTARIO, province="on", cache=False, transport=transport) as made:
        assert made.product_id is None
        page = made.search_listings(per_page=5)
        made.facet_counts(["type"])
        made.search_profiles(per_page=1)
    assert page.total > 0 and {r.state for r in page.results} == {"Ontario"}
    assert transport.requests and all("product_id" not in r.url.params for r in transport.requests)


def test_the_client_speaks_what_production_expects(api: Api) -> None:
    transport = CountingTransport()
    with client_for(api, transport=transport) as made:
        made.search_listings(
            "a b",
            facets=["type", "amenities"],
            references=["builders"],
            highlight=True,
            nearby=(43.6, -79.4),
            radius=1500.4,
            retrieve_attributes=["name"],
        )
    sent = transport.requests[0]
    assert sent.url.path == "/v1/all/search_listings"
    assert sent.headers["x-api-key"] == KEY_ALL
    assert dict(sent.url.params) == {
        "product_id": "everything",
        "search": "a b",
        "page": "0",
        "perPage": "20",
        "facets": "type,amenities",
        "retrieveAttributes": "name",
        "highlightResults": "true",
        "nearby": "43.6,-79.4",
        "radius": "1500",
        "referrences": "builders",
    }


# -- errors from the real answers ----------------------------------------------------------------------------


def test_each_error_type_from_the_answer_that_causes_it(api: Api, client: Client) -> None:
    with pytest.raises(errors.BadRequest) as bad:
        client.search_listings(filter="type:Condo AND (")
    assert bad.value.status == 400 and "position" in bad.value.message and bad.value.request_id
    with pytest.raises(errors.Forbidden) as forbidden:
        client_for(api, key="nope").search_listings()
    assert type(forbidden.value) is errors.Forbidden and forbidden.value.message == "Forbidden"
    with pytest.raises(errors.NoDataProduct) as no_product:
        client_for(api, product="nothing-here").search_listings()
    assert isinstance(no_product.value, errors.Forbidden) and no_product.value.status == 403
    with pytest.raises(errors.NotFound) as missing:
        client.get_listing("ZZZZZZ")
    assert missing.value.request_id and "ZZZZZZ" in missing.value.message
    with pytest.raises(errors.BadRequest) as blank:
        client.get_profile("")
    assert blank.value.message == "Id cannnot be blank"


@pytest.fixture(scope="module")
def failing_service(api: Api) -> Iterator[str]:
    # One token back every 100 s: the burst's five answers cannot earn a sixth, however slow the machine is (at
    # one every 5 s, a loaded machine answered the burst slowly enough to refill one).
    settings = api.directory.settings.model_copy(update={"rate_limit": 0.01, "rate_burst": 5})
    broken = BrokenStore(api.directory.settings.catalogue_path)
    app = create_app(settings, live=broken, sandbox=api.directory.sandbox, accounts=api.directory.accounts)
    with ServerThread(app) as server:
        yield server.url
    broken.close()


def test_rate_limited_and_server_errors(failing_service: str) -> None:
    slept: list[float] = []
    with Client(failing_service, KEY_PEI, cache=False, max_retries=0) as limited:
        for _ in range(5):  # the burst
            limited.trending_listings(version="v1-sandbox")
        with pytest.raises(errors.RateLimited) as too_many:
            limited.trending_listings(version="v1-sandbox")
    assert too_many.value.retry_after is not None and too_many.value.retry_after >= 1
    with Client(failing_service, KEY_ALL, "everything", cache=False, sleep=slept.append) as broken:
        with pytest.raises(errors.ServerError) as failure:
            broken.search_listings()
    assert failure.value.status == 500 and failure.value.message == "Error: 500"
    assert len(slept) == 4, "a 500 on a GET is retried four times before it is raised"
    bands = [(0.25, 0.5), (0.5, 1.0), (1.0, 2.0), (2.0, 4.0)]  # 0.5 s doubling, full jitter in the upper half
    assert all(low <= wait <= high for wait, (low, high) in zip(slept, bands, strict=True))


def test_unreachable_and_silent_services(tmp_path: Path) -> None:
    slept: list[float] = []
    with Client(f"http://127.0.0.1:{free_port()}", "k", "p", cache=False, sleep=slept.append) as nowhere:
        with pytest.raises(errors.TransportError) as unreachable:
            nowhere.search_listings()
    assert type(unreachable.value) is errors.TransportError and unreachable.value.status is None
    assert len(slept) == 4
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()
    try:
        with (
            Client(
                f"http://127.0.0.1:{listener.getsockname()[1]}", "k", "p", cache=False, timeout=0.3, max_retries=0
            ) as silent,
            pytest.raises(errors.Timeout),
        ):
            silent.search_listings()
    finally:
        for sock in accepted:
            sock.close()
        listener.close()


# -- retries -------------------------------------------------------------------------------------------------


def test_a_503_then_200_honours_retry_after(api: Api) -> None:
    transport = CountingTransport()
    transport.scripted.append(
        lambda request: httpx.Response(503, headers={"Retry-After": "2"}, json={"message": "busy"})
    )
    slept: list[float] = []
    with client_for(api, transport=transport, sleep=slept.append) as made:
        page = made.search_listings(per_page=1)
    assert page.total > 0
    assert slept == [2.0]
    assert len(transport.requests) == 2


def test_a_long_retry_after_is_raised_not_waited(api: Api) -> None:
    transport = CountingTransport()
    transport.scripted.append(
        lambda request: httpx.Response(429, headers={"Retry-After": "3600"}, json={"message": "x"})
    )
    with client_for(api, transport=transport, sleep=lambda s: None) as made:
        with pytest.raises(errors.RateLimited) as limited:
            made.search_listings()
    assert limited.value.retry_after == 3600 and len(transport.requests) == 1


def test_posts_are_not_retried_blindly(api: Api) -> None:
    transport = CountingTransport()
    transport.scripted.append(lambda request: httpx.Response(503, json={"message": "busy"}))
    with client_for(api, transport=transport, sleep=lambda s: None) as made, pytest.raises(errors.ServerError):
        made.create_webhook("https://example.com/hook", "listing.updated")
    assert len(transport.requests) == 1

    def cut(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body", request=request)

    transport = CountingTransport()
    transport.scripted.append(cut)
    with client_for(api, transport=transport, sleep=lambda s: None) as made, pytest.raises(errors.TransportError):
        made.create_webhook("https://example.com/hook", "listing.updated")
    assert len(transport.requests) == 1, "a POST the service may have done is not sent again"

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    transport = CountingTransport()
    transport.scripted.append(refuse)
    subscription = {"id": "w1", "env": "live", "targetUrl": "https://example.com/hook", "event": "listing.updated"}
    transport.scripted.append(lambda request: httpx.Response(200, json=subscription))
    with client_for(api, transport=transport, sleep=lambda s: None) as made:
        made.create_webhook("https://example.com/hook", "listing.updated")
    assert len(transport.requests) == 2, "a POST that never left is sent again"


def test_a_trigger_carries_its_own_idempotency_key_and_is_sent_again_with_it(api: Api) -> None:
    """A trigger whose answer was cut (the service may have done it) or was a 503 is sent again with the same
    ``Idempotency-Key``: the service does it once, and the second answer is the first's."""

    def cut(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body", request=request)

    transport = CountingTransport()
    with client_for(api, transport=transport, sleep=lambda s: None) as made:
        builder = made.search_profiles(collection="Builders", per_page=1).results[0]
        transport.requests.clear()
        transport.scripted.append(cut)
        transport.scripted.append(lambda request: httpx.Response(503, json={"message": "busy"}))
        fired = made.trigger_profile_webhook(builder.profile_id or "", "Builders")
        keys = [request.headers.get("idempotency-key") for request in transport.requests]
        assert len(keys) == 3 and keys[0] and len(set(keys)) == 1, keys
        again = made.trigger_profile_webhook(builder.profile_id or "", "Builders", idempotency_key=keys[0])
        assert again.eventId == fired.eventId, "the same key: the service answers what it did, once"
        other = made.trigger_profile_webhook(builder.profile_id or "", "Builders")
        assert other.eventId != fired.eventId, "each trigger has a key of its own"


# -- the cache -----------------------------------------------------------------------------------------------


def test_a_second_call_within_max_age_makes_no_request(api: Api) -> None:
    transport = CountingTransport()
    cache = ResponseCache("memory:")
    with client_for(api, transport=transport, cache=cache) as made:
        first = made.search_listings("condo", per_page=3)
        second = made.search_listings("condo", per_page=3)
    assert len(transport.requests) == 1
    assert [r.listingId for r in first.results] == [r.listingId for r in second.results]
    assert second.response_meta is not None and second.response_meta.from_cache
    assert cache.stats.hits == 1 and cache.stats.misses == 1


def test_a_stale_answer_is_revalidated_with_its_etag(api: Api) -> None:
    transport = CountingTransport()

    def expire_at_once(response: httpx.Response) -> None:
        response.headers["cache-control"] = "private, max-age=0"

    transport.rewrite = expire_at_once
    cache = ResponseCache("memory:")
    with client_for(api, transport=transport, cache=cache) as made:
        first = made.trending_listings(per_page=2)
        second = made.trending_listings(per_page=2)
    assert len(transport.requests) == 2
    assert transport.requests[1].headers.get("if-none-match")
    assert cache.stats.revalidations == 1
    assert [r.listingId for r in first.results] == [r.listingId for r in second.results]


def test_two_keys_never_share_a_cached_answer(api: Api, tmp_path: Path) -> None:
    cache = ResponseCache(str(tmp_path / "shared.sqlite3"))
    transport = CountingTransport()
    with Client(api.url, KEY_ALL, cache=cache, transport=transport) as everything:
        everything.trending_listings(province="on")
    with Client(api.url, KEY_ONTARIO, cache=cache, transport=transport) as ontario:
        ontario.trending_listings(province="on")
    with Client(api.url, KEY_PEI, cache=cache, transport=transport) as pei, pytest.raises(errors.Forbidden):
        pei.trending_listings(province="on")
    assert len(transport.requests) == 3
    assert cache.stats.hits == 0


def test_send_now_and_replay_post_the_delivery_id_and_are_not_retried_blindly(api: Api) -> None:
    transport = CountingTransport()
    with client_for(api, transport=transport, sleep=lambda s: None) as made:
        with pytest.raises(errors.NotFound):
            made.send_delivery_now("msg_nope")
        with pytest.raises(errors.NotFound):
            made.replay_delivery("msg_nope")
    assert [r.url.path for r in transport.requests] == [
        "/v1/all/webhooks/deliveries/send_now",
        "/v1/all/webhooks/deliveries/replay",
    ]
    assert all(r.method == "POST" and json.loads(r.content) == {"id": "msg_nope"} for r in transport.requests)

    transport = CountingTransport()
    transport.scripted.append(lambda request: httpx.Response(503, json={"message": "busy"}))
    with client_for(api, transport=transport, sleep=lambda s: None) as made, pytest.raises(errors.ServerError):
        made.send_delivery_now("msg_1")
    assert len(transport.requests) == 1, "a send now that may have been acted on is not sent twice"
