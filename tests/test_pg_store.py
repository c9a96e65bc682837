"""The PostgreSQL store against the SQLite store and the reference evaluator, over one generated catalogue.

Each answer of :class:`PostgresCatalogueStore` is compared with the SQLite store's SQL engine (itself held to
the column engine and the evaluator by tests/test_store.py): totals, pages in order, scores, facet counts,
documents. Text relevance is held to the SQLite store's, score for score, by tests/test_pg_text_rank.py.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precon import filters
from precon.service import catalogue
from precon.service.postgres.store import PostgresCatalogueStore, tsquery
from precon.service.runtime import load
from precon.service.search import TextQuery
from precon.service.store import GeoCircle, ListingQuery, ProfileQuery, SearchHits, SQLiteStore
from tests import pg_support
from tests.store_support import every_id
from tests.test_service_unit_filter import odd_listings, unit_expressions, unit_oracle
from tests.test_store import expressions

pg_cluster = pg_support.pg_cluster
pg_database = pg_support.pg_database

SEED = 5
COUNT = 300
FACETS = (
    "type",
    "sellingStatus",
    "cityOrDistrict",
    "amenities",
    "builders",
    "startPrice",
    "isFeatured",
    "floorPlans.numberOfBedrooms",
    "floorPlans.contactForPricing",
    "completionYear",
    "hasLocker",
)


@pytest.fixture(scope="module")
def built() -> catalogue.Catalogue:
    return catalogue.generate(COUNT, SEED)


@pytest.fixture(scope="module")
def records(built: catalogue.Catalogue) -> list[dict[str, Any]]:
    return built.listings + odd_listings(built.listings)


@pytest.fixture(scope="module")
def stores(
    pg_cluster: pg_support.Cluster,
    tmp_path_factory: pytest.TempPathFactory,
    built: catalogue.Catalogue,
    records: list[dict[str, Any]],
) -> Iterator[tuple[SQLiteStore, PostgresCatalogueStore]]:
    """(the SQLite store's SQL engine, the PostgreSQL store) over the same catalogue, loaded the same way."""
    name = pg_cluster.database(pg_support.migrate)
    sqlite = SQLiteStore(tmp_path_factory.mktemp("pg-reference") / "catalogue.sqlite3", engine="sql")
    postgres = PostgresCatalogueStore(pg_cluster.conninfo(name), migrate=False)
    for store in (sqlite, postgres):
        load(store, records, built.profiles)
    try:
        yield sqlite, postgres
    finally:
        sqlite.close()
        postgres.close()
        pg_cluster.drop(name)


def ids(hits: SearchHits) -> list[str]:
    return [d["listingId"] for d in hits.documents]


def assert_same(a: SearchHits, b: SearchHits, text: bool = False) -> None:
    assert a.total == b.total
    assert a.facets == b.facets
    if text:
        assert sorted(ids(a)) == sorted(ids(b))
        assert all(s is not None for s in b.scores) and b.scores == sorted(b.scores, reverse=True)  # type: ignore[type-var]
    else:
        assert ids(a) == ids(b)
        assert [orjson.dumps(d) for d in a.documents] == [orjson.dumps(d) for d in b.documents]  # key order too
        assert a.scores == b.scores


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=expressions)
def test_filters_equal_the_evaluator(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], built: catalogue.Catalogue, expr: filters.Expr
) -> None:
    sqlite, postgres = stores
    found = every_id(postgres, filter=expr)  # type: ignore[arg-type]
    assert found == every_id(sqlite, filter=expr)
    # The oracle over the generated listings (the odd floor plans hold text where the index keeps booleans: both
    # stores read them alike, see tests/test_service_unit_filter.py for what unitFilter makes of them).
    generated = {r["listingId"] for r in built.listings}
    expected = sorted(r["listingId"] for r in built.listings if filters.evaluate(expr, r))
    assert sorted(i for i in found if i in generated) == expected


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=unit_expressions, province=st.sampled_from([None, "on", "bc"]))
def test_unit_filters_equal_the_evaluator(
    stores: tuple[SQLiteStore, PostgresCatalogueStore],
    records: list[dict[str, Any]],
    expr: filters.Expr,
    province: str | None,
) -> None:
    sqlite, postgres = stores
    expected = sorted(r["listingId"] for r in records if unit_oracle(expr, r))
    query = ListingQuery(unit_filter=expr, province=province, limit=10_000, facets=("type", "sellingStatus"))
    a, b = sqlite.search_listings(query), postgres.search_listings(query)
    if province is None:
        assert sorted(ids(b)) == expected
    assert_same(a, b)


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"province": "on"},
        {"province": "bc", "filter": filters.parse("type:Condo")},
        {"filter": filters.parse("summary:x OR photos.tags:lobby")},
        {"filter": filters.parse("NOT amenities:Gym AND startPrice > 500000")},
        {"circle": GeoCircle(43.6532, -79.3832, 25_000)},
        {"circle": GeoCircle(49.2827, -123.1207, 40_000), "filter": filters.parse("startPrice < 900000")},
        {"circle": GeoCircle(45.5019, -73.5674, 500_000), "province": "qc"},
        {"order": "trending"},
        {"offset": 35, "limit": 20},
        {"offset": 10_000},
        {"limit": 0},
    ],
)
def test_listing_searches_equal_sqlite(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], query: dict[str, Any]
) -> None:
    sqlite, postgres = stores
    query = {"limit": 10_000, **query}
    a = sqlite.search_listings(ListingQuery(facets=FACETS, **query))
    b = postgres.search_listings(ListingQuery(facets=FACETS, **query))
    assert_same(a, b)


