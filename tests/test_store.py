"""The store's search against the reference evaluator (filters), and against the stored rows read in SQL (facet
counts, the order)."""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precon import filters
from precon.schema import SEARCHABLE_LISTING_WEIGHTS
from precon.service.runtime import load
from precon.service.search.text import TextQuery
from precon.service.stores.records import province_of
from precon.service.stores.sqlite.store import SCHEMA_VERSION, SQLiteStore
from precon.service.stores.types import GeoCircle, ListingQuery
from tests.catalogues import generated_catalogue
from tests.store_support import DEFAULT_ORDER, every_id, reference_facets, reference_order, stored_store

SEED = 5
COUNT = 300


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    return generated_catalogue(COUNT, SEED).listings


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Iterator[SQLiteStore]:
    path = tmp_path_factory.mktemp("store") / "catalogue.sqlite3"
    with stored_store(path, records, generated_catalogue(COUNT, SEED).profiles) as opened:
        yield opened


# Filters drawn from the catalogue's own values, on indexed and unindexed paths alike.
TEXT_ATTRIBUTES = {
    "type": ["Condo", "townhouse", "Detached", "Loft", "Stacked Townhouse"],
    "sellingStatus": ["Selling Now", "sold-out", "Pending"],
    "constructionStatus": ["Pre Construction", "Complete", "pre-construction"],
    "amenities": ["Gym", "Pool", "Concierge", "Rooftop Terrace", "Sauna"],
    "cityOrDistrict": ["Toronto", "Vancouver", "Calgary", "Montreal", "Halifax"],
    "floorPlans.status": ["Available", "Sold Out"],
    "floorPlans.floorPlanType": ["1 Bed", "2 Bed + Den", "Townhouse"],
    "photos.tags": ["exterior", "lobby"],
    "paymentStructures.type": ["Condo", "Freehold"],
    "summary": ["x"],
    "floorPlans.units.floor": ["2", "12", "PH"],
    "floorPlans.units.unitNumber": ["201", "1203"],
}
NUMBER_ATTRIBUTES = {
    "startPrice": (200_000, 2_500_000),
    "minBeds": (0, 4),
    "maxBaths": (1, 4),
    "completionYear": (2024, 2031),
    "numberOfUnits": (10, 800),
    "floorPlans.startPrice": (200_000, 3_000_000),
    "floorPlans.numberOfBedrooms": (0, 4),
    "floorPlans.squareFeet": (300, 3000),
    "paymentStructures.totalDeposit": (5, 25),
    "lat": (42, 55),
    "floorPlans.units.price": (300_000, 1_500_000),
    "floorPlans.units.floor": (0, 40),
    "floorPlans.units.unitNumber": (100, 3000),
}
BOOLEAN_ATTRIBUTES = ["isFeatured", "constructionStartedTBD", "floorPlans.contactForPricing", "hasLocker"]


def atoms() -> st.SearchStrategy[filters.Expr]:
    text = st.sampled_from(sorted(TEXT_ATTRIBUTES)).flatmap(
        lambda a: st.sampled_from(TEXT_ATTRIBUTES[a]).map(lambda v: filters.Match(a, v))
    )
    booleans = st.tuples(st.sampled_from(BOOLEAN_ATTRIBUTES), st.sampled_from(["true", "false", "1", "0"])).map(
        lambda t: filters.Match(*t)
    )

    def numeric(attribute: str) -> st.SearchStrategy[filters.Expr]:
        low, high = NUMBER_ATTRIBUTES[attribute]
        number = st.integers(low, high)
        return st.one_of(
            st.tuples(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), number).map(
                lambda t: filters.Compare(attribute, t[0], t[1])
            ),
            st.tuples(number, number).map(lambda t: filters.Range(attribute, min(t), max(t))),
        )

    numbers = st.sampled_from(sorted(NUMBER_ATTRIBUTES)).flatmap(numeric)
    return st.one_of(text, booleans, numbers)


