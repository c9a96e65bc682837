"""One page of a listing search, exactly, in any order, with unit-level filters, against any deployment.

:func:`run` answers a :class:`SearchRequest` in one of two ways:

* **service**: the deployment filters floor plans itself (``unitFilter``, which this project's service offers): one
  search for the relevance order, or the exact orders of :mod:`precon.dashboard.ordering`.
* **local**: the deployment has no ``unitFilter`` (the production service). Every listing that could match is read
  with its floor plans (the unit conditions, each lifted to ``floorPlans.*``, narrow the candidates first), the
  floor plans are checked here with the reference evaluator, and counts, facets, order and the page are computed
  from the exact set. :attr:`SearchOutcome.unit_mode` says which way answered, so a page can say so.

Nothing here imports Streamlit: the dashboard passes a backend whose answers come through its cache, tests pass a
:class:`precon.client.Client`.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from precon import filters
from precon.client.errors import BadRequest
from precon.client.models import FloorPlan, Listing, MatchedFloorPlans
from precon.dashboard.filter_state import necessary_listing_filter
from precon.dashboard.ordering import NUMERIC_SORTS, WINDOW, ListingBackend, ServiceOrdering, ids_of, sort_rows
from precon.facet_keys import MAX_FACET_VALUES, facet_key, top
from precon.filters import Expr

UnitMode = Literal["none", "service", "local"]
SORTS = ("relevance", "newest", "price_asc", "price_desc", "completion")
MAX_IDS_PER_CALL = 100
LOCAL_ATTRIBUTES = ("listingId", "floorPlans", "updatedAt", "startPrice", "completionYear", "isFeatured")
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class SearchRequest:
    text: str = ""
    filter: Expr | None = None
    unit_filter: Expr | None = None
    sort: str = "relevance"
    page: int = 0
    per_page: int = 20
    facets: tuple[str, ...] = ()
    attributes: tuple[str, ...] | None = None
    """What each listing of the page carries (None: everything)."""
    high_values: dict[str, float] = field(default_factory=dict, hash=False, compare=False)
    """The data's largest value per numeric sort attribute, if known: saves the ordering a few counts."""


@dataclass
class SearchOutcome:
    total: int
    listings: list[Listing]
    facets: dict[str, dict[str, int]]
    page: int
    """The page shown: the one asked for, or the last page when that was past the end."""
    unit_mode: UnitMode = "none"
    limited: bool = False
    """"Newest" ordered only the most relevant matches (see :data:`precon.dashboard.ordering.NEWEST_LIMIT`)."""
    service_ms: float | None = None
    ordering_ms: float | None = None
    candidates: int | None = None
    """In local mode, how many listings' floor plans were read."""


def last_page(total: int, per_page: int) -> int:
    return max(math.ceil(total / per_page) - 1, 0) if per_page else 0


# -- unit-level matching --------------------------------------------------------------------------------------------


def _plan_record(plan: FloorPlan | dict[str, Any]) -> dict[str, Any]:
    return plan if isinstance(plan, dict) else plan.model_dump(mode="python")


def matched_plans(listing: Listing, unit_filter: Expr) -> MatchedFloorPlans:
    """Which of a listing's floor plans satisfy ``unit_filter``, as the service reports it."""
    plans = list(listing.floorPlans or [])
    records = {id(plan): _plan_record(plan) for plan in plans}
    matching = [plan for plan in plans if filters.plan_matches(unit_filter, records[id(plan)])]
    prices = [p.startPrice for p in matching if isinstance(p, FloorPlan) and p.startPrice and p.startPrice > 0]
    units = None
    if filters.names_units(unit_filter):
        units = sum(filters.matching_units(unit_filter, records[id(plan)]) for plan in matching)
    return MatchedFloorPlans(
        count=len(matching),
        of=len(plans),
        minPrice=min(prices) if prices else None,
        names=[p.name for p in matching if isinstance(p, FloorPlan) and p.name],
        units=units,
    )


def unit_filter_supported(backend: ListingBackend) -> bool:
    """Whether the deployment filters floor plans itself: asked once with a condition every plan meets.

    A deployment without ``unitFilter`` ignores the parameter (results without ``_matchedFloorPlans``) or refuses
    it; with no floor plan anywhere there is nothing to tell, and the local way is exact and cheap.
    """
    try:
        page = backend.search_listings(
            None, per_page=1, unit_filter="numberOfBedrooms >= 0 OR NOT numberOfBedrooms >= 0",
            retrieve_attributes=["listingId"],
        )  # fmt: skip
    except BadRequest:
        return False
    return bool(page.results) and page.results[0].matched_floor_plans is not None