def test_every_facet_value_is_counted_when_asked(stores: tuple[SQLiteStore, PostgresCatalogueStore]) -> None:
    sqlite, postgres = stores
    for limit in (None, 3):
        query = ListingQuery(facets=("cityOrDistrict", "startPrice", "amenities"), max_facet_values=limit, limit=0)
        assert sqlite.search_listings(query).facets == postgres.search_listings(query).facets


@pytest.mark.parametrize(
    "text",
    ["condos", "rooftop terr", "CONDO", "toronto", "qu", "q", "condso", "rooftopp terace", "nothing-like-this"],
)
def test_text_matches_the_same_listings(stores: tuple[SQLiteStore, PostgresCatalogueStore], text: str) -> None:
    sqlite, postgres = stores
    parsed = TextQuery.parse(text)
    for extra in ({}, {"province": "on"}, {"filter": filters.parse("type:Condo")}):
        a = sqlite.search_listings(ListingQuery(text=parsed, facets=FACETS, limit=10_000, **extra))
        b = postgres.search_listings(ListingQuery(text=parsed, facets=FACETS, limit=10_000, **extra))
        assert_same(a, b, text=True)
        assert (a.text.typo_variants if a.text else None) == (b.text.typo_variants if b.text else None)


def test_text_ignores_accents_and_case_and_takes_one_typo(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], records: list[dict[str, Any]]
) -> None:
    _, postgres = stores
    name = records[7]["name"]
    word = max(TextQuery.parse(name).words, key=len)  # type: ignore[union-attr]
    accented = word[0].upper() + "é" + word[2:] if len(word) > 4 and word[1] == "e" else word.upper()
    for variant in (accented, word[:-1] + "x" if len(word) >= 5 else word, word[: max(2, len(word) - 2)]):
        hits = postgres.search_listings(ListingQuery(text=TextQuery.parse(variant), limit=10_000))
        assert records[7]["listingId"] in ids(hits), variant


def test_text_in_named_fields_only(stores: tuple[SQLiteStore, PostgresCatalogueStore]) -> None:
    sqlite, postgres = stores
    for word in ("toronto", "gym", "condo"):
        parsed = TextQuery(words=[word], columns=("name", "cityOrDistrict"))
        a = sqlite.search_listings(ListingQuery(text=parsed, limit=10_000))
        b = postgres.search_listings(ListingQuery(text=parsed, limit=10_000))
        assert_same(a, b, text=True)
    unsearchable = TextQuery(words=["toronto"], columns=("photos",))  # no searchable field: nothing, not an error
    assert postgres.search_listings(ListingQuery(text=unsearchable)).total == 0
    assert postgres.search_profiles(ProfileQuery(text=unsearchable)).total == 0


