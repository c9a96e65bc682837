"""The facet operations: facet_counts, and (ours) search_facet_values over the helpers of ``facet_values``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from precon.schema import ATTRIBUTE_ALIASES
from precon.service.api import wire
from precon.service.api.calls import Call
from precon.service.api.operations import ServiceDep, operation
from precon.service.api.parameters import (
    Facet,
    FacetQuery,
    FilterQuery,
    Format,
    MaxFacetHits,
    ProductId,
    Province,
    RequiredFacets,
    Search,
    UnitFilter,
    Version,
)
from precon.service.api.responses import answer, facets_payload
from precon.service.api.scope import listing_facets, listing_filter, listing_text
from precon.service.api.units import unit_filter
from precon.service.errors import bad_request
from precon.service.search.facet_values import (
    DEFAULT_FACET_HITS,
    MAX_FACET_HITS,
    MAX_FACET_QUERY_LENGTH,
    REFERENCE_FACETS,
    facet_hits,
)
from precon.service.stores.types import ListingQuery

router = APIRouter()


@operation(router, "facet_counts", "GET", wire.FacetCountsAnswer, summary="Count listings by facet value")
def facet_counts(
    request: Request,
    version: Version,
    province: Province,
    service: ServiceDep,
    facets: RequiredFacets,
    product_id: ProductId = None,
    format: Format = None,
    filterQuery: FilterQuery = None,
    search: Search = None,
    unitFilter: UnitFilter = None,
) -> Response:
    call = service.call(request, version.value, province.value)
    p = call.params
    names = p.names("facets")
    if not names:
        raise bad_request("facets is required: name the facets to count, or '*' for all")
    shape = p.choice("format", ("object", "list"), "object")
    hits = call.store.search_listings(
        ListingQuery(
            province=call.province,
            text=listing_text(call),
            filter=listing_filter(call),
            unit_filter=unit_filter(p, call.version),
            facets=listing_facets(call, names),
            limit=0,
        )
    )
    return answer(request, facets_payload(hits.facets, as_list=shape == "list"))


def _facet_param(call: Call) -> str:
    name = call.params.required("facet")
    if name == "*" or "," in name:
        raise bad_request(f"facet: name one facetable attribute, got {name!r}")
    (name,) = listing_facets(call, [name], "facet")
    return name


def _facet_labels(call: Call, counts: list[tuple[str, int]]) -> dict[str, str | None]:
    """The name of each reference facet value's profile, None where it has none."""
    profiles = call.store.get_profiles([value for value, _ in counts])
    labels: dict[str, str | None] = {}
    for value, _ in counts:
        profile_name = profiles.get(value, {}).get("name")
        labels[value] = profile_name if isinstance(profile_name, str) else None
    return labels


@operation(router, "search_facet_values", "GET", wire.FacetValuesAnswer, summary="(ours) Find values of one facet")
def search_facet_values(
    request: Request,
    version: Version,
    province: Province,
    service: ServiceDep,
    facet: Facet,
    product_id: ProductId = None,
    facetQuery: FacetQuery = None,
    search: Search = None,
    filterQuery: FilterQuery = None,
    unitFilter: UnitFilter = None,
    maxFacetHits: MaxFacetHits = None,
) -> Response:
    call = service.call(request, version.value, province.value)
    p = call.params
    name = _facet_param(call)
    facet_query = p.text("facetQuery") or ""
    if len(facet_query) > MAX_FACET_QUERY_LENGTH:
        raise bad_request(
            f"facetQuery is {len(facet_query)} characters long; at most {MAX_FACET_QUERY_LENGTH} are allowed"
        )
    limit = p.integer("maxFacetHits", DEFAULT_FACET_HITS, 1, MAX_FACET_HITS)
    found = call.store.search_listings(
        ListingQuery(
            province=call.province,
            text=listing_text(call),
            filter=listing_filter(call),
            unit_filter=unit_filter(p, call.version),
            facets=(name,),
            max_facet_values=None,
            limit=0,
        )
    )
    counts = found.facets[name]
    reference = ATTRIBUTE_ALIASES.get(name, name) in REFERENCE_FACETS
    labels = _facet_labels(call, counts) if reference else None
    hits = facet_hits(counts, labels, facet_query)
    return answer(
        request,
        {
            "facetHits": [hit.payload(reference) for hit in hits[:limit]],
            "exhaustiveFacetsCount": True,
            "total": len(hits),
        },
    )
