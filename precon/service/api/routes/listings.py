"""The listing operations: search_listings, listing, similar_listings, trending_listings, multiple_listings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from starlette.responses import Response

from precon.schema import SEARCHABLE_LISTING_FIELDS
from precon.service.api import wire
from precon.service.api.calls import Call
from precon.service.api.operations import NOT_FOUND, ServiceDep, operation
from precon.service.api.parameters import (
    Facets,
    FilterQuery,
    HighlightResults,
    Ids,
    ListingId,
    MaxRecommendations,
    MinScore,
    Nearby,
    Page,
    PerPage,
    ProductId,
    Province,
    Radius,
    Referrences,
    RetrieveAttributes,
    Search,
    UnitFilter,
    Version,
)
from precon.service.api.params import MAX_IDS
from precon.service.api.responses import EncodedResults, answer, envelope, facets_payload
from precon.service.api.scope import listing_facets, listing_filter, listing_shaper, listing_text, text_in_some_fields
from precon.service.api.splice import SPLICER
from precon.service.api.units import add_matched_floor_plans, unit_filter
from precon.service.errors import bad_request, not_found
from precon.service.search import similar
from precon.service.stores.types import ListingQuery, SearchHits

router = APIRouter()


def route(
    name: str, answer_model: Any, summary: str, **options: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return operation(router, name, "GET", answer_model, summary=summary, **options)


def listing_search(call: Call, *, order: str = "relevance", highlight: bool = False) -> dict[str, Any]:
    p = call.params
    page, per_page = p.page()
    text = listing_text(call) if order == "relevance" else None
    shaper = listing_shaper(call)
    facets = listing_facets(call, p.names("facets")) if order == "relevance" else ()
    units = unit_filter(p, call.version)
    whole = shaper.whole and not highlight and units is None
    hits: SearchHits = call.store.search_listings(
        ListingQuery(
            province=call.province,
            text=text,
            filter=listing_filter(call),
            unit_filter=units,
            circle=p.circle() if order == "relevance" else None,
            facets=facets,
            offset=page * per_page,
            limit=per_page,
            order="trending" if order == "trending" else "relevance",
            raw=whole,
        )
    )
    if hits.blobs is not None:  # answered as stored, without decoding
        scores = hits.scores if text is not None else None
        encoded = EncodedResults(SPLICER.listings(hits.source, hits.blobs, scores, call.media))
        body = envelope(encoded, hits.total, page, per_page)
        if p.text("facets") is not None:
            body["facets"] = facets_payload(hits.facets)
        return body
    results = shaper.shape(
        hits.documents,
        hits.scores if text is not None else None,
        highlight=hits.text if highlight else False,
        searchable=SEARCHABLE_LISTING_FIELDS,
    )
    add_matched_floor_plans(results, hits.documents, units)
    body = envelope(results, hits.total, page, per_page)
    if p.text("facets") is not None:
        body["facets"] = facets_payload(hits.facets)
    return body


@route("search_listings", wire.ListingsPage, "Search listings")
async def search_listings(
    request: Request,
    version: Version,
    province: Province,
    service: ServiceDep,
    product_id: ProductId = None,
    search: Search = None,
    page: Page = None,
    perPage: PerPage = None,
    facets: Facets = None,
    retrieveAttributes: RetrieveAttributes = None,
    highlightResults: HighlightResults = None,
    nearby: Nearby = None,
    radius: Radius = None,
    referrences: Referrences = None,
    filterQuery: FilterQuery = None,
    unitFilter: UnitFilter = None,
) -> Response:
    def work() -> Response:
        call = service.call(request, version.value, province.value)
        return answer(request, listing_search(call, highlight=call.params.boolean("highlightResults")))

    return await service.run_listing_search(
        version.value,
        work,
        text_in_some_fields=bool(search) and text_in_some_fields(version.value),
        unit_filter=bool(unitFilter),
    )


@route("listing", wire.Listing, "Get a listing", errors=NOT_FOUND)
def get_listing(
    request: Request,
    version: Version,
    province: Province,
    service: ServiceDep,
    id: ListingId,
    product_id: ProductId = None,
    retrieveAttributes: RetrieveAttributes = None,
    referrences: Referrences = None,
) -> Response:
    call = service.call(request, version.value, province.value)
    listing_id = call.params.required("id")
    shaper = listing_shaper(call)
    record = call.store.get_listings([listing_id], call.province).get(listing_id)
    if record is None:
        raise not_found(f"Listing {listing_id!r} not found")
    call.store.record_view(listing_id)
    return answer(request, shaper.shape([record])[0])


@route("similar_listings", wire.ListingsPage, "Listings like one", errors=NOT_FOUND)
def similar_listings(
    request: Request,
    version: Version,
    province: Province,
    service: ServiceDep,
    id: ListingId,
    product_id: ProductId = None,
    retrieveAttributes: RetrieveAttributes = None,
    referrences: Referrences = None,
    minScore: MinScore = None,
    maxRecommendations: MaxRecommendations = None,
) -> Response:
    call = service.call(request, version.value, province.value)
    p = call.params
    listing_id = p.required("id")
    min_score = p.number("minScore", 0.0, 0.0, 1.0)
    limit = p.integer("maxRecommendations", 5, 1, 50)
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
    return answer(request, envelope(results, len(results), 0, limit))


@route("trending_listings", wire.ListingsPage, "Trending listings")
def trending_listings(
    request: Request,
    version: Version,
    province: Province,
    service: ServiceDep,
    product_id: ProductId = None,
    page: Page = None,
    perPage: PerPage = None,
    filterQuery: FilterQuery = None,
    unitFilter: UnitFilter = None,
    retrieveAttributes: RetrieveAttributes = None,
    referrences: Referrences = None,
) -> Response:
    call = service.call(request, version.value, province.value)
    return answer(request, listing_search(call, order="trending"))


@route("multiple_listings", wire.ListingsByIds, "Several listings by id")
def multiple_listings(
    request: Request,
    version: Version,
    province: Province,
    service: ServiceDep,
    ids: Ids,
    product_id: ProductId = None,
    retrieveAttributes: RetrieveAttributes = None,
    referrences: Referrences = None,
) -> Response:
    call = service.call(request, version.value, province.value)
    p = call.params
    wanted = p.names("ids")
    if not wanted:
        raise bad_request("ids is required")
    if len(wanted) > MAX_IDS:
        raise bad_request(f"ids names {len(wanted)} listings; at most {MAX_IDS} are allowed")
    shaper = listing_shaper(call)
    found = call.store.get_listings(wanted, call.province)
    return answer(request, {"results": shaper.shape([found[i] for i in wanted if i in found])})