def test_text_relevance_puts_the_best_matches_first(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], records: list[dict[str, Any]]
) -> None:
    _, postgres = stores
    for record in records[:25]:
        text = TextQuery.parse(f"{record['name']} {record['cityOrDistrict']}")
        hits = postgres.search_listings(ListingQuery(text=text, limit=3))
        assert hits.documents[0]["name"] == record["name"]


def test_tsquery_quotes_every_word() -> None:
    assert tsquery(TextQuery(["it's", "a\\b"])) == "'it''s' & 'a\\\\b':*"
    assert tsquery(TextQuery(["rooftop", "t"])) == "'rooftop' & 't'"
    assert tsquery(TextQuery(["condso"], typo_variants={"condso": frozenset({"condos", "condo"})})) == (
        "('condso':* | 'condo' | 'condos')"
    )


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"province": "on"},
        {"collection": "Builders"},
        {"collection": "Builders", "province": "bc", "sort_by_name": "dsc"},
        {"sort_by_listings": "desc"},
        {"sort_by_listings": "asc", "province": "on"},
        {"sort_by_listings": "desc", "province": "qc", "sort_by_name": "dsc"},
        {"filter": filters.parse("state:Alberta OR name:x")},
        {"facets": ("state", "listings")},
        {"facets": ("collection", "address")},
        {"offset": 7, "limit": 5},
    ],
)
def test_profile_searches_equal_sqlite(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], query: dict[str, Any]
) -> None:
    sqlite, postgres = stores
    query = {"limit": 10_000, **query}
    a, b = sqlite.search_profiles(ProfileQuery(**query)), postgres.search_profiles(ProfileQuery(**query))
    assert a.total == b.total and a.facets == b.facets
    assert [orjson.dumps(d) for d in a.documents] == [orjson.dumps(d) for d in b.documents]


@pytest.mark.parametrize("text", ["design", "residential", "architcts", "ca", "albert", "zzzz"])
def test_profile_text_matches_the_same_profiles(stores: tuple[SQLiteStore, PostgresCatalogueStore], text: str) -> None:
    sqlite, postgres = stores
    for extra in ({}, {"collection": "Builders"}, {"sort_by_name": "asc"}):
        query = ProfileQuery(text=TextQuery.parse(text), limit=10_000, facets=("collection",), **extra)  # type: ignore[arg-type]
        a, b = sqlite.search_profiles(query), postgres.search_profiles(query)
        assert a.total == b.total and a.facets == b.facets
        assert sorted(d["path"] for d in a.documents) == sorted(d["path"] for d in b.documents)
        if extra.get("sort_by_name"):
            assert [d["path"] for d in a.documents] == [d["path"] for d in b.documents]


def test_lookups_equal_sqlite(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], built: catalogue.Catalogue, records: list[dict[str, Any]]
) -> None:
    sqlite, postgres = stores
    assert sqlite.counts() == postgres.counts()
    assert sqlite.listing_attribute_names() == postgres.listing_attribute_names()
    some = [r["listingId"] for r in records[::17]] + ["NOPE"]
    for province in (None, "on", "bc"):
        assert sqlite.get_listings(some, province) == postgres.get_listings(some, province)
    assert postgres.get_listings([], None) == {}
    paths = [p["path"] for p in built.profiles[::7]] + ["Builders/nope"]
    assert sqlite.get_profiles(paths) == postgres.get_profiles(paths)
    for profile in built.profiles[:30]:
        collection, profile_id = profile["path"].split("/", 1)
        for args in ((collection, None), (None, None), (collection, "on"), (None, "bc")):
            assert sqlite.find_profile(profile_id, *args) == postgres.find_profile(profile_id, *args)
    plan_ids = [plan["id"] for r in sqlite.get_listings(some, None).values() for plan in r.get("floorPlans") or []]
    assert sqlite.listings_holding_plans([*plan_ids, "no-such-plan"]) == postgres.listings_holding_plans(plan_ids)


