"""(ours) The market over time: ``listing_history``, what changed in one listing, ``changes``, what changed in the
catalogue, newest first, and ``market_stats``, the market's figures per month or quarter computed from them
(:mod:`precon.service.stores.market_stats`)."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, Depends
from starlette.responses import Response

from precon.service.api import wire
from precon.service.api.calls import Call
from precon.service.api.market import MARKET_STATS, MarketRequest, boundaries, market_groups
from precon.service.api.operations import NOT_FOUND, operation
from precon.service.api.pipeline import calls_of
from precon.service.api.requests import CHANGES, LISTING_HISTORY, ListingRequest, changes_query, history_query
from precon.service.api.responses import answer, envelope
from precon.service.api.scope import visible_listings
from precon.service.api.visibility import is_visible
from precon.service.errors import not_found
from precon.service.stores.history import iso_time
from precon.service.stores.market_stats import MarketStore

router = APIRouter()

HistoryCall = Annotated[Call[ListingRequest], Depends(calls_of(LISTING_HISTORY))]
ChangesCall = Annotated[Call[ListingRequest], Depends(calls_of(CHANGES))]
MarketCall = Annotated[Call[MarketRequest], Depends(calls_of(MARKET_STATS))]


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
    query, matching = changes_query(call)
    found = call.store.changes(query, matching)
    page, per_page = call.params.page_and_size()
    return answer(call.request, envelope(found.entries, found.total, page, per_page))


@operation(router, "market_stats", "GET", wire.MarketStats, summary="(ours) The market's figures over time")
def market_stats(call: MarketCall) -> Response:
    asked = call.params
    interval = asked.interval.value if asked.interval is not None else "month"
    edges = boundaries(interval, asked.since, asked.until)
    group_by, groups, unit_filter = market_groups(call)
    units = is_visible(call.version, "floorPlans")  # under v1-lite, nothing its units tell
    series = cast("MarketStore", call.store).market_stats(edges, groups, units, call.provinces, unit_filter)
    for one in series:
        for point in one["points"]:
            point["start"] = iso_time(point["start"] / 1000)
    return answer(call.request, {"interval": interval, "groupBy": group_by, "series": series})
