"""The facet operations: facet_counts, and (ours) search_facet_values over the helpers of ``facet_values``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import Response

from precon.service.calls import Call
from precon.service.errors import bad_request
from precon.service.facet_values import (
    DEFAULT_FACET_HITS,
    MAX_FACET_HITS,
    MAX_FACET_QUERY_LENGTH,
    REFERENCE_FACETS,
    facet_hits,
)
from precon.service.responses import answer, facets_payload
from precon.service.routes.common import UNIT_FILTER_HELP, Q, ServiceDep, facet_names, operation
from precon.service.schema import ATTRIBUTE_ALIASES, LITE_FIELDS
from precon.service.store import ListingQuery
from precon.service.units import LITE_VERSION, unit_filter

router = APIRouter()


@operation(router, "facet_counts", "GET")
def facet_counts(
    request: Request,
    version: str,
    province: str,
    service: ServiceDep,
    product_id: str | None = Q(None),
    facets: str | None = Q(None, description="Comma-separated facets, or * (required)"),
    format: str | None = Q(None, description="object (default) or list"),
    filterQuery: str | None = Q(None),
    search: str | None = Q(None),
    unitFilter: str | None = Q(None, description=UNIT_FILTER_HELP),
) -> Response:
    call = service.call(request, version, province)
    p = call.params
    names = p.names("facets")
    if not names:
        raise bad_request("facets is required: name the facets to count, or '*' for all")
    shape = p.choice("format", ("object", "list"), "object")
    hits = call.store.search_listings(
        ListingQuery(
            province=call.province,
            text=p.search(),
            filter=p.filter_query(),
            unit_filter=unit_filter(p, call.version),
            facets=facet_names(call, names),
            limit=0,
        )
    )
    return answer(request, facets_payload(hits.facets, as_list=shape == "list"))


def _facet_param(call: Call) -> str:
    name = call.params.required("facet")
    if name == "*" or "," in name:
        raise bad_request(f"facet: name one facetable attribute, got {name!r}")
    (name,) = facet_names(call, [name])
    if call.version == LITE_VERSION and ATTRIBUTE_ALIASES.get(name, name).split(".", 1)[0] not in LITE_FIELDS:
        raise bad_request(f"facet: {name!r} is not an attribute of a v1-lite listing")
    return name


def _facet_labels(call: Call, counts: list[tuple[str, int]]) -> dict[str, str | None]:
    """The name of each reference facet value's profile, None where it has none."""
    profiles = call.store.get_profiles([value for value, _ in counts])
    labels: dict[str, str | None] = {}
    for value, _ in counts:
        profile_name = profiles.get(value, {}).get("name")
        labels[value] = profile_name if isinstance(profile_name, str) else None
    return labels


@operation(router, "search_facet_values", "GET")
def search_facet_values(
    request: Request,
    version: str,
    province: str,
    service: ServiceDep,
    product_id: str | None = Q(None),
    facet: str | None = Q(None, description="One facetable attribute (required)"),
    facetQuery: str | None = Q(None, description="Words that start words of the values; empty for all"),
    search: str | None = Q(None),
    filterQuery: str | None = Q(None),
    unitFilter: str | None = Q(None),
    maxFacetHits: str | None = Q(None, description="At most this many hits (default 10, max 1000)"),
) -> Response:
    call = service.call(request, version, province)
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
            text=p.search(),
            filter=p.filter_query(),
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