def test_similarity_features_equal_sqlite(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], records: list[dict[str, Any]]
) -> None:
    sqlite, postgres = stores
    for record in records[:40:4]:
        for province in (None, "on"):
            a_target, a_others = sqlite.similarity_features(record["listingId"], province, 30_000, 50)
            b_target, b_others = postgres.similarity_features(record["listingId"], province, 30_000, 50)
            assert a_target == b_target
            key = lambda f: f.listing_id  # noqa: E731
            assert len(a_others) == len(b_others)
            nearby = {f.listing_id for f in a_others} & {f.listing_id for f in b_others}
            by_id = {f.listing_id: f for f in b_others}
            for feature in sorted(a_others, key=key):
                if feature.listing_id in nearby:
                    assert by_id[feature.listing_id] == feature


def test_writes_equal_sqlite(
    pg_database: str, tmp_path: Path, built: catalogue.Catalogue, records: list[dict[str, Any]]
) -> None:
    sqlite = SQLiteStore(tmp_path / "c.sqlite3", engine="sql")
    postgres = PostgresCatalogueStore(pg_database, migrate=False)
    heard: list[list[Any]] = []
    postgres.listeners.append(heard.append)
    try:
        first, second = records[:60], records[60:90]
        renamed = {**records[0], "name": "Quayside Observatory", "type": ["Loft"], "state": "British Columbia"}
        steps: list[tuple[str, Any]] = [
            ("upsert_profiles", built.profiles[:50]),
            ("upsert_listings", first),
            ("upsert_listings", [*second, renamed, records[1]]),
            ("upsert_profiles", [{**built.profiles[0], "name": "Ünique Builders"}, *built.profiles[50:60]]),
            ("delete_listing", records[2]["listingId"]),
            ("delete_listing", records[2]["listingId"]),
            ("delete_profile", built.profiles[3]["path"]),
            ("delete_profile", "Builders/none"),
        ]
        for method, argument in steps:
            a = getattr(sqlite, method)(argument)
            b = getattr(postgres, method)(argument)
            assert a == b, method
            for query in (
                ListingQuery(limit=10_000, facets=FACETS),
                ListingQuery(province="bc", limit=10_000, facets=FACETS),
                ListingQuery(text=TextQuery.parse("observatory"), limit=10_000),
            ):
                assert_same(sqlite.search_listings(query), postgres.search_listings(query), text=query.text is not None)
            for profile_query in (
                ProfileQuery(limit=10_000, sort_by_listings="desc"),
                ProfileQuery(province="bc", limit=10_000, sort_by_listings="asc"),
                ProfileQuery(province="on", limit=10_000),
            ):
                a_hits, b_hits = sqlite.search_profiles(profile_query), postgres.search_profiles(profile_query)
                assert a_hits.total == b_hits.total
                assert a_hits.documents == b_hits.documents
        assert every_id(postgres, text=TextQuery.parse("observatory")) == [records[0]["listingId"]]  # type: ignore[arg-type]
        assert len(heard) == 6  # one call per write that changed something, after its commit
        with pytest.raises(ValueError):
            postgres.upsert_listings([{"name": "no id"}])
        with pytest.raises(ValueError):
            postgres.upsert_profiles([{"path": "no-collection"}])
        assert sqlite.counts() == postgres.counts()
    finally:
        sqlite.close()
        postgres.close()


def test_trending_equals_sqlite(pg_database: str, tmp_path: Path, records: list[dict[str, Any]]) -> None:
    sqlite = SQLiteStore(tmp_path / "c.sqlite3", engine="sql")
    postgres = PostgresCatalogueStore(pg_database, migrate=False)
    try:
        now = time.time()
        for store in (sqlite, postgres):
            store.upsert_listings(records[:8])
            for _ in range(3):
                store.record_view(records[0]["listingId"], at=now - 3 * 24 * 3600)
            store.record_view(records[1]["listingId"], at=now)
            store.record_view(records[2]["listingId"], at=now - 1100 * 24 * 3600)
            store.record_view(records[2]["listingId"], at=now - 3600)  # 1,100 half-lives apart: no underflow
            store.record_view("not-a-listing", at=now)
        query = ListingQuery(order="trending", limit=10)
        a, b = sqlite.search_listings(query), postgres.search_listings(query)
        assert ids(a) == ids(b)
        assert ids(b)[:3] == [records[1]["listingId"], records[2]["listingId"], records[0]["listingId"]]
        sqlite.delete_listing(records[1]["listingId"])
        postgres.delete_listing(records[1]["listingId"])
        assert ids(sqlite.search_listings(query)) == ids(postgres.search_listings(query))
    finally:
        sqlite.close()
        postgres.close()


