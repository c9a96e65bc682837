"""(ours) The market over time: ``listing_history``, what changed in one listing, and ``changes``, what changed in
the catalogue, newest first."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends
from starlette.responses import Response

from precon.service.api import wire
from precon.service.api.calls import Call
from precon.service.api.operations import NOT_FOUND, operation
from precon.service.api.pipeline import calls_of
from precon.service.api.requests import CHANGES, LISTING_HISTORY, ListingRequest, changes_query, history_query
from precon.service.api.responses import answer, envelope
from precon.service.api.scope import visible_listings
from precon.service.errors import not_found

router = APIRouter()

HistoryCall = Annotated[Call[ListingRequest], Depends(calls_of(LISTING_HISTORY))]
ChangesCall = Annotated[Call[ListingRequest], Depends(calls_of(CHANGES))]


def _readable(call: Call[ListingRequest], listing_id: str, provinces: set[str | None]) -> bool:
    """Whether the call may read the listing: stored where it may see it, or, deleted, last seen there."""
    if visible_listings(call, [listing_id]):
        return True
    if call.store.get_listings([listing_id], None):  # stored, where the call may not see it
        return False
    return bool(provinces) and (call.provinces is None or any(p in call.provinces for p in provinces))


@operation(
    router, "listing_history", "GET", wire.HistoryPage, summary="(ours) What changed in a listing", errors=NOT_FOUND
)
def listing_history(call: HistoryCall) -> Response:
    listing_id = call.params.id.strip()  # a NUL in it is refused by the middleware, as in every parameter
    query = history_query(call, listing_id)
    found = call.store.listing_history(query)
    if not _readable(call, listing_id, found.provinces):
        raise not_found(f"Listing {listing_id!r} not found")
    page, per_page = call.params.page_and_size()
    return answer(call.request, envelope(found.entries, found.total, page, per_page))


@operation(router, "changes", "GET", wire.HistoryPage, summary="(ours) What changed in the catalogue")
def changes(call: ChangesCall) -> Response:
    query = changes_query(call)
    found = call.store.listing_history(query)
    page, per_page = call.params.page_and_size()
    return answer(call.request, envelope(found.entries, found.total, page, per_page))