expressions = st.recursive(
    atoms(),
    lambda inner: st.one_of(
        st.lists(inner, min_size=2, max_size=3).map(lambda items: filters.And(tuple(items))),
        st.lists(inner, min_size=2, max_size=3).map(lambda items: filters.Or(tuple(items))),
        inner.map(filters.Not),
    ),
    max_leaves=6,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=expressions)
def test_filters_agree_with_the_evaluator(
    store: SQLiteStore, records: list[dict[str, Any]], expr: filters.Expr
) -> None:
    expected = sorted(r["listingId"] for r in records if filters.evaluate(expr, r))
    found = every_id(store, filter=expr)
    assert sorted(found) == expected
    assert found == reference_order(store, found, ListingQuery())


def _haversine_m(lat1: float, lng1: float, lat2: float, lng2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    h = math.sin((p2 - p1) / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(math.radians(lng2 - lng1) / 2) ** 2
    return 2 * 6_371_000.0 * math.asin(min(1.0, math.sqrt(h)))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    lat=st.floats(41.0, 62.0),
    lng=st.floats(-130.0, -55.0),
    radius=st.one_of(st.floats(0, 400_000), st.sampled_from([0.0, 1_000.0, 1_000_000.0])),
)
def test_a_circle_finds_every_listing_within_its_radius(
    store: SQLiteStore, records: list[dict[str, Any]], lat: float, lng: float, radius: float
) -> None:
    """The column index measures only the listings in the circle's bounding box: none inside the circle is lost."""
    found = set(every_id(store, circle=GeoCircle(lat, lng, radius)))
    for record in records:
        geo = record.get("_geoloc")
        if not isinstance(geo, dict) or geo.get("lat") is None or geo.get("lng") is None:
            assert record["listingId"] not in found
            continue
        distance = _haversine_m(lat, lng, geo["lat"], geo["lng"])
        if abs(distance - radius) > 0.01:  # on the edge, rounding decides
            assert (record["listingId"] in found) == (distance <= radius), (record["listingId"], distance)


def test_a_circle_across_the_antimeridian_finds_listings_on_both_sides(tmp_path: Path) -> None:
    records = [
        {"listingId": "EAST01", "name": "East", "_geoloc": {"lat": 52.0, "lng": 179.95}},
        {"listingId": "WEST01", "name": "West", "_geoloc": {"lat": 52.0, "lng": -179.95}},
        {"listingId": "FARAWY", "name": "Far", "_geoloc": {"lat": 52.0, "lng": 170.0}},
    ]
    store = SQLiteStore(tmp_path / "catalogue.sqlite3")
    try:
        load(store, records, [])
        assert sorted(every_id(store, circle=GeoCircle(52.0, 179.99, 20_000))) == ["EAST01", "WEST01"]
    finally:
        store.close()


@pytest.mark.parametrize(
    "query",
    [
        {},
        {"province": "on"},
        {"province": "bc", "filter": filters.parse("type:Condo")},
        {"text": TextQuery.parse("condos")},
        {"text": TextQuery.parse("rooftop terr")},
        {"circle": GeoCircle(43.6532, -79.3832, 25_000)},
        {"circle": GeoCircle(49.2827, -123.1207, 40_000), "filter": filters.parse("startPrice < 900000")},
        {"order": "trending"},
    ],
)
def test_order_and_facets_agree_with_the_stored_rows(store: SQLiteStore, query: dict[str, Any]) -> None:
    facets = (
        "type",
        "sellingStatus",
        "cityOrDistrict",
        "amenities",
        "builders",
        "startPrice",
        "isFeatured",
        "floorPlans.numberOfBedrooms",
        "completionYear",
    )
    asked = ListingQuery(limit=10_000, facets=facets, **query)
    hits = store.search_listings(asked)
    found = [d["listingId"] for d in hits.documents]
    assert hits.total == len(found) > 0
    assert hits.facets == reference_facets(store, found, facets, asked.max_facet_values)
    if "text" in query:
        # The listings FTS5 matches, ranked by the column index's field-weighted BM25 over FTS5's index.
        with sqlite3.connect(f"file:{store.path}?mode=ro", uri=True) as db:
            matched = db.execute(
                "SELECT l.listing_id FROM listing_fts f JOIN listings l ON l.id = f.rowid WHERE listing_fts MATCH ?",
                (query["text"].fts_expression(),),
            ).fetchall()
        assert sorted(found) == sorted(row[0] for row in matched)
        assert all(s is not None for s in hits.scores) and hits.scores == sorted(hits.scores, reverse=True)  # type: ignore[type-var]
        return
    assert found == reference_order(store, found, asked)
    expr = asked.filter
    everything = store.search_listings(ListingQuery(limit=10_000)).documents
    if asked.circle is None:
        expected = [
            r["listingId"]
            for r in everything
            if (expr is None or filters.evaluate(expr, r))
            and (asked.province is None or province_of(r.get("state")) == asked.province)
        ]
        assert sorted(found) == sorted(expected)


def test_text_relevance_puts_the_best_matches_first(store: SQLiteStore, records: list[dict[str, Any]]) -> None:
    for record in records[:25]:
        text = TextQuery.parse(f"{record['name']} {record['cityOrDistrict']}")
        hits = store.search_listings(ListingQuery(text=text, limit=3))
        assert hits.documents[0]["name"] == record["name"], record["name"]
    city = records[0]["cityOrDistrict"]
    in_name = [r for r in records if city.lower() in r["name"].lower()]
    ranked = every_id(store, text=TextQuery.parse(city))
    if in_name:  # a word in the name (weight 10) outranks the same word only in the address
        assert ranked.index(in_name[0]["listingId"]) < len(ranked) / 2


def test_trending_decays_with_time(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    store = SQLiteStore(tmp_path / "c.sqlite3")
    store.upsert_listings(records[:5])
    now = time.time()
    old, recent, untouched = (r["listingId"] for r in records[:3])
    for _ in range(3):
        store.record_view(old, at=now - 3 * 24 * 3600)  # three views, three half-lives ago: worth 3/8
    store.record_view(recent, at=now)  # one view now: worth 1
    hits = store.search_listings(ListingQuery(order="trending", limit=10))
    ranked = [d["listingId"] for d in hits.documents]
    assert ranked[:2] == [recent, old]
    assert untouched in ranked[2:]
    for _ in range(3):
        store.record_view(old, at=now)  # now worth 3 + 3/8
    assert [d["listingId"] for d in store.search_listings(ListingQuery(order="trending", limit=2)).documents] == [
        old,
        recent,
    ]
    rank = store._db().execute("SELECT rank, views FROM listing_views WHERE listing_id = ?", (old,)).fetchone()
    assert rank[1] == 6
    assert math.isclose(math.exp(rank[0] - math.log(2) / 86400 * (now - 1_767_225_600)), 3.375, rel_tol=1e-6)
    store.close()


def test_upserts_and_deletes_show_at_once(tmp_path: Path, records: list[dict[str, Any]]) -> None:
    store = SQLiteStore(tmp_path / "c.sqlite3")
    changes = store.upsert_listings(records[:3])
    assert [(c.kind, c.action, c.key) for c in changes] == [("listing", "created", r["listingId"]) for r in records[:3]]
    assert store.search_listings(ListingQuery()).total == 3
    renamed = {**records[0], "name": "Quayside Observatory", "type": ["Loft"]}
    assert [c.action for c in store.upsert_listings([renamed])] == ["updated"]
    assert every_id(store, text=TextQuery.parse("observatory")) == [records[0]["listingId"]]
    assert every_id(store, filter=filters.parse("type:Loft")) == [records[0]["listingId"]]
    assert [c.action for c in store.delete_listing(records[1]["listingId"])] == ["deleted"]
    assert store.delete_listing(records[1]["listingId"]) == []
    assert sorted(every_id(store)) == sorted([records[0]["listingId"], records[2]["listingId"]])
    assert store.get_listings([records[1]["listingId"]], None) == {}
    store.close()


def test_profile_provinces_follow_the_listings(tmp_path: Path) -> None:
    built = generated_catalogue(120, 9)
    store = SQLiteStore(tmp_path / "c.sqlite3")
    load(store, built.listings, built.profiles)
    builder_path = built.listings[0]["builders"][0]
    profile_id = builder_path.split("/")[1]
    province = {"Ontario": "on", "British Columbia": "bc", "Alberta": "ab", "Quebec": "qc"}.get(
        built.listings[0]["state"]
    )
    if province is not None:
        assert store.find_profile(profile_id, "Builders", province) is not None
    referring = [r for r in built.listings if builder_path in r["builders"]]
    for record in referring:
        store.delete_listing(record["listingId"])
    if province is not None:
        assert store.find_profile(profile_id, "Builders", province) is None
    assert store.find_profile(profile_id, "Builders", None) is not None
    store.close()


def test_a_file_of_an_older_layout_is_reindexed_and_keeps_its_records(
    tmp_path: Path, records: list[dict[str, Any]]
) -> None:
    path = tmp_path / "c.sqlite3"
    store = SQLiteStore(path)
    store.upsert_listings(records[:40])
    store.record_view(records[3]["listingId"])
    before = every_id(store, text=TextQuery.parse("condo"))
    with store._transaction() as db:
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema'")
        db.execute("DELETE FROM listing_terms")  # what an older layout would not have had
    store.close()
    reopened = SQLiteStore(path)
    assert reopened._db().execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == str(SCHEMA_VERSION)
    assert reopened.search_listings(ListingQuery()).total == 40
    assert every_id(reopened, text=TextQuery.parse("condo")) == before
    assert every_id(reopened, filter=filters.parse("type:Condo")) == every_id(store, filter=filters.parse("type:Condo"))
    assert every_id(reopened, order="trending")[0] == records[3]["listingId"]
    reopened.close()


@pytest.mark.parametrize("words", ["toronto", "condo", "park", "lofts vancouver"])
def test_text_in_some_fields_is_found_and_ranked_by_fts5(store: SQLiteStore, words: str) -> None:
    """v1-lite matches only the fields it shows: FTS5's column filter finds those listings and its bm25() ranks
    them, ties in the default order; filters, province and facets apply as to any search."""
    text = TextQuery.parse(words)
    assert text is not None
    text.columns = ("name", "cityOrDistrict")
    weights = ", ".join(str(w) for w in SEARCHABLE_LISTING_WEIGHTS)
    with sqlite3.connect(f"file:{store.path}?mode=ro", uri=True) as db:
        ranked = db.execute(
            f"SELECT l.listing_id, -bm25(listing_fts, {weights}) AS score FROM listing_fts f "
            f"JOIN listings l ON l.id = f.rowid WHERE listing_fts MATCH ? ORDER BY score DESC, {DEFAULT_ORDER}",
            (text.fts_expression(),),
        ).fetchall()
    ranked = [(i, round(score, 6)) for i, score in ranked]
    for province in (None, "on"):
        asked = ListingQuery(text=text, province=province, facets=("type",), limit=10_000)
        hits = store.search_listings(asked)
        kept = {d["listingId"] for d in store.search_listings(ListingQuery(province=province, limit=10_000)).documents}
        expected = [(i, score) for i, score in ranked if i in kept]
        assert [(d["listingId"], s) for d, s in zip(hits.documents, hits.scores, strict=True)] == expected
        assert hits.facets == reference_facets(store, [i for i, _ in expected], ("type",), asked.max_facet_values)
