"""The profile operations: search_profiles, profile, profiles_of_listing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from starlette.responses import Response

from precon.schema import LISTING_REFERENCE_FIELDS, PROFILES_OF_LISTING_FIELDS, SEARCHABLE_PROFILE_FIELDS
from precon.service.api import wire
from precon.service.api.calls import Call
from precon.service.api.operations import ERRORS, NOT_FOUND, operation
from precon.service.api.pipeline import calls_of
from precon.service.api.requests import PROFILE, PROFILES_OF_LISTING, SEARCH_PROFILES, ProfileRequest, profile_query
from precon.service.api.responses import answer, envelope, facets_payload
from precon.service.api.scope import listing_id_of, names, trim_listing_facet, trim_profile_listings, visible_listings
from precon.service.api.shaping import (
    ListingShaper,
    expand_references,
    profile_object,
    profile_search_object,
    profiles_of_listing,
    reference_fields,
    retrieved_names,
)
from precon.service.errors import blank_profile_id, not_found
from precon.service.search.text import highlight_record

SearchCall = Annotated[Call[ProfileRequest], Depends(calls_of(SEARCH_PROFILES))]
ProfileCall = Annotated[Call[ProfileRequest], Depends(calls_of(PROFILE))]
OfListingCall = Annotated[Call[ProfileRequest], Depends(calls_of(PROFILES_OF_LISTING))]

PROFILE_ERRORS = {
    **NOT_FOUND,
    400: {
        "model": wire.Error | wire.BlankProfileId,
        "description": ERRORS[400]["description"] + '; without an id, `{"error": "Id cannnot be blank"}`',
    },
}

router = APIRouter()


def route(
    name: str, answer_model: Any, summary: str, **options: Any
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return operation(router, name, "GET", answer_model, summary=summary, **options)


def scoped_profile_listings(call: Call[ProfileRequest], records: list[dict[str, Any]], expand: bool) -> None:
    """Trims each profile's ``listings`` to the listings the call may see and, with ``expand``
    (``referrences=listings``), replaces each path with the listing, shaped for the version."""
    found = trim_profile_listings(call, records)
    if not expand:
        return
    if found is None:
        ids = {i for record in records for i in map(listing_id_of, record.get("listings") or ()) if i is not None}
        found = visible_listings(call, ids)
    shaper = ListingShaper(version=call.version, store=call.store, media=call.media)
    shaped = dict(zip(found, shaper.shape(list(found.values())), strict=True))
    for record in records:
        if isinstance(record.get("listings"), list):
            record["listings"] = [
                shaped.get(path.split("/", 1)[1], path) if isinstance(path, str) and "/" in path else path
                for path in record["listings"]
            ]


@route("search_profiles", wire.ProfilesPage, "Search profiles")
def search_profiles(call: SearchCall) -> Response:
    asked = call.params
    query = profile_query(call)
    references = reference_fields(names(asked.referrences), {"listings": "listings"})
    retrieve = retrieved_names(names(asked.retrieveAttributes))
    hits = call.store.search_profiles(query)
    results = []
    for record, score in zip(hits.documents, hits.scores, strict=True):
        out = profile_search_object(record, call.media)
        if retrieve:
            out = {k: v for k, v in out.items() if k == "objectID" or k in retrieve}
        if query.text is not None and score is not None:
            out["_score"] = score
        if asked.highlightResults:
            out["_highlightResult"] = highlight_record(out, SEARCHABLE_PROFILE_FIELDS, hits.text)
        results.append(out)
    scoped_profile_listings(call, results, bool(references))
    page, per_page = asked.page_and_size()
    body = envelope(results, hits.total, page, per_page)
    if asked.facets is not None:
        body["facets"] = facets_payload({name: trim_listing_facet(call, c) for name, c in hits.facets.items()})
    return answer(call.request, body)


@route("profile", wire.Profile, "Get a profile", errors=PROFILE_ERRORS)
def get_profile(call: ProfileCall) -> Response:
    asked = call.params
    profile_id = asked.id.strip()
    if not profile_id:
        raise blank_profile_id()
    collection_name = asked.collection_name()
    references = reference_fields(names(asked.referrences), {"listings": "listings"})
    record = call.store.find_profile(profile_id, collection_name, call.province)
    if record is None:
        where = f" in {collection_name}" if collection_name else ""
        raise not_found(f"Profile {profile_id!r} not found{where}")
    out = profile_object(record, call.media)
    scoped_profile_listings(call, [out], bool(references))
    return answer(call.request, out)


@route("profiles_of_listing", wire.ProfilesOfListing, "The companies of a listing", errors=NOT_FOUND)
def get_profiles_of_listing(call: OfListingCall) -> Response:
    listing_id = call.params.id.strip()
    allowed = {k: v for k, v in LISTING_REFERENCE_FIELDS.items() if v in PROFILES_OF_LISTING_FIELDS}
    references = reference_fields(names(call.params.referrences), allowed)
    record = call.store.get_listings([listing_id], call.province).get(listing_id)
    if record is None:
        raise not_found(f"Listing {listing_id!r} not found")
    out = profiles_of_listing(record)
    expand_references([out], references, call.store, call.media, lambda profiles: trim_profile_listings(call, profiles))
    return answer(call.request, out)
