"""Mirroring a deployment, and the embedded service the dashboard starts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from precon.client import Client, errors
from precon.service import embedded
from precon.service.config import ServiceSettings
from precon.service.runtime import DataDirectory
from precon.service.server import ServerThread
from precon.service.stores.mirror import mirror

SOURCE_LISTINGS = 2500
KEY = "mirror-test-key"


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    settings = ServiceSettings(
        data_dir=tmp_path_factory.mktemp("source"), default_listings=SOURCE_LISTINGS, default_seed=21, rate_limit=0
    )
    directory = DataDirectory.open(settings)
    directory.accounts.create_key("remote", key=KEY)
    with ServerThread(directory.app()) as server:
        yield server.url
    directory.close()


class FailAfter(httpx.BaseTransport):
    """A network that drops after a number of requests."""

    def __init__(self, requests: int) -> None:
        self.inner = httpx.HTTPTransport()
        self.left = requests
        self.sent = 0

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if self.left == 0:
            raise httpx.ConnectError("network down", request=request)
        self.left -= 1
        self.sent += 1
        return self.inner.handle_request(request)


def answers(url: str, key: str, params: dict[str, Any]) -> dict[str, Any]:
    """A search's answer, the serving host's media URLs written as the paths they are stored under: a mirror
    draws the same media on its own host."""
    response = httpx.get(
        url + "/v1/all/search_listings", params={"product_id": "remote", **params}, headers={"x-api-key": key}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = orjson.loads(response.content.replace(f"{url}/media/".encode(), b"/media/"))
    return body


QUERIES = [
    {"perPage": 1000, "page": 1},
    {"search": "condo rooftop", "perPage": 50},
    {"filterQuery": 'type:"Townhouse" AND startPrice < 900000', "facets": "sellingStatus,builders", "perPage": 30},
    {"nearby": "43.6532,-79.3832", "radius": 15000, "perPage": 40},
]


def test_an_interrupted_mirror_resumes_and_matches_the_source(source: str, tmp_path: Path) -> None:
    target = tmp_path / "data" / "catalogue.sqlite3"
    target.parent.mkdir()
    drop = FailAfter(requests=2)
    with Client(source, KEY, "remote", cache=False, transport=drop, max_retries=0) as flaky:
        with pytest.raises(errors.TransportError):
            mirror(flaky, target, page_size=500)
    assert not target.exists()
    seen: list[tuple[str, int, int]] = []
    with Client(source, KEY, "remote", cache=False) as steady:
        report = mirror(steady, target, page_size=500, progress=lambda *a: seen.append(a))
    assert report.resumed
    assert report.listings == SOURCE_LISTINGS
    assert report.requests == (-(-report.profiles // 500) + SOURCE_LISTINGS // 500) - drop.sent
    assert seen[-1] == ("listings", SOURCE_LISTINGS, SOURCE_LISTINGS)

    copy = DataDirectory.open(ServiceSettings(data_dir=target.parent, rate_limit=0))
    copy.accounts.create_key("remote", key=KEY)
    with ServerThread(copy.app()) as server:
        for params in QUERIES:
            assert answers(server.url, KEY, params) == answers(source, KEY, params), params
    copy.close()


def test_a_finished_mirror_starts_afresh(source: str, tmp_path: Path) -> None:
    target = tmp_path / "catalogue.sqlite3"
    with Client(source, KEY, "remote", cache=False) as steady:
        first = mirror(steady, target, province="pe")
        again = mirror(steady, target, province="pe")
    assert not first.resumed and not again.resumed
    assert first.listings == again.listings > 0
    assert first.differences.created["listings"] == first.listings and not again.differences.any()
    assert not (tmp_path / "catalogue.sqlite3.mirror").exists()


def test_the_embedded_service_starts_answers_and_stops(tmp_path: Path) -> None:
    service = embedded.start(tmp_path / "embedded", listings=150)
    url = service.url
    try:
        page = service.client.search_listings(per_page=5)
        assert page.total == 150
        assert service.client.get_listing(page.results[0].listingId or "").name == page.results[0].name
    finally:
        service.stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(url + "/healthz")
