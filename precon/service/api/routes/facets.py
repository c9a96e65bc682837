"""The facet operations: facet_counts, and (ours) search_facet_values over the helpers of ``facet_values``."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.responses import Response

from precon.service.api import wire
from precon.service.api.calls import Call
from precon.service.api.operations import operation
from precon.service.api.pipeline import calls_of
from precon.service.api.requests import FACET_COUNTS, SEARCH_FACET_VALUES, ListingRequest, listing_query
from precon.service.api.responses import answer, facets_payload
from precon.service.api.scope import listing_facets, names
from precon.service.errors import bad_request
from precon.service.search.facet_values import DEFAULT_FACET_HITS, facet_hits
from precon.service.search.facets import ReferenceFacet, facet_for

router = APIRouter()

CountsCall = Annotated[Call[ListingRequest], Depends(calls_of(FACET_COUNTS))]
ValuesCall = Annotated[Call[ListingRequest], Depends(calls_of(SEARCH_FACET_VALUES))]


@operation(router, "facet_counts", "GET", wire.FacetCountsAnswer, summary="Count listings by facet value")
def facet_counts(call: CountsCall) -> Response:
    asked = call.params
    wanted = names(asked.facets)
    if not wanted:
        raise bad_request("facets is required: name the facets to count, or '*' for all")
    hits = call.store.search_listings(listing_query(call, facets=listing_facets(call.version, wanted), limit=0))
    as_list = asked.format is not None and asked.format.value == "list"
    return answer(call.request, facets_payload(hits.facets, as_list=as_list))


def _facet_param(call: Call[ListingRequest]) -> str:
    name = call.params.facet.strip()
    if not name:
        raise bad_request("facet is required")
    if name == "*" or "," in name:
        raise bad_request(f"facet: name one facetable attribute, got {name!r}")
    (name,) = listing_facets(call.version, [name], "facet")
    return name


def _facet_labels(call: Call[ListingRequest], counts: list[tuple[str, int]]) -> dict[str, str | None]:
    """The name of each reference facet value's profile, None where it has none."""
    profiles = call.store.get_profiles([value for value, _ in counts])
    labels: dict[str, str | None] = {}
    for value, _ in counts:
        profile_name = profiles.get(value, {}).get("name")
        labels[value] = profile_name if isinstance(profile_name, str) else None
    return labels


@operation(router, "search_facet_values", "GET", wire.FacetValuesAnswer, summary="(ours) Find values of one facet")
def search_facet_values(call: ValuesCall) -> Response:
    asked = call.params
    name = _facet_param(call)
    facet_query = asked.facetQuery or ""
    limit = DEFAULT_FACET_HITS if asked.maxFacetHits is None else asked.maxFacetHits
    found = call.store.search_listings(listing_query(call, facets=(name,), limit=0, all_facet_values=True))
    counts = found.facets[name]
    reference = isinstance(facet_for(name), ReferenceFacet)
    labels = _facet_labels(call, counts) if reference else None
    hits = facet_hits(counts, labels, facet_query)
    return answer(
        call.request,
        {
            "facetHits": [hit.payload(reference) for hit in hits[:limit]],
            "exhaustiveFacetsCount": True,
            "total": len(hits),
        },
    )