def local_matches(
    backend: ListingBackend,
    text: str,
    base: Expr | None,
    unit_filter: Expr,
    attributes: Iterable[str] = (),
    progress: Progress | None = None,
    **search: Any,
) -> tuple[list[Listing], int]:
    """Every listing matching ``text``, ``base`` and one floor plan satisfying ``unit_filter``, in the service's
    order, each with ``attributes`` and its matched plans; and how many candidates were read. ``search`` passes
    further search parameters through (``nearby``, ``radius``)."""
    candidates = filters.and_(base, necessary_listing_filter(unit_filter))
    wanted = sorted({*LOCAL_ATTRIBUTES, *attributes})
    kept: list[Listing] = []
    read = 0
    page_number = 0
    while True:
        page = backend.search_listings(
            text or None, page=page_number, per_page=WINDOW, filter=candidates, retrieve_attributes=wanted, **search
        )
        for listing in page.results:
            matched = matched_plans(listing, unit_filter)
            if matched.count:
                listing.matched_floor_plans = matched
                kept.append(listing)
        read += len(page.results)
        if progress is not None:
            progress(read, page.total)
        page_number += 1
        if len(page.results) < WINDOW or page_number >= page.pages:
            return kept, read


def _facet_keys(value: Any) -> list[str]:
    """The keys an attribute's value counts under, each once (a listing counts once per value it holds, as in the
    service); empty text counts under none."""
    values = value if isinstance(value, list | tuple) else [value]
    keys = (facet_key(item) for item in values if item is not None and item != "")
    return list(dict.fromkeys(key for key in keys if key is not None))


def count_facets(listings: Sequence[Listing], names: Iterable[str]) -> dict[str, dict[str, int]]:
    """Facet counts over these listings, as the service counts them: a listing counts once per value it holds."""
    counted: dict[str, dict[str, int]] = {}
    for name in names:
        counter: Counter[str] = Counter()
        for listing in listings:
            counter.update(_facet_keys(getattr(listing, name, None)))
        counted[name] = dict(top(counter.items(), MAX_FACET_VALUES))
    return counted


# -- a page ---------------------------------------------------------------------------------------------------------


def listings_by_ids(
    backend: ListingBackend, text: str, ids: Sequence[str], attributes: Sequence[str] | None, unit: Expr | None
) -> list[Listing]:
    """These listings, in this order; with search words, with their highlights; with ``unit``, with the floor plans
    that matched (both come only with a search, so the ids are searched for)."""
    if not ids:
        return []
    found: dict[str, Listing] = {}
    attrs = list(attributes) if attributes is not None else None
    if text or unit is not None:
        page = backend.search_listings(
            text or None, per_page=len(ids), filter=filters.any_of("listingId", list(ids)),
            highlight=True if text else None, retrieve_attributes=attrs,
            **({"unit_filter": unit} if unit is not None else {}),
        )  # fmt: skip
        found = {lst.id: lst for lst in page.results if lst.id}
    missing = [i for i in ids if i not in found]
    for start in range(0, len(missing), MAX_IDS_PER_CALL):
        for listing in backend.multiple_listings(missing[start : start + MAX_IDS_PER_CALL], retrieve_attributes=attrs):
            if listing.id:
                found[listing.id] = listing
    return [found[i] for i in ids if i in found]


