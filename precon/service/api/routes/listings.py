"""The listing operations: search_listings, listing, similar_listings, trending_listings, multiple_listings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from starlette.responses import Response

from precon.schema import SEARCHABLE_LISTING_FIELDS
from precon.service.api import wire
from precon.service.api.calls import Call
from precon.service.api.operations import NOT_FOUND, operation
from precon.service.api.parameters import MAX_IDS
from precon.service.api.pipeline import calls_of
from precon.service.api.requests import (
    LISTING,
    MULTIPLE_LISTINGS,
    SEARCH_LISTINGS,
    SIMILAR_LISTINGS,
    TRENDING_LISTINGS,
    ListingRequest,
    listing_query,
    listing_shaper,
)
from precon.service.api.responses import EncodedResults, answer, envelope, facets_payload
from precon.service.api.scope import filter_or_none, names, text_in_some_fields
from precon.service.api.splice import SPLICER
from precon.service.api.units import add_matched_floor_plans, with_matched_floor_plans
from precon.service.errors import bad_request, not_found
from precon.service.search import similar

router = APIRouter()

SearchCall = Annotated[Call[ListingRequest], Depends(calls_of(SEARCH_LISTINGS))]
ListingCall = Annotated[Call[ListingRequest], Depends(calls_of(LISTING))]
SimilarCall = Annotated[Call[ListingRequest], Depends(calls_of(SIMILAR_LISTINGS))]
TrendingCall = Annotated[Call[ListingRequest], Depends(calls_of(TRENDING_LISTINGS))]
MultipleCall = Annotated[Call[ListingRequest], Depends(calls_of(MULTIPLE_LISTINGS))]


def route(
    name: str, answer_model: Any, summary: str, **options: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return operation(router, name, "GET", answer_model, summary=summary, **options)


def listing_search(call: Call[ListingRequest], *, trending: bool = False) -> dict[str, Any]:
    """A page of listings (and facet counts) for a search or the trending list."""
    asked = call.params
    highlight = bool(asked.highlightResults)
    shaper = listing_shaper(call)
    query = listing_query(
        call,
        order="trending" if trending else "relevance",
        whole=shaper.whole and not highlight,
        fields=None if asked.unitFilter else shaper.fields,  # (the matched floor plans are read from the whole plans)
    )
    page, per_page = asked.page_and_size()
    hits = call.store.search_listings(query)
    scores = hits.scores if query.text is not None else None
    if hits.blobs is not None:  # answered as stored, without decoding
        answers = SPLICER.listings(hits.source, hits.blobs, scores, call.media)
        answers = with_matched_floor_plans(answers, hits.blobs, hits.source, query.unit_filter, hits.matched)
        body = envelope(EncodedResults(answers), hits.total, page, per_page)
    else:
        results = shaper.shape(
            hits.documents, scores, highlight=hits.text if highlight else False, searchable=SEARCHABLE_LISTING_FIELDS
        )
        add_matched_floor_plans(results, hits.documents, query.unit_filter, hits.matched)
        body = envelope(results, hits.total, page, per_page)
    if asked.facets is not None:
        body["facets"] = facets_payload(hits.facets)
    return body


@route("search_listings", wire.ListingsPage, "Search listings")
async def search_listings(call: SearchCall) -> Response:
    asked = call.params
    return await call.service.run_listing_search(
        call.version,
        lambda: answer(call.request, listing_search(call)),
        text_in_some_fields=bool(asked.search) and text_in_some_fields(call.version),
        unit_filter=bool(asked.unitFilter),
        filter_expr=filter_or_none(asked.filterQuery),
    )


@route("listing", wire.Listing, "Get a listing", errors=NOT_FOUND)
def get_listing(call: ListingCall) -> Response:
    listing_id = call.params.id.strip()
    shaper = listing_shaper(call)
    record = call.store.get_listings([listing_id], call.province).get(listing_id)
    if record is None:
        raise not_found(f"Listing {listing_id!r} not found")
    call.store.record_view(listing_id)
    return answer(call.request, shaper.shape([record])[0])


@route("similar_listings", wire.ListingsPage, "Listings like one", errors=NOT_FOUND)
def similar_listings(call: SimilarCall) -> Response:
    asked = call.params
    listing_id = asked.id.strip()
    min_score = 0.0 if asked.minScore is None else asked.minScore
    limit = 5 if asked.maxRecommendations is None else asked.maxRecommendations
    shaper = listing_shaper(call)
    target, candidates = call.store.similarity_features(
        listing_id, call.province, similar.CANDIDATE_RADIUS_M, similar.CANDIDATE_LIMIT
    )
    if target is None:
        raise not_found(f"Listing {listing_id!r} not found")
    ranked = similar.rank(target, candidates, min_score, limit)
    records = call.store.get_listings([i for i, _ in ranked], call.province)
    kept = [(records[i], s) for i, s in ranked if i in records]
    results = shaper.shape([r for r, _ in kept], [s for _, s in kept])
    return answer(call.request, envelope(results, len(results), 0, limit))


@route("trending_listings", wire.ListingsPage, "Trending listings")
def trending_listings(call: TrendingCall) -> Response:
    return answer(call.request, listing_search(call, trending=True))


@route("multiple_listings", wire.ListingsByIds, "Several listings by id")
async def multiple_listings(call: MultipleCall) -> Response:
    wanted = names(call.params.ids)
    if not wanted:
        raise bad_request("ids is required")
    if len(wanted) > MAX_IDS:
        raise bad_request(f"ids names {len(wanted)} listings; at most {MAX_IDS} are allowed")

    def read() -> Response:
        shaper = listing_shaper(call)
        found = call.store.get_listings(wanted, call.province)
        return answer(call.request, {"results": shaper.shape([found[i] for i in wanted if i in found])})

    return await call.service.run_small_read(read, len(wanted))
