"""precon.dashboard.listing_search against both kinds of deployment: our service (which filters floor plans itself) and
a stand-in without ``unitFilter`` (as the production service), each checked against an oracle computed here from
every listing's floor plans."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from precon import filters
from precon.client import Client
from precon.client.models import Listing
from precon.dashboard.filter_state import FilterState
from precon.dashboard.listing_search import (
    SearchRequest,
    all_matching,
    count_facets,
    matched_plans,
    run,
    total_and_facets,
    unit_filter_supported,
)
from precon.dashboard.ordering import sort_rows
from tests.production_like import client_for, plain_service, production_like_service

LISTINGS = 300
FACETS = ("type", "sellingStatus", "cityOrDistrict", "builders", "amenities")
ANALYST = {"type": "Condo", "selling": "Selling Now", "beds": "2..", "price": "..800000"}


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Client]]:
    """Our service and the stand-in without our extensions, each over the same generated catalogue."""
    with (
        plain_service(tmp_path_factory.mktemp("ours"), LISTINGS) as ours,
        production_like_service(tmp_path_factory.mktemp("standin"), LISTINGS) as standin,
    ):
        yield {"ours": client_for(ours), "production_like": client_for(standin)}


@pytest.fixture(scope="module")
def catalogue(backends: dict[str, Client]) -> list[Listing]:
    return list(backends["ours"].iter_listings(per_page=1000))


def oracle(catalogue: list[Listing], state: FilterState) -> list[Listing]:
    """The listings, in the service's default order, with a floor plan meeting every unit filter."""
    base = filters.compile_predicate(state.listing_expression())
    unit = state.unit_expression()
    found = []
    for listing in catalogue:
        record = listing.model_dump(mode="python", by_alias=True)
        if not base(record):
            continue
        if unit is not None and not matched_plans(listing, unit).count:
            continue
        found.append(listing)
    return found


@pytest.mark.parametrize("kind", ["ours", "production_like"])
def test_the_deployment_says_whether_it_filters_floor_plans(backends: dict[str, Client], kind: str) -> None:
    assert unit_filter_supported(backends[kind]) is (kind == "ours")


@pytest.mark.parametrize("kind", ["ours", "production_like"])
def test_the_analyst_question_is_answered_exactly(
    backends: dict[str, Client], catalogue: list[Listing], kind: str
) -> None:
    backend = backends[kind]
    state, _ = FilterState.from_params(ANALYST)
    expected = oracle(catalogue, state)
    listing_level = oracle(catalogue, FilterState(facets=state.facets))
    assert 0 < len(expected) < len(listing_level), "the catalogue must tell unit-level from listing-level answers"
    request = SearchRequest(
        filter=state.listing_expression(), unit_filter=state.unit_expression(), per_page=100, facets=FACETS
    )
    outcome = run(backend, request, unit_supported=unit_filter_supported(backend))
    assert outcome.unit_mode == ("service" if kind == "ours" else "local")
    assert outcome.total == len(expected)
    assert [lst.id for lst in outcome.listings] == [lst.id for lst in expected][:100]
    assert outcome.facets == count_facets(expected, FACETS)
    by_id = {lst.id: lst for lst in catalogue}
    for listing in outcome.listings:
        matched = listing.matched_floor_plans
        assert matched is not None and matched.count >= 1
        assert matched == matched_plans(by_id[listing.id], state.unit_expression())  # type: ignore[arg-type]
        plans = by_id[listing.id].floorPlans
        assert any((p.numberOfBedrooms or 0) >= 2 and p.startPrice and p.startPrice <= 800_000 for p in plans), (
            listing.id
        )


@pytest.mark.parametrize("kind", ["ours", "production_like"])
@pytest.mark.parametrize("sort", ["price_asc", "price_desc", "newest", "completion"])
def test_every_order_is_exact_on_every_page(
    backends: dict[str, Client], catalogue: list[Listing], kind: str, sort: str
) -> None:
    backend = backends[kind]
    state, _ = FilterState.from_params({"beds": "1..3", "available": "1"})
    expected = [lst.id for lst in sort_rows(oracle(catalogue, state), sort)]
    assert len(expected) > 40
    supported = unit_filter_supported(backend)
    for page in (0, 1, len(expected) // 20):
        request = SearchRequest(
            filter=state.listing_expression(), unit_filter=state.unit_expression(), sort=sort, page=page
        )
        outcome = run(backend, request, unit_supported=supported)
        assert outcome.page == page
        assert [lst.id for lst in outcome.listings] == expected[page * 20 : page * 20 + 20], (sort, page)
        by_id = {lst.id: lst for lst in catalogue}
        for listing in outcome.listings:  # what matched is said in every order, not only by relevance
            assert listing.matched_floor_plans == matched_plans(by_id[listing.id], state.unit_expression())


@pytest.mark.parametrize("kind", ["ours", "production_like"])
def test_a_page_past_the_end_shows_the_last(backends: dict[str, Client], catalogue: list[Listing], kind: str) -> None:
    backend = backends[kind]
    state, _ = FilterState.from_params({"beds": "2.."})
    expected = oracle(catalogue, state)
    request = SearchRequest(unit_filter=state.unit_expression(), page=500)
    outcome = run(backend, request, unit_supported=unit_filter_supported(backend))
    assert outcome.page == (len(expected) - 1) // 20
    assert [lst.id for lst in outcome.listings] == [lst.id for lst in expected][outcome.page * 20 :]


@pytest.mark.parametrize("kind", ["ours", "production_like"])
def test_counts_and_every_match_agree_both_ways(
    backends: dict[str, Client], catalogue: list[Listing], kind: str
) -> None:
    backend = backends[kind]
    supported = unit_filter_supported(backend)
    state, _ = FilterState.from_params({"size": "500..900", "price": "300000..", "type": "Condo"})
    expected = oracle(catalogue, state)
    total, facets = total_and_facets(
        backend, "", state.listing_expression(), state.unit_expression(), FACETS, unit_supported=supported
    )
    assert total == len(expected)
    assert facets == count_facets(expected, FACETS)
    found, found_total = all_matching(
        backend, "", state.listing_expression(), state.unit_expression(), ["listingId"], unit_supported=supported
    )
    assert found_total == len(expected)
    assert {lst.id for lst in found} == {lst.id for lst in expected}