def _service_page(backend: ListingBackend, request: SearchRequest) -> SearchOutcome:
    unit = request.unit_filter
    extra: dict[str, Any] = {"unit_filter": unit} if unit is not None else {}
    attrs = list(request.attributes) if request.attributes is not None else None
    mode: UnitMode = "service" if unit is not None else "none"
    if request.sort == "relevance":

        def fetch(number: int) -> Any:
            return backend.search_listings(
                request.text or None, page=number, per_page=request.per_page, facets=list(request.facets) or None,
                filter=request.filter, highlight=True if request.text else None, retrieve_attributes=attrs, **extra,
            )  # fmt: skip

        result = fetch(request.page)
        page = min(request.page, last_page(result.total, request.per_page))
        if page != request.page:
            result = fetch(page)
        meta = result.response_meta
        return SearchOutcome(
            result.total, result.results, dict(result.facets or {}), page, mode,
            service_ms=meta.elapsed_ms if meta else None,
        )  # fmt: skip
    summary = backend.search_listings(
        request.text or None, per_page=0, facets=list(request.facets) or None, filter=request.filter, **extra
    )
    meta = summary.response_meta
    page = min(request.page, last_page(summary.total, request.per_page))
    first, last = page * request.per_page, min((page + 1) * request.per_page, summary.total)
    started = time.perf_counter()
    ordering = ServiceOrdering(backend, request.text, unit)
    limited = False
    ids: list[str] = []
    if last > first and request.sort == "newest":
        ids, limited = ordering.newest_page(request.filter, summary.total, first, last)
    elif last > first:
        attr, descending = NUMERIC_SORTS[request.sort]
        high = request.high_values.get(attr)
        ids = ordering.numeric_page(request.filter, attr, descending, first, last, *([high] if high else []))
    listings = listings_by_ids(backend, request.text, ids, request.attributes, unit)
    return SearchOutcome(
        summary.total, listings, dict(summary.facets or {}), page, mode, limited,
        meta.elapsed_ms if meta else None, (time.perf_counter() - started) * 1000,
    )  # fmt: skip


def _local_page(backend: ListingBackend, request: SearchRequest, progress: Progress | None) -> SearchOutcome:
    assert request.unit_filter is not None
    started = time.perf_counter()
    matches, read = local_matches(
        backend, request.text, request.filter, request.unit_filter, request.facets, progress=progress
    )
    ordered = sort_rows(matches, request.sort)
    page = min(request.page, last_page(len(ordered), request.per_page))
    window = ordered[page * request.per_page : (page + 1) * request.per_page]
    listings = listings_by_ids(backend, request.text, ids_of(window), request.attributes, None)
    matched = {lst.id: lst.matched_floor_plans for lst in window}
    for listing in listings:
        listing.matched_floor_plans = matched.get(listing.id)
    return SearchOutcome(
        len(ordered), listings, count_facets(matches, request.facets), page, "local",
        ordering_ms=(time.perf_counter() - started) * 1000, candidates=read,
    )  # fmt: skip


def run(
    backend: ListingBackend, request: SearchRequest, *, unit_supported: bool = True, progress: Progress | None = None
) -> SearchOutcome:
    """The page ``request`` asks for. ``unit_supported`` is :func:`unit_filter_supported` of the deployment."""
    if request.sort not in SORTS:
        raise ValueError(f"unknown sort {request.sort!r}: one of {', '.join(SORTS)}")
    if request.unit_filter is not None and not unit_supported:
        return _local_page(backend, request, progress)
    return _service_page(backend, request)


def total_and_facets(
    backend: ListingBackend,
    text: str,
    base: Expr | None,
    unit: Expr | None,
    facets: Sequence[str],
    *,
    unit_supported: bool = True,
) -> tuple[int, dict[str, dict[str, int]]]:
    """How many listings match, and their facet counts, either way."""
    if unit is not None and not unit_supported:
        matches, _ = local_matches(backend, text, base, unit, facets)
        return len(matches), count_facets(matches, facets)
    extra = {"unit_filter": unit} if unit is not None else {}
    page = backend.search_listings(text or None, per_page=0, facets=list(facets) or None, filter=base, **extra)
    return page.total, dict(page.facets or {})


def all_matching(
    backend: ListingBackend,
    text: str,
    base: Expr | None,
    unit: Expr | None,
    attributes: Sequence[str],
    *,
    unit_supported: bool = True,
    limit: int | None = None,
    **search: Any,
) -> tuple[list[Listing], int]:
    """Every listing that matches (at most ``limit``, in the service's order) with ``attributes``, and the total.

    ``search`` passes further search parameters through (``nearby``, ``radius``).
    """
    if unit is not None and not unit_supported:
        matches, _ = local_matches(backend, text, base, unit, attributes, **search)
        return matches[:limit] if limit is not None else matches, len(matches)
    extra: dict[str, Any] = {"unit_filter": unit} if unit is not None else {}
    found: list[Listing] = []
    total = 0
    number = 0
    window = WINDOW if limit is None else max(1, min(WINDOW, limit))  # no more asked than is kept
    while limit is None or len(found) < limit:
        page = backend.search_listings(
            text or None, page=number, per_page=window, filter=base, retrieve_attributes=list(attributes),
            **extra, **search,
        )  # fmt: skip
        found += page.results
        total = page.total
        number += 1
        if len(page.results) < window or number >= page.pages:
            break
    return (found[:limit] if limit is not None else found), total
