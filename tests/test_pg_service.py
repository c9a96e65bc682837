"""The service over PostgreSQL answers as it does over SQLite: the same requests to two running services, one on
each store, loaded with the same catalogue (and sandbox), give the same answers byte for byte.

Text searches are the exception: both match the same listings, but rank them each by its own relevance measure,
so those answers are compared as sets of ids with the same total and facets.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from precon.service import catalogue
from precon.service.accounts.sqlite import AccountStore
from precon.service.app import create_app
from precon.service.config import ServiceSettings
from precon.service.runtime import load
from precon.service.server import ServerThread
from precon.service.stores.postgres.store import PostgresCatalogueStore
from precon.service.stores.replica import open_replicas
from precon.service.stores.sqlite.store import SQLiteStore
from tests import pg_support
from tests.catalogues import generated_catalogue

pg_cluster = pg_support.pg_cluster

LISTINGS = 400
SEED = 11
REQUEST_ID = re.compile(rb'"requestId":"[0-9a-f]*"')
KEY = "pg-test-key"
ONTARIO_KEY = "pg-test-key-ontario"


@dataclass
class Pair:
    sqlite: str
    postgres: str
    http: httpx.Client
    listing_ids: list[str]
    profile_paths: list[str]

    def both(self, path: str, key: str = KEY, **params: Any) -> tuple[Answer, Answer]:
        """The two services' answers, each with its own address (in media URLs) replaced by ``http://service``, and
        the request ids of errors blanked."""
        headers = {"x-api-key": key}
        answers = []
        for url in (self.sqlite, self.postgres):
            response = self.http.get(url + path, params=params, headers=headers)
            content = REQUEST_ID.sub(b'"requestId":""', response.content.replace(url.encode(), b"http://service"))
            answers.append(Answer(response.status_code, content))
        return answers[0], answers[1]


@dataclass
class Answer:
    status_code: int
    content: bytes

    def json(self) -> Any:
        return orjson.loads(self.content)


def _accounts(path: Path) -> AccountStore:
    accounts = AccountStore(path)
    accounts.create_key("everything", key=KEY)
    accounts.create_key("ontario", ["v1"], ["on"], key=ONTARIO_KEY)
    return accounts


@pytest.fixture(scope="module")
def pair(pg_cluster: pg_support.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    built = generated_catalogue(LISTINGS, SEED)
    fixed = catalogue.sandbox()
    name = pg_cluster.database()
    folder = tmp_path_factory.mktemp("pg-service")
    settings = ServiceSettings(data_dir=folder, rate_limit=0, failed_auth_rate=0, dev=True)
    stores: list[Any] = [
        SQLiteStore(folder / "live.sqlite3"),
        SQLiteStore(folder / "sandbox.sqlite3"),
        PostgresCatalogueStore(pg_cluster.conninfo(name)),
        PostgresCatalogueStore(pg_cluster.conninfo(name), schema="sandbox"),
    ]
    for live, sandbox in (stores[:2], stores[2:]):
        load(live, built.listings, built.profiles)
        load(sandbox, fixed.listings, fixed.profiles)
    # A replica: PostgreSQL's catalogues, each read from a local copy.
    stores[2:] = open_replicas(pg_cluster.conninfo(name), stores[2:], folder / "copies", shared_indexes=False)
    sqlite_app = create_app(settings, live=stores[0], sandbox=stores[1], accounts=_accounts(folder / "a1.sqlite3"))
    postgres_app = create_app(settings, live=stores[2], sandbox=stores[3], accounts=_accounts(folder / "a2.sqlite3"))
    try:
        with (
            ServerThread(sqlite_app) as sqlite_server,
            ServerThread(postgres_app) as postgres_server,
            httpx.Client(timeout=60) as http,
        ):
            yield Pair(
                sqlite_server.url,
                postgres_server.url,
                http,
                [r["listingId"] for r in built.listings],
                [p["path"] for p in built.profiles],
            )
    finally:
        for store in stores:
            store.close()
        pg_cluster.drop(name)


REQUESTS: list[tuple[str, dict[str, Any]]] = [
    ("/v1/all/search_listings", {}),
    ("/v1/all/search_listings", {"page": 3, "perPage": 25}),
    ("/v1/all/search_listings", {"facets": "*", "perPage": 0}),
    ("/v1/on/search_listings", {"facets": "*"}),
    ("/v1/bc/search_listings", {"filterQuery": "type:Condo AND startPrice < 900000", "perPage": 100}),
    ("/v1/all/search_listings", {"filterQuery": "photos.tags:lobby OR NOT amenities:Gym", "perPage": 100}),
    ("/v1/all/search_listings", {"nearby": "43.6532,-79.3832", "radius": 25000, "perPage": 100}),
    ("/v1/all/search_listings", {"nearby": "49.2827,-123.1207", "radius": 60000, "facets": "type,startPrice"}),
    ("/v1/all/search_listings", {"unitFilter": "numberOfBedrooms >= 2 AND status:Available", "perPage": 100}),
    ("/v1/all/search_listings", {"referrences": "builders,architects", "retrieveAttributes": "name,builders"}),
    ("/v1/all/search_listings", {"filterQuery": "startPrice <"}),
    ("/v1/all/facet_counts", {"facets": "*"}),
    ("/v1/all/facet_counts", {"facets": "cityOrDistrict,amenities", "format": "list", "filterQuery": "minBeds >= 2"}),
    ("/v1/all/search_facet_values", {"facet": "cityOrDistrict", "facetQuery": "to"}),
    ("/v1/all/search_facet_values", {"facet": "amenities", "facetQuery": "ro", "filterQuery": "type:Condo"}),
    ("/v1/all/trending_listings", {}),
    ("/v1/all/trending_listings", {"filterQuery": "type:Condo", "perPage": 50}),
    ("/v1/all/search_profiles", {"perPage": 200}),
    ("/v1/all/search_profiles", {"collection": "Builders", "sortByName": "asc", "perPage": 200}),
    ("/v1/on/search_profiles", {"sortByListings": "desc", "perPage": 200}),
    ("/v1/all/search_profiles", {"sortByListings": "asc", "sortByName": "dsc", "facets": "collection"}),
    ("/v1/all/search_profiles", {"filterQuery": "state:Alberta", "perPage": 200}),
    ("/v1-sandbox/all/search_listings", {"facets": "*"}),
    ("/v1-sandbox/all/search_profiles", {}),
]


@pytest.mark.parametrize(("path", "params"), REQUESTS, ids=[f"{p} {q}" for p, q in REQUESTS])
def test_the_same_answers(pair: Pair, path: str, params: dict[str, Any]) -> None:
    a, b = pair.both(path, **params)
    assert a.status_code == b.status_code
    assert a.json() == b.json()
    assert a.content == b.content


def test_the_same_answers_about_single_records(pair: Pair) -> None:
    for listing_id in [*pair.listing_ids[:40:3], "NOPE00"]:
        for path, params in (
            ("/v1/all/listing", {"id": listing_id}),
            ("/v1/all/listing", {"id": listing_id, "referrences": "builders"}),
            ("/v1/all/profiles_of_listing", {"id": listing_id}),
            ("/v1/on/listing", {"id": listing_id}),
        ):
            a, b = pair.both(path, **params)
            assert (a.status_code, a.content) == (b.status_code, b.content), (path, params)
    ids = ",".join(pair.listing_ids[5:60:5])
    a, b = pair.both("/v1/all/multiple_listings", ids=ids)
    assert (a.status_code, a.content) == (b.status_code, b.content)
    for path in pair.profile_paths[:30:3]:
        collection, profile_id = path.split("/", 1)
        for province in ("all", "on"):
            a, b = pair.both(f"/v1/{province}/profile", id=profile_id, collection=collection)
            assert (a.status_code, a.content) == (b.status_code, b.content), path


def test_the_same_similar_listings(pair: Pair) -> None:
    for listing_id in pair.listing_ids[:30:3]:
        a, b = pair.both("/v1/all/similar_listings", id=listing_id, maxRecommendations=10)
        assert a.status_code == b.status_code == 200
        assert a.json() == b.json()


@pytest.mark.parametrize("words", ["condos", "rooftop terr", "toronto condo", "condso", "Montréal", "zzzzqq"])
def test_text_search_finds_the_same_listings(pair: Pair, words: str) -> None:
    a, b = pair.both("/v1/all/search_listings", search=words, perPage=1000, facets="*", highlightResults="true")
    assert a.status_code == b.status_code == 200
    first, second = a.json(), b.json()
    assert {k: v for k, v in first.items() if k != "results"} == {k: v for k, v in second.items() if k != "results"}
    by_id = {hit["objectID"]: hit for hit in second["results"]}
    assert sorted(hit["objectID"] for hit in first["results"]) == sorted(by_id)
    for hit in first["results"]:  # the same record, highlighted the same way
        assert {k: v for k, v in hit.items() if k != "_score"} == {
            k: v for k, v in by_id[hit["objectID"]].items() if k != "_score"
        }
    a, b = pair.both("/v1/all/search_profiles", search=words, perPage=1000)
    assert sorted(h["objectID"] for h in a.json()["results"]) == sorted(h["objectID"] for h in b.json()["results"])
