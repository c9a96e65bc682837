"""unitFilter in the column index, against brute force over the documents: which listings, and per listing which
floor plans and how many of their units (``_matchedFloorPlans``, from the search's own answer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from precon import filters
from precon.service.api.units import matched_floor_plans, with_matched_floor_plans
from precon.service.search.unit_steps import FloorSteps
from precon.service.stores.sqlite.store import SQLiteStore
from precon.service.stores.types import ListingQuery
from tests.catalogues import generated_catalogue
from tests.store_support import reference_order, stored_store
from tests.test_service_unit_filter import odd_listings, plans_of, unit_expressions, unit_oracle

SEED = 11
COUNT = 150

QUESTIONS = [
    "units.status:Available AND units.price < 700000 AND units.floor >= 10",
    "units.status:Available AND units.price <= 650000 AND units.floor > 6",
    "units.status:Sold AND units.price < 815000 AND units.floor <= 12",
    "units.status:available AND units.floor >= 10 AND units.price < 900000",
    "units.price < 700000 AND units.floor >= 10",
    "units.status:Available AND units.floor >= 10",
    "units.status:Available AND units.price < 700000",
    "units.status:Available AND (units.price < 700000 OR units.floor >= 10)",
    "units.status:Available AND NOT units.floor < 10 AND units.price < 700000",
    "NOT units.status:Available",
    "NOT units.price > 0",
    "numberOfBedrooms >= 2 AND units.status:Available AND units.price < 700000 AND units.floor >= 10",
    "units.status:Available AND units.price < 700000 AND units.floor >= 10 AND units.floor <= 20",
    "units.status:Available AND units.price:400000 TO 700000 AND units.floor >= 5",
    "units.status:Available AND units.price >= 600000 AND units.floor <= 4",
    "units.status:Available AND units.status:Sold AND units.price < 700000",
    "units.status:Nonesuch AND units.floor >= 1",
    "units.floor = 6 AND units.status:available AND units.price < 900000",
]


@pytest.fixture(scope="module")
def records() -> list[dict[str, Any]]:
    generated = generated_catalogue(COUNT, SEED).listings
    return generated + odd_listings(generated)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, Any]]) -> Iterator[SQLiteStore]:
    path = tmp_path_factory.mktemp("unit-index") / "catalogue.sqlite3"
    with stored_store(path, records, generated_catalogue(COUNT, SEED).profiles) as opened:
        yield opened


def brute_force(expr: filters.Expr, record: dict[str, Any]) -> tuple[list[int], int]:
    """The plans of the listing ``expr`` holds for (by index) and how many of their units, one at a time."""
    plans, units = [], 0
    for index, plan in enumerate(plans_of(record)):
        one = {**record, "floorPlans": [plan]}
        if not unit_oracle(expr, one):
            continue
        plans.append(index)
        listed = plan.get("units")
        for unit in listed if isinstance(listed, list) else []:
            if isinstance(unit, dict) and unit_oracle(expr, {**record, "floorPlans": [{**plan, "units": [unit]}]}):
                units += 1
    return plans, units


def check(store: SQLiteStore, records: list[dict[str, Any]], expr: filters.Expr) -> None:
    expected = sorted(r["listingId"] for r in records if unit_oracle(expr, r))
    hits = store.search_listings(ListingQuery(unit_filter=expr, limit=10_000))
    assert sorted(d["listingId"] for d in hits.documents) == expected
    found_ids = [d["listingId"] for d in hits.documents]
    assert found_ids == reference_order(store, found_ids, ListingQuery())
    found_plans = hits.matched if hits.documents else []  # an empty page has nothing to say
    assert found_plans is not None and len(found_plans) == len(hits.documents)
    for document, found in zip(hits.documents, found_plans, strict=True):
        plans, units = brute_force(expr, document)
        assert (found.plans, found.of) == (plans, len(plans_of(document)))
        if filters.names_units(expr):
            assert found.units == units
        assert matched_floor_plans(document, expr, found) == matched_floor_plans(document, expr)


def test_matched_floor_plans_spliced_into_stored_bytes_say_what_the_documents_do(
    store: SQLiteStore,
) -> None:
    for question in [*QUESTIONS, "numberOfBedrooms >= 2", "NOT startPrice > 0"]:
        expr = filters.parse(question)
        assert expr is not None
        hits = store.search_listings(ListingQuery(unit_filter=expr, limit=10_000, raw=True))
        blobs = hits.blobs or []
        for _ in range(2):  # the second time, from the labels kept
            spliced = with_matched_floor_plans([b'{"x":1}'] * len(blobs), blobs, hits.source, expr, hits.matched)
            for answer, (_, blob) in zip(spliced, blobs, strict=True):
                assert orjson.loads(answer)["_matchedFloorPlans"] == matched_floor_plans(orjson.loads(blob), expr)


@pytest.mark.parametrize("question", QUESTIONS)
def test_floor_price_and_status_questions_match_brute_force(
    store: SQLiteStore, records: list[dict[str, Any]], question: str
) -> None:
    expr = filters.parse(question)
    assert expr is not None
    check(store, records, expr)


def test_questions_with_a_listing_filter_and_paging(store: SQLiteStore, records: list[dict[str, Any]]) -> None:
    listing_filter = filters.parse("type:Condo")
    for question in QUESTIONS[:4]:
        expr = filters.parse(question)
        expected = [r for r in records if filters.evaluate(listing_filter, r) and unit_oracle(expr, r)]
        whole = store.search_listings(ListingQuery(filter=listing_filter, unit_filter=expr, limit=10_000))
        assert sorted(d["listingId"] for d in whole.documents) == sorted(r["listingId"] for r in expected)
        page = store.search_listings(ListingQuery(filter=listing_filter, unit_filter=expr, offset=3, limit=5, raw=True))
        assert page.blobs is not None and page.matched == (whole.matched or [])[3:8]


def test_plans_without_units_fail_unit_conditions(store: SQLiteStore, records: list[dict[str, Any]]) -> None:
    hits = store.search_listings(ListingQuery(filter=filters.parse("listingId:ODD001"), limit=5))
    odd = hits.documents[0]
    for question in ("units.price < 100000000", "units.floor >= -100", "units.status:available"):
        expr = filters.parse(question)
        assert expr is not None
        found = store.search_listings(
            ListingQuery(filter=filters.parse("listingId:ODD001"), unit_filter=expr, limit=5)
        ).matched
        assert found is not None and found[0].plans == brute_force(expr, odd)[0]
        assert all(plans_of(odd)[index].get("units") for index in found[0].plans)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(expr=unit_expressions)
def test_any_unit_expression_matches_brute_force(
    store: SQLiteStore, records: list[dict[str, Any]], expr: filters.Expr
) -> None:
    check(store, records, expr)


NAN = float("nan")
unit_rows = st.lists(
    st.tuples(
        st.integers(0, 3),
        st.integers(-1, 2),
        st.sampled_from([NAN, 1.0, 2.0, 2.0, 3.0, 5.5]),
        st.sampled_from([NAN, -1.0, 1.0, 2.0, 3.0, 10.0]),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(
    rows=unit_rows,
    most=st.sampled_from([0.0, 1.0, 2.0, 2.5, 5.5, 9.0]),
    least=st.sampled_from([-5.0, 1.0, 2.5, 10.0, 11.0]),
)
def test_floor_steps_find_a_unit_under_the_price_from_the_floor_up(
    rows: list[tuple[int, int, float, float]], most: float, least: float
) -> None:
    plan = np.array([r[0] for r in rows], dtype=np.int64)
    status = np.array([r[1] for r in rows], dtype=np.int32)
    price = np.array([r[2] for r in rows], dtype=np.float64)
    floor = np.array([r[3] for r in rows], dtype=np.float64)
    order = np.lexsort((price, status, plan))
    plan, status, price, floor = plan[order], status[order], price[order], floor[order]
    steps = FloorSteps(plan, status, floor)
    groups = [(p, s) for p in range(4) for s in range(-1, 3)]
    first = np.array([int(np.searchsorted(plan * 10 + status, p * 10 + s)) for p, s in groups], dtype=np.int64)
    count = np.array([int(np.sum((plan == p) & (status == s))) for p, s in groups], dtype=np.int64)
    found = steps.any_unit(price, first, count, most, least)
    expected = [any(r[0] == p and r[1] == s and r[2] <= most and r[3] >= least for r in rows) for p, s in groups]
    assert found.tolist() == expected