def test_a_circle_finds_its_candidates_through_the_earthdistance_index(
    stores: tuple[SQLiteStore, PostgresCatalogueStore],
) -> None:
    _, postgres = stores
    circle = GeoCircle(43.6532, -79.3832, 25_000)
    with postgres._read() as db:
        clauses, params = postgres._listing_where(db, ListingQuery(circle=circle), None)
        db.execute("SET LOCAL enable_seqscan = off")  # 300 rows: the planner would rather scan them all
        plan = "\n".join(
            r[0] for r in db.execute(f"EXPLAIN SELECT count(*) FROM listings l WHERE {' AND '.join(clauses)}", params)
        )
    assert "listings_on_earth" in plan


@pytest.mark.parametrize(
    "text",
    [
        "isFeatured != 1",
        "isFeatured > 0",
        "NOT isFeatured <= 1",
        "hasLocker != 0 OR isFeatured:true",
        "floorPlans.contactForPricing != 1",
        "NOT floorPlans.contactForPricing < 1",
        "isFeatured:maybe",
        "NOT startPrice:abc",
        "isFeatured:0 TO 1",
    ],
)
def test_comparisons_that_can_never_hold_are_false_not_errors(
    stores: tuple[SQLiteStore, PostgresCatalogueStore], text: str
) -> None:
    sqlite, postgres = stores
    expr = filters.parse(text)
    assert every_id(postgres, filter=expr) == every_id(sqlite, filter=expr)  # type: ignore[arg-type]


def _haversine_m(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    h = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lng2 - lng1) / 2) ** 2
    return 2 * 6_371_000.0 * math.asin(min(1.0, math.sqrt(h)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lat=st.floats(41.0, 62.0),
    lng=st.floats(-130.0, -55.0),
    radius=st.one_of(st.floats(0, 400_000), st.sampled_from([0.0, 1_000.0, 1_000_000.0])),
)
def test_a_circle_finds_every_listing_within_its_radius(
    stores: tuple[SQLiteStore, PostgresCatalogueStore],
    records: list[dict[str, Any]],
    lat: float,
    lng: float,
    radius: float,
) -> None:
    _, postgres = stores
    found = set(every_id(postgres, circle=GeoCircle(lat, lng, radius)))  # type: ignore[arg-type]
    for record in records:
        geo = record.get("_geoloc")
        if not isinstance(geo, dict) or geo.get("lat") is None or geo.get("lng") is None:
            assert record["listingId"] not in found
            continue
        distance = _haversine_m(lat, lng, geo["lat"], geo["lng"])
        if abs(distance - radius) > 0.01:  # on the edge, rounding decides
            assert (record["listingId"] in found) == (distance <= radius), (record["listingId"], distance)


def test_a_circle_across_the_antimeridian_finds_listings_on_both_sides(pg_database: str) -> None:
    store = PostgresCatalogueStore(pg_database, migrate=False)
    try:
        store.upsert_listings(
            [
                {"listingId": "EAST01", "name": "East", "_geoloc": {"lat": 52.0, "lng": 179.95}},
                {"listingId": "WEST01", "name": "West", "_geoloc": {"lat": 52.0, "lng": -179.95}},
                {"listingId": "FARAWY", "name": "Far", "_geoloc": {"lat": 52.0, "lng": 170.0}},
            ]
        )
        assert sorted(every_id(store, circle=GeoCircle(52.0, 179.99, 20_000))) == ["EAST01", "WEST01"]  # type: ignore[arg-type]
    finally:
        store.close()
